//! Request bodies and path parameters with the admin API's own refusals: every rejection is an
//! [`ApiError`] in the one JSON shape, naming the cap or the JSON error's line and column,
//! instead of axum's plain-text defaults.

use axum::body::Bytes;
use axum::extract::rejection::{BytesRejection, PathRejection, QueryRejection};
use axum::extract::{FromRequest, Request};
use axum::http::StatusCode;
use serde::de::DeserializeOwned;

use super::error::ApiError;
use super::state::AdminState;

/// A JSON body of at most `admin.max_json_bytes`. Malformed JSON, a wrong field type or an
/// unknown field is a 400 naming where; an empty body is a 400 unless `T` is optional.
#[derive(Debug)]
pub struct JsonBody<T>(pub T);

impl<T: DeserializeOwned> FromRequest<AdminState> for JsonBody<T> {
    type Rejection = ApiError;

    async fn from_request(req: Request, state: &AdminState) -> Result<Self, ApiError> {
        let cap = state.config.max_json_bytes;
        let bytes = Bytes::from_request(req, state)
            .await
            .map_err(|e| body_rejection(e, cap, "admin.max_json_bytes"))?;
        let text: &[u8] = if bytes.iter().all(u8::is_ascii_whitespace) {
            b"null"
        } else {
            &bytes
        };
        serde_json::from_slice(text).map(JsonBody).map_err(|e| {
            let message = if text == b"null" {
                "this request needs a JSON body".to_owned()
            } else {
                format!("the body is not valid JSON for this request: {e}")
            };
            ApiError::new(StatusCode::BAD_REQUEST, "malformed_json", message)
        })
    }
}

/// A module upload: raw wasm bytes of at most the registry's module cap.
#[derive(Debug)]
pub struct WasmBody(pub Bytes);

impl FromRequest<AdminState> for WasmBody {
    type Rejection = ApiError;

    async fn from_request(req: Request, state: &AdminState) -> Result<Self, ApiError> {
        let cap = state.max_module_bytes();
        let bytes = Bytes::from_request(req, state)
            .await
            .map_err(|e| body_rejection(e, cap, "registry.max_module_bytes"))?;
        if bytes.is_empty() {
            return Err(ApiError::bad_request(
                "the body is empty; send the module's .wasm bytes (curl --data-binary @FILE)",
            ));
        }
        Ok(WasmBody(bytes))
    }
}

/// A body that could not be read: over the cap (413, naming it and its setting) or broken.
pub fn body_rejection(e: BytesRejection, cap: usize, setting: &str) -> ApiError {
    if e.status() == StatusCode::PAYLOAD_TOO_LARGE {
        ApiError::new(
            StatusCode::PAYLOAD_TOO_LARGE,
            "payload_too_large",
            format!("the body is over this endpoint's cap of {cap} bytes (setting `{setting}`)"),
        )
    } else {
        ApiError::bad_request(format!("cannot read the request body: {}", e.body_text()))
    }
}

impl From<PathRejection> for ApiError {
    fn from(e: PathRejection) -> ApiError {
        ApiError::bad_request(format!("bad path: {}", e.body_text()))
    }
}

impl From<QueryRejection> for ApiError {
    fn from(e: QueryRejection) -> ApiError {
        ApiError::bad_request(format!("bad query string: {}", e.body_text()))
    }
}

/// A version number from a path segment or an argument.
pub fn parse_version(text: &str) -> Result<u32, ApiError> {
    text.parse().map_err(|_| {
        ApiError::bad_request(format!(
            "`{text}` is not a version number; versions are 0 (the built-in) or 1, 2, ..."
        ))
    })
}
