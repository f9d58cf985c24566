"""One assignor-host process per test module: free ports, a temporary data dir, its own log.

The host is the binary `tests/clients/run` built (`ASSIGNOR_HOST_BIN`, default
`target/debug/assignor-host`). Its config lowers `coordinator.initial_rebalance_delay_ms`
(Kafka's `group.initial.rebalance.delay.ms`, 3000 by default) so a new group forms at once;
everything else is the standalone default. Topics are created and grown through the Kafka
wire (CreateTopics, CreatePartitions) with confluent-kafka's AdminClient, and groups are
described (DescribeGroups, subscriptions and assignments decoded) with kafka-python's
KafkaAdminClient: the suite sees the host only as a client would.

Proxy mode (`upstream=`): `serve --upstream HOST:PORT`, as an operator starts it, with the
rest of `[upstream]` in the config file: by default each upstream broker gets a free port
(`broker_ports_from = 0`); `broker_ports_from` fixes them (node N on that + N), so a host
restarted on the same config and data dir is at the same addresses.
"""

import json
import os
import random
import signal
import socket
import ssl
import struct
import subprocess
import urllib.error
import urllib.request
from pathlib import Path

from confluent_kafka.admin import AdminClient, NewPartitions, NewTopic
from kafka.admin import KafkaAdminClient

from .security import kafka_python_login, librdkafka_login
from .wait import wait_until

ROOT = Path(__file__).resolve().parents[3]
BINARY = Path(os.environ.get("ASSIGNOR_HOST_BIN", ROOT / "target" / "debug" / "assignor-host"))


def _worker_ports():
    """The ports this pytest process hands out: one block of 4,000 per xdist worker (gw0, gw1,
    ...), below Linux's ephemeral range (32768-60999), so two workers never pick the same free
    port between its check here and the bind of the process it is for, and no client's
    outgoing connection takes one either (true for up to 5 workers). Without xdist, the first
    block."""
    index = int(os.environ.get("PYTEST_XDIST_WORKER", "gw0").removeprefix("gw"))
    start = 12000 + 4000 * index
    ports = list(range(start, start + 4000))
    random.Random(os.getpid()).shuffle(ports)
    return iter(ports)


_PORTS = _worker_ports()


def free_port():
    """A port of this worker's block that nothing listens on now."""
    for port in _PORTS:
        with socket.socket() as s:
            try:
                s.bind(("127.0.0.1", port))
            except OSError:
                continue
            return port
    raise RuntimeError("this worker's 4,000 ports are used up")


def toml_value(value):
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (int, float)):
        return str(value)
    return json.dumps(str(value))  # a TOML basic string


class Host:
    def __init__(self, workdir: Path, coordinator=None, shared_cache: Path = None,
                 upstream: str = None, upstream_settings=None, cluster_settings=None,
                 kafka_settings=None, admin_settings=None, admin_ca=None, env=None):
        self.workdir = workdir
        self.upstream = upstream
        # More environment for the process (the upstream's SASL password: harness/security.py).
        self.env = env or {}
        if shared_cache is not None:
            # The registry keeps precompiled modules in <data_dir>/cache, keyed by content hash
            # and engine: hosts started one after another share it, so only the first compiles
            # the built-ins (seconds each in a debug build).
            shared_cache.mkdir(parents=True, exist_ok=True)
            (workdir / "data").mkdir(parents=True, exist_ok=True)
            (workdir / "data" / "cache").symlink_to(shared_cache, target_is_directory=True)
        self.kafka_port = free_port()
        self.admin_port = free_port()
        self.bootstrap = f"127.0.0.1:{self.kafka_port}"
        # `admin_settings` with a TLS certificate: the admin API speaks HTTPS, trusted by
        # `admin_ca` (urllib's context here, `--admin-ca` for the CLI).
        admin_settings = admin_settings or {}
        scheme = "https" if "tls_certificate_location" in admin_settings else "http"
        self.admin_url = f"{scheme}://127.0.0.1:{self.admin_port}"
        self.admin_ca = admin_ca
        self._admin_tls = (ssl.create_default_context(cafile=admin_ca) if scheme == "https"
                           else None)
        coordinator = {"initial_rebalance_delay_ms": 0,
                       "consumer_heartbeat_interval_ms": HEARTBEAT_INTERVAL_MS,
                       **(coordinator or {})}
        lines = [
            f'data_dir = "{workdir / "data"}"',
            "[kafka]",
            f'listen = "{self.bootstrap}"',
        ] + [f"{k} = {toml_value(v)}" for k, v in (kafka_settings or {}).items()] + [
            "[admin]",
            f'listen = "127.0.0.1:{self.admin_port}"',
        ] + [f"{k} = {toml_value(v)}" for k, v in admin_settings.items()] + [
            "[coordinator]",
        ] + [f"{k} = {v}" for k, v in coordinator.items()]
        if upstream is not None:
            settings = {"broker_ports_from": 0, **(upstream_settings or {})}
            lines += ["[upstream]"] + [f"{k} = {toml_value(v)}" for k, v in settings.items()]
        if cluster_settings:
            lines += ["[cluster]"] + [f"{k} = {toml_value(v)}"
                                      for k, v in cluster_settings.items()]
        self.config = workdir / "host.toml"
        self.config.write_text("\n".join(lines) + "\n")
        self.log_path = workdir / "host.log"
        self.proc = None
        self._confluent = None
        self._kafka_python = None

    def start(self):
        log = open(self.log_path, "ab")  # a restarted host appends to the same log
        env = dict(os.environ, RUST_LOG=os.environ.get("RUST_LOG", "info"), NO_COLOR="1",
                   **self.env)
        argv = [str(BINARY), "serve", "--config", str(self.config)]
        if self.upstream is not None:
            argv += ["--upstream", self.upstream]
        self.proc = subprocess.Popen(
            argv, stdout=log, stderr=subprocess.STDOUT, env=env, cwd=self.workdir)

        def listening():
            if self.proc.poll() is not None:
                raise AssertionError(f"assignor-host exited with {self.proc.returncode}:\n"
                                     + self.log_tail())
            try:
                socket.create_connection(("127.0.0.1", self.kafka_port), timeout=1).close()
                return True
            except OSError as e:
                return False, e

        # A host with a cold precompiled cache compiles every built-in before it listens (the
        # first host of a run: eight modules, about 10 s idle, 50 s on a loaded machine); the
        # bound is generous so load alone never fails a test.
        wait_until(listening, "the host's Kafka listener", timeout_s=180)
        return self

    def stop(self, sig=signal.SIGINT):
        """Stops the host with `sig` (SIGINT: Ctrl-C; SIGTERM: a service manager's stop) and
        waits for it to exit; returns its exit status."""
        if self._kafka_python is not None:
            self._kafka_python.close()
            self._kafka_python = None
        if self._confluent is not None:
            self._confluent = None
        if self.proc and self.proc.poll() is None:
            self.proc.send_signal(sig)
            try:
                self.proc.wait(timeout=20)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        return self.proc.returncode if self.proc else None

    def log_tail(self, lines=40):
        try:
            return "\n".join(self.log_path.read_text(errors="replace").splitlines()[-lines:])
        except OSError:
            return "(no log)"

    # -- topics (CreateTopics / CreatePartitions over the Kafka wire) -------------------------

    @property
    def admin(self):
        if self._confluent is None:
            self._confluent = AdminClient({"bootstrap.servers": self.bootstrap,
                                           **librdkafka_login(self.bootstrap)})
        return self._confluent

    def create_topics(self, topics):
        """`topics`: {name: partitions}."""
        futures = self.admin.create_topics(
            [NewTopic(name, partitions) for name, partitions in topics.items()],
            operation_timeout=30)
        for future in futures.values():
            future.result(timeout=30)

    def create_topic_with_racks(self, name, racks):
        """`POST /v1/topics` with the replicas' racks, one list per partition: standalone,
        the catalog is where the host learns replica placement."""
        body = json.dumps({"name": name, "partitions": len(racks), "racks": racks}).encode()
        request = urllib.request.Request(f"{self.admin_url}/v1/topics", data=body,
                                         method="POST",
                                         headers={"Content-Type": "application/json"})
        with self.urlopen(request, timeout=30) as r:
            assert r.status == 201, f"create {name}: {r.status}"
            return json.loads(r.read())

    def create_partitions(self, topic, total):
        futures = self.admin.create_partitions([NewPartitions(topic, total)],
                                               operation_timeout=30)
        for future in futures.values():
            future.result(timeout=30)

    # -- modules (the admin API) ------------------------------------------------------------

    def urlopen(self, request, timeout):
        """`urllib.request.urlopen` of this host's admin API, over HTTPS when it speaks TLS."""
        return urllib.request.urlopen(request, timeout=timeout, context=self._admin_tls)

    def push_module(self, name, wasm_path):
        """Uploads a strategy through the registry as an operator does, with the CLI:
        `assignor-host module push NAME FILE --admin URL --json`. Returns the upload's answer."""
        out = subprocess.run(
            [str(BINARY), "module", "push", name, str(wasm_path), "--json",
             "--admin", self.admin_url]
            + (["--admin-ca", str(self.admin_ca)] if self.admin_ca else []),
            capture_output=True, text=True, timeout=60)
        assert out.returncode == 0, \
            f"module push failed ({out.returncode}): {out.stderr}{out.stdout}"
        return json.loads(out.stdout)

    def set_group_config(self, group, strategy, params, **settings):
        """`PUT /v1/groups/{group}/config`, as `assignor-host group set G --strategy S --param
        k=v` does: the group's strategy (None: the members' vote) and its parameters, and
        `settings` (`stabilize_ms`, `stabilize_max_ms`). Returns (HTTP status, answer)."""
        body = json.dumps({"strategy": strategy, "params": params, **settings}).encode()
        request = urllib.request.Request(f"{self.admin_url}/v1/groups/{group}/config",
                                         data=body, method="PUT",
                                         headers={"Content-Type": "application/json"})
        try:
            with self.urlopen(request, timeout=30) as r:
                return r.status, json.loads(r.read())
        except urllib.error.HTTPError as e:
            return e.code, json.loads(e.read())

    def cluster(self):
        """`GET /v1/cluster`: this node, the shards it holds, its lease, and every node it
        knows with their shards (a node of a cluster of hosts only)."""
        with self.urlopen(f"{self.admin_url}/v1/cluster", timeout=30) as r:
            return json.loads(r.read())

    def upstream_status(self):
        """`GET /v1/upstream` (proxy mode): the bootstrap, how the host's own connections are
        secured, and whether the cluster accepts them."""
        with self.urlopen(f"{self.admin_url}/v1/upstream", timeout=30) as r:
            return json.loads(r.read())

    def group_detail(self, group):
        """The admin API's view of a group (`GET /v1/groups/{group}`): strategy, module
        version, and the history of rebalances with their reasons."""
        with self.urlopen(f"{self.admin_url}/v1/groups/{group}", timeout=30) as r:
            return json.loads(r.read())

    def rebalance(self, group):
        """Starts a rebalance of `group` as an operator does (`POST /v1/groups/{group}/rebalance`,
        `assignor-host group rebalance`): the members rejoin after their next heartbeat."""
        request = urllib.request.Request(f"{self.admin_url}/v1/groups/{group}/rebalance",
                                         data=b"{}", method="POST",
                                         headers={"content-type": "application/json"})
        with self.urlopen(request, timeout=30) as r:
            assert r.status == 202, f"rebalance {group}: {r.status}"

    # -- groups (DescribeGroups) --------------------------------------------------------------

    def describe(self, group):
        """The group as DescribeGroups reports it:
        {"state", "protocol", "members": {member_id: {"topics": [...], "assignment": [[t, p]...],
        "client_id"}}}."""
        if self._kafka_python is None:
            self._kafka_python = KafkaAdminClient(bootstrap_servers=self.bootstrap,
                                                  request_timeout_ms=30000,
                                                  **kafka_python_login(self.bootstrap))
        g = self._kafka_python.describe_groups([group])[group]
        if g["error"]:
            raise AssertionError(f"DescribeGroups {group}: {g['error']}")
        members = {}
        for m in g["members"]:
            meta = m["member_metadata"] or {}
            if isinstance(meta, str):
                # kafka-python could not decode it (kafka-go's version-1 Subscription without
                # owned partitions, segmentio/kafka-go#1156, which the host reads as version 0)
                # and handed the bytes over as text (UTF-8, backslashreplace): the version-0
                # fields of short ASCII topic names come back unchanged.
                topics = subscription_v0_topics(meta.encode())
                meta = meta if topics is None else {"topics": topics}
            assignment = (m["member_assignment"] or {}).get("assigned_partitions", [])
            members[m["member_id"]] = {
                "client_id": m["client_id"],
                "topics": sorted(meta.get("topics", [])) if isinstance(meta, dict) else None,
                "assignment": sorted([a["topic"], p] for a in assignment
                                     for p in a["partitions"]),
            }
        return {"state": g["group_state"], "protocol": g["protocol_data"], "members": members}


def subscription_v0_topics(metadata):
    """The topics of Subscription bytes read as version 0 (int16 version, int32 count, then
    int16-length names), whatever version they claim; None when they are not even that."""
    try:
        (count,) = struct.unpack_from(">i", metadata, 2)
        at, topics = 6, []
        for _ in range(count):
            (length,) = struct.unpack_from(">h", metadata, at)
            topics.append(metadata[at + 2:at + 2 + length].decode())
            at += 2 + length
        if len(metadata) < at + 4 or count < 0:
            return None
        return topics
    except (struct.error, UnicodeDecodeError):
        return None


LAG_HEADER = ["TOPIC", "PARTITION", "MEMBER", "COMMITTED", "END", "LAG"]

# The consumer protocol's heartbeat interval the suite's hosts give (Kafka's and the host's
# default is 5 s): a partition a member revokes reaches the member waiting for it at that
# member's next heartbeat, so each KIP-848 handover in a test waited up to 5 s. Every wait is
# on a condition; this only shortens them (README: "Partition handovers").
HEARTBEAT_INTERVAL_MS = 500


def lag_table(text):
    """The rows of `group describe`'s offsets table (TOPIC PARTITION MEMBER COMMITTED END
    LAG), as {(topic, partition): (committed, end, lag)} with `-` read as None (the holder is
    left out: the tests check it through the admin API's members)."""
    lines = text.splitlines()
    starts = [i for i, line in enumerate(lines) if line.split() == LAG_HEADER]
    assert starts, f"no {' '.join(LAG_HEADER)} table in `group describe`:\n{text}"
    rows = {}
    for line in lines[starts[0] + 1:]:
        cells = line.split()
        if len(cells) != len(LAG_HEADER):
            break
        value = [None if c == "-" else int(c) for c in cells[3:]]
        rows[(cells[0], int(cells[1]))] = tuple(value)
    return rows


def start_host(workdir: Path, coordinator=None, shared_cache: Path = None, **proxy) -> Host:
    """A started host; `proxy`: `upstream=` and `upstream_settings=` for proxy mode,
    `cluster_settings=` for a node of a cluster of hosts, `kafka_settings=` more of `[kafka]`,
    `admin_settings=` (and `admin_ca=`) more of `[admin]`, `env=` more of the process's
    environment."""
    host = Host(workdir, coordinator, shared_cache, **proxy)
    return host.start()
