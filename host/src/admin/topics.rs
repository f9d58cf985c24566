//! `/v1/topics`: the catalog the host serves in Metadata (list, show, create, add partitions,
//! delete). The same rules as Kafka's CreateTopics / CreatePartitions / DeleteTopics apply,
//! because the same [`crate::catalog::Catalog`] enforces them; groups subscribed to a topic
//! whose partition count changes rebalance on their own.
//!
//! Proxy mode: the topics are the upstream cluster's. Create and add partitions go to the
//! cluster (through the host's client of it) and, once it agreed, into the mirror catalog, so
//! the host serves them at once (its next read of the upstream's Metadata confirms them).
//! Deleting is the cluster's business: refused here.

use assignor_sdk::Topic;
use axum::extract::rejection::PathRejection;
use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::routing::{get, post};
use axum::{Json, Router};
use kafka_protocol::error::ResponseError;
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

use super::error::ApiError;
use super::extract::JsonBody;
use super::state::{AdminState, blocking};
use crate::catalog::NewTopic;
use crate::upstream::client::ClientError;

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
    if let Some(upstream) = &state.upstream {
        if !body.racks.is_empty() {
            return Err(ApiError::bad_request(
                "in proxy mode the racks are the cluster's brokers' racks; create without racks",
            ));
        }
        let count = body
            .partitions
            .unwrap_or(catalog.settings().default_partitions);
        let code = upstream
            .create_topic(&body.name, count, -1)
            .await
            .map_err(upstream_unavailable)?;
        upstream_code(code, &body.name)?;
        let topic = mirror_one(&catalog, &body.name, count);
        return Ok((StatusCode::CREATED, Json(topic.into())));
    }
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
    if let Some(upstream) = &state.upstream {
        let code = upstream
            .create_partitions(&topic, body.count)
            .await
            .map_err(upstream_unavailable)?;
        upstream_code(code, &topic)?;
        return Ok(Json(mirror_one(&catalog, &topic, body.count).into()));
    }
    let topic = blocking(move || Ok(catalog.create_partitions(&topic, body.count, false)?)).await?;
    Ok(Json(topic.into()))
}

async fn delete(
    State(state): State<AdminState>,
    topic: TopicName,
) -> Result<Json<TopicView>, ApiError> {
    let Path(topic) = topic?;
    if state.upstream.is_some() {
        return Err(ApiError::bad_request(format!(
            "in proxy mode topics are the cluster's: delete {topic} on the cluster itself"
        )));
    }
    let catalog = state.catalog.clone();
    let topic = blocking(move || Ok(catalog.delete(&topic)?)).await?;
    Ok(Json(topic.into()))
}

/// Proxy mode: `name` with `count` partitions into the mirror catalog, as the cluster now has
/// it (racks unknown until the next read of the upstream's Metadata, which replaces it).
fn mirror_one(catalog: &crate::catalog::Catalog, name: &str, count: i32) -> Topic {
    let topic = Topic {
        name: name.to_owned(),
        partition_count: count,
        ..Topic::default()
    };
    let mut topics: Vec<Topic> = catalog
        .topics()
        .values()
        .filter(|t| t.name != name)
        .cloned()
        .collect();
    topics.push(topic.clone());
    catalog.mirror_topics(topics);
    topic
}

/// The cluster did not answer (a retriable condition for the operator), or refused the call.
fn upstream_unavailable(e: ClientError) -> ApiError {
    match e.kafka_code() {
        Some(code) => upstream_code(code, "").unwrap_err(),
        None => ApiError::new(
            StatusCode::BAD_GATEWAY,
            "upstream_unavailable",
            e.to_string(),
        ),
    }
}

/// The cluster's Kafka error code for a topic, as the API's error (0: done).
fn upstream_code(code: i16, topic: &str) -> Result<(), ApiError> {
    if code == 0 {
        return Ok(());
    }
    let error = ResponseError::try_from_code(code);
    let name = error.map_or_else(|| format!("error {code}"), |e| format!("{e:?}"));
    let message = format!("the upstream cluster refused {topic}: {name} ({code})");
    Err(match error {
        Some(ResponseError::TopicAlreadyExists) => {
            ApiError::new(StatusCode::CONFLICT, "topic_exists", message)
        }
        Some(ResponseError::UnknownTopicOrPartition) => {
            ApiError::not_found("topic_not_found", message)
        }
        Some(ResponseError::InvalidTopicException) => {
            ApiError::new(StatusCode::BAD_REQUEST, "invalid_topic", message)
        }
        Some(ResponseError::InvalidPartitions) => {
            ApiError::new(StatusCode::BAD_REQUEST, "invalid_partitions", message)
        }
        _ => ApiError::new(StatusCode::BAD_GATEWAY, "upstream_refused", message),
    })
}
