"""Issue 13: `lag-aware` in proxy mode, where the lag is real: end offsets are Kafka's, the
committed offsets the group's own on Kafka. A topic of 6 partitions gets skewed traffic on
purpose (400, 200, 100, 50, 25 and 25 records), a first consumer commits offset 0 on every
partition and leaves, and three confluent-kafka consumers (proposing `range`, as librdkafka
can) join. With the operator's `lag-aware` for the group, each member's total lag is within
the largest partition's lag (400) of the ideal (800 / 3); a second group on the same topic
with the same commits, assigned by `range`, splits the same lag far less evenly."""

from conftest import unique
from harness.records import produce_kcat
from harness.wait import wait_until

COUNTS = [400, 200, 100, 50, 25, 25]


def commit_zero_and_leave(proxy_consumers, group, topic):
    """A consumer of `group` commits offset 0 on every partition, then leaves: every
    partition has a committed offset, so the whole topic is measured."""
    first = proxy_consumers.start("confluent-kafka", group, [topic], ["range"])
    wait_until(lambda: (len(first.current or []) == len(COUNTS), first.summary()),
               f"{group}: the first consumer holds every partition", timeout_s=60)
    first.commit([[topic, p, 0] for p in range(len(COUNTS))])
    first.close()


def lag_per_member(host, proxy_consumers, group, topic):
    """Three consumers join `group`; returns each one's total lag, once the group is Stable
    with every partition held once."""
    agents = [proxy_consumers.start("confluent-kafka", group, [topic], ["range"],
                                    client_id=f"{group}-{i}") for i in range(3)]

    def stable():
        d = host.describe(group)
        seen = f"{d}\n" + "\n".join(a.summary() for a in agents)
        held = sorted(tp for a in agents for tp in (a.current or []))
        ok = (d["state"] == "Stable" and len(d["members"]) == 3
              and held == [[topic, p] for p in range(len(COUNTS))])
        return ok, seen
    wait_until(stable, f"{group}: three consumers, every partition once", timeout_s=60)
    return sorted(sum(COUNTS[p] for _, p in a.current) for a in agents)


def test_lag_aware_balances_real_lag_that_range_does_not(proxy, proxy_consumers):
    host, upstream = proxy.host, proxy.upstream
    topic = unique("skewed")
    upstream.create_topics({topic: len(COUNTS)})
    for p, n in enumerate(COUNTS):
        produce_kcat(host.bootstrap, topic, [f"{topic}-{p}-{i}" for i in range(n)], partition=p)
    partitions = [(topic, p) for p in range(len(COUNTS))]
    wait_until(lambda: (upstream.end_offsets(partitions)
                        == {(topic, p): n for p, n in enumerate(COUNTS)},
                        upstream.end_offsets(partitions)),
               f"{topic}: skewed records on Kafka", timeout_s=30)

    balanced = unique("lag-aware")
    commit_zero_and_leave(proxy_consumers, balanced, topic)
    assert upstream.committed(balanced, partitions) == {tp: 0 for tp in partitions}
    status, answer = host.set_group_config(balanced, "lag-aware", {})
    assert status == 200, answer
    lags = lag_per_member(host, proxy_consumers, balanced, topic)
    detail = host.group_detail(balanced)
    assert detail["strategy"] == "lag-aware", detail
    # The lag the host knows for the group: Kafka's end offsets, the group's commits.
    seen = {(o["topic"], o["partition"]): (o["committed"], o["end"]) for o in detail["offsets"]}
    assert seen == {(topic, p): (0, n) for p, n in enumerate(COUNTS)}, detail

    plain = unique("range")
    commit_zero_and_leave(proxy_consumers, plain, topic)
    range_lags = lag_per_member(host, proxy_consumers, plain, topic)

    total, largest = sum(COUNTS), max(COUNTS)
    ideal = total / 3
    assert sum(lags) == total and sum(range_lags) == total
    assert all(abs(lag - ideal) <= largest for lag in lags), (lags, ideal)
    # range gives each member two neighbouring partitions: 600, 150 and 50.
    assert range_lags == [50, 150, 600], range_lags
    assert max(lags) - min(lags) < max(range_lags) - min(range_lags), (lags, range_lags, {k: detail[k] for k in ("last_run", "history", "members")})
    print(f"\nlag per member, same topic and commits: lag-aware {lags}, range {range_lags} "
          f"(ideal {ideal:.0f}, largest partition {largest})")
