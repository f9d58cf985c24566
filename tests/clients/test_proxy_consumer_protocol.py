"""Issue 11, item 6: KIP-848's consumer protocol in proxy mode. confluent-kafka consumers with
`group.protocol=consumer` bootstrap from a host in front of Kafka: the host coordinates the
group (ConsumerGroupHeartbeat is its own, the module named in `group.remote.assignor`
assigns), the records come from Kafka through the host, and the offsets land on Kafka.

Assignments name topics by id, and the host's Metadata answers carry its catalog's ids (not
Kafka's own: noida-db, the first upstream, had none), by-id lookups go up by name, and Fetch
stays below v13 (topic ids), so the client's ids are the coordinator's
(kafka/proxy/rewrite.rs)."""

from conftest import unique
from harness.expect import range_assign
from harness.records import check_records, keys, produce, wait_all_read
from harness.wait import wait_until
from test_consumer_protocol import assert_never_two_owners, covered_once, holds


def test_consumer_protocol_members_read_every_record_once_and_commit_upstream(
        proxy, proxy_consumers):
    host, upstream = proxy.host, proxy.upstream
    group = unique("kip848-proxy")
    topics = {f"{group}-a": 4, f"{group}-b": 2}
    upstream.create_topics(topics)
    partitions = sorted((t, p) for t, n in topics.items() for p in range(n))
    members = [proxy_consumers.start("confluent-kafka", group, sorted(topics),
                                     group_protocol="consumer", remote_assignor="range",
                                     records=True)
               for _ in range(3)]
    wait_until(lambda: covered_once(members, topics), f"{group} assigned through the host")
    subscriptions = {m.member_id: sorted(topics) for m in members}
    expected = range_assign(subscriptions, topics)
    wait_until(lambda: holds(members, expected), f"{group} holds range's answer")
    detail = host.group_detail(group)
    assert detail["group_type"] == "consumer" and detail["strategy"] == "range", detail

    records = produce(host.bootstrap, f"{group}-a", keys(f"{group}-a", 200), partitions=4)
    records += produce(host.bootstrap, f"{group}-b", keys(f"{group}-b", 80), partitions=2)
    wait_all_read(members, records, f"{group}: every record read through the host")
    check_records(records, members)  # each once, where the producer was told

    committed = {}
    for m in members:
        mine = m.commit_consumed()
        assert sorted(mine) == sorted(tuple(tp) for tp in expected[m.member_id]), (m.name, mine)
        committed.update(mine)
    assert committed == upstream.end_offsets(partitions)
    assert upstream.committed(group, partitions) == committed, "the commits are Kafka's own"

    # One member leaves: the other two take its partitions, never one partition twice.
    members[0].close()
    rest = members[1:]
    wait_until(lambda: covered_once(rest, topics), f"{group} reassigned after a leave")
    assert_never_two_owners(members)
    for m in members:
        assert not m.errors(), m.errors()
