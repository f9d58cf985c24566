//! `POST /v1/simulate`: run a module version on a scenario or on a live group's current
//! members, and answer the assignment, balance and movement against the current assignment.
//! Nothing is applied, and the version's health counters are untouched (a simulation is not a
//! rebalance), so an operator can try a version before activating it.

use axum::extract::State;
use axum::http::StatusCode;
use axum::routing::post;
use axum::{Json, Router};
use serde::Deserialize;
use serde_json::json;

use super::error::ApiError;
use super::extract::JsonBody;
use super::groups::unknown_group;
use super::state::{AdminState, blocking};
use crate::registry::RunErrorKind;
use crate::simulate::{Scenario, SimulateError, SimulationReport, simulate};

pub fn routes() -> Router<AdminState> {
    Router::new().route("/v1/simulate", post(run))
}

/// Exactly one of `group` and `scenario`.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct SimulateBody {
    /// Module name (or alias). With `group` it may be left out: the group's current strategy.
    module: Option<String>,
    /// A version of the module; default the active one.
    version: Option<u32>,
    /// A live group: its current members, subscriptions, assignment and parameters.
    group: Option<String>,
    /// A scenario (the file format of `assignor-host simulate --scenario`).
    scenario: Option<Scenario>,
}

#[tracing::instrument(skip_all, fields(group, module, version))]
async fn run(
    State(state): State<AdminState>,
    JsonBody(body): JsonBody<SimulateBody>,
) -> Result<Json<SimulationReport>, ApiError> {
    let span = tracing::Span::current();
    let (module_name, request) = match (body.group, body.scenario) {
        (Some(group), None) => {
            span.record("group", group.as_str());
            let driver = state.driver;
            let detail = driver
                .describe(&group)
                .await
                .ok_or_else(|| unknown_group(&group))?;
            if detail.members.is_empty() {
                return Err(ApiError::new(
                    StatusCode::CONFLICT,
                    "group_empty",
                    format!("group {group} has no members to simulate an assignment for"),
                ));
            }
            let module = body.module.or(detail.strategy).ok_or_else(|| {
                ApiError::bad_request(format!(
                    "group {group} has no host-side strategy; name the module to simulate"
                ))
            })?;
            let request = driver
                .assign_request(&group, &module)
                .await
                .ok_or_else(|| unknown_group(&group))?;
            (module, request)
        }
        (None, Some(scenario)) => {
            let module = body
                .module
                .ok_or_else(|| ApiError::bad_request("name the module to simulate"))?;
            let request = scenario
                .to_request(&module)
                .map_err(|e| ApiError::bad_request(e.to_string()))?;
            (module, request)
        }
        _ => {
            return Err(ApiError::bad_request(
                "give exactly one of `group` (a live group) and `scenario`",
            ));
        }
    };
    span.record("module", module_name.as_str());
    let version = state
        .registry
        .resolve(&module_name, body.version)
        .map_err(|e| match e.kind {
            RunErrorKind::VersionNotFound => {
                ApiError::not_found("version_not_found", e.to_string())
            }
            _ => ApiError::not_found("module_not_found", e.to_string()),
        })?;
    span.record("version", version.version);
    let sandbox = state.registry.sandbox().clone();
    let report = blocking(move || {
        simulate(
            &sandbox,
            version.compiled(),
            &version.name,
            Some(version.version),
            &request,
        )
        .map_err(simulation_failed)
    })
    .await?;
    Ok(Json(report))
}

fn simulation_failed(e: SimulateError) -> ApiError {
    let message = e.to_string();
    match e {
        SimulateError::Call(failed) => ApiError::new(
            StatusCode::UNPROCESSABLE_ENTITY,
            "simulation_failed",
            message,
        )
        .with_detail(json!({
            "reason": failed.error.reason(),
            "usage": failed.usage,
            "logs": failed.logs,
        })),
        SimulateError::Scenario(_) => ApiError::bad_request(message),
        _ => ApiError::internal(message),
    }
}
