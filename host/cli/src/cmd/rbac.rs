//! `rekon rbac MODULE`: the ClusterRole (and its binding to rekon's
//! ServiceAccount) a controller module's description needs, derived from its
//! declared scope: least privilege read off the module, not written by hand.
//! Plural resource names come from discovery when a cluster is given
//! (`--kubeconfig`), else from kube's pluralisation of the kind.

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Context as _;
use kube::api::{ApiResource, GroupVersionKind};
use rekon_contract::ControllerWorld;
use rekon_contract::controller::Kind;
use rekon_controllers::generic::{check, rbac};
use rekon_runtime::{Engine, EngineConfig, World};

#[derive(clap::Args)]
pub struct Args {
    /// A controller module (a component exporting `rekon:reconcile/controller`).
    module: PathBuf,
    /// The namespace of rekon's ServiceAccount.
    #[arg(long, default_value = "rekon-system")]
    namespace: String,
    /// Ask this cluster's discovery for the plural names (custom resources with
    /// irregular plurals); without it, kube's pluralisation of the kind.
    #[arg(long)]
    kubeconfig: Option<PathBuf>,
}

pub async fn run(args: Args) -> anyhow::Result<ExitCode> {
    let engine = Engine::new(EngineConfig::default()).context("starting the wasm engine")?;
    let guest = engine
        .loader()
        .world(World::of::<ControllerWorld>())
        .file(&args.module)?;
    let description = guest
        .describe_controller()
        .with_context(|| format!("{}: describe", args.module.display()))?;
    let checked = check(description).with_context(|| args.module.display().to_string())?;
    let description = &checked.description;
    let mut plurals = std::collections::HashMap::new();
    if let Some(path) = &args.kubeconfig {
        let config = kube::Config::from_custom_kubeconfig(
            kube::config::Kubeconfig::read_from(path)?,
            &kube::config::KubeConfigOptions::default(),
        )
        .await?;
        let client = kube::Client::try_from(config)?;
        let module = rekon_controllers::generic::ControllerModule::new(
            description.clone(),
            std::sync::Arc::new(guest),
        )?;
        for kind in module.kinds() {
            let resolved = rekon_controllers::generic::resolve(&client, &kind)
                .await
                .with_context(|| format!("discovery of {kind}"))?;
            plurals.insert(kind, resolved.resource.plural);
        }
    }
    let plural = |kind: &Kind| {
        plurals.get(kind).cloned().unwrap_or_else(|| {
            ApiResource::from_gvk(&GroupVersionKind::gvk(&kind.group, &kind.version, &kind.kind))
                .plural
        })
    };
    let manifests = rbac::manifests(description, &plural, &args.namespace);
    print!("{}", serde_yaml::to_string(&manifests)?);
    Ok(ExitCode::SUCCESS)
}
