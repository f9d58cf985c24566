"""Fixtures of the real-client suite: one host per test module, and the consumers a test
starts (stopped at its end; on failure their reports and the host's log are printed)."""

import itertools
import signal

import pytest

from harness.agents import PYTHON_AGENTS, spawn
from harness.host import start_host
from harness.wait import Timeout, wait_until


@pytest.fixture(scope="session")
def precompiled_cache(tmp_path_factory):
    return tmp_path_factory.mktemp("precompiled")


@pytest.fixture(scope="module")
def host(tmp_path_factory, precompiled_cache):
    h = start_host(tmp_path_factory.mktemp("host"), shared_cache=precompiled_cache)
    yield h
    h.stop()


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

    def start(self, client, group, topics, strategies=(), client_id=None):
        name = f"{client}#{next(self._names)}"
        agent = spawn(client, name, self.host.bootstrap, group, topics, strategies, client_id)
        self.started.append(agent)
        return agent

    def report(self):
        """Each consumer's last events and stderr; live Python agents first dump their
        threads' stacks (SIGUSR1, agents/common.py), to show where a client was stuck."""
        for agent in self.started:
            if agent.client in PYTHON_AGENTS and agent.proc.poll() is None:
                agent.proc.send_signal(signal.SIGUSR1)
                try:
                    wait_until(lambda: any("most recent call first" in line
                                           for line in list(agent.stderr)),
                               f"{agent.name}: stack dump", timeout_s=5)
                except Timeout:
                    pass
        return "\n".join(a.summary(events=20, stderr=60) for a in self.started)


@pytest.fixture
def consumers(host, request):
    c = Consumers(host)
    yield c
    failed = getattr(request.node, "rep_call", None)
    if failed is not None and failed.failed:
        print("\n--- consumers ---\n" + c.report())
        print("--- host log (tail) ---\n" + host.log_tail(60))
    for agent in c.started:
        agent.kill()


def unique(prefix, _counter=itertools.count(1)):
    """A group or topic name no other test of this host uses."""
    return f"{prefix}-{next(_counter)}"
