//! `/v1/groups`: list, describe (members, assignment, strategy and module version, last
//! assignor run, recent rebalances), set the operator configuration (strategy override,
//! optionally pinned to a module version, parameters, rebalance stabilisation), trigger a
//! rebalance.
//!
//! In a cluster of hosts, describing a group another node coordinates is answered by that
//! node (`forward.rs`); a configuration change goes through the cluster's module log.
//!
//! A configuration change applies at the group's next rebalance; only
//! `POST .../rebalance` starts one.

use std::collections::BTreeMap;

use axum::extract::rejection::PathRejection;
use axum::extract::{Path, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post, put};
use axum::{Json, Router};
use serde::Deserialize;
use serde_json::{Value, json};

use super::error::ApiError;
use super::extract::JsonBody;
use super::state::AdminState;
use crate::coordinator::{GroupConfig, RebalanceReason};

pub fn routes() -> Router<AdminState> {
    Router::new()
        .route("/v1/groups", get(list))
        .route("/v1/groups/{group}", get(describe))
        .route("/v1/groups/{group}/config", put(set_config))
        .route("/v1/groups/{group}/rebalance", post(rebalance))
}

type Group = Result<Path<String>, PathRejection>;

async fn list(State(state): State<AdminState>) -> Result<Json<Value>, ApiError> {
    let groups = state.driver.groups().await;
    Ok(Json(json!({ "groups": groups })))
}

/// The group's detail, with its partitions' committed offsets, ends and lag (`offsets`).
/// One group; in a cluster of hosts, answered by the node that coordinates it
/// (`forward.rs`).
async fn describe(
    State(state): State<AdminState>,
    headers: HeaderMap,
    group: Group,
) -> Result<Response, ApiError> {
    let Path(group) = group?;
    let Some(detail) = state.driver.describe(&group).await else {
        let path = ["v1", "groups", group.as_str()];
        return match super::forward::to_owner(&state, &headers, &group, &path).await? {
            Some(answer) => Ok(answer),
            None => Err(unknown_group(&group)),
        };
    };
    let offsets = super::lag::offsets(&state, &detail).await?;
    let mut value = serde_json::to_value(&detail).map_err(|e| ApiError::internal(e.to_string()))?;
    value["offsets"] =
        serde_json::to_value(offsets).map_err(|e| ApiError::internal(e.to_string()))?;
    Ok(Json(value).into_response())
}

/// `PUT /v1/groups/{group}/config`: the whole configuration (absent fields clear).
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct ConfigBody {
    /// Strategy (module) computing this group's assignment instead of the members' vote.
    strategy: Option<String>,
    /// Run this version of `strategy` instead of its active one.
    pinned_version: Option<u32>,
    #[serde(default)]
    params: BTreeMap<String, String>,
    /// Rebalance stabilisation: defer a Stable group's rebalance until membership has been
    /// quiet this long.
    stabilize_ms: Option<u64>,
    /// The longest the deferral may last from the first change (default 5 x `stabilize_ms`).
    stabilize_max_ms: Option<u64>,
}

#[tracing::instrument(skip_all, fields(group, module, version))]
async fn set_config(
    State(state): State<AdminState>,
    group: Group,
    JsonBody(body): JsonBody<ConfigBody>,
) -> Result<Json<Value>, ApiError> {
    let Path(group) = group?;
    let span = tracing::Span::current();
    span.record("group", group.as_str());
    let driver = state.driver;
    let mut strategy = body.strategy;
    if let Some(name) = &strategy {
        span.record("module", name.as_str());
        // Refuse an unknown module or version now, not at the next rebalance.
        let module = state
            .registry
            .resolve(name, body.pinned_version)
            .map_err(|e| ApiError::not_found(not_found_code(&e), e.to_string()))?;
        if let Some(version) = body.pinned_version {
            span.record("version", version);
        }
        // An alias is stored as the module it stands for (as the coordinator does).
        strategy = Some(module.name.clone());
        // Parameters the module refuses are refused now, with its message
        // (`registry::params` says how they are tried).
        if !body.params.is_empty() {
            let registry = state.registry.clone();
            let params = body.params.clone();
            let shown = module.name.clone();
            let verdict =
                tokio::task::spawn_blocking(move || registry.try_params(&module, &params))
                    .await
                    .map_err(|e| ApiError::internal(format!("the parameter trial failed: {e}")))?;
            if let Err(message) = verdict {
                return Err(ApiError::new(
                    StatusCode::UNPROCESSABLE_ENTITY,
                    "bad_params",
                    format!("{shown} refuses these parameters: {message}"),
                ));
            }
        }
    }
    let config = GroupConfig {
        strategy,
        pinned_version: body.pinned_version,
        params: body.params,
        stabilize_ms: body.stabilize_ms,
        stabilize_max_ms: body.stabilize_max_ms,
    };
    match state.mode.module_log() {
        // A cluster: every node applies it from the module log, this one before answering.
        Some(log) => {
            crate::coordinator::check_group_config(&config)?;
            log.set_group_config(&group, config.clone()).await?;
        }
        None => driver.set_group_config(&group, config.clone()).await?,
    }
    tracing::info!("group configuration set");
    Ok(Json(json!({
        "group_id": group,
        "config": config,
        "applies": "at the group's next rebalance",
    })))
}

fn not_found_code(e: &crate::registry::RunError) -> &'static str {
    match e.kind {
        crate::registry::RunErrorKind::VersionNotFound => "version_not_found",
        _ => "module_not_found",
    }
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct RebalanceBody {
    /// Why, for the group's history and the logs.
    reason: Option<String>,
}

#[tracing::instrument(skip_all, fields(group))]
async fn rebalance(
    State(state): State<AdminState>,
    group: Group,
    JsonBody(body): JsonBody<Option<RebalanceBody>>,
) -> Result<(StatusCode, Json<Value>), ApiError> {
    let Path(group) = group?;
    tracing::Span::current().record("group", group.as_str());
    let why = body.and_then(|b| b.reason);
    let reason = RebalanceReason::Operator { why: why.clone() }.to_string();
    state.driver.trigger_rebalance(&group, why).await?;
    tracing::info!(%reason, "rebalance triggered");
    Ok((
        StatusCode::ACCEPTED,
        Json(json!({
            "group_id": group,
            "reason": reason,
            "status": "members rejoin after their next heartbeat",
        })),
    ))
}

pub(super) fn unknown_group(group: &str) -> ApiError {
    ApiError::not_found(
        "group_not_found",
        format!("group {group} does not exist on this host"),
    )
}
