//! Resource requests: one function per verb, each translating HTTP to a call of the store's verbs.

use std::convert::Infallible;
use std::sync::Arc;

use axum::body::Body;
use axum::response::{IntoResponse, Response};
use bytes::Bytes;
use http::{HeaderMap, HeaderValue, Method, StatusCode, header};
use serde_json::{Value, json};

use super::App;
use super::params::{self, Params};
use super::path::{self, ResourcePath};
use crate::crd::{CustomResources, table};
use crate::errors::ApiError;
use crate::faults::{FaultKind, Verb};
use crate::patch::{self, PatchType};
use crate::resources::ResourceInfo;
use crate::selectors::Selectors;
use crate::verbs::{DeleteOutcome, ListOptions, Target, WriteOptions};
use crate::watch::{self, DEFAULT_WATCH_TIMEOUT, WatchRequest};

pub fn json_response(code: StatusCode, value: &Value) -> Response {
    let body = serde_json::to_vec(value).unwrap_or_default();
    let mut response = (code, body).into_response();
    response.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("application/json"),
    );
    response
}

pub async fn handle(
    app: Arc<App>,
    method: Method,
    uri: &http::Uri,
    headers: HeaderMap,
    params: Params,
    body: Bytes,
) -> Response {
    match dispatch(&app, &method, uri, &headers, &params, &body).await {
        Ok(response) => response,
        Err(err) => {
            tracing::debug!(%method, %uri, code = err.code, message = %err.message, "request failed");
            err.into_response()
        }
    }
}

fn verb_of(method: &Method, path: &ResourcePath, params: &Params) -> Result<Verb, ApiError> {
    let collection = path.name.is_none();
    Ok(match (method.as_str(), collection) {
        ("GET", true) if params.flag("watch") => Verb::Watch,
        ("GET", true) => Verb::List,
        ("GET", false) => Verb::Get,
        ("POST", true) => Verb::Create,
        ("PUT", false) => Verb::Update,
        ("PATCH", false) => Verb::Patch,
        ("DELETE", _) => Verb::Delete,
        _ => {
            return Err(ApiError::method_not_allowed(format!(
                "the server does not allow this method on the requested resource ({method})"
            )));
        }
    })
}

async fn dispatch(
    app: &Arc<App>,
    method: &Method,
    uri: &http::Uri,
    headers: &HeaderMap,
    params: &Params,
    body: &Bytes,
) -> Result<Response, ApiError> {
    let custom = app.store.custom_resources();
    let path = path::parse(uri.path(), &custom)?;
    let as_table = TableRequest::of(headers, params, &custom, &path)?;
    if params.non_empty("dryRun").is_some() {
        return Err(ApiError::bad_request(
            "dryRun is not supported by the rekon embedded API server",
        ));
    }
    let info = path.resource.info();
    let verb = verb_of(method, &path, params)?;
    let decision = app
        .faults
        .before_request(verb, info, path.name.as_deref().unwrap_or(""));
    if !decision.latency.is_zero() {
        tokio::time::sleep(decision.latency).await;
    }
    if let Some(err) = decision.error {
        return Err(err);
    }
    let namespace = path.namespace.clone().unwrap_or_default();
    let target = || Target {
        resource: path.resource,
        namespace: namespace.clone(),
        name: path.name.clone().unwrap_or_default(),
        status: path.subresource.as_deref().is_some_and(|s| s != "scale"),
    };
    let write_options = || WriteOptions {
        field_manager: params.non_empty("fieldManager").map(str::to_string),
        default_manager: Some(params::default_manager(headers)),
        force: params.flag("force"),
    };
    if path.subresource.as_deref() == Some("scale") {
        return scale(app, verb, &target(), headers, body, &write_options());
    }
    let response = match verb {
        Verb::Get => {
            let obj = app.store.get(
                path.resource,
                &namespace,
                path.name.as_deref().unwrap_or(""),
            )?;
            Ok(json_response(
                StatusCode::OK,
                &TableRequest::answer(&as_table, obj),
            ))
        }
        Verb::List => list(app, &path, info, params, as_table.as_ref()).await,
        Verb::Watch => watch(app, &path, info, params).await,
        Verb::Create => {
            let obj = params::parse_object_body(headers, body)?;
            let created = app
                .store
                .create(path.resource, &namespace, obj, &write_options())?;
            Ok(json_response(StatusCode::CREATED, &created))
        }
        Verb::Update => {
            let obj = params::parse_object_body(headers, body)?;
            let updated = app.store.update(&target(), obj, &write_options())?;
            Ok(json_response(StatusCode::OK, &updated))
        }
        Verb::Patch => {
            let (patch_type, patch) = patch_of(headers, body)?;
            let outcome = app
                .store
                .patch(&target(), patch_type, &patch, &write_options())?;
            let code = if outcome.created {
                StatusCode::CREATED
            } else {
                StatusCode::OK
            };
            Ok(json_response(code, &outcome.object))
        }
        Verb::Delete if path.name.is_none() => delete_collection(app, &path, info, params, body),
        Verb::Delete => {
            let opts = params::delete_options(params, body)?;
            let outcome = app.store.delete(&target(), &opts)?;
            Ok(match outcome {
                DeleteOutcome::Deleting(obj) => {
                    let code = if opts.orphan_dependents == Some(false) {
                        StatusCode::ACCEPTED
                    } else {
                        StatusCode::OK
                    };
                    json_response(code, &obj)
                }
                DeleteOutcome::Deleted(obj) if info.returns_deleted_object => {
                    json_response(StatusCode::OK, &obj)
                }
                DeleteOutcome::Deleted(obj) => {
                    json_response(StatusCode::OK, &delete_success(info, &obj))
                }
            })
        }
    };
    match response {
        Ok(applied) if decision.lose_response => {
            app.faults.record(FaultKind::LostResponse);
            Ok(lost(applied))
        }
        other => other,
    }
}

/// The patch type the `Content-Type` names, and the parsed body.
fn patch_of(headers: &HeaderMap, body: &Bytes) -> Result<(PatchType, Value), ApiError> {
    let content_type = headers
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .unwrap_or("");
    let patch_type = PatchType::from_content_type(content_type)?;
    Ok((patch_type, patch::parse_body(patch_type, body)?))
}

/// The `/scale` subresource: GET, PUT and PATCH (not server-side apply) of a Scale.
fn scale(
    app: &App,
    verb: Verb,
    target: &Target,
    headers: &HeaderMap,
    body: &Bytes,
    opts: &WriteOptions,
) -> Result<Response, ApiError> {
    let scale = match verb {
        Verb::Get => app.store.get_scale(target)?,
        Verb::Update => {
            let wanted = params::parse_object_body(headers, body)?;
            app.store.write_scale(target, |_| Ok(wanted), opts)?
        }
        Verb::Patch => {
            let (patch_type, patch) = patch_of(headers, body)?;
            if patch_type == PatchType::Apply {
                return Err(ApiError::unsupported_media_type(
                    "application/apply-patch+yaml",
                ));
            }
            app.store.write_scale(
                target,
                |current| patch::apply_patch(patch_type, "Scale", &current, &patch),
                opts,
            )?
        }
        _ => {
            return Err(ApiError::method_not_allowed(
                "the /scale subresource allows get, update and patch",
            ));
        }
    };
    Ok(json_response(StatusCode::OK, &scale))
}

/// The answer to an applied write, cut off: the head goes out, then the body
/// fails and the connection drops, so the client cannot tell what happened.
fn lost(applied: Response) -> Response {
    let (parts, _) = applied.into_parts();
    let failing = futures::stream::once(async {
        Err::<Bytes, std::io::Error>(std::io::Error::other("injected fault: response lost"))
    });
    Response::from_parts(parts, Body::from_stream(failing))
}

/// The `Status` an immediate delete of a kind without `ReturnDeletedObject` answers.
fn delete_success(info: &ResourceInfo, obj: &Value) -> Value {
    let mut details = json!({
        "name": crate::meta::name(obj),
        "kind": info.plural,
        "uid": crate::meta::uid(obj),
    });
    if !info.group.is_empty() {
        details["group"] = json!(info.group);
    }
    json!({"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Success", "details": details})
}

/// A resourceVersion newer than the server's: wait a little for it, then 504 (row 20).
async fn wait_for_requested_rv(
    app: &App,
    requested: Option<&str>,
) -> Result<Option<u64>, ApiError> {
    let Some(text) = requested.filter(|rv| !rv.is_empty() && *rv != "0") else {
        return Ok(None);
    };
    let rv: u64 = text
        .parse()
        .map_err(|_| ApiError::bad_request(format!("invalid resource version: {text:?}")))?;
    if rv > app.store.current_resource_version()
        && !app
            .store
            .wait_for_resource_version(rv, app.too_large_wait)
            .await
    {
        return Err(ApiError::too_large_resource_version(
            rv,
            app.store.current_resource_version(),
        ));
    }
    Ok(Some(rv))
}

fn selectors(info: &ResourceInfo, params: &Params) -> Result<Selectors, ApiError> {
    Selectors::parse(
        params.non_empty("labelSelector"),
        params.non_empty("fieldSelector"),
        info,
    )
}

async fn list(
    app: &App,
    path: &ResourcePath,
    info: &ResourceInfo,
    params: &Params,
    as_table: Option<&TableRequest>,
) -> Result<Response, ApiError> {
    let opts = ListOptions {
        selectors: selectors(info, params)?,
        limit: params.number("limit")?.map(|l| l.max(0) as usize),
        continue_token: params.non_empty("continue").map(str::to_string),
        resource_version: params.non_empty("resourceVersion").map(str::to_string),
        resource_version_match: params.non_empty("resourceVersionMatch").map(str::to_string),
    };
    if opts.continue_token.is_none() {
        wait_for_requested_rv(app, opts.resource_version.as_deref()).await?;
    }
    let list = app
        .store
        .list(path.resource, path.namespace.as_deref(), &opts)?;
    let body = match as_table {
        Some(request) => request.render(&list),
        None => list,
    };
    Ok(json_response(StatusCode::OK, &body))
}

/// A GET or LIST of a custom resource that asks for a `meta.k8s.io` Table, as `kubectl get`
/// does. Built-in kinds answer with their plain objects, which kubectl prints as well.
struct TableRequest {
    version: &'static str,
    columns: Vec<k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceColumnDefinition>,
    include: table::IncludeObject,
}

impl TableRequest {
    fn of(
        headers: &HeaderMap,
        params: &Params,
        custom: &CustomResources,
        path: &ResourcePath,
    ) -> Result<Option<TableRequest>, ApiError> {
        let accept = headers
            .get(header::ACCEPT)
            .and_then(|v| v.to_str().ok())
            .unwrap_or("");
        let (Some(version), Some(served)) =
            (table::requested_version(accept), custom.get(path.resource))
        else {
            return Ok(None);
        };
        let include = table::IncludeObject::parse(params.non_empty("includeObject"))
            .map_err(ApiError::bad_request)?;
        Ok(Some(TableRequest {
            version,
            columns: served.columns.clone(),
            include,
        }))
    }

    fn render(&self, body: &Value) -> Value {
        table::render(
            body,
            &self.columns,
            self.version,
            self.include,
            chrono::Utc::now(),
        )
    }

    fn answer(request: &Option<TableRequest>, body: Value) -> Value {
        match request {
            Some(request) => request.render(&body),
            None => body,
        }
    }
}

async fn watch(
    app: &App,
    path: &ResourcePath,
    info: &ResourceInfo,
    params: &Params,
) -> Result<Response, ApiError> {
    let selectors = selectors(info, params)?;
    let start = wait_for_requested_rv(app, params.get("resourceVersion")).await?;
    if app.faults.compact_before_watch() {
        app.store.compact();
    }
    let req = WatchRequest {
        resource: path.resource,
        namespace: path.namespace.clone(),
        selectors,
        start,
        send_initial_events: params.flag("sendInitialEvents"),
        allow_bookmarks: params.flag("allowWatchBookmarks"),
        timeout: params.timeout()?.unwrap_or(DEFAULT_WATCH_TIMEOUT),
        bookmark_interval: app.bookmark_interval,
    };
    let rx = watch::spawn(
        app.store.clone(),
        req,
        app.faults.clone(),
        app.shutdown.clone(),
    );
    let stream = futures::stream::unfold(rx, |mut rx| async move {
        rx.recv()
            .await
            .map(|chunk| (Ok::<_, Infallible>(chunk), rx))
    });
    let mut response = Response::new(Body::from_stream(stream));
    response.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("application/json"),
    );
    Ok(response)
}

/// DELETE on a collection: every selected object is deleted as by its own DELETE.
fn delete_collection(
    app: &App,
    path: &ResourcePath,
    info: &ResourceInfo,
    params: &Params,
    body: &[u8],
) -> Result<Response, ApiError> {
    let opts = params::delete_options(params, body)?;
    let list_opts = ListOptions {
        selectors: selectors(info, params)?,
        ..Default::default()
    };
    let list = app
        .store
        .list(path.resource, path.namespace.as_deref(), &list_opts)?;
    let mut deleted = Vec::new();
    for item in list["items"].as_array().into_iter().flatten() {
        let target = Target::new(
            path.resource,
            crate::meta::namespace(item),
            crate::meta::name(item),
        );
        match app.store.delete(&target, &opts) {
            Ok(DeleteOutcome::Deleting(obj) | DeleteOutcome::Deleted(obj)) => deleted.push(obj),
            Err(err) if err.is_not_found() => {}
            Err(err) => return Err(err),
        }
    }
    let result = json!({
        "kind": info.list_kind(),
        "apiVersion": info.api_version(),
        "metadata": {"resourceVersion": app.store.current_resource_version().to_string()},
        "items": deleted,
    });
    Ok(json_response(StatusCode::OK, &result))
}
