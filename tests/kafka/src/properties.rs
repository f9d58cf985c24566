//! Each node's `server.properties`, and the log configuration every node shares.
//!
//! Sized for a 2-core machine running the test suite beside the cluster: two network and
//! two I/O threads, one of everything else, `__consumer_offsets` with 10 partitions instead
//! of 50 (created on the first group, faster), the JVM's heap set in `process.rs`.

use std::collections::BTreeMap;
use std::fmt::Write;

use crate::{Node, State};

/// Kafka's log4j2 output on the console, which `process.rs` sends to the node's log file.
pub const LOG4J2: &str = "\
rootLogger.level = INFO
rootLogger.appenderRef.stdout.ref = STDOUT
appender.stdout.type = Console
appender.stdout.name = STDOUT
appender.stdout.layout.type = PatternLayout
appender.stdout.layout.pattern = [%d] %p %m (%c)%n
# The config dumps and per-request noise of a starting node.
logger.config.name = org.apache.kafka.common.config.AbstractConfig
logger.config.level = WARN
logger.utils.name = org.apache.kafka.common.utils.AppInfoParser
logger.utils.level = WARN
";

/// The `server.properties` of `node`, with `extra` settings added last (a later key wins).
pub fn server(state: &State, node: &Node, extra: &BTreeMap<String, String>) -> String {
    let replicas = state.nodes.len().min(3);
    let voters: Vec<String> = state
        .nodes
        .iter()
        .map(|n| format!("{}@{}", n.node_id, n.controller))
        .collect();
    let users = &state.users;
    let plain_users: String = users
        .iter()
        .map(|u| format!(" user_{}=\"{}\"", u.name, u.password))
        .collect();
    let supers: Vec<String> = users
        .iter()
        .filter(|u| u.super_user)
        .map(|u| format!("User:{}", u.name))
        .chain(["User:ANONYMOUS".to_owned()])
        .collect();
    let data = node.config.with_file_name("data");
    let mut out = String::new();
    let mut set = |key: &str, value: String| {
        writeln!(out, "{key}={value}").expect("writing to a String");
    };
    set("process.roles", "broker,controller".into());
    set("node.id", node.node_id.to_string());
    set("controller.quorum.voters", voters.join(","));
    set(
        "listeners",
        format!(
            "PLAINTEXT://{},SASL_SSL://{},CONTROLLER://{},SSL://{}",
            node.plaintext, node.sasl_ssl, node.controller, node.ssl
        ),
    );
    set(
        "advertised.listeners",
        format!(
            "PLAINTEXT://{},SASL_SSL://{},SSL://{}",
            node.plaintext, node.sasl_ssl, node.ssl
        ),
    );
    set(
        "listener.security.protocol.map",
        "PLAINTEXT:PLAINTEXT,SASL_SSL:SASL_SSL,CONTROLLER:PLAINTEXT,SSL:SSL".into(),
    );
    set("controller.listener.names", "CONTROLLER".into());
    set("inter.broker.listener.name", "PLAINTEXT".into());
    set("broker.rack", node.rack.clone());
    set("log.dirs", data.display().to_string());

    // Security: ACLs checked for everyone but the super users; the PLAINTEXT listener (and so
    // the brokers among themselves) is trusted.
    set(
        "authorizer.class.name",
        "org.apache.kafka.metadata.authorizer.StandardAuthorizer".into(),
    );
    set("super.users", supers.join(";"));
    set(
        "listener.name.sasl_ssl.sasl.enabled.mechanisms",
        "PLAIN,SCRAM-SHA-512,OAUTHBEARER".into(),
    );
    // OAUTHBEARER with Kafka's default validator, which takes unsigned tokens (alg "none") and
    // names the principal by their `sub`: for tests only, as Kafka's docs say.
    set(
        "listener.name.sasl_ssl.oauthbearer.sasl.jaas.config",
        "org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginModule required \
         unsecuredLoginStringClaim_sub=\"admin\";"
            .into(),
    );
    set(
        "listener.name.sasl_ssl.plain.sasl.jaas.config",
        format!("org.apache.kafka.common.security.plain.PlainLoginModule required{plain_users};"),
    );
    set(
        "listener.name.sasl_ssl.scram-sha-512.sasl.jaas.config",
        "org.apache.kafka.common.security.scram.ScramLoginModule required;".into(),
    );
    set("ssl.keystore.type", "PEM".into());
    set(
        "ssl.keystore.location",
        state.tls.broker_keystore.display().to_string(),
    );
    set("ssl.truststore.type", "PEM".into());
    set(
        "ssl.truststore.location",
        state.tls.ca.display().to_string(),
    );
    set("ssl.client.auth", "requested".into());

    // Groups and topics as the host's tests expect them.
    set("group.initial.rebalance.delay.ms", "0".into());
    set("auto.create.topics.enable", "false".into());
    set("offsets.topic.num.partitions", "10".into());
    set("offsets.topic.replication.factor", replicas.to_string());
    set("transaction.state.log.num.partitions", "5".into());
    set(
        "transaction.state.log.replication.factor",
        replicas.to_string(),
    );
    set("transaction.state.log.min.isr", "1".into());
    set("default.replication.factor", replicas.to_string());
    set("min.insync.replicas", "1".into());

    // Two cores.
    set("num.network.threads", "2".into());
    set("num.io.threads", "2".into());
    set("background.threads", "2".into());
    set("num.replica.fetchers", "1".into());
    set("num.recovery.threads.per.data.dir", "1".into());
    set("log.cleaner.threads", "1".into());
    set("log.cleaner.dedupe.buffer.size", (16 << 20).to_string());

    for (key, value) in extra {
        set(key, value.clone());
    }
    out
}
