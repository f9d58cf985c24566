//! Metadata (key 3): the host is the only broker of its cluster, the controller, and the leader
//! and only replica of every partition in the catalog.
//!
//! Choices that keep every client on its plainest path (reference/real-clients.md 4.2):
//! `leader_epoch` is -1 (librdkafka then skips offset validation and the Python clients skip
//! KIP-320 truncation checks). Topic ids (the catalog's, never zero) are reported from v10,
//! where the field exists, and a topic asked for with a non-zero id is looked up by it from v12
//! ("supports topic Id"; v10 and v11 must not use the field), whatever its name says, as Kafka
//! does (`KafkaApis.handleTopicMetadataRequest`): librdkafka sends a null name with the id, the
//! Java client an empty one (`MetadataRequest.Builder.forTopicIds`, which it uses for a
//! broker-side regex's topics). An unknown id is UNKNOWN_TOPIC_ID with a null name. The
//! consumer protocol (KIP-848) names topics only by id, so consumers resolve its assignments
//! here; librdkafka asserts on a Metadata max of 10 or 11, and the host advertises 13. Fetch
//! stays at v12, where topics travel by name. An unknown topic name is
//! UNKNOWN_TOPIC_OR_PARTITION, unless `catalog.auto_create_topics` is on and the request allows
//! auto-creation (always implied below v4, as in Kafka): then it is created with
//! `catalog.default_partitions` and returned ready, since the host has no leader to elect.
//!
//! Authorization, as `KafkaApis.handleTopicMetadataRequest`: the list of every topic leaves
//! out those the client may not DESCRIBE; a topic named (or asked by id) that it may not
//! DESCRIBE is TOPIC_AUTHORIZATION_FAILED with no partitions (by id: no name, as Kafka); and an
//! unknown name is auto-created only with CREATE on the cluster or the topic, else
//! TOPIC_AUTHORIZATION_FAILED.

use kafka_protocol::error::ResponseError;
use kafka_protocol::messages::metadata_response::{
    MetadataResponseBroker, MetadataResponsePartition, MetadataResponseTopic,
};
use kafka_protocol::messages::{BrokerId, MetadataRequest, MetadataResponse, TopicName};
use kafka_protocol::protocol::StrBytes;

use super::proxy::authorize::{Operation, Resource, Right};
use super::{Broker, Client, Node};
use crate::catalog::{CatalogError, NewTopic};
use assignor_sdk::Topic;
use uuid::Uuid;

use crate::acls::{CLUSTER_NAME, ResourceType};

pub fn handle(
    broker: &Broker,
    client: &Client,
    request: MetadataRequest,
    version: i16,
) -> MetadataResponse {
    let all = match &request.topics {
        None => true,
        Some(topics) => topics.is_empty() && version == 0,
    };
    // Below v4 the field does not exist and Kafka treats it as true.
    let may_create = version < 4 || request.allow_auto_topic_creation;
    let with_ops = version >= 8 && request.include_topic_authorized_operations;

    let shape = Shape { version };
    let mut topics = Vec::new();
    if all {
        let catalog = broker.catalog.topics();
        for topic in catalog.values() {
            if !client.allows(&Right::describe_topic(&topic.name)) {
                continue;
            }
            topics.push(described(
                &broker.node,
                topic,
                catalog.id(&topic.name),
                shape,
            ));
        }
    } else {
        for wanted in request.topics.unwrap_or_default() {
            let by_topic_id = version >= 12 && !wanted.topic_id.is_nil();
            let answer = match wanted.name {
                Some(name) if !by_topic_id => by_name(broker, client, &name, may_create, shape),
                _ => by_id(broker, client, wanted.topic_id, shape),
            };
            topics.push(answer);
        }
    }

    if with_ops {
        for topic in topics.iter_mut().filter(|t| t.error_code == 0) {
            let name = topic.name.as_ref().map_or("", |n| n.as_str());
            topic.topic_authorized_operations =
                client.authorized_operations(ResourceType::Topic, name);
        }
    }

    let node = &broker.node;
    let mut response = MetadataResponse::default()
        .with_brokers(vec![
            MetadataResponseBroker::default()
                .with_node_id(BrokerId(node.node_id))
                .with_host(StrBytes::from_string(node.host.clone()))
                .with_port(node.port),
        ])
        .with_cluster_id(Some(StrBytes::from_string(broker.cluster_id.clone())))
        .with_controller_id(BrokerId(node.node_id))
        .with_topics(topics);
    if (8..=10).contains(&version) && request.include_cluster_authorized_operations {
        response.cluster_authorized_operations =
            client.authorized_operations(ResourceType::Cluster, CLUSTER_NAME);
    }
    response
}

/// What shapes a topic's answer: the request's version (its operations are filled in after).
#[derive(Clone, Copy)]
struct Shape {
    version: i16,
}

/// A topic asked for by id (v12+, any name), or with a null name: v12+ resolve the id; before
/// v12 ids are not looked up.
fn by_id(broker: &Broker, client: &Client, topic_id: Uuid, shape: Shape) -> MetadataResponseTopic {
    let catalog = broker.catalog.topics();
    let found = (shape.version >= 12)
        .then(|| catalog.name_of(&topic_id))
        .flatten()
        .and_then(|name| catalog.get(name));
    match found {
        Some(topic) if !client.permits(&Right::describe_topic(&topic.name)) => {
            MetadataResponseTopic::default()
                .with_error_code(ResponseError::TopicAuthorizationFailed.code())
                .with_topic_id(topic_id)
                .with_name(None)
        }
        Some(topic) => described(&broker.node, topic, Some(topic_id), shape),
        None => MetadataResponseTopic::default()
            .with_error_code(ResponseError::UnknownTopicId.code())
            .with_topic_id(topic_id)
            .with_name((shape.version < 12).then(TopicName::default)),
    }
}

fn by_name(
    broker: &Broker,
    client: &Client,
    name: &TopicName,
    may_create: bool,
    shape: Shape,
) -> MetadataResponseTopic {
    let unknown = |code: i16| {
        MetadataResponseTopic::default()
            .with_error_code(code)
            .with_name(Some(name.clone()))
    };
    if !client.permits(&Right::describe_topic(name)) {
        return unknown(ResponseError::TopicAuthorizationFailed.code());
    }
    let catalog = broker.catalog.topics();
    if let Some(topic) = catalog.get(name.as_str()) {
        return described(&broker.node, topic, catalog.id(name), shape);
    }
    if !(may_create && broker.catalog.settings().auto_create_topics) {
        return unknown(ResponseError::UnknownTopicOrPartition.code());
    }
    let cluster_create = Right {
        operation: Operation::Create,
        resource: Resource::Cluster,
    };
    if !(client.allows(&cluster_create) || client.permits(&Right::create_topic(name))) {
        return unknown(ResponseError::TopicAuthorizationFailed.code());
    }
    let created = broker.catalog.create(
        NewTopic {
            name: name.to_string(),
            partitions: None,
            partition_racks: Vec::new(),
        },
        false,
    );
    match created {
        // Created now, or by a concurrent request between the lookup and the create.
        Ok(_) | Err(CatalogError::TopicAlreadyExists(_)) => {
            let catalog = broker.catalog.topics();
            match catalog.get(name.as_str()) {
                Some(topic) => described(&broker.node, topic, catalog.id(name), shape),
                None => unknown(ResponseError::UnknownTopicOrPartition.code()),
            }
        }
        Err(e) => {
            tracing::debug!(topic = %name.as_str(), error = %e, "auto-creation refused");
            unknown(e.error_code())
        }
    }
}

/// A topic the host serves. Its id goes in from v10, where the field exists.
fn described(node: &Node, topic: &Topic, id: Option<Uuid>, shape: Shape) -> MetadataResponseTopic {
    let leader = BrokerId(node.node_id);
    let partitions = (0..topic.partition_count)
        .map(|index| {
            MetadataResponsePartition::default()
                .with_partition_index(index)
                .with_leader_id(leader)
                .with_leader_epoch(-1)
                .with_replica_nodes(vec![leader])
                .with_isr_nodes(vec![leader])
        })
        .collect();
    let mut answer = MetadataResponseTopic::default()
        .with_name(Some(TopicName(StrBytes::from_string(topic.name.clone()))))
        .with_partitions(partitions);
    if shape.version >= 10 {
        answer.topic_id = id.unwrap_or_default();
    }
    answer
}
