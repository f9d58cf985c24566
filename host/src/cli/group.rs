//! `assignor-host group ...`: list, describe, set the operator configuration, rebalance.

use std::collections::BTreeMap;

use reqwest::Method;
use serde_json::{Value, json};

use super::client::{Body, segment};
use super::table::{Table, assignment, micros, pairs};
use super::{ApiArgs, CliError, print_json, text};

/// Inspect and configure consumer groups.
#[derive(Debug, clap::Args)]
pub struct GroupArgs {
    #[command(flatten)]
    pub api: ApiArgs,
    #[command(subcommand)]
    pub command: GroupCommand,
}

#[derive(Debug, clap::Subcommand)]
pub enum GroupCommand {
    /// List groups with their state, members and strategy.
    #[command(alias = "list")]
    Ls,
    /// A group's members and assignment, strategy and module version, last assignor run and
    /// recent rebalances.
    Describe { group: String },
    /// Change a group's configuration (applies at its next rebalance). The options change only
    /// what they name; --clear starts from no configuration.
    Set {
        group: String,
        /// Strategy (module) that computes the assignment, overriding the members' vote.
        #[arg(long)]
        strategy: Option<String>,
        /// Pin this version of the strategy instead of its active one.
        #[arg(long)]
        version: Option<u32>,
        /// A parameter for the module (`AssignRequest.params`); `k=` removes `k`. Repeatable.
        #[arg(long = "param", value_name = "KEY=VALUE", value_parser = parse_param)]
        params: Vec<(String, String)>,
        /// Rebalance stabilisation: a Stable group starts its rebalance only once membership
        /// has been quiet this long (0 switches it off).
        #[arg(long, value_name = "MS")]
        stabilize_ms: Option<u64>,
        /// The longest that wait may last from the first change (0: the default, 5 x
        /// --stabilize-ms).
        #[arg(long, value_name = "MS")]
        stabilize_max_ms: Option<u64>,
        /// Drop the current configuration first (with no other option: remove it).
        #[arg(long)]
        clear: bool,
    },
    /// Start a rebalance now (members rejoin after their next heartbeat).
    Rebalance {
        group: String,
        /// Why, for the group's history.
        #[arg(long)]
        reason: Option<String>,
    },
}

fn parse_param(text: &str) -> Result<(String, String), String> {
    match text.split_once('=') {
        Some((k, v)) if !k.is_empty() => Ok((k.to_owned(), v.to_owned())),
        _ => Err(format!("`{text}` is not KEY=VALUE")),
    }
}

impl GroupArgs {
    pub async fn run(self) -> Result<(), CliError> {
        let client = self.api.client()?;
        let (value, render): (Value, fn(&Value) -> String) = match self.command {
            GroupCommand::Ls => (client.get("/v1/groups").await?, render_list),
            GroupCommand::Describe { group } => (
                client
                    .get(&format!("/v1/groups/{}", segment(&group)))
                    .await?,
                render_describe,
            ),
            GroupCommand::Set {
                group,
                strategy,
                version,
                params,
                stabilize_ms,
                stabilize_max_ms,
                clear,
            } => {
                if !clear
                    && strategy.is_none()
                    && version.is_none()
                    && params.is_empty()
                    && stabilize_ms.is_none()
                    && stabilize_max_ms.is_none()
                {
                    return Err(CliError::Usage(
                        "nothing to set: give --strategy, --version, --param, --stabilize-ms, \
                         --stabilize-max-ms or --clear"
                            .into(),
                    ));
                }
                let mut config = if clear {
                    json!({})
                } else {
                    match current_config(&client, &group).await? {
                        Some(config) => config,
                        None => {
                            eprintln!(
                                "note: group {group} is not live on this host, so its current \
                                 configuration cannot be read; the options given replace it"
                            );
                            json!({})
                        }
                    }
                };
                if let Some(strategy) = strategy {
                    config["strategy"] = json!(strategy);
                }
                if let Some(version) = version {
                    config["pinned_version"] = json!(version);
                }
                let mut merged: BTreeMap<String, Value> = config["params"]
                    .as_object()
                    .map(|m| m.clone().into_iter().collect())
                    .unwrap_or_default();
                for (k, v) in params {
                    if v.is_empty() {
                        merged.remove(&k);
                    } else {
                        merged.insert(k, json!(v));
                    }
                }
                config["params"] = json!(merged);
                for (key, value) in [
                    ("stabilize_ms", stabilize_ms),
                    ("stabilize_max_ms", stabilize_max_ms),
                ] {
                    match value {
                        Some(0) => config[key] = Value::Null,
                        Some(ms) => config[key] = json!(ms),
                        None => {}
                    }
                }
                let path = format!("/v1/groups/{}/config", segment(&group));
                (
                    client.call(Method::PUT, &path, Body::Json(config)).await?.1,
                    render_set,
                )
            }
            GroupCommand::Rebalance { group, reason } => {
                let path = format!("/v1/groups/{}/rebalance", segment(&group));
                let body = match reason {
                    Some(reason) => Body::Json(json!({ "reason": reason })),
                    None => Body::None,
                };
                (
                    client.call(Method::POST, &path, body).await?.1,
                    render_rebalance,
                )
            }
        };
        if self.api.json {
            print_json(&value);
        } else {
            print!("{}", render(&value));
        }
        Ok(())
    }
}

/// The group's configuration now; `None` when the host has no live group of that name.
async fn current_config(
    client: &super::AdminClient,
    group: &str,
) -> Result<Option<Value>, CliError> {
    match client.get(&format!("/v1/groups/{}", segment(group))).await {
        Ok(detail) => {
            let mut config = detail["config"].clone();
            if let Some(map) = config.as_object_mut() {
                map.retain(|_, v| !v.is_null());
            }
            Ok(Some(config))
        }
        Err(CliError::Api { status: 404, .. }) => Ok(None),
        Err(e) => Err(e),
    }
}

fn render_list(v: &Value) -> String {
    // TYPE is Kafka's group type: `classic` (JoinGroup/SyncGroup) or `consumer` (KIP-848).
    let mut table = Table::new(&["GROUP", "STATE", "MEMBERS", "STRATEGY", "TYPE"]);
    for g in v["groups"].as_array().into_iter().flatten() {
        table.row(vec![
            text(&g["group_id"]),
            text(&g["state"]),
            text(&g["members"]),
            text(&g["strategy"]),
            text(&g["group_type"]),
        ]);
    }
    table.render()
}

/// A consumer group's epochs, assignor and each member's reconciliation (KIP-848).
fn consumer_detail(consumer: &serde_json::Map<String, Value>) -> String {
    let missing = if consumer["assignor_missing"] == true {
        " (no module of that name: the fallback assigns)"
    } else {
        ""
    };
    let mut out = format!(
        "\ngroup epoch     {}\nassignment      epoch {}\nassignor        {}{missing}\n",
        consumer["group_epoch"],
        consumer["assignment_epoch"],
        text(&consumer["requested_assignor"]),
    );
    let mut members = Table::new(&["MEMBER", "PROTOCOL", "EPOCH", "STATE", "TARGET", "REVOKING"]);
    for m in consumer["members"].as_array().into_iter().flatten() {
        members.row(vec![
            text(&m["member_id"]),
            text(&m["member_protocol"]),
            text(&m["member_epoch"]),
            text(&m["state"]),
            assignment(&m["target"]),
            assignment(&m["pending_revocation"]),
        ]);
    }
    out.push_str(&format!("\n{}", members.render()));
    out
}

fn render_describe(v: &Value) -> String {
    let config = &v["config"];
    let params: Vec<String> = config["params"]
        .as_object()
        .into_iter()
        .flatten()
        .map(|(k, v)| format!("{k}={}", text(v)))
        .collect();
    let override_text = match (
        config["strategy"].as_str(),
        config["pinned_version"].as_u64(),
    ) {
        (Some(s), Some(v)) => format!("{s} pinned to version {v}"),
        (Some(s), None) => s.to_owned(),
        _ => "none".to_owned(),
    };
    let mut out = pairs(&[
        ("group", text(&v["group_id"])),
        ("type", text(&v["group_type"])),
        ("state", text(&v["state"])),
        ("generation", text(&v["generation"])),
        ("protocol", text(&v["protocol"])),
        ("mode", text(&v["mode"])),
        ("strategy", text(&v["strategy"])),
        ("module version", text(&v["module_version"])),
        ("override", override_text),
        (
            "params",
            if params.is_empty() {
                "none".into()
            } else {
                params.join(", ")
            },
        ),
        ("stabilize", stabilize_text(config)),
    ]);
    if let Some(d) = v["deferred_rebalance"].as_object() {
        out.push_str(&format!(
            "rebalance       deferred for {} ms ({} joined, {} left), starts in {} ms unless \
             membership changes\n",
            d["waited_ms"], d["joined"], d["left"], d["starts_in_ms"]
        ));
    }
    for h in v["held"].as_array().into_iter().flatten() {
        let partitions: Vec<String> = h["partitions"]
            .as_object()
            .into_iter()
            .flatten()
            .map(|(topic, list)| format!("{topic} {list}"))
            .collect();
        let who = match h["group_instance_id"].as_str() {
            Some(instance) => format!("instance {instance}"),
            None => format!("{}@{}", text(&h["client_id"]), text(&h["client_host"])),
        };
        let until = match h["until_in_ms"].as_u64() {
            Some(ms) => format!("until the follow-up in {ms} ms"),
            None => "until the next rebalance".to_string(),
        };
        out.push_str(&format!(
            "held            {} for {who} (member {}), {} ms so far, {until}\n",
            partitions.join(", "),
            text(&h["member_id"]),
            h["held_ms"],
        ));
    }
    if let Some(run) = v["last_run"].as_object() {
        let outcome = &run["outcome"];
        let outcome = match outcome["detail"].as_str() {
            Some(detail) => format!("{} ({detail})", text(&outcome["kind"])),
            None => text(&outcome["kind"]),
        };
        out.push_str(&format!(
            "last run        generation {}: {} version {}, {}, {} fuel, {}{}\n",
            run["generation"],
            text(&run["module"]),
            text(&run["version"]),
            micros(run["duration_us"].as_u64().unwrap_or(0)),
            run["fuel"],
            outcome,
            if run["fallback_used"] == true {
                ", fallback used"
            } else {
                ""
            },
        ));
    }
    let mut members = Table::new(&["MEMBER", "INSTANCE", "CLIENT", "HOST", "ASSIGNMENT"]);
    for m in v["members"].as_array().into_iter().flatten() {
        members.row(vec![
            text(&m["member_id"]),
            text(&m["group_instance_id"]),
            text(&m["client_id"]),
            text(&m["client_host"]),
            assignment(&m["assignment"]),
        ]);
    }
    out.push_str(&format!("\n{}", members.render()));
    if let Some(consumer) = v["consumer"].as_object() {
        out.push_str(&consumer_detail(consumer));
    }
    let mut history = Table::new(&[
        "GEN", "STRATEGY", "VERSION", "MEMBERS", "DURATION", "MOVED", "FALLBACK", "REASON",
    ]);
    for h in v["history"].as_array().into_iter().flatten() {
        history.row(vec![
            text(&h["generation"]),
            text(&h["strategy"]),
            text(&h["module_version"]),
            text(&h["members"]),
            format!("{} ms", h["duration_ms"]),
            text(&h["partitions_moved"]),
            if h["fallback_used"] == true {
                "yes".into()
            } else {
                "no".into()
            },
            text(&h["reason"]),
        ]);
    }
    if !history.is_empty() {
        out.push_str(&format!("\nrecent rebalances:\n{}", history.render()));
    }
    let mut offsets = Table::new(&["TOPIC", "PARTITION", "MEMBER", "COMMITTED", "END", "LAG"]);
    for o in v["offsets"].as_array().into_iter().flatten() {
        offsets.row(vec![
            text(&o["topic"]),
            text(&o["partition"]),
            text(&o["member"]),
            text(&o["committed"]),
            text(&o["end"]),
            text(&o["lag"]),
        ]);
    }
    if !offsets.is_empty() {
        out.push_str(&format!("\noffsets:\n{}", offsets.render()));
    }
    out
}

fn render_set(v: &Value) -> String {
    let config = &v["config"];
    let params: Vec<String> = config["params"]
        .as_object()
        .into_iter()
        .flatten()
        .map(|(k, v)| format!("{k}={}", text(v)))
        .collect();
    format!(
        "{}: configuration set, applies at the group's next rebalance\n{}",
        text(&v["group_id"]),
        pairs(&[
            ("strategy", text(&config["strategy"])),
            ("pinned version", text(&config["pinned_version"])),
            (
                "params",
                if params.is_empty() {
                    "none".into()
                } else {
                    params.join(", ")
                }
            ),
            ("stabilize", stabilize_text(config)),
        ])
    )
}

/// `quiet 8000 ms, at most 40000 ms`, or `off`.
fn stabilize_text(config: &Value) -> String {
    match (
        config["stabilize_ms"].as_u64(),
        config["stabilize_max_ms"].as_u64(),
    ) {
        (Some(ms), Some(max)) => format!("quiet {ms} ms, at most {max} ms"),
        (Some(ms), None) => format!(
            "quiet {ms} ms, at most {} ms",
            ms * crate::coordinator::DEFAULT_STABILIZE_MAX_FACTOR
        ),
        _ => "off".into(),
    }
}

fn render_rebalance(v: &Value) -> String {
    format!(
        "{}: rebalance started ({}); members rejoin after their next heartbeat\n",
        text(&v["group_id"]),
        text(&v["reason"])
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn describe_shows_each_partitions_committed_offset_end_and_lag() {
        let detail = json!({
            "group_id": "g", "state": "Stable", "generation": 1, "config": {},
            "members": [], "history": [],
            "offsets": [
                {"topic": "orders", "partition": 0, "member": "c-1", "committed": 10,
                 "end": 12, "lag": 2},
                {"topic": "orders", "partition": 1, "member": null, "committed": null,
                 "end": 5, "lag": null}
            ]
        });
        let text = render_describe(&detail);
        let table: Vec<&str> = text.lines().skip_while(|l| *l != "offsets:").collect();
        assert_eq!(table.len(), 4, "{text}");
        let cells = |line: &str| {
            line.split_whitespace()
                .map(str::to_owned)
                .collect::<Vec<_>>()
        };
        assert_eq!(
            cells(table[1]),
            ["TOPIC", "PARTITION", "MEMBER", "COMMITTED", "END", "LAG"]
        );
        assert_eq!(cells(table[2]), ["orders", "0", "c-1", "10", "12", "2"]);
        assert_eq!(cells(table[3]), ["orders", "1", "-", "-", "5", "-"]);
    }

    #[test]
    fn describe_shows_the_run_members_and_history() {
        let detail = json!({
            "group_id": "orders-app", "state": "Stable", "generation": 5,
            "protocol_type": "consumer", "protocol": "my-strategy", "mode": "host",
            "strategy": "my-strategy", "module_version": 2,
            "config": {"strategy": "my-strategy", "pinned_version": 2, "params": {"k": "v"}},
            "members": [{"member_id": "c-1-7d0c", "group_instance_id": null, "client_id": "c-1",
                         "client_host": "/10.0.0.7", "protocol_name": "my-strategy",
                         "subscription": ["orders"], "assignment": {"orders": [0, 1]}}],
            "last_run": {"generation": 5, "module": "my-strategy", "version": 2,
                         "duration_us": 41, "fuel": 92501, "outcome": {"kind": "ok"},
                         "fallback_used": false},
            "history": [{"generation": 5, "reason": "operator request: try v2",
                         "strategy": "my-strategy", "module_version": 2, "members": 1,
                         "duration_ms": 12, "partitions_moved": 2, "fallback_used": false}]
        });
        let text = render_describe(&detail);
        assert!(
            text.contains("override        my-strategy pinned to version 2\n"),
            "{text}"
        );
        assert!(text.contains("params          k=v\n"), "{text}");
        assert!(
            text.contains(
                "last run        generation 5: my-strategy version 2, 41 us, 92501 fuel, ok\n"
            ),
            "{text}"
        );
        let member = text.lines().find(|l| l.starts_with("c-1-7d0c")).unwrap();
        assert!(member.ends_with("/10.0.0.7  orders[0,1]"), "{member}");
        let history = text.lines().last().unwrap();
        assert!(
            history.starts_with("5    my-strategy  2")
                && history.ends_with("operator request: try v2"),
            "{history}"
        );
    }

    #[test]
    fn a_consumer_group_shows_its_epochs_assignor_and_each_members_reconciliation() {
        let detail = json!({
            "group_id": "kip848", "group_type": "consumer", "state": "Reconciling",
            "generation": 3, "config": {}, "history": [],
            "members": [{"member_id": "m-1", "group_instance_id": null, "client_id": "c",
                         "client_host": "/127.0.0.1", "subscription": ["orders"],
                         "assignment": {"orders": [0, 1]}}],
            "consumer": {"group_epoch": 3, "assignment_epoch": 3,
                         "requested_assignor": "mine", "assignor_missing": true,
                         "members": [{"member_id": "m-1", "member_protocol": "classic",
                                      "member_epoch": 2, "state": "unrevoked_partitions",
                                      "target": {"orders": [0]},
                                      "pending_revocation": {"orders": [1]}}]}
        });
        let text = render_describe(&detail);
        assert!(text.contains("type            consumer\n"), "{text}");
        assert!(
            text.contains("assignor        mine (no module of that name: the fallback assigns)"),
            "{text}"
        );
        let row = text
            .lines()
            .find(|l| l.starts_with("m-1") && l.contains("unrevoked_partitions"))
            .expect("the reconciliation row");
        let cells: Vec<&str> = row.split_whitespace().collect();
        assert_eq!(
            cells,
            [
                "m-1",
                "classic",
                "2",
                "unrevoked_partitions",
                "orders[0]",
                "orders[1]"
            ]
        );
    }

    #[test]
    fn describe_shows_stabilisation_and_a_deferred_rebalance() {
        let detail = json!({
            "group_id": "g", "state": "Stable", "generation": 3,
            "config": {"params": {}, "stabilize_ms": 6000},
            "deferred_rebalance": {"joined": 2, "left": 1, "waited_ms": 4000,
                                   "starts_in_ms": 2000},
            "members": [], "history": []
        });
        let text = render_describe(&detail);
        assert!(
            text.contains("stabilize       quiet 6000 ms, at most 30000 ms\n"),
            "{text}"
        );
        assert!(
            text.contains(
                "rebalance       deferred for 4000 ms (2 joined, 1 left), starts in 2000 ms \
                 unless membership changes\n"
            ),
            "{text}"
        );
        let off = render_describe(&json!({"group_id": "g", "config": {}, "members": []}));
        assert!(off.contains("stabilize       off\n"), "{off}");
    }

    #[test]
    fn describe_shows_held_partitions_for_whom_and_until_when() {
        let detail = json!({
            "group_id": "g", "state": "Stable", "generation": 3, "config": {"params": {}},
            "held": [
                {"member_id": "b-1", "group_instance_id": null, "client_id": "b",
                 "client_host": "/10.0.0.3", "partitions": {"orders": [1, 4]},
                 "held_ms": 4100, "until_in_ms": 15900},
                {"member_id": "c-1", "group_instance_id": "c", "client_id": "c",
                 "client_host": "/10.0.0.4", "partitions": {"orders": [2]},
                 "held_ms": 100, "until_in_ms": null}
            ],
            "members": [], "history": []
        });
        let text = render_describe(&detail);
        assert!(
            text.contains(
                "held            orders [1,4] for b@/10.0.0.3 (member b-1), 4100 ms so far, \
                 until the follow-up in 15900 ms\n"
            ),
            "{text}"
        );
        assert!(
            text.contains(
                "held            orders [2] for instance c (member c-1), 100 ms so far, until \
                 the next rebalance\n"
            ),
            "{text}"
        );
    }
}
