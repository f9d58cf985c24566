//! `GET /v1/cluster`: in a cluster of host nodes, this node (its id, endpoint, held shards and
//! lease) and every node of the node group as this node read it last, with their shards and
//! whether their endpoint answers. A node that is not one of a cluster answers 404.

use axum::Router;
use axum::extract::State;
use axum::routing::get;

use super::error::ApiError;
use super::state::AdminState;
use crate::cluster::OwnershipStatus;

pub(super) fn routes() -> Router<AdminState> {
    Router::new().route("/v1/cluster", get(show))
}

async fn show(State(state): State<AdminState>) -> Result<axum::Json<OwnershipStatus>, ApiError> {
    match state.mode.cluster() {
        Some(ownership) => Ok(axum::Json(ownership.status())),
        None => Err(ApiError::not_found(
            "not_clustered",
            "this node is not one of a cluster of host nodes (serve --upstream HOST:PORT \
             --cluster NAME)",
        )),
    }
}
