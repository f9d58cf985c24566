"""Issue 14, item 5: the churn soak. Fifty librdkafka consumers (confluent-kafka agents) in
five groups, three eager (`range`) and two cooperative (`cooperative-sticky`), ten each, are
SIGKILLed and restarted at random for two minutes (`SOAK_SECONDS`), and the host is restarted
once (SIGTERM, same config, data dir and ports) in the middle of it. Afterwards it shows:

1. **No partition ever had two owners at once**, from the clients' own callbacks. librdkafka
   does not expose the generation, so the check is on time, which is stronger than per
   generation: each consumer stamps `assigned` with `time.monotonic_ns()` taken before it
   takes the partitions and `revoked` with one taken after it has given them up
   (agents/confluent_agent.py). CLOCK_MONOTONIC is one clock for every process on Linux, so
   the stamps of different consumers compare. A SIGKILLed consumer never revokes: its
   ownership ends when the soak has reaped it (`waitpid` returned), a stamp taken after the
   process is gone. Every interval is thus a superset of the real ownership, and intervals of
   two consumers that do not overlap mean the ownerships did not. In an eager group a killed
   member's partitions are unowned until its session (6 s) expires and the survivors are
   given them by the next generation; nothing is owned twice meanwhile, and the check needs
   no exception for it. What the check cannot see: ownership between `assign()` and the
   `assigned` line if the consumer is killed in between (microseconds), and a member the host
   expelled while it was alive (Kafka's zombie, which learns it lost its partitions only at
   its next heartbeat): the soak counts the sessions that expired for members it never
   killed and prints them, and the check applies to them as to all (none is expected here:
   heartbeats every 500 ms against a 6 s session).
2. **Every partition is owned again within the rebalance timeout after the churn stops**: the
   churn ends by restarting every killed slot, so fifty consumers run; each group must then,
   within `REBALANCE_TIMEOUT_MS` (JoinGroup's rebalance timeout, librdkafka's
   `max.poll.interval.ms`, 30 s here), be Stable with exactly its live consumers as members,
   each holding what the host says it was assigned, together every partition exactly once.
   The bound covers the last killed member's session expiry (6 s) and the rebalance after it.
3. **No acknowledged offset commit is lost across the host restart**: offsets are committed
   throughout through the agents' `commit` command, each offset larger than every earlier
   one, and counted only once the client acknowledged it (`committed`; a refused commit,
   for instance REBALANCE_IN_PROGRESS mid-churn, is retried later and not counted). Right
   before the restart every partition of every group is committed and acknowledged; right
   after it, before any new commit could cover a loss, every group's offsets are read back
   (OffsetFetch, the agent's `committed`) and each is at least the acknowledged one; at the
   end, all acknowledged commits are checked the same way. So that the host goes down with
   groups mid-rebalance whatever the random schedule, an eager and a cooperative group are
   told to rebalance (the admin API's `group rebalance`) just before the SIGTERM.

The random schedule (victims, delays, the restart's moment) comes from `SOAK_SEED` (printed,
default 14) so a failing run can be replayed: the same victims and delays, drawn in the same
order (the moments shift by what commits take; which member holds what depends on timing).

    cd tests/clients && SOAK_SECONDS=1800 SOAK_SEED=7 .venv/bin/python -m pytest -m soak -s
"""

import collections
import itertools
import os
import random
import re
import time

import pytest

from conftest import Consumers, unique
from harness.expect import all_partitions
from harness.ownership import overlapping, ownership
from harness.wait import wait_until
from test_client_leader_fallback import settled
from test_proxy_failures import restart

pytestmark = pytest.mark.soak

CLIENT = "confluent-kafka"
SOAK_SECONDS = float(os.environ.get("SOAK_SECONDS", "120"))
SEED = int(os.environ.get("SOAK_SEED", "14"))
REBALANCE_TIMEOUT_MS = 30_000
SESSION_TIMEOUT_S = 6  # the agents' session.timeout.ms
STRATEGIES = ["range"] * 3 + ["cooperative-sticky"] * 2
MEMBERS_PER_GROUP = 10
# Seconds between two kills, and from a kill to that slot's restart (some restarts join
# before the killed member's session has expired, some after).
KILL_EVERY_S = (0.5, 2.5)
RESTART_AFTER_S = (0.2, 2 * SESSION_TIMEOUT_S)
COMMIT_EVERY_S = (1.0, 4.0)


class Group:
    """One consumer group of the soak: its topics and its slots, each the latest agent run in
    it (None while killed), and every agent it ever ran."""

    def __init__(self, consumers, strategy):
        self.consumers = consumers
        self.strategy = strategy
        self.name = unique("soak-coop" if strategy == "cooperative-sticky" else "soak-eager")
        self.topics = {f"{self.name}-a": 12, f"{self.name}-b": 9}
        self.partitions = all_partitions(self.topics)
        self.slots = [None] * MEMBERS_PER_GROUP
        self.agents = []
        self.acked = {}  # (topic, partition) -> highest offset the client acknowledged

    def spawn(self, slot):
        agent = self.consumers.start(CLIENT, self.name, sorted(self.topics), [self.strategy],
                                     rebalance_timeout_ms=REBALANCE_TIMEOUT_MS)
        self.slots[slot] = agent
        self.agents.append(agent)

    def live(self):
        return [a for a in self.slots if a is not None]


def answer(agent, since, kinds, failure):
    """The first event after `since` of one of `kinds`, or the client's error for the command
    (its message starts with `failure`); other errors (error_cb's transport errors while the
    host restarts) are not the command's answer."""
    def check():
        for e in agent.events[since:]:
            if e.get("event") in kinds:
                return True, e
            if e.get("event") == "error" and e["message"].startswith(failure):
                return True, e
        if agent.proc.poll() is not None:
            raise AssertionError(f"{agent.name} exited during {failure}\n{agent.summary()}")
        return False, agent.summary()

    return wait_until(check, f"{agent.name}: answer to {failure}", timeout_s=60)[1]


def commit(agent, offsets):
    """Commits `[[t, p, offset]...]`; {(t, p): offset} acknowledged, or None when refused."""
    since = len(agent.events)
    agent.send(cmd="commit", offsets=offsets)
    e = answer(agent, since, {"committed"}, ("commit failed", "commit:"))
    return {(t, p): o for t, p, o in e["offsets"]} if e["event"] == "committed" else None


def read_committed(agent, partitions):
    """{(t, p): offset or None} as OffsetFetch answers, or None when the client failed."""
    since = len(agent.events)
    agent.send(cmd="committed", partitions=partitions)
    e = answer(agent, since, {"fetched"}, ("committed:",))
    return {(t, p): o for t, p, o in e["offsets"]} if e["event"] == "fetched" else None


def overlaps(group, dead_ns):
    """Pairs of ownership intervals of one partition held by two consumers at once."""
    return overlapping(group.agents, dead_ns)


class Soak:
    def __init__(self, host, consumers, seed):
        self.host = host
        # The schedule (victims, delays, the restart's moment) draws from `rng`, a fixed number
        # of draws per step; which member a retried commit or read goes to, from `pick`, so
        # retries do not shift the schedule of a replay.
        self.rng = random.Random(seed)
        self.pick = random.Random(seed + 1)
        self.groups = [Group(consumers, s) for s in STRATEGIES]
        self.dead_ns = {}  # agent name -> monotonic ns once reaped
        self.kills = 0
        self.restarts = 0
        self.commits = [0, 0]  # acknowledged, refused
        self.offsets = itertools.count(1000)
        self.restart_took = None
        self.t0 = time.monotonic_ns()

    def rel(self, ns):
        return "alive" if ns is None else f"{(ns - self.t0) / 1e9:.3f}s"

    def kill(self, group, slot):
        agent = group.slots[slot]
        agent.kill()
        self.dead_ns[agent.name] = time.monotonic_ns()
        group.slots[slot] = None
        self.kills += 1

    def commit_some(self, group, agent, partitions):
        """Commits fresh offsets for `partitions` as `agent`; True when acknowledged."""
        if not partitions:
            return False
        offsets = [[t, p, next(self.offsets)] for t, p in partitions]
        acked = commit(agent, offsets)
        if acked is None:
            self.commits[1] += 1
            return False
        assert acked == {(t, p): o for t, p, o in offsets}, (offsets, acked)
        self.commits[0] += 1
        for tp, o in acked.items():
            group.acked[tp] = max(o, group.acked.get(tp, -1))
        return True

    def commit_everything(self):
        """Every partition of every group committed and acknowledged, by one live member,
        retried (members in turn) while the group's rebalances refuse it."""
        for g in self.groups:
            def acknowledged():
                live = g.live()
                agent = live[self.pick.randrange(len(live))]
                return self.commit_some(g, agent, g.partitions), g.acked

            wait_until(acknowledged, f"{g.name}: a commit of every partition acknowledged",
                       interval_s=0.5)

    def read_back(self, g, expected, what):
        """Reads the group's committed offsets through a live member and asserts each is at
        least `expected`'s."""
        def fetched():
            live = g.live()
            return read_committed(live[self.pick.randrange(len(live))], g.partitions)

        got = wait_until(fetched, f"{g.name}: committed offsets read back", interval_s=0.5)
        lost = {tp: (o, got.get(tp)) for tp, o in expected.items()
                if got.get(tp) is None or got[tp] < o}
        assert not lost, (f"{g.name}: acknowledged commits lost {what} "
                          f"(partition: (acknowledged, read back)): {lost}")
        return got

    def churn(self, seconds):
        rng = self.rng
        start = time.monotonic()
        end = start + seconds
        host_restart_at = start + seconds * rng.uniform(0.4, 0.6)
        next_kill = start + rng.uniform(*KILL_EVERY_S)
        next_commit = start + rng.uniform(*COMMIT_EVERY_S)
        pending = []  # (due, group index, slot)
        while True:
            due = min([next_kill, next_commit, end]
                      + ([host_restart_at] if self.restart_took is None else [])
                      + [d for d, _, _ in pending])
            time.sleep(max(0.0, due - time.monotonic()))
            now = time.monotonic()
            if now >= end:
                break
            for item in [p for p in pending if p[0] <= now]:
                pending.remove(item)
                self.groups[item[1]].spawn(item[2])
                self.restarts += 1
            if self.restart_took is None and now >= host_restart_at:
                self.restart_host()
            if now >= next_commit:
                g = self.groups[rng.randrange(len(self.groups))]
                live = g.live()
                agent = live[rng.randrange(len(live))]
                self.commit_some(g, agent, [tuple(tp) for tp in agent.current or []])
                next_commit = time.monotonic() + rng.uniform(*COMMIT_EVERY_S)
            if now >= next_kill:
                # Never fewer than half a group alive, so commits always have members.
                choices = [(i, s) for i, g in enumerate(self.groups)
                           if len(g.live()) > MEMBERS_PER_GROUP // 2
                           for s, a in enumerate(g.slots) if a is not None]
                i, s = choices[rng.randrange(len(choices))]
                self.kill(self.groups[i], s)
                pending.append((now + rng.uniform(*RESTART_AFTER_S), i, s))
                next_kill = now + rng.uniform(*KILL_EVERY_S)
        # The churn stops: every killed slot runs again.
        for _, i, s in pending:
            self.groups[i].spawn(s)
            self.restarts += 1

    def restart_host(self):
        """Commits everything, starts a rebalance in one eager and one cooperative group (the
        operator's `group rebalance`), so the host goes down with members mid-join, restarts
        it and reads every group's offsets back."""
        self.commit_everything()
        before = {g.name: dict(g.acked) for g in self.groups}
        eager = [g for g in self.groups if g.strategy == "range"]
        coop = [g for g in self.groups if g.strategy != "range"]
        rebalanced = [eager[self.rng.randrange(len(eager))], coop[self.rng.randrange(len(coop))]]
        for g in rebalanced:
            self.host.rebalance(g.name)
        states = {g.name: self.host.describe(g.name)["state"] for g in self.groups}
        self.restart_took = restart(self.host)
        self.restart_at = time.monotonic_ns()
        for g in self.groups:
            self.read_back(g, before[g.name], "across the host restart")
        print(f"host restarted at {self.rel(self.restart_at)} in {self.restart_took:.1f} s, "
              f"groups {states} (rebalance triggered in {[g.name for g in rebalanced]}); "
              f"{sum(len(b) for b in before.values())} acknowledged offsets read back")

    def wait_owned(self, deadline):
        """{group name: seconds from now until it was first fully owned}."""
        started = time.monotonic()
        took = {}

        def all_owned():
            seen = []
            for g in self.groups:
                if g.name in took:
                    continue
                ok, detail = settled(self.host, g.name, g.live(), g.topics)
                if ok:
                    took[g.name] = time.monotonic() - started
                else:
                    seen.append(f"{g.name}: {detail}")
            return len(took) == len(self.groups), "\n".join(seen)

        wait_until(all_owned, "every partition owned again by exactly one live consumer",
                   timeout_s=deadline)
        return took


def expired_sessions(host):
    """Member ids the host removed because their session expired, from its log."""
    text = host.log_path.read_text(errors="replace")
    return set(re.findall(r"member=(\S+) reason=SessionExpired", text))


def expelled_alive(groups, expired, dead_ns):
    """The expired member ids of consumers that were alive when their session expired: the
    consumer went on with another member id afterwards, or was never killed."""
    found = []
    for g in groups:
        for agent in g.agents:
            ids = list(dict.fromkeys(e["member_id"] for e in agent.assignments()))
            for i, member_id in enumerate(ids):
                later = i < len(ids) - 1 or agent.name not in dead_ns
                if member_id in expired and later:
                    found.append((agent.name, member_id))
    return found


@pytest.fixture
def soak_consumers(host, request):
    """As conftest's `consumers`, with a short report: a failed soak has started ~130."""
    c = Consumers(host)
    yield c
    failed = getattr(request.node, "rep_call", None)
    if failed is not None and failed.failed:
        print("\n--- live consumers ---")
        for agent in c.started:
            if agent.proc.poll() is None:
                print(agent.summary(events=6, stderr=4))
        print("--- host log (tail) ---\n" + host.log_tail(80))
    for agent in c.started:
        agent.kill()


def test_fifty_consumers_killed_and_restarted_with_a_host_restart(host, soak_consumers):
    began = time.monotonic()
    print(f"\nchurn soak: seed {SEED} (SOAK_SEED), {SOAK_SECONDS:.0f} s of churn "
          f"(SOAK_SECONDS)")
    soak = Soak(host, soak_consumers, SEED)
    for g in soak.groups:
        host.create_topics(g.topics)
    for g in soak.groups:
        for s in range(MEMBERS_PER_GROUP):
            g.spawn(s)
    # Fifty consumers starting at once on a small machine: a longer first deadline.
    soak.wait_owned(deadline=180)
    formed = time.monotonic() - began

    soak.churn(SOAK_SECONDS)
    took = soak.wait_owned(deadline=REBALANCE_TIMEOUT_MS / 1000)

    found = [o for g in soak.groups for o in overlaps(g, soak.dead_ns)]
    spans = sum(len(ownership(a, None)) for g in soak.groups for a in g.agents)
    expired = expired_sessions(host)
    zombies = expelled_alive(soak.groups, expired, soak.dead_ns)
    assert not found, "partitions owned by two consumers at once:\n" + "\n".join(
        f"  {tp}: {a.name} ({a.member_id}) {soak.rel(s1)}..{soak.rel(e1)} and "
        f"{b.name} ({b.member_id}) {soak.rel(s2)}..{soak.rel(e2)}"
        for tp, a, s1, e1, b, s2, e2 in found[:20]) + (
        f"\nhost restarted at {soak.rel(soak.restart_at)}; sessions of live members "
        f"expired: {zombies}")

    for g in soak.groups:
        soak.read_back(g, g.acked, "by the end of the soak")
    # Still exactly one owner each once the checks are done: the groups stayed settled.
    for g in soak.groups:
        ok, detail = settled(host, g.name, g.live(), g.topics)
        assert ok, f"{g.name} no longer settled:\n{detail}"

    print(f"formed in {formed:.1f} s; {soak.kills} kills, {soak.restarts} consumer restarts, "
          f"host restart {soak.restart_took:.1f} s; {soak.commits[0]} commits acknowledged, "
          f"{soak.commits[1]} refused; {spans} ownership intervals, none overlapping; "
          f"sessions expired {len(expired)} (of consumers still alive: {len(zombies)})")
    for g in soak.groups:
        assigned = sum(len(a.assignments()) for a in g.agents)
        detail = host.group_detail(g.name)
        generation = detail.get("generation_id", detail.get("generation"))
        print(f"  {g.name} ({g.strategy}): {len(g.agents)} consumers run, {assigned} "
              f"assignments seen, generation {generation}, fully owned {took[g.name]:.1f} s "
              f"after the churn stopped")
    errors = collections.Counter(re.sub(r"[0-9a-f-]{8,}|\d+", "N", m)[:100]
                                 for g in soak.groups for a in g.agents for m in a.errors())
    print("client errors reported (error_cb, refused commits): "
          + ("; ".join(f"{n}x {m}" for m, n in errors.most_common(6)) or "none"))
    print(f"max time to full ownership {max(took.values()):.1f} s "
          f"(rebalance timeout {REBALANCE_TIMEOUT_MS / 1000:.0f} s); whole soak "
          f"{time.monotonic() - began:.0f} s")
