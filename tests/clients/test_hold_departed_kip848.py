"""Issue 33, continued from test_hold_departed_eager.py (same groups, producer and figures):
the delay window of `hold-departed` for KIP-848 consumers (`group.protocol=consumer`,
confluent-kafka) in proxy mode in front of Kafka. A departure never touches another member's
assignment unless the module's answer moves it; `hold-departed` holds the departed member's
partitions, gives them back to the same consumer (client id and host) when it returns, and
spreads them at the window's end. A close is a leave (epoch -1); a SIGKILL is a session expiry
(the host's `consumer_session_timeout_ms`, 6 s here): the new process, back 1 s later next to
the old member, is given nothing until the old one expired, then exactly its partitions
(consumer/twins.rs).

    cd tests/clients && .venv/bin/python -m pytest -q -s test_hold_departed_kip848.py
"""

import time

import pytest

from harness.ownership import overlapping
from harness.records import wait_all_read
from harness.wait import wait_until
from test_consumer_protocol import covered_once
from test_hold_departed_eager import GONE_WINDOW_MS, WINDOW_MS, Run, record, revoked_since


def balanced(members, partition_counts):
    """`covered_once`, and every member holds its even share (the target of `uniform`)."""
    covered, seen = covered_once(members, partition_counts)
    share = sum(partition_counts.values()) // len(members)
    return covered and all(len(m.current) == share for m in members), seen


def gained_since(agent, index):
    """Partitions `agent` was given (callbacks with additions) from its event `index` on."""
    return [tp for e in agent.events[index:] if e.get("event") == "assigned"
            for tp in e.get("added", [])]


@pytest.mark.coordinator_settings(consumer_session_timeout_ms=6000)
@pytest.mark.parametrize("how", ["close", "kill", "gone"])
def test_consumer_protocol_members_that_stay_keep_their_partitions(
        proxy, proxy_consumers, how):
    window = GONE_WINDOW_MS if how == "gone" else WINDOW_MS
    options = {"group_protocol": "consumer", "remote_assignor": "uniform"}
    runs = [Run(proxy, proxy_consumers, "confluent-kafka", "uniform", held, window, **options)
            for held in (True, False)]
    for run in runs:
        # Covered once and balanced (uniform: two partitions each): the last target is
        # reached, so nothing moves after `mark` but what the departure moves.
        wait_until(lambda run=run: balanced(list(run.agents.values()), run.topics),
                   f"{run.group}: three consumers, two partitions each", timeout_s=90)
        for a in run.agents.values():
            wait_until(lambda a=a: (len(a.records()) > 0, a.summary()), f"{a.name} reads",
                       timeout_s=30)
        run.mark()
    for run in runs:
        run.depart("kill" if how == "gone" else how)
    held, plain = runs
    if how != "gone":
        # A close leaves at once; a killed process is restarted before its session expired.
        time.sleep(3 if how == "close" else 1)
        for run in runs:
            run.come_back()
        names = "abc"
    else:
        names = "ac"
    for run in runs:
        wait_until(lambda run=run: covered_once([run.agents[n] for n in names], run.topics),
                   f"{run.group}: every partition owned", timeout_s=60)
    t1 = time.monotonic_ns()
    results = [run.figures(f"{how}-kip848", t1) for run in runs]
    produced = {run.group: run.stop() for run in runs}
    record(results)

    for n in "ac":
        a = held.agents[n]
        assert revoked_since(a, held.index[n]) == [], f"{n} revoked: {a.summary()}"
        gained = gained_since(a, held.index[n])
        if how == "gone":
            # The window's end: the held partitions spread over the members that stayed.
            assert set(map(tuple, held.before[n])) <= set(map(tuple, a.current)), a.summary()
        else:
            assert gained == [], f"{n} was given partitions: {a.summary()}"
            assert a.current == held.before[n], a.summary()
    if how == "gone":
        gained = sorted(tp for n in "ac" for tp in gained_since(held.agents[n], held.index[n]))
        assert gained == held.before["b"], (gained, held.before["b"])
    else:
        back = held.agents["b"]
        assert sorted(map(list, gained_since(back, 0))) == held.before["b"], back.summary()
    assert overlapping(held.everyone, held.dead_ns) == []
    wait_all_read(held.everyone, produced[held.group], f"{held.group}: every record read")
    for a in held.everyone:
        assert not a.errors(), a.summary()
