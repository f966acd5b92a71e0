//! API call errors, mapped once from `kube::Error` into what the machinery acts on:
//! a conflict means "decide again from fresh state", not found on delete means
//! "done", transient failures back off, everything else is reported.

use std::fmt;

/// The object an API call was about, for error messages and the journal.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct ObjectName {
    /// Plural resource, e.g. `persistentvolumeclaims`.
    pub resource: String,
    /// Empty for cluster-scoped objects and namespace-wide calls.
    pub namespace: String,
    /// Empty for list calls.
    pub name: String,
}

impl ObjectName {
    pub fn new(
        resource: impl Into<String>,
        namespace: impl Into<String>,
        name: impl Into<String>,
    ) -> Self {
        Self {
            resource: resource.into(),
            namespace: namespace.into(),
            name: name.into(),
        }
    }
}

impl fmt::Display for ObjectName {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match (self.namespace.is_empty(), self.name.is_empty()) {
            (true, _) => write!(f, "{} {}", self.resource, self.name),
            (false, true) => write!(f, "{} in namespace {}", self.resource, self.namespace),
            (false, false) => write!(f, "{} {}/{}", self.resource, self.namespace, self.name),
        }
    }
}

#[derive(Debug, thiserror::Error)]
pub enum ApiError {
    /// 409 Conflict: a resourceVersion or uid precondition failed.
    #[error("{object}: conflict (409): {message}")]
    Conflict { object: ObjectName, message: String },
    /// 409 AlreadyExists: a create named an existing object.
    #[error("{object}: already exists (409): {message}")]
    AlreadyExists { object: ObjectName, message: String },
    #[error("{object}: not found (404)")]
    NotFound { object: ObjectName, message: String },
    /// 410 Gone: e.g. a watch or list resourceVersion too old.
    #[error("{object}: gone (410): {message}")]
    Gone { object: ObjectName, message: String },
    /// 422: the server refused the object as invalid.
    #[error("{object}: invalid (422): {message}")]
    Invalid { object: ObjectName, message: String },
    /// 429, 5xx, or no response at all (`code` is `None`): try again later.
    #[error("{object}: transient failure{}: {message}", code.map(|c| format!(" ({c})")).unwrap_or_default())]
    Transient {
        object: ObjectName,
        code: Option<u16>,
        message: String,
    },
    /// Any other status the server answered with (400, 403, ...).
    #[error("{object}: rejected ({code} {reason}): {message}")]
    Rejected {
        object: ObjectName,
        code: u16,
        reason: String,
        message: String,
    },
    /// The client failed before or after the exchange (request building, decoding ...).
    #[error("{object}: {source}")]
    Client {
        object: ObjectName,
        #[source]
        source: kube::Error,
    },
}

impl ApiError {
    /// The single mapping from `kube::Error`.
    pub fn from_kube(err: kube::Error, object: ObjectName) -> Self {
        match err {
            kube::Error::Api(status) => {
                let message = status.message.clone();
                match status.code {
                    409 if status.reason == "AlreadyExists" => {
                        Self::AlreadyExists { object, message }
                    }
                    409 => Self::Conflict { object, message },
                    404 => Self::NotFound { object, message },
                    410 => Self::Gone { object, message },
                    422 => Self::Invalid { object, message },
                    code @ (429 | 500..=599) => Self::Transient {
                        object,
                        code: Some(code),
                        message,
                    },
                    code => Self::Rejected {
                        object,
                        code,
                        reason: status.reason.clone(),
                        message,
                    },
                }
            }
            err @ (kube::Error::HyperError(_)
            | kube::Error::Service(_)
            | kube::Error::ReadEvents(_)) => Self::Transient {
                object,
                code: None,
                message: err.to_string(),
            },
            source => Self::Client { object, source },
        }
    }

    pub fn object(&self) -> &ObjectName {
        match self {
            Self::Conflict { object, .. }
            | Self::AlreadyExists { object, .. }
            | Self::NotFound { object, .. }
            | Self::Gone { object, .. }
            | Self::Invalid { object, .. }
            | Self::Transient { object, .. }
            | Self::Rejected { object, .. }
            | Self::Client { object, .. } => object,
        }
    }

    /// The HTTP status the server answered with, if it answered.
    pub fn status_code(&self) -> Option<u16> {
        match self {
            Self::Conflict { .. } | Self::AlreadyExists { .. } => Some(409),
            Self::NotFound { .. } => Some(404),
            Self::Gone { .. } => Some(410),
            Self::Invalid { .. } => Some(422),
            Self::Transient { code, .. } => *code,
            Self::Rejected { code, .. } => Some(*code),
            Self::Client { source, .. } => match source {
                kube::Error::Api(status) => Some(status.code),
                _ => None,
            },
        }
    }

    pub fn is_conflict(&self) -> bool {
        matches!(self, Self::Conflict { .. })
    }

    pub fn is_not_found(&self) -> bool {
        matches!(self, Self::NotFound { .. })
    }

    /// Worth retrying the same call later (as opposed to deciding again).
    pub fn is_transient(&self) -> bool {
        matches!(self, Self::Transient { .. })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use kube::core::Status;

    fn api(code: u16, reason: &str) -> kube::Error {
        kube::Error::Api(
            Status::failure("server says no", reason)
                .with_code(code)
                .boxed(),
        )
    }

    fn pvc() -> ObjectName {
        ObjectName::new("persistentvolumeclaims", "ns", "data")
    }

    #[test]
    fn status_codes_map_to_their_kind() {
        type Case = (u16, &'static str, fn(&ApiError) -> bool);
        let cases: [Case; 9] = [
            (409, "Conflict", |e| e.is_conflict()),
            (409, "AlreadyExists", |e| {
                matches!(e, ApiError::AlreadyExists { .. })
            }),
            (404, "NotFound", |e| e.is_not_found()),
            (410, "Gone", |e| matches!(e, ApiError::Gone { .. })),
            (422, "Invalid", |e| matches!(e, ApiError::Invalid { .. })),
            (429, "TooManyRequests", |e| e.is_transient()),
            (500, "InternalError", |e| e.is_transient()),
            (503, "ServiceUnavailable", |e| e.is_transient()),
            (
                403,
                "Forbidden",
                |e| matches!(e, ApiError::Rejected { code: 403, reason, .. } if reason == "Forbidden"),
            ),
        ];
        for (code, reason, is_expected) in cases {
            let err = ApiError::from_kube(api(code, reason), pvc());
            assert!(is_expected(&err), "{code} {reason} mapped to {err:?}");
            assert_eq!(err.status_code(), Some(code));
            assert_eq!(err.object(), &pvc());
        }
    }

    #[test]
    fn messages_name_the_object() {
        let err = ApiError::from_kube(api(409, "Conflict"), pvc());
        assert_eq!(
            err.to_string(),
            "persistentvolumeclaims ns/data: conflict (409): server says no"
        );
        let err = ApiError::from_kube(
            api(503, "ServiceUnavailable"),
            ObjectName::new("pods", "ns", ""),
        );
        assert_eq!(
            err.to_string(),
            "pods in namespace ns: transient failure (503): server says no"
        );
    }

    #[test]
    fn client_side_failures_are_not_api_statuses() {
        let decode = serde_json::from_str::<u8>("x").unwrap_err();
        let err = ApiError::from_kube(kube::Error::SerdeError(decode), pvc());
        assert!(matches!(err, ApiError::Client { .. }));
        assert_eq!(err.status_code(), None);
        assert!(!err.is_transient());
        assert!(
            err.to_string()
                .starts_with("persistentvolumeclaims ns/data: ")
        );
    }

    #[test]
    fn connection_failures_are_transient_without_a_code() {
        let io = std::io::Error::new(std::io::ErrorKind::ConnectionReset, "reset");
        let err = ApiError::from_kube(kube::Error::ReadEvents(io), pvc());
        assert!(err.is_transient());
        assert_eq!(err.status_code(), None);
    }
}
