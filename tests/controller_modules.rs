//! End-to-end: controllers written only as modules of the generic `controller`
//! world, run by the host's one generic controller against the embedded API
//! server. No host file names any of them.

use std::sync::Arc;
use std::time::Duration;

use rekon_contract::ControllerWorld;
use rekon_contract::controller::{Action, Decision, Description, Kind, Scope};
use rekon_controllers::decider::{DecideError, Decider, GuestInfo};
use rekon_controllers::generic::ControllerModule;
use rekon_controllers::journal::Journal;
use rekon_simulate::{ClusterOptions, Deciders, Report, Settle, simulate};
use rekon_tests::sim::*;
use serde_json::Value;

const PV_FINALIZER: &str = "kubernetes.io/pv-protection";

async fn run_modules(state: Vec<Value>, modules: Vec<ControllerModule>, settle: Settle) -> Report {
    let options = ClusterOptions {
        controllers: modules
            .iter()
            .map(ControllerModule::name)
            .collect::<Vec<_>>()
            .join(",")
            .parse()
            .unwrap(),
        modules,
        ..ClusterOptions::default()
    };
    simulate(
        state,
        vec![],
        options,
        settle,
        Deciders::new(),
        Arc::new(Journal::new()),
    )
    .await
    .expect("simulation runs")
}

fn pv_writes(report: &Report) -> Vec<(String, String, u16)> {
    writes(&report.journal)
        .into_iter()
        .filter(|(_, resource, ..)| resource == "persistentvolumes")
        .map(|(verb, _, _, name, code)| (verb, name, code))
        .collect()
}

fn find_pv<'a>(report: &'a Report, name: &str) -> Option<&'a Value> {
    find(&report.objects, "PersistentVolume", "", name)
}

#[tokio::test(flavor = "multi_thread")]
async fn pv_protection_protects_every_pv_and_releases_only_a_deleting_unbound_one() {
    let state = vec![
        pv("new", "Available", false, &[]),
        pv("bound", "Bound", true, &[PV_FINALIZER]),
        pv("released", "Released", true, &[PV_FINALIZER]),
    ];
    let report = run_modules(
        state,
        vec![controller_module("rekon_guest_pv_protection")],
        quick(),
    )
    .await;
    report.converged.as_ref().expect("converged");
    assert_eq!(
        finalizers(find_pv(&report, "new").expect("new PV")),
        [PV_FINALIZER]
    );
    assert_eq!(
        finalizers(find_pv(&report, "bound").expect("a bound PV stays")),
        [PV_FINALIZER]
    );
    assert!(
        find_pv(&report, "released").is_none(),
        "released PV deleted once its finalizer went"
    );
    let mut writes = pv_writes(&report);
    writes.sort();
    assert_eq!(
        writes,
        [
            ("patch".into(), "new".into(), 200),
            ("patch".into(), "released".into(), 200)
        ],
        "one conditional write per unit of work"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn a_steady_state_writes_nothing() {
    let state = vec![
        pv("a", "Available", false, &[PV_FINALIZER]),
        pv("b", "Bound", false, &[PV_FINALIZER]),
        pv("c", "Bound", true, &[PV_FINALIZER]),
    ];
    let report = run_modules(
        state,
        vec![controller_module("rekon_guest_pv_protection")],
        quick(),
    )
    .await;
    report.converged.as_ref().expect("converged");
    assert!(pv_writes(&report).is_empty(), "{:?}", pv_writes(&report));
    let decided = report
        .journal
        .entries()
        .iter()
        .filter(|e| matches!(e, rekon_controllers::journal::Entry::Decision { controller, .. } if controller == "pv-protection"))
        .count();
    assert!(decided >= 3, "every PV was decided ({decided})");
}

/// A module whose decision writes outside its declared scope.
struct Overreaching;

impl Decider<ControllerWorld> for Overreaching {
    fn info(&self) -> GuestInfo {
        GuestInfo {
            name: "overreaching".into(),
            digest: "native".into(),
        }
    }

    fn decide(
        &self,
        _key: &str,
        input: rekon_contract::ControllerInput,
    ) -> Result<rekon_contract::ControllerDecision, DecideError> {
        let rekon_contract::ControllerInput::Decide(_) = input else {
            panic!("the host describes modules before it runs them")
        };
        Ok(rekon_contract::ControllerDecision::Decide(
            Decision::Actions(vec![Action::AddFinalizer(
                "example.com/not-declared".into(),
            )]),
        ))
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn an_action_outside_the_declared_scope_is_refused_and_nothing_is_written() {
    let description = Description {
        name: "overreaching".into(),
        primary: Kind::new("", "v1", "PersistentVolume"),
        scope: Scope {
            finalizers: vec![PV_FINALIZER.into()],
            ..Scope::default()
        },
        ..Description::default()
    };
    let module = ControllerModule::new(description, Arc::new(Overreaching)).unwrap();
    let settle = Settle {
        timeout: Duration::from_secs(3),
        ..quick()
    };
    let report = run_modules(vec![pv("a", "Available", false, &[])], vec![module], settle).await;
    // Refused, then decided again with backoff: never applied.
    let decided = report
        .journal
        .entries()
        .iter()
        .filter(|e| matches!(e, rekon_controllers::journal::Entry::Decision { controller, .. } if controller == "overreaching"))
        .count();
    assert!(
        decided >= 2,
        "the refused key is retried ({decided} decisions)"
    );
    assert!(
        pv_writes(&report).is_empty(),
        "nothing written: {:?}",
        pv_writes(&report)
    );
    assert!(finalizers(find_pv(&report, "a").unwrap()).is_empty());
}

/// A module that notes the `now` of every decision and asks for nothing.
struct ClockReader(Arc<std::sync::Mutex<Vec<String>>>);

impl Decider<ControllerWorld> for ClockReader {
    fn info(&self) -> GuestInfo {
        GuestInfo {
            name: "clock-reader".into(),
            digest: "native".into(),
        }
    }

    fn decide(
        &self,
        _key: &str,
        input: rekon_contract::ControllerInput,
    ) -> Result<rekon_contract::ControllerDecision, DecideError> {
        let rekon_contract::ControllerInput::Decide(input) = input else {
            panic!("the host describes modules before it runs them")
        };
        self.0.lock().unwrap().push(input.now);
        Ok(rekon_contract::ControllerDecision::Decide(
            Decision::Actions(vec![]),
        ))
    }
}

/// The host's clock as a decision sees it: RFC 3339 in UTC with milliseconds,
/// truncated, so never ahead of the real clock (a TTL never ends early) and
/// never a second behind it (a TTL never ends a second late).
#[tokio::test(flavor = "multi_thread")]
async fn a_decision_sees_the_hosts_clock_to_the_millisecond_never_ahead() {
    let description = Description {
        name: "clock-reader".into(),
        primary: Kind::new("", "v1", "PersistentVolume"),
        ..Description::default()
    };
    let nows = Arc::default();
    let module =
        ControllerModule::new(description, Arc::new(ClockReader(Arc::clone(&nows)))).unwrap();
    let before = chrono::Utc::now();
    let report = run_modules(
        vec![pv("a", "Available", false, &[])],
        vec![module],
        quick(),
    )
    .await;
    let after = chrono::Utc::now();
    report.converged.as_ref().expect("converged");
    let nows = nows.lock().unwrap().clone();
    assert!(!nows.is_empty(), "the PV was decided");
    for now in nows {
        // 2026-11-26T12:00:00.250Z: three fractional digits, always.
        let (seconds, fraction) = now
            .split_once('.')
            .unwrap_or_else(|| panic!("{now}: no fraction"));
        assert_eq!(seconds.len(), 19, "{now}");
        assert!(
            fraction.len() == 4
                && fraction.ends_with('Z')
                && fraction[..3].bytes().all(|b| b.is_ascii_digit()),
            "{now}: not milliseconds in UTC"
        );
        let seen = chrono::DateTime::parse_from_rfc3339(&now).unwrap();
        let truncated_before = before
            - chrono::Duration::nanoseconds(i64::from(before.timestamp_subsec_nanos() % 1_000_000));
        assert!(
            truncated_before <= seen && seen <= after,
            "{now} is not between {before} and {after}"
        );
    }
}

/// guests.yaml pins a controller module by sha256 and by the scope it allows.
mod pinned_scope {
    use rekon_modules::generic::{ControllerModuleError, load_dir};
    use rekon_modules::{Loader, ModuleDigest, PrecompiledCache};
    use rekon_runtime::{Engine, EngineConfig};

    fn guests_dir(scope: &str, sha256: Option<&str>) -> tempfile::TempDir {
        let dir = tempfile::tempdir().unwrap();
        let built = rekon_runtime::testing::built_guest("rekon_guest_pv_protection");
        let bytes = std::fs::read(&built).expect("run `make guests`");
        std::fs::write(dir.path().join("pv.wasm"), &bytes).unwrap();
        let digest = sha256.map_or_else(|| ModuleDigest::of(&bytes).to_string(), str::to_string);
        let config = format!(
            "controllers:\n  pv-protection:\n    module: pv.wasm\n    sha256: \"{digest}\"\n    scope: {scope}\n"
        );
        std::fs::write(dir.path().join("guests.yaml"), config).unwrap();
        dir
    }

    fn load(dir: &tempfile::TempDir) -> (usize, Vec<ControllerModuleError>) {
        let engine = Engine::new(EngineConfig::default()).unwrap();
        let cache = PrecompiledCache::new(engine.compatibility_hash(), None).unwrap();
        let defaults = engine.config().default_limits;
        let loader = Loader::new(engine, cache);
        let found = load_dir(&loader, defaults, 256, dir.path());
        (found.served.len(), found.refused)
    }

    #[test]
    fn a_module_within_its_pinned_scope_is_served() {
        let dir = guests_dir("{finalizers: [kubernetes.io/pv-protection]}", None);
        let (served, refused) = load(&dir);
        assert!(refused.is_empty(), "{refused:?}");
        assert_eq!(served, 1);
    }

    #[test]
    fn a_module_asking_for_more_than_its_pin_is_refused_naming_what_it_asked() {
        let dir = guests_dir("{finalizers: [example.com/other]}", None);
        let (served, refused) = load(&dir);
        assert_eq!(served, 0);
        let [ControllerModuleError::ScopeNotAllowed { asked, .. }] = &refused[..] else {
            panic!("{refused:?}")
        };
        assert_eq!(asked, &["finalizer \"kubernetes.io/pv-protection\""]);
        assert!(
            refused[0].to_string().contains("ScopeNotAllowed"),
            "{}",
            refused[0]
        );
    }

    #[test]
    fn a_module_whose_digest_is_not_the_pinned_one_is_refused() {
        let other = "0".repeat(64);
        let dir = guests_dir("{finalizers: [kubernetes.io/pv-protection]}", Some(&other));
        let (served, refused) = load(&dir);
        assert_eq!(served, 0);
        assert!(
            matches!(&refused[..], [ControllerModuleError::DigestMismatch { .. }]),
            "{refused:?}"
        );
    }
}
