"""The Go clients (issue 27): franz-go, sarama and kafka-go consumers (tests/clients/go, the
agents in harness/go_agents.py) against the host, standalone and in proxy mode.

Every client's members hold exactly what the reference strategy gives them (harness/expect.py,
from the member ids and subscriptions the host reports) and together every partition once;
a member leaves and the others are reassigned. sarama's `sticky` is balanced and keeps what
it can. franz-go's cooperative-sticky scales out and in without a partition ever having two
owners, judged from the clients' own callbacks; franz-go's KIP-848 mode is assigned by the
host's `range`. In proxy mode every record is read once, by the member the strategy names,
and the offsets the clients commit through the host are the upstream's own.

kafka-go marks its Subscription version 1 without version 1's owned partitions
(segmentio/kafka-go#1156): the host reads it as version 0 (wire/src/consumer_protocol.rs),
so kafka-go's members get their topics' partitions, not the empty assignment they used to
rejoin from about a thousand times a second.
"""

import pytest

from conftest import unique
from harness.expect import (all_partitions, range_assign, roundrobin_assign, stable_split,
                            wait_for_assignment)
from harness.ownership import ownership
from harness.records import (check_reads_follow_assignment, check_records, keys, produce,
                             wait_all_read)
from harness.wait import wait_until
from test_client_leader_fallback import settled
from test_proxy_records import assignments_of, wait_caught_up

# Each client with the strategies of Kafka's that it names and harness/expect.py computes.
CASES = [
    ("franz-go", "range"),
    ("franz-go", "roundrobin"),
    ("sarama", "range"),
    ("sarama", "roundrobin"),
    ("kafka-go", "range"),
    ("kafka-go", "roundrobin"),
]


def make_topics(host, group):
    topics = {f"{group}-a": 3, f"{group}-b": 2, f"{group}-c": 5}
    host.create_topics(topics)
    return topics


def no_errors(members):
    for m in members:
        assert not m.errors(), f"{m.name} reported errors: {m.errors()}"


@pytest.mark.parametrize("client,strategy", CASES)
def test_three_members_then_one_leaves(host, consumers, client, strategy):
    group = unique(f"{client}-{strategy}")
    topics = make_topics(host, group)
    members = [consumers.start(client, group, sorted(topics), [strategy]) for _ in range(3)]

    first = wait_for_assignment(host, group, members, strategy, topics)
    assert len(first) == 3 and all(first.values()), first
    # The Go clients report the generation they were assigned in: the host's.
    generation = host.group_detail(group)["generation"]
    assert {m.assignments()[-1]["generation"] for m in members} == {generation}

    members[0].close()
    rest = members[1:]
    second = wait_for_assignment(host, group, rest, strategy, topics)
    assert set(second) == {m.member_id for m in rest}
    no_errors(members)


def test_kafka_go_subscriptions_are_read_and_it_joins_once_per_rebalance(host, consumers):
    """segmentio/kafka-go#1156 through the real client: the host reports the topics each
    kafka-go member subscribed to (its version-1 metadata read as version 0), and a member
    that got its partitions joined once per generation: no rejoin loop."""
    group = unique("kafka-go-1156")
    topics = make_topics(host, group)
    members = [consumers.start("kafka-go", group, sorted(topics), ["range"]) for _ in range(2)]
    wait_for_assignment(host, group, members, "range", topics)
    described = host.describe(group)["members"]
    assert {m: d["topics"] for m, d in described.items()} == \
        {m.member_id: sorted(topics) for m in members}
    detail = host.group_detail(group)
    # Two joins, so at most two generations; each member took part in each at most once.
    assert detail["generation"] <= 2, detail
    assert all(len(m.assignments()) <= 2 for m in members), [m.summary() for m in members]


def test_sarama_sticky_is_balanced_and_keeps_partitions_when_a_member_leaves(host, consumers):
    """sarama names `sticky` (its BalanceStrategySticky, eager): the host's `sticky` module
    assigns. No reference computes sticky's exact answer, so the test checks what sticky
    promises: balanced to within one partition, and after a leave the others keep all they
    had."""
    group = unique("sarama-sticky")
    topics = make_topics(host, group)
    members = [consumers.start("sarama", group, sorted(topics), ["sticky"]) for _ in range(3)]
    stable_split(host, group, members, topics)
    assert host.group_detail(group)["protocol"] == "sticky"
    assert sorted(len(m.current) for m in members) == [3, 3, 4], [m.current for m in members]
    before = {m.name: {tuple(tp) for tp in m.current} for m in members}

    members[0].close()
    rest = members[1:]
    stable_split(host, group, rest, topics)
    assert sorted(len(m.current) for m in rest) == [5, 5], [m.current for m in rest]
    for m in rest:
        assert before[m.name] <= {tuple(tp) for tp in m.current}, (m.name, before, m.current)
    no_errors(members)


# -- franz-go: cooperative-sticky and KIP-848 ---------------------------------------------------

def overlaps(members):
    """Moments one partition was held by two of `members`, from their own callbacks
    (`assigned` stamped before the partitions are taken, `revoked` after they are given up,
    CLOCK_MONOTONIC): [(partition, a, b)...]."""
    dead = {}
    for m in members:
        closed = [e for e in m.events if e.get("event") == "closed"]
        dead[m.name] = closed[-1]["at_ns"] if closed else None
    spans = {}
    for m in members:
        for tp, start, end in ownership(m, dead[m.name]):
            spans.setdefault(tp, []).append((start, end, m.name))
    found = []
    for tp, held in spans.items():
        for i, (s1, e1, a) in enumerate(held):
            for s2, e2, b in held[i + 1:]:
                if a != b and (e2 is None or s1 < e2) and (e1 is None or s2 < e1):
                    found.append((tp, a, b))
    return found


def revoked_since(member, mark):
    return sorted(tuple(tp) for e in member.events[mark:] if e.get("event") == "revoked"
                  for tp in e["partitions"])


def test_franz_go_cooperative_sticky_scales_three_five_four_without_two_owners(host, consumers):
    group = unique("franz-go-coop")
    topics = {f"{group}-a": 8, f"{group}-b": 7}
    host.create_topics(topics)

    def start(n):
        return [consumers.start("franz-go", group, sorted(topics), ["cooperative-sticky"])
                for _ in range(n)]

    members = start(3)
    wait_until(lambda: settled(host, group, members, topics), f"{group} assigned to three")
    assert host.group_detail(group)["protocol"] == "cooperative-sticky"
    assert sorted(len(m.current) for m in members) == [5, 5, 5]
    before = {m.name: {tuple(tp) for tp in m.current} for m in members}
    marks = [len(m.events) for m in members]

    def spread(agents, sizes):
        # Settled is not enough: a cooperative scale-out settles twice, first with the
        # newcomers holding nothing while the others give partitions up.
        done, seen = settled(host, group, agents, topics)
        return done and sorted(len(m.current) for m in agents) == sizes, seen

    members += start(2)
    wait_until(lambda: spread(members, [3] * 5), f"{group} spread over five")
    for m, mark in zip(members[:3], marks):
        now = {tuple(tp) for tp in m.current}
        # Each of the first three only gave partitions up, and only those it lost.
        assert now <= before[m.name], (m.name, before[m.name], now)
        assert set(revoked_since(m, mark)) == before[m.name] - now, m.summary()

    leaving = members[1]
    stays = {m.name: {tuple(tp) for tp in m.current} for m in members if m is not leaving}
    marks = {m.name: len(m.events) for m in members}
    leaving.close()
    rest = [m for m in members if m is not leaving]
    wait_until(lambda: spread(rest, [3, 4, 4, 4]), f"{group} spread over four")
    for m in rest:
        # Cooperative: the four are revoked nothing and only gain the leaver's partitions.
        assert stays[m.name] <= {tuple(tp) for tp in m.current}, (m.name, m.current)
        assert not revoked_since(m, marks[m.name]), m.summary()
    assert not overlaps(members), overlaps(members)
    no_errors(members)


def holds(members, expected):
    """Each consumer holds exactly what `expected` (by member id) gives it."""
    seen = "\n".join(m.summary() for m in members) + f"\nexpected {expected}"
    return all(m.current == expected.get(m.member_id) for m in members), seen


def test_franz_go_consumer_protocol_is_assigned_by_the_hosts_range(host, consumers):
    """franz-go's KIP-848 mode (kgo.ServerSideBalancer with its RangeBalancer, which names
    the server-side assignor `range`): ConsumerGroupHeartbeat v1 to the host, whose `range`
    module assigns; after one leaves the other two hold range's answer for two, and no
    partition was held by two consumers at once."""
    group = unique("franz-go-kip848")
    topics = {f"{group}-a": 4, f"{group}-b": 3}
    host.create_topics(topics)
    members = [consumers.start("franz-go", group, sorted(topics), group_protocol="consumer",
                               remote_assignor="range") for _ in range(3)]
    wait_until(lambda: all(m.member_id for m in members), f"{group}: every member assigned")
    subscriptions = {m.member_id: sorted(topics) for m in members}
    wait_until(lambda: holds(members, range_assign(subscriptions, topics)),
               f"{group} holds range's answer")
    assert host.group_detail(group)["group_type"] == "consumer"

    members[0].close()
    rest = members[1:]
    subscriptions = {m.member_id: sorted(topics) for m in rest}
    wait_until(lambda: holds(rest, range_assign(subscriptions, topics)),
               f"{group} holds range's answer for two")
    assert sorted(tp for m in rest for tp in m.current) == all_partitions(topics)
    assert not overlaps(members), overlaps(members)
    no_errors(members)


def test_franz_go_consumer_protocol_commits_at_the_member_epoch_are_read_back(host, consumers):
    """Under KIP-848 franz-go commits with its member id and member epoch (OffsetCommit v9;
    kgo.ServerSideBalancer's documentation warns of STALE_MEMBER_EPOCH from brokers before
    Kafka 4.3): each member commits its own partitions, and a new member reads them back."""
    group = unique("franz-go-kip848-offsets")
    topics = {f"{group}-a": 3, f"{group}-b": 2}
    host.create_topics(topics)

    def start():
        return consumers.start("franz-go", group, sorted(topics), group_protocol="consumer",
                               remote_assignor="uniform")

    members = [start(), start()]

    def covered():
        seen = "\n".join(m.summary() for m in members)
        held = sorted(tp for m in members for tp in (m.current or []))
        return held == all_partitions(topics) and all(m.current for m in members), seen

    wait_until(covered, f"{group} assigned")
    committed = {}
    for i, m in enumerate(members):
        offsets = [[t, p, 100 * (i + 1) + p] for t, p in m.current]
        assert sorted(m.commit(offsets)) == sorted(offsets)
        committed.update({(t, p): o for t, p, o in offsets})
    for m in members:
        m.close()
    newcomer = start()
    wait_until(lambda: (newcomer.current == all_partitions(topics), newcomer.summary()),
               f"{group} assigned to the newcomer")
    assert newcomer.committed([list(tp) for tp in committed]) == committed
    no_errors(members + [newcomer])


# -- proxy mode --------------------------------------------------------------------------------

@pytest.mark.parametrize("client", ["franz-go", "sarama", "kafka-go"])
def test_records_are_read_once_and_commits_are_the_upstreams_own(proxy, proxy_consumers,
                                                                  client):
    """Three members of one client naming `range`, reading records produced through the
    host: each record once, by the member range gives its partition; what they commit
    through the host is what the upstream's coordinator holds (read from it directly), and
    what each client reads back through the host."""
    host, upstream = proxy.host, proxy.upstream
    group = unique(f"{client}-proxy")
    topics = {f"{group}-a": 4, f"{group}-b": 3}
    upstream.create_topics(topics)
    partitions = sorted((t, p) for t, n in topics.items() for p in range(n))
    members = [proxy_consumers.start(client, group, sorted(topics), ["range"], records=True)
               for _ in range(3)]
    expected = wait_for_assignment(host, group, members, "range", topics)
    joins = assignments_of(members)

    records = produce(host.bootstrap, f"{group}-a", keys(f"{group}-a", 300), partitions=4)
    records += produce(host.bootstrap, f"{group}-b", keys(f"{group}-b", 120), partitions=3)
    wait_all_read(members, records, f"{group}: every record read")
    wait_caught_up(upstream, members, topics)
    check_records(records, members)
    read = check_reads_follow_assignment(members, expected)
    assert assignments_of(members) == joins, "the group rebalanced while reading"

    committed = {}
    for m in members:
        mine = m.commit_consumed()
        assert sorted(mine) == sorted(tuple(tp) for tp in expected[m.member_id]), (m.name, mine)
        committed.update(mine)
    assert committed == upstream.end_offsets(partitions)
    assert upstream.committed(group, partitions) == committed
    for m in members:
        assert m.committed([list(tp) for tp in partitions]) == committed, m.name
    no_errors(members)
    print(f"\n{client}: {sum(read.values())} records read once each: {read}")


def test_a_group_of_all_three_go_clients_reads_every_record_once(proxy, proxy_consumers):
    """franz-go, sarama and kafka-go members in one `roundrobin` group: assigned as one
    (Kafka's round-robin over their member ids), each reads exactly its share, every record
    once; kafka-go's member leaves and the other two take its partitions."""
    host, upstream = proxy.host, proxy.upstream
    group = unique("go-mixed")
    topics = {f"{group}-a": 4, f"{group}-b": 5}
    upstream.create_topics(topics)
    members = [proxy_consumers.start(client, group, sorted(topics), ["roundrobin"], records=True)
               for client in ["franz-go", "sarama", "kafka-go"]]
    expected = wait_for_assignment(host, group, members, "roundrobin", topics)
    subscriptions = {m: sorted(topics) for m in expected}
    assert expected == roundrobin_assign(subscriptions, topics)

    records = produce(host.bootstrap, f"{group}-a", keys(f"{group}-a", 200), partitions=4)
    records += produce(host.bootstrap, f"{group}-b", keys(f"{group}-b", 250), partitions=5)
    wait_all_read(members, records, "every record read")
    wait_caught_up(upstream, members, topics)
    check_records(records, members)
    read = check_reads_follow_assignment(members, expected)
    assert all(read.values()), f"a member read nothing: {read}"

    members[2].close()
    wait_for_assignment(host, group, members[:2], "roundrobin", topics)
    no_errors(members)
    print(f"\nGo clients in one group: {len(records)} records read once each: {read}")
