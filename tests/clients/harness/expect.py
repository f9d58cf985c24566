"""Reference assignors, written from Kafka's Java sources, and the group check every test uses.

The suite never trusts the host's own answer: it takes the member ids and subscriptions the
host reports in DescribeGroups, computes what the strategy must give each member here, and
compares that with what every client says it was assigned (and with the assignment the host
reports). All members in these tests are dynamic (no group.instance.id), so members are
ordered by member id, as Kafka's assignors do.
"""

import re

from .wait import wait_until


def range_assign(subscriptions, partition_counts):
    """Kafka's RangeAssignor: per topic, its subscribers in member-id order get contiguous
    ranges, the first `n % c` of them one partition more."""
    out = {m: [] for m in subscriptions}
    topics = sorted({t for ts in subscriptions.values() for t in ts})
    for topic in topics:
        members = sorted(m for m, ts in subscriptions.items() if topic in ts)
        n = partition_counts[topic]
        per, extra = divmod(n, len(members))
        start = 0
        for i, m in enumerate(members):
            length = per + (1 if i < extra else 0)
            out[m] += [[topic, p] for p in range(start, start + length)]
            start += length
    return {m: sorted(tps) for m, tps in out.items()}


def roundrobin_assign(subscriptions, partition_counts):
    """Kafka's RoundRobinAssignor: all subscribed partitions in (topic, partition) order are
    dealt over the members in member-id order, skipping members not subscribed to the topic."""
    return _deal(subscriptions, partition_counts, sorted(subscriptions))


def _deal(subscriptions, partition_counts, order, topics=None):
    out = {m: [] for m in subscriptions}
    if topics is None:
        topics = sorted({t for ts in subscriptions.values() for t in ts})
    i = 0
    for topic in topics:
        for p in range(partition_counts[topic]):
            while topic not in subscriptions[order[i % len(order)]]:
                i += 1
            out[order[i % len(order)]].append([topic, p])
            i += 1
    return {m: sorted(tps) for m, tps in out.items()}


def pinned_first_assign(subscriptions, partition_counts):
    """The custom strategy of tests/fixtures/custom-strategy (`pinned-first`): every partition
    of the alphabetically first subscribed topic goes to the smallest member id subscribed to
    it; the other partitions are dealt round-robin over the members in *descending* member-id
    order (skipping members not subscribed)."""
    topics = sorted({t for ts in subscriptions.values() for t in ts})
    if not topics:
        return {m: [] for m in subscriptions}
    first, rest = topics[0], topics[1:]
    out = _deal(subscriptions, partition_counts, sorted(subscriptions, reverse=True), rest)
    owner = min(m for m, ts in subscriptions.items() if first in ts)
    out[owner] = sorted(out[owner] + [[first, p] for p in range(partition_counts[first])])
    return out


REFERENCE = {
    "range": range_assign,
    "roundrobin": roundrobin_assign,
    "RoundRobinAssigner": roundrobin_assign,  # kafkajs's spelling, aliased by the host
    "pinned-first": pinned_first_assign,
}


def all_partitions(partition_counts, topics=None):
    return sorted([t, p] for t, n in partition_counts.items()
                  if topics is None or t in topics for p in range(n))


def stable_split(host, group, agents, partition_counts, timeout_s=60):
    """Waits until `group` is Stable with exactly `agents`, each agent's own report equal to
    what the host says it holds, and every partition held once; returns
    {client_id: partitions}. For strategies without a reference here (the operator-selected
    built-ins), whose own promise the test then checks."""
    def check():
        d = host.describe(group)
        seen = f"{d}\n" + "\n".join(a.summary() for a in agents)
        if d["state"] != "Stable" or set(d["members"]) != {a.member_id for a in agents}:
            return False, seen
        if any(a.current != d["members"][a.member_id]["assignment"] for a in agents):
            return False, seen
        union = sorted(tp for a in agents for tp in a.current)
        if union != all_partitions(partition_counts):
            return False, seen
        return True, d
    d = wait_until(check, f"{group}: stable and covered once", timeout_s=timeout_s)[1]
    for a in agents:
        assert not a.errors(), f"{a.name} reported errors: {a.errors()}"
    return {d["members"][a.member_id]["client_id"]: a.current for a in agents}


def check_group(host, group, agents, strategy, partition_counts):
    """One look at the group: `(True, expected)` when the host reports a Stable group whose
    members are exactly `agents`, and every agent's current assignment equals the reference
    strategy's answer for those member ids and subscriptions (so does the host's own
    DescribeGroups assignment); else `(False, what was seen)`."""
    d = host.describe(group)
    reported = {a.name: (a.member_id, a.current) for a in agents}
    seen = [f"group {group}: state={d['state']} protocol={d['protocol']}"]
    seen += [f"  host member {m}: topics={i['topics']} assignment={i['assignment']}"
             for m, i in sorted(d["members"].items())]
    seen += [a.summary() for a in agents]
    seen = "\n".join(seen)
    if d["state"] != "Stable":
        return False, seen
    if set(d["members"]) != {member for member, _ in reported.values()}:
        return False, seen
    subscriptions = {m: i["topics"] for m, i in d["members"].items()}
    expected = REFERENCE[strategy](subscriptions, partition_counts)
    for member, current in reported.values():
        if current != expected[member] or d["members"][member]["assignment"] != expected[member]:
            return False, seen + f"\n  expected: {expected}"
    return True, expected


def wait_for_assignment(host, group, agents, strategy, partition_counts, timeout_s=60,
                        tolerated=()):
    """Waits until `check_group` holds, then checks the union of the clients' own reports
    covers every partition of `partition_counts` (the topics the agents subscribe to) exactly
    once and that no client reported an error (but those `tolerated`, regular expressions);
    returns {member_id: partitions}."""
    expected = wait_until(
        lambda: check_group(host, group, agents, strategy, partition_counts),
        f"{group}: every client's assignment equal to {strategy}'s", timeout_s=timeout_s)[1]
    union = sorted(tp for a in agents for tp in a.current)
    assert union == all_partitions(partition_counts), (
        f"the clients' assignments do not cover each partition once: {union}")
    for a in agents:
        errors = [e for e in a.errors() if not any(re.search(t, e) for t in tolerated)]
        assert not errors, f"{a.name} reported errors: {errors}"
    return expected
