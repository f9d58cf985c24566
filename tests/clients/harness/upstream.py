"""The upstream cluster of proxy mode, spoken to directly.

By default it is **Apache Kafka 4.4** (`harness/kafka.py`), started by the project's own
harness (`tests/kafka`, the `kafka-cluster` command): one single-node cluster per pytest
worker, shared by the tests of that worker (each uses names of its own), and clusters of
their own for tests about brokers. `UPSTREAM=noida` runs each test in front of noida-db 0.2.3
(`NOIDA_DB`, which tests/run installs into target/tools/bin) and `UPSTREAM=tansu` in front of
Tansu (`TANSU`, the binary of `cargo install tansu --version 0.6.0 --no-default-features
--features dynostore --locked`, about 20 minutes to build here, so not in CI) instead: second,
independent implementations behind the same tests (docs/testing.md says which tests pass on
which). The suite reads and changes the upstream **bypassing the host**, as an operator's tools
would: topics are created and grown with confluent-kafka's AdminClient (CreateTopics,
CreatePartitions), committed offsets are read with `list_consumer_group_offsets` (OffsetFetch
from the cluster's own coordinator), end offsets with a consumer that never subscribes
(`get_watermark_offsets`, ListOffsets). So a test can compare what the clients did through the
host with what the cluster holds.

noida is stopped with SIGINT (its Ctrl-C) and never killed: a SIGKILL within ~50 ms of a
write can lose acknowledged records, which would read as a host bug.
"""

import os
import signal
import socket
import subprocess
from pathlib import Path

from confluent_kafka import Consumer, ConsumerGroupTopicPartitions, TopicPartition
from confluent_kafka.admin import AdminClient, NewPartitions, NewTopic

from .host import free_port
from .wait import wait_until


def noida_binary() -> Path:
    """The noida-db binary `NOIDA_DB` names; fails the test with how to get one."""
    path = os.environ.get("NOIDA_DB")
    if not path:
        raise AssertionError(
            "UPSTREAM=noida needs NOIDA_DB, a noida-db 0.2.3 binary: cargo install noida-db "
            "--version 0.2.3 --no-default-features --features kafka --locked, then export "
            "NOIDA_DB=/path/to/noida-db (docs/testing.md)")
    path = Path(path)
    if not (path.is_file() and os.access(path, os.X_OK)):
        raise AssertionError(f"NOIDA_DB={path} is not an executable file")
    return path


def tansu_binary() -> Path:
    """The Tansu binary `TANSU` names; fails the test with how to get one."""
    path = os.environ.get("TANSU")
    if not path:
        raise AssertionError(
            "UPSTREAM=tansu needs TANSU=/path/to/tansu (cargo install tansu --version 0.6.0 "
            "--no-default-features --features dynostore --locked)")
    path = Path(path)
    if not (path.is_file() and os.access(path, os.X_OK)):
        raise AssertionError(f"TANSU={path} is not an executable file")
    return path


class Upstream:
    """What the tests do on the cluster directly, whichever implementation it is:
    `bootstrap` (host:port,...) is set by the subclass."""

    name = "upstream"
    bootstrap = None
    _admin = None
    _offsets = None

    def close_clients(self):
        if self._offsets is not None:
            self._offsets.close()
            self._offsets = None
        self._admin = None

    # -- topics, directly ---------------------------------------------------------------------

    @property
    def admin(self):
        if self._admin is None:
            self._admin = AdminClient({"bootstrap.servers": self.bootstrap})
        return self._admin

    def create_topics(self, topics):
        """`topics`: {name: partitions}, created on the cluster itself; returns once its
        Metadata lists them (Kafka answers CreateTopics once its controller has them, and its
        brokers' Metadata lists them a moment later: a client that looks them up in between is
        told UNKNOWN_TOPIC_OR_PARTITION, which kcat takes for fatal)."""
        futures = self.admin.create_topics(
            [NewTopic(name, partitions) for name, partitions in topics.items()],
            operation_timeout=30)
        for future in futures.values():
            future.result(timeout=30)
        self.wait_for_partitions(topics)

    def create_partitions(self, topic, total):
        """CreatePartitions on the cluster itself: the host learns of it only from Metadata.
        Returns once the cluster's Metadata has the new count."""
        futures = self.admin.create_partitions([NewPartitions(topic, total)],
                                               operation_timeout=30)
        for future in futures.values():
            future.result(timeout=30)
        self.wait_for_partitions({topic: total})

    def wait_for_partitions(self, topics):
        """Waits until the cluster's Metadata has each of `topics` ({name: partitions})."""
        def listed():
            counts = self.partition_counts()
            return all(counts.get(t) == n for t, n in topics.items()), counts
        wait_until(listed, f"{sorted(topics)} in the cluster's Metadata", timeout_s=30)

    def partition_counts(self):
        """{topic: partitions} as the cluster's own Metadata says (no topic is auto-created)."""
        metadata = self.admin.list_topics(timeout=30)
        return {name: len(t.partitions) for name, t in metadata.topics.items()
                if t.error is None}

    # -- offsets, directly --------------------------------------------------------------------

    def committed(self, group, partitions):
        """{(topic, partition): offset or None}: what the cluster's own coordinator holds
        for `group` (OffsetFetch on the cluster, never through the host)."""
        request = ConsumerGroupTopicPartitions(
            group, [TopicPartition(t, p) for t, p in partitions])
        result = self.admin.list_consumer_group_offsets([request])[group].result(timeout=30)
        out = {}
        for tp in result.topic_partitions:
            assert tp.error is None, f"{self.name}: committed offset of {tp}: {tp.error}"
            out[(tp.topic, tp.partition)] = tp.offset if tp.offset >= 0 else None
        return out

    def end_offsets(self, partitions):
        """{(topic, partition): high watermark} on the cluster (ListOffsets of a consumer
        that never joins a group)."""
        if self._offsets is None:
            self._offsets = Consumer({"bootstrap.servers": self.bootstrap,
                                      "group.id": "assignor-host-tests-watermarks",
                                      "enable.auto.commit": False})
        return {(t, p): self._offsets.get_watermark_offsets(TopicPartition(t, p), timeout=30,
                                                            cached=False)[1]
                for t, p in partitions}


class Noida(Upstream):
    name = "noida-db"

    def __init__(self, workdir: Path):
        self.workdir = workdir
        workdir.mkdir(parents=True, exist_ok=True)
        self.port = free_port()
        self.bootstrap = f"127.0.0.1:{self.port}"
        self.data_dir = workdir / "data"
        self.log_path = workdir / "upstream.log"
        self.proc = None

    def command(self):
        return [str(noida_binary()), "start", "--only", "kafka", "--host", "127.0.0.1",
                "--kafka-port", str(self.port), "--data-dir", str(self.data_dir)]

    def start(self):
        log = open(self.log_path, "wb")
        self.proc = subprocess.Popen(
            self.command(),
            stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, cwd=self.workdir)

        def listening():
            if self.proc.poll() is not None:
                raise AssertionError(f"{self.name} exited with {self.proc.returncode}:\n"
                                     + self.log_tail())
            try:
                socket.create_connection(("127.0.0.1", self.port), timeout=1).close()
                return True
            except OSError as e:
                return False, e

        wait_until(listening, f"{self.name}'s Kafka listener", timeout_s=30)
        return self

    @property
    def node_id(self):
        """The broker's node id, as its own Metadata names it (noida-db: 1, Tansu: 111)."""
        brokers = self.admin.list_topics(timeout=30).brokers
        assert len(brokers) == 1, f"{self.name}: one broker expected, got {brokers}"
        return next(iter(brokers))

    def stop(self):
        self.close_clients()
        if self.proc and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGINT)
            try:
                self.proc.wait(timeout=20)
            except subprocess.TimeoutExpired:  # only if it hangs: the test is over anyway
                self.proc.kill()
                self.proc.wait()

    def log_tail(self, lines=30):
        try:
            return "\n".join(self.log_path.read_text(errors="replace").splitlines()[-lines:])
        except OSError:
            return "(no log)"

class Tansu(Noida):
    """Tansu 0.6.0 with memory storage (records and offsets live as long as the process)."""

    name = "tansu"

    def command(self):
        url = f"tcp://127.0.0.1:{self.port}"
        return [str(tansu_binary()), "broker", "--listener-url", url,
                "--advertised-listener-url", url, "--storage-engine", "memory://tansu/"]


def start_upstream(workdir: Path, kind=None) -> Upstream:
    """A per-test upstream: noida-db, or Tansu with `UPSTREAM=tansu`. (Kafka, the default
    upstream, is shared per worker: conftest.py's `kafka` fixture.)"""
    kind = kind or os.environ.get("UPSTREAM", "kafka")
    if kind == "noida":
        return Noida(workdir).start()
    if kind == "tansu":
        return Tansu(workdir).start()
    raise AssertionError(f"UPSTREAM={kind}: expected kafka, noida or tansu")


def start_noida(workdir: Path) -> Noida:
    """noida-db whatever `UPSTREAM` says."""
    return Noida(workdir).start()
