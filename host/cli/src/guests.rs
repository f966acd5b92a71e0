//! The guest modules of `run` and `simulate`, served by rekon-modules: the
//! guests directory (guests.yaml or the conventional file names), digest
//! pinning, the precompiled cache, and for `run` hot swap on changes.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use anyhow::Context as _;
use rekon_controllers::decider::{GuestInfo, ShadowVerdict};
use rekon_modules::{
    EventTarget, Modules, ModulesObserver, ModulesOptions, WatchOptions, Watching,
};
use rekon_ops::{GuestStatus, ShadowOutcome};
use rekon_simulate::Deciders;

use crate::module_cache::CacheArgs;

/// How `run` serves modules.
#[derive(clap::Args, Debug, Clone)]
pub struct ModuleArgs {
    #[command(flatten)]
    pub cache: CacheArgs,
    /// Write the module status (active/shadow/previous digests, swaps, rejections,
    /// shadow agreement, rollbacks) here as JSON after every change.
    #[arg(long, env = "REKON_STATUS_FILE")]
    pub status_file: Option<PathBuf>,
    /// Rescan the guests directory this often, besides watching it.
    #[arg(long, default_value_t = 30)]
    pub rescan_seconds: u64,
}

fn options(dir: Option<&Path>) -> anyhow::Result<ModulesOptions> {
    let dir = dir.context("no guests directory: pass --guests DIR or set REKON_GUEST_DIR")?;
    Ok(ModulesOptions::new(dir))
}

/// Loads the built-in worlds' modules and the controller modules once (no
/// watching): for `simulate` and `diff`. A module that cannot be served fails
/// the command, naming its file; so does a directory with no module at all,
/// while one holding only controller modules (a `rekon new --world
/// controller` project's) is enough.
pub async fn load_all(
    dir: Option<&Path>,
    cache: &CacheArgs,
) -> anyhow::Result<(Deciders, Vec<rekon_controllers::generic::ControllerModule>)> {
    let options = |wait_for_modules| -> anyhow::Result<ModulesOptions> {
        let mut options = options(dir)?;
        options.cache_dir = cache.dir()?;
        options.wait_for_modules = wait_for_modules;
        Ok(options)
    };
    let modules = match Modules::open(options(false)?).await {
        Ok(modules) => modules,
        Err(no_built_in) => {
            // Without waiting, opening fails when a built-in world's module is
            // refused or none has one: only the second is fine, and only when
            // controller modules are there instead.
            let modules = Modules::open(options(true)?).await?;
            let refused = modules
                .status()
                .controllers
                .values()
                .any(|s| s.rejections > 0);
            if refused || modules.controller_set().modules().is_empty() {
                return Err(no_built_in.into());
            }
            modules
        }
    };
    if let Some(refusal) = modules.controller_refusals().into_iter().next() {
        anyhow::bail!(refusal);
    }
    Ok((modules.deciders(), modules.controller_set().modules()))
}

/// Loads the modules and keeps them current while the returned guard lives:
/// for `run`. Events about modules go to rekon's own Pod through `client`;
/// activations and shadow verdicts to `metrics`. With `objects` (the cluster
/// serves `DecisionModule`), the guests directory is optional and rekon may
/// start with no module: the objects bring them.
pub async fn serve(
    dir: Option<&Path>,
    args: &ModuleArgs,
    client: kube::Client,
    metrics: Arc<dyn GuestStatus>,
    objects: bool,
) -> anyhow::Result<(Deciders, Watching, Modules)> {
    let mut options = match dir {
        None if objects => ModulesOptions::without_dir(),
        _ => options(dir)?,
    };
    options.wait_for_modules = objects;
    options.cache_dir = args.cache.dir()?;
    options.status_file = args.status_file.clone();
    options.events = EventTarget::from_env(client);
    options.observer = Arc::new(MetricsBridge(metrics));
    let modules = Modules::open(options).await?;
    let watching = modules.watch(WatchOptions {
        rescan: Duration::from_secs(args.rescan_seconds.max(1)),
        ..WatchOptions::default()
    })?;
    Ok((modules.deciders(), watching, modules))
}

/// Feeds the metrics endpoint's guest series from module activations.
struct MetricsBridge(Arc<dyn GuestStatus>);

impl ModulesObserver for MetricsBridge {
    fn activated(&self, controller: &str, guest: &GuestInfo, contract: &str) {
        self.0.active_module(
            controller,
            &guest.name,
            &format!("sha256:{}", guest.digest),
            contract,
        );
    }

    fn shadow_verdict(&self, controller: &str, verdict: ShadowVerdict) {
        let outcome = match verdict {
            ShadowVerdict::Agreed => ShadowOutcome::Agree,
            // A failing shadow disagrees as much as a differing one.
            ShadowVerdict::Differed | ShadowVerdict::Failed => ShadowOutcome::Differ,
            ShadowVerdict::Dropped => ShadowOutcome::Dropped,
        };
        self.0.shadow_decision(controller, outcome);
    }

    fn withdrawn(&self, controller: &str) {
        self.0.module_withdrawn(controller);
    }
}
