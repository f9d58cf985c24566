//! The host's own names kept from clients on the relayed path. In a cluster of hosts the
//! upstream holds the host's topics (`__assignor_host.<cluster>.modules`, `.shards`); a client
//! that could write, delete, trim or reconfigure them through the host, with the host's
//! credentials where the cluster does not authenticate clients (`kafka.authentication =
//! "none"`), could take every node's modules and settings away. So the relayed requests that
//! touch a topic by name (Produce, Fetch, ListOffsets, DeleteRecords, CreateTopics,
//! DeleteTopics, CreatePartitions, AlterConfigs, IncrementalAlterConfigs) are refused here when
//! they name a topic (or, for the configs, a group) under [`RESERVED_PREFIX`], whoever asks:
//! the host's names answer TOPIC_AUTHORIZATION_FAILED (GROUP_AUTHORIZATION_FAILED for a
//! group's configs), as Kafka answers a topic the principal may not touch. The group APIs the
//! host answers itself refuse the same names in their own files (`Client::allows`).
//!
//! A request is passed up whole or refused whole (the host does not split a frame it relays
//! byte for byte): the other topics of a refused request answer INVALID_REQUEST, with a
//! message where the API has one. No client mixes the host's topics with its own unless it
//! copies every topic of a cluster, and those tools skip `__`-topics by default (MirrorMaker's
//! `topics.exclude`).
//!
//! Cheap for every other request: the frame is searched for the prefix's bytes (a SIMD
//! search, `memchr::memmem`), and decoded only where they appear. The topic-id versions of
//! Produce and Fetch (v13+) are never advertised in proxy mode (`versions.rs`), and a
//! DeleteTopics entry by id alone names an id of the host's (the ids clients learn from the
//! host's Metadata), which the cluster does not know.

use bytes::Bytes;
use kafka_protocol::ResponseError;
use kafka_protocol::messages::{
    AlterConfigsRequest, AlterConfigsResponse, ApiKey, CreatePartitionsRequest,
    CreatePartitionsResponse, CreateTopicsRequest, CreateTopicsResponse, DeleteRecordsRequest,
    DeleteRecordsResponse, DeleteTopicsRequest, DeleteTopicsResponse, FetchRequest, FetchResponse,
    IncrementalAlterConfigsRequest, IncrementalAlterConfigsResponse, ListOffsetsRequest,
    ListOffsetsResponse, ProduceRequest, ProduceResponse, RequestHeader, ResponseKind, TopicName,
    alter_configs_response, create_partitions_response, create_topics_response,
    delete_records_response, delete_topics_response, fetch_response,
    incremental_alter_configs_response, list_offsets_response, produce_response,
};
use kafka_protocol::protocol::{Decodable, StrBytes};
use uuid::Uuid;

use super::authorize::{RESERVED_PREFIX, Right};

/// Kafka's config resource types (`ConfigResource.Type`).
const TOPIC_RESOURCE: i8 = 2;
const GROUP_RESOURCE: i8 = 32;

/// The APIs checked here.
const CHECKED: [ApiKey; 9] = [
    ApiKey::Produce,
    ApiKey::Fetch,
    ApiKey::ListOffsets,
    ApiKey::DeleteRecords,
    ApiKey::CreateTopics,
    ApiKey::DeleteTopics,
    ApiKey::CreatePartitions,
    ApiKey::AlterConfigs,
    ApiKey::IncrementalAlterConfigs,
];

/// The host's answer refusing a relayed request that names the host's own topics or groups,
/// and the rights refused (for the denial count); `None`: the request goes up as it is. A
/// frame that holds the prefix but cannot be decoded is refused by the connection (`Err`):
/// the host cannot tell what it would do upstream.
pub fn refusal(
    frame: &Bytes,
    api_key: i16,
    api_version: i16,
) -> Option<Result<(ResponseKind, Vec<Right>), String>> {
    let key = ApiKey::try_from(api_key).ok()?;
    if !CHECKED.contains(&key) {
        return None;
    }
    // DeleteTopics may name a topic by id alone (no name bytes to find): always read.
    if key != ApiKey::DeleteTopics {
        memchr::memmem::find(frame, RESERVED_PREFIX.as_bytes())?;
    }
    let mut body = frame.clone();
    let header = key.request_header_version(api_version);
    if let Err(e) = assignor_wire::guard::decode_from::<RequestHeader>(&mut body, header) {
        return Some(Err(format!("{key:?} v{api_version} header: {e}")));
    }
    let answer = match key {
        ApiKey::Produce => decode(&body, api_version).map(produce),
        ApiKey::Fetch => decode(&body, api_version).map(fetch),
        ApiKey::ListOffsets => decode(&body, api_version).map(list_offsets),
        ApiKey::DeleteRecords => decode(&body, api_version).map(delete_records),
        ApiKey::CreateTopics => decode(&body, api_version).map(create_topics),
        ApiKey::DeleteTopics => decode(&body, api_version).map(delete_topics),
        ApiKey::CreatePartitions => decode(&body, api_version).map(create_partitions),
        ApiKey::AlterConfigs => decode(&body, api_version).map(alter_configs),
        ApiKey::IncrementalAlterConfigs => {
            decode(&body, api_version).map(incremental_alter_configs)
        }
        _ => return None,
    };
    match answer {
        Ok(Some(refused)) => Some(Ok(refused)),
        Ok(None) => None,
        Err(e) => Some(Err(format!("{key:?} v{api_version}: {e}"))),
    }
}

fn decode<T: Decodable>(body: &Bytes, version: i16) -> Result<T, String> {
    assignor_wire::guard::decode(body, version)
}

fn reserved(name: &str) -> bool {
    name.starts_with(RESERVED_PREFIX)
}

/// The code for a topic of a refused request: its own refusal, or INVALID_REQUEST for a
/// topic refused only for the company it keeps.
fn code(name: &str) -> i16 {
    if reserved(name) {
        ResponseError::TopicAuthorizationFailed.code()
    } else {
        ResponseError::InvalidRequest.code()
    }
}

fn message(name: &str) -> Option<StrBytes> {
    Some(StrBytes::from_string(if reserved(name) {
        format!("{name} is a topic of assignor-host's own: no client may use it through the host")
    } else {
        format!(
            "not done: the request also names a topic of assignor-host's own ({RESERVED_PREFIX}*); \
             send it without"
        )
    }))
}

/// The refused rights of a request naming `names`, or `None` when none is the host's.
fn refused<'a>(
    names: impl Iterator<Item = &'a str>,
    right: fn(&str) -> Right,
) -> Option<Vec<Right>> {
    let rights: Vec<Right> = names.filter(|n| reserved(n)).map(right).collect();
    (!rights.is_empty()).then_some(rights)
}

fn produce(request: ProduceRequest) -> Option<(ResponseKind, Vec<Right>)> {
    let rights = refused(
        request.topic_data.iter().map(|t| t.name.as_str()),
        Right::write_topic,
    )?;
    let responses = request.topic_data.iter().map(|t| {
        let partitions = t.partition_data.iter().map(|p| {
            produce_response::PartitionProduceResponse::default()
                .with_index(p.index)
                .with_error_code(code(&t.name))
                .with_error_message(message(&t.name))
                .with_base_offset(-1)
                .with_log_append_time_ms(-1)
                .with_log_start_offset(-1)
        });
        produce_response::TopicProduceResponse::default()
            .with_name(t.name.clone())
            .with_partition_responses(partitions.collect())
    });
    let answer = ProduceResponse::default().with_responses(responses.collect());
    Some((ResponseKind::Produce(answer), rights))
}

fn fetch(request: FetchRequest) -> Option<(ResponseKind, Vec<Right>)> {
    let rights = refused(
        request.topics.iter().map(|t| t.topic.as_str()),
        Right::read_topic,
    )?;
    let responses = request.topics.iter().map(|t| {
        let partitions = t.partitions.iter().map(|p| {
            fetch_response::PartitionData::default()
                .with_partition_index(p.partition)
                .with_error_code(code(&t.topic))
                .with_high_watermark(-1)
                .with_last_stable_offset(-1)
                .with_log_start_offset(-1)
        });
        fetch_response::FetchableTopicResponse::default()
            .with_topic(t.topic.clone())
            .with_partitions(partitions.collect())
    });
    // No fetch session (id 0): the client starts a new one with its next full fetch.
    let answer = FetchResponse::default()
        .with_session_id(0)
        .with_responses(responses.collect());
    Some((ResponseKind::Fetch(answer), rights))
}

fn list_offsets(request: ListOffsetsRequest) -> Option<(ResponseKind, Vec<Right>)> {
    let rights = refused(
        request.topics.iter().map(|t| t.name.as_str()),
        Right::describe_topic,
    )?;
    let topics = request.topics.iter().map(|t| {
        let partitions = t.partitions.iter().map(|p| {
            list_offsets_response::ListOffsetsPartitionResponse::default()
                .with_partition_index(p.partition_index)
                .with_error_code(code(&t.name))
                .with_timestamp(-1)
                .with_offset(-1)
        });
        list_offsets_response::ListOffsetsTopicResponse::default()
            .with_name(t.name.clone())
            .with_partitions(partitions.collect())
    });
    let answer = ListOffsetsResponse::default().with_topics(topics.collect());
    Some((ResponseKind::ListOffsets(answer), rights))
}

fn delete_records(request: DeleteRecordsRequest) -> Option<(ResponseKind, Vec<Right>)> {
    let rights = refused(
        request.topics.iter().map(|t| t.name.as_str()),
        Right::delete_topic,
    )?;
    let topics = request.topics.iter().map(|t| {
        let partitions = t.partitions.iter().map(|p| {
            delete_records_response::DeleteRecordsPartitionResult::default()
                .with_partition_index(p.partition_index)
                .with_error_code(code(&t.name))
                .with_low_watermark(-1)
        });
        delete_records_response::DeleteRecordsTopicResult::default()
            .with_name(t.name.clone())
            .with_partitions(partitions.collect())
    });
    let answer = DeleteRecordsResponse::default().with_topics(topics.collect());
    Some((ResponseKind::DeleteRecords(answer), rights))
}

fn create_topics(request: CreateTopicsRequest) -> Option<(ResponseKind, Vec<Right>)> {
    let rights = refused(
        request.topics.iter().map(|t| t.name.as_str()),
        Right::create_topic,
    )?;
    let topics = request.topics.iter().map(|t| {
        create_topics_response::CreatableTopicResult::default()
            .with_name(t.name.clone())
            .with_error_code(code(&t.name))
            .with_error_message(message(&t.name))
            .with_num_partitions(-1)
            .with_replication_factor(-1)
    });
    let answer = CreateTopicsResponse::default().with_topics(topics.collect());
    Some((ResponseKind::CreateTopics(answer), rights))
}

/// v0-5 list names; v6 lists entries, each a name or an id alone. The ids clients learn
/// through the host are its own (`catalog::derived_id`), which the cluster does not know, so
/// an entry by id alone is refused (UNKNOWN_TOPIC_ID, as the cluster would answer a host id)
/// instead of passing up an id the host cannot check.
fn delete_topics(request: DeleteTopicsRequest) -> Option<(ResponseKind, Vec<Right>)> {
    let entries: Vec<(Option<TopicName>, Uuid)> = request
        .topics
        .iter()
        .map(|t| (t.name.clone().filter(|n| !n.is_empty()), t.topic_id))
        .chain(
            request
                .topic_names
                .iter()
                .map(|n| (Some(n.clone()), Uuid::nil())),
        )
        .collect();
    let rights: Vec<Right> = entries
        .iter()
        .filter_map(|(name, _)| name.as_ref().filter(|n| reserved(n)))
        .map(|n| Right::delete_topic(n))
        .collect();
    let by_id = entries.iter().any(|(name, _)| name.is_none());
    if rights.is_empty() && !by_id {
        return None;
    }
    let results = entries.into_iter().map(|(name, id)| {
        let (code, message) = match &name {
            Some(name) => (code(name), message(name)),
            None => (
                ResponseError::UnknownTopicId.code(),
                Some(StrBytes::from_static_str(
                    "through assignor-host, delete topics by name: the ids it gives are its own",
                )),
            ),
        };
        delete_topics_response::DeletableTopicResult::default()
            .with_name(name)
            .with_topic_id(id)
            .with_error_code(code)
            .with_error_message(message)
    });
    let answer = DeleteTopicsResponse::default().with_responses(results.collect());
    Some((ResponseKind::DeleteTopics(answer), rights))
}

fn create_partitions(request: CreatePartitionsRequest) -> Option<(ResponseKind, Vec<Right>)> {
    let rights = refused(
        request.topics.iter().map(|t| t.name.as_str()),
        Right::alter_topic,
    )?;
    let results = request.topics.iter().map(|t| {
        create_partitions_response::CreatePartitionsTopicResult::default()
            .with_name(t.name.clone())
            .with_error_code(code(&t.name))
            .with_error_message(message(&t.name))
    });
    let answer = CreatePartitionsResponse::default().with_results(results.collect());
    Some((ResponseKind::CreatePartitions(answer), rights))
}

/// A config resource's refusal: its code and message, and the right refused when it is the
/// host's.
fn config_resource(resource_type: i8, name: &str) -> (i16, Option<StrBytes>, Option<Right>) {
    match resource_type {
        TOPIC_RESOURCE if reserved(name) => (
            ResponseError::TopicAuthorizationFailed.code(),
            message(name),
            Some(Right::alter_configs_topic(name)),
        ),
        GROUP_RESOURCE if reserved(name) => (
            ResponseError::GroupAuthorizationFailed.code(),
            Some(StrBytes::from_string(format!(
                "{name} is a group of assignor-host's own: no client may use it through the host"
            ))),
            Some(Right::alter_configs_group(name)),
        ),
        _ => (ResponseError::InvalidRequest.code(), message(""), None),
    }
}

fn alter_configs(request: AlterConfigsRequest) -> Option<(ResponseKind, Vec<Right>)> {
    let decided: Vec<_> = request
        .resources
        .iter()
        .map(|r| (r, config_resource(r.resource_type, &r.resource_name)))
        .collect();
    let rights: Vec<Right> = decided.iter().filter_map(|(_, d)| d.2.clone()).collect();
    if rights.is_empty() {
        return None;
    }
    let responses = decided.into_iter().map(|(r, (code, message, _))| {
        alter_configs_response::AlterConfigsResourceResponse::default()
            .with_resource_type(r.resource_type)
            .with_resource_name(r.resource_name.clone())
            .with_error_code(code)
            .with_error_message(message)
    });
    let answer = AlterConfigsResponse::default().with_responses(responses.collect());
    Some((ResponseKind::AlterConfigs(answer), rights))
}

fn incremental_alter_configs(
    request: IncrementalAlterConfigsRequest,
) -> Option<(ResponseKind, Vec<Right>)> {
    let decided: Vec<_> = request
        .resources
        .iter()
        .map(|r| (r, config_resource(r.resource_type, &r.resource_name)))
        .collect();
    let rights: Vec<Right> = decided.iter().filter_map(|(_, d)| d.2.clone()).collect();
    if rights.is_empty() {
        return None;
    }
    let responses = decided.into_iter().map(|(r, (code, message, _))| {
        incremental_alter_configs_response::AlterConfigsResourceResponse::default()
            .with_resource_type(r.resource_type)
            .with_resource_name(r.resource_name.clone())
            .with_error_code(code)
            .with_error_message(message)
    });
    let answer = IncrementalAlterConfigsResponse::default().with_responses(responses.collect());
    Some((ResponseKind::IncrementalAlterConfigs(answer), rights))
}

#[cfg(test)]
mod tests {
    use super::*;
    use bytes::{BufMut, BytesMut};
    use kafka_protocol::messages::RequestHeader;
    use kafka_protocol::messages::produce_request::{PartitionProduceData, TopicProduceData};
    use kafka_protocol::protocol::Encodable;

    fn produce_frame(topic: &str, version: i16) -> Bytes {
        let mut out = BytesMut::new();
        RequestHeader::default()
            .with_request_api_key(ApiKey::Produce as i16)
            .with_request_api_version(version)
            .encode(&mut out, ApiKey::Produce.request_header_version(version))
            .unwrap();
        ProduceRequest::default()
            .with_acks(-1)
            .with_topic_data(vec![
                TopicProduceData::default()
                    .with_name(TopicName(StrBytes::from_string(topic.to_owned())))
                    .with_partition_data(vec![PartitionProduceData::default().with_index(0)]),
            ])
            .encode(&mut out, version)
            .unwrap();
        out.freeze()
    }

    #[test]
    fn a_request_without_the_prefix_goes_up_and_one_with_it_is_read_before_it_is_refused() {
        let key = ApiKey::Produce as i16;
        assert!(refusal(&produce_frame("orders", 9), key, 9).is_none());
        // The prefix's bytes in a request that names no host topic: decoded, passed up.
        assert!(refusal(&produce_frame("orders__assignor_host.", 9), key, 9).is_none());
        let Some(Ok((ResponseKind::Produce(answer), rights))) =
            refusal(&produce_frame("__assignor_host.c.modules", 9), key, 9)
        else {
            panic!("not refused");
        };
        assert_eq!(
            rights,
            vec![Right::write_topic("__assignor_host.c.modules")]
        );
        let partition = &answer.responses[0].partition_responses[0];
        assert_eq!(partition.error_code, 29);
        assert_eq!(partition.base_offset, -1);
        // Not a checked API: never looked at.
        assert!(refusal(&produce_frame("__assignor_host.c.modules", 9), 3, 9).is_none());
        // The prefix in a frame that does not decode: the connection is told to close.
        let mut broken = BytesMut::from(&produce_frame("__assignor_host.c.modules", 9)[..]);
        broken.truncate(broken.len() - 3);
        broken.put_u8(0xff);
        assert!(matches!(refusal(&broken.freeze(), key, 9), Some(Err(_))));
    }
}
