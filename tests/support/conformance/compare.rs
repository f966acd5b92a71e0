//! Cross-server comparison and the readable report.

use std::fmt::Write as _;

use super::runner::{Outcome, ScenarioRun, StepRun};
use super::scenario::Scenario;
use super::vars::Vars;

/// The result of one scenario on every server it ran on.
pub struct ScenarioReport<'a> {
    pub scenario: &'a Scenario,
    pub runs: Vec<ScenarioRun>,
}

impl ScenarioReport<'_> {
    /// Every failure: unmet expectations per server and cross-server differences.
    pub fn failures(&self) -> Vec<String> {
        let mut out = Vec::new();
        for run in &self.runs {
            if let Some(e) = &run.setup_error {
                out.push(format!("[{}] setup: {e}", run.server));
            }
            for (step, result) in self.scenario.steps.iter().zip(&run.steps) {
                for failure in result.failures() {
                    out.push(format!("[{}] step {:?}: {failure}", run.server, step.name));
                }
            }
        }
        out.extend(self.differences());
        out
    }

    /// Differences between the servers on steps both ran with the same expectations.
    pub fn differences(&self) -> Vec<String> {
        let [a, b] = self.runs.as_slice() else {
            return Vec::new();
        };
        let mut out = Vec::new();
        for (i, step) in self.scenario.steps.iter().enumerate() {
            if step.differs.is_some() {
                continue;
            }
            let (StepRun::Ran { outcome: oa, .. }, StepRun::Ran { outcome: ob, .. }) =
                (&a.steps[i], &b.steps[i])
            else {
                continue;
            };
            let mut diffs = outcome_differences(oa, ob);
            if step.same_message {
                let ma = normalise_message(oa.message.as_deref().unwrap_or(""), &a.vars);
                let mb = normalise_message(ob.message.as_deref().unwrap_or(""), &b.vars);
                if ma != mb {
                    diffs.push(format!("message {ma:?} vs {mb:?}"));
                }
            }
            for d in diffs {
                out.push(format!(
                    "step {:?}: {} vs {}: {d}",
                    step.name, a.server, b.server
                ));
            }
        }
        out
    }

    /// A per-step table of both servers' outcomes, then the failures.
    pub fn render(&self) -> String {
        let mut text = String::new();
        let servers: Vec<String> = self
            .runs
            .iter()
            .map(|r| format!("{} ns {}", r.server, r.namespace))
            .collect();
        let failures = self.failures();
        let _ = writeln!(
            text,
            "{} {} ({}; {})",
            if failures.is_empty() { "ok  " } else { "FAIL" },
            self.scenario.name,
            self.scenario.file.file_name().map_or_else(
                || self.scenario.file.display().to_string(),
                |f| f.to_string_lossy().into_owned()
            ),
            servers.join(", ")
        );
        for (i, step) in self.scenario.steps.iter().enumerate() {
            let cells: Vec<String> = self
                .runs
                .iter()
                .map(|run| format!("{}: {}", run.server, cell(&run.steps[i])))
                .collect();
            let _ = writeln!(
                text,
                "     {:>2}. {:<48} {}",
                i + 1,
                step.name,
                cells.join(" | ")
            );
        }
        for failure in &failures {
            let _ = writeln!(text, "     !! {failure}");
        }
        text
    }
}

fn cell(run: &StepRun) -> String {
    match run {
        StepRun::Skipped(why) => format!("skipped ({why})"),
        StepRun::Error(_) => "ERROR".to_owned(),
        StepRun::Ran { outcome, failures } => {
            format!("{outcome}{}", if failures.is_empty() { "" } else { " ✗" })
        }
    }
}

fn outcome_differences(a: &Outcome, b: &Outcome) -> Vec<String> {
    let mut out = Vec::new();
    if a.code != b.code {
        out.push(format!("code {} vs {}", a.code, b.code));
    }
    if a.reason != b.reason {
        out.push(format!("reason {:?} vs {:?}", a.reason, b.reason));
    }
    if a.event_types != b.event_types {
        out.push(format!("events {:?} vs {:?}", a.event_types, b.event_types));
    }
    out
}

/// Replaces per-run values (namespace, captured names, uids) by their
/// variable names, then every digit run (resourceVersions) by `N`, so messages
/// of two servers compare equal when they say the same thing.
pub fn normalise_message(message: &str, vars: &Vars) -> String {
    // Numbers are left to the digit-run rule: a short RV would otherwise be
    // replaced on one server and not on the other.
    let mut values: Vec<(&str, String)> = vars
        .string_values()
        .filter(|(_, v)| v.len() >= 3 && !v.bytes().all(|b| b.is_ascii_digit()))
        .collect();
    values.sort_by_key(|(_, v)| std::cmp::Reverse(v.len()));
    let mut text = message.to_owned();
    for (name, value) in values {
        text = text.replace(&value, &format!("<{name}>"));
    }
    let mut out = String::with_capacity(text.len());
    let mut in_digits = false;
    for c in text.chars() {
        if c.is_ascii_digit() {
            if !in_digits {
                out.push('N');
            }
            in_digits = true;
        } else {
            out.push(c);
            in_digits = false;
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn messages_normalise_names_uids_and_numbers() {
        let mut a = Vars::default();
        a.set("ns", json!("diff-aaaa"));
        a.set("uid", json!("1234-abcd"));
        a.set("rv", json!("57"));
        let mut b = Vars::default();
        b.set("ns", json!("diff-bbbb"));
        b.set("uid", json!("9876-ffff"));
        b.set("rv", json!("1203"));
        let ma = normalise_message(
            "too old resource version: 1 (57) in diff-aaaa, uid 1234-abcd",
            &a,
        );
        let mb = normalise_message(
            "too old resource version: 1 (1203) in diff-bbbb, uid 9876-ffff",
            &b,
        );
        assert_eq!(ma, mb);
        assert_eq!(ma, "too old resource version: N (N) in <ns>, uid <uid>");
        assert_ne!(ma, normalise_message("too new resource version: 1 (2)", &a));
    }
}
