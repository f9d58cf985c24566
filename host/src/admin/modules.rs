//! `/v1/modules`: list, upload, show, versions, activate, roll back, delete, status.
//!
//! A module name is the protocol name consumers propose; a client alias (kafkajs's
//! `RoundRobinAssigner`) resolves to its canonical module everywhere but in uploads. A new
//! version applies at each group's next rebalance; nothing here forces one.

use assignor_sdk::{AssignorInfo, RebalanceProtocol};
use axum::extract::rejection::{PathRejection, QueryRejection};
use axum::extract::{DefaultBodyLimit, Path, Query, State};
use axum::http::StatusCode;
use axum::routing::{get, post, put};
use axum::{Json, Router};
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

use super::error::ApiError;
use super::extract::{JsonBody, WasmBody, parse_version};
use super::state::{AdminState, blocking};
use crate::registry::{ModuleStatus, ModuleSummary, UploadOptions, VersionInfo};
use crate::simulate::Usage;

pub fn routes(max_module_bytes: usize) -> Router<AdminState> {
    Router::new()
        .route("/v1/modules", get(list))
        .route(
            "/v1/modules/{name}",
            put(upload)
                .layer(DefaultBodyLimit::max(max_module_bytes))
                .get(show)
                .delete(delete_module),
        )
        .route("/v1/modules/{name}/versions", get(versions))
        .route(
            "/v1/modules/{name}/versions/{version}",
            get(version).delete(delete_version),
        )
        .route("/v1/modules/{name}/activate", post(activate))
        .route("/v1/modules/{name}/rollback", post(rollback))
        .route("/v1/modules/{name}/status", get(status))
}

type Name = Result<Path<String>, PathRejection>;
type NameAndVersion = Result<Path<(String, String)>, PathRejection>;

async fn list(State(state): State<AdminState>) -> Json<Value> {
    Json(json!({ "modules": state.registry.list() }))
}

/// `PUT /v1/modules/{name}?sha256=HEX&activate=false`.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct UploadQuery {
    sha256: Option<String>,
    activate: Option<bool>,
}

/// An accepted upload.
#[derive(Debug, Serialize)]
struct Uploaded {
    name: String,
    version: u32,
    sha256: String,
    /// False when identical bytes were already a version of this name (it was reused).
    created: bool,
    active: bool,
    info: AssignorInfo,
    /// The smoke call's usage (none when an existing version was reused).
    smoke: Option<Usage>,
    /// Upload to active: checks, compile, smoke call, persist and swap.
    duration_us: u64,
}

#[tracing::instrument(skip_all, fields(module))]
async fn upload(
    State(state): State<AdminState>,
    name: Name,
    query: Result<Query<UploadQuery>, QueryRejection>,
    WasmBody(wasm): WasmBody,
) -> Result<(StatusCode, Json<Uploaded>), ApiError> {
    let Path(name) = name?;
    tracing::Span::current().record("module", name.as_str());
    let Query(query) = query?;
    if let Some(sha) = &query.sha256
        && (sha.len() != 64 || !sha.bytes().all(|b| b.is_ascii_hexdigit()))
    {
        return Err(ApiError::bad_request(format!(
            "sha256 `{sha}` is not 64 hex digits"
        )));
    }
    let options = UploadOptions {
        expected_sha256: query.sha256,
        activate: query.activate.unwrap_or(true),
    };
    let outcome = match state.mode.module_log() {
        Some(log) => log.upload(name, wasm.to_vec(), options).await?,
        None => {
            let registry = state.registry.clone();
            blocking(move || Ok(registry.upload(&name, &wasm, options)?)).await?
        }
    };
    let status = if outcome.created {
        StatusCode::CREATED
    } else {
        StatusCode::OK
    };
    Ok((
        status,
        Json(Uploaded {
            name: outcome.name,
            version: outcome.version,
            sha256: outcome.sha256,
            created: outcome.created,
            active: outcome.active,
            info: outcome.info,
            smoke: outcome.smoke.as_ref().map(Usage::from),
            duration_us: outcome.duration.as_micros() as u64,
        }),
    ))
}

/// One module: its summary, the active version in full, and its version numbers.
#[derive(Debug, Serialize)]
struct ModuleView {
    name: String,
    active_version: u32,
    has_builtin: bool,
    rebalance_protocol: RebalanceProtocol,
    quarantined: bool,
    versions: Vec<u32>,
    active: VersionInfo,
}

async fn show(State(state): State<AdminState>, name: Name) -> Result<Json<ModuleView>, ApiError> {
    let Path(name) = name?;
    let versions = state.registry.versions(&name)?;
    let canonical = versions[0].name.clone();
    let summary: ModuleSummary = state
        .registry
        .list()
        .into_iter()
        .find(|m| m.name == canonical)
        .ok_or_else(|| {
            ApiError::not_found("module_not_found", format!("no module named `{name}`"))
        })?;
    let active = versions
        .into_iter()
        .find(|v| v.active)
        .ok_or_else(|| ApiError::internal(format!("module `{canonical}` has no active version")))?;
    Ok(Json(ModuleView {
        name: summary.name,
        active_version: summary.active_version,
        has_builtin: summary.has_builtin,
        rebalance_protocol: summary.rebalance_protocol,
        quarantined: summary.quarantined,
        versions: summary.versions,
        active,
    }))
}

async fn versions(State(state): State<AdminState>, name: Name) -> Result<Json<Value>, ApiError> {
    let Path(name) = name?;
    let versions = state.registry.versions(&name)?;
    Ok(Json(
        json!({ "name": versions[0].name, "versions": versions }),
    ))
}

async fn version(
    State(state): State<AdminState>,
    path: NameAndVersion,
) -> Result<Json<VersionInfo>, ApiError> {
    let Path((name, version)) = path?;
    let number = parse_version(&version)?;
    let versions = state.registry.versions(&name)?;
    let canonical = versions[0].name.clone();
    versions
        .into_iter()
        .find(|v| v.version == number)
        .map(Json)
        .ok_or_else(|| {
            ApiError::not_found(
                "version_not_found",
                format!("module `{canonical}` has no version {number}"),
            )
        })
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct ActivateBody {
    version: u32,
}

#[tracing::instrument(skip_all, fields(module, version))]
async fn activate(
    State(state): State<AdminState>,
    name: Name,
    JsonBody(body): JsonBody<ActivateBody>,
) -> Result<Json<Value>, ApiError> {
    let Path(name) = name?;
    let span = tracing::Span::current();
    span.record("module", name.as_str());
    span.record("version", body.version);
    let canonical = match state.mode.module_log() {
        Some(log) => log.activate(&name, body.version).await?,
        None => {
            let registry = state.registry.clone();
            blocking(move || {
                registry.activate(&name, body.version)?;
                Ok(registry.versions(&name)?[0].name.clone())
            })
            .await?
        }
    };
    Ok(Json(
        json!({ "name": canonical, "active_version": body.version }),
    ))
}

#[tracing::instrument(skip_all, fields(module))]
async fn rollback(State(state): State<AdminState>, name: Name) -> Result<Json<Value>, ApiError> {
    let Path(name) = name?;
    tracing::Span::current().record("module", name.as_str());
    let (canonical, version) = match state.mode.module_log() {
        Some(log) => log.rollback(&name).await?,
        None => {
            let registry = state.registry.clone();
            blocking(move || {
                let version = registry.rollback(&name)?;
                Ok((registry.versions(&name)?[0].name.clone(), version))
            })
            .await?
        }
    };
    Ok(Json(
        json!({ "name": canonical, "active_version": version }),
    ))
}

#[tracing::instrument(skip_all, fields(module))]
async fn delete_module(
    State(state): State<AdminState>,
    name: Name,
) -> Result<Json<Value>, ApiError> {
    let Path(name) = name?;
    tracing::Span::current().record("module", name.as_str());
    let outcome = match state.mode.module_log() {
        Some(log) => log.delete(&name).await?,
        None => {
            let registry = state.registry.clone();
            blocking(move || Ok(registry.delete(&name)?)).await?
        }
    };
    Ok(Json(json!(outcome)))
}

#[tracing::instrument(skip_all, fields(module, version))]
async fn delete_version(
    State(state): State<AdminState>,
    path: NameAndVersion,
) -> Result<Json<Value>, ApiError> {
    let Path((name, version)) = path?;
    let number = parse_version(&version)?;
    let span = tracing::Span::current();
    span.record("module", name.as_str());
    span.record("version", number);
    let canonical = match state.mode.module_log() {
        Some(log) => log.delete_version(&name, number).await?,
        None => {
            let registry = state.registry.clone();
            blocking(move || {
                let canonical = registry.versions(&name)?[0].name.clone();
                registry.delete_version(&name, number)?;
                Ok(canonical)
            })
            .await?
        }
    };
    Ok(Json(
        json!({ "name": canonical, "deleted_version": number }),
    ))
}

/// Health of every version: counters, failures by reason, recent failures, quarantine.
async fn status(
    State(state): State<AdminState>,
    name: Name,
) -> Result<Json<ModuleStatus>, ApiError> {
    let Path(name) = name?;
    Ok(Json(state.registry.status(&name)?))
}
