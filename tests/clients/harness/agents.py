"""Real Kafka consumers as child processes, all driven the same way.

Each `Agent` is one consumer: a Python agent (tests/clients/agents/*.py: confluent-kafka,
kafka-python, aiokafka), a kafkajs agent (tests/clients/node/agent.js), the Java agent
(tests/clients/java: Apache Kafka's own `KafkaConsumer`, built by tests/clients/run into
target/java-agent) or kcat itself. The
agents print JSON-line events (protocol in agents/common.py); kcat is unmodified, so its own
stderr lines ("% Group g rebalanced (memberid m): assigned: t [0], ...") are parsed into the
same events. A reader thread per stream records everything, so a failing test can show what
each client said.

In proxy mode the consumers read real records: spawned with `records=True`, each reports
every record it is handed (`records`, [t, p, offset, key]), kept in `Agent.received` with the
number of assignments the client had reported when the record came (its *term*), so a test
can tell which ownership of a partition read what.
"""

import json
import os
import re
import signal
import subprocess
import sys
import tempfile
import threading
from pathlib import Path

from .go_agents import GO_AGENTS, go_argv
from .security import login_for
from .wait import wait_until

CLIENTS_DIR = Path(__file__).resolve().parents[1]
AGENTS = CLIENTS_DIR / "agents"
NODE = CLIENTS_DIR / "node"
# The Java agent's jar (its dependencies in lib/ beside it), as tests/clients/run builds it.
JAVA_AGENT_JAR = Path(os.environ.get(
    "JAVA_AGENT_JAR", CLIENTS_DIR.parents[1] / "target" / "java-agent" / "java-agent.jar"))
# A small JVM per consumer on a 2-core machine: the serial collector, C1 only (the agents run
# seconds, not long enough for C2 to pay), and the VM's own output (a thread dump on SIGQUIT)
# on stderr, never into the JSON on stdout.
JAVA_OPTIONS = ["-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1", "-Xmx256m",
                "-XX:+DisplayVMOutputToStderr"]

# client name -> (command prefix, default strategy list)
PYTHON_AGENTS = {
    "confluent-kafka": "confluent_agent.py",
    "kafka-python": "kafka_python_agent.py",
    "aiokafka": "aiokafka_agent.py",
}
CLIENTS = ["confluent-kafka", "kafka-python", "aiokafka", "kafkajs", "kcat"]
# The Go agents (franz-go, sarama, kafka-go) are in harness/go_agents.py.


def records_summary(batches):
    records = [r for b in batches for r in b]
    per_partition = {}
    for t, p, o, _ in records:
        lo, hi = per_partition.get(f"{t}[{p}]", (o, o))
        per_partition[f"{t}[{p}]"] = (min(lo, o), max(hi, o))
    return {"event": "records", "count": len(records), "offsets": per_partition}


class Agent:
    """One consumer process. `events` grows as the client reports; `current` is the
    assignment it holds now (last `assigned`, minus anything revoked after it)."""

    def __init__(self, name, client, argv, env=None):
        self.name = name
        self.client = client
        self.argv = argv
        self.events = []
        self.stderr = []
        self.current = None
        self.member_id = None
        # (topic, partition, offset, key, term): every record the client reported, in order.
        self.received = []
        self._terms = 0
        self._cond = threading.Condition()
        self.proc = subprocess.Popen(
            argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
            text=True, bufsize=1, cwd=CLIENTS_DIR,
            env=None if env is None else {**os.environ, **env})
        threading.Thread(target=self._read_stdout, daemon=True).start()
        threading.Thread(target=self._read_stderr, daemon=True).start()

    # -- reading ------------------------------------------------------------------------------

    def _read_stdout(self):
        for line in self.proc.stdout:
            line = line.strip()
            if not line:
                continue
            try:
                event = json.loads(line)
            except ValueError:
                event = {"event": "stdout", "line": line}
            self._record(event)

    def _read_stderr(self):
        for line in self.proc.stderr:
            with self._cond:
                self.stderr.append(line.rstrip())

    def _record(self, event):
        with self._cond:
            self.events.append(event)
            kind = event.get("event")
            if kind == "records":
                self.received += [(t, p, o, k, self._terms) for t, p, o, k in event["records"]]
            elif kind == "assigned":
                self._terms += 1
                self.member_id = event["member_id"]
                self.current = sorted(map(list, event["partitions"]))
            elif kind == "revoked" and self.current is not None:
                gone = {tuple(tp) for tp in event["partitions"]}
                self.current = [tp for tp in self.current if tuple(tp) not in gone]
            self._cond.notify_all()

    # -- what the client reported -------------------------------------------------------------

    def errors(self):
        with self._cond:
            return [e["message"] for e in self.events if e.get("event") == "error"]

    def assignments(self):
        with self._cond:
            return [e for e in self.events if e.get("event") == "assigned"]

    def records(self):
        """[(topic, partition, offset, key, term)...] the client reported so far."""
        with self._cond:
            return list(self.received)

    def summary(self, events=8, stderr=8):
        with self._cond:
            lines = [f"  {self.name} ({self.client}) member={self.member_id} "
                     f"current={self.current} exit={self.proc.poll()} "
                     f"records={len(self.received)}"]
            # Records batches are many: the last `events` other events, with the batches
            # between them summed up.
            shown, batches = [], []
            for e in reversed(self.events):
                if e.get("event") == "records":
                    batches.append(e["records"])
                    continue
                if batches:
                    shown.append(records_summary(batches[::-1]))
                    batches = []
                if len(shown) >= events:
                    break
                shown.append(e)
            if batches and len(shown) < events:
                shown.append(records_summary(batches[::-1]))
            shown.reverse()
            lines += [f"    event {json.dumps(e)}" for e in shown]
            lines += [f"    stderr {line}" for line in self.stderr[-stderr:]]
            return "\n".join(lines)

    def wait_event(self, kind, since=0, timeout_s=60):
        """The first event of `kind` at index >= `since`; errors of the client fail at once."""
        def check():
            with self._cond:
                for e in self.events[since:]:
                    if e.get("event") == kind:
                        return True, e
                    if e.get("event") == "error" and kind != "error":
                        raise AssertionError(f"{self.name} reported an error while waiting "
                                             f"for {kind}: {e['message']}\n{self.summary()}")
            if self.proc.poll() is not None and kind != "closed":
                raise AssertionError(f"{self.name} exited while waiting for {kind}\n"
                                     + self.summary())
            return False, self.summary()

        return wait_until(check, f"{self.name}: {kind}", timeout_s=timeout_s)[1]

    # -- commands -----------------------------------------------------------------------------

    def send(self, **cmd):
        self.proc.stdin.write(json.dumps(cmd) + "\n")
        self.proc.stdin.flush()

    def commit(self, offsets):
        """Commits `[[topic, partition, offset]...]` as this member (group generation)."""
        since = len(self.events)
        self.send(cmd="commit", offsets=offsets)
        return self.wait_event("committed", since)["offsets"]

    def commit_consumed(self):
        """Commits the position after the last record reported of each partition it holds;
        returns {(topic, partition): offset} committed."""
        since = len(self.events)
        self.send(cmd="commit_consumed")
        return {(t, p): o for t, p, o in self.wait_event("committed", since)["offsets"]}

    def committed(self, partitions):
        """{(topic, partition): offset or None} as the client's committed()/OffsetFetch sees."""
        since = len(self.events)
        self.send(cmd="committed", partitions=partitions)
        return {(t, p): o for t, p, o in self.wait_event("fetched", since)["offsets"]}

    def close(self, timeout_s=60):
        """Leaves the group the client's normal way (close/stop/disconnect) and exits."""
        if self.proc.poll() is None:
            since = len(self.events)
            self.send(cmd="close")
            self.wait_event("closed", since, timeout_s)
            self.proc.wait(timeout=timeout_s)

    def kill(self):
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()


class KcatAgent(Agent):
    """kcat in balanced consumer mode (-G); its rebalance output is the client's report."""

    REBALANCED = re.compile(r"^% Group (\S+) rebalanced \(memberid (\S*)\): (assigned|revoked): ?"
                            r"((?:[^\s,]+ \[\d+\](?:, )?)*)")
    EOF_LINE = re.compile(r"^% Reached end of topic (\S+) \[(\d+)\] at offset (-?\d+)")
    # The output format spawn(records=True) gives kcat (-f): one line per message.
    RECORD_FORMAT = "record %t %p %o %k\n"
    RECORD = re.compile(r"^record (\S+) (\d+) (\d+) (.*)$")
    PARTITION = re.compile(r"(\S+) \[(\d+)\]")

    def _read_stderr(self):
        for line in self.proc.stderr:
            line = line.rstrip()
            with self._cond:
                self.stderr.append(line)
            m = self.REBALANCED.match(line)
            if m:
                parts = [[t, int(p)] for t, p in self.PARTITION.findall(m.group(4))]
                self._record({"event": m.group(3), "member_id": m.group(2),
                              "generation": None, "partitions": parts})
                continue
            m = self.EOF_LINE.match(line)
            if m:
                self._record({"event": "eof", "topic": m.group(1),
                              "partition": int(m.group(2)), "offset": int(m.group(3))})
            elif line.startswith("% ERROR"):
                self._record({"event": "error", "message": line})

    def _read_stdout(self):
        for line in self.proc.stdout:
            line = line.rstrip("\n")
            m = self.RECORD.match(line)
            if m:
                self._record({"event": "records", "records": [
                    [m.group(1), int(m.group(2)), int(m.group(3)), m.group(4)]]})
            else:
                self._record({"event": "message", "line": line})

    def eof_offsets(self):
        """{(topic, partition): offset} of the latest "Reached end" per partition."""
        with self._cond:
            return {(e["topic"], e["partition"]): e["offset"]
                    for e in self.events if e.get("event") == "eof"}

    def commit(self, offsets):
        raise NotImplementedError("kcat commits only offsets of messages it consumed")

    def committed(self, partitions):
        raise NotImplementedError("kcat has no committed-offsets query")

    def close(self, timeout_s=60):
        """SIGINT: kcat stops its loop and calls rd_kafka_consumer_close (LeaveGroup)."""
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGINT)
            self.proc.wait(timeout=timeout_s)
            self._record({"event": "closed"})


def kcat_login_file(sasl, ssl_ca=None):
    """A librdkafka properties file (`kcat -F`) with the login (and TLS, trusting `ssl_ca`):
    the password stays off kcat's command line."""
    lines = [f"security.protocol={'SASL_' if sasl else ''}{'SSL' if ssl_ca else 'PLAINTEXT'}"]
    if sasl is not None:
        mechanism, user, password = sasl
        lines += [f"sasl.mechanism={mechanism}", f"sasl.username={user}",
                  f"sasl.password={password}"]
    if ssl_ca is not None:
        lines.append(f"ssl.ca.location={ssl_ca}")
    fd, path = tempfile.mkstemp(prefix="kcat-login-", suffix=".conf")
    with os.fdopen(fd, "w") as f:
        f.write("\n".join(lines) + "\n")
    return path


def spawn(client, name, bootstrap, group, topics, strategies=(), client_id=None,
          records=False, commit_on_revoke=False, group_protocol=None, remote_assignor=None,
          instance_id=None, rebalance_timeout_ms=None, rack=None, topic_pattern=None,
          sasl=None, ssl_ca=None, ssl_cert=None):
    """Starts one consumer of `client` in `group`, subscribed to `topics`. `records`: report
    every record consumed (proxy mode); `commit_on_revoke`: commit the consumed positions of
    revoked partitions in the revoke callback (the Python agents and java; kcat commits by
    itself, librdkafka's auto commit, and kafkajs has no revoke callback); `group_protocol`
    and `remote_assignor`: librdkafka's and the Java client's `group.protocol` and
    `group.remote.assignor`, `instance_id` their `group.instance.id` (kafka-python's
    `group_instance_id` too), `rebalance_timeout_ms` the rebalance timeout
    (`max.poll.interval.ms`; confluent-kafka and java), `rack` their `client.rack`
    (confluent-kafka and java: both send it in Subscription v3, KIP-881; kafka-python 3.0's
    `client_rack` never reaches its Subscription); `topic_pattern` a subscription by regular
    expression instead of `topics` (java: matched by the client under the classic protocol,
    by the coordinator under the consumer protocol); `sasl` a `(mechanism, user, password)`
    to log in with over SASL_PLAINTEXT (every client, the password in its environment; by
    default the login the host at `bootstrap` wants, harness/security.py), `ssl_ca` a CA to
    speak TLS with (every client), `ssl_cert` a `(certificate, key)` pair of PEM files to
    present (mutual TLS: confluent-kafka and java)."""
    env = None
    if sasl is None:
        # A host whose clients log in (a proxy in an UPSTREAM_SECURITY=sasl_ssl run).
        sasl = login_for(bootstrap, client)
    if client == "kcat":
        argv = ["kcat", "-b", bootstrap, "-G", group,
                "-X", "session.timeout.ms=6000", "-X", "heartbeat.interval.ms=500"]
        if sasl is not None or ssl_ca is not None:
            argv += ["-F", str(kcat_login_file(sasl, ssl_ca))]
        if strategies:
            argv += ["-X", "partition.assignment.strategy=" + ",".join(strategies)]
        if client_id:
            argv += ["-X", f"client.id={client_id}"]
        if records:
            argv += ["-u", "-X", "auto.offset.reset=earliest", "-f", KcatAgent.RECORD_FORMAT]
        return KcatAgent(name, client, argv + list(topics))
    if sasl is not None:
        # The password goes in the environment, not the command line (which `ps` shows).
        mechanism, user, password = sasl
        env = {"AGENT_SASL_PASSWORD": password}
    if client in GO_AGENTS:
        argv = go_argv(
            client, bootstrap, group, topics, strategies, client_id, records,
            commit_on_revoke=commit_on_revoke, group_protocol=group_protocol,
            remote_assignor=remote_assignor, instance_id=instance_id,
            rebalance_timeout_ms=rebalance_timeout_ms, rack=rack)
        if sasl is not None:
            argv += ["--sasl", f"{mechanism}:{user}"]
        if ssl_ca is not None:
            argv += ["--ssl-ca", str(ssl_ca)]
        return Agent(name, client, argv, env=env)
    if commit_on_revoke and client not in PYTHON_AGENTS and client != "java":
        raise ValueError(f"{client} has no revoke callback to commit in")
    common = ["--bootstrap", bootstrap, "--group", group, "--topics", ",".join(topics)]
    for s in strategies:
        common += ["--strategy", s]
    if client_id:
        common += ["--client-id", client_id]
    if records:
        common += ["--report-records"]
    if commit_on_revoke:
        common += ["--commit-on-revoke"]
    if group_protocol or remote_assignor:
        if client not in ("confluent-kafka", "java"):
            raise ValueError(f"{client} does not speak the consumer protocol")
        common += ["--group-protocol", group_protocol or "consumer"]
        if remote_assignor:
            common += ["--remote-assignor", remote_assignor]
    if instance_id:
        if client not in ("confluent-kafka", "kafka-python", "java"):
            raise ValueError(f"{client}: static members are tested with confluent-kafka, "
                             "kafka-python and java")
        common += ["--instance-id", instance_id]
    if rebalance_timeout_ms is not None:
        if client not in ("confluent-kafka", "java"):
            raise ValueError(f"{client}: the rebalance timeout is set for confluent-kafka "
                             "and java only")
        common += ["--rebalance-timeout-ms", str(rebalance_timeout_ms)]
    if topic_pattern is not None:
        if client != "java" or topics:
            raise ValueError(f"{client}: a topic pattern is tested with java, without topics")
        common += ["--topic-pattern", topic_pattern]
    if sasl is not None:
        common += ["--sasl", f"{mechanism}:{user}"]
    if ssl_ca is not None:
        common += ["--ssl-ca", str(ssl_ca)]
    if ssl_cert is not None:
        if client not in ("confluent-kafka", "java") or ssl_ca is None:
            raise ValueError(f"{client}: a client certificate is tested with confluent-kafka "
                             "and java, with ssl_ca")
        common += ["--ssl-cert", str(ssl_cert[0]), "--ssl-key", str(ssl_cert[1])]
    if rack is not None:
        if client not in ("confluent-kafka", "java"):
            raise ValueError(f"{client}: client.rack is tested with confluent-kafka and java")
        common += ["--rack", rack]
    if client == "kafkajs":
        return Agent(name, client, ["node", str(NODE / "agent.js")] + common, env=env)
    if client == "java":
        if not JAVA_AGENT_JAR.is_file():
            raise AssertionError(f"{JAVA_AGENT_JAR} is missing: tests/clients/run builds it")
        return Agent(name, client, ["java", *JAVA_OPTIONS, "-jar", str(JAVA_AGENT_JAR)] + common,
                     env=env)
    script = AGENTS / PYTHON_AGENTS[client]
    return Agent(name, client, [sys.executable, "-u", str(script)] + common, env=env)
