//! The decision journal: one JSON line per guest decision and per API write.
//!
//! `rekon simulate --journal` writes it to a file; tests read it in memory. It is
//! what makes a run explainable: which guest (by digest) decided what on which
//! input, and which conditional writes followed with which status code.

use std::io::Write;
use std::sync::Mutex;

use serde::Serialize;
use serde_json::Value;

/// The preconditions a write carried.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Preconditions {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub uid: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub resource_version: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "type", rename_all = "kebab-case")]
pub enum Entry {
    Decision {
        controller: String,
        key: String,
        guest: String,
        digest: String,
        input: Value,
        /// The decision as the guest returned it (model serde form), or the error.
        outcome: Value,
    },
    Write {
        controller: String,
        key: String,
        /// create | update | patch | delete | get | list
        verb: String,
        resource: String,
        #[serde(skip_serializing_if = "Option::is_none")]
        subresource: Option<String>,
        namespace: String,
        name: String,
        preconditions: Preconditions,
        /// HTTP status code of the answer (0 when no answer arrived).
        code: u16,
    },
}

impl Entry {
    pub fn is_write(&self) -> bool {
        matches!(self, Entry::Write { .. })
    }

    /// A live read a decision needed (`get` or `list`; `name` empty for a list),
    /// journaled with its answer's code as the writes are.
    pub fn read<T>(
        controller: &str,
        key: &str,
        verb: &str,
        resource: &str,
        namespace: &str,
        name: &str,
        result: &Result<T, kube::Error>,
    ) -> Self {
        Entry::Write {
            controller: controller.into(),
            key: key.into(),
            verb: verb.into(),
            resource: resource.into(),
            subresource: None,
            namespace: namespace.into(),
            name: name.into(),
            preconditions: Preconditions {
                uid: None,
                resource_version: None,
            },
            code: match result {
                Ok(_) => 200,
                Err(kube::Error::Api(status)) => status.code,
                Err(_) => 0,
            },
        }
    }
}

/// Where journal entries go: memory (finite runs: simulate, tests) and/or a
/// JSONL sink. `rekon run` keeps nothing in memory: a long-running host must
/// not grow with its history.
pub struct Journal {
    /// `None`: entries are not kept in memory.
    entries: Option<Mutex<Vec<Entry>>>,
    sink: Mutex<Option<Box<dyn Write + Send>>>,
}

impl Default for Journal {
    fn default() -> Self {
        Self::new()
    }
}

impl Journal {
    /// Entries kept in memory.
    pub fn new() -> Self {
        Self {
            entries: Some(Mutex::default()),
            sink: Mutex::new(None),
        }
    }

    /// Kept in memory and written as JSON lines to `sink`.
    pub fn with_sink(sink: Box<dyn Write + Send>) -> Self {
        Self {
            sink: Mutex::new(Some(sink)),
            ..Self::new()
        }
    }

    /// Only written as JSON lines to `sink`.
    pub fn to_sink(sink: Box<dyn Write + Send>) -> Self {
        Self {
            entries: None,
            sink: Mutex::new(Some(sink)),
        }
    }

    /// Records nothing.
    pub fn disabled() -> Self {
        Self {
            entries: None,
            sink: Mutex::new(None),
        }
    }

    /// Whether recorded entries go anywhere (memory or a sink).
    pub fn is_recording(&self) -> bool {
        self.entries.is_some() || self.sink.lock().unwrap().is_some()
    }

    pub fn record(&self, entry: Entry) {
        if let Some(sink) = self.sink.lock().unwrap().as_mut() {
            let line = serde_json::to_string(&entry).expect("journal entries serialise");
            if let Err(err) = writeln!(sink, "{line}").and_then(|_| sink.flush()) {
                tracing::warn!(error = %err, "could not write the journal");
            }
        }
        if let Some(entries) = &self.entries {
            entries.lock().unwrap().push(entry);
        }
    }

    /// A copy of every entry so far.
    pub fn entries(&self) -> Vec<Entry> {
        self.entries
            .as_ref()
            .map(|e| e.lock().unwrap().clone())
            .unwrap_or_default()
    }

    /// The write entries, in order.
    pub fn writes(&self) -> Vec<Entry> {
        self.entries().into_iter().filter(Entry::is_write).collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;

    #[derive(Clone, Default)]
    struct Shared(Arc<Mutex<Vec<u8>>>);
    impl Write for Shared {
        fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
            self.0.lock().unwrap().write(buf)
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }

    #[test]
    fn entries_are_json_lines_with_a_type_tag() {
        let out = Shared::default();
        let journal = Journal::with_sink(Box::new(out.clone()));
        journal.record(Entry::Write {
            controller: "pvc-protection".into(),
            key: "ns/data".into(),
            verb: "patch".into(),
            resource: "persistentvolumeclaims".into(),
            subresource: None,
            namespace: "ns".into(),
            name: "data".into(),
            preconditions: Preconditions {
                uid: None,
                resource_version: Some("7".into()),
            },
            code: 200,
        });
        let text = String::from_utf8(out.0.lock().unwrap().clone()).unwrap();
        let line: Value = serde_json::from_str(text.trim()).unwrap();
        assert_eq!(line["type"], "write");
        assert_eq!(line["preconditions"]["resourceVersion"], "7");
        assert!(line["preconditions"].get("uid").is_none());
        assert_eq!(journal.writes().len(), 1);
    }

    #[test]
    fn a_sink_only_journal_keeps_nothing_in_memory() {
        let out = Shared::default();
        let journal = Journal::to_sink(Box::new(out.clone()));
        for _ in 0..3 {
            journal.record(Entry::Decision {
                controller: "c".into(),
                key: "k".into(),
                guest: "g".into(),
                digest: "d".into(),
                input: Value::Null,
                outcome: Value::Null,
            });
        }
        assert!(journal.entries().is_empty());
        assert_eq!(
            String::from_utf8(out.0.lock().unwrap().clone())
                .unwrap()
                .lines()
                .count(),
            3
        );
        Journal::disabled().record(Entry::Decision {
            controller: "c".into(),
            key: "k".into(),
            guest: "g".into(),
            digest: "d".into(),
            input: Value::Null,
            outcome: Value::Null,
        });
    }
}
