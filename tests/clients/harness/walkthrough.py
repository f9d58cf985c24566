"""What the walkthrough tests share: reading the marked blocks, and terminal 2.

A walkthrough is a run of fenced blocks in a page (README.md, docs/proxy-walkthrough.md), each
after a marker
`<!-- PREFIX:KIND -->` or `<!-- PREFIX:KIND PATH -->`: `walkthrough` (test_walkthrough.py)
and `proxy-walkthrough` (test_proxy_walkthrough.py) each read only their own prefix. Shell
blocks run one after the other in one bash, "terminal 2" (`Terminal`), whose exports, `cd`s
and background jobs carry over; `file PATH` / `append PATH` blocks are written to PATH.
"""

import os
import re
import signal
import subprocess
import sys
import threading
from dataclasses import dataclass
from pathlib import Path

from .host import ROOT
from .wait import wait_until

FILE_KINDS = {"file", "append"}
SHELL_LANGUAGES = {"sh", "bash", "shell"}


@dataclass
class Block:
    kind: str
    path: str | None  # for `file` / `append`
    language: str
    text: str
    line: int  # 1-based line of the marker in its page
    prose_after: str  # the page's text between this block and the next marker


def parse_blocks(text, prefix, kinds, source="README.md"):
    """The blocks marked `<!-- PREFIX:KIND [PATH] -->` in page order (`source` names the page
    in failures); `kinds`: the shell step kinds allowed besides `file` / `append`. Fails naming
    the line of any malformed marker or block, or an unknown kind. Markers of other prefixes
    are ordinary text."""
    marker = re.compile(rf"<!-- {re.escape(prefix)}:(?P<kind>[a-z]+)(?: (?P<path>\S+))? -->")
    # A marker of this prefix, well formed or not (`<!-- walkthrough: new -->` is one,
    # `<!-- proxy-walkthrough:host -->` is not one of `walkthrough`).
    mentions = re.compile(rf"(?<![\w-]){re.escape(prefix)}:")
    lines = text.splitlines()
    blocks = []
    i = 0
    while i < len(lines):
        line = lines[i]
        if "<!--" not in line or not mentions.search(line):
            if blocks and not line.startswith("```"):
                blocks[-1].prose_after += line + "\n"
            i += 1
            continue
        where = f"{source}:{i + 1}"
        m = marker.fullmatch(line.strip())
        assert m, f"{where}: malformed {prefix} marker {line!r} " \
                  f"(expected `<!-- {prefix}:KIND -->` or `<!-- {prefix}:KIND PATH -->`)"
        kind, path = m["kind"], m["path"]
        if kind in FILE_KINDS:
            assert path, f"{where}: `{prefix}:{kind}` needs a PATH"
        else:
            assert kind in kinds, f"{where}: unknown {prefix} step `{kind}`"
            assert path is None, f"{where}: `{prefix}:{kind}` takes no PATH"
        j = i + 1
        while j < len(lines) and not lines[j].strip():
            j += 1
        assert j < len(lines) and lines[j].startswith("```") and lines[j] != "```", \
            f"{where}: the marker must be followed by a fenced block with a language (```sh)"
        language = lines[j][3:].strip()
        end = j + 1
        while end < len(lines) and lines[end] != "```":
            end += 1
        assert end < len(lines), f"{where}: the block opened on line {j + 1} is never closed"
        body = "\n".join(lines[j + 1:end]) + "\n"
        if kind not in FILE_KINDS:
            assert language in SHELL_LANGUAGES, \
                f"{where}: `{kind}` is a shell step but its block is ```{language}"
        blocks.append(Block(kind, path, language, body, i + 1, ""))
        i = end + 1
    return blocks


def block(blocks, kind):
    return next(b for b in blocks if b.kind == kind)


def says(prose, line):
    """Whether the README's prose states `line` in a code span (its line breaks are spaces)."""
    return f"`{line}`" in " ".join(prose.split())


def outside_repository(path):
    path = path.resolve()
    assert ROOT != path and ROOT not in path.parents, \
        f"the walkthrough would write {path} inside the repository"
    return path


class Terminal:
    """One bash reading the walkthrough's shell blocks, as terminal 2. Each block is written to
    a file and `source`d (so `export`, `cd` and `&` carry over), under `set -e`: a failing
    command ends the shell, and the test with it. Everything it and its background jobs print
    (stdout and stderr, as on a terminal) is recorded line by line."""

    def __init__(self, cwd, env, workdir):
        self.workdir = workdir
        self.lines = []
        self._lock = threading.Lock()
        self._steps = 0
        self.proc = subprocess.Popen(
            ["bash", "--noprofile", "--norc"], cwd=cwd, env=env, text=True, bufsize=1,
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
            start_new_session=True)  # its own process group: the consumers are stopped with it
        threading.Thread(target=self._read, daemon=True).start()
        self._send("set -eo pipefail\nPS4='+ '\n")

    def _read(self):
        for line in self.proc.stdout:
            with self._lock:
                self.lines.append(line.rstrip("\n"))

    def _send(self, text):
        self.proc.stdin.write(text)
        self.proc.stdin.flush()

    def snapshot(self):
        with self._lock:
            return list(self.lines)

    def tail(self, n=80):
        return "\n".join(self.snapshot()[-n:])

    def run(self, name, script, timeout_s=60):
        """Runs `script` in the shell and waits for it to finish. Returns (the shell's current
        directory afterwards, the lines printed meanwhile)."""
        self._steps += 1
        step = self._steps
        path = self.workdir / f"{step:02d}-{name}.sh"
        path.write_text("set -x\n" + script + "{ set +x; } 2>/dev/null\n")
        start = len(self.snapshot())
        done = f"__walkthrough_step__ {step} "
        self._send(f"source {path} </dev/null\nprintf '\\n{done}%s\\n' \"$PWD\"\n")

        def finished():
            lines = self.snapshot()[start:]
            for line in lines:
                if line.startswith(done):
                    return True, line[len(done):]
            if self.proc.poll() is not None:
                raise AssertionError(
                    f"terminal 2 stopped with status {self.proc.returncode} in the `{name}` "
                    f"block (a command failed):\n{script}\n--- output ---\n" + "\n".join(lines))
            return False, "\n".join(lines[-30:])

        _, cwd = wait_until(finished, f"the `{name}` block to finish", timeout_s=timeout_s)
        lines = self.snapshot()[start:]
        return Path(cwd), lines

    def close(self):
        if self.proc.poll() is None:
            os.killpg(self.proc.pid, signal.SIGTERM)  # bash and its background consumers
            try:
                self.proc.wait(timeout=20)
            except subprocess.TimeoutExpired:
                os.killpg(self.proc.pid, signal.SIGKILL)
                self.proc.wait()
        else:  # bash is gone; its jobs may not be
            try:
                os.killpg(self.proc.pid, signal.SIGTERM)
            except ProcessLookupError:
                pass


def terminal_env(host, tmp):
    """A user's terminal 2: their environment, with the suite's virtualenv activated, the
    CLI pointed at the test's host (`ASSIGNOR_HOST_ADMIN`), no target dir or rustflags
    overrides, TMPDIR under the test's temporary directory, and Python unbuffered (see
    test_walkthrough.py, substitutions (a), (c), (e), (f), (g))."""
    env = {k: v for k, v in os.environ.items()
           if k not in {"CARGO_TARGET_DIR", "CARGO_BUILD_TARGET_DIR", "RUSTFLAGS",
                        "CARGO_ENCODED_RUSTFLAGS", "PYTHONHOME"}}
    venv_bin = Path(sys.executable).parent
    assert (venv_bin / "pip").exists(), f"{venv_bin} has no pip: run tests/clients/run"
    env["VIRTUAL_ENV"] = str(venv_bin.parent)
    env["PATH"] = f"{venv_bin}{os.pathsep}{env.get('PATH', '')}"
    env["ASSIGNOR_HOST_ADMIN"] = host.admin_url
    env["TMPDIR"] = str(tmp)
    env["PYTHONUNBUFFERED"] = "1"
    return env
