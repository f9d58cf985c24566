"""Who owned which partition when, from the clients' own callbacks (confluent-kafka agents:
`assigned` stamped before the partitions are taken, `revoked` after they are given up; the Java
agent: from the start of `onPartitionsAssigned` to the end of `onPartitionsRevoked`, the
application's ownership; all with CLOCK_MONOTONIC, one clock for every process on Linux). Each
interval is a superset of the real ownership, so `unowned_seconds` never counts a partition as
unowned while it was owned, and counts at most the callback latency too little, and
`overlapping` finds any moment two consumers held one partition."""


def ownership(agent, dead_ns):
    """[((t, p), start_ns, end_ns)] from the agent's callbacks; the end of what it still held
    is its death (`dead_ns`: after it was reaped or had closed), or None while it lives."""
    held, spans = {}, []
    for e in list(agent.events):
        kind = e.get("event")
        if kind == "assigned":
            for tp in e["added"]:
                held.setdefault(tuple(tp), e["since_ns"])
        elif kind == "revoked":
            for tp in e["partitions"]:
                if tuple(tp) in held:
                    spans.append((tuple(tp), held.pop(tuple(tp)), e["at_ns"]))
    spans += [(tp, start, dead_ns) for tp, start in held.items()]
    return spans


def unowned_seconds(agents, dead_ns, partitions, start_ns, end_ns):
    """Partition-seconds in [start_ns, end_ns] during which a partition of `partitions` had no
    owner among `agents` (`dead_ns`: agent name -> when it was gone)."""
    by_partition = {tuple(tp): [] for tp in partitions}
    for agent in agents:
        for tp, s, e in ownership(agent, dead_ns.get(agent.name)):
            if tp in by_partition:
                by_partition[tp].append((max(s, start_ns), min(end_ns if e is None else e, end_ns)))
    total = 0
    for spans in by_partition.values():
        covered, reach = 0, start_ns
        for s, e in sorted(spans):
            if e <= reach:
                continue
            covered += e - max(s, reach)
            reach = e
        total += (end_ns - start_ns) - covered
    return total / 1e9


def overlapping(agents, dead_ns):
    """Pairs of ownership intervals of one partition held by two of `agents` at once:
    [((t, p), agent a, start, end, agent b, start, end)...]; empty when no partition ever had
    two owners. `dead_ns`: agent name -> when it was gone (reaped, or closed)."""
    by_partition = {}
    for agent in agents:
        for tp, start, end in ownership(agent, dead_ns.get(agent.name)):
            by_partition.setdefault(tp, []).append((start, end, agent))
    found = []
    for tp, spans in by_partition.items():
        for i, (s1, e1, a) in enumerate(spans):
            for s2, e2, b in spans[i + 1:]:
                if a is not b and (e2 is None or s1 < e2) and (e1 is None or s2 < e1):
                    found.append((tp, a, s1, e1, b, s2, e2))
    return found
