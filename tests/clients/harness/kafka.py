"""Apache Kafka 4.4 as the upstream: the `kafka-cluster` command of tests/kafka (the same
harness the Rust tests use), driven from Python.

`Kafka(workdir, nodes).start()` formats KRaft storage and starts `nodes` nodes (each broker
and controller, racks `rack-<id>`) on ports of this worker's block, with a PLAINTEXT listener
(trusted: its principal is a super user; what the tests use unless they are about security),
a SASL_SSL one (a test CA made at start; PLAIN and SCRAM-SHA-512 users `admin`, a super
user, `alice`, `bob` and `assignor-host`; `StandardAuthorizer`) and an SSL one that asks for
a client certificate (the host's own is `tls/assignor-host.pem`; harness/security.py). It
returns once every node answers Metadata listing all of them. The nodes stop with `stop()`,
and also when this pytest process exits however it exits (the harness's watchdog waits on it).

The binary is `KAFKA_CLUSTER_BIN`, by default target/debug/kafka-cluster (built by
tests/clients/run); Kafka's jars are fetched by Maven on first use (tests/run does it first).
"""

import json
import os
import subprocess
from pathlib import Path

from .host import ROOT, free_port
from .upstream import Upstream

BINARY = Path(os.environ.get("KAFKA_CLUSTER_BIN", ROOT / "target" / "debug" / "kafka-cluster"))


def kafka_cluster(*args, timeout_s=180):
    """Runs `kafka-cluster ARGS`; returns its stdout, or fails with what it said."""
    if not BINARY.is_file():
        raise AssertionError(f"{BINARY} is missing: tests/clients/run builds it "
                             "(cargo build -p kafka-harness), or set KAFKA_CLUSTER_BIN")
    out = subprocess.run([str(BINARY), *map(str, args)], capture_output=True, text=True,
                         timeout=timeout_s)
    if out.returncode != 0:
        raise AssertionError(f"kafka-cluster {' '.join(map(str, args))} failed "
                             f"({out.returncode}):\n{out.stderr}{out.stdout}")
    return out.stdout


class Kafka(Upstream):
    name = "kafka"

    def __init__(self, workdir: Path, nodes=1, config=None):
        self.workdir = workdir
        self.nodes = nodes
        self.config = config or {}
        self.state = None

    def start(self):
        # PLAINTEXT, SASL_SSL, CONTROLLER, SSL per node (tests/kafka, PORTS).
        ports = [free_port() for _ in range(4 * self.nodes)]
        args = ["start", "--dir", self.workdir, "--nodes", self.nodes,
                "--owner", os.getpid(), "--ports", ",".join(map(str, ports))]
        for key, value in self.config.items():
            args += ["--config", f"{key}={value}"]
        self.state = json.loads(kafka_cluster(*args))
        self.bootstrap = self.state["bootstrap"]
        self.sasl_ssl_bootstrap = self.state["sasl_ssl_bootstrap"]
        self.ssl_bootstrap = self.state["ssl_bootstrap"]
        return self

    @property
    def node_ids(self):
        return [n["node_id"] for n in self.state["nodes"]]

    @property
    def node_id(self):
        """The node id of a single-node cluster."""
        assert len(self.node_ids) == 1, f"{self.name}: {len(self.node_ids)} nodes"
        return self.node_ids[0]

    def node(self, node_id):
        return next(n for n in self.state["nodes"] if n["node_id"] == node_id)

    def stop(self):
        self.close_clients()
        if self.state is not None:
            kafka_cluster("stop", "--dir", self.workdir)
            self.state = None

    def stop_node(self, node_id, kill=False):
        """SIGTERM (a controlled shutdown), or SIGKILL with `kill`; returns once it exited."""
        kafka_cluster("stop-node", "--dir", self.workdir, "--node", node_id,
                      *(["--kill"] if kill else []))

    def start_node(self, node_id):
        """Starts a stopped node again; returns once every node lists it."""
        kafka_cluster("start-node", "--dir", self.workdir, "--node", node_id)

    def log_tail(self, lines=30):
        tails = []
        for n in (self.state or {}).get("nodes", []):
            try:
                text = Path(n["log"]).read_text(errors="replace").splitlines()[-lines:]
            except OSError:
                text = ["(no log)"]
            tails.append(f"[kafka node {n['node_id']}]\n" + "\n".join(text))
        return "\n".join(tails)

    # -- the secured listener -----------------------------------------------------------------

    def user(self, name):
        return next(u for u in self.state["users"] if u["name"] == name)

    def sasl_ssl_config(self, user, mechanism="SCRAM-SHA-512", password=None):
        """confluent-kafka settings for `user` on the SASL_SSL listener."""
        return {
            "bootstrap.servers": self.sasl_ssl_bootstrap,
            "security.protocol": "SASL_SSL",
            "ssl.ca.location": self.state["tls"]["ca"],
            "sasl.mechanism": mechanism,
            "sasl.username": user,
            "sasl.password": self.user(user)["password"] if password is None else password,
        }
