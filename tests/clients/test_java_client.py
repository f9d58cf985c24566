"""Issue 27, item 3: Apache Kafka's own Java `KafkaConsumer` (kafka-clients 4.4, the client
that defines the protocol; tests/clients/java) against the host, as users run it.

Classic protocol (`ClassicKafkaConsumer`: JoinGroup/SyncGroup, the host leading): `range`
members hold exactly an independent RangeAssignor's answer, a leave reassigns; offsets
committed at the generation are read back by a new consumer; `cooperative-sticky` scaled out
4 -> 6 and in to 5 never has a partition held by two consumers at once (from the clients' own
callbacks, harness/ownership.py); a static member (`group.instance.id`) restarted within its
session gets its partitions back and nobody else rebalances. Consumer protocol
(`AsyncKafkaConsumer`, KIP-848's ConsumerGroupHeartbeat): `group.remote.assignor=range` holds
range's answer through a leave, an uploaded module (`pinned-first`) named in it holds its
answer. Proxy mode, both protocols: records produced through the host read exactly once by
the member the strategy names, offsets committed through the host read back from the
upstream's own coordinator.

The Java client reports the generation (the member epoch under the consumer protocol), which
librdkafka and kafkajs do not: the tests check it too.
"""

from conftest import unique
from harness.expect import (all_partitions, pinned_first_assign, range_assign,
                            wait_for_assignment)
from harness.ownership import overlapping
from harness.records import (check_reads_follow_assignment, check_records, keys, produce,
                             wait_all_read)
from harness.wait import wait_until
from test_client_leader_fallback import settled
from test_consumer_protocol import covered_once, holds
from test_custom_strategy import WASM

JAVA = "java"


def java(consumers, group, topics, n, strategies=("range",), **options):
    return [consumers.start(JAVA, group, sorted(topics), list(strategies), **options)
            for _ in range(n)]


def consumer_protocol(consumers, group, topics, assignor, n, **options):
    return [consumers.start(JAVA, group, sorted(topics), group_protocol="consumer",
                            remote_assignor=assignor, **options)
            for _ in range(n)]


def closed_ns(agents):
    """{agent name: CLOCK_MONOTONIC ns of its `closed`}: where what it held at close ends."""
    return {a.name: e["at_ns"] for a in agents for e in a.events if e.get("event") == "closed"}


def assert_never_two_owners(agents):
    found = overlapping(agents, closed_ns(agents))
    assert not found, "partitions held by two consumers at once: " + "; ".join(
        f"{tp} by {a.name} [{s1}, {e1}] and {b.name} [{s2}, {e2}]"
        for tp, a, s1, e1, b, s2, e2 in found[:10])


def no_errors(agents):
    for a in agents:
        assert not a.errors(), f"{a.name} reported errors: {a.errors()}"


def generations(agents):
    """The generation each agent reported with its latest assignment."""
    return {a.name: a.assignments()[-1]["generation"] for a in agents}


# -- classic protocol ------------------------------------------------------------------------

def test_range_members_hold_range_answer_and_a_leave_reassigns(host, consumers):
    group = unique("java-range")
    topics = {f"{group}-a": 3, f"{group}-b": 2, f"{group}-c": 5}
    host.create_topics(topics)
    members = java(consumers, group, topics, 3)
    first = wait_for_assignment(host, group, members, "range", topics)
    assert len(first) == 3 and all(first.values()), first
    # Every member was given the host's generation: one and the same, and it is the group's.
    (generation,) = set(generations(members).values())
    assert generation == host.group_detail(group)["generation"], host.group_detail(group)

    members[0].close()
    rest = members[1:]
    second = wait_for_assignment(host, group, rest, "range", topics)
    assert set(second) == {m.member_id for m in rest}
    (after,) = set(generations(rest).values())
    assert after > generation, (generation, after)
    no_errors(members)


def test_offsets_committed_at_the_generation_are_read_back_by_a_new_consumer(host, consumers):
    group = unique("java-offsets")
    topics = {f"{group}-a": 3, f"{group}-b": 2}
    host.create_topics(topics)
    members = java(consumers, group, topics, 2, strategies=("roundrobin",))
    wait_for_assignment(host, group, members, "roundrobin", topics)
    committed = {}
    for i, member in enumerate(members):
        # commitSync of its own partitions: OffsetCommit with the member id and generation.
        offsets = [[t, p, 1000 * (i + 1) + 10 * p] for t, p in member.current]
        assert sorted(member.commit(offsets)) == sorted(offsets)
        committed.update({(t, p): o for t, p, o in offsets})
    assert len(committed) == 5
    for member in members:
        member.close()

    newcomer = java(consumers, group, topics, 1, strategies=("roundrobin",))[0]
    wait_for_assignment(host, group, [newcomer], "roundrobin", topics)
    assert newcomer.committed([list(tp) for tp in committed]) == committed
    no_errors(members + [newcomer])


def test_java_shares_a_range_group_with_librdkafka_kafka_python_and_aiokafka(host, consumers):
    """Two Java members (Subscription v3: owned partitions, generation, rack) in one classic
    group with librdkafka (v3 too), kafka-python and aiokafka (v0): assigned as one by range,
    and again once a Java member leaves."""
    group = unique("java-mixed")
    topics = {f"{group}-a": 5, f"{group}-b": 4}
    host.create_topics(topics)
    plan = [JAVA, "confluent-kafka", "kafka-python", "aiokafka", JAVA]
    members = [consumers.start(client, group, sorted(topics), ["range"]) for client in plan]
    wait_for_assignment(host, group, members, "range", topics)
    members[0].close()
    wait_for_assignment(host, group, members[1:], "range", topics)


def test_consumer_protocol_java_and_librdkafka_members_hold_one_range_answer(host, consumers):
    group = unique("java-kip848-mixed")
    topics = {f"{group}-a": 5, f"{group}-b": 3}
    host.create_topics(topics)
    members = [consumers.start(client, group, sorted(topics), group_protocol="consumer",
                               remote_assignor="range")
               for client in (JAVA, "confluent-kafka", JAVA, "confluent-kafka")]
    wait_until(lambda: covered_once(members, topics), f"{group} assigned")
    wait_until(lambda: holds(members, range_assign({m.member_id: sorted(topics)
                                                     for m in members}, topics)),
               f"{group} holds range's answer")
    assert_never_two_owners(members)  # both agents stamp their callbacks
    no_errors(members)


def test_cooperative_sticky_scale_out_four_six_five_never_gives_a_partition_two_owners(
        host, consumers):
    group = unique("java-coop")
    topics = {f"{group}-a": 8, f"{group}-b": 4}
    host.create_topics(topics)
    members = java(consumers, group, topics, 4, strategies=("cooperative-sticky",))

    def spread(agents, sizes):
        def check():
            done, seen = settled(host, group, agents, topics)
            return done and sorted(len(a.current) for a in agents) == sizes, seen
        return check

    wait_until(spread(members, [3] * 4), f"{group} spread over four")
    assert host.group_detail(group)["protocol"] == "cooperative-sticky"
    before = {m.name: set(map(tuple, m.current)) for m in members}

    members += java(consumers, group, topics, 2, strategies=("cooperative-sticky",))
    wait_until(spread(members, [2] * 6), f"{group} spread over six")
    for m in members[:4]:
        # Cooperative: each of the first four only gave partitions up, kept the rest.
        assert set(map(tuple, m.current)) <= before[m.name], (m.name, before[m.name], m.current)
    kept = {m.name: set(map(tuple, m.current)) for m in members}

    members[1].close()
    rest = members[:1] + members[2:]
    wait_until(spread(rest, [2, 2, 2, 3, 3]), f"{group} spread over five")
    for m in rest:
        assert kept[m.name] <= set(map(tuple, m.current)), (m.name, kept[m.name], m.current)
    assert_never_two_owners(members)
    no_errors(members)


def test_a_static_member_restarted_within_its_session_gets_its_partitions_back(host, consumers):
    """A static member's close sends no LeaveGroup (KIP-345: the Java client leaves only as a
    dynamic member); restarted with the same `group.instance.id` within its session (the agent
    gives static members 30 s), it replaces its old self: the host answers its JoinGroup with the group's current assignment,
    no rebalance, and the other member sees nothing at all."""
    group = unique("java-static")
    topics = {f"{group}-a": 4, f"{group}-b": 2}
    host.create_topics(topics)
    static = java(consumers, group, topics, 1, instance_id="java-static-1")[0]
    other = java(consumers, group, topics, 1)[0]
    wait_until(lambda: settled(host, group, [static, other], topics), f"{group} assigned")
    held, others = static.current, other.current
    assert held and others, (held, others)
    generation = host.group_detail(group)["generation"]
    mark = len(other.events)

    static.close()
    again = java(consumers, group, topics, 1, instance_id="java-static-1")[0]
    wait_until(lambda: settled(host, group, [again, other], topics), f"{group} static member back")
    assert again.current == held
    assert again.member_id != static.member_id, "a restarted static member gets a new member id"
    assert host.group_detail(group)["generation"] == generation, "the group rebalanced"
    assert generations([again]) == {again.name: generation}
    seen = [e for e in other.events[mark:] if e.get("event") in ("assigned", "revoked")]
    assert not seen, f"the other member went through a rebalance: {seen}"
    no_errors([static, again, other])


# -- consumer protocol (KIP-848) -------------------------------------------------------------

def test_consumer_protocol_range_holds_range_answer_and_a_leave_reassigns(host, consumers):
    group = unique("java-kip848-range")
    topics = {f"{group}-a": 5, f"{group}-b": 3}
    host.create_topics(topics)
    members = consumer_protocol(consumers, group, topics, "range", 3)
    wait_until(lambda: covered_once(members, topics), f"{group} assigned")
    wait_until(lambda: holds(members, range_assign({m.member_id: sorted(topics)
                                                     for m in members}, topics)),
               f"{group} holds range's answer")
    detail = host.group_detail(group)
    assert (detail["group_type"], detail["strategy"]) == ("consumer", "range"), detail

    members[0].close()
    rest = members[1:]
    wait_until(lambda: holds(rest, range_assign({m.member_id: sorted(topics) for m in rest},
                                                topics)),
               f"{group} holds range's answer for the two left")
    assert_never_two_owners(members)
    no_errors(members)


def test_consumer_protocol_an_uploaded_module_named_in_remote_assignor_assigns(host, consumers):
    assert WASM.is_file(), f"{WASM} is missing: tests/clients/run builds it"
    answer = host.push_module("pinned-first", WASM)
    assert answer["active"], answer
    group = unique("java-kip848-custom")
    topics = {f"{group}-a": 3, f"{group}-b": 2, f"{group}-c": 4}
    host.create_topics(topics)
    members = consumer_protocol(consumers, group, topics, "pinned-first", 3)
    wait_until(lambda: covered_once(members, topics), f"{group} assigned")
    expected = pinned_first_assign({m.member_id: sorted(topics) for m in members}, topics)
    wait_until(lambda: holds(members, expected), f"{group} holds pinned-first's answer")
    detail = host.group_detail(group)
    assert (detail["strategy"], detail["module_version"]) == ("pinned-first",
                                                              answer["version"]), detail
    assert_never_two_owners(members)
    no_errors(members)


def test_consumer_protocol_a_broker_side_regex_is_matched_by_the_host_and_resolved_by_id(
        host, consumers):
    """`subscribe(SubscriptionPattern)`: KIP-848's regular expression, matched by the
    coordinator, which assigns the matching topics by id; the Java client (4.1+) then asks
    Metadata for those ids with an empty name beside each id (`forTopicIds`). The host looked
    the empty name up, answered UNKNOWN_TOPIC_OR_PARTITION, and the consumers never consumed
    (fixed in host/src/kafka/metadata.rs; tests/tests/all/wire_metadata.rs pins the request).
    Here: the consumers hold range's answer over the matching topics only, and a matching
    topic created later is theirs too, without a restart.

    The second consumer starts once the first holds every matching partition: a consumer
    whose first assignment names ids it cannot resolve yet acknowledges an empty one, and
    the host, as Kafka, then hands the partitions a second member's join moves away from it
    straight on, while the Java client goes on to take the first assignment in full (README,
    "Client quirks met"): two owners for a moment, which is the client's race, not this
    test's subject."""
    group = unique("java-kip848-regex")
    host.create_topics({f"{group}-t-a": 3, f"{group}-t-b": 2, f"{group}-other": 2})
    topics = {f"{group}-t-a": 3, f"{group}-t-b": 2}
    pattern = rf"{group}-t-.*"
    members = consumer_protocol(consumers, group, [], "range", 1, topic_pattern=pattern)
    wait_until(lambda: covered_once(members, topics), f"{group}: the first holds every match")
    members += consumer_protocol(consumers, group, [], "range", 1, topic_pattern=pattern)

    def range_of(partition_counts):
        return lambda: holds(members, range_assign({m.member_id: sorted(partition_counts)
                                                    for m in members}, partition_counts))

    wait_until(lambda: covered_once(members, topics), f"{group} assigned the matching topics")
    wait_until(range_of(topics), f"{group} holds range's answer over the matching topics")
    regexes = {m["subscribed_topic_regex"] for m in host.group_detail(group)["consumer"]["members"]}
    assert regexes == {pattern}, regexes

    topics[f"{group}-t-c"] = 4
    host.create_topics({f"{group}-t-c": 4})
    wait_until(range_of(topics), f"{group} holds range's answer with the topic created later")
    assert_never_two_owners(members)
    no_errors(members)


def test_consumer_protocol_members_on_racks_get_their_racks_partitions(host, consumers):
    """`client.rack`, which the Java client sends as ConsumerGroupHeartbeat's `rackId`: the
    topic's partitions have their one replica on racks r0, r1, r2, r0, r1, r2 (the catalog's,
    `POST /v1/topics` with `racks`), and the host's `range` gives each of three consumers the
    two partitions of its own rack, not range's plain 0-1, 2-3, 4-5."""
    group = unique("java-kip848-racks")
    racks = ["r0", "r1", "r2"]
    topic = f"{group}-orders"
    host.create_topic_with_racks(topic, [[racks[p % 3]] for p in range(6)])
    members = [consumers.start(JAVA, group, [topic], group_protocol="consumer",
                               remote_assignor="range", rack=rack) for rack in racks]
    wanted = {m.name: [[topic, p], [topic, p + 3]] for p, m in enumerate(members)}

    def on_their_racks():
        seen = "\n".join(m.summary() for m in members)
        return all(m.current == wanted[m.name] for m in members), seen

    wait_until(on_their_racks, f"{group}: each consumer holds its rack's partitions")
    described = {m["member_id"]: m["rack_id"]
                 for m in host.group_detail(group)["consumer"]["members"]}
    assert described == {m.member_id: r for m, r in zip(members, racks)}, described
    no_errors(members)


def test_consumer_protocol_a_member_past_max_poll_interval_rejoins_with_its_member_id(
        host, consumers):
    """An application that does not call `poll` for longer than `max.poll.interval.ms` (3 s
    here; the agent's `stall` command holds its thread 6 s): the Java client leaves the group by
    itself (a heartbeat at epoch -1), tells the application at its next poll that its
    partitions were lost (`onPartitionsLost`), and rejoins at epoch 0 under the same member id
    (KIP-1082: the client makes its member id once). The host takes the member back: two
    group epochs later (its leave, its join) the group holds range's answer for the same two
    member ids again."""
    group = unique("java-kip848-stall")
    topics = {f"{group}-a": 4}
    host.create_topics(topics)
    members = consumer_protocol(consumers, group, topics, "range", 2, rebalance_timeout_ms=3000)
    wait_until(lambda: covered_once(members, topics), f"{group} assigned")
    ids = {m.name: m.member_id for m in members}
    expected = range_assign({m.member_id: sorted(topics) for m in members}, topics)
    wait_until(lambda: holds(members, expected), f"{group} holds range's answer")
    slow = members[0]
    held, epoch = slow.current, generations([slow])[slow.name]
    mark = len(slow.events)

    since = len(slow.events)
    slow.send(cmd="stall", ms=6000)
    slow.wait_event("stalled", since, timeout_s=30)
    lost = slow.wait_event("revoked", mark)
    assert (lost["lost"], lost["partitions"]) == (True, held), lost
    wait_until(lambda: holds(members, expected) if generations([slow])[slow.name] >= epoch + 2
               else (False, slow.summary()), f"{group} holds range's answer again")
    assert {m.name: m.member_id for m in members} == ids, "a member id changed"
    assert any("poll timeout" in line for line in slow.stderr), "the client did not say why"
    no_errors(members)


# -- proxy mode --------------------------------------------------------------------------------

def read_commit_and_check(proxy, members, topics, expected, group):
    """Records produced through the host are read once each, by the member `expected` gives
    their partition; what each member then commits through the host is the upstream's own
    committed offset (read there directly) and its end offset, and the client reads it back
    through the host."""
    host, upstream = proxy.host, proxy.upstream
    partitions = sorted((t, p) for t, n in topics.items() for p in range(n))
    records = []
    for topic, n in sorted(topics.items()):
        records += produce(host.bootstrap, topic, keys(topic, 40 * n), partitions=n)
    wait_all_read(members, records, f"{group}: every record read through the host")
    check_records(records, members)  # each once, at the partition and offset acked
    read = check_reads_follow_assignment(members, expected)

    committed = {}
    for m in members:
        mine = m.commit_consumed()
        assert sorted(mine) == sorted(tuple(tp) for tp in expected[m.member_id]), (m.name, mine)
        committed.update(mine)
    assert committed == upstream.end_offsets(partitions)
    assert upstream.committed(group, partitions) == committed, "not the upstream's own"
    for m in members:
        assert m.committed([list(tp) for tp in partitions]) == committed, m.name
    return read


def test_proxy_classic_members_read_every_record_once_and_commit_upstream(
        proxy, proxy_consumers):
    group = unique("java-proxy")
    topics = {f"{group}-a": 4, f"{group}-b": 3}
    proxy.upstream.create_topics(topics)
    members = java(proxy_consumers, group, topics, 3, records=True)
    expected = wait_for_assignment(proxy.host, group, members, "range", topics)
    joins = [len(m.assignments()) for m in members]
    read = read_commit_and_check(proxy, members, topics, expected, group)
    assert [len(m.assignments()) for m in members] == joins, "the group rebalanced"
    no_errors(members)
    print(f"\njava classic through the host: records read per member {read}")


def test_proxy_consumer_protocol_members_read_every_record_once_and_commit_upstream(
        proxy, proxy_consumers):
    group = unique("java-kip848-proxy")
    topics = {f"{group}-a": 4, f"{group}-b": 2}
    proxy.upstream.create_topics(topics)
    members = consumer_protocol(proxy_consumers, group, topics, "range", 3, records=True)
    wait_until(lambda: covered_once(members, topics), f"{group} assigned through the host")
    expected = range_assign({m.member_id: sorted(topics) for m in members}, topics)
    wait_until(lambda: holds(members, expected), f"{group} holds range's answer")
    read = read_commit_and_check(proxy, members, topics, expected, group)

    # One member leaves: the other two take its partitions, never one partition twice.
    members[0].close()
    rest = members[1:]
    wait_until(lambda: covered_once(rest, topics), f"{group} reassigned after a leave")
    assert sorted(tp for m in rest for tp in m.current) == all_partitions(topics)
    assert_never_two_owners(members)
    no_errors(members)
    print(f"\njava consumer protocol through the host: records read per member {read}")
