"""Issue 33: the delay window of `hold-departed` without a stop for the members that stay,
eager consumers included, in proxy mode in front of Kafka, judged from the consumers' own
callbacks.

Each test runs one scenario on two groups of one host at the same time, each of three
consumers (a, b, c; client ids `app-a`...) reading one topic of 6 partitions that a producer
writes to all along (through the host):
- **held**: the operator sets `hold-departed` (`group set G --strategy hold-departed --param
  window_ms=N`); the module declares `in_place`, so a departure and a return are applied
  without a rebalance (docs/abi.md, "In-place rounds");
- **plain**: the strategy the consumers propose (`range`, or `cooperative-sticky`), Kafka's
  behaviour: every departure and every arrival is a rebalance.

Scenarios (b is dynamic: librdkafka's and kafka-python's default):
- **close**: b closes (LeaveGroup) and a new process with its client id starts 3 s later;
- **kill**: b is SIGKILLed and a new process starts 1 s later, before the old session (6 s)
  expired: the host waits for the old member to expire (or be heard from) before admitting it;
- **gone**: b is SIGKILLed and never comes back: at the window's end one rebalance spreads its
  partitions.

What the held group must show: a and c revoke nothing and keep their term (no new `assigned`)
from the departure on, and keep reading records; the returning process's first assignment is
exactly b's partitions; the host's generation does not move; describe lists b's partitions as
held while they wait; no partition ever has two owners; every record produced is read. With no
return: exactly one rebalance, after which every partition is owned again (eager members
revoke once, then; cooperative ones not at all).

Beside it, the plain group's figures. Each run appends one line per group to
`target/bench/hold-departed-eager.jsonl` and prints them:
unowned partition-seconds (from the departure until every partition is owned again, from the
callbacks, harness.ownership), generations, partitions revoked from the members that stayed.

    cd tests/clients && .venv/bin/python -m pytest -q -s test_hold_departed_eager.py
"""

import json
import time

import pytest

from conftest import unique
from harness.expect import all_partitions
from harness.host import ROOT
from harness.ownership import overlapping, unowned_seconds
from harness.records import SteadyProducer, wait_all_read
from harness.wait import wait_until
from test_client_leader_fallback import settled

PARTITIONS = 6
WINDOW_MS = 20_000
GONE_WINDOW_MS = 10_000


def revoked_since(agent, index):
    """Partitions `agent` revoked in its events from `index` on."""
    return [tp for e in agent.events[index:] if e.get("event") == "revoked"
            for tp in e["partitions"]]


def assigned_since(agent, index):
    return [e for e in agent.events[index:] if e.get("event") == "assigned"]


class Run:
    """One group of the test: its topic, producer and three consumers."""

    def __init__(self, proxy, consumers, client, strategy, held, window_ms, **options):
        """`options`: more of `Consumers.start`'s (KIP-848: `group_protocol`,
        `remote_assignor`, with `strategy` the name shown for the plain group)."""
        self.host, self.consumers = proxy.host, consumers
        self.client, self.strategy, self.held = client, strategy, held
        self.options = options
        self.group = unique(f"{'held' if held else 'plain'}-{client}")
        self.topic = f"{self.group}-orders"
        self.topics = {self.topic: PARTITIONS}
        self.host.create_topics(self.topics)
        if held:
            status, answer = self.host.set_group_config(
                self.group, "hold-departed", {"window_ms": str(window_ms)})
            assert status == 200, answer
        self.producer = SteadyProducer(self.host.bootstrap, self.topic, PARTITIONS,
                                       self.group, rate=60).start()
        self.agents = {n: self.start(n) for n in "abc"}
        self.everyone = list(self.agents.values())
        self.dead_ns = {}

    def start(self, name):
        strategies = [] if self.options else [self.strategy]
        return self.consumers.start(self.client, self.group, [self.topic], strategies,
                                    client_id=f"app-{name}", records=True, **self.options)

    def settled(self, names):
        return settled(self.host, self.group, [self.agents[n] for n in names], self.topics)

    def mark(self):
        """Before the departure: what everyone had, the generation and where each log is."""
        self.before = {n: a.current for n, a in self.agents.items()}
        self.generation = self.host.group_detail(self.group)["generation"]
        self.index = {n: len(a.events) for n, a in self.agents.items()}
        self.read = {n: len(a.records()) for n, a in self.agents.items()}
        self.t0 = time.monotonic_ns()

    def depart(self, how):
        b = self.agents["b"]
        b.close() if how == "close" else b.kill()
        self.dead_ns[b.name] = time.monotonic_ns()

    def come_back(self):
        self.agents["b"] = self.start("b")
        self.everyone.append(self.agents["b"])

    def figures(self, scenario, t1):
        detail = self.host.group_detail(self.group)
        return {
            "scenario": scenario, "client": self.client, "strategy": self.strategy,
            "group": "hold-departed" if self.held else f"plain {self.strategy}",
            "unowned_partition_seconds": round(unowned_seconds(
                self.everyone, self.dead_ns, all_partitions(self.topics), self.t0, t1), 1),
            "generations": detail["generation"] - self.generation,
            "revoked_from_members_staying": sum(
                len(revoked_since(self.agents[n], self.index[n])) for n in "ac"),
            "departure_to_settled_s": round((t1 - self.t0) / 1e9, 1),
        }

    def stop(self):
        return self.producer.stop()


def record(results):
    out = ROOT / "target" / "bench"
    out.mkdir(parents=True, exist_ok=True)
    with open(out / "hold-departed-eager.jsonl", "a") as f:
        for r in results:
            f.write(json.dumps(r) + "\n")
    for r in results:
        print(f"\n  {r['scenario']:5} {r['client']:15} {r['group']:26} "
              f"{r['unowned_partition_seconds']:6.1f} unowned partition-s, "
              f"{r['generations']} generations, "
              f"{r['revoked_from_members_staying']:2} partitions revoked from members staying, "
              f"settled {r['departure_to_settled_s']} s after the departure")


def wait_held(run):
    """Describe lists b's partitions as held (the window's remainder shown)."""
    def held():
        d = run.host.group_detail(run.group)
        records = d.get("held", [])
        ok = (len(records) == 1 and records[0]["client_id"] == "app-b"
              and sorted([t, p] for t, ps in records[0]["partitions"].items() for p in ps)
              == run.before["b"] and records[0]["until_in_ms"] is not None)
        return ok, d
    return wait_until(held, f"{run.group}: b's partitions shown as held", timeout_s=30)[1]


def check_stayers_untouched(run):
    """a and c revoked nothing, were assigned nothing, hold what they held and kept reading."""
    for n in "ac":
        a = run.agents[n]
        assert revoked_since(a, run.index[n]) == [], f"{n} revoked: {a.summary()}"
        assert assigned_since(a, run.index[n]) == [], f"{n} was reassigned: {a.summary()}"
        assert a.current == run.before[n], a.summary()
        wait_until(lambda a=a, n=n: (len(a.records()) > run.read[n], a.summary()),
                   f"{run.group}: {n} keeps reading", timeout_s=30)


def scenario(proxy, consumers, client, strategy, how):
    window = GONE_WINDOW_MS if how == "gone" else WINDOW_MS
    runs = [Run(proxy, consumers, client, strategy, held, window) for held in (True, False)]
    for run in runs:
        wait_until(lambda run=run: run.settled("abc"), f"{run.group}: three consumers",
                   timeout_s=90)
        assert sorted(len(a.current) for a in run.agents.values()) == [2, 2, 2]
    # Some records read by everyone before anything happens.
    for run in runs:
        for a in run.agents.values():
            wait_until(lambda a=a: (len(a.records()) > 0, a.summary()), f"{a.name} reads",
                       timeout_s=30)
        run.mark()
    for run in runs:
        run.depart("kill" if how == "gone" else how)
    held, plain = runs
    if how == "close":
        detail = wait_held(held)
        assert detail["generation"] == held.generation, detail
        check_stayers_untouched(held)
        time.sleep(max(0.0, 3 - (time.monotonic_ns() - held.t0) / 1e9))
    elif how == "kill":
        time.sleep(1)
    if how != "gone":
        for run in runs:
            run.come_back()
        for run in runs:
            wait_until(lambda run=run: run.settled("abc"), f"{run.group}: b back",
                       timeout_s=60)
    else:
        detail = wait_held(held)
        check_stayers_untouched(held)
        for run in runs:
            wait_until(lambda run=run: run.settled("ac"),
                       f"{run.group}: b's partitions owned again", timeout_s=60)
    t1 = time.monotonic_ns()
    results = [run.figures(how, t1) for run in runs]
    produced = {run.group: run.stop() for run in runs}
    record(results)

    # The held group, from the consumers' own callbacks.
    history = held.host.group_detail(held.group)["history"]
    reasons = [(h["generation"], h["reason"], h.get("in_place")) for h in history]
    if how == "gone":
        assert results[0]["generations"] == 1, (results[0], reasons)
        cooperative = strategy.startswith("cooperative")
        for n in "ac":
            a = held.agents[n]
            revoked = revoked_since(a, held.index[n])
            if cooperative:
                assert revoked == [], f"{n}: {a.summary()}"
            else:
                # The one stop an eager member cannot avoid: new partitions reach it only
                # through a rebalance. Everything it had, revoked once.
                assert sorted(revoked) == held.before[n], f"{n}: {a.summary()}"
            assert set(map(tuple, held.before[n])) <= set(map(tuple, a.current)), a.summary()
        assert reasons[-1][1] == "the assignor asked for a rebalance", reasons
    else:
        assert results[0]["generations"] == 0, (results[0], reasons)
        check_stayers_untouched(held)
        back = held.agents["b"]
        first = back.assignments()[0]
        assert sorted(map(list, first["partitions"])) == held.before["b"], back.summary()
        assert back.current == held.before["b"], back.summary()
        assert any(r[2] for r in reasons), reasons
        assert not held.host.group_detail(held.group).get("held"), "nothing held any more"
    assert overlapping(held.everyone, held.dead_ns) == []
    wait_all_read(held.everyone, produced[held.group], f"{held.group}: every record read")
    for a in held.everyone:
        assert not a.errors(), a.summary()

    # Kafka's behaviour beside it: the plain group's members that stayed were stopped.
    if not strategy.startswith("cooperative"):
        assert results[1]["revoked_from_members_staying"] > 0, results[1]
    return results


@pytest.mark.parametrize("client", ["confluent-kafka", "kafka-python"])
@pytest.mark.parametrize("how", ["close", "kill", "gone"])
def test_eager_members_that_stay_are_not_stopped(proxy, proxy_consumers, client, how):
    scenario(proxy, proxy_consumers, client, "range", how)
