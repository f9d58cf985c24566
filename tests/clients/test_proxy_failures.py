"""Issue 10: proxy mode when things die. A member killed with SIGKILL while records keep
arriving, and the host itself restarted (SIGTERM, same config and data dir). In both, every
record acknowledged to the producer is read, and the only records read twice are the ones
read after the last commit of their partition: the consumers resume from the offsets they
committed through the host, which the host kept upstream (read back from Kafka directly).

The members are the three Python clients, which commit the records they read when their
partitions are revoked (`commit_on_revoke`, the at-least-once pattern): so a rebalance
itself re-reads nothing, and a re-read record can only come from a commit that was missing.
Each test prints the duplicates it counted and how long the recovery took.
"""

import signal
import time

import pytest

from conftest import unique
from harness.expect import check_group, wait_for_assignment
from harness.records import SteadyProducer, check_records, keys, produce, wait_all_read
from harness.wait import wait_until
from test_proxy_records import wait_caught_up

PYTHON_CLIENTS = ["confluent-kafka", "kafka-python", "aiokafka"]


def last_read(agent, tp):
    return max((o for t, p, o, _, _ in agent.records() if (t, p) == tp), default=-1)


@pytest.mark.parametrize("victim_client", PYTHON_CLIENTS)
def test_a_killed_members_partitions_continue_from_its_last_commit(proxy, proxy_consumers,
                                                                   victim_client):
    host, upstream = proxy.host, proxy.upstream
    group = unique(f"kill-{victim_client}")
    topic = f"{group}-t"
    topics = {topic: 6}
    upstream.create_topics(topics)
    members = [proxy_consumers.start(client, group, [topic], ["range"], records=True,
                                     commit_on_revoke=True)
               for client in PYTHON_CLIENTS]
    before = wait_for_assignment(host, group, members, "range", topics)
    victim = next(m for m in members if m.client == victim_client)
    survivors = [m for m in members if m is not victim]
    mine = [tuple(tp) for tp in before[victim.member_id]]

    producer = SteadyProducer(host.bootstrap, topic, 6, f"{group}-r", rate=300).start()
    try:
        wait_until(lambda: all(last_read(m, tuple(tp)) >= 10 for m in members
                               for tp in before[m.member_id]), "every member reading")
        commits = {m.name: m.commit_consumed() for m in members}
        last_commit = commits[victim.name]
        assert sorted(last_commit) == sorted(mine), commits
        # The host committed them upstream, as they were: Kafka's own coordinator says so.
        assert upstream.committed(group, mine) == last_commit

        # The victim reads on past its commit (its uncommitted tail), then dies: no
        # LeaveGroup, no commit.
        wait_until(lambda: all(last_read(victim, tp) >= last_commit[tp] + 20 for tp in mine),
                   f"{victim.name} reading past its commit")
        victim.kill()
        killed_at = time.monotonic()
        tail = {k for t, p, o, k, _ in victim.records() if (t, p) in last_commit
                and o >= last_commit[(t, p)]}
        assert upstream.committed(group, mine) == last_commit, "a commit after the last one?"

        after = wait_for_assignment(host, group, survivors, "range", topics)
        takeover_s = time.monotonic() - killed_at
        moved = len(producer.acked())
        wait_until(lambda: len(producer.acked()) >= moved + 300, "records after the takeover")
    finally:
        records = producer.stop()

    wait_all_read(members, records, f"{group}: every acknowledged record read")
    wait_caught_up(upstream, survivors, topics)
    twice = check_records(records, members, allowed_duplicates=tail)
    # Read twice: exactly the victim's uncommitted tail, once by it and once by the new owner.
    assert set(twice) == tail and set(twice.values()) <= {2}, (sorted(tail)[:5], twice)
    for tp in mine:
        owner = next(m for m in survivors if list(tp) in after[m.member_id])
        first = min(o for t, p, o, _, _ in owner.records() if (t, p) == tp)
        assert first == last_commit[tp], \
            f"{owner.name} took {tp} over at {first}, the last commit was {last_commit[tp]}"
    for m in survivors:  # the survivors' own hand-overs were committed on revoke
        failed = [e for e in m.events if e.get("event") == "revoke_commit" and e["error"]]
        assert not failed, f"{m.name}: revoke commits failed: {failed}"
    per_partition = {f"{t}[{p}]": sum(1 for k in tail
                                      if any((r.topic, r.partition) == (t, p) and r.key == k
                                             for r in records))
                     for t, p in mine}
    print(f"\nkilled {victim.name}: {len(records)} records acknowledged, all read; "
          f"{len(tail)} read twice (its uncommitted tail: {per_partition}); "
          f"survivors reassigned {takeover_s:.1f} s after the kill (session timeout 6 s)")


# Members that commit through the host on command (kcat commits only by itself).
COMMITTING = [("confluent-kafka", "roundrobin"), ("kafka-python", "roundrobin"),
              ("aiokafka", "roundrobin"), ("kafkajs", "RoundRobinAssigner")]


def restart(host):
    """SIGTERM, then the same config, data dir and ports; returns the seconds it took."""
    started = time.monotonic()
    status = host.stop(signal.SIGTERM)
    assert status == 0, f"the host exited with {status} on SIGTERM:\n{host.log_tail()}"
    assert "shutting down" in host.log_tail(), "SIGTERM did not stop the host cleanly"
    host.start()
    return time.monotonic() - started


def commit_all(members):
    commits = {}
    for m in members:
        commits.update(m.commit_consumed())
    return commits


@pytest.mark.upstream_settings(broker_ports_from="fixed")
def test_a_restarted_host_keeps_its_groups_reading_where_they_were(proxy, proxy_consumers):
    """The consumers live through the restart: the host restores the Stable group from its
    data dir, nobody rejoins, nothing is read twice, and the offsets committed before the
    restart are still what Kafka holds."""
    host, upstream = proxy.host, proxy.upstream
    group = unique("restart-live")
    topic = f"{group}-t"
    topics = {topic: 8}
    upstream.create_topics(topics)
    partitions = [(topic, p) for p in range(8)]
    members = [proxy_consumers.start(client, group, [topic], [strategy], records=True)
               for client, strategy in COMMITTING]
    wait_for_assignment(host, group, members, "roundrobin", topics)

    records = produce(host.bootstrap, topic, keys(f"{group}-1", 400), partitions=8)
    wait_all_read(members, records, "batch 1 read")
    commits = commit_all(members)
    assert sorted(commits) == partitions and upstream.committed(group, partitions) == commits
    tail = produce(host.bootstrap, topic, keys(f"{group}-2", 160), partitions=8)
    wait_all_read(members, tail, "batch 2 read (not committed)")
    joins = {m.name: len(m.assignments()) for m in members}
    history = host.group_detail(group)["history"]

    took = restart(host)
    assert upstream.committed(group, partitions) == commits
    records += tail + produce(host.bootstrap, topic, keys(f"{group}-3", 400), partitions=8)
    wait_all_read(members, records, "every record read after the restart")
    wait_caught_up(upstream, members, topics)
    wait_until(lambda: check_group(host, group, members, "roundrobin", topics),
               "the group Stable, assigned by roundrobin")

    twice = check_records(records, members)  # each read once
    rejoined = {m.name: len(m.assignments()) - joins[m.name] for m in members}
    reasons = [h["reason"] for h in host.group_detail(group)["history"]][len(history):]
    print(f"\nhost restarted under live consumers in {took:.1f} s: {len(records)} records, "
          f"all read once; rejoins {rejoined}; rebalances {reasons}")
    assert not twice and not reasons and set(rejoined.values()) == {0}, \
        f"the restart rebalanced the group: {reasons}, rejoins {rejoined}"


@pytest.mark.upstream_settings(broker_ports_from="fixed")
def test_after_a_host_restart_consumers_resume_from_their_committed_offsets(proxy,
                                                                            proxy_consumers):
    """Everything restarted: the consumers (all four committing clients) die without
    committing their last records, the host is stopped (SIGTERM) and started, new consumers
    join the group. They start every partition at the offset committed through the host
    before the restart, so they read again exactly the uncommitted tail, once, and nothing
    before it. The new consumers are the Python clients committing on revoke, so the
    rebalances of their own joining (one after the other) re-read nothing more."""
    host, upstream = proxy.host, proxy.upstream
    group = unique("restart-all")
    topic = f"{group}-t"
    topics = {topic: 8}
    upstream.create_topics(topics)
    partitions = [(topic, p) for p in range(8)]
    first = [proxy_consumers.start(client, group, [topic], [strategy], records=True)
             for client, strategy in COMMITTING]
    wait_for_assignment(host, group, first, "roundrobin", topics)
    records = produce(host.bootstrap, topic, keys(f"{group}-1", 400), partitions=8)
    wait_all_read(first, records, "batch 1 read")
    commits = commit_all(first)
    assert sorted(commits) == partitions
    tail = produce(host.bootstrap, topic, keys(f"{group}-2", 160), partitions=8)
    wait_all_read(first, tail, "batch 2 read (not committed)")
    # They die (SIGKILL: no commit, and no LeaveGroup whose rebalance would have the others
    # read the tail again); the restored group drops them when their sessions expire.
    for m in first:
        m.kill()

    took = restart(host)
    assert upstream.committed(group, partitions) == commits
    second = [proxy_consumers.start(client, group, [topic], ["roundrobin"], records=True,
                                    commit_on_revoke=True)
              for client in PYTHON_CLIENTS]
    wait_for_assignment(host, group, second, "roundrobin", topics)
    records += tail + produce(host.bootstrap, topic, keys(f"{group}-3", 400), partitions=8)
    wait_all_read(second, tail + records[-400:], "the tail and batch 3 read after the restart")
    wait_caught_up(upstream, second, topics)

    # Read twice: exactly the tail, by the first consumers and by the second; nothing before
    # the commits was read again.
    tail_keys = {r.key for r in tail}
    twice = check_records(records, first + second, allowed_duplicates=tail_keys)
    assert set(twice) == tail_keys and set(twice.values()) == {2}, \
        f"the uncommitted tail should be read again once: {sorted(twice.items())[:10]}"
    assert not {r.key for r in records[:400]} & reads_of(second), \
        "records before the commits were read again"
    for tp in partitions:
        first_read = min(o for m in second for t, p, o, _, _ in m.records() if (t, p) == tp)
        assert first_read == commits[tp], \
            f"{tp} resumed at {first_read}, committed {commits[tp]}"
    print(f"\nhost and consumers restarted (host {took:.1f} s): every partition resumed at "
          f"its commit; {len(twice)} records read twice (the uncommitted tail, {len(tail)}), "
          f"nothing before the commits")


def reads_of(agents):
    return {k for a in agents for _, _, _, k, _ in a.records()}
