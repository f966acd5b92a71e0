//! `guests.yaml`: per controller, which module serves, pinned by sha256, with
//! its limits, an optional shadow candidate, the previous version kept for
//! rollback, and the automatic rollback policy.
//!
//! ```yaml
//! pvc-protection:
//!   module: pvc-protection-v2.wasm
//!   sha256: 3f5c...                 # required: the module is not loaded otherwise
//!   deadlineMs: 100
//!   memoryMiB: 64
//!   mode: active                    # active | shadow | rollback
//!   shadow: {module: pvc-protection-v3.wasm, sha256: 9ab1...}
//!   previous: {module: pvc-protection-v1.wasm, sha256: 77e0...}
//!   autoRollback: {maxFailureFraction: 0.05, minDecisions: 50}
//!   autoPromote: {minDecisions: 500, maxDifferences: 0}   # with mode: shadow
//! ```
//!
//! A `DecisionModule` object's spec reads the same (see [`crate::object`]).

use std::collections::BTreeMap;
use std::path::{Component, Path};
use std::time::Duration;

use rekon_runtime::{Limits, World};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::digest::ModuleDigest;

/// The configuration file in the guests directory.
pub const CONFIG_FILE: &str = "guests.yaml";

/// The longest `deadlineMs`: a decision is a pure function of a small input;
/// ten seconds is already far beyond any sensible one.
pub const MAX_DEADLINE_MS: u64 = 10_000;

/// The largest `memoryMiB` a `DecisionModule` may ask for (the engine's own
/// maximum, usually far lower, is checked when the object is served).
pub const MAX_MEMORY_MIB: u64 = 65_536;

/// The largest count (decisions, differences, generations) the schema takes:
/// the largest integer a JSON number holds exactly.
pub const MAX_COUNT: u64 = (1 << 53) - 1;

#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    #[error("{file}: field `{field}`: {message}")]
    Invalid {
        file: String,
        field: String,
        message: String,
    },
}

/// The whole file, by world name; a world it does not name keeps the
/// conventional module file of the guests directory. `controllers:` pins the
/// controller modules (the generic world), by controller name.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct GuestsConfig(
    BTreeMap<&'static str, ControllerConfig>,
    Option<BTreeMap<String, ControllerModuleConfig>>,
);

/// One controller module of `controllers:`: its file pinned by sha256, and the
/// most it may declare. A version whose description asks for more is refused
/// (`ScopeNotAllowed`).
///
/// ```yaml
/// controllers:
///   widgets:
///     module: widgets.wasm
///     sha256: 3f5c...
///     scope:
///       finalizers: [example.com/cleanup]
/// ```
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct ControllerModuleConfig {
    pub module: String,
    pub sha256: ModuleDigest,
    pub deadline_ms: Option<u64>,
    #[serde(rename = "memoryMiB")]
    pub memory_mib: Option<usize>,
    /// The scope allowed; an absent one allows nothing to be written.
    #[serde(default)]
    pub scope: ScopePin,
}

/// A pinned scope, in the API's spelling (camelCase); see
/// `rekon_controllers::generic::pin`.
#[derive(Debug, Clone, Default, PartialEq, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase", default)]
pub struct ScopePin {
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub finalizers: Vec<String>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub labels: Vec<String>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub annotations: Vec<String>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub status_fields: Vec<String>,
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub delete_primary: bool,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub children: Vec<ChildPin>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub event_reasons: Vec<String>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub reads: Vec<KindPin>,
}

#[derive(Debug, Clone, Default, PartialEq, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase", default)]
pub struct KindPin {
    pub group: String,
    pub version: String,
    pub kind: String,
}

#[derive(Debug, Clone, Default, PartialEq, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase", default)]
pub struct ChildPin {
    pub group: String,
    pub version: String,
    pub kind: String,
    pub create: bool,
    pub update: bool,
    pub delete: bool,
}

impl ControllerModuleConfig {
    /// A guests directory's controller module serves one version (shadow,
    /// promotion and rollback come with a `DecisionModule`): only its limits
    /// are settings.
    fn settings(&self) -> Settings<'_> {
        Settings {
            deadline_ms: self.deadline_ms,
            memory_mib: self.memory_mib.map(|m| m as u64),
            mode: Mode::Active,
            has_shadow: false,
            has_previous: false,
            auto_rollback: None,
            auto_promote: None,
        }
    }

    /// The per-decision limits, over the engine defaults.
    pub fn limits(&self, defaults: Limits) -> Limits {
        self.settings().limits(defaults)
    }
}

impl KindPin {
    pub fn of(kind: &rekon_contract::controller::Kind) -> Self {
        Self {
            group: kind.group.clone(),
            version: kind.version.clone(),
            kind: kind.kind.clone(),
        }
    }

    pub fn to_kind(&self) -> rekon_contract::controller::Kind {
        rekon_contract::controller::Kind::new(&self.group, &self.version, &self.kind)
    }
}

impl ScopePin {
    /// A module's declared scope in the API's spelling (a status shows it).
    pub fn of(scope: &rekon_contract::controller::Scope) -> Self {
        Self {
            finalizers: scope.finalizers.clone(),
            labels: scope.labels.clone(),
            annotations: scope.annotations.clone(),
            status_fields: scope.status_fields.clone(),
            delete_primary: scope.delete_primary,
            children: scope
                .children
                .iter()
                .map(|c| ChildPin {
                    group: c.kind.group.clone(),
                    version: c.kind.version.clone(),
                    kind: c.kind.kind.clone(),
                    create: c.create,
                    update: c.update,
                    delete: c.delete,
                })
                .collect(),
            event_reasons: scope.event_reasons.clone(),
            reads: scope.reads.iter().map(|r| KindPin::of(&r.kind)).collect(),
        }
    }

    /// The scope in the contract's model, for the comparison.
    pub fn to_scope(&self) -> rekon_contract::controller::Scope {
        use rekon_contract::controller::{ChildScope, Kind, ReadScope, Scope};
        Scope {
            finalizers: self.finalizers.clone(),
            labels: self.labels.clone(),
            annotations: self.annotations.clone(),
            status_fields: self.status_fields.clone(),
            delete_primary: self.delete_primary,
            children: self
                .children
                .iter()
                .map(|c| ChildScope {
                    kind: Kind::new(&c.group, &c.version, &c.kind),
                    create: c.create,
                    update: c.update,
                    delete: c.delete,
                })
                .collect(),
            event_reasons: self.event_reasons.clone(),
            reads: self
                .reads
                .iter()
                .map(|k| ReadScope {
                    kind: k.to_kind(),
                    fields: Vec::new(),
                    // Not pinned: how fresh a list is, and whether it is filtered, widen no write scope.
                    ..Default::default()
                })
                .collect(),
        }
    }
}

#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct ControllerConfig {
    /// File name relative to the guests directory.
    pub module: String,
    pub sha256: ModuleDigest,
    pub deadline_ms: Option<u64>,
    #[serde(rename = "memoryMiB")]
    pub memory_mib: Option<usize>,
    #[serde(default)]
    pub mode: Mode,
    /// A candidate that decides beside the active module without effect.
    pub shadow: Option<ModuleRef>,
    /// The version to go back to: serves in `mode: shadow` and `mode: rollback`,
    /// and is what automatic rollback republishes.
    pub previous: Option<ModuleRef>,
    pub auto_rollback: Option<AutoRollback>,
    pub auto_promote: Option<AutoPromote>,
}

#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ModuleRef {
    pub module: String,
    pub sha256: ModuleDigest,
}

/// What `module` does.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize, Serialize, JsonSchema)]
#[serde(rename_all = "kebab-case")]
pub enum Mode {
    /// `module` serves (the default).
    #[default]
    Active,
    /// `previous` serves and `module` runs beside it in shadow: the step before promotion.
    Shadow,
    /// `previous` serves; `module` is not run.
    Rollback,
}

/// Roll back when more than `maxFailureFraction` of at least `minDecisions`
/// decisions since activation trapped, overran the deadline or the memory cap.
#[derive(Debug, Clone, Copy, PartialEq, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct AutoRollback {
    #[schemars(range(min = 0.0, max = 1.0), extend("exclusiveMaximum" = true))]
    pub max_failure_fraction: f64,
    #[schemars(range(min = 1, max = MAX_COUNT))]
    pub min_decisions: u64,
}

impl AutoRollback {
    /// Whether `failures` of `decisions` calls for a rollback.
    pub fn exceeded(&self, decisions: u64, failures: u64) -> bool {
        decisions >= self.min_decisions
            && failures as f64 > self.max_failure_fraction * decisions as f64
    }
}

/// In mode `shadow`: promote the candidate once it agreed on at least
/// `minDecisions` decisions with at most `maxDifferences` differences and no failure.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct AutoPromote {
    #[schemars(range(min = 1, max = MAX_COUNT))]
    pub min_decisions: u64,
    #[schemars(range(max = MAX_COUNT))]
    pub max_differences: u64,
}

/// What [`AutoPromote::verdict`] says about a shadow's tally.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PromotionVerdict {
    /// Not enough evidence yet.
    Waiting,
    Promote,
    /// More differences than allowed, or a failure: never promoted.
    Stopped,
}

impl AutoPromote {
    pub fn verdict(&self, agreed: u64, differed: u64, failed: u64) -> PromotionVerdict {
        if failed > 0 || differed > self.max_differences {
            PromotionVerdict::Stopped
        } else if agreed >= self.min_decisions {
            PromotionVerdict::Promote
        } else {
            PromotionVerdict::Waiting
        }
    }
}

/// The settings of one world besides its module files, as guests.yaml and a
/// `DecisionModule` both give them; checked the same way for both.
pub struct Settings<'a> {
    pub deadline_ms: Option<u64>,
    pub memory_mib: Option<u64>,
    pub mode: Mode,
    pub has_shadow: bool,
    pub has_previous: bool,
    pub auto_rollback: Option<&'a AutoRollback>,
    pub auto_promote: Option<&'a AutoPromote>,
}

impl Settings<'_> {
    /// Checks what serde cannot: `Err((field, message))`.
    pub fn validate(&self, max_memory_mib: usize) -> Result<(), (&'static str, String)> {
        if let Some(ms) = self.deadline_ms
            && !(1..=MAX_DEADLINE_MS).contains(&ms)
        {
            return Err((
                "deadlineMs",
                format!("must be between 1 and {MAX_DEADLINE_MS}, got {ms}"),
            ));
        }
        if let Some(mib) = self.memory_mib
            && !(1..=max_memory_mib as u64).contains(&mib)
        {
            return Err((
                "memoryMiB",
                format!("must be between 1 and {max_memory_mib} (the engine's maximum), got {mib}"),
            ));
        }
        if self.mode != Mode::Active && !self.has_previous {
            return Err((
                "previous",
                format!(
                    "mode {:?} serves the previous version, so `previous` is required",
                    self.mode
                ),
            ));
        }
        if self.mode == Mode::Shadow && self.has_shadow {
            return Err((
                "shadow",
                "in mode shadow, `module` is the shadow; remove `shadow` or set mode active".into(),
            ));
        }
        if let Some(policy) = self.auto_rollback {
            if !(0.0..1.0).contains(&policy.max_failure_fraction) {
                return Err((
                    "autoRollback.maxFailureFraction",
                    format!("must be in [0, 1), got {}", policy.max_failure_fraction),
                ));
            }
            if policy.min_decisions == 0 {
                return Err(("autoRollback.minDecisions", "must be at least 1".into()));
            }
        }
        if let Some(policy) = self.auto_promote {
            if self.mode != Mode::Shadow {
                return Err((
                    "autoPromote",
                    "promotes a shadow candidate, so it needs mode shadow".into(),
                ));
            }
            if policy.min_decisions == 0 {
                return Err(("autoPromote.minDecisions", "must be at least 1".into()));
            }
        }
        Ok(())
    }

    /// The per-decision limits, over the engine defaults.
    pub fn limits(&self, defaults: Limits) -> Limits {
        Limits {
            deadline: self
                .deadline_ms
                .map(Duration::from_millis)
                .unwrap_or(defaults.deadline),
            memory_bytes: self
                .memory_mib
                .map(|mib| (mib as usize) << 20)
                .unwrap_or(defaults.memory_bytes),
            ..defaults
        }
    }
}

/// What guests.yaml may expand to: anchors and aliases that would materialize more than a
/// configuration file ever needs (the billion-laughs shape of CVE-2019-11253) are refused by
/// serde-saphyr's budget instead of exhausting the host's memory.
fn yaml_limits() -> serde_saphyr::Options {
    let mut budget = serde_saphyr::Budget::default();
    budget.max_nodes = 100_000;
    budget.max_total_scalar_bytes = 16 << 20;
    let mut options = serde_saphyr::Options::default();
    options.budget = Some(budget);
    options.alias_limits.max_total_replayed_events = 100_000;
    options.with_snippet = false;
    options
}

/// A budget breach, also behind the alias and snippet wrappers serde-saphyr adds.
fn over_budget(mut err: &serde_saphyr::Error) -> bool {
    loop {
        match err {
            serde_saphyr::Error::Budget { .. } => return true,
            serde_saphyr::Error::AliasError { error, .. }
            | serde_saphyr::Error::WithSnippet { error, .. } => err = error,
            _ => return false,
        }
    }
}

impl GuestsConfig {
    /// Parses the text of `file` (named in errors); `memoryMiB` may be at most
    /// `max_memory_mib`, the engine's bound.
    pub fn parse(file: &str, text: &str, max_memory_mib: usize) -> Result<Self, ConfigError> {
        let invalid = |field: String, message: String| ConfigError::Invalid {
            file: file.to_string(),
            field,
            message,
        };
        let entries: Option<BTreeMap<String, serde_yaml::Value>> =
            serde_saphyr::from_str_with_options(text, yaml_limits()).map_err(|err| {
                let message = if over_budget(&err) {
                    format!(
                        "the YAML expands (through anchors and aliases) past what a configuration file may hold: {err}"
                    )
                } else {
                    err.to_string()
                };
                invalid("(top level)".into(), message)
            })?;
        let mut config = BTreeMap::new();
        let mut controllers = None;
        for (key, value) in entries.unwrap_or_default() {
            if key == "controllers" {
                let modules: BTreeMap<String, ControllerModuleConfig> =
                    serde_path_to_error::deserialize(value).map_err(|err| {
                        invalid(
                            format!("controllers.{}", err.path()),
                            err.into_inner().to_string(),
                        )
                    })?;
                for (name, module) in &modules {
                    check_file_name(&module.module)
                        .map_err(|m| invalid(format!("controllers.{name}.module"), m))?;
                    module
                        .settings()
                        .validate(max_memory_mib)
                        .map_err(|(field, m)| invalid(format!("controllers.{name}.{field}"), m))?;
                }
                controllers = Some(modules);
                continue;
            }
            let world = World::named(&key)
                .filter(|w| !w.is_generic())
                .ok_or_else(|| {
                    let known: Vec<String> = World::dedicated().map(|w| format!("`{w}`")).collect();
                    invalid(
                        "(top level)".into(),
                        format!(
                            "unknown field `{key}`, expected one of {}",
                            known.join(", ")
                        ),
                    )
                })?;
            let controller: ControllerConfig =
                serde_path_to_error::deserialize(value).map_err(|err| {
                    let path = err.path().to_string();
                    let field = if path == "." {
                        key.clone()
                    } else {
                        format!("{key}.{path}")
                    };
                    invalid(field, err.into_inner().to_string())
                })?;
            controller
                .validate(world, max_memory_mib)
                .map_err(|(field, message)| invalid(field, message))?;
            config.insert(world.name(), controller);
        }
        Ok(Self(config, controllers))
    }

    pub fn controller(&self, world: World) -> Option<&ControllerConfig> {
        self.0.get(world.name())
    }

    /// The pinned controller modules, when the file has a `controllers:` section.
    pub fn controller_modules(&self) -> Option<&BTreeMap<String, ControllerModuleConfig>> {
        self.1.as_ref()
    }
}

impl ControllerConfig {
    fn settings(&self) -> Settings<'_> {
        Settings {
            deadline_ms: self.deadline_ms,
            memory_mib: self.memory_mib.map(|m| m as u64),
            mode: self.mode,
            has_shadow: self.shadow.is_some(),
            has_previous: self.previous.is_some(),
            auto_rollback: self.auto_rollback.as_ref(),
            auto_promote: self.auto_promote.as_ref(),
        }
    }

    /// Checks what serde cannot; the error names the field.
    fn validate(&self, world: World, max_memory_mib: usize) -> Result<(), (String, String)> {
        let field = |name: &str| format!("{world}.{name}");
        check_file_name(&self.module).map_err(|m| (field("module"), m))?;
        for (name, module) in [("shadow", &self.shadow), ("previous", &self.previous)] {
            if let Some(module) = module {
                check_file_name(&module.module)
                    .map_err(|m| (field(&format!("{name}.module")), m))?;
            }
        }
        self.settings()
            .validate(max_memory_mib)
            .map_err(|(name, message)| (field(name), message))
    }

    /// The per-decision limits, over the engine defaults.
    pub fn limits(&self, defaults: Limits) -> Limits {
        self.settings().limits(defaults)
    }
}

/// Module files are names inside the guests directory (ConfigMap keys), never
/// paths that leave it.
fn check_file_name(name: &str) -> Result<(), String> {
    let path = Path::new(name);
    let inside = !name.is_empty() && path.components().all(|c| matches!(c, Component::Normal(_)));
    if inside {
        Ok(())
    } else {
        Err(format!(
            "`{name}` must be a file name relative to the guests directory"
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const A: &str = "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa";
    const B: &str = "bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb";

    fn parse(text: &str) -> Result<GuestsConfig, ConfigError> {
        GuestsConfig::parse("guests.yaml", text, 256)
    }

    /// ~100 KB of nested anchors naming 10^10 scalars (CVE-2019-11253's shape) is refused
    /// quickly, naming the file; anchors in a normal file still work.
    #[test]
    fn anchor_bombs_are_refused() {
        let mut bomb = String::from("a0: &a0 [");
        bomb.push_str(&vec!["x"; 40_000].join(","));
        bomb.push_str("]\n");
        for level in 1..=4 {
            let aliases = vec![format!("*a{}", level - 1); 2_500 / level].join(",");
            bomb.push_str(&format!("a{level}: &a{level} [{aliases}]\n"));
        }
        assert!((50_000..150_000).contains(&bomb.len()), "{}", bomb.len());
        let started = std::time::Instant::now();
        let err = parse(&bomb).unwrap_err().to_string();
        assert!(
            err.starts_with("guests.yaml: field `(top level)`: the YAML expands"),
            "{err}"
        );
        let took = started.elapsed();
        eprintln!(
            "a {} byte anchor bomb refused in {took:?}: {err}",
            bomb.len()
        );
        assert!(took < std::time::Duration::from_secs(2), "{took:?}");

        let text = format!(
            "pvc-protection:\n  module: a.wasm\n  sha256: &digest {A}\nresource-claim:\n  module: b.wasm\n  sha256: *digest\n"
        );
        let config = parse(&text).unwrap();
        assert_eq!(config.0.len(), 2);
    }

    fn error(text: &str) -> String {
        parse(text).unwrap_err().to_string()
    }

    #[test]
    fn parses_every_field() {
        let config = parse(&format!(
            "pvc-protection:\n  module: v2.wasm\n  sha256: sha256:{A}\n  deadlineMs: 50\n  memoryMiB: 16\n  \
             mode: active\n  shadow: {{module: v3.wasm, sha256: {B}}}\n  previous: {{module: v1.wasm, sha256: {B}}}\n  \
             autoRollback: {{maxFailureFraction: 0.1, minDecisions: 20}}\n"
        ))
        .unwrap();
        let pvc = config
            .controller(World::named("pvc-protection").unwrap())
            .unwrap();
        assert_eq!(pvc.module, "v2.wasm");
        assert_eq!(pvc.sha256.hex(), A);
        assert_eq!(pvc.shadow.as_ref().unwrap().module, "v3.wasm");
        assert_eq!(pvc.auto_rollback.unwrap().min_decisions, 20);
        let limits = pvc.limits(Limits::default());
        assert_eq!(limits.deadline, Duration::from_millis(50));
        assert_eq!(limits.memory_bytes, 16 << 20);
        assert!(
            config
                .controller(World::named("resource-claim").unwrap())
                .is_none()
        );
    }

    #[test]
    fn errors_name_the_file_and_the_field() {
        let missing = error("pvc-protection:\n  module: v2.wasm\n");
        assert!(
            missing.starts_with("guests.yaml: field `pvc-protection`"),
            "{missing}"
        );
        assert!(missing.contains("missing field `sha256`"), "{missing}");

        let typo = error(&format!(
            "pvc-protection:\n  module: v2.wasm\n  sha256: {A}\n  deadline: 5\n"
        ));
        assert!(typo.contains("unknown field `deadline`"), "{typo}");

        let controller = error("pvc-protecton: {}\n");
        assert!(
            controller.contains("unknown field `pvc-protecton`"),
            "{controller}"
        );

        let digest = error("pvc-protection:\n  module: v2.wasm\n  sha256: abc\n");
        assert!(
            digest.contains("field `pvc-protection.sha256`") && digest.contains("64 hex digits"),
            "{digest}"
        );

        let mode = error(&format!(
            "pvc-protection:\n  module: v2.wasm\n  sha256: {A}\n  mode: canary\n"
        ));
        assert!(mode.contains("field `pvc-protection.mode`"), "{mode}");
    }

    #[test]
    fn checks_what_serde_cannot() {
        let base = format!("pvc-protection:\n  module: v2.wasm\n  sha256: {A}\n");
        let shadow_needs_previous = error(&format!("{base}  mode: shadow\n"));
        assert!(
            shadow_needs_previous.contains("field `pvc-protection.previous`"),
            "{shadow_needs_previous}"
        );

        let escape = error(&format!(
            "pvc-protection:\n  module: ../etc/passwd\n  sha256: {A}\n"
        ));
        assert!(escape.contains("field `pvc-protection.module`"), "{escape}");

        let fraction = error(&format!(
            "{base}  autoRollback: {{maxFailureFraction: 1.5, minDecisions: 3}}\n"
        ));
        assert!(
            fraction.contains("autoRollback.maxFailureFraction"),
            "{fraction}"
        );

        let double_shadow = error(&format!(
            "{base}  mode: shadow\n  shadow: {{module: x.wasm, sha256: {B}}}\n  previous: {{module: y.wasm, sha256: {B}}}\n"
        ));
        assert!(
            double_shadow.contains("pvc-protection.shadow"),
            "{double_shadow}"
        );
    }

    #[test]
    fn deadline_and_memory_are_bounded() {
        let base = format!("pvc-protection:\n  module: v2.wasm\n  sha256: {A}\n");
        for (extra, field, message) in [
            ("deadlineMs: 0", "deadlineMs", "between 1 and 10000, got 0"),
            (
                "deadlineMs: 18446744073709551615",
                "deadlineMs",
                "between 1 and 10000, got 18446744073709551615",
            ),
            (
                "memoryMiB: 0",
                "memoryMiB",
                "between 1 and 256 (the engine's maximum), got 0",
            ),
            // Would wrap to 0 bytes when shifted to bytes.
            (
                "memoryMiB: 17592186044416",
                "memoryMiB",
                "between 1 and 256 (the engine's maximum), got 17592186044416",
            ),
        ] {
            let err = error(&format!("{base}  {extra}\n"));
            assert!(
                err.starts_with(&format!("guests.yaml: field `pvc-protection.{field}`: "))
                    && err.contains(message),
                "{extra}: {err}"
            );
        }
        let edges = parse(&format!("{base}  deadlineMs: 10000\n  memoryMiB: 256\n")).unwrap();
        let limits = edges
            .controller(World::named("pvc-protection").unwrap())
            .unwrap()
            .limits(Limits::default());
        assert_eq!(limits.deadline, Duration::from_secs(10));
        assert_eq!(limits.memory_bytes, 256 << 20);
    }

    #[test]
    fn rollback_policy_needs_enough_decisions_and_more_than_the_fraction() {
        let policy = AutoRollback {
            max_failure_fraction: 0.5,
            min_decisions: 4,
        };
        assert!(!policy.exceeded(3, 3), "too few decisions");
        assert!(!policy.exceeded(4, 2), "exactly the fraction is tolerated");
        assert!(policy.exceeded(4, 3));
    }
}

#[cfg(test)]
mod promotion_tests {
    use super::*;

    #[test]
    fn promotion_waits_for_evidence_and_stops_on_a_difference_or_a_failure() {
        let policy = AutoPromote {
            min_decisions: 3,
            max_differences: 1,
        };
        assert_eq!(policy.verdict(2, 0, 0), PromotionVerdict::Waiting);
        assert_eq!(policy.verdict(3, 1, 0), PromotionVerdict::Promote);
        assert_eq!(policy.verdict(9, 2, 0), PromotionVerdict::Stopped);
        assert_eq!(policy.verdict(9, 0, 1), PromotionVerdict::Stopped);
    }

    #[test]
    fn auto_promote_needs_mode_shadow() {
        let err = GuestsConfig::parse(
            "guests.yaml",
            &format!(
                "pvc-protection:\n  module: v2.wasm\n  sha256: {}\n  autoPromote: {{minDecisions: 5, maxDifferences: 0}}\n",
                "a".repeat(64)
            ),
            256,
        )
        .unwrap_err()
        .to_string();
        assert!(
            err.contains("field `pvc-protection.autoPromote`") && err.contains("mode shadow"),
            "{err}"
        );
    }
}
