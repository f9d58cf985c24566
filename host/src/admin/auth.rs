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

/// Constant-time equality (for equal lengths; a length mismatch is not secret).
fn same(a: &[u8], b: &[u8]) -> bool {
    a.len() == b.len() && a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}
