//! The nodes' JVMs, their process ids, and the watchdog that outlives a dead test.
//!
//! Each node runs in a process group of its own (so a Ctrl-C meant for the test runner does
//! not reach it first) with its pid in `<dir>/pids/node-<id>.pid`: every process, whichever
//! started the node, stops it through that file. The watchdog is `sh` waiting on the owner's
//! exit (`tail --pid`, which needs nothing from us while it waits); when the owner is gone it
//! kills every pid listed there, so a panicking, aborted or killed test leaves no Kafka behind.

use std::fs::{self, File, OpenOptions};
use std::io::Read;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::sync::Mutex;
use std::time::{Duration, Instant};
use std::{os::unix::process::CommandExt, thread};

use anyhow::{Context, Result, bail};
use rustix::process::{Pid, Signal, kill_process, kill_process_group};

use crate::{Node, State};

/// The JVM's settings for one node on a 2-core machine: a small fixed heap, the serial
/// collector (no GC threads competing with the tests), and only the C1 compiler, which about
/// halves the CPU a node burns until it answers Metadata (2.7-3.7 s against 5.1-6.5 s with C2,
/// three starts each on the project's 2-core VM on 2026-12-06: the JVM's utime + stime in
/// /proc/<pid>/stat when `kafka-cluster start` returned) and is fast enough for test traffic. Benches put C2 back
/// with [`crate::Setup::jvm_options`].
const JVM: &[&str] = &[
    "-Xms256m",
    "-Xmx768m",
    "-XX:+UseSerialGC",
    "-XX:TieredStopAtLevel=1",
    "-XX:+ExitOnOutOfMemoryError",
    "-Djava.awt.headless=true",
];

/// Children of this process, kept to be reaped (a stopped node must not linger as a zombie,
/// which would still look alive in /proc).
static CHILDREN: Mutex<Vec<Child>> = Mutex::new(Vec::new());

fn keep(child: Child) {
    CHILDREN.lock().expect("children").push(child);
}

fn reap() {
    CHILDREN
        .lock()
        .expect("children")
        .retain_mut(|c| c.try_wait().ok().flatten().is_none());
}

fn java(libs: &Path, state: &State) -> Command {
    let mut command = Command::new("java");
    command
        .args(JVM)
        .args(&state.jvm_options)
        .arg(format!(
            "-Dlog4j2.configurationFile={}",
            state.dir.join("log4j2.properties").display()
        ))
        .arg("-cp")
        .arg(libs.join("*"));
    command
}

/// Formats every node's storage with the cluster id and the SCRAM users, all at once.
pub fn format(libs: &Path, state: &State) -> Result<()> {
    let children: Vec<(i32, Child)> = state
        .nodes
        .iter()
        .map(|node| {
            let mut command = java(libs, state);
            command
                .args([
                    "kafka.tools.StorageTool",
                    "format",
                    "-t",
                    &state.cluster_id,
                    "-c",
                ])
                .arg(&node.config);
            for user in &state.users {
                command.arg("--add-scram").arg(format!(
                    "SCRAM-SHA-512=[name={},password={}]",
                    user.name, user.password
                ));
            }
            let child = command
                .stdin(Stdio::null())
                .stdout(Stdio::piped())
                .stderr(Stdio::piped())
                .spawn()
                .context("running `java` (Kafka's StorageTool)")?;
            Ok((node.node_id, child))
        })
        .collect::<Result<_>>()?;
    for (node_id, child) in children {
        let output = child.wait_with_output()?;
        if !output.status.success() {
            bail!(
                "formatting node {node_id}'s storage failed:\n{}{}",
                String::from_utf8_lossy(&output.stdout),
                String::from_utf8_lossy(&output.stderr)
            );
        }
    }
    Ok(())
}

fn pid_file(dir: &Path, node_id: i32) -> std::path::PathBuf {
    dir.join("pids").join(format!("node-{node_id}.pid"))
}

/// Starts one node's JVM, its console appended to its log.
pub fn spawn(libs: &Path, state: &State, node: &Node) -> Result<()> {
    if running(&state.dir, node.node_id) {
        bail!("node {} is running already", node.node_id);
    }
    let log = OpenOptions::new()
        .create(true)
        .append(true)
        .open(&node.log)?;
    let child = java(libs, state)
        .arg("kafka.Kafka")
        .arg(&node.config)
        .stdin(Stdio::null())
        .stdout(log.try_clone()?)
        .stderr(log)
        .process_group(0)
        .spawn()
        .context("running `java` (a Kafka node)")?;
    fs::write(pid_file(&state.dir, node.node_id), child.id().to_string())?;
    keep(child);
    Ok(())
}

fn pid_of(dir: &Path, node_id: i32) -> Option<u32> {
    fs::read_to_string(pid_file(dir, node_id))
        .ok()?
        .trim()
        .parse()
        .ok()
}

/// Whether `pid` is a live process (not gone, not a zombie).
fn alive(pid: u32) -> bool {
    reap();
    let mut stat = String::new();
    let read =
        File::open(format!("/proc/{pid}/stat")).and_then(|mut f| f.read_to_string(&mut stat));
    // The state letter follows the command name, which is in parentheses and may hold spaces.
    read.is_ok()
        && stat
            .rsplit_once(')')
            .and_then(|(_, rest)| rest.trim_start().chars().next())
            .is_some_and(|state| state != 'Z')
}

/// Whether node `node_id`'s JVM is running.
pub fn running(dir: &Path, node_id: i32) -> bool {
    pid_of(dir, node_id).is_some_and(alive)
}

/// Stops a node: SIGTERM and up to `grace` for it to exit, then SIGKILL (at once if `grace`
/// is zero). Returns once the process is gone.
pub fn stop(dir: &Path, node_id: i32, grace: Duration) -> Result<()> {
    let Some(pid) = pid_of(dir, node_id) else {
        return Ok(());
    };
    let target = Pid::from_raw(pid as i32).context("pid 0")?;
    let gone_within = |timeout: Duration| {
        let deadline = Instant::now() + timeout;
        while alive(pid) {
            if Instant::now() >= deadline {
                return false;
            }
            thread::sleep(Duration::from_millis(50));
        }
        true
    };
    let mut gone = !alive(pid);
    if !gone && !grace.is_zero() {
        let _ = kill_process(target, Signal::TERM);
        gone = gone_within(grace);
    }
    if !gone {
        let _ = kill_process(target, Signal::KILL);
        if !gone_within(Duration::from_secs(30)) {
            bail!("node {node_id} (pid {pid}) still runs 30 s after SIGKILL");
        }
    }
    let _ = fs::remove_file(pid_file(dir, node_id));
    Ok(())
}

/// Starts the watchdog: when `owner` exits it kills every node listed in `<dir>/pids` and,
/// with `remove_dir`, removes `dir`. Returns its pid, which is also its process group.
pub fn watchdog(owner: u32, dir: &Path, remove_dir: bool) -> Result<u32> {
    const SCRIPT: &str = r#"tail --pid="$0" -f /dev/null
for f in "$1"/pids/*.pid; do [ -f "$f" ] && kill -9 "$(cat "$f")" 2>/dev/null; done
if [ "$2" = 1 ]; then rm -rf "$1"; fi"#;
    let child = Command::new("sh")
        .arg("-c")
        .arg(SCRIPT)
        .arg(owner.to_string())
        .arg(dir)
        .arg(if remove_dir { "1" } else { "0" })
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .process_group(0)
        .spawn()
        .context("starting the cluster's watchdog (sh)")?;
    let pid = child.id();
    keep(child);
    Ok(pid)
}

/// Ends the watchdog (and the `tail` it waits in) once the cluster was stopped normally.
pub fn stop_watchdog(pid: u32) {
    if let Some(group) = Pid::from_raw(pid as i32) {
        let _ = kill_process_group(group, Signal::KILL);
    }
    reap();
}

/// A new cluster id as Kafka's `Uuid.randomUuid` makes them: 16 random bytes in URL-safe
/// base64 without padding, never starting with `-` (which a command line would take for an
/// option).
pub fn cluster_id() -> String {
    const ALPHABET: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";
    let mut urandom = File::open("/dev/urandom").expect("/dev/urandom");
    loop {
        let mut bytes = [0u8; 16];
        urandom.read_exact(&mut bytes).expect("16 random bytes");
        let mut bits = 0u32;
        let mut held = 0;
        let mut out = String::with_capacity(22);
        for byte in bytes {
            bits = bits << 8 | u32::from(byte);
            held += 8;
            while held >= 6 {
                held -= 6;
                out.push(ALPHABET[(bits >> held & 63) as usize] as char);
            }
        }
        if held > 0 {
            out.push(ALPHABET[(bits << (6 - held) & 63) as usize] as char);
        }
        if !out.starts_with('-') {
            return out;
        }
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn cluster_ids_are_22_url_safe_characters() {
        for _ in 0..100 {
            let id = super::cluster_id();
            assert_eq!(id.len(), 22, "{id}");
            assert!(!id.starts_with('-'), "{id}");
            assert!(
                id.chars()
                    .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_'),
                "{id}"
            );
        }
    }
}
