//! The HTTP layer: axum routes for discovery and one handler for every resource URL.

mod discovery;
mod handlers;
mod openapi;
mod openapi_v2;
mod params;
pub mod path;
mod protobuf;

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use axum::Router;
use axum::extract::rejection::BytesRejection;
use axum::extract::{DefaultBodyLimit, Query, State};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use bytes::Bytes;
use http::{HeaderMap, Method, StatusCode, Uri};
use tokio_util::sync::CancellationToken;

use crate::errors::ApiError;
use crate::faults::FaultInjector;
use crate::verbs::Store;
use handlers::json_response;

/// Upstream's `MaxRequestBodyBytes`: larger bodies get 413 before they are parsed.
pub const MAX_REQUEST_BODY_BYTES: usize = 3 * 1024 * 1024;

/// State shared by all requests.
pub struct App {
    pub store: Store,
    pub faults: Arc<FaultInjector>,
    pub shutdown: CancellationToken,
    /// `host:port` clients reach the server at (for `/api`).
    pub server_address: String,
    pub bookmark_interval: Duration,
    /// How long a request for a future resourceVersion waits before the 504.
    pub too_large_wait: Duration,
}

pub fn router(app: Arc<App>) -> Router {
    Router::new()
        .route(
            "/version",
            get(|| async { json_response(StatusCode::OK, &discovery::version()) }),
        )
        .route("/healthz", get(|| async { "ok" }))
        .route("/livez", get(|| async { "ok" }))
        .route("/readyz", get(|| async { "ok" }))
        .route(
            "/api",
            get(|State(app): State<Arc<App>>| async move {
                json_response(
                    StatusCode::OK,
                    &discovery::core_versions(&app.server_address),
                )
            }),
        )
        .route(
            "/api/v1",
            get(|State(app): State<Arc<App>>| async move {
                let custom = app.store.custom_resources();
                json_response(
                    StatusCode::OK,
                    &discovery::resource_list("", "v1", &custom).expect("core/v1 is served"),
                )
            }),
        )
        .route(
            "/apis",
            get(|State(app): State<Arc<App>>| async move {
                let custom = app.store.custom_resources();
                json_response(StatusCode::OK, &discovery::group_list(&custom))
            }),
        )
        .route(
            "/openapi/v3",
            get(|State(app): State<Arc<App>>| async move {
                let custom = app.store.custom_resources();
                json_response(StatusCode::OK, &openapi::root(&custom))
            }),
        )
        .route("/openapi/v2", get(openapi_v2))
        .route("/openapi/v3/{*path}", get(openapi_group_version))
        .route("/apis/{group}", get(group))
        .route("/apis/{group}/{version}", get(group_version))
        .fallback(resource)
        .layer(DefaultBodyLimit::max(MAX_REQUEST_BODY_BYTES))
        .layer(axum::middleware::from_fn(refuse_declared_oversize))
        .with_state(app)
}

/// How much of a refused body is read before the 413, so the client gets the
/// answer rather than a broken pipe (Go's net/http drains a bounded amount too).
const DRAIN_BYTES: u64 = 4 * MAX_REQUEST_BODY_BYTES as u64;

/// Answers 413 to a body whose Content-Length is over the limit, after reading
/// and discarding it (bounded); bodies of unknown length meet the limit while read.
async fn refuse_declared_oversize(
    request: axum::extract::Request,
    next: axum::middleware::Next,
) -> Response {
    let declared = request
        .headers()
        .get(http::header::CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.parse::<u64>().ok());
    match declared {
        Some(length) if length > MAX_REQUEST_BODY_BYTES as u64 => {
            use futures::StreamExt;
            let mut body = request.into_body().into_data_stream();
            let mut read = 0u64;
            while read <= DRAIN_BYTES {
                match body.next().await {
                    Some(Ok(chunk)) => read += chunk.len() as u64,
                    _ => break,
                }
            }
            ApiError::request_entity_too_large(MAX_REQUEST_BODY_BYTES).into_response()
        }
        _ => next.run(request).await,
    }
}

async fn group(
    State(app): State<Arc<App>>,
    axum::extract::Path(group): axum::extract::Path<String>,
) -> Response {
    match discovery::group(&group, &app.store.custom_resources()) {
        Some(doc) => json_response(StatusCode::OK, &doc),
        None => ApiError::path_not_found(&format!("/apis/{group}")).into_response(),
    }
}

async fn group_version(
    State(app): State<Arc<App>>,
    axum::extract::Path((group, version)): axum::extract::Path<(String, String)>,
) -> Response {
    match discovery::resource_list(&group, &version, &app.store.custom_resources()) {
        Some(doc) => json_response(StatusCode::OK, &doc),
        None => ApiError::path_not_found(&format!("/apis/{group}/{version}")).into_response(),
    }
}

async fn openapi_group_version(
    State(app): State<Arc<App>>,
    axum::extract::Path(path): axum::extract::Path<String>,
) -> Response {
    match openapi::group_version(&path, &app.store.custom_resources()) {
        Some(doc) => json_response(StatusCode::OK, &doc),
        None => ApiError::path_not_found(&format!("/openapi/v3/{path}")).into_response(),
    }
}

/// `/openapi/v2`, in protobuf when the client asks for it (client-go does), else JSON.
async fn openapi_v2(headers: HeaderMap) -> Response {
    let accept = headers
        .get(http::header::ACCEPT)
        .and_then(|v| v.to_str().ok())
        .unwrap_or("");
    if openapi_v2::wants_protobuf(accept) {
        let mut response = (StatusCode::OK, openapi_v2::protobuf()).into_response();
        // As the real server labels it (client-go's mime parser rejects the `@` of the
        // media type it asked for).
        response.headers_mut().insert(
            http::header::CONTENT_TYPE,
            http::HeaderValue::from_static("application/octet-stream"),
        );
        return response;
    }
    json_response(StatusCode::OK, &openapi_v2::json())
}

/// Everything else: resource URLs, and 404 for what is not served.
async fn resource(
    State(app): State<Arc<App>>,
    method: Method,
    uri: Uri,
    headers: HeaderMap,
    Query(query): Query<HashMap<String, String>>,
    body: Result<Bytes, BytesRejection>,
) -> Response {
    match body {
        Ok(body) => handlers::handle(app, method, &uri, headers, params::Params(query), body).await,
        Err(rejection) if rejection.status() == StatusCode::PAYLOAD_TOO_LARGE => {
            ApiError::request_entity_too_large(MAX_REQUEST_BODY_BYTES).into_response()
        }
        Err(rejection) => ApiError::bad_request(rejection.body_text()).into_response(),
    }
}
