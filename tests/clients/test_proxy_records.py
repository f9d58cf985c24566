"""Issue 10: proxy mode with real records. Each test runs a host of its own in front of Kafka
(`serve --upstream`, conftest.py `proxy`); producers and consumers bootstrap from the
host only, and the suite checks the records and offsets against Kafka directly
(harness/upstream.py), bypassing the host.

In steady state (the group formed, then the records produced, no rebalance while they are
read) every record is read exactly once across the group, each member reads exactly the
partitions the strategy gives it (checked against harness/expect.py's references, as in
standalone mode), and nothing is lost.
"""

import subprocess

import pytest

from conftest import unique
from harness.expect import range_assign, roundrobin_assign, wait_for_assignment
from harness.host import BINARY, lag_table
from harness.records import (check_reads_follow_assignment, check_records, keys, produce,
                             produce_kcat, wait_all_read)
from harness.wait import wait_until

# The strategy each client's members name (kafkajs's spelling is an alias of roundrobin).
STRATEGY = {"confluent-kafka": "range", "kafka-python": "range", "aiokafka": "roundrobin",
            "kafkajs": "RoundRobinAssigner", "kcat": "range"}


def assignments_of(agents):
    return [len(a.assignments()) for a in agents]


def wait_caught_up(upstream, agents, partition_counts):
    """Waits until the agents' reads reach Kafka's end offset on every partition, read
    straight from Kafka."""
    partitions = [(t, p) for t, n in partition_counts.items() for p in range(n)]

    def check():
        ends = upstream.end_offsets(partitions)
        last = {}
        for a in agents:
            for t, p, o, _, _ in a.records():
                last[(t, p)] = max(last.get((t, p), -1), o)
        behind = {tp: (last.get(tp, -1) + 1, end) for tp, end in ends.items()
                  if last.get(tp, -1) + 1 != end}
        return not behind, f"(read up to, end) where behind: {behind}"

    wait_until(check, "the consumers at Kafka's end offsets")


@pytest.mark.parametrize("client", list(STRATEGY))
def test_every_record_is_read_once_by_the_member_the_strategy_names(proxy, proxy_consumers,
                                                                     client):
    host, upstream = proxy.host, proxy.upstream
    strategy = STRATEGY[client]
    group = unique(f"{client}-steady")
    topics = {f"{group}-a": 4, f"{group}-b": 3}
    host.create_topics(topics)  # CreateTopics through the host, forwarded to Kafka
    members = [proxy_consumers.start(client, group, sorted(topics), [strategy], records=True)
               for _ in range(3)]
    expected = wait_for_assignment(host, group, members, strategy, topics)
    joins = assignments_of(members)

    # Both producers write through the host: confluent-kafka (offsets acked) and kcat -P.
    records = produce(host.bootstrap, f"{group}-a", keys(f"{group}-ck", 400), partitions=4)
    records += produce_kcat(host.bootstrap, f"{group}-b", keys(f"{group}-kcat", 150))
    wait_all_read(members, records, f"{group}: every record read")
    wait_caught_up(upstream, members, topics)

    check_records(records, members)  # each once, where the producer was told
    read = check_reads_follow_assignment(members, expected)
    assert assignments_of(members) == joins, "the group rebalanced while reading"
    # Kafka holds exactly what was produced through the host.
    ends = upstream.end_offsets([(t, p) for t, n in topics.items() for p in range(n)])
    per_topic = {t: sum(o for (tt, _), o in ends.items() if tt == t) for t in topics}
    assert per_topic == {f"{group}-a": 400, f"{group}-b": 150}, per_topic
    print(f"{client}: {sum(read.values())} records read once each: {read}")


# Members that commit through the host on command, one per client that can (kcat commits by
# itself: librdkafka's auto commit of what it printed, and at close).
COMMITTERS = [("confluent-kafka", "roundrobin"), ("kafka-python", "roundrobin"),
              ("aiokafka", "roundrobin"), ("kafkajs", "RoundRobinAssigner")]


def test_offsets_committed_through_the_host_are_the_clusters_own(proxy, proxy_consumers):
    """What the clients commit through the host is what Kafka's own coordinator holds for
    the group (OffsetFetch on Kafka, bypassing the host), and what each client reads back
    through the host (its committed() / kafkajs's admin fetchOffsets)."""
    host, upstream = proxy.host, proxy.upstream
    group = unique("offsets")
    topics = {f"{group}-a": 5, f"{group}-b": 3}
    upstream.create_topics(topics)
    partitions = sorted((t, p) for t, n in topics.items() for p in range(n))
    members = [proxy_consumers.start(client, group, sorted(topics), [strategy], records=True)
               for client, strategy in COMMITTERS]
    expected = wait_for_assignment(host, group, members, "roundrobin", topics)
    records = produce(host.bootstrap, f"{group}-a", keys(f"{group}-a", 250), partitions=5)
    records += produce(host.bootstrap, f"{group}-b", keys(f"{group}-b", 90), partitions=3)
    wait_all_read(members, records, "every record read")

    committed = {}
    for m in members:
        mine = m.commit_consumed()
        assert sorted(mine) == sorted(tuple(tp) for tp in expected[m.member_id]), (m.name, mine)
        committed.update(mine)
    # Every record was read, so each partition's commit is its end offset on Kafka.
    assert committed == upstream.end_offsets(partitions)
    assert upstream.committed(group, partitions) == committed
    for m in members:
        assert m.committed([list(tp) for tp in partitions]) == committed, m.name

    # An explicit commit of other offsets (rewinding two partitions) lands there as well.
    first = members[0]
    rewind = [[t, p, 7] for t, p in sorted(tuple(tp) for tp in expected[first.member_id])[:2]]
    first.commit(rewind)
    committed.update({(t, p): o for t, p, o in rewind})
    assert upstream.committed(group, partitions) == committed

    # kcat commits on its own (librdkafka's auto commit, and at close): in a group of its
    # own, what it read is what Kafka holds once it has left.
    kgroup = unique("offsets-kcat")
    kcat = proxy_consumers.start("kcat", kgroup, sorted(topics), ["range"], records=True)
    wait_all_read([kcat], records, "kcat read every record")
    kcat.close()
    assert upstream.committed(kgroup, partitions) == upstream.end_offsets(partitions)
    print(f"\noffsets: {len(committed)} partitions committed through the host by "
          f"{[m.client for m in members]} and kcat, each equal to Kafka's own")


def test_partitions_added_on_the_cluster_are_assigned_and_read(proxy, proxy_consumers):
    """CreatePartitions on Kafka itself, not through the host: the host sees the new count
    in the upstream's Metadata (read every second here, `metadata_refresh`), rebalances the
    group by itself (its history names the partition change) and the new partitions' records
    are read by the members the strategy gives them to."""
    host, upstream = proxy.host, proxy.upstream
    group = unique("grow")
    topic = f"{group}-t"
    upstream.create_topics({topic: 2})
    plan = [("confluent-kafka", "roundrobin"), ("kafka-python", "roundrobin"),
            ("kafkajs", "RoundRobinAssigner")]
    members = [proxy_consumers.start(client, group, [topic], [strategy], records=True)
               for client, strategy in plan]
    wait_for_assignment(host, group, members, "roundrobin", {topic: 2})
    records = produce(host.bootstrap, topic, keys(f"{group}-1", 100), partitions=2)
    wait_all_read(members, records, "records of the first two partitions read")
    # Commit what was read, so the rebalance to come re-reads nothing.
    for m in members:
        m.commit_consumed()
    joins = assignments_of(members)

    upstream.create_partitions(topic, 5)
    grown = {topic: 5}
    after = wait_for_assignment(host, group, members, "roundrobin", grown)
    assert all(n > j for n, j in zip(assignments_of(members), joins)), "nobody rejoined"
    reasons = [h["reason"] for h in host.group_detail(group)["history"]]
    assert any("partition count" in r and topic in r for r in reasons), reasons

    # Records for every partition, the new ones written straight to Kafka and through the
    # host alike.
    new = produce(upstream.bootstrap, topic, keys(f"{group}-2", 60), partitions=5)
    new += produce(host.bootstrap, topic, keys(f"{group}-3", 60), partitions=5)
    wait_all_read(members, new, "records of every partition read")
    wait_caught_up(upstream, members, grown)
    check_records(records + new, members)
    # After the rebalance each member read only what the strategy gave it.
    for m in members:
        mine = {tuple(tp) for tp in after[m.member_id]}
        late = {(t, p) for t, p, _, k, _ in m.records() if k in {r.key for r in new}}
        assert late <= mine, f"{m.name} read {sorted(late - mine)}, assigned {sorted(mine)}"
    print(f"\ngrow: 2 -> 5 partitions on Kafka; rebalanced by the host ({reasons[-1]!r}); "
          f"{len(new)} records of the grown topic read once each")


def test_an_uploaded_strategy_assigns_a_proxied_group_and_its_records(proxy, proxy_consumers):
    """The custom strategy of test_custom_strategy.py (tests/fixtures/custom-strategy,
    `pinned-first`), uploaded to the proxy-mode host with `module push` and named by
    kafka-python, aiokafka and kafkajs consumers: the host's module decides (neither range's
    nor roundrobin's answer), and each member reads exactly the records of its share."""
    from test_custom_strategy import NAME, WASM
    host, upstream = proxy.host, proxy.upstream
    assert WASM.is_file(), f"{WASM} is missing: tests/clients/run builds it"
    uploaded = host.push_module(NAME, WASM)
    group = unique("custom")
    topics = {f"{group}-a": 3, f"{group}-b": 2, f"{group}-c": 4}
    upstream.create_topics(topics)
    members = [proxy_consumers.start(client, group, sorted(topics), [NAME], records=True)
               for client in ["kafka-python", "kafkajs", "aiokafka", "kafka-python"]]
    expected = wait_for_assignment(host, group, members, NAME, topics)
    detail = host.group_detail(group)
    assert (detail["strategy"], detail["module_version"]) == (NAME, uploaded["version"]), detail
    subscriptions = {m: sorted(topics) for m in expected}
    assert expected != range_assign(subscriptions, topics)
    assert expected != roundrobin_assign(subscriptions, topics)
    joins = assignments_of(members)

    records = []
    for topic, n in sorted(topics.items()):
        records += produce(host.bootstrap, topic, keys(topic, 30 * n), partitions=n)
    wait_all_read(members, records, "every record read")
    wait_caught_up(upstream, members, topics)
    check_records(records, members)
    read = check_reads_follow_assignment(members, expected)
    assert assignments_of(members) == joins, "the group rebalanced while reading"
    pinned = next(m for m in members if m.member_id == min(expected))
    assert read[pinned.name] >= 90, "the pinned member should read all of the first topic"
    print(f"\n{NAME} in proxy mode: records read per member {read}")


def test_a_mixed_group_of_all_five_clients_reads_every_record_once(proxy, proxy_consumers):
    """confluent-kafka, kafka-python, aiokafka, kcat and two kafkajs members in one group
    (kafkajs's `RoundRobinAssigner` and Kafka's `roundrobin`, one protocol through the
    host's aliases), consuming records written through the host by confluent-kafka and
    kcat -P: every record once, each member exactly its round-robin share."""
    host, upstream = proxy.host, proxy.upstream
    group = unique("mixed")
    topics = {f"{group}-a": 4, f"{group}-b": 3, f"{group}-c": 5}
    upstream.create_topics(topics)
    plan = [("confluent-kafka", "roundrobin"), ("kafka-python", "roundrobin"),
            ("kafkajs", "RoundRobinAssigner"), ("aiokafka", "roundrobin"),
            ("kcat", "roundrobin"), ("kafkajs", "RoundRobinAssigner")]
    members = [proxy_consumers.start(client, group, sorted(topics), [strategy], records=True)
               for client, strategy in plan]
    expected = wait_for_assignment(host, group, members, "roundrobin", topics)
    joins = assignments_of(members)

    records = produce(host.bootstrap, f"{group}-a", keys(f"{group}-a", 200), partitions=4)
    records += produce_kcat(host.bootstrap, f"{group}-b", keys(f"{group}-b", 150))
    records += produce(host.bootstrap, f"{group}-c", keys(f"{group}-c", 250), partitions=5)
    wait_all_read(members, records, "every record read")
    wait_caught_up(upstream, members, topics)
    check_records(records, members)
    read = check_reads_follow_assignment(members, expected)
    assert assignments_of(members) == joins, "the group rebalanced while reading"
    assert all(read.values()), f"a member read nothing: {read}"
    print(f"\nmixed group: {len(records)} records read once each: {read}")


# -- lag (issue 10, item 6) ------------------------------------------------------------------
# The admin API's `GET /v1/groups/{group}` has `"offsets": [{"topic", "partition", "member",
# "committed", "end", "lag"}]` and `assignor-host group describe G` a table TOPIC PARTITION
# MEMBER COMMITTED END LAG.

def test_group_describe_shows_each_partitions_lag_read_upstream(proxy, proxy_consumers):
    """Per partition, as `kafka-consumer-groups --describe` shows it: the offset committed
    through the host, Kafka's end offset, their difference; in the admin API and the CLI."""
    host, upstream = proxy.host, proxy.upstream
    group = unique("lag")
    topic = f"{group}-t"
    upstream.create_topics({topic: 4})
    members = [proxy_consumers.start(client, group, [topic], ["range"], records=True)
               for client in ["confluent-kafka", "kafka-python"]]
    expected = wait_for_assignment(host, group, members, "range", {topic: 4})
    records = produce(host.bootstrap, topic, keys(group, 200), partitions=4)
    wait_all_read(members, records, "every record read")
    first, second = sorted(members, key=lambda m: m.member_id)
    committed = dict(first.commit_consumed())  # 50 on each of its partitions
    mine = sorted(tuple(tp) for tp in expected[second.member_id])
    second.commit([[mine[0][0], mine[0][1], 20]])  # the other partition stays uncommitted
    committed[mine[0]] = 20
    produce(host.bootstrap, topic, keys(f"{group}-more", 40), partitions=4)  # 60 each
    ends = upstream.end_offsets([(topic, p) for p in range(4)])
    assert set(ends.values()) == {60}, ends

    want = {(topic, p): (committed.get((topic, p)), 60,
                         60 - committed[(topic, p)] if (topic, p) in committed else None)
            for p in range(4)}
    detail = host.group_detail(group)
    assert "offsets" in detail, \
        "GET /v1/groups/{group} has no `offsets` (lag) yet: see LAG above this test"
    got = {(o["topic"], o["partition"]): (o["committed"], o["end"], o["lag"])
           for o in detail["offsets"]}
    assert got == want, f"admin API offsets {detail['offsets']}, want {want}"
    out = subprocess.run([str(BINARY), "group", "describe", group, "--admin", host.admin_url],
                         capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    assert lag_table(out.stdout) == want, out.stdout


def cli(host, *args):
    out = subprocess.run([str(BINARY), *args, "--admin", host.admin_url],
                         capture_output=True, text=True, timeout=60)
    return out.returncode, out.stdout + out.stderr


def test_topic_commands_act_on_the_cluster(proxy):
    """`assignor-host topic create / add-partitions` in proxy mode create and grow the topic
    on the cluster (read back from Kafka's own Metadata) and the host serves it at once;
    `topic rm` is refused: the cluster's topics are deleted on the cluster."""
    host, upstream = proxy.host, proxy.upstream
    topic = unique("cli-topic")
    status, out = cli(host, "topic", "create", topic, "--partitions", "4")
    assert status == 0, out
    assert upstream.partition_counts().get(topic) == 4, "not created on Kafka"
    status, out = cli(host, "topic", "ls")
    assert status == 0 and any(line.split()[:2] == [topic, "4"] for line in out.splitlines()), out
    status, out = cli(host, "topic", "create", topic, "--partitions", "2")
    assert status != 0 and "exists" in out.lower(), out  # Kafka's TOPIC_ALREADY_EXISTS

    status, out = cli(host, "topic", "add-partitions", topic, "--count", "6")
    assert status == 0, out
    assert upstream.partition_counts().get(topic) == 6
    status, out = cli(host, "topic", "ls")
    assert any(line.split()[:2] == [topic, "6"] for line in out.splitlines()), out
    status, out = cli(host, "topic", "rm", topic)
    assert status != 0 and "cluster" in out, out
    assert upstream.partition_counts().get(topic) == 6, "the topic went from Kafka"
