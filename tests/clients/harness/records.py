"""Real records in proxy mode: producing them through the host, and accounting for who read
what.

Producers are the clients' own: confluent-kafka's `Producer` (acks=all, each record's
partition and offset from its delivery report) and `kcat -P` (keys only: kcat reports no
offsets). Every record of a test has a unique key, so the ledger is keyed by it.

The accounting takes the consumers' own reports (`Agent.records()`: topic, partition, offset,
key, and the ownership term the record came in) and answers the questions the tests ask:
was every record read, how many times, by whom, and does that agree with what each member
was assigned.
"""

import subprocess
import threading
import time
from collections import defaultdict
from dataclasses import dataclass

from confluent_kafka import Producer

from .security import librdkafka_login, login_for
from .wait import wait_until


@dataclass(frozen=True)
class Record:
    topic: str
    partition: int
    offset: int | None  # None: produced by kcat, which reports no offsets
    key: str


def keys(prefix, count, start=0):
    return [f"{prefix}-{i:05d}" for i in range(start, start + count)]


def produce(bootstrap, topic, record_keys, partitions=None, config=None):
    """Produces one record per key to `topic` with confluent-kafka, through `bootstrap`;
    `partitions`: the number of partitions to spread them over in turn (else librdkafka's
    key hash); `config`: more producer settings (a login). Returns the records as
    acknowledged (each delivery report checked). It logs in where the host wants it
    (harness/security.py)."""
    producer = Producer({"bootstrap.servers": bootstrap, "acks": "all",
                         "linger.ms": 5, "enable.idempotence": False,
                         **librdkafka_login(bootstrap), **(config or {})})
    acked, failed = [], []

    def delivered(err, msg):
        if err is not None:
            failed.append(f"{msg.key()}: {err}")
        else:
            acked.append(Record(msg.topic(), msg.partition(), msg.offset(),
                                msg.key().decode()))

    for i, key in enumerate(record_keys):
        extra = {"partition": i % partitions} if partitions else {}
        producer.produce(topic, key=key, value=f"value of {key}", on_delivery=delivered,
                         **extra)
        producer.poll(0)
    left = producer.flush(30)
    assert left == 0 and not failed, f"produce to {topic}: {left} unflushed, failed {failed[:5]}"
    assert len(acked) == len(record_keys)
    return acked


def produce_kcat(bootstrap, topic, record_keys, partition=None):
    """Produces one `key:value` line per key with `kcat -P` through `bootstrap` (kcat's own
    partitioner on the key, or `partition`); returns the records (offsets unknown)."""
    argv = ["kcat", "-P", "-b", bootstrap, "-t", topic, "-K", ":", "-X", "acks=all"]
    if partition is not None:
        argv += ["-p", str(partition)]
    login = login_for(bootstrap, "kcat")
    if login is not None:
        from .agents import kcat_login_file
        argv += ["-F", str(kcat_login_file(login))]
    lines = "".join(f"{key}:value of {key}\n" for key in record_keys)
    out = subprocess.run(argv, input=lines, capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, f"kcat -P exited {out.returncode}: {out.stderr}"
    assert "ERROR" not in out.stderr, f"kcat -P reported: {out.stderr}"
    return [Record(topic, partition if partition is not None else -1, None, key)
            for key in record_keys]


def reads(agents):
    """{key: [(agent, (topic, partition, offset), term)...]} over everything the agents read."""
    out = defaultdict(list)
    for a in agents:
        for t, p, o, k, term in a.records():
            out[k].append((a, (t, p, o), term))
    return out


def wait_all_read(agents, records, what, timeout_s=60):
    """Waits until every record of `records` was read by at least one of `agents`."""
    wanted = {r.key: r for r in records}

    def check():
        seen = reads(agents)
        missing = sorted(wanted.keys() - seen.keys())
        if not missing:
            return True
        counts = ", ".join(f"{a.name}: {len(a.records())}" for a in agents)
        where = [(k, wanted[k].partition, wanted[k].offset) for k in missing[:5]]
        around = {a.name: sorted(o for _, p, o, _, _ in a.records() if p == where[0][1]
                                 and where[0][2] is not None and abs(o - where[0][2]) <= 3)
                  for a in agents}
        return False, (f"{len(missing)} of {len(wanted)} not read yet (first, with partition "
                       f"and offset: {where}; offsets read near the first: {around}); "
                       f"records read: {counts}\n" + "\n".join(a.summary() for a in agents))

    wait_until(check, what, timeout_s=timeout_s)


def check_records(records, agents, allowed_duplicates=frozenset()):
    """Checks what `agents` read against what was produced (`records`): every record read,
    at the partition and offset its producer was told (when known), nothing read that was not
    produced, and each record read once, except keys in `allowed_duplicates`. Returns
    {key: times read} of the records read more than once."""
    seen = reads(agents)
    produced = {r.key: r for r in records}
    unknown = sorted(set(seen) - set(produced))
    assert not unknown, f"records read that no test produced: {unknown[:10]}"
    missing = sorted(set(produced) - set(seen))
    assert not missing, f"{len(missing)} records never read (lost): {missing[:10]}"
    for key, where in seen.items():
        r = produced[key]
        for agent, (t, p, o), _ in where:
            assert t == r.topic, f"{key} read from topic {t}, produced to {r.topic}"
            if r.offset is not None:
                assert (p, o) == (r.partition, r.offset), \
                    f"{key} read by {agent.name} at {t}[{p}]@{o}, acked at " \
                    f"[{r.partition}]@{r.offset}"
        positions = {w[1] for w in where}
        assert len(positions) == 1, f"{key} read at several positions: {positions}"
    twice = {k: len(w) for k, w in seen.items() if len(w) > 1}
    unexpected = sorted(set(twice) - set(allowed_duplicates))
    assert not unexpected, (
        f"{len(unexpected)} records read more than once: "
        + ", ".join(f"{k} by {[a.name for a, _, _ in seen[k]]}" for k in unexpected[:10]))
    return twice


def check_reads_follow_assignment(agents, expected):
    """In steady state (one assignment, no rebalance while reading; with `check_records`
    having found every record read once): each agent read only partitions the strategy gave
    it (`expected`: {member_id: [[topic, partition]...]}), so all the records of each of
    them. Returns {agent name: records read}."""
    for a in agents:
        mine = {tuple(tp) for tp in expected[a.member_id]}
        read = {(t, p) for t, p, _, _, _ in a.records()}
        assert read <= mine, \
            f"{a.name} read partitions it was not assigned: {sorted(read - mine)} (has {mine})"
    return {a.name: len(a.records()) for a in agents}


class SteadyProducer:
    """confluent-kafka producing through `bootstrap` in a thread, one record every
    1/`rate` s over the partitions of `topic` in turn, until `stop()`: records arrive while
    the test kills or restarts things. `acked()` is what was acknowledged so far."""

    def __init__(self, bootstrap, topic, partitions, prefix, rate=200):
        self.topic, self.partitions, self.prefix, self.rate = topic, partitions, prefix, rate
        self._producer = Producer({"bootstrap.servers": bootstrap, **librdkafka_login(bootstrap),
                                   "acks": "all",
                                   "linger.ms": 5, "message.timeout.ms": 60000})
        self._acked, self._failed = [], []
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def start(self):
        self._thread.start()
        return self

    def _delivered(self, err, msg):
        with self._lock:
            if err is not None:
                self._failed.append(f"{msg.key()}: {err}")
            else:
                self._acked.append(Record(msg.topic(), msg.partition(), msg.offset(),
                                          msg.key().decode()))

    def _run(self):
        i = 0
        next_at = time.monotonic()
        while not self._stop.is_set():
            key = f"{self.prefix}-{i:06d}"
            self._producer.produce(self.topic, key=key, value=f"value of {key}",
                                   partition=i % self.partitions, on_delivery=self._delivered)
            i += 1
            next_at += 1 / self.rate
            self._producer.poll(max(0.0, next_at - time.monotonic()))

    def acked(self):
        with self._lock:
            return list(self._acked)

    def stop(self):
        """Stops producing, waits for every record's delivery report; returns the records,
        each of them acknowledged (a failed delivery fails the test)."""
        self._stop.set()
        self._thread.join(timeout=30)
        left = self._producer.flush(60)
        with self._lock:
            assert left == 0 and not self._failed, \
                f"{self.topic}: {left} records unflushed, failed: {self._failed[:5]}"
            return list(self._acked)
