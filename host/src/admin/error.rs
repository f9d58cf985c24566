//! The admin API's one error shape, `{"error": {"code": "...", "message": "..."}}`, and how
//! every refusal of the host's parts maps onto an HTTP status:
//!
//! | status | when |
//! |---|---|
//! | 400 | bad input: malformed JSON, a bad name, path or parameter |
//! | 401 | missing or wrong bearer token |
//! | 404 | unknown module, version, group or topic; unknown route |
//! | 409 | a conflict with the current state: deleting the active version, an existing topic |
//! | 413 | a body over its cap |
//! | 422 | a module refused by the upload checks (`check` names the check), or a simulation whose module call failed |
//! | 500 | the host's own fault (storage) |
//! | 503 | the group coordinator is not running or is shutting down |
//!
//! `code` is a stable snake_case identifier for scripts; `message` is a sentence a person can
//! act on, usually the part's own error text, which names the culprit.

use axum::Json;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use serde::Serialize;

use crate::catalog::CatalogError;
use crate::cluster::modules::ModuleLogError;
use crate::coordinator::AdminError;
use crate::registry::{RegistryError, UploadError};
use crate::sandbox::LoadError;

/// An error answer.
#[derive(Debug, Clone, PartialEq)]
pub struct ApiError {
    pub status: StatusCode,
    pub body: ErrorBody,
}

/// The `error` object.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ErrorBody {
    pub code: &'static str,
    pub message: String,
    /// For a refused upload (422): which check failed (`size`, `sha256`, `compile`,
    /// `imports`, `exports`, `memory`, `abi_version`, `smoke_call`, ...).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub check: Option<&'static str>,
    /// Extra facts, e.g. what a failed simulation's call used and logged.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub detail: Option<serde_json::Value>,
}

impl ApiError {
    pub fn new(status: StatusCode, code: &'static str, message: impl Into<String>) -> ApiError {
        ApiError {
            status,
            body: ErrorBody {
                code,
                message: message.into(),
                check: None,
                detail: None,
            },
        }
    }

    pub fn bad_request(message: impl Into<String>) -> ApiError {
        ApiError::new(StatusCode::BAD_REQUEST, "bad_request", message)
    }

    pub fn not_found(code: &'static str, message: impl Into<String>) -> ApiError {
        ApiError::new(StatusCode::NOT_FOUND, code, message)
    }

    pub fn internal(message: impl Into<String>) -> ApiError {
        ApiError::new(StatusCode::INTERNAL_SERVER_ERROR, "internal", message)
    }

    pub fn with_detail(mut self, detail: serde_json::Value) -> ApiError {
        self.body.detail = Some(detail);
        self
    }
}

#[derive(Serialize)]
struct Envelope<'a> {
    error: &'a ErrorBody,
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        if self.status.is_server_error() {
            tracing::error!(code = self.body.code, message = %self.body.message, "admin request failed");
        }
        let mut response = (self.status, Json(Envelope { error: &self.body })).into_response();
        if self.status == StatusCode::UNAUTHORIZED {
            response.headers_mut().insert(
                axum::http::header::WWW_AUTHENTICATE,
                axum::http::HeaderValue::from_static("Bearer realm=\"assignor-host\""),
            );
        }
        response
    }
}

impl From<RegistryError> for ApiError {
    fn from(e: RegistryError) -> ApiError {
        let message = e.to_string();
        match e {
            RegistryError::NotFound { .. } => ApiError::not_found("module_not_found", message),
            RegistryError::VersionNotFound { .. } => {
                ApiError::not_found("version_not_found", message)
            }
            RegistryError::ActiveVersion { .. } => {
                ApiError::new(StatusCode::CONFLICT, "active_version", message)
            }
            RegistryError::Builtin { .. } => {
                ApiError::new(StatusCode::CONFLICT, "builtin_version", message)
            }
            RegistryError::NoPreviousVersion { .. } => {
                ApiError::new(StatusCode::CONFLICT, "no_previous_version", message)
            }
            RegistryError::Store(_) => ApiError::internal(message),
        }
    }
}

impl From<UploadError> for ApiError {
    fn from(e: UploadError) -> ApiError {
        let message = e.to_string();
        let refused = |check| {
            let mut error =
                ApiError::new(StatusCode::UNPROCESSABLE_ENTITY, "module_refused", &message);
            error.body.check = Some(check);
            error
        };
        match &e {
            UploadError::InvalidName { .. } => {
                ApiError::new(StatusCode::BAD_REQUEST, "invalid_name", message)
            }
            UploadError::AliasName { .. } => {
                ApiError::new(StatusCode::BAD_REQUEST, "alias_name", message)
            }
            UploadError::TooLarge { .. } => {
                ApiError::new(StatusCode::PAYLOAD_TOO_LARGE, "payload_too_large", message)
            }
            UploadError::Sha256Mismatch { .. } => refused("sha256"),
            UploadError::Load(load) => refused(load_check(load)),
            UploadError::Smoke(_) => refused("smoke_call"),
            UploadError::Store(_) => ApiError::internal(message),
        }
    }
}

/// The upload check a load error belongs to.
pub fn load_check(e: &LoadError) -> &'static str {
    match e {
        LoadError::Text | LoadError::Compile { .. } | LoadError::Deserialize { .. } => "compile",
        LoadError::ForbiddenImport { .. } | LoadError::WrongImportSignature { .. } => "imports",
        LoadError::MissingExport { .. } | LoadError::WrongExportType { .. } => "exports",
        LoadError::MemoryTooLarge { .. } => "memory",
        LoadError::Link { .. } => "link",
        LoadError::AbiVersion { .. } => "abi_version",
        LoadError::Call { step, .. } if *step == assignor_sdk::EXPORT_DESCRIBE => "describe",
        LoadError::Call { .. } => "abi_version",
    }
}

impl From<ModuleLogError> for ApiError {
    fn from(e: ModuleLogError) -> ApiError {
        match e {
            ModuleLogError::Registry(e) => e.into(),
            ModuleLogError::Upload(e) => e.into(),
            ModuleLogError::Log(message) => ApiError::new(
                StatusCode::SERVICE_UNAVAILABLE,
                "module_log_unavailable",
                message,
            ),
        }
    }
}

impl From<AdminError> for ApiError {
    fn from(e: AdminError) -> ApiError {
        let message = e.to_string();
        match e {
            AdminError::GroupNotFound(_) => ApiError::not_found("group_not_found", message),
            AdminError::GroupEmpty(_) => {
                ApiError::new(StatusCode::CONFLICT, "group_empty", message)
            }
            AdminError::UnknownStrategy(_) => ApiError::not_found("module_not_found", message),
            AdminError::PinWithoutStrategy | AdminError::BadStabilize(_) => {
                ApiError::bad_request(message)
            }
            AdminError::Storage(_) => ApiError::internal(message),
        }
    }
}

impl From<CatalogError> for ApiError {
    fn from(e: CatalogError) -> ApiError {
        let message = e.to_string();
        let bad = |code| ApiError::new(StatusCode::BAD_REQUEST, code, &message);
        match e {
            CatalogError::InvalidTopic(_) => bad("invalid_topic"),
            CatalogError::InvalidPartitions(_) => bad("invalid_partitions"),
            CatalogError::InvalidRacks(_) => bad("invalid_racks"),
            CatalogError::Seed { .. } => bad("invalid_topic"),
            CatalogError::TopicAlreadyExists(_) => {
                ApiError::new(StatusCode::CONFLICT, "topic_exists", message)
            }
            CatalogError::UnknownTopic(_) => ApiError::not_found("topic_not_found", message),
            CatalogError::Storage(_) => ApiError::internal(message),
        }
    }
}
