//! `rekon apiserver`: run the embedded Kubernetes API server until interrupted.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

use anyhow::Context;
use rekon_apiserver::{ApiServer, FaultConfig, KubeletMode, ServerConfig};

#[derive(clap::Args)]
pub struct Args {
    /// Address to listen on (port 0 picks a free port).
    #[arg(long, default_value = "127.0.0.1:6443")]
    pub listen: SocketAddr,
    /// Write a kubeconfig for the server to this file (context `rekon-embedded`).
    #[arg(long, value_name = "FILE")]
    pub write_kubeconfig: Option<PathBuf>,
    /// Seed the server with the objects of this multi-document YAML file (`kind: List` allowed).
    #[arg(long, value_name = "FILE.yaml")]
    pub state: Option<PathBuf>,
    /// Run the garbage collector for ownerReferences (and namespace cleanup).
    #[arg(long)]
    pub gc: bool,
    /// Finish graceful deletion of scheduled pods: `off`, `instant`, or a delay such as `2s`.
    #[arg(long, default_value = "off", value_parser = parse_kubelet)]
    pub kubelet: KubeletMode,
    /// Add `kubernetes.io/pvc-protection` to PVCs on create, as the admission plugin does.
    #[arg(long)]
    pub pvc_protection_admission: bool,
    /// Inject faults described by this YAML/JSON file (see `rekon_apiserver::faults`).
    #[arg(long, value_name = "FILE")]
    pub faults: Option<PathBuf>,
    /// Seed of generated names, uids and fault decisions.
    #[arg(long, default_value_t = 0)]
    pub seed: u64,
}

fn parse_kubelet(text: &str) -> Result<KubeletMode, String> {
    match text {
        "off" => Ok(KubeletMode::Off),
        "instant" => Ok(KubeletMode::Instant),
        other => parse_duration(other).map(KubeletMode::Delay),
    }
}

/// `500ms`, `2s`, `1m`.
fn parse_duration(text: &str) -> Result<Duration, String> {
    let split = text
        .find(|c: char| !c.is_ascii_digit())
        .unwrap_or(text.len());
    let (number, unit) = text.split_at(split);
    let value: u64 = number
        .parse()
        .map_err(|_| format!("expected off, instant or a duration like 2s, got {text:?}"))?;
    match unit {
        "ms" => Ok(Duration::from_millis(value)),
        "s" | "" => Ok(Duration::from_secs(value)),
        "m" => Ok(Duration::from_secs(value * 60)),
        _ => Err(format!(
            "unknown duration unit {unit:?} in {text:?} (use ms, s or m)"
        )),
    }
}

pub async fn run(args: Args) -> anyhow::Result<ExitCode> {
    let mut config = ServerConfig::new()
        .seed(args.seed)
        .garbage_collector(args.gc)
        .kubelet(args.kubelet)
        .pvc_protection_admission(args.pvc_protection_admission);
    if let Some(path) = &args.faults {
        config = config.faults(FaultConfig::from_file(path)?);
    }
    let seed_objects = match &args.state {
        Some(path) => {
            let text = std::fs::read_to_string(path)
                .with_context(|| format!("cannot read state file {}", path.display()))?;
            rekon_apiserver::load_yaml_documents(&text)
                .with_context(|| format!("invalid state file {}", path.display()))?
        }
        None => Vec::new(),
    };
    let server = ApiServer::start(config, args.listen).await?;
    let count = seed_objects.len();
    if let Err(err) = server.store().load_objects(seed_objects) {
        server.shutdown().await;
        return Err(err).context("cannot load the state file");
    }
    if let Some(path) = &args.write_kubeconfig {
        server.write_kubeconfig(path)?;
        eprintln!("kubeconfig written to {}", path.display());
    }
    eprintln!(
        "rekon apiserver listening on {} ({count} objects loaded); Ctrl-C to stop",
        server.url()
    );
    wait_for_signal().await?;
    eprintln!("shutting down");
    server.shutdown().await;
    Ok(ExitCode::SUCCESS)
}

async fn wait_for_signal() -> anyhow::Result<()> {
    let mut terminate = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate())
        .context("cannot listen for SIGTERM")?;
    tokio::select! {
        ctrl_c = tokio::signal::ctrl_c() => ctrl_c.context("cannot listen for Ctrl-C")?,
        _ = terminate.recv() => {}
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kubelet_modes() {
        assert_eq!(parse_kubelet("off"), Ok(KubeletMode::Off));
        assert_eq!(parse_kubelet("instant"), Ok(KubeletMode::Instant));
        assert_eq!(
            parse_kubelet("250ms"),
            Ok(KubeletMode::Delay(Duration::from_millis(250)))
        );
        assert_eq!(
            parse_kubelet("2s"),
            Ok(KubeletMode::Delay(Duration::from_secs(2)))
        );
        assert!(parse_kubelet("soon").is_err());
    }
}
