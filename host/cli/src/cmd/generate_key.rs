//! `rekon generate-key [PREFIX]`: an ECDSA P-256 key pair for `rekon sign`:
//! `PREFIX.key` (PKCS#8, unencrypted, mode 0600) and `PREFIX.pub`.

use std::io::Write as _;
use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Context as _;

#[derive(clap::Args)]
pub struct Args {
    /// Path prefix of the two files.
    #[arg(default_value = "rekon")]
    prefix: PathBuf,
}

pub async fn run(args: Args) -> anyhow::Result<ExitCode> {
    let pair = rekon_oci::generate_key();
    let private = PathBuf::from(format!("{}.key", args.prefix.display()));
    let public = PathBuf::from(format!("{}.pub", args.prefix.display()));
    for path in [&private, &public] {
        anyhow::ensure!(
            !path.exists(),
            "{}: exists; not overwriting a key",
            path.display()
        );
    }
    let mut file =
        open_private(&private).with_context(|| format!("{}: cannot create", private.display()))?;
    file.write_all(pair.private_pem.as_bytes())
        .with_context(|| format!("{}: cannot write", private.display()))?;
    std::fs::write(&public, &pair.public_pem)
        .with_context(|| format!("{}: cannot write", public.display()))?;
    println!(
        "private key: {}\npublic key: {}",
        private.display(),
        public.display()
    );
    Ok(ExitCode::SUCCESS)
}

fn open_private(path: &std::path::Path) -> std::io::Result<std::fs::File> {
    use std::os::unix::fs::OpenOptionsExt as _;
    std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .open(path)
}
