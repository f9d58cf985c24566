//! ListGroups (key 16, v0-5): every group the host coordinates, filtered by state (v4+) and
//! type (v5+) by the coordinator. Fields newer than the request's version are cleared.
//!
//! Authorized as Kafka's KafkaApis does, without an error: a principal allowed DESCRIBE on
//! the cluster sees every group, any other only those it may DESCRIBE; the rest are left out
//! silently.

use kafka_protocol::messages::{ListGroupsRequest, ListGroupsResponse};
use kafka_protocol::protocol::StrBytes;

use super::Client;
use super::proxy::authorize::Right;
use crate::driver::Driver;

pub async fn handle(
    driver: &Driver,
    client: &Client,
    request: ListGroupsRequest,
    version: i16,
) -> ListGroupsResponse {
    let states: Vec<String> = request
        .states_filter
        .iter()
        .map(|s| s.to_string())
        .collect();
    let types: Vec<String> = request.types_filter.iter().map(|s| s.to_string()).collect();
    let mut listed = driver.list_groups(&states, &types).await;
    if !client.allows(&Right::describe_cluster()) {
        listed.retain(|g| client.allows(&Right::describe_group(&g.group_id)));
    }
    for group in &mut listed {
        if version < 4 {
            group.group_state = StrBytes::default();
        }
        if version < 5 {
            group.group_type = StrBytes::default();
        }
    }
    ListGroupsResponse::default().with_groups(listed)
}
