//! The ops HTTP server: `/metrics` (OpenMetrics text), `/healthz`, `/readyz`.

use std::net::SocketAddr;
use std::sync::Arc;

use axum::Router;
use axum::extract::State;
use axum::http::{StatusCode, header};
use axum::response::IntoResponse;
use axum::routing::get;
use tokio::sync::oneshot;
use tokio::task::JoinHandle;

use crate::health::Health;
use crate::metrics::{self, Metrics};

#[derive(Debug, thiserror::Error)]
pub enum ServerError {
    #[error("binding the metrics and health address {addr}: {source}")]
    Bind {
        addr: SocketAddr,
        source: std::io::Error,
    },
}

#[derive(Clone)]
struct OpsState {
    metrics: Arc<Metrics>,
    health: Arc<Health>,
}

/// A running ops server; [`OpsServer::stop`] ends it.
pub struct OpsServer {
    local_addr: SocketAddr,
    stop: oneshot::Sender<()>,
    task: JoinHandle<()>,
}

impl OpsServer {
    /// Binds `addr` (port 0 picks a free port) and serves until stopped.
    pub async fn start(
        addr: SocketAddr,
        metrics: Arc<Metrics>,
        health: Arc<Health>,
    ) -> Result<Self, ServerError> {
        let listener = tokio::net::TcpListener::bind(addr)
            .await
            .map_err(|source| ServerError::Bind { addr, source })?;
        let local_addr = listener
            .local_addr()
            .map_err(|source| ServerError::Bind { addr, source })?;
        let (stop, stopped) = oneshot::channel::<()>();
        let app = router(OpsState { metrics, health });
        let task = tokio::spawn(async move {
            let serve = axum::serve(listener, app).with_graceful_shutdown(async {
                let _ = stopped.await;
            });
            if let Err(err) = serve.await {
                tracing::error!(error = %err, "metrics and health server failed");
            }
        });
        Ok(Self {
            local_addr,
            stop,
            task,
        })
    }

    pub fn local_addr(&self) -> SocketAddr {
        self.local_addr
    }

    pub async fn stop(self) {
        let _ = self.stop.send(());
        let _ = self.task.await;
    }
}

fn router(state: OpsState) -> Router {
    Router::new()
        .route("/metrics", get(scrape))
        .route("/healthz", get(healthz))
        .route("/livez", get(healthz))
        .route("/readyz", get(readyz))
        .with_state(state)
}

async fn scrape(State(state): State<OpsState>) -> impl IntoResponse {
    (
        [(header::CONTENT_TYPE, metrics::CONTENT_TYPE)],
        state.metrics.encode(),
    )
}

/// Alive while the runtime serves requests.
async fn healthz() -> &'static str {
    "ok"
}

async fn readyz(State(state): State<OpsState>) -> impl IntoResponse {
    let readiness = state.health.readiness();
    let status = if readiness.is_ready() {
        StatusCode::OK
    } else {
        StatusCode::SERVICE_UNAVAILABLE
    };
    (status, readiness.to_string())
}
