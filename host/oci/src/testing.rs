//! A real CNCF distribution registry (Debian's `docker-registry`) on a free
//! loopback port, for tests; stopped when dropped.
//!
//! ```no_run
//! let registry = rekon_oci::testing::TestRegistry::start();
//! let reference = registry.reference("team/pvc-protection:v1"); // 127.0.0.1:PORT/team/pvc-protection:v1
//! ```
//!
//! [`TestRegistry::start_with_basic_auth`] serves HTTPS with a certificate from
//! a throwaway CA (made with the `openssl` command) and htpasswd credentials, as
//! distribution only accepts basic auth over TLS.

use std::io::Write as _;
use std::net::{Ipv4Addr, SocketAddr, TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// Where Debian installs the registry; `REKON_DOCKER_REGISTRY` overrides it.
pub const DEFAULT_REGISTRY_BINARY: &str = "/usr/bin/docker-registry";

/// A running registry, killed on drop.
pub struct TestRegistry {
    child: Child,
    dir: tempfile::TempDir,
    addr: SocketAddr,
    ca_pem: Option<Vec<u8>>,
}

impl TestRegistry {
    /// Starts an anonymous plain-HTTP registry on 127.0.0.1.
    ///
    /// # Panics
    /// When `docker-registry` is missing (run `.ci/install-registry.sh`) or does not come up.
    pub fn start() -> Self {
        Self::launch(None)
    }

    /// Starts an HTTPS registry requiring `username`/`password`; its CA is [`TestRegistry::ca_pem`].
    pub fn start_with_basic_auth(username: &str, password: &str) -> Self {
        Self::launch(Some((username, password)))
    }

    /// `127.0.0.1:PORT`.
    pub fn host(&self) -> String {
        self.addr.to_string()
    }

    /// `127.0.0.1:PORT/<path>`.
    pub fn reference(&self, path: &str) -> String {
        format!("{}/{path}", self.addr)
    }

    /// The CA that signed the registry's certificate (HTTPS registries only).
    pub fn ca_pem(&self) -> Option<&[u8]> {
        self.ca_pem.as_deref()
    }

    /// The registry's stored files (blobs and repositories).
    pub fn storage_dir(&self) -> PathBuf {
        self.dir.path().join("storage")
    }

    fn launch(basic_auth: Option<(&str, &str)>) -> Self {
        let binary = std::env::var("REKON_DOCKER_REGISTRY").unwrap_or_else(|_| DEFAULT_REGISTRY_BINARY.into());
        assert!(
            Path::new(&binary).exists(),
            "{binary} is not installed: the OCI tests need a real registry; run `.ci/install-registry.sh` (apt-get install docker-registry openssl)"
        );
        let dir = tempfile::tempdir().expect("temp dir");
        let addr = free_loopback_port();
        let mut config = format!(
            "version: 0.1\nlog:\n  level: warn\n  accesslog: {{disabled: true}}\nstorage:\n  filesystem:\n    rootdirectory: {}\n  delete:\n    enabled: true\nhttp:\n  addr: {addr}\n",
            dir.path().join("storage").display()
        );
        let mut ca_pem = None;
        if let Some((username, password)) = basic_auth {
            let tls = make_certificates(dir.path());
            config.push_str(&format!("  tls:\n    certificate: {}\n    key: {}\n", tls.cert.display(), tls.key.display()));
            let hash = bcrypt::hash(password, 5).expect("bcrypt");
            let htpasswd = dir.path().join("htpasswd");
            std::fs::write(&htpasswd, format!("{username}:{hash}\n")).expect("htpasswd");
            config.push_str(&format!("auth:\n  htpasswd:\n    realm: rekon-test\n    path: {}\n", htpasswd.display()));
            ca_pem = Some(std::fs::read(&tls.ca).expect("ca"));
        }
        let config_path = dir.path().join("config.yml");
        std::fs::write(&config_path, config).expect("config");
        let log = std::fs::File::create(dir.path().join("registry.log")).expect("log");
        let child = Command::new(&binary)
            .arg("serve")
            .arg(&config_path)
            .env("OTEL_TRACES_EXPORTER", "none")
            .stdin(Stdio::null())
            .stdout(log.try_clone().expect("log"))
            .stderr(log)
            .spawn()
            .unwrap_or_else(|err| panic!("could not start {binary}: {err}"));
        let mut registry = Self { child, dir, addr, ca_pem };
        registry.wait_until_listening();
        registry
    }

    fn wait_until_listening(&mut self) {
        let deadline = Instant::now() + Duration::from_secs(15);
        while Instant::now() < deadline {
            if TcpStream::connect_timeout(&self.addr, Duration::from_millis(200)).is_ok() {
                return;
            }
            if let Ok(Some(status)) = self.child.try_wait() {
                panic!("docker-registry exited with {status}: {}", self.log());
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        panic!("docker-registry did not listen on {} within 15 s: {}", self.addr, self.log());
    }

    /// What the registry logged so far.
    pub fn log(&self) -> String {
        std::fs::read_to_string(self.dir.path().join("registry.log")).unwrap_or_default()
    }
}

impl Drop for TestRegistry {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// A loopback address with a port nobody listens on (right now).
pub fn free_loopback_port() -> SocketAddr {
    let listener = TcpListener::bind((Ipv4Addr::LOCALHOST, 0)).expect("bind loopback");
    listener.local_addr().expect("addr")
}

struct Tls {
    ca: PathBuf,
    cert: PathBuf,
    key: PathBuf,
}

/// A CA and a certificate for 127.0.0.1/localhost signed by it, made with `openssl`.
fn make_certificates(dir: &Path) -> Tls {
    let tls = Tls { ca: dir.join("ca.pem"), cert: dir.join("cert.pem"), key: dir.join("key.pem") };
    let ca_key = dir.join("ca-key.pem");
    let csr = dir.join("cert.csr");
    let ext = dir.join("ext.cnf");
    let mut file = std::fs::File::create(&ext).expect("ext");
    writeln!(file, "basicConstraints=critical,CA:FALSE\nsubjectAltName=IP:127.0.0.1,DNS:localhost\nextendedKeyUsage=serverAuth")
        .expect("ext");
    let p = |path: &Path| path.display().to_string();
    let run = |args: &[&str]| {
        let output = Command::new("openssl").args(args).output().unwrap_or_else(|err| {
            panic!("openssl is needed to make test certificates ({err}); run `.ci/install-registry.sh`")
        });
        assert!(output.status.success(), "openssl {args:?}: {}", String::from_utf8_lossy(&output.stderr));
    };
    run(&["req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes", "-days", "2", "-subj", "/CN=rekon test CA", "-keyout", &p(&ca_key), "-out", &p(&tls.ca)]);
    run(&["req", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes", "-subj", "/CN=127.0.0.1", "-keyout", &p(&tls.key), "-out", &p(&csr)]);
    run(&["x509", "-req", "-in", &p(&csr), "-CA", &p(&tls.ca), "-CAkey", &p(&ca_key), "-CAcreateserial", "-days", "2", "-extfile", &p(&ext), "-out", &p(&tls.cert)]);
    tls
}
