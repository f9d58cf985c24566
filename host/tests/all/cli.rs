//! The `assignor-host` binary as an operator and an author run it: the client commands against
//! a host started in this process (tables, `--json` parsed and checked, the host's own error
//! messages, exit codes, the token), and the local `simulate --module FILE --scenario FILE`,
//! which needs no host at all.

use std::net::SocketAddr;
use std::path::Path;
use std::process::Output;

use assignor_host::catalog::TopicSeed;
use assignor_host::config::Config;
use assignor_host::server::Server;
use serde_json::Value;
use tokio::process::Command;

const BIN: &str = env!("CARGO_BIN_EXE_assignor-host");

async fn host(dir: &Path, token: Option<&str>) -> Server {
    let mut config = Config {
        data_dir: dir.to_path_buf(),
        ..Config::default()
    };
    config.kafka.listen = SocketAddr::from(([127, 0, 0, 1], 0));
    config.admin.listen = SocketAddr::from(([127, 0, 0, 1], 0));
    config.admin.token = token.map(str::to_owned);
    config.catalog.topics = vec![TopicSeed {
        name: "seeded".into(),
        partitions: 2,
        partition_racks: Vec::new(),
    }];
    Server::start(config).await.expect("host starts")
}

/// Runs the binary with `args`, talking to `admin` (no token unless `env` gives one).
async fn run(admin: &str, args: &[&str], env: &[(&str, &str)]) -> Output {
    let mut command = Command::new(BIN);
    command
        .args(args)
        .env("ASSIGNOR_HOST_ADMIN", admin)
        .env_remove("ASSIGNOR_HOST_TOKEN")
        .env_remove("RUST_LOG");
    for (k, v) in env {
        command.env(k, v);
    }
    command.output().await.expect("the binary runs")
}

fn stdout(output: &Output) -> String {
    String::from_utf8_lossy(&output.stdout).into_owned()
}

fn stderr(output: &Output) -> String {
    String::from_utf8_lossy(&output.stderr).into_owned()
}

/// Parses `--json` output; panics with the output if it is not JSON.
fn json(output: &Output) -> Value {
    assert!(output.status.success(), "failed: {}", stderr(output));
    serde_json::from_slice(&output.stdout)
        .unwrap_or_else(|e| panic!("not JSON ({e}): {}", stdout(output)))
}

fn wasm_file(dir: &Path, name: &str) -> String {
    let path = dir.join(format!("{name}.wasm"));
    let wasm = assignor_host::builtins::builtin(name)
        .expect("built in")
        .wasm;
    std::fs::write(&path, wasm).unwrap();
    path.display().to_string()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn module_commands_push_list_show_and_activate() {
    let dir = tempfile::tempdir().unwrap();
    let server = host(dir.path(), None).await;
    let admin = format!("http://{}", server.admin_addr());
    let file = wasm_file(dir.path(), "roundrobin");

    let listed = json(&run(&admin, &["module", "ls", "--json"], &[]).await);
    let names: Vec<&str> = listed["modules"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["name"].as_str().unwrap())
        .collect();
    assert!(
        names.contains(&"range") && names.contains(&"roundrobin"),
        "{listed}"
    );

    let pushed = run(&admin, &["module", "push", "my-strategy", &file], &[]).await;
    assert!(pushed.status.success(), "{}", stderr(&pushed));
    assert!(
        stdout(&pushed).starts_with("pushed my-strategy version 1 (active"),
        "{}",
        stdout(&pushed)
    );
    let again = json(
        &run(
            &admin,
            &["module", "push", "my-strategy", &file, "--json"],
            &[],
        )
        .await,
    );
    assert_eq!(
        (again["version"].as_u64(), again["created"].as_bool()),
        (Some(1), Some(false))
    );

    let table = stdout(&run(&admin, &["module", "ls"], &[]).await);
    let line = table
        .lines()
        .find(|l| l.starts_with("my-strategy"))
        .expect("listed");
    assert_eq!(
        line.split_whitespace().collect::<Vec<_>>()[..3],
        ["my-strategy", "1", "1"]
    );

    let shown = json(&run(&admin, &["module", "show", "my-strategy", "--json"], &[]).await);
    assert_eq!(
        shown["active"]["sha256"],
        assignor_host::registry::sha256_hex(&std::fs::read(&file).unwrap())
    );

    let versions = json(
        &run(
            &admin,
            &["module", "--json", "versions", "my-strategy"],
            &[],
        )
        .await,
    );
    assert_eq!(
        versions["versions"].as_array().unwrap().len(),
        1,
        "--json before the subcommand"
    );

    let wrong = "0".repeat(64);
    let refused = run(
        &admin,
        &["module", "push", "other", &file, "--sha256", &wrong],
        &[],
    )
    .await;
    assert_eq!(refused.status.code(), Some(1));
    let message = stderr(&refused);
    assert!(
        message.contains("sha256 mismatch")
            && message.contains("check: sha256")
            && message.contains("422"),
        "{message}"
    );

    let missing = run(&admin, &["module", "activate", "my-strategy", "9"], &[]).await;
    assert_eq!(missing.status.code(), Some(1));
    assert!(
        stderr(&missing).contains("`my-strategy` has no version 9"),
        "{}",
        stderr(&missing)
    );

    let back = run(&admin, &["module", "activate", "my-strategy", "1"], &[]).await;
    assert!(
        stdout(&back).contains("version 1 is active"),
        "{}",
        stdout(&back)
    );
    let active = run(
        &admin,
        &["module", "rm", "my-strategy", "--version", "1"],
        &[],
    )
    .await;
    assert!(stderr(&active).contains("is active"), "{}", stderr(&active));
    let removed = json(&run(&admin, &["module", "rm", "my-strategy", "--json"], &[]).await);
    assert_eq!(removed["removed_versions"], serde_json::json!([1]));
    server.shutdown().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn topic_and_group_commands() {
    let dir = tempfile::tempdir().unwrap();
    let server = host(dir.path(), None).await;
    let admin = format!("http://{}", server.admin_addr());

    let created = json(
        &run(
            &admin,
            &["topic", "create", "orders", "--partitions", "6", "--json"],
            &[],
        )
        .await,
    );
    assert_eq!(
        (created["name"].as_str(), created["partitions"].as_i64()),
        (Some("orders"), Some(6))
    );
    let grown = run(
        &admin,
        &["topic", "add-partitions", "orders", "--count", "8"],
        &[],
    )
    .await;
    assert_eq!(stdout(&grown), "orders with 8 partitions now\n");
    let topics = json(&run(&admin, &["topic", "ls", "--json"], &[]).await);
    assert_eq!(
        topics["topics"],
        serde_json::json!([{"name": "orders", "partitions": 8}, {"name": "seeded", "partitions": 2}])
    );
    let table = stdout(&run(&admin, &["topic", "ls"], &[]).await);
    assert_eq!(table.lines().next(), Some("TOPIC   PARTITIONS  RACKS"));

    let groups = json(&run(&admin, &["group", "ls", "--json"], &[]).await);
    assert_eq!(groups["groups"], serde_json::json!([]));
    let unknown = run(&admin, &["group", "describe", "ghost"], &[]).await;
    assert_eq!(unknown.status.code(), Some(1));
    assert!(
        stderr(&unknown).contains("group ghost does not exist"),
        "{}",
        stderr(&unknown)
    );

    let set = json(
        &run(
            &admin,
            &[
                "group",
                "set",
                "app",
                "--strategy",
                "range",
                "--param",
                "a=1",
                "--param",
                "b=2",
                "--json",
            ],
            &[],
        )
        .await,
    );
    assert_eq!(set["config"]["strategy"], "range");
    assert_eq!(
        set["config"]["params"],
        serde_json::json!({"a": "1", "b": "2"})
    );
    let bad = run(&admin, &["group", "set", "app", "--strategy", "nope"], &[]).await;
    assert_eq!(bad.status.code(), Some(1));
    assert!(
        stderr(&bad).contains("module `nope`: no such module (HTTP 404, module_not_found)"),
        "{}",
        stderr(&bad)
    );
    let nothing = run(&admin, &["group", "set", "app"], &[]).await;
    assert_eq!(nothing.status.code(), Some(2), "a usage mistake");
    let ghost = run(&admin, &["group", "rebalance", "ghost"], &[]).await;
    assert_eq!(ghost.status.code(), Some(1));
    assert!(
        stderr(&ghost).contains("group_not_found"),
        "{}",
        stderr(&ghost)
    );
    server.shutdown().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn user_commands_add_list_change_and_remove() {
    let dir = tempfile::tempdir().unwrap();
    let server = host(dir.path(), None).await;
    let admin = format!("http://{}", server.admin_addr());
    let password = dir.path().join("alice.pw");
    std::fs::write(&password, "alice secret\nignored\n").unwrap();
    let password = password.display().to_string();

    let added = run(
        &admin,
        &["user", "add", "alice", "--password-file", &password],
        &[],
    )
    .await;
    assert_eq!(
        stdout(&added),
        "added alice for SCRAM-SHA-512 (4096 iterations)\n",
        "{}",
        stderr(&added)
    );
    let changed = run(
        &admin,
        &[
            "user",
            "add",
            "alice",
            "--password-file",
            &password,
            "--iterations",
            "8192",
        ],
        &[],
    )
    .await;
    assert_eq!(
        stdout(&changed),
        "changed the password of alice for SCRAM-SHA-512 (8192 iterations)\n"
    );
    let other = run(
        &admin,
        &[
            "user",
            "add",
            "alice",
            "--mechanism",
            "SCRAM-SHA-256",
            "--password-file",
            &password,
        ],
        &[],
    )
    .await;
    assert!(other.status.success(), "{}", stderr(&other));
    let table = stdout(&run(&admin, &["user", "ls"], &[]).await);
    assert_eq!(
        table,
        "USER   MECHANISMS\nalice  SCRAM-SHA-256 (4096), SCRAM-SHA-512 (8192)\n"
    );
    let users = json(&run(&admin, &["user", "ls", "--json"], &[]).await);
    assert_eq!(users["users"][0]["name"], "alice");

    // Refusals: the host's message, exit 1; a missing or empty file: the file named.
    let bad = run(
        &admin,
        &[
            "user",
            "add",
            "bob",
            "--mechanism",
            "SCRAM-SHA-1",
            "--password-file",
            &password,
        ],
        &[],
    )
    .await;
    assert_eq!(bad.status.code(), Some(1));
    assert!(
        stderr(&bad).contains("unknown mechanism \"SCRAM-SHA-1\""),
        "{}",
        stderr(&bad)
    );
    let empty = dir.path().join("empty.pw");
    std::fs::write(&empty, "\n").unwrap();
    let refused = run(
        &admin,
        &[
            "user",
            "add",
            "bob",
            "--password-file",
            &empty.display().to_string(),
        ],
        &[],
    )
    .await;
    assert_eq!(refused.status.code(), Some(1));
    assert!(
        stderr(&refused).contains("empty.pw"),
        "{}",
        stderr(&refused)
    );

    let removed = run(
        &admin,
        &["user", "rm", "alice", "--mechanism", "SCRAM-SHA-256"],
        &[],
    )
    .await;
    assert_eq!(stdout(&removed), "removed alice (SCRAM-SHA-256)\n");
    let removed = run(&admin, &["user", "rm", "alice"], &[]).await;
    assert_eq!(stdout(&removed), "removed alice (SCRAM-SHA-512)\n");
    let gone = run(&admin, &["user", "rm", "alice"], &[]).await;
    assert_eq!(gone.status.code(), Some(1));
    assert!(
        stderr(&gone).contains("user_not_found"),
        "{}",
        stderr(&gone)
    );
    server.shutdown().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn acl_commands_take_kafka_acls_flags() {
    let dir = tempfile::tempdir().unwrap();
    let server = host(dir.path(), None).await;
    let admin = format!("http://{}", server.admin_addr());

    // Principals x operations x resources, as kafka-acls crosses them.
    let added = run(
        &admin,
        &[
            "acl",
            "add",
            "--allow-principal",
            "User:alice",
            "--operation",
            "Read",
            "--operation",
            "Describe",
            "--group",
            "app-",
            "--topic",
            "app-",
            "--resource-pattern-type",
            "prefixed",
        ],
        &[],
    )
    .await;
    assert_eq!(
        stdout(&added),
        "added 4 ACLs (0 were there already)\n",
        "{}",
        stderr(&added)
    );
    let denied = run(
        &admin,
        &[
            "acl",
            "add",
            "--deny-principal",
            "User:bob",
            "--deny-host",
            "10.0.0.7",
            "--operation",
            "All",
            "--cluster",
        ],
        &[],
    )
    .await;
    assert!(denied.status.success(), "{}", stderr(&denied));
    let listed = json(&run(&admin, &["acl", "ls", "--json"], &[]).await);
    let acls = listed["acls"].as_array().unwrap();
    assert_eq!(acls.len(), 5, "{listed}");
    assert!(
        acls.contains(&serde_json::json!({
            "resource_type": "cluster", "resource_name": "kafka-cluster", "pattern_type": "literal",
            "principal": "User:bob", "host": "10.0.0.7", "operation": "all", "permission": "deny",
        })),
        "{listed}"
    );
    let table = stdout(&run(&admin, &["acl", "ls"], &[]).await);
    assert!(
        table.starts_with("PRINCIPAL   HOST      PERMISSION  OPERATION  RESOURCE  NAME"),
        "{table}"
    );

    // kafka-acls' own refusals: an operation the resource does not have, a principal without
    // its type; the host's message, exit 1. A flag mistake is a usage error, exit 2.
    let wrong = run(
        &admin,
        &[
            "acl",
            "add",
            "--allow-principal",
            "User:alice",
            "--operation",
            "Write",
            "--group",
            "g",
        ],
        &[],
    )
    .await;
    assert_eq!(wrong.status.code(), Some(1));
    assert!(
        stderr(&wrong).contains("is not an operation on a Group"),
        "{}",
        stderr(&wrong)
    );
    let untyped = run(
        &admin,
        &[
            "acl",
            "add",
            "--allow-principal",
            "alice",
            "--operation",
            "Read",
            "--topic",
            "t",
        ],
        &[],
    )
    .await;
    assert!(
        stderr(&untyped).contains("TYPE:NAME"),
        "{}",
        stderr(&untyped)
    );
    let usage = run(
        &admin,
        &[
            "acl",
            "add",
            "--allow-principal",
            "User:a",
            "--operation",
            "Obliterate",
            "--topic",
            "t",
        ],
        &[],
    )
    .await;
    assert_eq!(usage.status.code(), Some(2));

    let removed = run(
        &admin,
        &[
            "acl",
            "rm",
            "--allow-principal",
            "User:alice",
            "--operation",
            "Describe",
            "--group",
            "app-",
            "--resource-pattern-type",
            "prefixed",
        ],
        &[],
    )
    .await;
    assert_eq!(stdout(&removed), "removed 1 ACLs\n", "{}", stderr(&removed));
    let again = run(
        &admin,
        &[
            "acl",
            "rm",
            "--allow-principal",
            "User:alice",
            "--operation",
            "Describe",
            "--group",
            "app-",
            "--resource-pattern-type",
            "prefixed",
        ],
        &[],
    )
    .await;
    assert!(
        stderr(&again).contains("acl_not_found"),
        "{}",
        stderr(&again)
    );
    let listed = json(&run(&admin, &["acl", "ls", "--json"], &[]).await);
    assert_eq!(listed["acls"].as_array().unwrap().len(), 4);
    server.shutdown().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_token_comes_from_the_flag_or_the_environment() {
    let dir = tempfile::tempdir().unwrap();
    let server = host(dir.path(), Some("s3cret")).await;
    let admin = format!("http://{}", server.admin_addr());
    let without = run(&admin, &["module", "ls"], &[]).await;
    assert_eq!(without.status.code(), Some(1));
    assert!(
        stderr(&without).contains("bearer token"),
        "{}",
        stderr(&without)
    );
    let flag = run(&admin, &["module", "ls", "--token", "s3cret"], &[]).await;
    assert!(flag.status.success(), "{}", stderr(&flag));
    let env = run(
        &admin,
        &["module", "ls"],
        &[("ASSIGNOR_HOST_TOKEN", "s3cret")],
    )
    .await;
    assert!(env.status.success(), "{}", stderr(&env));
    server.shutdown().await.unwrap();
}

#[tokio::test]
async fn an_unreachable_host_is_exit_code_3_with_the_cause() {
    let output = run("http://127.0.0.1:9", &["group", "ls"], &[]).await;
    assert_eq!(output.status.code(), Some(3));
    let message = stderr(&output);
    assert!(
        message.contains("http://127.0.0.1:9") && message.contains("refused"),
        "{message}"
    );
}

const SCENARIO: &str = r#"{
  "topics": [{ "name": "orders", "partitions": 4 }],
  "members": [
    { "id": "a", "subscription": ["orders"], "current": { "orders": [0, 1, 2, 3] } },
    { "id": "b", "subscription": ["orders"] }
  ]
}"#;

#[tokio::test]
async fn local_simulate_runs_a_module_file_with_no_host() {
    let dir = tempfile::tempdir().unwrap();
    let module = wasm_file(dir.path(), "range");
    let scenario = dir.path().join("group.json");
    std::fs::write(&scenario, SCENARIO).unwrap();
    let scenario = scenario.display().to_string();
    // No host listens here: the local runner must not need one.
    let nowhere = "http://127.0.0.1:9";

    let args = ["simulate", "--module", &module, "--scenario", &scenario];
    let output = run(nowhere, &args, &[]).await;
    assert!(output.status.success(), "{}", stderr(&output));
    let text = stdout(&output);
    let row = |member: &str| {
        text.lines()
            .find(|l| l.split_whitespace().next() == Some(member))
            .unwrap_or_else(|| panic!("no row for {member}: {text}"))
            .to_owned()
    };
    assert!(row("a").ends_with("orders[0,1]"), "{text}");
    assert!(row("b").ends_with("orders[2,3]"), "{text}");
    assert!(text.contains("4 of 4 partitions assigned"), "{text}");
    assert!(text.contains("2 moved, 2 kept"), "{text}");
    assert!(
        text.contains("fuel") && text.contains("peak memory"),
        "{text}"
    );

    let mut json_args = args.to_vec();
    json_args.push("--json");
    let report = json(&run(nowhere, &json_args, &[]).await);
    assert_eq!(report["module"], "range");
    assert_eq!(
        report["members"][0]["assignment"],
        serde_json::json!({"orders": [0, 1]})
    );
    assert_eq!(
        report["members"][1]["assignment"],
        serde_json::json!({"orders": [2, 3]})
    );
    assert_eq!(report["unassigned"], serde_json::json!({}));
    assert!(report["usage"]["fuel"].as_u64().unwrap() > 0);

    // The host's limits apply, and can be changed as on the host: here a fuel budget enough
    // to load the module (`assignor_describe`, under 4,000) but not to assign (about 16,000).
    let starved = run(
        nowhere,
        &args,
        &[("ASSIGNOR_HOST_SANDBOX__LIMITS__FUEL", "8000")],
    )
    .await;
    assert_eq!(starved.status.code(), Some(1));
    let message = stderr(&starved);
    assert!(
        message.contains("out of fuel") && message.contains("usage"),
        "{message}"
    );

    let bad = dir.path().join("bad.json");
    std::fs::write(
        &bad,
        r#"{"topics": [], "members": [{"id": "a", "subscription": ["x"]}]}"#,
    )
    .unwrap();
    let refused = run(
        nowhere,
        &[
            "simulate",
            "--module",
            &module,
            "--scenario",
            &bad.display().to_string(),
        ],
        &[],
    )
    .await;
    assert_eq!(refused.status.code(), Some(1));
    assert!(
        stderr(&refused).contains("member a subscribes to topic x"),
        "{}",
        stderr(&refused)
    );
}

/// `serve` on an empty data directory (a newcomer's first start): the built-ins are served on
/// baseline code (none is in the precompiled cache yet), and one line says what the host
/// serves and where; the Kafka port it names accepts a connection.
#[tokio::test]
async fn a_first_start_serves_the_built_ins_on_baseline_code_and_says_where() {
    use tokio::io::{AsyncBufReadExt, BufReader};

    let dir = tempfile::tempdir().unwrap();
    let mut child = Command::new(BIN)
        .args([
            "serve",
            "--listen",
            "127.0.0.1:0",
            "--admin-listen",
            "127.0.0.1:0",
        ])
        .arg("--data-dir")
        .arg(dir.path())
        .env_remove("RUST_LOG")
        .env_remove("ASSIGNOR_HOST_CONFIG")
        .stderr(std::process::Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .expect("the binary runs");
    let mut lines = BufReader::new(child.stderr.take().unwrap()).lines();
    let mut seen = Vec::new();
    let (mut restored, mut serving) = (None, None);
    let read = async {
        while let Some(line) = lines.next_line().await.unwrap() {
            let line = strip_ansi(&line);
            if line.contains("module registry restored") {
                restored = Some(line.clone());
            }
            if line.contains("assignor-host serving") {
                serving = Some(line.clone());
                break;
            }
            seen.push(line);
        }
    };
    tokio::time::timeout(std::time::Duration::from_secs(120), read)
        .await
        .unwrap_or_else(|_| {
            panic!(
                "no serving line within 120 s; the log:\n{}",
                seen.join("\n")
            )
        });
    let restored = restored.unwrap_or_else(|| panic!("no restore line:\n{}", seen.join("\n")));
    let builtins = assignor_host::builtins::BUILTINS.len();
    assert!(
        restored.contains(&format!("baseline={builtins}")) && restored.contains("precompiled=0"),
        "{restored}"
    );
    let serving = serving.expect("the loop ends on it");
    assert!(serving.contains("mode=standalone"), "{serving}");
    assert!(
        serving.contains(&format!("strategies={builtins}")),
        "{serving}"
    );
    let kafka = serving
        .split_whitespace()
        .find_map(|field| field.strip_prefix("kafka="))
        .unwrap_or_else(|| panic!("no kafka address: {serving}"));
    tokio::net::TcpStream::connect(kafka)
        .await
        .unwrap_or_else(|e| panic!("{kafka} refuses ({e}): {serving}"));
    child.kill().await.unwrap();
}

/// `line` without its terminal colour codes (the log colours its fields on a pipe too).
fn strip_ansi(line: &str) -> String {
    let mut out = String::with_capacity(line.len());
    let mut chars = line.chars();
    while let Some(c) = chars.next() {
        if c == '\u{1b}' {
            for c in chars.by_ref() {
                if c.is_ascii_alphabetic() {
                    break;
                }
            }
        } else {
            out.push(c);
        }
    }
    out
}
