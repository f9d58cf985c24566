//! `/v1/acls`: standalone's ACLs (`crate::acls`; Kafka's CreateAcls, DescribeAcls and
//! DeleteAcls, by HTTP). A binding is Kafka's: `resource_type` (`topic`, `group`, `cluster`,
//! `transactional_id`), `resource_name`, `pattern_type` (`literal`, `prefixed`), `principal`
//! (`User:alice`, `User:*`), `host` (an address or `*`, the default), `operation` and
//! `permission` (`allow`, `deny`). In proxy mode the cluster's ACLs decide, managed there.

use axum::http::StatusCode;
use axum::routing::get;
use axum::{Json, Router, extract::State};
use serde_json::{Value, json};

use super::error::ApiError;
use super::extract::JsonBody;
use super::state::{AdminState, blocking};
use crate::acls::{AclBinding, AclError, Acls};

pub fn routes() -> Router<AdminState> {
    Router::new().route("/v1/acls", get(list).post(add).delete(remove))
}

fn acls(state: &AdminState) -> Result<std::sync::Arc<Acls>, ApiError> {
    state.mode.acls().cloned().ok_or_else(|| {
        ApiError::new(
            StatusCode::CONFLICT,
            "acls_are_upstream",
            "in proxy mode the cluster's ACLs decide: manage them there (kafka-acls)",
        )
    })
}

async fn list(State(state): State<AdminState>) -> Result<Json<Value>, ApiError> {
    Ok(Json(json!({ "acls": acls(&state)?.list() })))
}

/// `{"acls": [binding, ...]}`: all are checked before any is added.
#[derive(Debug, serde::Deserialize)]
#[serde(deny_unknown_fields)]
struct Bindings {
    acls: Vec<AclBinding>,
}

async fn add(
    State(state): State<AdminState>,
    JsonBody(body): JsonBody<Bindings>,
) -> Result<(StatusCode, Json<Value>), ApiError> {
    let acls = acls(&state)?;
    let asked = body.acls.len();
    let added = blocking(move || acls.add(&body.acls).map_err(refused)).await?;
    Ok((
        StatusCode::CREATED,
        Json(json!({ "added": added, "present": asked - added })),
    ))
}

async fn remove(
    State(state): State<AdminState>,
    JsonBody(body): JsonBody<Bindings>,
) -> Result<Json<Value>, ApiError> {
    let acls = acls(&state)?;
    let removed = blocking(move || acls.remove(&body.acls).map_err(refused)).await?;
    if removed.is_empty() {
        return Err(ApiError::not_found(
            "acl_not_found",
            "none of these ACLs exists (a binding is removed only when every field matches)",
        ));
    }
    Ok(Json(json!({ "removed": removed })))
}

fn refused(e: AclError) -> ApiError {
    match e {
        AclError::Invalid(why) => ApiError::bad_request(why),
        AclError::Store(why) => ApiError::internal(why),
    }
}
