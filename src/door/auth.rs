//! Who may do what at the door, in the spec's order ("What a door answers"):
//! the Authorization header first (401s and `not_permitted`, before the body is
//! read), then the method against the credential's scopes (`insufficient_scope`,
//! `peer_not_accepted`, and the operator methods).

use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use serde_json::json;
use sha2::{Digest, Sha256};
use subtle::ConstantTimeEq;

use super::{Credential, DoorConfig};
use crate::a2a::rpc as m;
use crate::credential::{TokenCheck, Verifier};

/// The five methods a formation token reaches.
pub(super) const FORMATION_SCOPES: [&str; 5] = [
    m::SEND_MESSAGE,
    m::GET_TASK,
    m::CANCEL_TASK,
    m::LIST_TASKS,
    m::SUBSCRIBE_TO_TASK,
];
/// Methods only the operator token reaches.
pub(super) const OPERATOR_METHODS: [&str; 3] =
    [m::WATCH_SESSION, m::STOP_SESSION, m::RESOURCES_FILES];

/// A refusal at the door, answered as HTTP 401/403 with `{"error","message"}`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) enum AuthError {
    Unauthenticated,
    /// One body for every token that does not verify, whatever the reason.
    InvalidToken,
    NotPermitted {
        from: String,
    },
    InsufficientScope {
        credential: Credential,
    },
    PeerNotAccepted {
        from: String,
    },
    OperatorOnly,
}

impl AuthError {
    pub(super) fn name(&self) -> &'static str {
        match self {
            AuthError::Unauthenticated | AuthError::OperatorOnly => "unauthenticated",
            AuthError::InvalidToken => "invalid_token",
            AuthError::NotPermitted { .. } => "not_permitted",
            AuthError::InsufficientScope { .. } => "insufficient_scope",
            AuthError::PeerNotAccepted { .. } => "peer_not_accepted",
        }
    }

    fn message(&self) -> String {
        match self {
            AuthError::Unauthenticated => {
                "This door requires a bearer token in the Authorization header.".into()
            }
            AuthError::OperatorOnly => {
                "This method requires the session's operator token in the Authorization header."
                    .into()
            }
            AuthError::InvalidToken => "The bearer token is not valid at this door.".into(),
            AuthError::NotPermitted { from } => {
                format!("The formation token presented by member {from} is not for this door.")
            }
            AuthError::InsufficientScope { credential } => format!(
                "The credential {credential} does not reach this method; {}.",
                match credential {
                    Credential::Member(_) =>
                        "a formation token reaches SendMessage, GetTask, CancelTask, ListTasks and SubscribeToTask",
                    _ =>
                        "murmur.WatchSession, murmur.StopSession and resources/files need the operator token",
                }
            ),
            AuthError::PeerNotAccepted { from } => format!(
                "This member does not accept peer tasks (exports.peer_tasks.accept is not true); member:{from} was refused."
            ),
        }
    }
}

impl IntoResponse for AuthError {
    fn into_response(self) -> Response {
        let status = match self {
            AuthError::Unauthenticated | AuthError::InvalidToken | AuthError::OperatorOnly => {
                StatusCode::UNAUTHORIZED
            }
            _ => StatusCode::FORBIDDEN,
        };
        let body = json!({"error": self.name(), "message": self.message()});
        let mut resp = (status, axum::Json(body)).into_response();
        let challenge = match self {
            AuthError::InvalidToken => Some(r#"Bearer error="invalid_token""#),
            AuthError::Unauthenticated | AuthError::OperatorOnly => Some("Bearer"),
            _ => None,
        };
        if let Some(c) = challenge {
            resp.headers_mut()
                .insert(header::WWW_AUTHENTICATE, HeaderValue::from_static(c));
        }
        resp
    }
}

/// The door's credentials, kept as SHA-256 digests compared in constant time.
pub(super) struct Auth {
    operator: [u8; 32],
    declared: Vec<(String, [u8; 32])>,
    public: bool,
    accept_peer_tasks: bool,
    verifier: Option<Verifier>,
}

fn digest(token: &str) -> [u8; 32] {
    Sha256::digest(token.as_bytes()).into()
}

impl Auth {
    pub(super) fn new(config: &DoorConfig) -> Auth {
        let verifier = config.formation.as_ref().map(|f| {
            if config.limits.cache_verified_tokens {
                Verifier::new(f.verify_key.clone(), f.member.clone())
            } else {
                Verifier::without_cache(f.verify_key.clone(), f.member.clone())
            }
        });
        Auth {
            operator: digest(&config.operator_token),
            declared: config
                .bearer_tokens
                .iter()
                .filter(|t| !t.token.is_empty())
                .map(|t| (t.env_name.clone(), digest(&t.token)))
                .collect(),
            public: config.public,
            accept_peer_tasks: config.accept_peer_tasks,
            verifier,
        }
    }

    /// Who presents this request, from its Authorization header alone.
    pub(super) fn identify(&self, headers: &HeaderMap) -> Result<Credential, AuthError> {
        let Some(value) = headers.get(header::AUTHORIZATION) else {
            return if self.public {
                Ok(Credential::Public)
            } else {
                Err(AuthError::Unauthenticated)
            };
        };
        let token = value
            .to_str()
            .ok()
            .and_then(|v| {
                let (scheme, token) = v.split_once(' ')?;
                scheme.eq_ignore_ascii_case("bearer").then(|| token.trim())
            })
            .filter(|t| !t.is_empty())
            .ok_or(AuthError::InvalidToken)?;
        let presented = digest(token);
        if bool::from(presented.ct_eq(&self.operator)) {
            return Ok(Credential::Operator);
        }
        // Every declared token is compared, so timing does not tell which matched.
        let mut found = None;
        for (name, d) in &self.declared {
            if bool::from(presented.ct_eq(d)) {
                found = Some(name);
            }
        }
        if let Some(name) = found {
            return Ok(Credential::Declared(name.clone()));
        }
        match &self.verifier {
            Some(v) => match v.check(token) {
                Ok(TokenCheck::ForThisDoor(c)) => Ok(Credential::Member(c.from)),
                Ok(TokenCheck::ForAnotherDoor(c)) => Err(AuthError::NotPermitted { from: c.from }),
                Err(_) => Err(AuthError::InvalidToken),
            },
            None => Err(AuthError::InvalidToken),
        }
    }

    /// Whether `credential` may call `method`.
    pub(super) fn authorize(&self, credential: &Credential, method: &str) -> Result<(), AuthError> {
        let operator_only = OPERATOR_METHODS.contains(&method);
        match credential {
            Credential::Operator => Ok(()),
            Credential::Member(from) => {
                if !FORMATION_SCOPES.contains(&method) {
                    Err(AuthError::InsufficientScope {
                        credential: credential.clone(),
                    })
                } else if !self.accept_peer_tasks {
                    Err(AuthError::PeerNotAccepted { from: from.clone() })
                } else {
                    Ok(())
                }
            }
            Credential::Declared(_) if operator_only => Err(AuthError::InsufficientScope {
                credential: credential.clone(),
            }),
            Credential::Public if operator_only => Err(AuthError::OperatorOnly),
            _ => Ok(()),
        }
    }
}
