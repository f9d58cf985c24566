//! Bearer-token auth: with `admin.token` set, a request must carry
//! `Authorization: Bearer <token>`. The comparison takes the same time whatever the token's
//! content, so the token cannot be guessed byte by byte from response times.

use axum::extract::{Request, State};
use axum::http::{StatusCode, header};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};

use super::error::ApiError;
use super::state::AdminState;

pub async fn require_token(
    State(state): State<AdminState>,
    request: Request,
    next: Next,
) -> Response {
    let Some(expected) = state.config.token.as_deref() else {
        return next.run(request).await;
    };
    let presented = request
        .headers()
        .get(header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| {
            v.strip_prefix("Bearer ")
                .or_else(|| v.strip_prefix("bearer "))
        })
        .map(str::trim);
    match presented {
        None => ApiError::new(
            StatusCode::UNAUTHORIZED,
            "missing_token",
            "this host's admin API needs a bearer token: send `Authorization: Bearer <token>` \
             (the CLI sends --token or ASSIGNOR_HOST_TOKEN)",
        )
        .into_response(),
        Some(token) if !same(token.as_bytes(), expected.as_bytes()) => ApiError::new(
            StatusCode::UNAUTHORIZED,
            "bad_token",
            "the bearer token is not this host's admin token",
        )
        .into_response(),
        Some(_) => next.run(request).await,
    }
}

/// Whether the presented token is the configured one, in time that depends on neither: both
/// are hashed (SHA-256, so not even the length is compared) and the digests compared by
/// `subtle`, which the compiler cannot turn into an early exit.
fn same(presented: &[u8], expected: &[u8]) -> bool {
    use sha2::{Digest, Sha256};
    use subtle::ConstantTimeEq;
    let (a, b) = (Sha256::digest(presented), Sha256::digest(expected));
    a.as_slice().ct_eq(b.as_slice()).into()
}
