"""A Kafka Streams application (kafka-streams 4.4.0, tests/clients/streams) through the host in
proxy mode, in front of Apache Kafka 4.4 (conftest.py `proxy`).

The application counts words per key in a state store behind a repartition, so it has both
kinds of Kafka Streams internal topics (the repartition topic and the store's changelog), which
it creates itself through the host, and every input record makes one output record: the
word's count after it. Two instances share the work (one stream thread each), with the classic
group protocol: the group is the host's, and since no module is named `stream` (Streams'
assignor), the host relays the assignment of the client it elects leader, as Kafka does. One
instance is restarted once mid-way.

Checked on Kafka directly (harness/upstream.py), bypassing the host: the output topic, the
group's committed offsets, and that Kafka sees the group as the host's empty "simple" group.

- `at_least_once`: the restart is clean (SIGTERM: Streams commits and closes). Every input
  is counted and the final counts are right; each word's outputs go up one at a time to its
  count, a count repeated only where at-least-once allows a record to be processed again.
- `exactly_once_v2`: the restart is a crash (SIGKILL) while records flow. Read with
  `isolation.level=read_committed`, each word's outputs are exactly 1, 2, ..., its count: no
  increment lost, none twice, though the crashed instance's open transaction had outputs and
  offsets in it. The offsets went up through the host's TxnOffsetCommit, inside the
  transactions, and the consumers that took over read them with `require_stable`.
"""

import json
import os
import signal
import struct
import subprocess
import threading
import urllib.error
import urllib.request
from collections import Counter, defaultdict
from pathlib import Path

import pytest
from confluent_kafka import OFFSET_BEGINNING, Consumer, KafkaError, Producer, TopicPartition

from conftest import unique, upstream_kind
from harness.host import ROOT
from harness.security import librdkafka_login, login_for
from harness.wait import wait_until

# Transactions, the streams internal topics' configs and Streams' admin calls are Kafka's:
# with UPSTREAM=noida or tansu (second implementations of the other proxy tests) this file is
# left out, saying so.
pytestmark = pytest.mark.skipif(upstream_kind() != "kafka",
                                reason="Kafka Streams runs in front of Apache Kafka only")

STREAMS_APP_JAR = Path(os.environ.get(
    "STREAMS_APP_JAR", ROOT / "target" / "streams-app" / "streams-app.jar"))
# A small JVM per instance on a 2-core machine, as the Java agent's (harness/agents.py); the
# state stores are RocksDB, off the heap.
JAVA_OPTIONS = ["-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1", "-Xmx256m",
                "-XX:+DisplayVMOutputToStderr"]
PARTITIONS = 4
WORDS = [f"w{i}" for i in range(7)]
# JVM start, internal topics, several rebalances (Streams' cooperative protocol moves tasks in
# two rounds) and RocksDB on a loaded 2-core machine.
SLOW_S = 180


class StreamsApp:
    """One instance of the application: a JVM whose JSON lines (CountApp.java) are kept."""

    def __init__(self, name, argv, env=None):
        self.name = name
        self.argv = argv
        self.events = []
        self.stderr = []
        self._lock = threading.Lock()
        self.proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                     stdin=subprocess.DEVNULL, text=True, bufsize=1,
                                     env=None if env is None else {**os.environ, **env})
        threading.Thread(target=self._read, args=(self.proc.stdout, True), daemon=True).start()
        threading.Thread(target=self._read, args=(self.proc.stderr, False), daemon=True).start()

    def _read(self, stream, json_lines):
        for line in stream:
            line = line.rstrip("\n")
            with self._lock:
                if json_lines:
                    try:
                        self.events.append(json.loads(line))
                    except json.JSONDecodeError:
                        self.stderr.append(f"(stdout) {line}")
                else:
                    self.stderr = (self.stderr + [line])[-200:]

    def of(self, kind):
        with self._lock:
            return [e for e in self.events if e["event"] == kind]

    def state(self):
        states = self.of("state")
        return states[-1]["to"] if states else None

    def tasks(self):
        """The active tasks it last reported, once RUNNING again."""
        tasks = self.of("tasks")
        return set(tasks[-1]["active"]) if tasks else set()

    def errors(self):
        return [e["message"] for e in self.of("error")]

    def running_with_tasks(self):
        ok = self.proc.poll() is None and self.state() == "RUNNING" and bool(self.tasks())
        return ok, self.summary()

    def stop(self):
        """SIGTERM: Streams commits, closes and says `closed`."""
        self.proc.send_signal(signal.SIGTERM)
        self.proc.wait(timeout=60)
        assert self.of("closed"), f"{self.name} exited without closing\n{self.summary()}"

    def kill(self):
        self.proc.kill()
        self.proc.wait(timeout=30)

    def summary(self, lines=40):
        with self._lock:
            events = [json.dumps({k: v for k, v in e.items() if k != "topology"})
                      for e in self.events[-20:]]
            stderr = self.stderr[-lines:]
        return (f"[{self.name}] exit={self.proc.poll()} state={self.state()} "
                f"tasks={sorted(self.tasks())}\n  " + "\n  ".join(events)
                + "\n  stderr:\n  " + "\n  ".join(stderr))


class Apps:
    """The instances a test started, for its failure report and its cleanup."""

    def __init__(self, tmp_path, bootstrap):
        self.tmp_path = tmp_path
        self.bootstrap = bootstrap
        self.started = []

    def start(self, name, app_id, guarantee, source, sink, *extra):
        if not STREAMS_APP_JAR.is_file():
            raise AssertionError(f"{STREAMS_APP_JAR} is missing: tests/clients/run builds it "
                                 "(tests/clients/streams), or set STREAMS_APP_JAR")
        # Its own state directory, kept across its restart (the same instance coming back).
        argv = ["java", *JAVA_OPTIONS, "-jar", str(STREAMS_APP_JAR),
                "--bootstrap", self.bootstrap, "--application-id", app_id,
                "--input", source, "--output", sink, "--guarantee", guarantee,
                "--state-dir", str(self.tmp_path / f"state-{name}"), "--name", name, *extra]
        env = None
        login = login_for(self.bootstrap, "java")
        if login is not None:  # a secured run (harness/security.py): log in through the host
            mechanism, user, password = login
            argv += ["--sasl", f"{mechanism}:{user}"]
            env = {"AGENT_SASL_PASSWORD": password}
        app = StreamsApp(name, argv, env)
        self.started.append(app)
        return app

    def report(self):
        return "\n".join(a.summary() for a in self.started)


@pytest.fixture
def apps(proxy, tmp_path, request):
    started = Apps(tmp_path, proxy.host.bootstrap)
    yield started
    failed = getattr(request.node, "rep_call", None)
    if failed is not None and failed.failed:
        print("\n--- streams instances ---\n" + started.report())
        print("--- host log (tail) ---\n" + proxy.host.log_tail(60))
        print(f"--- {proxy.upstream.name} log (tail) ---\n" + proxy.upstream.log_tail(20))
    for app in started.started:
        if app.proc.poll() is None:
            app.kill()


def read_output(upstream, topic, isolation):
    """Every record of `topic` on Kafka, read directly with `isolation`
    (`read_committed` or `read_uncommitted`) up to its end: [(partition, word, count)] in
    each partition's order."""
    consumer = Consumer({"bootstrap.servers": upstream.bootstrap,
                         "group.id": unique("streams-reader"), "enable.auto.commit": False,
                         "isolation.level": isolation, "enable.partition.eof": True})
    consumer.assign([TopicPartition(topic, p, OFFSET_BEGINNING) for p in range(PARTITIONS)])
    out, at_end = [], set()

    def drained():
        for message in consumer.consume(num_messages=500, timeout=0.5):
            if message.error() is None:
                (count,) = struct.unpack(">q", message.value())
                out.append((message.partition(), message.key().decode(), count))
            elif message.error().code() == KafkaError._PARTITION_EOF:
                at_end.add(message.partition())
            else:
                raise AssertionError(f"reading {topic}: {message.error()}")
        return len(at_end) == PARTITIONS, f"{len(out)} records, at the end of {sorted(at_end)}"

    try:
        wait_until(drained, f"{topic} read to its end ({isolation})", timeout_s=60)
    finally:
        consumer.close()
    return out


def by_word(records):
    counts = defaultdict(list)
    for _, word, count in records:
        counts[word].append(count)
    return counts


def latest_counts(upstream, topic, isolation):
    return {word: counts[-1] for word, counts in by_word(read_output(upstream, topic,
                                                                      isolation)).items()}


def host_metrics(host):
    with urllib.request.urlopen(f"{host.admin_url}/metrics", timeout=30) as r:
        return r.read().decode()


def answered(metrics, api, error):
    """How many partitions or groups the host answered `error` for in `api` responses."""
    name = f'assignor_host_kafka_errors_total{{api="{api}",error="{error}"}}'
    for line in metrics.splitlines():
        if line.startswith(name):
            return float(line.split()[-1])
    return 0.0


def kafka_view_of_group(upstream, group):
    """Kafka's own DescribeGroups of `group`: (state, member count)."""
    described = upstream.admin.describe_consumer_groups([group])[group].result(timeout=30)
    return str(described.state).rsplit(".", 1)[-1], len(described.members)


@pytest.mark.parametrize("guarantee", ["at_least_once", "exactly_once_v2"])
def test_a_stateful_streams_application_through_the_host(proxy, apps, guarantee):
    host, upstream = proxy.host, proxy.upstream
    app_id = unique(f"counts-{guarantee.replace('_', '-')}")
    source, sink = f"{app_id}-words", f"{app_id}-counts"
    upstream.create_topics({source: PARTITIONS, sink: PARTITIONS})
    a = apps.start("a", app_id, guarantee, source, sink)
    b = apps.start("b", app_id, guarantee, source, sink)
    for app in (a, b):
        wait_until(app.running_with_tasks, f"{app.name} RUNNING with tasks", timeout_s=SLOW_S)
    internal = {f"{app_id}-by-word-repartition", f"{app_id}-counts-changelog"}
    # The internal topics are on Kafka, created by the application through the host.
    counts = upstream.partition_counts()
    assert internal - set(counts) == set(), sorted(t for t in counts if t.startswith(app_id))

    # The group is the host's: Streams' own assignor ("stream") ran in the client the host
    # elected leader, and the host relayed its assignment. Kafka sees an empty simple group.
    detail = host.group_detail(app_id)
    assert (detail["protocol"], detail["mode"]) == ("stream", "relay"), detail
    assert kafka_view_of_group(upstream, app_id)[1] == 0

    # The first part, then the restart while its records flow through both instances (so
    # many that they are still being counted when it comes).
    words = [WORDS[(i * 5 + i // 3) % len(WORDS)] for i in range(4000)]
    first, second = words[:2500], words[2500:]
    produce_words(host.bootstrap, source, first, start=0)

    def flowing():
        done = sum(latest_counts(upstream, sink, "read_uncommitted").values())
        return done >= 300, f"{done} of {len(first)} counted"
    wait_until(flowing, "records counted", timeout_s=SLOW_S)
    if guarantee == "exactly_once_v2":
        b.kill()  # a crash: its open transaction is aborted, its state rebuilt elsewhere
    else:
        b.stop()
    b = apps.start("b", app_id, guarantee, source, sink)
    wait_until(b.running_with_tasks, "b back, RUNNING with tasks", timeout_s=SLOW_S)
    produce_words(host.bootstrap, source, second, start=len(first))

    expected = Counter(words)
    isolation = "read_committed" if guarantee == "exactly_once_v2" else "read_uncommitted"

    def all_counted():
        now = latest_counts(upstream, sink, isolation)
        return now == expected, f"counts {dict(sorted(now.items()))}, want {dict(expected)}"
    wait_until(all_counted, f"every word counted ({isolation})", timeout_s=SLOW_S)
    a.stop()
    b.stop()
    for app in apps.started:
        assert not app.errors(), app.summary()

    output = by_word(read_output(upstream, sink, isolation))
    assert set(output) == set(expected)
    if guarantee == "exactly_once_v2":
        for word, n in expected.items():
            assert output[word] == list(range(1, n + 1)), (word, output[word])
    else:
        for word, n in expected.items():
            values = output[word]
            assert values[-1] == n, (word, values[-1], n)
            steps = [later - earlier for earlier, later in zip(values, values[1:])]
            # Up one at a time. A repeat (a count written again: a record processed again
            # after its output was written and before its state change was) is what
            # at-least-once allows; a jump would be an increment never written, and a final
            # count off the inputs a record lost or counted twice, which a clean restart
            # (everything committed at close) must not do.
            assert values[0] == 1 and set(steps) <= {0, 1}, (word, values)
        repeats = sum(len(v) - len(set(v)) for v in output.values())
        print(f"{guarantee}: {repeats} repeated counts in {sum(map(len, output.values()))}")
    uncommitted = sum(map(len, by_word(read_output(upstream, sink, "read_uncommitted")).values()))
    print(f"{guarantee}: {uncommitted} output records on Kafka, {len(words)} inputs")

    # Everything read is committed, on Kafka, for the host's group, which Kafka sees empty.
    source_partitions = [(source, p) for p in range(PARTITIONS)]
    assert upstream.committed(app_id, source_partitions) == \
        upstream.end_offsets(source_partitions)
    assert kafka_view_of_group(upstream, app_id) == ("EMPTY", 0)
    metrics = host_metrics(host)
    txn = answered(metrics, "TxnOffsetCommit", "NONE")
    plain = answered(metrics, "OffsetCommit", "NONE")
    if guarantee == "exactly_once_v2":
        assert txn > 0 and plain == 0, (txn, plain)
    else:
        assert txn == 0 and plain > 0, (txn, plain)
    print(f"{guarantee}: commits through the host: TxnOffsetCommit {txn:.0f} partitions, "
          f"OffsetCommit {plain:.0f}; OffsetFetch UNSTABLE_OFFSET_COMMIT "
          f"{answered(metrics, 'OffsetFetch', 'UNSTABLE_OFFSET_COMMIT'):.0f}")


def produce_words(bootstrap, topic, words, start):
    """One record per word, keyed r-<n>, through the host (acks=all, each acknowledged)."""
    producer = Producer({"bootstrap.servers": bootstrap, "acks": "all", "linger.ms": 5,
                         **librdkafka_login(bootstrap)})
    failed = []
    for i, word in enumerate(words, start):
        producer.produce(topic, key=f"r-{i:05d}", value=word,
                         on_delivery=lambda err, _msg: err and failed.append(str(err)))
        producer.poll(0)
    assert producer.flush(30) == 0 and not failed, failed[:5]


def test_the_streams_group_protocol_is_refused_and_forms_no_group_on_kafka(proxy, apps):
    """`group.protocol=streams` (KIP-1071) through the host: its APIs are not offered in proxy
    mode (passed up, they would form the group on Kafka behind the host's back), so the
    application is told the protocol is not supported and stops, and Kafka has no group of
    that id."""
    host, upstream = proxy.host, proxy.upstream
    app_id = unique("counts-streams-protocol")
    source, sink = f"{app_id}-words", f"{app_id}-counts"
    upstream.create_topics({source: PARTITIONS, sink: PARTITIONS})
    app = apps.start("a", app_id, "at_least_once", source, sink, "--group-protocol", "streams")
    wait_until(lambda: (bool(app.errors()), app.summary()), "the application refused",
               timeout_s=SLOW_S)
    assert any("UnsupportedVersion" in e or "not support" in e for e in app.errors()), \
        app.summary()
    print(f"refused: {app.errors()[0]}")
    groups = upstream.admin.list_consumer_groups().result(timeout=30)
    assert app_id not in {g.group_id for g in groups.valid}, "a group formed on Kafka"
    with pytest.raises(urllib.error.HTTPError):
        host.group_detail(app_id)

