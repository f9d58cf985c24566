"""Who owned which partition when, from the clients' own callbacks (confluent-kafka agents:
`assigned` stamped before the partitions are taken, `revoked` after they are given up, both
with CLOCK_MONOTONIC, one clock for every process on Linux). Each interval is a superset of
the real ownership, so `unowned_seconds` never counts a partition as unowned while it was
owned, and counts at most the callback latency too little."""


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
