//! The write fence: once this replica's leadership is revoked, no mutating
//! request leaves the process, and one in flight is cut off (its connection
//! dropped) instead of being answered later.

use std::task::{Context, Poll};

use futures::future::BoxFuture;
use http::{Method, Request, Response};
use kube::Client;
use kube::client::Body;
use tokio_util::sync::CancellationToken;
use tower::Service;

/// Revoked once, for good: a new term gets a new fence.
#[derive(Clone, Default)]
pub struct Fence(CancellationToken);

/// A mutating request refused because leadership is gone.
#[derive(Debug, thiserror::Error)]
#[error("write refused: this replica no longer leads")]
pub struct Revoked;

impl Fence {
    pub fn revoke(&self) {
        self.0.cancel();
    }

    pub fn is_revoked(&self) -> bool {
        self.0.is_cancelled()
    }

    /// Resolves once revoked.
    pub async fn revoked(&self) {
        self.0.cancelled().await
    }

    /// `client` whose mutating requests are checked against this fence right
    /// before they are sent and raced against it while in flight.
    pub fn client(&self, client: Client) -> Client {
        let namespace = client.default_namespace().to_string();
        Client::new(
            Fenced {
                client,
                fence: self.clone(),
            },
            namespace,
        )
    }
}

struct Fenced {
    client: Client,
    fence: Fence,
}

impl Service<Request<Body>> for Fenced {
    type Response = Response<Body>;
    type Error = tower::BoxError;
    type Future = BoxFuture<'static, Result<Response<Body>, tower::BoxError>>;

    fn poll_ready(&mut self, _: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
        Poll::Ready(Ok(()))
    }

    fn call(&mut self, request: Request<Body>) -> Self::Future {
        let (client, fence) = (self.client.clone(), self.fence.clone());
        let reads = matches!(*request.method(), Method::GET | Method::HEAD);
        Box::pin(async move {
            if reads {
                return Ok(client.send(request).await?);
            }
            if fence.is_revoked() {
                return Err(Revoked.into());
            }
            tokio::select! {
                biased;
                _ = fence.revoked() => Err(Revoked.into()),
                sent = client.send(request) => Ok(sent?),
            }
        })
    }
}

/// Whether `err` is the fence's refusal.
pub fn is_revoked(err: &kube::Error) -> bool {
    matches!(err, kube::Error::Service(inner) if inner.downcast_ref::<Revoked>().is_some())
}

#[cfg(test)]
mod tests {
    use super::*;
    use k8s_openapi::api::core::v1::ConfigMap;
    use kube::Api;
    use kube::api::{DeleteParams, ListParams};

    #[tokio::test]
    async fn a_revoked_fence_refuses_writes_but_not_reads() {
        // Nothing listens here: a request that is sent fails with a connect error.
        let client =
            Client::try_from(kube::Config::new("http://127.0.0.1:9".parse().unwrap())).unwrap();
        let fence = Fence::default();
        let api: Api<ConfigMap> = Api::namespaced(fence.client(client), "ns");
        let before = api.delete("x", &DeleteParams::default()).await.unwrap_err();
        assert!(!is_revoked(&before), "sent before the revoke: {before}");
        fence.revoke();
        let after = api.delete("x", &DeleteParams::default()).await.unwrap_err();
        assert!(is_revoked(&after), "{after}");
        let read = api.list(&ListParams::default()).await.unwrap_err();
        assert!(!is_revoked(&read), "reads are not fenced: {read}");
    }
}
