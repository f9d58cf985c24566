//! `/v1/users`: standalone's SCRAM users, which `kafka.authentication = "local"` checks
//! (list, add or change a password, remove). What Kafka's `kafka-configs --alter
//! --add-config 'SCRAM-SHA-512=[password=...]' --entity-type users` and
//! `kafka-configs --describe` do, by HTTP: the password is salted here and only the salted
//! credential is kept (`kafka::users`); nothing answers or logs it back. In proxy mode the
//! users are the cluster's, managed there.

use axum::extract::rejection::{PathRejection, QueryRejection};
use axum::extract::{Path, Query, State};
use axum::http::StatusCode;
use axum::routing::{get, put};
use axum::{Json, Router};
use serde::Deserialize;
use serde_json::{Value, json};

use super::error::ApiError;
use super::extract::JsonBody;
use super::state::{AdminState, blocking};
use crate::users::{MIN_ITERATIONS, ScramMechanism, UserError, Users};

pub fn routes() -> Router<AdminState> {
    Router::new()
        .route("/v1/users", get(list))
        .route("/v1/users/{user}", put(set).delete(remove))
}

fn users(state: &AdminState) -> Result<std::sync::Arc<Users>, ApiError> {
    state.mode.users().cloned().ok_or_else(|| {
        ApiError::new(
            StatusCode::CONFLICT,
            "users_are_upstream",
            "in proxy mode the cluster authenticates the clients: manage its users there \
             (kafka-configs --entity-type users)",
        )
    })
}

async fn list(State(state): State<AdminState>) -> Result<Json<Value>, ApiError> {
    Ok(Json(json!({ "users": users(&state)?.list() })))
}

/// A password to set. Its `Debug` leaves the password out.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct SetBody {
    mechanism: String,
    password: String,
    /// Default: 4096, Kafka's minimum and `kafka-configs`' default.
    iterations: Option<u32>,
}

async fn set(
    State(state): State<AdminState>,
    user: Result<Path<String>, PathRejection>,
    JsonBody(body): JsonBody<SetBody>,
) -> Result<(StatusCode, Json<Value>), ApiError> {
    let Path(user) = user?;
    let users = users(&state)?;
    let mechanism = mechanism(&body.mechanism)?;
    let iterations = body.iterations.unwrap_or(MIN_ITERATIONS);
    let name = user.clone();
    let created = blocking(move || {
        users
            .set(&name, mechanism, &body.password, iterations)
            .map_err(refused)
    })
    .await?;
    let status = if created {
        StatusCode::CREATED
    } else {
        StatusCode::OK
    };
    Ok((
        status,
        Json(json!({
            "name": user,
            "mechanism": mechanism,
            "iterations": iterations,
            "created": created,
        })),
    ))
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RemoveQuery {
    /// Only this mechanism's credential; default: all of the user's.
    mechanism: Option<String>,
}

async fn remove(
    State(state): State<AdminState>,
    user: Result<Path<String>, PathRejection>,
    query: Result<Query<RemoveQuery>, QueryRejection>,
) -> Result<Json<Value>, ApiError> {
    let Path(user) = user?;
    let Query(query) = query?;
    let users = users(&state)?;
    let wanted = query.mechanism.as_deref().map(mechanism).transpose()?;
    let name = user.clone();
    let removed = blocking(move || users.remove(&name, wanted).map_err(refused)).await?;
    if removed.is_empty() {
        let what = wanted.map_or_else(String::new, |m| format!(" for {}", m.name()));
        return Err(ApiError::not_found(
            "user_not_found",
            format!("user {user:?} has no credential{what}"),
        ));
    }
    Ok(Json(json!({ "name": user, "removed": removed })))
}

fn mechanism(name: &str) -> Result<ScramMechanism, ApiError> {
    ScramMechanism::parse(name).ok_or_else(|| {
        ApiError::bad_request(format!(
            "unknown mechanism {name:?}: use SCRAM-SHA-256 or SCRAM-SHA-512 (PLAIN logins are \
             checked against the SCRAM credential)"
        ))
    })
}

fn refused(e: UserError) -> ApiError {
    match e {
        UserError::Store(e) => ApiError::internal(e),
        UserError::Random(e) => ApiError::internal(e),
        other => ApiError::bad_request(other.to_string()),
    }
}
