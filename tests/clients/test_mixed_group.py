"""Issue 4: one group of different clients (librdkafka through confluent-kafka and kcat,
kafka-python, aiokafka, kafkajs) is assigned as one. They share a protocol only through the
host's aliases: kafkajs proposes its own `RoundRobinAssigner`, the others Kafka's `roundrobin`
(a Kafka broker would answer INCONSISTENT_GROUP_PROTOCOL); each member gets its own spelling
back."""

from conftest import unique
from harness.expect import wait_for_assignment


def test_mixed_clients_share_one_roundrobin_group(host, consumers):
    group = unique("mixed")
    topics = {f"{group}-a": 4, f"{group}-b": 3, f"{group}-c": 5}
    host.create_topics(topics)
    plan = [("confluent-kafka", "roundrobin"), ("kafka-python", "roundrobin"),
            ("kafkajs", "RoundRobinAssigner"), ("aiokafka", "roundrobin"),
            ("kcat", "roundrobin"), ("kafkajs", "RoundRobinAssigner")]
    members = [consumers.start(client, group, sorted(topics), [strategy])
               for client, strategy in plan]

    wait_for_assignment(host, group, members, "roundrobin", topics)
    kafkajs = [m for m in members if m.client == "kafkajs"]
    assert {e["protocol"] for m in kafkajs for e in m.assignments()} == {"RoundRobinAssigner"}

    # Members of different clients leave; the others are reassigned together.
    for leaver in (members[2], members[0]):  # a kafkajs and the confluent-kafka member
        leaver.close()
        members.remove(leaver)
        wait_for_assignment(host, group, members, "roundrobin", topics)


def test_members_with_different_subscriptions_get_only_their_topics(host, consumers):
    """Heterogeneous subscriptions: round-robin skips members not subscribed to a topic, and
    nobody is given a topic it did not subscribe to (aiokafka would kill its coordination
    task on one: `Subscription._assign` asserts)."""
    group = unique("subsets")
    names = {k: f"{group}-{k}" for k in "abc"}
    topics = {names["a"]: 3, names["b"]: 4, names["c"]: 2}
    host.create_topics(topics)
    plan = [("aiokafka", "roundrobin", "ab"), ("kafka-python", "roundrobin", "bc"),
            ("kafkajs", "RoundRobinAssigner", "ca"), ("confluent-kafka", "roundrobin", "abc")]
    members = [consumers.start(client, group, sorted(names[k] for k in subset), [strategy])
               for client, strategy, subset in plan]

    expected = wait_for_assignment(host, group, members, "roundrobin", topics)
    for member, (_, _, subset) in zip(members, plan):
        assert {t for t, _ in expected[member.member_id]} <= {names[k] for k in subset}
