//! What every controller shares: the client, the projected caches, the
//! journal and the Kubernetes event recorder.

use std::sync::Arc;

use k8s_openapi::api::core::v1::ObjectReference;
use kube::Client;
use kube::runtime::events::{Event, EventType, Recorder, Reporter};
use rekon_guest::model;

use crate::journal::Journal;
use crate::observe::Observer;
use crate::pool::DecisionPool;
use crate::projection::Caches;

pub struct Context {
    pub client: Client,
    pub caches: Caches,
    pub journal: Arc<Journal>,
    pub observer: Arc<dyn Observer>,
    /// Where decisions run (blocking threads, bounded).
    pub pool: DecisionPool,
    recorder: Recorder,
}

impl Context {
    pub fn new(client: Client, journal: Arc<Journal>, observer: Arc<dyn Observer>) -> Self {
        let reporter = Reporter {
            controller: "rekon".into(),
            instance: std::env::var("POD_NAME").ok(),
        };
        Self {
            recorder: Recorder::new(client.clone(), reporter),
            client,
            caches: Caches::new(),
            journal,
            observer,
            pool: DecisionPool::default(),
        }
    }

    /// Records a Kubernetes Event on `object`; failures to record are only logged.
    pub async fn event(
        &self,
        object: ObjectReference,
        warning: bool,
        reason: &str,
        action: &str,
        note: String,
    ) {
        let event = Event {
            type_: if warning {
                EventType::Warning
            } else {
                EventType::Normal
            },
            reason: reason.into(),
            // Guest text can reach a note: cut to what the API accepts.
            note: Some(crate::budget::cut(&note, crate::budget::EVENT_NOTE_BYTES)),
            action: action.into(),
            secondary: None,
        };
        if let Err(err) = self.recorder.publish(&event, &object).await {
            tracing::debug!(error = %err, reason, "could not record an event");
        }
    }
}

/// An ObjectReference for events.
pub fn reference(kind: &str, api_version: &str, meta: &model::ObjectMeta) -> ObjectReference {
    ObjectReference {
        api_version: Some(api_version.into()),
        kind: Some(kind.into()),
        namespace: Some(meta.namespace.clone()),
        name: Some(meta.name.clone()),
        uid: Some(meta.uid.clone()),
        resource_version: Some(meta.resource_version.clone()),
        ..ObjectReference::default()
    }
}
