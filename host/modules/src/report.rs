//! Telling people what happened to a module: a log line always, the status
//! file when configured, and a Kubernetes Event on rekon's own Pod when
//! running in a cluster (POD_NAME and POD_NAMESPACE set by the downward API).

use std::path::PathBuf;

use k8s_openapi::api::core::v1::ObjectReference;
use kube::runtime::events::{Event, EventType, Recorder, Reporter as EventReporter};
use rekon_runtime::World;

use crate::status::Status;

/// Something that happened to a controller's modules.
#[derive(Debug, Clone, PartialEq)]
pub enum ModuleEvent {
    /// A version was published and serves now.
    Activated {
        controller: World,
        version: String,
        replaced: Option<String>,
        shadow: Option<String>,
    },
    /// A configuration or module was refused; the old version keeps serving.
    Rejected { controller: World, reason: String },
    /// The active version failed too often and the previous one serves again.
    RolledBack {
        controller: World,
        from: String,
        to: String,
        decisions: u64,
        failures: u64,
    },
    /// Automatic rollback was due but there was nothing to roll back to.
    RollbackImpossible {
        controller: World,
        version: String,
        decisions: u64,
        failures: u64,
    },
}

impl ModuleEvent {
    fn reason(&self) -> &'static str {
        match self {
            ModuleEvent::Activated { .. } => "ModuleActivated",
            ModuleEvent::Rejected { .. } => "ModuleRejected",
            ModuleEvent::RolledBack { .. } => "ModuleRolledBack",
            ModuleEvent::RollbackImpossible { .. } => "ModuleRollbackImpossible",
        }
    }

    fn is_warning(&self) -> bool {
        !matches!(self, ModuleEvent::Activated { .. })
    }

    /// One sentence for people.
    pub fn note(&self) -> String {
        match self {
            ModuleEvent::Activated {
                controller,
                version,
                replaced,
                shadow,
            } => {
                let replaced = replaced
                    .as_ref()
                    .map(|r| format!(", replacing {r}"))
                    .unwrap_or_default();
                let shadow = shadow
                    .as_ref()
                    .map(|s| format!(", shadow {s}"))
                    .unwrap_or_default();
                format!("{controller}: {version} serves{replaced}{shadow}")
            }
            ModuleEvent::Rejected { controller, reason } => {
                format!("{controller}: refused, the current version keeps serving: {reason}")
            }
            ModuleEvent::RolledBack {
                controller,
                from,
                to,
                decisions,
                failures,
            } => format!(
                "{controller}: {from} failed {failures} of {decisions} decisions; rolled back to {to}"
            ),
            ModuleEvent::RollbackImpossible {
                controller,
                version,
                decisions,
                failures,
            } => format!(
                "{controller}: {version} failed {failures} of {decisions} decisions, but no previous \
                 version is loaded to roll back to; configure `previous`"
            ),
        }
    }
}

pub struct Reporter {
    status_file: Option<PathBuf>,
    events: Option<PodEvents>,
}

impl Reporter {
    pub fn new(status_file: Option<PathBuf>, events: Option<kube::Client>) -> Self {
        Self {
            status_file,
            events: events.and_then(PodEvents::from_env),
        }
    }

    pub fn event(&self, event: &ModuleEvent) {
        let note = event.note();
        if event.is_warning() {
            tracing::warn!(reason = event.reason(), "{note}");
        } else {
            tracing::info!(reason = event.reason(), "{note}");
        }
        if let Some(events) = &self.events {
            events.publish(event, note);
        }
    }

    pub fn status(&self, status: &Status) {
        if let Some(path) = &self.status_file
            && let Err(err) = status.write_to(path)
        {
            tracing::warn!(path = %path.display(), error = %err, "could not write the module status file");
        }
    }
}

/// Events on rekon's own Pod.
struct PodEvents {
    recorder: Recorder,
    pod: ObjectReference,
}

impl PodEvents {
    fn from_env(client: kube::Client) -> Option<Self> {
        let name = std::env::var("POD_NAME").ok()?;
        let namespace = std::env::var("POD_NAMESPACE").ok()?;
        let reporter = EventReporter {
            controller: "rekon".into(),
            instance: Some(name.clone()),
        };
        Some(Self {
            recorder: Recorder::new(client, reporter),
            pod: ObjectReference {
                api_version: Some("v1".into()),
                kind: Some("Pod".into()),
                name: Some(name),
                namespace: Some(namespace),
                ..ObjectReference::default()
            },
        })
    }

    /// Fire and forget: an event that cannot be recorded is only logged.
    fn publish(&self, event: &ModuleEvent, note: String) {
        let Ok(runtime) = tokio::runtime::Handle::try_current() else {
            return;
        };
        let (recorder, pod) = (self.recorder.clone(), self.pod.clone());
        let event = Event {
            type_: if event.is_warning() {
                EventType::Warning
            } else {
                EventType::Normal
            },
            reason: event.reason().into(),
            note: Some(note),
            action: "HotSwap".into(),
            secondary: None,
        };
        runtime.spawn(async move {
            if let Err(err) = recorder.publish(&event, &pod).await {
                tracing::debug!(error = %err, "could not record the module event");
            }
        });
    }
}
