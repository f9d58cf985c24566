"""Issue 5: the README's walkthrough, run as written.

The test reads the "Walkthrough" section of README.md, takes the code blocks marked
`<!-- walkthrough:KIND [PATH] -->` in order, and does what a user does with them: the `host`
block in terminal 1; the shell blocks (`setup`, `consumers`, `new`, `build`, `rebalance`) one
after the other in one bash, "terminal 2", whose exports, `cd`s and background jobs carry over
from block to block; the `file PATH` / `append PATH` blocks written to / appended to PATH
relative to terminal 2's current directory at that point. It then checks what the README says
the user sees: the consumers' own lines, `alice assigned orders [0, 1, 2]` / `bob assigned
orders [3, 4, 5]` by range before the upload and `[0, 2, 4]` / `[1, 3, 5]` by the new module
after `module push` and `group rebalance`; the host and the consumers are the same processes
throughout; `group describe walkthrough --json` names `my-strategy` and the version uploaded,
whose sha256 is the file the crate built.

Substitutions, the only differences from a user following the README (each one checked, so
that a README edit that makes one of them stale fails here rather than passing unnoticed):

(a) The host. The `host` block must read `cargo run --release -p assignor-host -- serve`; it
    runs as the suite's host (`harness/host.py`, the `host` fixture): the debug binary
    `tests/clients/run` builds (`ASSIGNOR_HOST_BIN`), `serve --config FILE` with free ports and
    a temporary data dir, so the test neither needs nor disturbs 127.0.0.1:9092/9644 (a
    developer may be running the README's host there). Terminal 2 reaches the admin API through
    the CLI's own environment variable `ASSIGNOR_HOST_ADMIN`, so the CLI commands of the blocks
    run unchanged; the one literal address in a block, `bootstrap_servers="127.0.0.1:9092"` in
    consume.py, is replaced by the host's (it must occur exactly once).
(b) `$PWD/target/release` in the `setup` block (exactly once) becomes the directory of that
    debug binary.
(c) Python: terminal 2 runs with the suite's virtual environment activated (its `bin` first on
    PATH, `VIRTUAL_ENV` set), as the README asks the user to do, so `pip install
    kafka-python==3.0.12` finds it installed (requirements.txt pins the same version) and
    `python` is that environment's.
(d) The initial rebalance delay is 0 (the suite's host config, `harness/host.py`), so the
    group forms without Kafka's 3 s wait.
(e) The crate's `target` is a symlink to `<target dir>/walkthrough` under the repository's
    shared target dir (`CARGO_TARGET_DIR` or `target/`), made right after the `new` block, so a
    rerun reuses the SDK's dependencies (the README's relative `.wasm` path still resolves
    through the link). Terminal 2's environment drops `CARGO_TARGET_DIR`,
    `CARGO_BUILD_TARGET_DIR`, `RUSTFLAGS` and `CARGO_ENCODED_RUSTFLAGS`: a user's fresh
    terminal has none of them, and they would redirect the build or override the crate's
    `.cargo/config.toml`.
(f) `TMPDIR` points into the test's temporary directory, so the `setup` block's
    `cd "$(mktemp -d)"` (the scratch directory for consume.py and the crate) is cleaned up.
(g) `PYTHONUNBUFFERED=1` in terminal 2, whatever the machine sets, so the consumers always run
    the harder case for the README's output: unbuffered, `print` writes a line's text and its
    newline in two write(2) calls, and alice's and bob's lines, printed at the same moment into
    the one terminal, interleaved into `alice assigned orders [0, 2, 4]bob assigned orders
    [1, 3, 5]` (seen under load, 5 runs in 8; the host and both clients had done their part).
    consume.py writes each line whole, in one write (atomic on a pipe up to PIPE_BUF), and a
    line holding two reports fails the test at once, naming it (`last_lines`).

Everything else runs as written: `cargo new`, `cargo add assignor-sdk --path ...`, the appended
profile, `.cargo/config.toml`, `cargo test`, `cargo build --target wasm32-unknown-unknown
--profile wasm`, `assignor-host module push ...`, `assignor-host group rebalance walkthrough`.
Terminal 2 starts in the repository (the README says so, and `setup` uses `$PWD`); no block may
write into the repository (checked). Every wait is a condition with a deadline; a failure
prints terminal 2's transcript and the host's log.
"""

import hashlib
import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from kafka import TopicPartition

from harness.host import BINARY, ROOT
from harness.wait import wait_until
from harness.walkthrough import (FILE_KINDS, Terminal, block, outside_repository, parse_blocks,
                                 says, terminal_env)

README = ROOT / "README.md"
GROUP = "walkthrough"
STRATEGY = "my-strategy"
HOST_COMMAND = "cargo run --release -p assignor-host -- serve"
BOOTSTRAP = '"127.0.0.1:9092"'
RELEASE_DIR = "$PWD/target/release"
TARGET = Path(os.environ.get("CARGO_TARGET_DIR", ROOT / "target"))
SHARED_CRATE_TARGET = TARGET / "walkthrough"

# What the README says each consumer prints, before and after the upload.
BY_RANGE = {"alice": "alice assigned orders [0, 1, 2]", "bob": "bob assigned orders [3, 4, 5]"}
BY_MODULE = {"alice": "alice assigned orders [0, 2, 4]", "bob": "bob assigned orders [1, 3, 5]"}

SHELL_KINDS = ["setup", "consumers", "new", "build", "rebalance"]

# First build of the crate (the SDK, serde, syn natively and for wasm) takes about two minutes
# on 2 cores; later runs reuse the shared target dir and take seconds.
BLOCK_TIMEOUT_S = {"setup": 60, "consumers": 120, "new": 180, "build": 900, "rebalance": 60}


# -- the README ------------------------------------------------------------------------------

def parse_walkthrough(text):
    """The marked blocks in README order. Fails naming the line of any malformed marker or
    block, an unknown kind, or a missing / repeated / misordered step."""
    blocks = parse_blocks(text, "walkthrough", ["host"] + SHELL_KINDS)
    kinds = [b.kind for b in blocks]
    for kind in ["host"] + SHELL_KINDS:
        assert kinds.count(kind) == 1, \
            f"README.md: the walkthrough needs exactly one `walkthrough:{kind}` block, " \
            f"found {kinds.count(kind)}"
    assert kinds[0] == "host", "README.md: the walkthrough starts with the `host` block"
    order = [kinds.index(k) for k in SHELL_KINDS]
    assert order == sorted(order), \
        f"README.md: the shell steps must come in the order {SHELL_KINDS}, found {kinds}"
    files = {(b.kind, b.path): n for n, b in enumerate(blocks) if b.kind in FILE_KINDS}
    for needed, before in [(("file", "consume.py"), "consumers"),
                           (("append", "Cargo.toml"), "build"),
                           (("file", ".cargo/config.toml"), "build"),
                           (("file", "src/lib.rs"), "build")]:
        assert needed in files, f"README.md: no `walkthrough:{needed[0]} {needed[1]}` block"
        assert files[needed] < kinds.index(before), \
            f"README.md: `walkthrough:{needed[0]} {needed[1]}` must come before `{before}`"
    return blocks


@pytest.fixture
def terminal(host, tmp_path, request):
    tmp = tmp_path / "tmp"
    tmp.mkdir()
    steps = tmp_path / "steps"
    steps.mkdir()
    t = Terminal(ROOT, terminal_env(host, tmp), steps)
    yield t
    failed = getattr(request.node, "rep_call", None)
    if failed is not None and failed.failed:
        print("\n--- terminal 2 (tail) ---\n" + t.tail(150))
        print("--- host log (tail) ---\n" + host.log_tail(80))
    t.close()


# -- checks ----------------------------------------------------------------------------------

LINE = re.compile(r"^(?P<who>\w+) assigned orders \[[0-9, ]*\]$")
REPORT = re.compile(r"\w+ assigned orders \[")
PUSHED = re.compile(rf"^pushed {STRATEGY} version (?P<version>\d+)\b")


def last_lines(terminal):
    """Each consumer's last `NAME assigned orders [...]` line. A line where a report shares
    the line with anything else (two consumers' writes interleaved, (g)) fails at once: the
    user would see that garbled line, and waiting would only time out with the old lines."""
    last = {}
    for line in terminal.snapshot():
        m = LINE.match(line)
        if m:
            last[m["who"]] = line
        elif REPORT.search(line):
            raise AssertionError(
                f"a consumer's report is not a line of its own: {line!r} (consume.py must "
                "write each line in one write; `print` writes the newline separately when "
                "Python is unbuffered)")
    return last


def wait_for_lines(terminal, expected, what):
    def check():
        last = last_lines(terminal)
        return last == expected, last
    wait_until(check, what)


def cli_json(host, *args):
    out = subprocess.run([str(BINARY), *args, "--json", "--admin", host.admin_url],
                         capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, f"assignor-host {' '.join(args)}: {out.stderr}{out.stdout}"
    return json.loads(out.stdout)


def running_consumer(pid):
    """Whether `pid` is a live (not zombie) `python consume.py` process."""
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
        cmdline = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
    except OSError:
        return False
    return state != "Z" and b"consume.py" in cmdline


def test_readme_walkthrough(host, terminal):
    blocks = parse_walkthrough(README.read_text())

    # (a) terminal 1: the suite's host stands for the README's command.
    assert block(blocks, "host").text.strip() == HOST_COMMAND, \
        f"the host block changed; the test runs {BINARY} serve in its place"
    host_pid = host.proc.pid

    consumers_pids, crate, uploaded = [], None, None
    cwd = ROOT
    for b in blocks:
        if b.kind == "host":
            continue
        if b.kind in FILE_KINDS:
            target = outside_repository(cwd / b.path)
            content = b.text
            if b.path == "consume.py":
                assert content.count(BOOTSTRAP) == 1, \
                    f"consume.py should name the host once as {BOOTSTRAP}"
                content = content.replace(BOOTSTRAP, f'"{host.bootstrap}"')  # (a)
            target.parent.mkdir(parents=True, exist_ok=True)
            if b.kind == "file":
                target.write_text(content)
            else:
                assert target.is_file(), f"README.md:{b.line}: nothing to append to at {target}"
                existing = target.read_text()
                target.write_text(existing + ("" if existing.endswith("\n") else "\n") + content)
            continue

        script = b.text
        if b.kind == "setup":
            assert script.count(RELEASE_DIR) == 1, \
                f"the setup block should put {RELEASE_DIR} on PATH once"
            script = script.replace(RELEASE_DIR, str(BINARY.parent))  # (b)
        cwd, printed = terminal.run(b.kind, script, BLOCK_TIMEOUT_S[b.kind])

        if b.kind == "setup":
            outside_repository(cwd)  # the files the user writes next land outside the repo
        elif b.kind == "consumers":
            jobs = terminal.workdir / "jobs"
            terminal.run("jobs", f"jobs -p > {jobs}\n")
            consumers_pids = [int(p) for p in jobs.read_text().split()]
            assert len(consumers_pids) == 2, f"expected two background jobs: {consumers_pids}"
            # 1. By range, since the host has no `my-strategy` yet.
            for line in BY_RANGE.values():
                assert says(b.prose_after, line), f"the README no longer says `{line}`"
            wait_for_lines(terminal, BY_RANGE, "alice and bob assigned by range")
            before = cli_json(host, "group", "describe", GROUP)
            assert before["strategy"] == "range", before
        elif b.kind == "new":
            crate = outside_repository(cwd)
            assert (crate / "Cargo.toml").is_file(), \
                f"`new` should leave terminal 2 in the new crate, not in {cwd}"
            SHARED_CRATE_TARGET.mkdir(parents=True, exist_ok=True)
            (crate / "target").symlink_to(SHARED_CRATE_TARGET, target_is_directory=True)  # (e)
        elif b.kind == "build":
            # `cargo test` ran the strategy's own test natively, and it passed.
            assert any(re.match(r"test result: ok\. [1-9]\d* passed", l) for l in printed), \
                "cargo test ran no test:\n" + "\n".join(printed[-40:])
            pushed = [m for l in printed if (m := PUSHED.match(l))]
            assert pushed, "module push printed no version:\n" + "\n".join(printed[-20:])
            uploaded = int(pushed[-1]["version"])

    # 4. The group now agrees on my-strategy, and the new module assigns it.
    for line in BY_MODULE.values():
        assert says(block(blocks, "rebalance").prose_after, line), \
            f"the README no longer says `{line}`"
    wait_for_lines(terminal, BY_MODULE, "alice and bob assigned by my-strategy")

    wasm = crate / "target" / "wasm32-unknown-unknown" / "wasm" / "my_strategy.wasm"
    module = cli_json(host, "module", "show", STRATEGY)
    assert module["active_version"] == uploaded, module
    assert module["active"]["sha256"] == hashlib.sha256(wasm.read_bytes()).hexdigest(), \
        "the active my-strategy is not the module the crate built"
    detail = cli_json(host, "group", "describe", GROUP)
    assert (detail["strategy"], detail["module_version"]) == (STRATEGY, uploaded), detail
    last_run = detail["last_run"]
    assert (last_run["module"], last_run["version"], last_run["outcome"]["kind"],
            last_run["fallback_used"]) == (STRATEGY, uploaded, "ok", False), last_run
    # The host's view agrees with what the consumers printed, and the README's reason for who
    # gets what holds: member ids start with the client id.
    held = {m["client_id"]: f"{m['client_id']} assigned orders {m['assignment'].get('orders', [])}"
            for m in detail["members"]}
    assert held == BY_MODULE, detail["members"]
    assert all(m["member_id"].startswith(m["client_id"] + "-") for m in detail["members"])

    # Nothing was restarted: the host process started before the first block never exited
    # (an unreaped child keeps its pid), and the two consumers are the processes the
    # `consumers` block started.
    assert host.proc.poll() is None, f"the host (pid {host_pid}) exited during the walkthrough"
    for pid in consumers_pids:
        assert running_consumer(pid), f"consumer pid {pid} exited during the walkthrough"


# -- the consumers' lines survive two consumers printing at once (g) --------------------------

class Writes:
    """A stand-in for sys.stdout that records each write() call: unbuffered (g), each call is
    one write(2), and only a whole line in one call cannot be split by the other consumer."""

    def __init__(self):
        self.calls = []

    def write(self, text):
        self.calls.append(text)
        return len(text)

    def flush(self):
        pass


def test_consume_py_writes_each_report_in_one_write(monkeypatch):
    """The README's listener, run alone: the report is one write() of the whole line (with
    `print`, the same check sees the text and the newline as two calls)."""
    source = next(b for b in parse_walkthrough(README.read_text())
                  if b.kind == "file" and b.path == "consume.py").text
    marker = "\nconsumer = KafkaConsumer("
    assert source.count(marker) == 1, f"consume.py should create its consumer once ({marker!r})"
    classes = source.split(marker)[0]  # imports and classes; nothing connects
    namespace = {}
    exec(compile(classes, "README.md: consume.py", "exec"), namespace)
    writes = Writes()
    monkeypatch.setattr(sys, "argv", ["consume.py", "alice"])
    monkeypatch.setattr(sys, "stdout", writes)
    namespace["Show"]().on_partitions_assigned([TopicPartition("orders", p) for p in (4, 0, 2)])
    assert writes.calls == ["alice assigned orders [0, 2, 4]\n"], \
        f"consume.py must write each line whole, in one write; it made {writes.calls}"


def test_interleaved_reports_fail_at_once_naming_the_line():
    class Transcript:
        def snapshot(self):
            return ["alice assigned orders [0, 1, 2]",
                    "alice assigned orders [0, 2, 4]bob assigned orders [1, 3, 5]", ""]
    with pytest.raises(AssertionError, match=re.escape(
            "not a line of its own: 'alice assigned orders [0, 2, 4]bob assigned orders "
            "[1, 3, 5]'")):
        last_lines(Transcript())


# -- the parser refuses a walkthrough it cannot run faithfully ---------------------------------

def swap(old, new):
    return lambda text: text.replace(old, new)


def unclosed_rebalance(text):
    marker = "<!-- walkthrough:rebalance -->"
    return text[:text.index(marker)] + marker + "\n```sh\nassignor-host group ls\n"


@pytest.mark.parametrize("mutilate, message", [
    (swap("<!-- walkthrough:new -->", "<!-- walkthrough: new -->"),
     "malformed walkthrough marker"),
    (swap("<!-- walkthrough:build -->\n```sh", "<!-- walkthrough:build -->\nthen\n```sh"),
     "must be followed by a fenced block"),
    (swap("<!-- walkthrough:rebalance -->", ""),
     "exactly one `walkthrough:rebalance` block"),
    (swap("<!-- walkthrough:file src/lib.rs -->", "<!-- walkthrough:file -->"),
     "`walkthrough:file` needs a PATH"),
    (swap("<!-- walkthrough:setup -->", "<!-- walkthrough:setpu -->"),
     "unknown walkthrough step `setpu`"),
    (swap("<!-- walkthrough:file consume.py -->", "<!-- walkthrough:file consumer.py -->"),
     "no `walkthrough:file consume.py` block"),
    (swap("<!-- walkthrough:consumers -->\n```sh", "<!-- walkthrough:consumers -->\n```python"),
     "`consumers` is a shell step but its block is ```python"),
    (unclosed_rebalance, "is never closed"),
])
def test_a_malformed_walkthrough_is_refused_naming_the_problem(mutilate, message):
    text = README.read_text()
    parse_walkthrough(text)  # the real one parses
    broken = mutilate(text)
    assert broken != text, "the mutilation no longer applies to README.md"
    with pytest.raises(AssertionError, match=re.escape(message)):
        parse_walkthrough(broken)
