"""Issue 4, per client: three consumers of one client join one group on a multi-topic
subscription and get exactly what the host's strategy computes for their member ids; one
leaves and the other two are reassigned (checked again); offsets committed by members are
read back by a new consumer of the group."""

import pytest

from conftest import unique
from harness.expect import wait_for_assignment
from harness.wait import wait_until

# Every client with every strategy it can name: librdkafka (confluent-kafka and kcat),
# kafka-python and aiokafka name Kafka's `range` and `roundrobin`; kafkajs has only its
# `RoundRobinAssigner`, which the host aliases to `roundrobin`.
CASES = [
    ("confluent-kafka", "range"),
    ("confluent-kafka", "roundrobin"),
    ("kafka-python", "range"),
    ("kafka-python", "roundrobin"),
    ("aiokafka", "roundrobin"),
    ("aiokafka", "range"),
    ("kafkajs", "RoundRobinAssigner"),
    ("kcat", "range"),
    ("kcat", "roundrobin"),
]


def make_topics(host, group):
    topics = {f"{group}-a": 3, f"{group}-b": 2, f"{group}-c": 5}
    host.create_topics(topics)
    return topics


@pytest.mark.parametrize("client,strategy", CASES)
def test_three_members_then_one_leaves(host, consumers, client, strategy):
    group = unique(f"{client}-{strategy}")
    topics = make_topics(host, group)
    members = [consumers.start(client, group, sorted(topics), [strategy]) for _ in range(3)]

    first = wait_for_assignment(host, group, members, strategy, topics)
    assert len(first) == 3 and all(first.values()), first

    members[0].close()
    rest = members[1:]
    second = wait_for_assignment(host, group, rest, strategy, topics)
    assert set(second) == {m.member_id for m in rest}
    if client == "kafkajs":
        # kafkajs got its own spelling back as the group protocol (GROUP_JOIN groupProtocol).
        assert {e["protocol"] for m in members for e in m.assignments()} == {strategy}


@pytest.mark.parametrize("client", ["confluent-kafka", "kafka-python", "aiokafka", "kafkajs"])
def test_committed_offsets_are_read_back_by_a_new_consumer(host, consumers, client):
    strategy = "RoundRobinAssigner" if client == "kafkajs" else "roundrobin"
    group = unique(f"{client}-offsets")
    topics = {f"{group}-a": 3, f"{group}-b": 2}
    host.create_topics(topics)
    members = [consumers.start(client, group, sorted(topics), [strategy]) for _ in range(2)]
    wait_for_assignment(host, group, members, strategy, topics)

    # Each member commits, as a member of the current generation, its own partitions.
    committed = {}
    for i, member in enumerate(members):
        offsets = [[t, p, 1000 * (i + 1) + 10 * p + len(t) % 7] for t, p in member.current]
        assert sorted(member.commit(offsets)) == sorted(offsets)
        committed.update({(t, p): o for t, p, o in offsets})
    assert len(committed) == 5
    for member in members:
        member.close()

    newcomer = consumers.start(client, group, sorted(topics), [strategy])
    wait_for_assignment(host, group, [newcomer], strategy, topics)
    assert newcomer.committed([list(tp) for tp in committed]) == committed


def test_kcat_resumes_from_offsets_committed_in_its_group(host, consumers):
    """kcat commits only offsets of messages it consumed, and the host stores none, so the
    offsets are committed by a confluent-kafka member of the group; kcat members of the same
    group then start each partition at the committed offset, which kcat shows as
    "% Reached end of topic t [p] at offset N" (the host's empty log ends where the consumer
    stands)."""
    group = unique("kcat-offsets")
    topics = {f"{group}-a": 3, f"{group}-b": 2}
    host.create_topics(topics)
    committer = consumers.start("confluent-kafka", group, sorted(topics), ["roundrobin"])
    wait_for_assignment(host, group, [committer], "roundrobin", topics)
    offsets = [[t, p, 500 + 10 * i + p] for i, t in enumerate(sorted(topics))
               for p in range(topics[t])]
    committer.commit(offsets)
    committer.close()

    kcats = [consumers.start("kcat", group, sorted(topics), ["roundrobin"]) for _ in range(2)]
    wait_for_assignment(host, group, kcats, "roundrobin", topics)
    committed = {(t, p): o for t, p, o in offsets}

    def resumed():
        seen = {}
        for k in kcats:
            seen.update({tp: o for tp, o in k.eof_offsets().items()
                         if list(tp) in k.current})
        return seen == committed, seen

    wait_until(resumed, "kcat members at the committed offsets")


@pytest.mark.parametrize("client,strategy", [("kafka-python", "range"),
                                             ("kafkajs", "RoundRobinAssigner"),
                                             ("confluent-kafka", "roundrobin")])
def test_a_killed_member_expires_and_the_others_are_reassigned(host, consumers, client,
                                                               strategy):
    """A consumer that dies without leaving (SIGKILL) is removed when its session (6 s)
    expires, and the others get its partitions."""
    group = unique(f"{client}-crash")
    topics = make_topics(host, group)
    members = [consumers.start(client, group, sorted(topics), [strategy]) for _ in range(3)]
    wait_for_assignment(host, group, members, strategy, topics)

    members[1].kill()
    rest = [members[0], members[2]]
    wait_for_assignment(host, group, rest, strategy, topics)
    reasons = [h["reason"] for h in host.group_detail(group)["history"]]
    assert any("session expired" in r for r in reasons), reasons
