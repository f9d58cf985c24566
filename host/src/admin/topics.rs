//! `/v1/topics`: the catalog the host serves in Metadata (list, show, create, add partitions,
//! delete). The same rules as Kafka's CreateTopics / CreatePartitions / DeleteTopics apply,
//! because the same [`crate::catalog::Catalog`] enforces them; groups subscribed to a topic
//! whose partition count changes rebalance on their own.

use assignor_sdk::Topic;
use axum::extract::rejection::PathRejection;
use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::routing::{get, post};
use axum::{Json, Router};
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

use super::error::ApiError;
use super::extract::JsonBody;
use super::state::{AdminState, blocking};
use crate::catalog::NewTopic;

pub fn routes() -> Router<AdminState> {
    Router::new()
        .route("/v1/topics", get(list).post(create))
        .route("/v1/topics/{topic}", get(show).delete(delete))
        .route("/v1/topics/{topic}/partitions", post(add_partitions))
}

type TopicName = Result<Path<String>, PathRejection>;

/// A topic as the API shows it.
#[derive(Debug, Serialize)]
struct TopicView {
    name: String,
    partitions: i32,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    racks: Vec<Vec<String>>,
}

impl From<Topic> for TopicView {
    fn from(t: Topic) -> TopicView {
        TopicView {
            name: t.name,
            partitions: t.partition_count,
            racks: t.partition_racks,
        }
    }
}

async fn list(State(state): State<AdminState>) -> Json<Value> {
    let topics: Vec<TopicView> = state
        .catalog
        .topics()
        .values()
        .cloned()
        .map(TopicView::from)
        .collect();
    Json(json!({ "topics": topics }))
}

async fn show(
    State(state): State<AdminState>,
    topic: TopicName,
) -> Result<Json<TopicView>, ApiError> {
    let Path(topic) = topic?;
    state
        .catalog
        .topic(&topic)
        .map(|t| Json(t.into()))
        .ok_or_else(|| {
            ApiError::not_found(
                "topic_not_found",
                format!("topic {topic} is not in this host's catalog"),
            )
        })
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct CreateBody {
    name: String,
    /// Default: `catalog.default_partitions`.
    partitions: Option<i32>,
    /// Replica racks per partition: none, or one list per partition.
    #[serde(default)]
    racks: Vec<Vec<String>>,
}

async fn create(
    State(state): State<AdminState>,
    JsonBody(body): JsonBody<CreateBody>,
) -> Result<(StatusCode, Json<TopicView>), ApiError> {
    let catalog = state.catalog.clone();
    let new = NewTopic {
        name: body.name,
        partitions: body.partitions,
        partition_racks: body.racks,
    };
    let topic = blocking(move || Ok(catalog.create(new, false)?)).await?;
    Ok((StatusCode::CREATED, Json(topic.into())))
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct PartitionsBody {
    /// The new total partition count (only increases).
    count: i32,
}

async fn add_partitions(
    State(state): State<AdminState>,
    topic: TopicName,
    JsonBody(body): JsonBody<PartitionsBody>,
) -> Result<Json<TopicView>, ApiError> {
    let Path(topic) = topic?;
    let catalog = state.catalog.clone();
    let topic = blocking(move || Ok(catalog.create_partitions(&topic, body.count, false)?)).await?;
    Ok(Json(topic.into()))
}

async fn delete(
    State(state): State<AdminState>,
    topic: TopicName,
) -> Result<Json<TopicView>, ApiError> {
    let Path(topic) = topic?;
    let catalog = state.catalog.clone();
    let topic = blocking(move || Ok(catalog.delete(&topic)?)).await?;
    Ok(Json(topic.into()))
}
