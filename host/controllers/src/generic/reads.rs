//! The live reads a decision asks for (`decision::read`): only kinds the module
//! declared, only in the primary's namespace, projected with the declared fields;
//! lists as the read scope declares them (see [`super::live`]).

use kube::api::ListParams;
use rekon_contract::controller::{ReadRequest, ReadResult};

use super::live::Listed;
use super::{Cached, Generic};
use crate::budget::cut;
use crate::journal::Entry;
use crate::live_lists::paginated;
use crate::reconcile::ReconcileError;
use crate::validate::Rejected;

impl Generic {
    pub(super) async fn read(
        &self,
        key: &str,
        primary: &Cached,
        requests: &[ReadRequest],
    ) -> Result<Vec<ReadResult>, ReconcileError> {
        let namespace = primary.key.namespace.as_str();
        let mut results = Vec::with_capacity(requests.len());
        for request in requests {
            let kind = request.kind();
            let Some(read) = self.checked.read(kind) else {
                return Err(Rejected::decision(
                    key,
                    format!("read {kind}: not declared in the module's scope"),
                )
                .into());
            };
            let resolved = self.resolved(kind);
            let api = self.api(kind, namespace);
            let resource = resolved.resource.plural.as_str();
            let objects: Vec<kube::api::DynamicObject> = match request {
                ReadRequest::List(list) => {
                    let watch = read.related_by.map(|i| {
                        (
                            &self.watched[i].relation,
                            &self.checked.watch_projections[i],
                        )
                    });
                    let issue = async || {
                        let params = ListParams {
                            label_selector: Some(list.label_selector.clone())
                                .filter(|s| !s.is_empty()),
                            field_selector: Some(list.field_selector.clone())
                                .filter(|s| !s.is_empty()),
                            ..ListParams::default()
                        };
                        // Page by page: only the projections are kept.
                        let result = paginated(
                            &params,
                            |params| {
                                let api = &api;
                                async move { api.list(&params).await }
                            },
                            || Listed::new(watch),
                            |listed, items| listed.add(items, read, watch),
                        )
                        .await;
                        self.ctx.journal.record(Entry::read(
                            self.name, key, "list", resource, namespace, "", &result,
                        ));
                        result
                            .map(Listed::sorted)
                            .map_err(|source| ReconcileError::Read {
                                what: format!("live list of {resource} in {namespace:?}"),
                                source,
                            })
                    };
                    let listed = self
                        .live
                        .list(read, list, namespace, primary.observed, issue)
                        .await?;
                    results.push(ReadResult {
                        request: request.clone(),
                        objects: listed.answer(primary, watch.map(|(relation, _)| relation)),
                    });
                    continue;
                }
                ReadRequest::Get(get) => {
                    if resolved.namespaced && namespace.is_empty() {
                        return Err(Rejected::decision(
                            key,
                            format!(
                                "read {kind} {:?}: a cluster-scoped primary can only list a namespaced kind",
                                cut(&get.name, 256)
                            ),
                        )
                        .into());
                    }
                    let result = api.get_opt(&get.name).await;
                    self.ctx.journal.record(Entry::read(
                        self.name, key, "get", resource, namespace, &get.name, &result,
                    ));
                    result
                        .map_err(|source| ReconcileError::Read {
                            what: format!(
                                "live get of {resource} {namespace}/{}",
                                cut(&get.name, 256)
                            ),
                            source,
                        })?
                        .into_iter()
                        .collect()
                }
            };
            results.push(ReadResult {
                request: request.clone(),
                objects: objects
                    .iter()
                    .map(|o| read.projection.project_object(o).to_string())
                    .collect(),
            });
        }
        Ok(results)
    }
}
