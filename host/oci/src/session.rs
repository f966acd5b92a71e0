//! A session with one registry: reads with every body capped before it is
//! buffered and every request timed: manifests, signature payloads, wasm layers, bearer
//! tokens and error bodies. oci-client reads whole bodies (`bytes()`, `text()`)
//! and takes no limit, so the pull path speaks the distribution API through
//! reqwest directly, with the token handshake distribution documents (a 401
//! with a `WWW-Authenticate` challenge, parsed by `http-auth`, as oci-client
//! does). Text a registry sends (error bodies) is cut to
//! [`MAX_REGISTRY_TEXT`] bytes before it reaches an error.

use std::sync::Mutex;
use std::time::Duration;

use base64::Engine as _;
use reqwest::StatusCode;
use reqwest::header::{ACCEPT, AUTHORIZATION, WWW_AUTHENTICATE};

use crate::auth::RegistryAuth;
use crate::error::{OciError, error_chain};
use crate::reference::ModuleRef;

/// The largest manifest (and signature manifest) read; registries refuse larger ones too.
pub const MAX_MANIFEST_BYTES: u64 = 4 * 1024 * 1024;
/// The largest signature payload read (payloads are a few hundred bytes).
pub const MAX_SIGNATURE_PAYLOAD_BYTES: u64 = 64 * 1024;
/// The largest bearer token answer read (tokens are a few KiB).
const MAX_TOKEN_BYTES: u64 = 256 * 1024;
/// How much of an error body is read.
const MAX_ERROR_BYTES: u64 = 4 * 1024;
/// How much registry text an error message carries.
pub const MAX_REGISTRY_TEXT: usize = 256;
/// How much of a connection or TLS error (rekon's own text, with a URL) a message carries.
const MAX_TRANSFER_TEXT: usize = 1024;

/// One repository of one registry, over one scheme, with one set of credentials.
pub(crate) struct Session {
    http: reqwest::Client,
    base: String,
    plain_http: bool,
    repository: String,
    auth: RegistryAuth,
    /// The `Authorization` value once a challenge was answered.
    authorization: Mutex<Option<String>>,
    timeout: Duration,
}

impl Session {
    pub(crate) fn new(
        http: reqwest::Client,
        plain_http: bool,
        module: &ModuleRef,
        auth: &RegistryAuth,
        timeout: Duration,
    ) -> Self {
        let scheme = if plain_http { "http" } else { "https" };
        let preset = match auth {
            RegistryAuth::Bearer { token } => Some(format!("Bearer {token}")),
            _ => None,
        };
        Self {
            http,
            base: format!("{scheme}://{}", module.oci().resolve_registry()),
            plain_http,
            repository: module.repository().to_string(),
            auth: auth.clone(),
            authorization: Mutex::new(preset),
            timeout,
        }
    }

    /// The manifest `reference` (a tag or a digest) names, at most [`MAX_MANIFEST_BYTES`].
    pub(crate) async fn manifest(
        &self,
        module: &ModuleRef,
        reference: &str,
        what: &str,
    ) -> Result<Vec<u8>, OciError> {
        let url = format!("{}/v2/{}/manifests/{reference}", self.base, self.repository);
        let accept = crate::layout::MANIFEST_MEDIA_TYPES.join(", ");
        self.get(module, &url, &accept, what, MAX_MANIFEST_BYTES)
            .await
    }

    /// The blob `digest`, at most `limit` bytes (the caller checks its digest).
    pub(crate) async fn blob(
        &self,
        module: &ModuleRef,
        digest: &str,
        what: &str,
        limit: u64,
    ) -> Result<Vec<u8>, OciError> {
        let url = format!("{}/v2/{}/blobs/{digest}", self.base, self.repository);
        self.get(module, &url, "*/*", what, limit).await
    }

    async fn get(
        &self,
        module: &ModuleRef,
        url: &str,
        accept: &str,
        what: &str,
        limit: u64,
    ) -> Result<Vec<u8>, OciError> {
        let mut response = self.send(module, url, accept, what).await?;
        if response.status() == StatusCode::UNAUTHORIZED
            && self.answer_challenge(module, &response, what).await?
        {
            response = self.send(module, url, accept, what).await?;
        }
        let status = response.status();
        if !status.is_success() {
            return Err(self.refusal(module, what, response).await);
        }
        self.read_capped(module, response, what, limit).await
    }

    async fn send(
        &self,
        module: &ModuleRef,
        url: &str,
        accept: &str,
        what: &str,
    ) -> Result<reqwest::Response, OciError> {
        let mut request = self
            .http
            .get(url)
            .header(ACCEPT, accept)
            .timeout(self.timeout);
        if let Some(value) = self.authorization.lock().unwrap().clone() {
            request = request.header(AUTHORIZATION, value);
        }
        request
            .send()
            .await
            .map_err(|err| transfer_error(module, what, &err, self.timeout))
    }

    /// Answers a 401's challenge (bearer token or basic credentials); `false`
    /// when it was answered before (the credentials are refused).
    async fn answer_challenge(
        &self,
        module: &ModuleRef,
        response: &reqwest::Response,
        what: &str,
    ) -> Result<bool, OciError> {
        if self.authorization.lock().unwrap().is_some() {
            return Ok(false);
        }
        let credentials = |cause: String| OciError::Credentials {
            reference: module.to_string(),
            cause: format!("{what}: {cause}"),
        };
        let header = response
            .headers()
            .get(WWW_AUTHENTICATE)
            .and_then(|v| v.to_str().ok())
            .ok_or_else(|| {
                credentials("refused (401) without a WWW-Authenticate challenge".into())
            })?;
        let value = match Challenge::parse(header) {
            Some(Challenge::Bearer { realm, service }) => {
                format!(
                    "Bearer {}",
                    self.token(module, &realm, service.as_deref(), what).await?
                )
            }
            Some(Challenge::Basic) => match &self.auth {
                RegistryAuth::Basic { username, password } => format!(
                    "Basic {}",
                    base64::engine::general_purpose::STANDARD
                        .encode(format!("{username}:{password}"))
                ),
                _ => {
                    return Err(credentials(
                        "the registry asks for basic credentials and none were given".into(),
                    ));
                }
            },
            None => {
                return Err(credentials(format!(
                    "unsupported challenge `{}`",
                    cut(header)
                )));
            }
        };
        *self.authorization.lock().unwrap() = Some(value);
        Ok(true)
    }

    /// A pull token from `realm`, sending the basic credentials if there are any.
    async fn token(
        &self,
        module: &ModuleRef,
        realm: &str,
        service: Option<&str>,
        what: &str,
    ) -> Result<String, OciError> {
        let credentials = |cause: String| OciError::Credentials {
            reference: module.to_string(),
            cause: format!("{what}: token from {}: {cause}", cut(realm)),
        };
        let scope = format!("repository:{}:pull", self.repository);
        let mut params = vec![("scope", scope.as_str())];
        params.extend(service.map(|s| ("service", s)));
        let url = reqwest::Url::parse_with_params(realm, &params)
            .map_err(|err| credentials(format!("the realm is not a URL: {err}")))?;
        if url.scheme() != "https" && !self.plain_http {
            return Err(credentials(
                "the realm is not HTTPS, and the registry is reached over HTTPS".into(),
            ));
        }
        let mut request = self.http.get(url).timeout(self.timeout);
        if let RegistryAuth::Basic { username, password } = &self.auth {
            request = request.basic_auth(username, Some(password));
        }
        let response = request
            .send()
            .await
            .map_err(|err| transfer_error(module, "token", &err, self.timeout))?;
        if !response.status().is_success() {
            return Err(self.refusal(module, "token", response).await);
        }
        let body = self
            .read_capped(module, response, "token", MAX_TOKEN_BYTES)
            .await?;
        let token: oci_client::token_cache::RegistryToken = serde_json::from_slice(&body)
            .map_err(|err| credentials(format!("the answer holds no token: {err}")))?;
        Ok(token.token().to_string())
    }

    /// The error for a non-success answer, with at most [`MAX_ERROR_BYTES`] of its body read.
    async fn refusal(
        &self,
        module: &ModuleRef,
        what: &str,
        mut response: reqwest::Response,
    ) -> OciError {
        let status = response.status();
        let body = error_text(&mut response).await;
        let detail = format!("{what}: HTTP {status}: {}", cut(body.trim()));
        let reference = module.to_string();
        match status {
            StatusCode::NOT_FOUND => OciError::NotFound {
                reference,
                what: what.into(),
            },
            StatusCode::UNAUTHORIZED | StatusCode::FORBIDDEN => OciError::Credentials {
                reference,
                cause: detail,
            },
            _ => OciError::Registry {
                reference,
                cause: detail,
            },
        }
    }

    /// The body of `response`, refused as soon as it passes `limit` (by its
    /// `Content-Length` before reading, else while reading).
    async fn read_capped(
        &self,
        module: &ModuleRef,
        mut response: reqwest::Response,
        what: &str,
        limit: u64,
    ) -> Result<Vec<u8>, OciError> {
        let too_large = |size: u64| OciError::TooLarge {
            reference: module.to_string(),
            what: what.into(),
            size,
            limit,
        };
        if let Some(length) = response.content_length()
            && length > limit
        {
            return Err(too_large(length));
        }
        let mut bytes = Vec::new();
        loop {
            let chunk = response
                .chunk()
                .await
                .map_err(|err| transfer_error(module, what, &err, self.timeout))?;
            let Some(chunk) = chunk else {
                return Ok(bytes);
            };
            let size = (bytes.len() + chunk.len()) as u64;
            if size > limit {
                return Err(too_large(size));
            }
            bytes.extend_from_slice(&chunk);
        }
    }
}

/// The first [`MAX_ERROR_BYTES`] of an error body, as text; the rest is not read.
async fn error_text(response: &mut reqwest::Response) -> String {
    let mut bytes = Vec::new();
    while (bytes.len() as u64) < MAX_ERROR_BYTES {
        match response.chunk().await {
            Ok(Some(chunk)) => bytes.extend_from_slice(&chunk),
            _ => break,
        }
    }
    bytes.truncate(MAX_ERROR_BYTES as usize);
    String::from_utf8_lossy(&bytes).into_owned()
}

fn transfer_error(
    module: &ModuleRef,
    what: &str,
    err: &reqwest::Error,
    timeout: Duration,
) -> OciError {
    if err.is_timeout() {
        return OciError::Timeout {
            reference: module.to_string(),
            timeout,
            attempts: 1,
        };
    }
    OciError::Unreachable {
        reference: module.to_string(),
        registry: module.registry().to_string(),
        cause: format!("{what}: {}", cut_to(&error_chain(err), MAX_TRANSFER_TEXT)),
    }
}

/// A registry's challenge, as far as a pull needs it.
#[derive(Debug, PartialEq, Eq)]
enum Challenge {
    Bearer {
        realm: String,
        service: Option<String>,
    },
    Basic,
}

impl Challenge {
    /// The first bearer or basic challenge in a `WWW-Authenticate` value.
    fn parse(header: &str) -> Option<Self> {
        http_auth::parser::ChallengeParser::new(header)
            .filter_map(Result::ok)
            .find_map(|challenge| {
                let param = |name: &str| {
                    challenge
                        .params
                        .iter()
                        .find(|(key, _)| key.eq_ignore_ascii_case(name))
                        .map(|(_, value)| value.to_unescaped())
                };
                if challenge.scheme.eq_ignore_ascii_case("bearer") {
                    Some(Challenge::Bearer {
                        realm: param("realm")?,
                        service: param("service"),
                    })
                } else if challenge.scheme.eq_ignore_ascii_case("basic") {
                    Some(Challenge::Basic)
                } else {
                    None
                }
            })
    }
}

/// `text` cut to [`MAX_REGISTRY_TEXT`] bytes (on a character boundary), with
/// control characters replaced, so a registry cannot flood a status or a log line.
pub(crate) fn cut(text: &str) -> String {
    cut_to(text, MAX_REGISTRY_TEXT)
}

fn cut_to(text: &str, limit: usize) -> String {
    let mut end = text.len().min(limit);
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    let mut out: String = text[..end]
        .chars()
        .map(|c| if c.is_control() { ' ' } else { c })
        .collect();
    if end < text.len() {
        out.push_str(&format!("… ({} bytes cut)", text.len() - end));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bearer_and_basic_challenges_are_read() {
        assert_eq!(
            Challenge::parse(
                r#"Bearer realm="https://auth.example.com/token",service="registry.example.com",scope="repository:a:pull""#
            ),
            Some(Challenge::Bearer {
                realm: "https://auth.example.com/token".into(),
                service: Some("registry.example.com".into()),
            })
        );
        assert_eq!(
            Challenge::parse(r#"Basic realm="rekon-test""#),
            Some(Challenge::Basic)
        );
        assert_eq!(Challenge::parse("Negotiate"), None);
    }

    #[test]
    fn registry_text_is_cut_on_a_character_boundary_without_control_characters() {
        let long = format!("é{}\n\u{1b}[31m", "x".repeat(10_000));
        let cut = cut(&long);
        assert!(cut.len() < MAX_REGISTRY_TEXT + 40, "{}", cut.len());
        assert!(cut.starts_with('é') && cut.ends_with("bytes cut)"), "{cut}");
        assert_eq!(super::cut("a\nb"), "a b");
    }
}
