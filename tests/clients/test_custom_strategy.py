"""Issue 4: a custom strategy built from a Rust crate with the SDK
(tests/fixtures/custom-strategy, built to wasm by tests/clients/run), uploaded to the running
host through the registry with `assignor-host module push`, and selected by name by
kafka-python, aiokafka and kafkajs consumers, decides their assignment. Each client's assignor
class of that name refuses to run (`assign` reports an error): the host leads, the clients only
name the strategy."""

import os
from pathlib import Path

import pytest

from conftest import unique
from harness.expect import range_assign, roundrobin_assign, wait_for_assignment
from harness.host import ROOT

NAME = "pinned-first"
WASM = Path(os.environ.get(
    "CUSTOM_STRATEGY_WASM",
    ROOT / "target" / "fixtures" / "wasm32-unknown-unknown" / "wasm" / "custom_strategy.wasm"))


@pytest.fixture(scope="module")
def uploaded(host):
    assert WASM.is_file(), f"{WASM} is missing: tests/clients/run builds it"
    answer = host.push_module(NAME, WASM)
    assert answer["name"] == NAME and answer["active"], answer
    assert answer["info"]["name"] == NAME, answer
    return answer


def test_uploaded_strategy_assigns_a_group_that_names_it(host, consumers, uploaded):
    group = unique("custom")
    topics = {f"{group}-a": 3, f"{group}-b": 2, f"{group}-c": 4}
    host.create_topics(topics)
    members = [consumers.start(client, group, sorted(topics), [NAME])
               for client in ["kafka-python", "kafkajs", "kafka-python", "aiokafka", "kafkajs"]]

    expected = wait_for_assignment(host, group, members, NAME, topics)
    assert host.describe(group)["protocol"] == NAME
    detail = host.group_detail(group)  # the uploaded version is what ran
    assert (detail["strategy"], detail["module_version"]) == (NAME, uploaded["version"]), detail
    assert detail["last_run"]["outcome"]["kind"] == "ok" and not detail["last_run"]["fallback_used"]
    assert {e["protocol"] for m in members if m.client == "kafkajs" for e in m.assignments()} \
        == {NAME}
    # Visibly the custom rule: neither built-in would give this.
    subscriptions = {m: sorted(topics) for m in expected}
    assert expected != range_assign(subscriptions, topics)
    assert expected != roundrobin_assign(subscriptions, topics)
    smallest = min(expected)
    assert all([f"{group}-a", p] in expected[smallest] for p in range(3))

    # The smallest member leaves: the next smallest takes the pinned topic.
    leaver = next(m for m in members if m.member_id == smallest)
    leaver.close()
    rest = [m for m in members if m is not leaver]
    again = wait_for_assignment(host, group, rest, NAME, topics)
    assert all([f"{group}-a", p] in again[min(again)] for p in range(3))
