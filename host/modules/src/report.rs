//! Telling people what happened to a module: a log line always, the status
//! file when configured, and a Kubernetes Event on rekon's own Pod when
//! running in a cluster (POD_NAME and POD_NAMESPACE set by the downward API).

use std::path::PathBuf;
use std::sync::Mutex;

use k8s_openapi::api::core::v1::ObjectReference;
use k8s_openapi::api::events::v1::Event as K8sEvent;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{MicroTime, ObjectMeta};
use k8s_openapi::jiff::Timestamp;
use kube::Api;
use kube::api::PostParams;

use crate::status::Status;

/// Something that happened to a controller's modules; `controller` is the
/// world's name, or the controller module's.
#[derive(Debug, Clone, PartialEq)]
pub enum ModuleEvent {
    /// A version was published and serves now.
    Activated {
        controller: String,
        version: String,
        replaced: Option<String>,
        shadow: Option<String>,
    },
    /// A configuration or module was refused; the old version keeps serving.
    Rejected { controller: String, reason: String },
    /// The active version failed too often and the previous one serves again.
    RolledBack {
        controller: String,
        from: String,
        to: String,
        decisions: u64,
        failures: u64,
    },
    /// The shadow agreed often enough and serves now (`autoPromote`).
    Promoted {
        controller: String,
        version: String,
        replaced: String,
        agreed: u64,
    },
    /// The shadow differed too often or failed: it will not be promoted.
    PromotionStopped {
        controller: String,
        version: String,
        agreed: u64,
        differed: u64,
        failed: u64,
        max_differences: u64,
        /// Names a differing key.
        detail: String,
    },
    /// Nothing names the world any more: its module stops deciding.
    Withdrawn {
        controller: String,
        version: String,
        reason: String,
    },
    /// Automatic rollback was due but there was nothing to roll back to.
    RollbackImpossible {
        controller: String,
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
            ModuleEvent::Promoted { .. } => "ModulePromoted",
            ModuleEvent::PromotionStopped { .. } => "ModulePromotionStopped",
            ModuleEvent::Withdrawn { .. } => "ModuleWithdrawn",
        }
    }

    fn is_warning(&self) -> bool {
        !matches!(
            self,
            ModuleEvent::Activated { .. } | ModuleEvent::Promoted { .. }
        )
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
            ModuleEvent::Promoted {
                controller,
                version,
                replaced,
                agreed,
            } => format!(
                "{controller}: shadow {version} agreed on {agreed} decisions; promoted, replacing {replaced}"
            ),
            ModuleEvent::PromotionStopped {
                controller,
                version,
                agreed,
                differed,
                failed,
                max_differences,
                detail,
            } => format!(
                "{controller}: shadow {version} will not be promoted: {differed} differences \
                 (at most {max_differences} allowed) and {failed} failures in {} decisions{detail}",
                agreed + differed + failed
            ),
            ModuleEvent::Withdrawn {
                controller,
                version,
                reason,
            } => format!(
                "{controller}: {version} no longer serves ({reason}); the controller stops deciding until a module names the world"
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
    /// What the status file holds now: it is rewritten only when this changes.
    written: Mutex<Option<Status>>,
    events: Option<PodEvents>,
}

impl Reporter {
    pub fn new(status_file: Option<PathBuf>, events: Option<EventTarget>) -> Self {
        Self {
            status_file,
            written: Mutex::new(None),
            events: events.map(PodEvents::new),
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

    /// Writes the status file, unless it already holds `status`.
    pub fn status(&self, status: &Status) {
        let Some(path) = &self.status_file else {
            return;
        };
        let mut written = self.written.lock().unwrap_or_else(|e| e.into_inner());
        if written.as_ref() == Some(status) {
            return;
        }
        match status.write_to(path) {
            Ok(()) => *written = Some(status.clone()),
            Err(err) => {
                tracing::warn!(path = %path.display(), error = %err, "could not write the module status file")
            }
        }
    }
}

/// The Pod that module events are recorded on: rekon's own.
pub struct EventTarget {
    pub client: kube::Client,
    pub pod: String,
    pub namespace: String,
}

impl EventTarget {
    /// rekon's own Pod, named by the downward API (POD_NAME, POD_NAMESPACE);
    /// `None` outside a cluster.
    pub fn from_env(client: kube::Client) -> Option<Self> {
        Some(Self {
            client,
            pod: std::env::var("POD_NAME").ok()?,
            namespace: std::env::var("POD_NAMESPACE").ok()?,
        })
    }
}

/// Events on rekon's own Pod. Created directly rather than through kube's
/// `Recorder`, which folds events of the same reason into one series under the
/// first note: every refusal must keep its own reason text.
struct PodEvents {
    events: Api<K8sEvent>,
    pod: ObjectReference,
    instance: String,
}

/// The API server's limit on an event note.
const NOTE_LIMIT: usize = 1024;

impl PodEvents {
    fn new(target: EventTarget) -> Self {
        Self {
            events: Api::namespaced(target.client, &target.namespace),
            pod: ObjectReference {
                api_version: Some("v1".into()),
                kind: Some("Pod".into()),
                name: Some(target.pod.clone()),
                namespace: Some(target.namespace),
                ..ObjectReference::default()
            },
            instance: target.pod,
        }
    }

    /// Fire and forget: an event that cannot be recorded is only logged.
    fn publish(&self, event: &ModuleEvent, mut note: String) {
        let Ok(runtime) = tokio::runtime::Handle::try_current() else {
            return;
        };
        if note.len() > NOTE_LIMIT {
            let mut end = NOTE_LIMIT - 3;
            while !note.is_char_boundary(end) {
                end -= 1;
            }
            note.truncate(end);
            note.push_str("...");
        }
        let now = Timestamp::now();
        let k8s_event = K8sEvent {
            metadata: ObjectMeta {
                name: Some(format!("{}.{:x}", self.instance, now.as_nanosecond())),
                namespace: self.pod.namespace.clone(),
                ..ObjectMeta::default()
            },
            event_time: Some(MicroTime(now)),
            action: Some("HotSwap".into()),
            reason: Some(event.reason().into()),
            note: Some(note),
            regarding: Some(self.pod.clone()),
            reporting_controller: Some("rekon".into()),
            reporting_instance: Some(self.instance.clone()),
            type_: Some(
                if event.is_warning() {
                    "Warning"
                } else {
                    "Normal"
                }
                .into(),
            ),
            ..K8sEvent::default()
        };
        let events = self.events.clone();
        runtime.spawn(async move {
            if let Err(err) = events.create(&PostParams::default(), &k8s_event).await {
                tracing::debug!(error = %err, "could not record the module event");
            }
        });
    }
}
