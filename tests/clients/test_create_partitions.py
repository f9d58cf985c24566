"""Issue 4: CreatePartitions on a subscribed topic makes the host rebalance the group by
itself. In the classic protocol only the group leader's client watches partition counts, and
with the host as leader no client does (kafka-python and aiokafka refresh metadata every
5 minutes by default, kafkajs only when asked): the consumers' assignments grow to the new
partitions because the host answered their heartbeats with REBALANCE_IN_PROGRESS."""

import pytest

from conftest import unique
from harness.expect import wait_for_assignment


@pytest.mark.parametrize("client", ["kafka-python", "aiokafka", "kafkajs"])
def test_new_partitions_are_assigned_without_the_clients_noticing(host, consumers, client):
    strategy = "RoundRobinAssigner" if client == "kafkajs" else "range"
    group = unique(f"{client}-grow")
    topics = {f"{group}-a": 2, f"{group}-b": 3}
    host.create_topics(topics)
    members = [consumers.start(client, group, sorted(topics), [strategy]) for _ in range(2)]
    before = wait_for_assignment(host, group, members, strategy, topics)
    joins = [len(m.assignments()) for m in members]

    host.create_partitions(f"{group}-a", 6)
    grown = dict(topics, **{f"{group}-a": 6})
    after = wait_for_assignment(host, group, members, strategy, grown)
    assert after != before
    assert all(len(m.assignments()) > n for m, n in zip(members, joins))
    assert sorted(p for ps in after.values() for t, p in ps if t == f"{group}-a") == list(range(6))
    # The rebalance was the host's own: its history names the partition change as the reason.
    reasons = [h["reason"] for h in host.group_detail(group)["history"]]
    assert any("partition count" in r and f"{group}-a" in r for r in reasons), reasons
