//! `/v1/topics`: the catalog the host serves in Metadata (list, show, create, add partitions,
//! delete). The same rules as Kafka's CreateTopics / CreatePartitions / DeleteTopics apply,
//! because the same [`crate::catalog::Catalog`] enforces them; groups subscribed to a topic
//! whose partition count changes rebalance on their own.
//!
//! In proxy mode the topics are the upstream cluster's: listing shows what the host last read
//! of its Metadata, creating a topic or adding partitions asks the cluster (with its own
//! rules and defaults, replica placement included) and answers once the catalog shows the
//! change, and deleting is refused (delete a topic on the cluster, not through the host).

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
    if let Some(upstream) = state.mode.upstream() {
        if !body.racks.is_empty() {
            return Err(ApiError::bad_request(
                "in proxy mode the cluster places the replicas; create the topic without racks",
            ));
        }
        // -1: the cluster's default partition count and replication factor (KIP-464).
        let partitions = body.partitions.unwrap_or(-1);
        let code = upstream
            .client
            .create_topic(&body.name, partitions, -1)
            .await
            .map_err(upstream_error)?;
        refused_by_cluster(code, &body.name)?;
        let topic = shown(&state, upstream, &body.name, |t| {
            partitions < 0 || t.partition_count == partitions
        })
        .await?;
        return Ok((StatusCode::CREATED, Json(topic.into())));
    }
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
    if let Some(upstream) = state.mode.upstream() {
        let code = upstream
            .client
            .create_partitions(&topic, body.count)
            .await
            .map_err(upstream_error)?;
        refused_by_cluster(code, &topic)?;
        let shown = shown(&state, upstream, &topic, |t| {
            t.partition_count >= body.count
        })
        .await?;
        return Ok(Json(shown.into()));
    }
    let catalog = state.catalog.clone();
    let topic = blocking(move || Ok(catalog.create_partitions(&topic, body.count, false)?)).await?;
    Ok(Json(topic.into()))
}

async fn delete(
    State(state): State<AdminState>,
    topic: TopicName,
) -> Result<Json<TopicView>, ApiError> {
    let Path(topic) = topic?;
    if state.mode.upstream().is_some() {
        return Err(ApiError::new(
            StatusCode::METHOD_NOT_ALLOWED,
            "upstream_topic",
            format!(
                "{topic} is the upstream cluster's topic; delete it on the cluster, not through \
                 the host"
            ),
        ));
    }
    let catalog = state.catalog.clone();
    let topic = blocking(move || Ok(catalog.delete(&topic)?)).await?;
    Ok(Json(topic.into()))
}

fn upstream_error(e: crate::upstream::client::ClientError) -> ApiError {
    ApiError::new(
        StatusCode::BAD_GATEWAY,
        "upstream_unavailable",
        format!("the upstream cluster did not answer: {e}"),
    )
}

/// The cluster's refusal of a topic change, as the status Kafka's meaning suggests.
fn refused_by_cluster(code: i16, topic: &str) -> Result<(), ApiError> {
    use kafka_protocol::ResponseError as E;
    let status = match code {
        0 => return Ok(()),
        c if c == E::TopicAlreadyExists.code() => StatusCode::CONFLICT,
        c if c == E::UnknownTopicOrPartition.code() => StatusCode::NOT_FOUND,
        c if [
            E::InvalidTopicException.code(),
            E::InvalidPartitions.code(),
            E::InvalidReplicationFactor.code(),
            E::InvalidConfig.code(),
        ]
        .contains(&c) =>
        {
            StatusCode::BAD_REQUEST
        }
        _ => StatusCode::BAD_GATEWAY,
    };
    let name = crate::metrics::error_name(code);
    Err(ApiError::new(
        status,
        "refused_by_cluster",
        format!("the upstream cluster refused the change of {topic}: {name}"),
    ))
}

/// The topic as the catalog shows it once `done` holds, after asking for a read of the
/// upstream's topics; a 504 if the read does not show it within the upstream timeout.
async fn shown(
    state: &AdminState,
    upstream: &super::state::AdminUpstream,
    name: &str,
    done: impl Fn(&Topic) -> bool,
) -> Result<Topic, ApiError> {
    let mut topics = state.catalog.subscribe();
    (upstream.reread_topics)();
    let wait = async {
        loop {
            if let Some(topic) = topics.borrow_and_update().get(name).filter(|t| done(t)) {
                return topic.clone();
            }
            if topics.changed().await.is_err() {
                std::future::pending::<()>().await;
            }
        }
    };
    tokio::time::timeout(upstream.timeout, wait)
        .await
        .map_err(|_| {
            ApiError::new(
                StatusCode::GATEWAY_TIMEOUT,
                "not_yet_visible",
                format!(
                    "the cluster took the change of {name}, but the host's read of its topics did \
                 not show it within {:?}; it appears at the next read",
                    upstream.timeout
                ),
            )
        })
}
