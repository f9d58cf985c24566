"""Captures the fuzz targets' seed corpus from real clients (fuzz/README.md).

A host is started on its defaults, but advertising the port of a recording relay in front of
it, so every connection every client makes (bootstrap, coordinator, fetches) crosses the
relay. The relay forwards bytes both ways unchanged and keeps each request frame a client
sent. Then each client runs a small group: confluent-kafka (librdkafka) eager `range`,
`cooperative-sticky` and the consumer protocol (KIP-848 ConsumerGroupHeartbeat),
kafka-python and aiokafka (`range`, `roundrobin`), kafkajs and kcat; its members are joined,
assigned, and closed (LeaveGroup, OffsetCommit on the way). Topics are created and grown over
the wire (CreateTopics, CreatePartitions) through the relay too.

Every distinct request frame is written, size prefix included, to `fuzz/corpus/frame/`; then
`cargo run --example seeds` in `fuzz/` derives the other targets' seeds from those
frames (`fuzz/examples/seeds.rs`). Run with the suite's environment:

    tests/clients/run --collect-only -q >/dev/null   # once: venv, npm, kcat, the host build
    cd tests/clients && .venv/bin/python capture_seeds.py

The corpus is committed; running this again adds what a newer client sends and keeps what
is there.
"""

import hashlib
import socket
import subprocess
import sys
import tempfile
import threading
from pathlib import Path

from harness.agents import spawn
from harness.host import ROOT, Host, free_port
from harness.wait import wait_until

FRAMES = ROOT / "fuzz" / "corpus" / "frame"


class Relay:
    """Forwards connections from `port` to the host's Kafka port; keeps the request frames."""

    def __init__(self, port, target_port):
        self.port, self.target_port = port, target_port
        self.frames = []
        self.lock = threading.Lock()
        self.server = socket.create_server(("127.0.0.1", port))
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self):
        while True:
            client, _ = self.server.accept()
            upstream = socket.create_connection(("127.0.0.1", self.target_port))
            threading.Thread(target=self._requests, args=(client, upstream), daemon=True).start()
            threading.Thread(target=self._pump, args=(upstream, client), daemon=True).start()

    def _requests(self, src, dst):
        buf = b""
        try:
            while chunk := src.recv(65536):
                dst.sendall(chunk)
                buf += chunk
                while len(buf) >= 4:
                    size = int.from_bytes(buf[:4], "big", signed=True)
                    if size < 0 or len(buf) < 4 + size:
                        break
                    with self.lock:
                        self.frames.append(buf[:4 + size])
                    buf = buf[4 + size:]
        except OSError:
            pass
        finally:
            for s in (src, dst):
                try:
                    s.shutdown(socket.SHUT_RDWR)
                except OSError:
                    pass

    @staticmethod
    def _pump(src, dst):
        try:
            while chunk := src.recv(65536):
                dst.sendall(chunk)
        except OSError:
            pass


GROUPS = [
    ("confluent-kafka", ["range"], {}),
    ("confluent-kafka", ["cooperative-sticky"], {}),
    ("confluent-kafka", [], {"group_protocol": "consumer"}),
    ("kafka-python", ["range"], {}),
    ("kafka-python", ["roundrobin"], {}),
    ("aiokafka", ["roundrobin"], {}),
    ("kafkajs", ["RoundRobinAssigner"], {}),
    ("kcat", ["range"], {}),
]


def admin_requests(host, groups):
    """The APIs the groups did not use: OffsetCommit from a consumer outside any generation,
    Produce (refused standalone, a real frame all the same), ListGroups, DescribeGroups and
    ConsumerGroupDescribe, OffsetDelete, DeleteGroups, DeleteTopics."""
    from confluent_kafka import Consumer, ConsumerGroupTopicPartitions, Producer, TopicPartition
    from kafka.admin import KafkaAdminClient

    c = Consumer({"bootstrap.servers": host.bootstrap, "group.id": "seeds-commit",
                  "enable.auto.commit": False})
    c.commit(offsets=[TopicPartition("seeds-a", 0, 1), TopicPartition("seeds-b", 1, 2)],
             asynchronous=False)
    c.committed([TopicPartition("seeds-a", 0)], timeout=30)
    c.close()
    p = Producer({"bootstrap.servers": host.bootstrap, "message.timeout.ms": 3000})
    p.produce("seeds-a", b"value", key=b"key")
    p.flush(5)
    admin = host.admin
    admin.list_consumer_groups().result(timeout=30)
    for future in admin.describe_consumer_groups(groups).values():
        future.result(timeout=30)
    kafka_python = KafkaAdminClient(bootstrap_servers=host.bootstrap, request_timeout_ms=30000)
    kafka_python.describe_groups(groups[:2])
    kafka_python.close()
    for future in admin.delete_consumer_groups(["seeds-commit"]).values():
        future.result(timeout=30)
    host.create_topics({"seeds-gone": 1})
    for future in admin.delete_topics(["seeds-gone"], operation_timeout=30).values():
        future.result(timeout=30)
    c = Consumer({"bootstrap.servers": host.bootstrap, "group.id": "seeds-offsets",
                  "enable.auto.commit": False})
    c.commit(offsets=[TopicPartition("seeds-a", 1, 3)], asynchronous=False)
    c.close()
    if hasattr(admin, "delete_consumer_group_offsets"):
        request = ConsumerGroupTopicPartitions("seeds-offsets", [TopicPartition("seeds-a", 1)])
        for future in admin.delete_consumer_group_offsets([request]).values():
            future.result(timeout=30)


def main():
    work = Path(tempfile.mkdtemp(prefix="capture-seeds-"))
    relay_port = free_port()
    host = Host(work)
    config = host.config.read_text().replace(
        f'listen = "{host.bootstrap}"',
        f'listen = "{host.bootstrap}"\nadvertised = "127.0.0.1:{relay_port}"')
    host.config.write_text(config)
    relay = Relay(relay_port, host.kafka_port)
    host.start()
    host.bootstrap = f"127.0.0.1:{relay_port}"
    try:
        topics = {"seeds-a": 3, "seeds-b": 2}
        host.create_topics(topics)
        host.create_partitions("seeds-b", 4)
        topics["seeds-b"] = 4
        total = sum(topics.values())
        for n, (client, strategies, options) in enumerate(GROUPS):
            group = f"seeds-{n}-{client}"
            members = [spawn(client, f"{client}#{i}", host.bootstrap, group, sorted(topics),
                             strategies, **options) for i in range(2)]

            def assigned():
                held = sum(len(m.current or []) for m in members)
                return held == total or (False, [m.current for m in members])

            try:
                wait_until(assigned, f"{group}: every partition assigned", timeout_s=90)
            finally:
                for m in members:
                    m.close()
            print(f"{group}: assigned, {len(relay.frames)} frames so far", flush=True)
        admin_requests(host, [f"seeds-{n}-{c}" for n, (c, _, _) in enumerate(GROUPS)])
        print(f"admin requests: {len(relay.frames)} frames so far", flush=True)
    finally:
        host.stop()
    FRAMES.mkdir(parents=True, exist_ok=True)
    written = 0
    for frame in relay.frames:
        path = FRAMES / hashlib.sha1(frame).hexdigest()
        if not path.exists():
            path.write_bytes(frame)
            written += 1
    print(f"{len(relay.frames)} request frames captured, {written} new in {FRAMES}")
    subprocess.run(["cargo", "run", "-q", "--example", "seeds", "--", "corpus"],
                   cwd=ROOT / "fuzz", check=True)


if __name__ == "__main__":
    sys.exit(main())
