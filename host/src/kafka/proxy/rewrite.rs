//! The upstream answers that name brokers, rewritten so clients only ever see this host:
//! Metadata and DescribeCluster (every broker at its port here, plus the host's coordinator
//! node, which leads no partition), FindCoordinator for transactions, and the KIP-951 leader
//! hints of Produce v10+ (`node_endpoints`; Fetch's come from v16, above the Fetch versions
//! the host passes up, `versions::FETCH_MAX`). Node ids stay as they are (clients route by
//! them); only hosts and ports change. ApiVersions is merged with the host's own
//! table (`api_versions.rs` in this folder).
//!
//! [`Addresses`] says where each upstream node is served here; a node seen for the first time
//! gets its listener before the answer naming it leaves, so a client never sees a port that
//! does not accept.

use kafka_protocol::messages::describe_cluster_response::DescribeClusterBroker;
use kafka_protocol::messages::metadata_response::MetadataResponseBroker;

use crate::coordinator::view::Topics;
use kafka_protocol::messages::{
    BrokerId, DescribeClusterResponse, FindCoordinatorResponse, MetadataResponse, ProduceResponse,
};
use kafka_protocol::protocol::StrBytes;

/// Where the host serves each upstream node, and its own coordinator node.
pub trait Addresses {
    /// The host's address of upstream node `node_id`, whose upstream address is
    /// `upstream` (`host`, `port`) as the answer being rewritten names it; `None` when the node
    /// cannot be served (no port for it), and it is then left out.
    fn node(&self, node_id: i32, upstream: (&str, i32)) -> Option<(StrBytes, i32)>;
    /// The host's coordinator node: `(node id, host, port)`.
    fn coordinator(&self) -> (i32, StrBytes, i32);
    /// In a cluster of host nodes, the other nodes' coordinators that answer: clients learn
    /// of them here, so one whose node dies can still reach the rest (kafka-python refreshes
    /// Metadata only from brokers a Metadata answer named).
    fn peers(&self) -> Vec<(i32, StrBytes, i32)> {
        Vec::new()
    }
}

/// Every broker at its address here, the coordinator node appended (it leads nothing, so
/// clients only reach it through FindCoordinator).
pub fn metadata(response: &mut MetadataResponse, addresses: &impl Addresses) {
    let upstream = std::mem::take(&mut response.brokers);
    for broker in upstream {
        let node = broker.node_id.0;
        if let Some((host, port)) = addresses.node(node, (broker.host.as_str(), broker.port)) {
            response
                .brokers
                .push(broker.with_host(host).with_port(port));
        }
    }
    let coordinators = std::iter::once(addresses.coordinator()).chain(addresses.peers());
    for (id, host, port) in coordinators {
        if !response.brokers.iter().any(|b| b.node_id.0 == id) {
            response.brokers.push(
                MetadataResponseBroker::default()
                    .with_node_id(BrokerId(id))
                    .with_host(host)
                    .with_port(port),
            );
        }
    }
}

/// Metadata v10+: each topic the catalog knows carries the catalog's topic id, whatever the
/// upstream's is (noida-db's are zero). Consumer-protocol assignments name topics by id, so
/// the clients and the coordinator must share one id per topic; the host's are stable and
/// persisted, and the upstream never sees them (by-id lookups are asked by name,
/// [`super::answer::metadata_request`], and Fetch stays at versions that name topics,
/// [`super::versions::merge`]).
pub fn topic_ids(response: &mut MetadataResponse, version: i16, topics: &Topics) {
    if version < 10 {
        return;
    }
    for topic in &mut response.topics {
        if let Some(id) = topic.name.as_ref().and_then(|n| topics.id(n)) {
            topic.topic_id = id;
        }
    }
}

/// DescribeCluster as Metadata: brokers here, the coordinator node appended.
pub fn describe_cluster(response: &mut DescribeClusterResponse, addresses: &impl Addresses) {
    let upstream = std::mem::take(&mut response.brokers);
    for broker in upstream {
        let node = broker.broker_id.0;
        if let Some((host, port)) = addresses.node(node, (broker.host.as_str(), broker.port)) {
            response
                .brokers
                .push(broker.with_host(host).with_port(port));
        }
    }
    let coordinators = std::iter::once(addresses.coordinator()).chain(addresses.peers());
    for (id, host, port) in coordinators {
        if !response.brokers.iter().any(|b| b.broker_id.0 == id) {
            response.brokers.push(
                DescribeClusterBroker::default()
                    .with_broker_id(BrokerId(id))
                    .with_host(host)
                    .with_port(port),
            );
        }
    }
}

/// FindCoordinator for transactions (groups are answered by the host itself): the
/// transaction coordinator at its address here, in the layout of `version` (v0-3 top level,
/// v4+ batched; the other layout's fields are absent at that version, and left at their
/// defaults so the answer encodes). A coordinator that cannot be served here reads
/// COORDINATOR_NOT_AVAILABLE, which clients retry.
pub fn find_coordinator(response: &mut FindCoordinator, version: i16, addresses: &impl Addresses) {
    const NOT_AVAILABLE: i16 = kafka_protocol::ResponseError::CoordinatorNotAvailable.code();
    if version < 4 && response.error_code == 0 && response.node_id.0 >= 0 {
        let upstream = (response.host.as_str(), response.port);
        match addresses.node(response.node_id.0, upstream) {
            Some((host, port)) => {
                response.host = host;
                response.port = port;
            }
            None => response.error_code = NOT_AVAILABLE,
        }
    }
    for c in &mut response.coordinators {
        if c.error_code != 0 || c.node_id.0 < 0 {
            continue;
        }
        match addresses.node(c.node_id.0, (c.host.as_str(), c.port)) {
            Some((host, port)) => {
                c.host = host;
                c.port = port;
            }
            None => c.error_code = NOT_AVAILABLE,
        }
    }
}

/// The response type [`find_coordinator`] rewrites.
pub type FindCoordinator = FindCoordinatorResponse;

/// Produce v10+: the leader hints' endpoints here. Returns whether anything changed (most
/// answers carry no hint, and are then passed on as the upstream sent them).
pub fn produce(response: &mut ProduceResponse, addresses: &impl Addresses) -> bool {
    let mut changed = false;
    response.node_endpoints.retain_mut(|e| {
        changed = true;
        match addresses.node(e.node_id.0, (e.host.as_str(), e.port)) {
            Some((host, port)) => {
                e.host = host;
                e.port = port;
                true
            }
            None => false,
        }
    });
    changed
}

#[cfg(test)]
mod tests {
    use kafka_protocol::messages::find_coordinator_response::Coordinator;
    use kafka_protocol::messages::produce_response::NodeEndpoint;

    use super::*;

    /// Node `n` is served at `proxy:(19000 + n)`, except node 9, which has no port.
    struct Ports;

    impl Addresses for Ports {
        fn node(&self, node_id: i32, _: (&str, i32)) -> Option<(StrBytes, i32)> {
            (node_id != 9).then(|| (StrBytes::from_static_str("proxy"), 19_000 + node_id))
        }
        fn coordinator(&self) -> (i32, StrBytes, i32) {
            (1_000_000, StrBytes::from_static_str("proxy"), 19_000)
        }
    }

    fn broker(id: i32, port: i32) -> MetadataResponseBroker {
        MetadataResponseBroker::default()
            .with_node_id(BrokerId(id))
            .with_host(StrBytes::from_static_str("kafka"))
            .with_port(port)
            .with_rack(Some(StrBytes::from_static_str("r1")))
    }

    #[test]
    fn metadata_names_only_the_host_and_lists_the_coordinator_node() {
        let mut r = MetadataResponse::default().with_brokers(vec![
            broker(1, 9092),
            broker(2, 9093),
            broker(9, 9099),
        ]);
        metadata(&mut r, &Ports);
        let seen: Vec<(i32, &str, i32, Option<&str>)> = r
            .brokers
            .iter()
            .map(|b| (b.node_id.0, b.host.as_str(), b.port, b.rack.as_deref()))
            .collect();
        assert_eq!(
            seen,
            vec![
                (1, "proxy", 19_001, Some("r1")),
                (2, "proxy", 19_002, Some("r1")),
                (1_000_000, "proxy", 19_000, None),
            ]
        );
    }

    #[test]
    fn transaction_coordinators_move_to_the_host_in_both_layouts() {
        let mut old = FindCoordinatorResponse::default()
            .with_node_id(BrokerId(2))
            .with_host(StrBytes::from_static_str("kafka"))
            .with_port(9093);
        find_coordinator(&mut old, 3, &Ports);
        assert_eq!((old.host.as_str(), old.port), ("proxy", 19_002));
        let mut batched = FindCoordinatorResponse::default().with_coordinators(vec![
            Coordinator::default()
                .with_node_id(BrokerId(1))
                .with_host(StrBytes::from_static_str("kafka"))
                .with_port(9092),
            Coordinator::default().with_node_id(BrokerId(9)),
        ]);
        find_coordinator(&mut batched, 4, &Ports);
        assert_eq!(batched.coordinators[0].port, 19_001);
        assert_eq!(
            batched.coordinators[1].error_code,
            kafka_protocol::ResponseError::CoordinatorNotAvailable.code()
        );
        // v4+ has no top-level coordinator: its default fields (node 0) are no node to serve,
        // and must stay at their defaults for the answer to encode at that version.
        assert_eq!(
            (batched.node_id.0, batched.host.as_str(), batched.port),
            (0, "", 0)
        );
        let mut out = bytes::BytesMut::new();
        kafka_protocol::protocol::Encodable::encode(&batched, &mut out, 4)
            .expect("the rewritten v4 answer encodes");
    }

    #[test]
    fn leader_hints_point_at_the_host_and_an_answer_without_hints_is_untouched() {
        let mut plain = ProduceResponse::default();
        assert!(!produce(&mut plain, &Ports));
        let mut hinted = ProduceResponse::default().with_node_endpoints(vec![
            NodeEndpoint::default()
                .with_node_id(BrokerId(3))
                .with_host(StrBytes::from_static_str("kafka"))
                .with_port(9094),
        ]);
        assert!(produce(&mut hinted, &Ports));
        assert_eq!(hinted.node_endpoints[0].host.as_str(), "proxy");
        assert_eq!(hinted.node_endpoints[0].port, 19_003);
    }

    #[test]
    fn metadata_from_v10_carries_the_catalogs_topic_ids_and_before_it_none() {
        use kafka_protocol::messages::TopicName;
        use kafka_protocol::messages::metadata_response::MetadataResponseTopic;
        let mut catalog = std::collections::BTreeMap::new();
        let orders = assignor_sdk::Topic {
            name: "orders".into(),
            partition_count: 3,
            partition_racks: vec![],
        };
        catalog.insert("orders".to_string(), orders);
        let topics = Topics::with_derived_ids(catalog);
        let answer = || {
            MetadataResponse::default().with_topics(vec![
                MetadataResponseTopic::default()
                    .with_name(Some(TopicName(StrBytes::from_static_str("orders")))),
                MetadataResponseTopic::default()
                    .with_name(Some(TopicName(StrBytes::from_static_str("elsewhere")))),
            ])
        };
        let mut v12 = answer();
        topic_ids(&mut v12, 12, &topics);
        assert_eq!(v12.topics[0].topic_id, topics.id("orders").unwrap());
        assert!(
            v12.topics[1].topic_id.is_nil(),
            "unknown to the catalog: untouched"
        );
        let mut v9 = answer();
        topic_ids(&mut v9, 9, &topics);
        assert!(v9.topics[0].topic_id.is_nil(), "no topic ids before v10");
    }
}
