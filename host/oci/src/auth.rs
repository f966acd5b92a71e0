//! Registry credentials, including those of a `kubernetes.io/dockerconfigjson`
//! Secret (`.dockerconfigjson`: `{"auths": {"HOST": {"auth": base64(user:pass)}}}`
//! or `username`/`password`, or `registrytoken`).

use std::collections::BTreeMap;

use base64::Engine as _;
use serde::Deserialize;

use crate::error::OciError;

/// Credentials for one registry.
#[derive(Clone, PartialEq, Eq, Default)]
pub enum RegistryAuth {
    /// No credentials (also used after a 401 with no credentials known).
    #[default]
    Anonymous,
    /// HTTP basic credentials, also exchanged for a bearer token when the registry asks.
    Basic { username: String, password: String },
    /// A bearer token sent as is.
    Bearer { token: String },
}

impl std::fmt::Debug for RegistryAuth {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Anonymous => f.write_str("Anonymous"),
            Self::Basic { username, .. } => write!(f, "Basic({username}, <redacted>)"),
            Self::Bearer { .. } => f.write_str("Bearer(<redacted>)"),
        }
    }
}

impl RegistryAuth {
    pub(crate) fn to_oci(&self) -> oci_client::secrets::RegistryAuth {
        match self {
            Self::Anonymous => oci_client::secrets::RegistryAuth::Anonymous,
            Self::Basic { username, password } => {
                oci_client::secrets::RegistryAuth::Basic(username.clone(), password.clone())
            }
            Self::Bearer { token } => oci_client::secrets::RegistryAuth::Bearer(token.clone()),
        }
    }
}

#[derive(Deserialize)]
struct DockerConfig {
    #[serde(default)]
    auths: BTreeMap<String, DockerAuth>,
}

#[derive(Deserialize)]
struct DockerAuth {
    auth: Option<String>,
    username: Option<String>,
    password: Option<String>,
    registrytoken: Option<String>,
}

/// The credentials for `registry` (`host[:port]`) in the bytes of a
/// `.dockerconfigjson` (or `~/.docker/config.json`); `Ok(None)` when it has no
/// entry for that registry. Keys may be written as `host`, `https://host`, or
/// `https://host/v1/`; `docker.io` also matches `index.docker.io` entries.
pub fn auth_from_dockerconfigjson(bytes: &[u8], registry: &str) -> Result<Option<RegistryAuth>, OciError> {
    let fail = |cause: String| OciError::Credentials {
        reference: registry.to_string(),
        cause: format!("docker config json: {cause}"),
    };
    let config: DockerConfig = serde_json::from_slice(bytes).map_err(|err| fail(err.to_string()))?;
    let wanted = normalize_host(registry);
    let Some((key, entry)) = config.auths.iter().find(|(key, _)| normalize_host(key) == wanted) else {
        return Ok(None);
    };
    if let Some(token) = &entry.registrytoken {
        return Ok(Some(RegistryAuth::Bearer { token: token.clone() }));
    }
    if let Some(encoded) = &entry.auth {
        let decoded = base64::engine::general_purpose::STANDARD
            .decode(encoded.trim())
            .map_err(|err| fail(format!("auths[{key}].auth is not base64: {err}")))?;
        let text = String::from_utf8(decoded).map_err(|_| fail(format!("auths[{key}].auth is not UTF-8")))?;
        let (username, password) = text
            .split_once(':')
            .ok_or_else(|| fail(format!("auths[{key}].auth is not `username:password`")))?;
        return Ok(Some(RegistryAuth::Basic { username: username.into(), password: password.into() }));
    }
    match (&entry.username, &entry.password) {
        (Some(username), Some(password)) => {
            Ok(Some(RegistryAuth::Basic { username: username.clone(), password: password.clone() }))
        }
        _ => Err(fail(format!("auths[{key}] has neither `auth` nor `username` and `password`"))),
    }
}

fn normalize_host(key: &str) -> String {
    let without_scheme = key.trim_start_matches("https://").trim_start_matches("http://");
    let host = without_scheme.split('/').next().unwrap_or_default().to_ascii_lowercase();
    match host.as_str() {
        "index.docker.io" | "registry-1.docker.io" => "docker.io".to_string(),
        _ => host,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn base64_auth_is_split_into_username_and_password() {
        let json = br#"{"auths":{"registry.example.com:5000":{"auth":"dXNlcjpwYTpzcw=="}}}"#;
        let auth = auth_from_dockerconfigjson(json, "registry.example.com:5000").unwrap();
        assert_eq!(auth, Some(RegistryAuth::Basic { username: "user".into(), password: "pa:ss".into() }));
    }

    #[test]
    fn username_and_password_fields_are_read_under_a_url_key() {
        let json = br#"{"auths":{"https://Registry.example.com/v1/":{"username":"u","password":"p"}}}"#;
        let auth = auth_from_dockerconfigjson(json, "registry.example.com").unwrap();
        assert_eq!(auth, Some(RegistryAuth::Basic { username: "u".into(), password: "p".into() }));
    }

    #[test]
    fn another_registrys_entry_gives_none() {
        let json = br#"{"auths":{"other.example.com":{"auth":"dTpw"}}}"#;
        assert_eq!(auth_from_dockerconfigjson(json, "registry.example.com").unwrap(), None);
    }

    #[test]
    fn broken_entries_are_errors_that_name_the_registry_and_field() {
        let not_base64 = br#"{"auths":{"r.example.com":{"auth":"%%%"}}}"#;
        let err = auth_from_dockerconfigjson(not_base64, "r.example.com").unwrap_err();
        assert!(err.to_string().contains("r.example.com") && err.to_string().contains("base64"), "{err}");
        let no_fields = br#"{"auths":{"r.example.com":{}}}"#;
        let err = auth_from_dockerconfigjson(no_fields, "r.example.com").unwrap_err();
        assert!(err.to_string().contains("neither"), "{err}");
        let not_json = b"{";
        assert!(matches!(auth_from_dockerconfigjson(not_json, "r").unwrap_err(), OciError::Credentials { .. }));
    }
}
