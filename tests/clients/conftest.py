"""Fixtures of the real-client suite: one host per test module, and the consumers a test
starts (stopped at its end; on failure their reports and the host's log are printed).

Proxy mode (`proxy`, `proxy_consumers`): each test gets a host of its own in front of the
upstream, stopped at the test's end. The upstream is Apache Kafka 4.4, one single-node cluster
per pytest worker (`kafka`), shared by that worker's tests (each uses topic and group names of
its own); with `UPSTREAM=noida` or `UPSTREAM=tansu` each test gets its own noida-db or Tansu
instead (harness/upstream.py). `UPSTREAM_SECURITY=sasl_ssl` or `mtls` puts every proxy-mode
host in front of Kafka's secured listeners with only its documented ACLs, and has every
client log in through it where that needs it (harness/security.py)."""

import os

import itertools
import signal
from pathlib import Path

import pytest

from harness.agents import PYTHON_AGENTS, spawn
from harness.host import free_port, start_host
from harness.kafka import Kafka
from harness import security
from harness.upstream import start_upstream
from harness.wait import Timeout, wait_until


@pytest.fixture(scope="session")
def precompiled_cache(tmp_path_factory):
    """The hosts' precompiled-code cache: `CLIENTS_PRECOMPILED_CACHE` when set (tests/clients/run
    sets one for every worker and both of its passes, so each module is compiled once per
    machine, not once per worker and pass: a host stopped early went on optimising while its
    stop waited), else one per worker. Files are named by the module's hash and the engine's,
    and written whole then renamed, so hosts share it safely (host/src/registry/cache.rs)."""
    shared = os.environ.get("CLIENTS_PRECOMPILED_CACHE")
    if shared:
        path = Path(shared)
        path.mkdir(parents=True, exist_ok=True)
        return path
    return tmp_path_factory.mktemp("precompiled")


@pytest.fixture(scope="session")
def kafka(tmp_path_factory):
    """This worker's Apache Kafka: one node, started on first use, stopped at the end; in a
    secured run (`UPSTREAM_SECURITY`) with the host's ACLs granted (harness/security.py)."""
    cluster = Kafka(tmp_path_factory.mktemp("kafka")).start()
    security.grant_host_acls(cluster)
    yield cluster
    cluster.stop()


def upstream_kind():
    kind = os.environ.get("UPSTREAM", "kafka")
    if kind != "kafka" and security.mode() != "plaintext":
        raise AssertionError(f"UPSTREAM_SECURITY={security.mode()} is for Apache Kafka, "
                             f"not UPSTREAM={kind}")
    return kind


def start_proxy_host(workdir, upstream, shared, **options):
    """A host in proxy mode in front of `upstream`: over the listener and with the login
    `UPSTREAM_SECURITY` says when it is the worker's Kafka (`shared`), and then with its
    clients logging in where that mode wants them to (harness/security.py)."""
    bootstrap, settings, env = (security.host_upstream(upstream) if shared
                                else (upstream.bootstrap, {}, {}))
    options["upstream_settings"] = {**settings, **options.get("upstream_settings", {})}
    host = start_host(workdir, upstream=bootstrap, env=env, **options)
    if shared and security.mode() != "plaintext":
        # The run is what it says: the host's own connections are secured as asked.
        status = host.upstream_status()
        assert (status["security_protocol"], status["sasl_username"]) == \
            (settings["security_protocol"], settings.get("sasl_username")), status
        if security.mode() == "sasl_ssl":
            security.logs_in(host.bootstrap)
    return host


@pytest.fixture(scope="module")
def host(tmp_path_factory, precompiled_cache):
    h = start_host(tmp_path_factory.mktemp("host"), shared_cache=precompiled_cache)
    yield h
    h.stop()


# About how long each file takes on one pytest worker (seconds, 2026-12-07, from the hosts'
# logs of a full run); a file not listed takes a few seconds.
FILE_SECONDS = {
    "test_churn_soak.py": 130, "test_java_client.py": 108, "test_consumer_protocol.py": 103,
    "test_cluster.py": 83, "test_hold_departed_cooperative.py": 71,
    "test_hold_departed_eager.py": 70, "test_go_clients.py": 54, "test_stabilize.py": 48,
    "test_standalone_sasl.py": 47, "test_walkthrough.py": 47, "test_groups.py": 45,
    "test_proxy_sasl.py": 44, "test_proxy_failures.py": 42, "test_streams.py": 40,
    "test_hold_departed_kip848.py": 34, "test_hold_departed.py": 31,
    "test_proxy_records.py": 24,
}


def pytest_collection_modifyitems(items):
    """Marks `upstream` every test whose host stands in front of the upstream (the `proxy` or
    `cluster` fixture), so a run can take them alone (`-m upstream`); then orders the files
    longest first (`FILE_SECONDS`), each file's tests in their own order. The workers take
    files in this order (tests/clients/run passes `--no-loadscope-reorder`, where xdist would
    order them by their number of tests): the longest ones start first, and the short ones
    fill in at the end, instead of one worker running a two-minute file alone."""
    for item in items:
        if {"proxy", "cluster"} & set(getattr(item, "fixturenames", ())):
            item.add_marker(pytest.mark.upstream)
    order = {id(item): i for i, item in enumerate(items)}
    items.sort(key=lambda item: (-FILE_SECONDS.get(item.path.name, 5), order[id(item)]))


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    outcome = yield
    report = outcome.get_result()
    setattr(item, "rep_" + report.when, report)


class Consumers:
    """Starts consumers for one test and remembers them for the report and the cleanup."""

    _names = itertools.count(1)

    def __init__(self, host):
        self.host = host
        self.started = []

    def start(self, client, group, topics, strategies=(), client_id=None, **options):
        """`options`: `records`, `commit_on_revoke`, `group_protocol`, `remote_assignor`,
        `instance_id`, `rebalance_timeout_ms`, `rack`, `topic_pattern`
        (harness.agents.spawn)."""
        name = f"{client}#{next(self._names)}"
        agent = spawn(client, name, self.host.bootstrap, group, topics, strategies, client_id,
                      **options)
        self.started.append(agent)
        return agent

    def report(self):
        """Each consumer's last events and stderr; live Python and Java agents first dump
        their threads' stacks, to show where a client was stuck: the Python agents on SIGUSR1
        (faulthandler, agents/common.py), the Java agent on its `stacks` command (read by its
        stdin thread even while the consumer's thread is stuck)."""
        for agent in self.started:
            if agent.proc.poll() is not None:
                continue
            marker = None
            if agent.client in PYTHON_AGENTS:
                agent.proc.send_signal(signal.SIGUSR1)
                marker = "most recent call first"
            elif agent.client == "java":
                try:
                    agent.send(cmd="stacks")
                    marker = "end of stacks"
                except OSError:  # it exited just now
                    pass
            if marker:
                try:
                    wait_until(lambda: any(marker in line for line in list(agent.stderr)),
                               f"{agent.name}: stack dump", timeout_s=5)
                except Timeout:
                    pass
        return "\n".join(a.summary(events=20, stderr=60) for a in self.started)


def _consumers(host, request, upstream=None):
    c = Consumers(host)
    yield c
    failed = getattr(request.node, "rep_call", None)
    if failed is not None and failed.failed:
        print("\n--- consumers ---\n" + c.report())
        print("--- host log (tail) ---\n" + host.log_tail(60))
        if upstream is not None:
            print(f"--- {upstream.name} log (tail) ---\n" + upstream.log_tail(20))
    for agent in c.started:
        agent.kill()


@pytest.fixture
def consumers(host, request):
    yield from _consumers(host, request)


class Proxy:
    """A host in proxy mode (`host`) in front of the upstream (`upstream`)."""

    def __init__(self, upstream, host):
        self.upstream = upstream
        self.host = host


# Short enough that a partition count changed on the upstream is seen within a second or two
# (the default is 30 s); every other upstream setting is the default.
PROXY_SETTINGS = {"metadata_refresh": "1s"}


@pytest.fixture
def proxy(tmp_path, precompiled_cache, request):
    """`@pytest.mark.upstream_settings(key=value, ...)` adds `[upstream]` settings,
    `@pytest.mark.coordinator_settings(key=value, ...)` `[coordinator]` settings;
    `broker_ports_from="fixed"` fixes node 1's port (a free one, chosen here), so a restarted
    host is where the clients last saw it."""
    marker = request.node.get_closest_marker("upstream_settings")
    settings = {**PROXY_SETTINGS, **(marker.kwargs if marker else {})}
    coordinator = request.node.get_closest_marker("coordinator_settings")
    shared = upstream_kind() == "kafka"
    upstream = (request.getfixturevalue("kafka") if shared
                else start_upstream(tmp_path / "upstream"))
    if settings.get("broker_ports_from") == "fixed":
        # The broker's port here is broker_ports_from + its node id.
        settings["broker_ports_from"] = free_port() - upstream.node_id
    try:
        host = start_proxy_host(tmp_path / "host", upstream, shared,
                                shared_cache=precompiled_cache, upstream_settings=settings,
                                coordinator=coordinator.kwargs if coordinator else None)
    except BaseException:
        if not shared:
            upstream.stop()
        raise
    yield Proxy(upstream, host)
    host.stop()
    if not shared:
        upstream.stop()


@pytest.fixture
def proxy_consumers(proxy, request):
    """Consumers of the proxy-mode host (bootstrapping from it, never from the upstream)."""
    yield from _consumers(proxy.host, request, proxy.upstream)


def unique(prefix, _counter=itertools.count(1)):
    """A group or topic name no other test of this host uses."""
    return f"{prefix}-{next(_counter)}"
