//! Raw HTTP to an API server through a `kube::Client`, so TLS and the bearer
//! token are handled the same way for the embedded and the real server.

use std::collections::VecDeque;
use std::path::Path;
use std::pin::Pin;
use std::time::Duration;

use chrono::{DateTime, Utc};
use hyper::body::Body as _;
use kube::client::Body;
use kube::config::{KubeConfigOptions, Kubeconfig};
use kube::{Client, Config};
use serde_json::Value;

/// How long a plain request may take (a too-new resourceVersion makes the
/// real server wait a few seconds before its 504).
const REQUEST_TIMEOUT: Duration = Duration::from_secs(60);

/// Errors talking to a server.
#[derive(Debug, thiserror::Error)]
pub enum TransportError {
    #[error("cannot read kubeconfig {path}: {source}")]
    ReadKubeconfig {
        path: String,
        source: kube::config::KubeconfigError,
    },
    #[error("invalid kubeconfig: {0}")]
    Kubeconfig(#[from] kube::config::KubeconfigError),
    #[error("cannot build a client: {0}")]
    Client(kube::Error),
    #[error("invalid request {method} {uri}: {source}")]
    BuildRequest {
        method: String,
        uri: String,
        source: http::Error,
    },
    #[error("{method} {uri} failed: {source}")]
    Send {
        method: String,
        uri: String,
        source: kube::Error,
    },
    #[error("{method} {uri}: no response within {0:?}", REQUEST_TIMEOUT)]
    Timeout { method: String, uri: String },
    #[error("reading the body of {uri}: {source}")]
    Body { uri: String, source: kube::Error },
    #[error("watch {uri}: event line is not JSON ({source}): {line}")]
    EventLine {
        uri: String,
        line: String,
        source: serde_json::Error,
    },
}

/// Which server a target is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ServerKind {
    /// rekon's in-memory server (the implementation under test).
    Embedded,
    /// A real kube-apiserver v1.20.2 (the ground truth).
    Real,
}

impl std::fmt::Display for ServerKind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            ServerKind::Embedded => "embedded",
            ServerKind::Real => "real-v1.20",
        })
    }
}

/// A server under test and a client for it.
#[derive(Clone)]
pub struct Target {
    pub kind: ServerKind,
    pub client: Client,
}

impl Target {
    /// A target from a kubeconfig file.
    pub async fn from_kubeconfig_file(
        kind: ServerKind,
        path: &Path,
    ) -> Result<Self, TransportError> {
        let kubeconfig =
            Kubeconfig::read_from(path).map_err(|source| TransportError::ReadKubeconfig {
                path: path.display().to_string(),
                source,
            })?;
        Self::from_kubeconfig(kind, kubeconfig).await
    }

    /// A target from kubeconfig YAML text.
    pub async fn from_kubeconfig_yaml(
        kind: ServerKind,
        yaml: &str,
    ) -> Result<Self, TransportError> {
        Self::from_kubeconfig(kind, Kubeconfig::from_yaml(yaml)?).await
    }

    async fn from_kubeconfig(
        kind: ServerKind,
        kubeconfig: Kubeconfig,
    ) -> Result<Self, TransportError> {
        let mut config =
            Config::from_custom_kubeconfig(kubeconfig, &KubeConfigOptions::default()).await?;
        // kube retries 429/503/504 by default; the suite must see every answer as sent.
        config.default_retry = false;
        let client = Client::try_from(config).map_err(TransportError::Client)?;
        Ok(Self { kind, client })
    }

    /// Sends one request and reads the whole response.
    pub async fn send(
        &self,
        method: &str,
        uri: &str,
        content_type: &str,
        body: Option<Vec<u8>>,
    ) -> Result<Response, TransportError> {
        self.send_accepting(method, uri, content_type, "application/json", body)
            .await
    }

    /// [`Target::send`] with an Accept header of the caller's (e.g. a Table request).
    pub async fn send_accepting(
        &self,
        method: &str,
        uri: &str,
        content_type: &str,
        accept: &str,
        body: Option<Vec<u8>>,
    ) -> Result<Response, TransportError> {
        let mut request = self.build(method, uri, content_type, body)?;
        let accept =
            http::HeaderValue::from_str(accept).map_err(|e| TransportError::BuildRequest {
                method: method.to_owned(),
                uri: uri.to_owned(),
                source: e.into(),
            })?;
        request.headers_mut().insert(http::header::ACCEPT, accept);
        let exchange = async {
            let response =
                self.client
                    .send(request)
                    .await
                    .map_err(|source| TransportError::Send {
                        method: method.to_owned(),
                        uri: uri.to_owned(),
                        source,
                    })?;
            let code = response.status().as_u16();
            let bytes = response
                .into_body()
                .collect_bytes()
                .await
                .map_err(|source| TransportError::Body {
                    uri: uri.to_owned(),
                    source,
                })?;
            Ok(Response {
                code,
                body: parse_body(&bytes),
                received_at: Utc::now(),
            })
        };
        tokio::time::timeout(REQUEST_TIMEOUT, exchange)
            .await
            .map_err(|_| TransportError::Timeout {
                method: method.to_owned(),
                uri: uri.to_owned(),
            })?
    }

    /// Opens a watch and collects its events until `stop_after` non-bookmark
    /// events arrived, the server closed the stream, or `read_for` elapsed.
    pub async fn watch(
        &self,
        uri: &str,
        stop_after: Option<usize>,
        read_for: Duration,
    ) -> Result<WatchOutcome, TransportError> {
        self.open_watch(uri)
            .await?
            .collect(stop_after, read_for)
            .await
    }

    /// Opens a watch; its events are read later with [`OpenWatch::collect`]
    /// (they queue up meanwhile), so writes can happen while it is open.
    pub async fn open_watch(&self, uri: &str) -> Result<OpenWatch, TransportError> {
        let request = self.build("GET", uri, "application/json", None)?;
        let send = self.client.send(request);
        let response = tokio::time::timeout(REQUEST_TIMEOUT, send)
            .await
            .map_err(|_| TransportError::Timeout {
                method: "GET".into(),
                uri: uri.to_owned(),
            })?
            .map_err(|source| TransportError::Send {
                method: "GET".into(),
                uri: uri.to_owned(),
                source,
            })?;
        let code = response.status().as_u16();
        let body = response.into_body();
        if code == 200 {
            return Ok(OpenWatch {
                uri: uri.to_owned(),
                code,
                status: Value::Null,
                body: Some(body),
                lines: LineBuffer::default(),
                pending: VecDeque::new(),
            });
        }
        let bytes = body
            .collect_bytes()
            .await
            .map_err(|source| TransportError::Body {
                uri: uri.to_owned(),
                source,
            })?;
        Ok(OpenWatch {
            uri: uri.to_owned(),
            code,
            status: parse_body(&bytes),
            body: None,
            lines: LineBuffer::default(),
            pending: VecDeque::new(),
        })
    }

    fn build(
        &self,
        method: &str,
        uri: &str,
        content_type: &str,
        body: Option<Vec<u8>>,
    ) -> Result<http::Request<Body>, TransportError> {
        let mut builder = http::Request::builder()
            .method(method)
            .uri(uri)
            .header(http::header::ACCEPT, "application/json");
        if body.is_some() {
            builder = builder.header(http::header::CONTENT_TYPE, content_type);
        }
        builder
            .body(Body::from(body.unwrap_or_default()))
            .map_err(|source| TransportError::BuildRequest {
                method: method.to_owned(),
                uri: uri.to_owned(),
                source,
            })
    }
}

/// A complete response.
#[derive(Debug, Clone)]
pub struct Response {
    pub code: u16,
    /// The JSON body, or the raw text as a JSON string if it is not JSON.
    pub body: Value,
    pub received_at: DateTime<Utc>,
}

/// An open watch stream (or the refusal of one).
pub struct OpenWatch {
    uri: String,
    pub code: u16,
    /// The Status body when the watch was refused (code != 200).
    pub status: Value,
    /// The stream; `None` once the server closed it (or refused the watch).
    body: Option<Body>,
    lines: LineBuffer,
    /// Events read from the stream but not handed out yet.
    pending: VecDeque<Value>,
}

impl OpenWatch {
    /// Reads events until `stop_after` non-bookmark events arrived (counting
    /// from this call), the server closed the stream, or `read_for` elapsed.
    pub async fn collect(
        &mut self,
        stop_after: Option<usize>,
        read_for: Duration,
    ) -> Result<WatchOutcome, TransportError> {
        let mut events = Vec::new();
        let deadline = tokio::time::Instant::now() + read_for;
        let enough = |events: &Vec<Value>| {
            stop_after.is_some_and(|n| events.iter().filter(|e| !is_bookmark(e)).count() >= n)
        };
        let closed_by_server = loop {
            while !enough(&events)
                && let Some(event) = self.pending.pop_front()
            {
                events.push(event);
            }
            if enough(&events) {
                break false;
            }
            let Some(body) = self.body.as_mut() else {
                break true;
            };
            let frame = std::future::poll_fn(|cx| Pin::new(&mut *body).poll_frame(cx));
            match tokio::time::timeout_at(deadline, frame).await {
                Err(_) => break false,
                // Hand out what is still pending before reporting the close.
                Ok(None) => self.body = None,
                Ok(Some(Err(source))) => {
                    return Err(TransportError::Body {
                        uri: self.uri.clone(),
                        source,
                    });
                }
                Ok(Some(Ok(frame))) => {
                    if let Ok(data) = frame.into_data() {
                        for line in self.lines.push(&data) {
                            let event = serde_json::from_str(&line).map_err(|source| {
                                TransportError::EventLine {
                                    uri: self.uri.clone(),
                                    line: line.clone(),
                                    source,
                                }
                            })?;
                            self.pending.push_back(event);
                        }
                    }
                }
            }
        };
        Ok(WatchOutcome {
            code: self.code,
            status: self.status.clone(),
            events,
            closed_by_server,
        })
    }
}

/// What a watch delivered.
#[derive(Debug, Clone)]
pub struct WatchOutcome {
    pub code: u16,
    /// The Status body when the watch was refused (code != 200).
    pub status: Value,
    /// Every event (`{type, object}`) in arrival order, bookmarks included.
    pub events: Vec<Value>,
    pub closed_by_server: bool,
}

/// Whether a watch event is a BOOKMARK.
pub fn is_bookmark(event: &Value) -> bool {
    event["type"] == "BOOKMARK"
}

fn parse_body(bytes: &[u8]) -> Value {
    serde_json::from_slice(bytes)
        .unwrap_or_else(|_| Value::String(String::from_utf8_lossy(bytes).into_owned()))
}

/// Splits a byte stream into lines (watch events are newline-delimited JSON).
#[derive(Default)]
struct LineBuffer {
    pending: Vec<u8>,
}

impl LineBuffer {
    fn push(&mut self, data: &[u8]) -> Vec<String> {
        self.pending.extend_from_slice(data);
        let mut lines = Vec::new();
        while let Some(pos) = self.pending.iter().position(|b| *b == b'\n') {
            let line: Vec<u8> = self.pending.drain(..=pos).collect();
            let text = String::from_utf8_lossy(&line).trim().to_owned();
            if !text.is_empty() {
                lines.push(text);
            }
        }
        lines
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lines_split_across_chunks_are_joined() {
        let mut buf = LineBuffer::default();
        assert!(buf.push(b"{\"type\":").is_empty());
        assert_eq!(
            buf.push(b"\"ADDED\"}\n{\"a\""),
            vec!["{\"type\":\"ADDED\"}"]
        );
        assert_eq!(buf.push(b":1}\n\n"), vec!["{\"a\":1}"]);
    }
}
