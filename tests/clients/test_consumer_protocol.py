"""KIP-848's consumer protocol with librdkafka (`group.protocol=consumer`): the host computes
each target with the module named in `group.remote.assignor` and hands partitions over only
once their previous owner has released them. Checked from the clients' own callbacks: the
consumers' assignments are disjoint and together cover every partition, after a join and after
a leave; through a scale-out and a scale-in no two consumers' ownership intervals of a
partition overlap; an assignor name with no module keeps the consumers alive, assigned by the
fallback."""

import time

from conftest import unique
from harness.expect import all_partitions, pinned_first_assign, range_assign
from harness.host import HEARTBEAT_INTERVAL_MS
from harness.wait import wait_until
from test_custom_strategy import WASM

CLIENT = "confluent-kafka"


def covered_once(members, partition_counts):
    """Every member holds an assignment, no partition is held twice, and together they hold
    every partition."""
    seen = "\n".join(m.summary() for m in members)
    if any(m.current is None for m in members):
        return False, seen
    held = [tuple(tp) for m in members for tp in m.current]
    if len(held) != len(set(held)):
        raise AssertionError(f"a partition is held twice:\n{seen}")
    return sorted(map(list, held)) == all_partitions(partition_counts), seen


def start(consumers, group, topics, assignor, n, instance_id=None):
    return [consumers.start(CLIENT, group, sorted(topics), group_protocol="consumer",
                            remote_assignor=assignor, instance_id=instance_id)
            for _ in range(n)]


def test_three_consumers_get_disjoint_complete_assignments_and_rebalance_when_one_leaves(
        host, consumers):
    group = unique("kip848-uniform")
    topics = {f"{group}-a": 4, f"{group}-b": 3}
    host.create_topics(topics)
    members = start(consumers, group, topics, "uniform", 3)
    wait_until(lambda: covered_once(members, topics), f"{group} assigned")
    # uniform balances to within one partition: 7 over 3.
    assert sorted(len(m.current) for m in members) == [2, 2, 3], [m.current for m in members]
    before = {m.member_id: set(map(tuple, m.current)) for m in members}

    members[0].close()
    rest = members[1:]
    wait_until(lambda: covered_once(rest, topics), f"{group} reassigned")
    for m in rest:
        # uniform is sticky: the two that stay keep what they had and take over the rest.
        assert before[m.member_id] <= set(map(tuple, m.current)), (before, m.current)
    for m in members:
        assert not m.errors(), m.errors()


def test_an_assignor_name_without_a_module_keeps_consumers_alive_on_the_fallback(
        host, consumers):
    group = unique("kip848-missing")
    topics = {f"{group}-a": 3}
    host.create_topics(topics)
    members = start(consumers, group, topics, "not-uploaded-yet", 2)
    wait_until(lambda: covered_once(members, topics), f"{group} assigned by the fallback")
    for m in members:
        assert not m.errors(), m.errors()
        assert m.proc.poll() is None, f"{m.name} exited"


def ownership(member):
    """[(topic, partition, start, end)] from a consumer's own callbacks: from before it took a
    partition (`since`) to after it gave it up (`at`), or to its close; end None while held."""
    held, intervals = {}, []
    for e in list(member.events):
        kind = e.get("event")
        if kind == "assigned":
            for tp in e.get("added", []):
                held.setdefault(tuple(tp), e["since"])
        elif kind == "revoked":
            for tp in e["partitions"]:
                if tuple(tp) in held:
                    intervals.append((*tp, held.pop(tuple(tp)), e["at"]))
        elif kind == "closed" and "at" in e:
            for tp, start in held.items():
                intervals.append((*tp, start, e["at"]))
            held = {}
    intervals += [(*tp, start, None) for tp, start in held.items()]
    return intervals


def assert_never_two_owners(members):
    by_partition = {}
    for m in members:
        for topic, p, start, end in ownership(m):
            by_partition.setdefault((topic, p), []).append((start, end, m.name))
    for tp, spans in by_partition.items():
        spans.sort(key=lambda s: s[0])
        for (s1, e1, a), (s2, _, b) in zip(spans, spans[1:]):
            assert a == b or (e1 is not None and e1 <= s2), \
                f"{tp} held by {a} until {e1} and by {b} from {s2}"


def test_scale_out_four_to_six_and_in_to_five_never_gives_a_partition_two_owners(
        host, consumers):
    group = unique("kip848-scale")
    topics = {f"{group}-a": 8, f"{group}-b": 4}
    host.create_topics(topics)
    members = start(consumers, group, topics, "uniform", 4)

    def spread_over_four():
        # Covered is not settled: a member still reconciling towards its target can hold one
        # partition while the others hold the rest (seen in CI), and would then gain some.
        done, seen = covered_once(members, topics)
        return done and all(len(m.current) == 3 for m in members), seen

    wait_until(spread_over_four, f"{group} assigned to four")
    before = {m.name: set(map(tuple, m.current)) for m in members}

    members += start(consumers, group, topics, "uniform", 2)
    def spread_over_six():
        done, seen = covered_once(members, topics)
        return done and all(len(m.current) == 2 for m in members), seen

    wait_until(spread_over_six, f"{group} spread over six")
    for m in members[:4]:
        # Partitions that stay are never revoked: each of the first four only gave some up.
        assert set(map(tuple, m.current)) <= before[m.name], (m.name, before[m.name], m.current)

    members[1].close()
    rest = members[:1] + members[2:]
    wait_until(lambda: covered_once(rest, topics), f"{group} spread over five")
    assert_never_two_owners(members)
    for m in members:
        assert not m.errors(), m.errors()


def holds(members, expected):
    """Each consumer holds exactly what `expected` (by member id) gives it."""
    seen = "\n".join(m.summary() for m in members) + f"\nexpected {expected}"
    return all(m.current == expected.get(m.member_id) for m in members), seen


def test_a_module_uploaded_under_a_missing_name_takes_over_without_restarting_consumers(
        host, consumers):
    """`pinned-first` (tests/fixtures/custom-strategy, built with the SDK) is named before it
    exists: the fallback (`range`) assigns; after `module push` the same consumers, never
    restarted, hold what pinned-first gives them."""
    assert WASM.is_file(), f"{WASM} is missing: tests/clients/run builds it"
    group = unique("kip848-upload")
    topics = {f"{group}-a": 3, f"{group}-b": 2, f"{group}-c": 4}
    host.create_topics(topics)
    members = start(consumers, group, topics, "pinned-first", 3)
    wait_until(lambda: covered_once(members, topics), f"{group} assigned by the fallback")
    subscriptions = {m.member_id: sorted(topics) for m in members}
    wait_until(lambda: holds(members, range_assign(subscriptions, topics)),
               f"{group} holds range's answer")

    answer = host.push_module("pinned-first", WASM)
    assert answer["active"], answer
    wait_until(lambda: holds(members, pinned_first_assign(subscriptions, topics)),
               f"{group} holds pinned-first's answer")
    assert_never_two_owners(members)
    for m in members:
        assert not m.errors(), m.errors()
        assert m.proc.poll() is None, f"{m.name} exited"


def test_offsets_committed_at_the_member_epoch_are_read_back_by_a_new_consumer(
        host, consumers):
    group = unique("kip848-offsets")
    topics = {f"{group}-a": 3, f"{group}-b": 2}
    host.create_topics(topics)
    members = start(consumers, group, topics, "uniform", 2)
    wait_until(lambda: covered_once(members, topics), f"{group} assigned")
    committed = {}
    for i, member in enumerate(members):
        # OffsetCommit v9 with the member id and its member epoch.
        offsets = [[t, p, 100 * (i + 1) + p] for t, p in member.current]
        assert sorted(member.commit(offsets)) == sorted(offsets)
        committed.update({(t, p): o for t, p, o in offsets})
    assert len(committed) == 5
    for member in members:
        member.close()
    newcomer = start(consumers, group, topics, "uniform", 1)[0]
    wait_until(lambda: covered_once([newcomer], topics), f"{group} reassigned")
    assert newcomer.committed([list(tp) for tp in committed]) == committed


def test_a_static_member_restarted_within_its_session_gets_its_partitions_back(
        host, consumers):
    group = unique("kip848-static")
    topics = {f"{group}-a": 4, f"{group}-b": 2}
    host.create_topics(topics)
    static = start(consumers, group, topics, "uniform", 1, instance_id="static-1")[0]
    other = start(consumers, group, topics, "uniform", 1)[0]
    wait_until(lambda: covered_once([static, other], topics), f"{group} assigned")
    held = static.current
    others = other.current
    mark = len(other.events)

    static.close()  # librdkafka leaves with epoch -2: its partitions stay its own
    again = start(consumers, group, topics, "uniform", 1, instance_id="static-1")[0]
    wait_until(lambda: covered_once([again, other], topics), f"{group} static member back")
    assert again.current == held
    assert other.current == others
    gained = [e["added"] for e in other.events[mark:] if e.get("event") == "assigned" and e["added"]]
    assert not gained, f"the other member took the static one's partitions: {gained}"
    assert_never_two_owners([static, again, other])
    for m in (static, again, other):
        assert not m.errors(), m.errors()


def test_a_mixed_group_of_kafka_python_classic_and_librdkafka_consumer_members(
        host, consumers):
    """Kafka's mixed groups: kafka-python speaks the classic protocol (JoinGroup, SyncGroup)
    into a consumer group that librdkafka members formed; the module assigns all of them as
    one group. kafka-python follows a JoinGroup that names no leader, as with a server-side
    assignor, and learns of each new target from its Heartbeat (REBALANCE_IN_PROGRESS)."""
    group = unique("kip848-mixed")
    topics = {f"{group}-a": 6, f"{group}-b": 3}
    host.create_topics(topics)
    rdkafka = start(consumers, group, topics, "uniform", 2)
    wait_until(lambda: covered_once(rdkafka, topics), f"{group} assigned to librdkafka")
    classic = [consumers.start("kafka-python", group, sorted(topics), ["range"])
               for _ in range(2)]
    members = rdkafka + classic

    def spread_over_four():
        done, seen = covered_once(members, topics)
        return done and sorted(len(m.current) for m in members) == [2, 2, 2, 3], seen

    wait_until(spread_over_four, f"{group} spread over two librdkafka and two kafka-python")
    detail = host.group_detail(group)
    assert detail["group_type"] == "consumer", detail
    protocols = sorted(m["member_protocol"] for m in detail["consumer"]["members"])
    assert protocols == ["classic", "classic", "consumer", "consumer"], detail

    # A kafka-python member leaves (LeaveGroup): the other three take its partitions over.
    classic[0].close()
    rest = [rdkafka[0], rdkafka[1], classic[1]]
    wait_until(lambda: covered_once(rest, topics), f"{group} reassigned after a leave")
    assert_never_two_owners(members)
    for m in members:
        assert not m.errors(), m.errors()


def test_a_kafka_python_group_is_upgraded_online_when_a_librdkafka_consumer_member_joins(
        host, consumers):
    """Kafka's online upgrade: consumers are rolled to `group.protocol=consumer` one at a time.
    Two kafka-python members form a classic group; a librdkafka consumer-protocol member joins
    it, the group becomes a consumer group with the kafka-python members in it, and all three
    end up holding every partition once, never one partition twice."""
    group = unique("kip848-upgrade")
    topics = {f"{group}-a": 6}
    host.create_topics(topics)
    classic = [consumers.start("kafka-python", group, sorted(topics), ["range"])
               for _ in range(2)]
    wait_until(lambda: covered_once(classic, topics), f"{group} assigned as a classic group")
    assert host.group_detail(group)["group_type"] == "classic"

    members = classic + start(consumers, group, topics, "uniform", 1)

    def spread_over_three():
        done, seen = covered_once(members, topics)
        return done and sorted(len(m.current) for m in members) == [2, 2, 2], seen

    wait_until(spread_over_three, f"{group} upgraded and spread over three")
    detail = host.group_detail(group)
    assert detail["group_type"] == "consumer", detail
    protocols = sorted(m["member_protocol"] for m in detail["consumer"]["members"])
    assert protocols == ["classic", "classic", "consumer"], detail
    assert_never_two_owners(members)
    for m in members:
        assert not m.errors(), m.errors()


def test_three_consumers_naming_range_each_hold_what_an_independent_range_gives_them(
        host, consumers):
    """`group.remote.assignor=range`: each consumer's own report of its assignment equals
    Kafka's RangeAssignor computed independently (harness/expect.py) from the member ids."""
    group = unique("kip848-range")
    topics = {f"{group}-a": 5, f"{group}-b": 3}
    host.create_topics(topics)
    members = start(consumers, group, topics, "range", 3)
    wait_until(lambda: covered_once(members, topics), f"{group} assigned")
    subscriptions = {m.member_id: sorted(topics) for m in members}
    wait_until(lambda: holds(members, range_assign(subscriptions, topics)),
               f"{group} holds range's answer")
    assert host.group_detail(group)["strategy"] == "range"
    for m in members:
        assert not m.errors(), m.errors()


def test_a_module_that_fails_leaves_the_consumers_their_partitions_and_alive(
        host, consumers):
    """`pinned-first` fails on a request holding a topic named `*.poison` (its documented
    rule). Once the consumers hold its answer, such a topic appears in their subscription: the
    group epoch moves, the module fails, and the host keeps the previous target (Kafka would
    answer UNKNOWN_SERVER_ERROR, fatal to librdkafka 2.15+). The consumers keep exactly what
    they had and stay alive."""
    assert WASM.is_file(), f"{WASM} is missing: tests/clients/run builds it"
    host.push_module("pinned-first", WASM)
    group = unique("kip848-fails")
    topics = {f"{group}-a": 3, f"{group}-b": 4}
    poison = f"{group}.poison"
    host.create_topics(topics)
    members = [consumers.start(CLIENT, group, sorted(topics) + [poison],
                               group_protocol="consumer", remote_assignor="pinned-first")
               for _ in range(3)]
    wait_until(lambda: covered_once(members, topics), f"{group} assigned")
    subscriptions = {m.member_id: sorted(topics) for m in members}
    wait_until(lambda: holds(members, pinned_first_assign(subscriptions, topics)),
               f"{group} holds pinned-first's answer")
    before = {m.member_id: m.current for m in members}
    runs_before = host.group_detail(group)["history"]

    host.create_topics({poison: 2})

    def failed_once():
        last = host.group_detail(group).get("last_run") or {}
        return (last.get("outcome", {}).get("kind") == "failed", last)

    wait_until(failed_once, f"{group}: pinned-first failed on the poison topic")
    history = host.group_detail(group)["history"]
    assert history[-1]["strategy"] == "previous target", (runs_before, history)
    # Three heartbeat intervals: every consumer heartbeated since.
    time.sleep(3 * HEARTBEAT_INTERVAL_MS / 1000)
    for m in members:
        assert m.current == before[m.member_id], (m.name, before[m.member_id], m.current)
        assert not m.errors(), m.errors()
        assert m.proc.poll() is None, f"{m.name} exited"
