"""Issue 13: the built-in `hold-departed` strategy (Kafka Connect's delay window) with real
confluent-kafka (librdkafka) consumers. Three static consumers (`group.instance.id`) propose
`cooperative-sticky`, as librdkafka can; the operator selects `hold-departed` for the group
(`PUT /v1/groups/G/config`, what `assignor-host group set G --strategy hold-departed --param
window_ms=N` sends) with `inner=cooperative-sticky`.

One consumer is killed (no LeaveGroup, as a crash): its session (6 s) expires, and the other
two keep exactly their partitions and revoke nothing while the departed one's wait, unassigned
(without a rebalance: the module's answer is applied in place, docs/abi.md).
- It comes back inside the window (same instance id, a new process): it gets exactly its
  partitions back, and the other two still revoked nothing.
- It does not: at the end of the window the follow-up rebalance spreads its partitions over
  the other two, who keep their own, and every partition is owned again, once."""

import time

from conftest import unique
from harness.expect import all_partitions
from harness.wait import wait_until

COOPERATIVE = ["cooperative-sticky"]


def revocations(agent):
    """The partitions the client revoked, in order (librdkafka's revoke callback)."""
    return [tp for e in agent.events if e.get("event") == "revoked" for tp in e["partitions"]]


def start_three(host, consumers, group, topics, window_ms):
    status, answer = host.set_group_config(group, "hold-departed", {
        "window_ms": str(window_ms), "inner": "cooperative-sticky"})
    assert status == 200, answer
    agents = {name: consumers.start("confluent-kafka", group, sorted(topics), COOPERATIVE,
                                    client_id=f"app-{name}", instance_id=name)
              for name in ["a", "b", "c"]}

    def split():
        d = host.describe(group)
        seen = f"{d}\n" + "\n".join(a.summary() for a in agents.values())
        held = [a.current for a in agents.values()]
        if d["state"] != "Stable" or len(d["members"]) != 3 or any(not h for h in held):
            return False, seen
        if sorted(tp for h in held for tp in h) != all_partitions(topics):
            return False, seen
        return True, {name: a.current for name, a in agents.items()}
    before = wait_until(split, f"{group}: three consumers, every partition once",
                        timeout_s=60)[1]
    assert sorted(len(p) for p in before.values()) == [2, 2, 2], before
    return agents, before


def wait_without_b(host, group, agents, before):
    """After b is killed: the group is Stable with a and c only, each with exactly what it had,
    b's partitions held (nobody's)."""
    def held():
        d = host.describe(group)
        members = {m["client_id"]: m["assignment"] for m in d["members"].values()}
        seen = f"{d}\n" + "\n".join(agents[n].summary() for n in "ac")
        if d["state"] != "Stable" or sorted(members) != ["app-a", "app-c"]:
            return False, seen
        return members == {"app-a": before["a"], "app-c": before["c"]}, seen
    wait_until(held, f"{group}: b expired, a and c keep theirs", timeout_s=30)
    detail = host.group_detail(group)
    assert detail["strategy"] == "hold-departed", detail


def test_a_consumer_back_inside_the_window_gets_exactly_its_partitions(host, consumers):
    group = unique("hold-back")
    topics = {f"{group}-orders": 6}
    host.create_topics(topics)
    agents, before = start_three(host, consumers, group, topics, window_ms=60_000)
    revoked = {n: len(revocations(agents[n])) for n in "ac"}
    assigned = {n: len(agents[n].assignments()) for n in "ac"}
    agents["b"].kill()
    wait_without_b(host, group, agents, before)

    back = consumers.start("confluent-kafka", group, sorted(topics), COOPERATIVE,
                           client_id="app-b", instance_id="b")

    def returned():
        d = host.describe(group)
        seen = f"{d}\n{back.summary()}"
        if d["state"] != "Stable" or len(d["members"]) != 3:
            return False, seen
        return back.current == before["b"], seen
    wait_until(returned, f"{group}: b back with its partitions", timeout_s=60)
    for n in "ac":
        assert agents[n].current == before[n], agents[n].summary()
        assert len(revocations(agents[n])) == revoked[n], \
            f"{n} revoked partitions: {agents[n].summary()}"
    assert not back.errors(), back.summary()


def test_a_consumer_that_does_not_return_has_its_partitions_spread_at_the_window_end(
        host, consumers):
    group = unique("hold-gone")
    topics = {f"{group}-orders": 6}
    host.create_topics(topics)
    window_ms = 8_000
    agents, before = start_three(host, consumers, group, topics, window_ms=window_ms)
    agents["b"].kill()
    wait_without_b(host, group, agents, before)
    held_at = time.monotonic()

    def spread():
        d = host.describe(group)
        held = [agents[n].current for n in "ac"]
        seen = f"{d}\n" + "\n".join(agents[n].summary() for n in "ac")
        if d["state"] != "Stable" or len(d["members"]) != 2:
            return False, seen
        return sorted(tp for h in held for tp in h) == all_partitions(topics), seen
    wait_until(spread, f"{group}: b's partitions spread at the window end", timeout_s=60)
    waited = time.monotonic() - held_at
    # The follow-up comes at the end of the window, not before (the window opened when the
    # module saw b gone, a little before `held_at`).
    assert waited > window_ms / 1000 - 3, waited
    for n in "ac":
        assert set(map(tuple, before[n])) <= set(map(tuple, agents[n].current)), \
            agents[n].summary()
    assert sorted(len(agents[n].current) for n in "ac") == [3, 3]


def test_eager_kafka_python_static_members_that_stay_are_not_stopped(host, consumers):
    """kafka-python (eager `range`, `group_instance_id`): an eager client revokes everything
    at every rebalance, so b's expiry and its return are applied without one (in-place
    rounds, docs/abi.md): a and c revoke nothing and keep their partitions while b's wait; b,
    back inside the window with its instance id, is admitted into the current generation with
    exactly its own."""
    group = unique("hold-eager")
    topics = {f"{group}-orders": 6}
    host.create_topics(topics)
    status, answer = host.set_group_config(group, "hold-departed", {"window_ms": "60000"})
    assert status == 200, answer
    agents = {name: consumers.start("kafka-python", group, sorted(topics), ["range"],
                                    client_id=f"app-{name}", instance_id=name)
              for name in ["a", "b", "c"]}

    def split():
        d = host.describe(group)
        held = {n: a.current for n, a in agents.items()}
        seen = f"{d}\n" + "\n".join(a.summary() for a in agents.values())
        ok = (d["state"] == "Stable" and len(d["members"]) == 3
              and sorted(tp for h in held.values() for tp in (h or [])) == all_partitions(topics))
        return ok, (held if ok else seen)
    before = wait_until(split, f"{group}: three consumers, every partition once",
                        timeout_s=60)[1]
    assert sorted(len(p) for p in before.values()) == [2, 2, 2], before
    generation = host.group_detail(group)["generation"]
    revoked = {n: len(revocations(agents[n])) for n in "ac"}
    assigned = {n: len(agents[n].assignments()) for n in "ac"}
    agents["b"].kill()
    wait_without_b(host, group, agents, before)

    back = consumers.start("kafka-python", group, sorted(topics), ["range"],
                           client_id="app-b", instance_id="b")

    def returned():
        d = host.describe(group)
        ok = (d["state"] == "Stable" and len(d["members"]) == 3
              and back.current == before["b"]
              and all(agents[n].current == before[n] for n in "ac"))
        return ok, f"{d}\n{back.summary()}"
    wait_until(returned, f"{group}: b back with its partitions, a and c with theirs",
               timeout_s=60)
    for n in "ac":
        assert len(revocations(agents[n])) == revoked[n], agents[n].summary()
        assert len(agents[n].assignments()) == assigned[n], agents[n].summary()
    assert host.group_detail(group)["generation"] == generation
