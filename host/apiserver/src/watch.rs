//! Watch streams (rows 16–19): events after a resourceVersion in order, selectors applied to
//! old and new state, bookmarks, streaming lists, `timeoutSeconds`, and the in-stream 410 when
//! the history no longer covers the start.

use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use serde_json::{Value, json};
use tokio::sync::mpsc;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

use crate::errors::ApiError;
use crate::faults::{FaultInjector, WatchPlan};
use crate::resources::ResourceId;
use crate::selectors::Selectors;
use crate::store::{EventType, WatchEvent};
use crate::stored::Stored;
use crate::verbs::Store;

/// A watch the HTTP layer has validated.
#[derive(Debug, Clone)]
pub struct WatchRequest {
    pub resource: ResourceId,
    pub namespace: Option<String>,
    pub selectors: Selectors,
    /// None: start with the current state (synthetic ADDED events).
    pub start: Option<u64>,
    pub send_initial_events: bool,
    pub allow_bookmarks: bool,
    pub timeout: Duration,
    pub bookmark_interval: Duration,
}

/// Default watch duration when the client sends no `timeoutSeconds` (upstream picks 30–60 min).
pub const DEFAULT_WATCH_TIMEOUT: Duration = Duration::from_secs(1800);

struct Sink {
    tx: mpsc::Sender<Bytes>,
}

impl Sink {
    /// False when the client has gone.
    async fn send(&self, event_type: &str, object: &Value) -> bool {
        #[derive(serde::Serialize)]
        struct Line<'a> {
            #[serde(rename = "type")]
            event_type: &'a str,
            object: &'a Value,
        }
        let mut line = serde_json::to_vec(&Line { event_type, object }).unwrap_or_default();
        line.push(b'\n');
        self.tx.send(Bytes::from(line)).await.is_ok()
    }

    /// Sends an event; a stored object goes out as the text it is stored as.
    async fn send_payload(&self, event_type: &str, payload: &Payload<'_>) -> bool {
        match payload {
            Payload::Object(object) => self.send(event_type, object).await,
            Payload::Stored(stored) => {
                let mut line = Vec::with_capacity(stored.len() + 32);
                line.extend_from_slice(b"{\"type\":\"");
                line.extend_from_slice(event_type.as_bytes());
                line.extend_from_slice(b"\",\"object\":");
                line.extend_from_slice(stored.as_bytes());
                line.extend_from_slice(b"}\n");
                self.tx.send(Bytes::from(line)).await.is_ok()
            }
        }
    }
}

/// The object of an event as a watcher gets it.
enum Payload<'a> {
    /// As stored: the resource is served in its storage shape and nothing is selected.
    Stored(&'a Stored),
    Object(Value),
}

fn bookmark(resource: ResourceId, rv: u64, initial_events_end: bool) -> Value {
    let info = resource.info();
    let mut metadata = json!({"resourceVersion": rv.to_string(), "creationTimestamp": null});
    if initial_events_end {
        metadata["annotations"] = json!({"k8s.io/initial-events-end": "true"});
    }
    json!({"kind": info.kind, "apiVersion": info.api_version(), "metadata": metadata})
}

/// The event a watcher with these selectors sees for `event`, if any: an object entering the
/// selector is ADDED, one leaving it is DELETED (with the new resourceVersion). Sent as stored
/// unless the resource is served in another shape or selectors must look inside.
fn visible_event<'a>(
    req: &WatchRequest,
    event: &'a WatchEvent,
) -> Option<(EventType, Payload<'a>)> {
    if !event.concerns(req.resource, req.namespace.as_deref()) {
        return None;
    }
    if req.resource.storage() == req.resource && req.selectors.is_empty() {
        return Some((event.event_type, Payload::Stored(&event.object)));
    }
    let (object, previous) = event.served_as(req.resource);
    let new_matches = req.selectors.matches(&object);
    let visible = |event_type| Some((event_type, Payload::Object(object)));
    match event.event_type {
        EventType::Added | EventType::Deleted if new_matches => visible(event.event_type),
        EventType::Added | EventType::Deleted => None,
        EventType::Modified => {
            let old_matches = previous.as_ref().is_some_and(|p| req.selectors.matches(p));
            match (old_matches, new_matches) {
                (true, true) => visible(EventType::Modified),
                (false, true) => visible(EventType::Added),
                (true, false) => {
                    let mut gone = previous.unwrap_or_default();
                    crate::meta::set_resource_version(&mut gone, event.rv);
                    Some((EventType::Deleted, Payload::Object(gone)))
                }
                (false, false) => None,
            }
        }
    }
}

/// Starts the watch; the returned channel yields the JSON lines of the response body.
pub fn spawn(
    store: Store,
    req: WatchRequest,
    faults: Arc<FaultInjector>,
    shutdown: CancellationToken,
) -> mpsc::Receiver<Bytes> {
    let (tx, rx) = mpsc::channel(64);
    let plan = faults.watch_plan(req.resource.info());
    // A stream that ran under faults may have lost events: when they stop it ends
    // with 410 Expired, so the client lists again whatever resourceVersion it holds
    // (a resumed watch would not resend an event dropped before a delivered one).
    let faulty = plan != WatchPlan::default();
    tokio::spawn(async move {
        let sink = Sink { tx };
        let faults_stopped = tokio::select! {
            _ = run(&store, &req, &faults, &plan, &sink) => false,
            _ = shutdown.cancelled() => false,
            _ = sink.tx.closed() => false,
            _ = faults.stopped().cancelled(), if faulty => true,
        };
        if faults_stopped {
            let status =
                ApiError::expired("the watch ran under injected faults; list again").to_status();
            sink.send("ERROR", &status).await;
        }
    });
    rx
}

async fn run(
    store: &Store,
    req: &WatchRequest,
    faults: &FaultInjector,
    plan: &WatchPlan,
    sink: &Sink,
) {
    let deadline = Instant::now() + req.timeout;
    let mut changes = store.subscribe();
    let mut last = match req.start {
        Some(rv) if !req.send_initial_events => rv,
        _ => {
            let (objects, rv) = store.read(|objs| {
                let objects: Vec<Value> = objs
                    .iter_resource(req.resource, req.namespace.as_deref())
                    .filter(|(_, obj)| req.selectors.matches(obj))
                    .map(|(_, obj)| obj)
                    .collect();
                (objects, objs.current_rv())
            });
            for obj in &objects {
                if !sink.send("ADDED", obj).await {
                    return;
                }
            }
            if req.send_initial_events
                && req.allow_bookmarks
                && !sink
                    .send("BOOKMARK", &bookmark(req.resource, rv, true))
                    .await
            {
                return;
            }
            rv
        }
    };
    let mut sent = 0usize;
    let mut next_bookmark = Instant::now() + req.bookmark_interval;
    loop {
        let events = match store.events_since(last) {
            Ok(events) => events,
            Err(too_old) => {
                let status = ApiError::expired(format!(
                    "too old resource version: {} ({})",
                    too_old.requested, too_old.floor
                ))
                .to_status();
                sink.send("ERROR", &status).await;
                return;
            }
        };
        for event in events {
            if !plan.delay.is_zero() {
                let due = Instant::from_std(event.at) + plan.delay;
                if due > deadline {
                    break;
                }
                tokio::time::sleep_until(due).await;
            }
            last = event.rv;
            let Some((event_type, payload)) = visible_event(req, &event) else {
                continue;
            };
            if faults.drop_event(plan) {
                continue;
            }
            if !sink.send_payload(event_type.as_str(), &payload).await {
                return;
            }
            sent += 1;
            if plan.close_after_events.is_some_and(|limit| sent >= limit) {
                faults.record(crate::faults::FaultKind::ClosedWatch);
                return;
            }
        }
        tokio::select! {
            changed = changes.changed() => {
                if changed.is_err() {
                    return;
                }
            }
            _ = tokio::time::sleep_until(deadline) => {
                if req.allow_bookmarks {
                    sink.send("BOOKMARK", &bookmark(req.resource, last, false)).await;
                }
                return;
            }
            _ = tokio::time::sleep_until(next_bookmark), if req.allow_bookmarks => {
                next_bookmark = Instant::now() + req.bookmark_interval;
                if !sink.send("BOOKMARK", &bookmark(req.resource, last, false)).await {
                    return;
                }
            }
        }
        if Instant::now() >= deadline {
            if req.allow_bookmarks {
                sink.send("BOOKMARK", &bookmark(req.resource, last, false))
                    .await;
            }
            return;
        }
    }
}
