"""Cooperative rebalancing (KIP-429) with librdkafka's `cooperative-sticky`:
when a member leaves, the others are revoked nothing and only gain its partitions. Whoever
computes the assignment (the host's module of that name when it has one, else a client leader
the host relays, see the group's `mode`), the clients must never be asked to give up a
partition they keep, and every partition ends up owned once."""

from conftest import unique
from harness.wait import wait_until
from test_client_leader_fallback import settled


def test_a_leave_revokes_nothing_from_the_others(host, consumers):
    client = "confluent-kafka"
    group = unique(f"{client}-coop")
    topics = {f"{group}-a": 4, f"{group}-b": 3}
    host.create_topics(topics)
    members = [consumers.start(client, group, sorted(topics), ["cooperative-sticky"])
               for _ in range(3)]
    wait_until(lambda: settled(host, group, members, topics), f"{group} assigned")
    assert host.group_detail(group)["protocol"] == "cooperative-sticky"
    before = {m.member_id: m.current for m in members}
    marks = [len(m.events) for m in members]

    members[0].close()
    rest = members[1:]
    wait_until(lambda: settled(host, group, rest, topics), f"{group} reassigned")
    for m, mark in zip(rest, marks[1:]):
        revoked = [e for e in m.events[mark:] if e.get("event") == "revoked" and e["partitions"]]
        assert not revoked, f"{m.name} had partitions revoked: {revoked}"
        kept = set(map(tuple, before[m.member_id]))
        assert kept <= set(map(tuple, m.current)), (before, m.current)
    for m in members:
        assert not m.errors(), m.errors()
