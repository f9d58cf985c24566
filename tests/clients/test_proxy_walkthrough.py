"""Issue 10: the proxy-mode walkthrough (docs/proxy-walkthrough.md, which continues the
README's walkthrough in front of Apache Kafka), run as written.

The test reads the blocks marked `<!-- proxy-walkthrough:KIND [PATH] -->` in order and does
what a user does with them, with the machinery of test_walkthrough.py
(harness/walkthrough.py): the `upstream` block in terminal 1, the `host` block in terminal 3,
the shell blocks (`upload`, `consumers`, `produce`, `lag`) one after the other in one bash,
terminal 2, and `file payments.py` written where terminal 2 is. It then checks what the page
says the user sees: the module assigns at once (`alice assigned payments [0, 2]`, `bob
assigned payments [1, 3]`), the consumers read the 1000 payments between them, the topic and
the records are on the cluster (read from Kafka directly), and `group describe payments` has a
TOPIC PARTITION MEMBER COMMITTED END LAG table whose LAG adds up to 200.

Substitutions, each one checked so that an edit of the page that makes one stale fails here:

(a) The upstream. The `upstream` block must read exactly `UPSTREAM` below; it runs as the
    suite's Kafka harness runs it (harness/kafka.py: the same `kafka-cluster` binary, built by
    tests/clients/run where the page's `cargo run` builds it, with the same one node, in a
    temporary folder as `$(mktemp -d)`, on free ports instead of 19092-19094, owned by the
    test instead of the terminal). A Kafka of the test's own, as the reader's is.
(b) The host. The `host` block must read exactly `HOST`; it runs as the suite's proxy-mode
    host (harness/host.py): the debug binary `tests/clients/run` builds, `serve --config FILE
    --upstream <Kafka's address>`, free ports for Kafka, the admin API and the broker
    (`broker_ports_from = 0`, where the page's default is 9094), a temporary data dir,
    `initial_rebalance_delay_ms = 0`. Terminal 2 reaches its admin API through the CLI's
    `ASSIGNOR_HOST_ADMIN`, as test_walkthrough.py's (a).
(c) `127.0.0.1:9092`, the host's address on the page, becomes the test host's in every
    terminal-2 block and in payments.py (checked present where it is needed).
(d) Terminal 2 starts where the README's walkthrough leaves it: in the `my-strategy` crate,
    built. The test makes that crate from that walkthrough's own blocks (`new`, `append
    Cargo.toml`, `file .cargo/config.toml`, `file src/lib.rs`, and the `cargo build` line of
    `build`), in a scratch directory, its `target` linked to the shared one as
    test_walkthrough.py's (e); `assignor-host` on PATH (the debug binary's directory, as
    test_walkthrough.py's (b)), `ASSIGNOR_SDK` set as its `setup` block does.
(e) Python, TMPDIR, PYTHONUNBUFFERED: as test_walkthrough.py's (c), (f), (g).

Every wait is a condition with a deadline; a failure prints terminal 2's transcript and the
host's log.
"""

import re

import pytest

from harness.host import BINARY, ROOT, lag_table, start_host
from harness.kafka import Kafka
from harness.wait import wait_until
from harness.walkthrough import (FILE_KINDS, Terminal, block, outside_repository, parse_blocks,
                                 says, terminal_env)
from test_walkthrough import BLOCK_TIMEOUT_S as CRATE_TIMEOUT_S
from test_walkthrough import README, SHARED_CRATE_TARGET, cli_json, parse_walkthrough

# The page the walkthrough is on.
PAGE = ROOT / "docs" / "proxy-walkthrough.md"

PREFIX = "proxy-walkthrough"
UPSTREAM = ('cargo run -p kafka-harness -- run --dir "$(mktemp -d)" '
            '--ports 19092,19093,19094,19095\n')
HOST = "cargo run --release -p assignor-host -- serve --upstream 127.0.0.1:19092\n"
BOOTSTRAP = "127.0.0.1:9092"
GROUP, TOPIC, STRATEGY = "payments", "payments", "my-strategy"

SHELL_KINDS = ["upload", "consumers", "produce", "lag"]
BLOCK_TIMEOUT_S = {"upload": 120, "consumers": 60, "produce": 60, "lag": 60}
ASSIGNED = {"alice": "alice assigned payments [0, 2]", "bob": "bob assigned payments [1, 3]"}
PRODUCED, MORE = 1000, 200

LINE = re.compile(r"^(?P<who>alice|bob) (?P<what>assigned payments \[[0-9, ]*\]"
                  r"|has read (?P<read>\d+) payments)$")
REPORT = re.compile(r"(alice|bob) (assigned payments \[|has read \d+ payments)")


def parse_proxy_walkthrough(text):
    blocks = parse_blocks(text, PREFIX, ["upstream", "host"] + SHELL_KINDS, "docs/proxy-walkthrough.md")
    kinds = [b.kind for b in blocks]
    order = ["upstream", "host", "upload", "file", "consumers", "produce", "lag"]
    assert [k for k in kinds if k in order] == order, \
        f"{PAGE.name}: the proxy walkthrough's steps must be {order}, found {kinds}"
    payments = [b for b in blocks if b.kind == "file"]
    assert [b.path for b in payments] == ["payments.py"], \
        f"{PAGE.name}: one `{PREFIX}:file payments.py` block, found {[b.path for b in payments]}"
    return blocks


def last_lines(terminal):
    """Each consumer's last assignment line and last `has read` count; a line in which a
    report shares the line with anything else fails at once (test_walkthrough.py's (g))."""
    assigned, read = {}, {}
    for line in terminal.snapshot():
        m = LINE.match(line)
        if m:
            if m["read"] is None:
                assigned[m["who"]] = line
            else:
                read[m["who"]] = int(m["read"])
        elif REPORT.search(line):
            raise AssertionError(f"a consumer's report is not a line of its own: {line!r}")
    return assigned, read


def substitute(text, host, where, needed=True):
    if needed:
        assert BOOTSTRAP in text, f"{where} should name the host as {BOOTSTRAP}"
    return text.replace(BOOTSTRAP, host.bootstrap)


@pytest.fixture
def upstream(tmp_path):
    u = Kafka(tmp_path / "kafka", nodes=1).start()  # (a)
    yield u
    u.stop()


@pytest.fixture
def proxy_host(tmp_path, upstream, precompiled_cache):
    h = start_host(tmp_path / "host", shared_cache=precompiled_cache,
                   upstream=upstream.bootstrap)  # (b)
    yield h
    h.stop()


@pytest.fixture
def terminal(proxy_host, tmp_path, request):
    tmp = tmp_path / "tmp"
    tmp.mkdir()
    steps = tmp_path / "steps"
    steps.mkdir()
    scratch = tmp_path / "scratch"
    scratch.mkdir()
    env = terminal_env(proxy_host, tmp)
    env["PATH"] = f"{BINARY.parent}:{env['PATH']}"  # (d)
    env["ASSIGNOR_SDK"] = str(ROOT / "guest-sdk")
    t = Terminal(scratch, env, steps)
    yield t
    failed = getattr(request.node, "rep_call", None)
    if failed is not None and failed.failed:
        print("\n--- terminal 2 (tail) ---\n" + t.tail(150))
        print("--- host log (tail) ---\n" + proxy_host.log_tail(80))
    t.close()


def make_the_walkthroughs_crate(terminal):
    """(d): the `my-strategy` crate of the walkthrough above, from its own blocks, built to
    wasm; terminal 2 is left in it."""
    standalone = parse_walkthrough(README.read_text())
    crate, _ = terminal.run("new", block(standalone, "new").text, CRATE_TIMEOUT_S["new"])
    crate = outside_repository(crate)
    SHARED_CRATE_TARGET.mkdir(parents=True, exist_ok=True)
    (crate / "target").symlink_to(SHARED_CRATE_TARGET, target_is_directory=True)
    for b in standalone:
        if b.kind in FILE_KINDS and b.path != "consume.py":
            target = crate / b.path
            target.parent.mkdir(parents=True, exist_ok=True)
            if b.kind == "file":
                target.write_text(b.text)
            else:
                existing = target.read_text()
                target.write_text(existing + ("" if existing.endswith("\n") else "\n") + b.text)
    build = [line for line in block(standalone, "build").text.splitlines()
             if line.startswith("cargo build ")]
    assert len(build) == 1, "the walkthrough's build block should have one `cargo build`"
    terminal.run("build", build[0] + "\n", CRATE_TIMEOUT_S["build"])
    wasm = crate / "target" / "wasm32-unknown-unknown" / "wasm" / "my_strategy.wasm"
    assert wasm.is_file(), f"the walkthrough's crate built no {wasm}"
    return crate


def test_readme_proxy_walkthrough(upstream, proxy_host, terminal):
    host = proxy_host
    blocks = parse_proxy_walkthrough(PAGE.read_text())
    # (a), (b): the suite's Kafka and host stand for terminals 1 and 3.
    assert block(blocks, "upstream").text == UPSTREAM, \
        f"the upstream block changed; the test runs {upstream.bootstrap} in its place"
    assert block(blocks, "host").text == HOST, "the host block changed"

    cwd = make_the_walkthroughs_crate(terminal)  # (d)
    pushed = None
    for b in blocks:
        if b.kind in ("upstream", "host"):
            continue
        if b.kind in FILE_KINDS:
            target = outside_repository(cwd / b.path)
            target.write_text(substitute(b.text, host, b.path))  # (c)
            continue
        script = substitute(b.text, host, f"the `{b.kind}` block",
                            needed=b.kind in ("produce", "lag"))
        cwd, printed = terminal.run(b.kind, script, BLOCK_TIMEOUT_S[b.kind])

        if b.kind == "upload":
            m = [re.match(rf"^pushed {STRATEGY} version (\d+)\b", line) for line in printed]
            versions = [int(x[1]) for x in m if x]
            assert versions, "module push printed no version:\n" + "\n".join(printed)
            pushed = versions[-1]
            assert f"created {TOPIC} with 4 partitions" in printed, "\n".join(printed)
            # On the cluster itself, not only in the host's view of it.
            assert upstream.partition_counts().get(TOPIC) == 4, upstream.partition_counts()
        elif b.kind == "consumers":
            for line in ASSIGNED.values():
                assert says(b.prose_after, line), f"{PAGE.name} no longer says `{line}`"
            wait_until(lambda: (last_lines(terminal)[0] == ASSIGNED, last_lines(terminal)),
                       "alice and bob assigned by my-strategy")
            detail = cli_json(host, "group", "describe", GROUP)
            assert (detail["strategy"], detail["module_version"]) == (STRATEGY, pushed), detail
        elif b.kind == "produce":
            assert f"between them, {PRODUCED}" in " ".join(b.prose_after.split())
            ends = [(TOPIC, p) for p in range(4)]

            def read_all():
                _, read = last_lines(terminal)
                return sum(read.values()) == PRODUCED and set(read) == {"alice", "bob"}, read

            wait_until(read_all, f"alice and bob having read the {PRODUCED} payments")
            at_stop = upstream.end_offsets(ends)
            assert sum(at_stop.values()) == PRODUCED, at_stop
            assert upstream.committed(GROUP, ends) == at_stop, \
                "the consumers' commits are not Kafka's"
        elif b.kind == "lag":
            assert "adds up to 200" in " ".join(b.prose_after.split())
            now = upstream.end_offsets(ends)
            assert sum(now.values()) == PRODUCED + MORE, now
            # LAG (the lead's `group describe` lag, merged separately): until it is on this
            # branch this fails here, with the table missing from the output.
            table = lag_table("\n".join(printed))
            want = {tp: (at_stop[tp], now[tp], now[tp] - at_stop[tp]) for tp in ends}
            assert table == want, f"group describe's lag {table}, want {want}"
            assert sum(lag for _, _, lag in table.values()) == MORE
