"""Strategy choice, the relay case (docs/coordinator.md, "How the host behaves"): when the
group's common protocol has no module on the host, the host falls back to Kafka's classic
protocol: it elects a member as leader, whose client computes the assignment, and relays it in
SyncGroup. The strategy is aiokafka's sticky assignor under a name no module has
(`client-sticky`). (Not kafka-python's: kafka-python 3.0.12 can lose a join as leader, see
README "Client quirks".) Checked: every client holds what the host reports for it, the union
covers each partition once, and after a member leaves the others keep their partitions (the
client's sticky assignor ran, with its user data relayed through the host)."""

from conftest import unique
from harness.expect import all_partitions
from harness.wait import wait_until


def settled(host, group, members, partition_counts):
    """The host reports a Stable group of exactly `members`, each holding what the host says
    it was assigned, together covering every partition once."""
    d = host.describe(group)
    seen = f"{d}\n" + "\n".join(m.summary() for m in members)
    if d["state"] != "Stable" or set(d["members"]) != {m.member_id for m in members}:
        return False, seen
    if any(m.current != d["members"][m.member_id]["assignment"] for m in members):
        return False, seen
    union = sorted(tp for m in members for tp in m.current)
    return union == all_partitions(partition_counts), seen


def test_strategy_without_a_module_is_assigned_by_a_client_leader(host, consumers):
    group = unique("client-sticky")
    topics = {f"{group}-a": 4, f"{group}-b": 3}
    host.create_topics(topics)
    members = [consumers.start("aiokafka", group, sorted(topics), ["client-sticky"])
               for _ in range(3)]
    wait_until(lambda: settled(host, group, members, topics), f"{group} assigned by a member")
    detail = host.group_detail(group)
    mode = (detail["protocol"], detail["mode"], detail["strategy"])
    assert mode == ("client-sticky", "relay", None), detail
    assert sorted(len(m.current) for m in members) == [2, 2, 3]
    before = {m.member_id: m.current for m in members}

    members[0].close()
    rest = members[1:]
    wait_until(lambda: settled(host, group, rest, topics), f"{group} reassigned by a member")
    for m in rest:  # sticky: nothing a remaining member had was taken away
        kept = set(map(tuple, before[m.member_id]))
        assert kept <= set(map(tuple, m.current)), (before, m.current)
    for m in members:
        assert not m.errors(), m.errors()
