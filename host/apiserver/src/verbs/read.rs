//! get and list (row 15): list resourceVersion, `limit`/`continue` with consistent pages,
//! selectors.

use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

use crate::errors::ApiError;
use crate::resources::ResourceId;
use crate::selectors::Selectors;
use crate::store::{ObjectKey, Objects};

#[derive(Debug, Clone, Default)]
pub struct ListOptions {
    pub selectors: Selectors,
    pub limit: Option<usize>,
    pub continue_token: Option<String>,
    pub resource_version: Option<String>,
    pub resource_version_match: Option<String>,
}

pub fn get(
    objs: &Objects,
    resource: ResourceId,
    namespace: &str,
    name: &str,
) -> Result<Value, ApiError> {
    objs.get(&ObjectKey::new(resource, namespace, name))
        .ok_or_else(|| ApiError::not_found(resource.info(), name))
}

/// The position a list page stopped at, at the first page's resourceVersion.
#[derive(Debug, Serialize, Deserialize, PartialEq)]
struct ContinueToken {
    rv: u64,
    namespace: String,
    name: String,
}

impl ContinueToken {
    fn encode(&self) -> String {
        let json = serde_json::to_vec(self).expect("tokens serialise");
        json.iter().map(|b| format!("{b:02x}")).collect()
    }

    fn decode(text: &str) -> Result<Self, ApiError> {
        let invalid = || {
            ApiError::bad_request(format!(
                "invalid continue token: continue key is not valid: {text:?}"
            ))
        };
        if !text.len().is_multiple_of(2) || !text.is_ascii() {
            return Err(invalid());
        }
        let bytes: Vec<u8> = (0..text.len())
            .step_by(2)
            .map(|i| u8::from_str_radix(&text[i..i + 2], 16))
            .collect::<Result<_, _>>()
            .map_err(|_| invalid())?;
        serde_json::from_slice(&bytes).map_err(|_| invalid())
    }
}

pub fn parse_resource_version(text: &str) -> Result<u64, ApiError> {
    text.parse()
        .map_err(|_| ApiError::bad_request(format!("invalid resource version: {text:?}")))
}

pub fn list(
    objs: &Objects,
    resource: ResourceId,
    namespace: Option<&str>,
    opts: &ListOptions,
) -> Result<Value, ApiError> {
    let info = resource.info();
    let token = opts
        .continue_token
        .as_deref()
        .filter(|t| !t.is_empty())
        .map(ContinueToken::decode)
        .transpose()?;
    let exact_rv = match (
        &token,
        opts.resource_version_match.as_deref(),
        opts.resource_version.as_deref(),
    ) {
        (Some(token), _, _) => Some(token.rv),
        (None, Some("Exact"), Some(rv)) => Some(parse_resource_version(rv)?),
        _ => None,
    };
    let list_rv = exact_rv.unwrap_or_else(|| objs.current_rv());
    let after = token
        .as_ref()
        .map(|t| (t.namespace.as_str(), t.name.as_str()));
    // Lazy: only what the page reaches is copied (a page of 500 out of 50,000 pods).
    let candidates = objs
        .list_at(resource, namespace, exact_rv, after)
        .map_err(|_| expired_list(token.is_some(), list_rv))?;
    let mut items = Vec::new();
    let mut next = None;
    for (_, obj) in candidates {
        if !opts.selectors.matches(&obj) {
            continue;
        }
        if opts
            .limit
            .is_some_and(|limit| limit > 0 && items.len() == limit)
        {
            next = Some(ContinueToken {
                rv: list_rv,
                namespace: items_last_key(&items).0,
                name: items_last_key(&items).1,
            });
            break;
        }
        items.push(strip_type_meta(obj));
    }
    let mut metadata = json!({"resourceVersion": list_rv.to_string()});
    if let Some(next) = next {
        metadata["continue"] = json!(next.encode());
    }
    Ok(json!({
        "kind": info.list_kind(),
        "apiVersion": info.api_version(),
        "metadata": metadata,
        "items": items,
    }))
}

fn items_last_key(items: &[Value]) -> (String, String) {
    let last = items.last().expect("a page that ends early has items");
    (
        crate::meta::namespace(last).to_string(),
        crate::meta::name(last).to_string(),
    )
}

/// Items of a typed list carry no kind/apiVersion on the real server.
fn strip_type_meta(mut obj: Value) -> Value {
    if let Some(map) = obj.as_object_mut() {
        map.remove("kind");
        map.remove("apiVersion");
    }
    obj
}

fn expired_list(continuing: bool, rv: u64) -> ApiError {
    if continuing {
        ApiError::expired(
            "The provided continue parameter is too old to display a consistent list result. You can start a new list without the continue parameter, or use the continue token in this response to retrieve the remainder of the results. Continuing with the provided token results in an inconsistent list - objects that were created, modified, or deleted between the time the first chunk was returned and now may show up in the list.",
        )
    } else {
        ApiError::expired(format!("too old resource version: {rv}"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn continue_tokens_round_trip_and_reject_garbage() {
        let token = ContinueToken {
            rv: 7,
            namespace: "d".into(),
            name: "x".into(),
        };
        assert_eq!(ContinueToken::decode(&token.encode()).unwrap(), token);
        assert_eq!(ContinueToken::decode("garbage").unwrap_err().code, 400);
        assert_eq!(ContinueToken::decode("zz").unwrap_err().code, 400);
    }
}
