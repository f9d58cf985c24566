#!/usr/bin/env python3
"""Random consumer groups for Kafka's sticky assignors, in the scenario format of
src/kafka_test/oracle.rs, written to stdout. Usage: generate.py SEED COUNT [FLAVOR].

The groups are small (up to 9 members, 6 topics, 9 partitions each) and mix what decides the
sticky answer: equal and different subscriptions, empty subscriptions, previous owners from a
plausible earlier assignment, stale and missing generations, two members claiming one
partition, claims on topics nobody subscribes to any more, consumer and replica racks, member ids
of the shape clients use (so Java's HashMap order is exercised), and Kafka's test-only
preferRackAwareLogic switch.
"""

import random
import sys


def member_id(rng, i):
    style = rng.random()
    if style < 0.4:
        return "consumer-%d-%08x" % (i, rng.getrandbits(32))
    if style < 0.7:
        return "c%d" % i
    return "rdkafka-%04x-%04x" % (rng.getrandbits(16), rng.getrandbits(16))


def scenario(rng, name, flavor):
    n_topics = rng.randint(1, 6)
    topics = {}
    for i in range(n_topics):
        tname = rng.choice(["t%d" % i, "topic%d" % i, "orders-%d" % i, "T%d" % i])
        if tname in topics:
            tname += "x%d" % i
        topics[tname] = rng.randint(1, 9)
    names = sorted(topics)

    racks_on = rng.random() < 0.35
    all_racks = ["a", "b", "c", "d"][: rng.randint(2, 4)]
    topic_racks = {}
    if racks_on:
        for t in names:
            rf = rng.randint(1, len(all_racks))
            per = []
            for _ in range(topics[t]):
                per.append(",".join(sorted(rng.sample(all_racks, rf))))
            topic_racks[t] = per

    n_members = rng.randint(1, 9)
    ids = []
    while len(ids) < n_members:
        m = member_id(rng, len(ids))
        if m not in ids:
            ids.append(m)

    equal = rng.random() < 0.5
    common = rng.sample(names, rng.randint(1, len(names)))
    subs = {}
    for m in ids:
        if equal:
            subs[m] = list(common)
        else:
            k = rng.randint(0 if rng.random() < 0.1 else 1, len(names))
            subs[m] = rng.sample(names, k)

    # A plausible previous assignment: partitions dealt to members that had the topic.
    generation = rng.randint(1, 20)
    owned = {m: [] for m in ids}
    gens = {}
    previous = [m for m in ids if rng.random() < 0.75]
    for t in names:
        for p in range(topics[t]):
            holders = [m for m in previous if t in subs[m] or rng.random() < 0.1]
            if holders and rng.random() < 0.85:
                owned[rng.choice(holders)].append((t, p))
    for m in ids:
        r = rng.random()
        if not owned[m]:
            gens[m] = -1 if r < 0.5 else generation
        elif r < 0.75:
            gens[m] = generation
        elif r < 0.9:
            gens[m] = max(generation - rng.randint(1, 3), -1)
        else:
            gens[m] = -1
    # Conflicting claims. (Not claims on partitions that do not exist: Kafka keeps those and
    # hands them out, or throws, where the port drops them; see the core's crate docs.)
    for m in ids:
        if rng.random() < 0.15:
            t = rng.choice(names)
            owned[m].append((t, rng.randrange(topics[t])))
    for m in ids:
        seen = []
        for tp in owned[m]:
            if tp not in seen:
                seen.append(tp)
        rng.shuffle(seen)
        owned[m] = seen

    member_racks = {}
    for m in ids:
        member_racks[m] = rng.choice(all_racks + ["-"]) if racks_on or rng.random() < 0.1 else "-"

    lines = ["scenario " + name, "flavor " + flavor, "prefer %d" % (rng.random() < 0.15)]
    # Kafka's assign() (and the host) pass only topics some member subscribes to.
    subscribed = set(t for m in ids for t in subs[m])
    for t in names:
        if t not in subscribed:
            continue
        line = "topic %s %d" % (t, topics[t])
        if t in topic_racks:
            line += " " + "/".join(topic_racks[t])
        lines.append(line)
    for m in sorted(ids):
        tl = ",".join(subs[m]) if subs[m] else "-"
        ol = ",".join("%s:%d" % tp for tp in owned[m]) if owned[m] else "-"
        lines.append("member %s %s %s %d %s" % (m, tl, ol, gens[m], member_racks[m]))
    lines.append("end")
    return "\n".join(lines)


def main():
    seed, count = int(sys.argv[1]), int(sys.argv[2])
    flavors = [sys.argv[3]] if len(sys.argv) > 3 else ["sticky", "cooperative"]
    rng = random.Random(seed)
    for i in range(count):
        flavor = flavors[i % len(flavors)]
        print(scenario(rng, "%s-%d-%d" % (flavor, seed, i), flavor))


if __name__ == "__main__":
    main()
