//! Runs every scenario on every applicable server, several at once.

use futures::StreamExt;

use super::compare::ScenarioReport;
use super::runner::run_scenario;
use super::scenario::{Scenario, Since};
use super::transport::{ServerKind, Target};

/// Scenarios in flight at once (each spends most of its time waiting on watches).
const PARALLEL_SCENARIOS: usize = 8;

/// The servers a scenario runs on.
fn applies(scenario: &Scenario, target: &Target) -> bool {
    scenario.since == Since::Core || target.kind == ServerKind::Embedded
}

/// Runs each scenario on each target it applies to (the servers of one
/// scenario concurrently) and returns the reports in scenario order.
pub async fn run_all<'a>(scenarios: &'a [Scenario], targets: &[Target]) -> Vec<ScenarioReport<'a>> {
    futures::stream::iter(scenarios)
        .map(|scenario| async move {
            let runs = targets
                .iter()
                .filter(|t| applies(scenario, t))
                .map(|t| run_scenario(scenario, t));
            ScenarioReport {
                scenario,
                runs: futures::future::join_all(runs).await,
            }
        })
        .buffered(PARALLEL_SCENARIOS)
        .collect()
        .await
}
