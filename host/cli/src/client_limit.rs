//! Client-side request rate limit (`--kube-api-qps`, `--kube-api-burst`), as
//! client-go's token bucket in front of every request of a controller's client.
//!
//! The limit sits in the kube client's tower stack behind kube's request buffer:
//! requests wait their turn in `poll_ready`, in order, and nothing is sent
//! before its token exists.

use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll};

use kube::Client;
use kube::client::ClientBuilder;
use rekon_machinery::rate_limit::{TokenBucket, TokenBucketConfig};
use tokio::time::{Instant, Sleep};
use tower::{Layer, Service};

#[derive(Debug, thiserror::Error)]
pub enum ClientLimitError {
    #[error("--kube-api-qps must be a positive number of requests per second, got {0}")]
    Qps(f64),
    #[error("--kube-api-burst must be at least 1")]
    Burst,
    #[error("building the kube client: {0}")]
    Client(#[from] kube::Error),
}

#[derive(clap::Args, Debug, Clone)]
pub struct ApiLimitArgs {
    /// Requests per second this client may send to the API server, as
    /// kube-controller-manager's flag [default: no client-side limit].
    #[arg(long)]
    kube_api_qps: Option<f64>,
    /// Requests the client may send at once above --kube-api-qps.
    #[arg(long, default_value_t = 30)]
    kube_api_burst: u32,
}

impl ApiLimitArgs {
    /// The limit these flags ask for; `None` without `--kube-api-qps`.
    pub fn limit(&self) -> Result<Option<TokenBucketConfig>, ClientLimitError> {
        let Some(qps) = self.kube_api_qps else {
            return Ok(None);
        };
        if !(qps.is_finite() && qps > 0.0) {
            return Err(ClientLimitError::Qps(qps));
        }
        if self.kube_api_burst == 0 {
            return Err(ClientLimitError::Burst);
        }
        Ok(Some(TokenBucketConfig {
            qps,
            burst: self.kube_api_burst,
        }))
    }

    /// A client for `config` with this limit.
    pub fn client(&self, config: kube::Config) -> Result<Client, ClientLimitError> {
        let builder = ClientBuilder::try_from(config)?;
        Ok(match self.limit()? {
            Some(limit) => builder.with_layer(&RateLimitLayer(limit)).build(),
            None => builder.build(),
        })
    }
}

/// Wraps a service in a token bucket.
pub struct RateLimitLayer(pub TokenBucketConfig);

impl<S> Layer<S> for RateLimitLayer {
    type Service = RateLimited<S>;

    fn layer(&self, inner: S) -> RateLimited<S> {
        RateLimited {
            inner,
            bucket: TokenBucket::new(self.0, Instant::now()),
            wait: None,
            permitted: false,
        }
    }
}

pub struct RateLimited<S> {
    inner: S,
    bucket: TokenBucket,
    /// Until the reserved token exists.
    wait: Option<Pin<Box<Sleep>>>,
    /// A token is held for the next `call`.
    permitted: bool,
}

impl<S, R> Service<R> for RateLimited<S>
where
    S: Service<R>,
{
    type Response = S::Response;
    type Error = S::Error;
    type Future = S::Future;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), S::Error>> {
        if !self.permitted {
            let wait = self.bucket.reserve(Instant::now());
            if !wait.is_zero() {
                self.wait = Some(Box::pin(tokio::time::sleep(wait)));
            }
            self.permitted = true;
        }
        if let Some(wait) = self.wait.as_mut() {
            if wait.as_mut().poll(cx).is_pending() {
                return Poll::Pending;
            }
            self.wait = None;
        }
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, request: R) -> S::Future {
        self.permitted = false;
        self.inner.call(request)
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::time::Duration;

    use tower::ServiceExt as _;

    use super::*;

    /// Counts calls; answers at once.
    #[derive(Clone, Default)]
    struct Counter(Arc<AtomicUsize>);

    impl Service<()> for Counter {
        type Response = ();
        type Error = std::convert::Infallible;
        type Future = std::future::Ready<Result<(), Self::Error>>;

        fn poll_ready(&mut self, _: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
            Poll::Ready(Ok(()))
        }

        fn call(&mut self, _: ()) -> Self::Future {
            self.0.fetch_add(1, Ordering::SeqCst);
            std::future::ready(Ok(()))
        }
    }

    #[tokio::test(start_paused = true)]
    async fn burst_passes_then_qps_paces() {
        let counter = Counter::default();
        let mut service = RateLimitLayer(TokenBucketConfig {
            qps: 10.0,
            burst: 3,
        })
        .layer(counter.clone());
        let start = Instant::now();
        for _ in 0..3 {
            service.ready().await.unwrap().call(()).await.unwrap();
        }
        assert_eq!(start.elapsed(), Duration::ZERO, "the burst is free");
        for _ in 0..5 {
            service.ready().await.unwrap().call(()).await.unwrap();
        }
        assert_eq!(counter.0.load(Ordering::SeqCst), 8);
        let took = start.elapsed();
        assert!(
            took >= Duration::from_millis(500) && took < Duration::from_millis(510),
            "5 requests past the burst at 10 qps take 0.5 s, took {took:?}"
        );
    }

    fn args(qps: Option<f64>, burst: u32) -> ApiLimitArgs {
        ApiLimitArgs {
            kube_api_qps: qps,
            kube_api_burst: burst,
        }
    }

    #[test]
    fn flags_are_checked() {
        assert_eq!(args(None, 30).limit().unwrap(), None);
        assert_eq!(
            args(Some(20.0), 30).limit().unwrap(),
            Some(TokenBucketConfig {
                qps: 20.0,
                burst: 30
            })
        );
        assert!(matches!(
            args(Some(0.0), 30).limit(),
            Err(ClientLimitError::Qps(_))
        ));
        assert!(matches!(
            args(Some(f64::NAN), 30).limit(),
            Err(ClientLimitError::Qps(_))
        ));
        assert!(matches!(
            args(Some(5.0), 0).limit(),
            Err(ClientLimitError::Burst)
        ));
    }
}
