//! The black-box tests, as one test binary: every file directly under `tests/` is a binary of
//! its own that links the whole host again, and those links were the slowest part of building
//! the tests. Each module below is one such former file, its tests named `module::test`;
//! `admin_support` is compiled once for all of them. Every test starts its own host on port 0
//! ([`assignor_host_tests::TestHost`]), so sharing the process shares no state between them.

mod admin_support;
mod proxy_support;

mod abusive_clients;
mod acl_equivalence;
mod admin_http;
mod admin_live;
mod admin_tls;
mod conformance_admin;
mod conformance_consumer;
mod conformance_consumer_groups;
mod conformance_join;
mod conformance_migration;
mod conformance_offsets;
mod conformance_protocols;
mod conformance_rebalance;
mod conformance_static;
mod hostile_clients;
mod kafka_tls;
mod proxy_authorization;
mod proxy_client_sasl;
mod proxy_faults;
mod proxy_kafka;
mod proxy_own;
mod proxy_pipelining;
mod proxy_reserved;
mod proxy_retention;
mod proxy_sasl;
mod proxy_tls;
mod proxy_topology;
mod proxy_transactions;
mod proxy_wire;
mod request_budget;
mod standalone_sasl;
mod wire_admin;
mod wire_api_versions;
mod wire_consumer_group;
mod wire_cooperative_sticky;
mod wire_data;
mod wire_groups;
mod wire_kafka_go;
mod wire_malformed;
mod wire_metadata;
