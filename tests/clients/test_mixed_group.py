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
