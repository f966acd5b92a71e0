//! Shared helpers of the integration tests: a server on a free loopback port, a kube client
//! for it, and raw requests that return the exact status code and body.

#![allow(dead_code)]

use std::time::Duration;

use futures::{AsyncBufReadExt, StreamExt};
use http::{Method, Request};
use kube::Client;
use rekon_apiserver::{ApiServer, ServerConfig};
use serde_json::{Value, json};

pub struct TestServer {
    pub server: ApiServer,
    /// kube client with kube's default retry of 429/503/504.
    pub client: Client,
    /// kube client without retries, for asserting exact error responses.
    pub raw: Client,
}

pub async fn start(config: ServerConfig) -> TestServer {
    let server = ApiServer::start(config, "127.0.0.1:0".parse().unwrap())
        .await
        .expect("server starts");
    let client = client_for(&server, true);
    let raw = client_for(&server, false);
    TestServer {
        server,
        client,
        raw,
    }
}

pub async fn start_default() -> TestServer {
    start(ServerConfig::new().seed(1)).await
}

pub fn client_for(server: &ApiServer, retry: bool) -> Client {
    let mut config = kube::Config::new(server.url().parse().unwrap());
    config.default_retry = retry;
    Client::try_from(config).expect("client builds")
}

/// A response: status code and JSON body (Null when the body is empty or not JSON).
#[derive(Debug)]
pub struct Reply {
    pub code: u16,
    pub body: Value,
    pub retry_after: Option<String>,
}

impl Reply {
    pub fn rv(&self) -> u64 {
        self.body["metadata"]["resourceVersion"]
            .as_str()
            .expect("reply has a resourceVersion")
            .parse()
            .unwrap()
    }
}

impl TestServer {
    pub async fn request(
        &self,
        method: Method,
        path: &str,
        content_type: &str,
        body: Option<Value>,
    ) -> Reply {
        let bytes = match body {
            Some(v) if content_type == "application/apply-patch+yaml" => {
                serde_json::to_vec(&v).unwrap()
            }
            Some(v) => serde_json::to_vec(&v).unwrap(),
            None => Vec::new(),
        };
        let request = Request::builder()
            .method(method)
            .uri(path)
            .header("content-type", content_type)
            .body(kube::client::Body::from(bytes))
            .unwrap();
        let response = self.raw.send(request).await.expect("request is answered");
        let code = response.status().as_u16();
        let retry_after = response
            .headers()
            .get("retry-after")
            .map(|v| v.to_str().unwrap().to_string());
        let bytes = response
            .into_body()
            .collect_bytes()
            .await
            .expect("body is read");
        let body = serde_json::from_slice(&bytes).unwrap_or(Value::Null);
        Reply {
            code,
            body,
            retry_after,
        }
    }

    /// A request with a body sent as given (YAML, protobuf, malformed JSON).
    pub async fn request_bytes(
        &self,
        method: Method,
        path: &str,
        content_type: &str,
        body: Vec<u8>,
    ) -> Reply {
        let request = Request::builder()
            .method(method)
            .uri(path)
            .header("content-type", content_type)
            .body(kube::client::Body::from(body))
            .unwrap();
        let response = self.raw.send(request).await.expect("request is answered");
        let code = response.status().as_u16();
        let bytes = response
            .into_body()
            .collect_bytes()
            .await
            .expect("body is read");
        Reply {
            code,
            body: serde_json::from_slice(&bytes).unwrap_or(Value::Null),
            retry_after: None,
        }
    }

    pub async fn get(&self, path: &str) -> Reply {
        self.request(Method::GET, path, "application/json", None)
            .await
    }

    pub async fn post(&self, path: &str, body: Value) -> Reply {
        self.request(Method::POST, path, "application/json", Some(body))
            .await
    }

    pub async fn put(&self, path: &str, body: Value) -> Reply {
        self.request(Method::PUT, path, "application/json", Some(body))
            .await
    }

    pub async fn patch(&self, path: &str, content_type: &str, body: Value) -> Reply {
        self.request(Method::PATCH, path, content_type, Some(body))
            .await
    }

    pub async fn delete(&self, path: &str, options: Option<Value>) -> Reply {
        self.request(Method::DELETE, path, "application/json", options)
            .await
    }

    /// Opens a watch and collects events until `count` arrived, `limit` passed or the server
    /// closed the stream. Panics on a non-2xx answer.
    pub async fn watch(&self, path_and_query: &str, count: usize, limit: Duration) -> Vec<Value> {
        let request = Request::builder()
            .method(Method::GET)
            .uri(path_and_query)
            .body(Vec::new())
            .unwrap();
        let stream = self
            .raw
            .request_stream(request)
            .await
            .expect("watch is answered with 200");
        let mut lines = Box::pin(stream.lines());
        let mut events = Vec::new();
        let deadline = tokio::time::Instant::now() + limit;
        while events.len() < count {
            match tokio::time::timeout_at(deadline, lines.next()).await {
                Ok(Some(Ok(line))) => {
                    events.push(serde_json::from_str(&line).expect("watch lines are JSON"))
                }
                _ => break,
            }
        }
        events
    }
}

pub const CM: &str = "/api/v1/namespaces/default/configmaps";
pub const PODS: &str = "/api/v1/namespaces/default/pods";
pub const PVCS: &str = "/api/v1/namespaces/default/persistentvolumeclaims";

pub fn configmap(name: &str) -> Value {
    json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name}, "data": {"k": "v"}})
}

pub fn pod(name: &str, node: Option<&str>) -> Value {
    let mut pod = json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name},
        "spec": {"containers": [{"name": "c", "image": "busybox:1"}]}});
    if let Some(node) = node {
        pod["spec"]["nodeName"] = json!(node);
    }
    pod
}

pub fn pvc(name: &str) -> Value {
    json!({"apiVersion": "v1", "kind": "PersistentVolumeClaim", "metadata": {"name": name},
        "spec": {"accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "1Gi"}}}})
}

pub fn event_types(events: &[Value]) -> Vec<&str> {
    events.iter().map(|e| e["type"].as_str().unwrap()).collect()
}

/// Polls `check` until it returns true or `limit` passes.
pub async fn eventually(limit: Duration, mut check: impl AsyncFnMut() -> bool) -> bool {
    let deadline = tokio::time::Instant::now() + limit;
    loop {
        if check().await {
            return true;
        }
        if tokio::time::Instant::now() > deadline {
            return false;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}
