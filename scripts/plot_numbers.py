#!/usr/bin/env python3
"""Plot the benches' results against Apache Kafka's own assignors: docs/numbers.png.

Reads target/bench/*.jsonl (written by the benches, see host/benches/support/report/jsonl.rs)
and draws, for the built-in `uniform`, `range`, `roundrobin` and `cooperative-sticky`, the time of one assignment against the
group size (members), one panel per strategy and topic count, partitions = members x 10
(Kafka's benchmark ratio), full assignment:

- ours in wasm, end to end (`Sandbox::assign`: encode, instantiate, run, decode, checks);
- ours natively (the same crate with the same encode/decode/checks, no sandbox);
- Kafka's time: its assignor call alone, timed by the same bench run right after ours
  (host/benches/kafka-assignors: its server-side assignor, black; its Java client's, green).

Solid lines are homogeneous subscriptions, dashed heterogeneous (Kafka's five buckets).
Each bench file contributes its latest full run (lines with "quick": false, the highest
run_id); `server_side` wins over `uniform`, `strategies` and `grid`, in that order, where
they measured the same cell.

Run through scripts/plot-numbers.sh, which installs matplotlib into a venv first:

    scripts/plot-numbers.sh                  # target/bench -> docs/numbers.png
    scripts/plot-numbers.sh --out /tmp/x.png
"""

import argparse
import json
import pathlib
import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
from matplotlib.lines import Line2D  # noqa: E402
from matplotlib.ticker import FuncFormatter  # noqa: E402

ROOT = pathlib.Path(__file__).resolve().parent.parent
# Benches in order of preference when two measured the same cell.
BENCHES = ["server_side", "uniform", "strategies", "grid"]
STRATEGIES = ["uniform", "range", "roundrobin", "cooperative-sticky"]
TOPICS = [10, 100, 1000]
PER_MEMBER = 10

OURS_WASM = "#1f77b4"
OURS_NATIVE = "#ff7f0e"
KAFKA = "#2b2b2b"
KAFKA_CLIENT = "#2ca02c"


def latest_run(path):
    """The lines of the file's latest full run with fuel metering (highest run_id among
    non-quick lines of runs with no epoch-metered line)."""
    lines = []
    for raw in path.read_text().splitlines():
        raw = raw.strip()
        if not raw:
            continue
        try:
            lines.append(json.loads(raw))
        except json.JSONDecodeError:
            print(f"{path}: skipping a line that is not JSON", file=sys.stderr)
    # A run on an epoch-only engine (`--metering epoch`) is not the default's figure.
    epoch_runs = {line["run_id"] for line in lines if line.get("metering") == "epoch"}
    full = [line for line in lines if not line.get("quick") and line["run_id"] not in epoch_runs]
    if not full:
        return [], None
    run_id = max(line["run_id"] for line in full)
    return [line for line in full if line["run_id"] == run_id], full[-1]


def cells(directory):
    """Ours: {(strategy, subscription, members, topics, path): line}, preferred bench first;
    Kafka's: {(strategy, subscription, members, topics, side): ms}, preferred bench first;
    the Kafka versions the runs timed."""
    ours, kafka, runs, versions = {}, {}, [], set()
    for bench in BENCHES:
        path = directory / f"{bench}.jsonl"
        if not path.exists():
            continue
        lines, last = latest_run(path)
        if last is not None:
            runs.append((bench, last["run_id"], last.get("commit", "?")[:8], last.get("dirty")))
        for line in lines:
            if line.get("cell") or line.get("median_ms") is None:
                continue
            if line.get("assignment", "full") != "full":
                continue
            if line.get("metering", "fuel") != "fuel":
                continue
            members, partitions = line.get("members"), line.get("partitions")
            if not members or partitions != members * PER_MEMBER:
                continue
            shape = (
                line.get("strategy"),
                line.get("subscription", "homogeneous"),
                members,
                line.get("topics"),
            )
            ours.setdefault(shape + (line.get("path"),), line)
            if line.get("kafka_ms") is not None:
                kafka.setdefault(shape + (line.get("kafka_side"),), line["kafka_ms"])
                versions.add(line.get("kafka_version", "?"))
    return ours, kafka, runs, versions


def series(ours, strategy, subscription, topics, path):
    points = sorted(
        (members, line["median_ms"])
        for (s, sub, members, t, p), line in ours.items()
        if s == strategy and sub == subscription and t == topics and p == path
    )
    return [m for m, _ in points], [v for _, v in points]


def kafka_series(kafka, strategy, subscription, topics, side):
    points = sorted(
        (members, ms)
        for (s, sub, members, t, sd), ms in kafka.items()
        if (s, sub, t, sd) == (strategy, subscription, topics, side)
    )
    return [m for m, _ in points], [v for _, v in points]


def plot(ours, kafka, runs, versions, out):
    fig, axes = plt.subplots(
        len(STRATEGIES), len(TOPICS), figsize=(15, 12.5), sharex=True, sharey="row",
        squeeze=False
    )
    for row, strategy in enumerate(STRATEGIES):
        for col, topics in enumerate(TOPICS):
            ax = axes[row][col]
            drawn = False
            for subscription, style in (("homogeneous", "-"), ("heterogeneous", "--")):
                # Heterogeneous: dashed, hollow markers.
                face = (lambda c: "white") if subscription == "heterogeneous" else (lambda c: c)

                def line(x, y, ls, color, marker, **kw):
                    ax.plot(x, y, ls, color=color, marker=marker, mfc=face(color), mew=1.6, **kw)

                for path, color, marker in (("wasm", OURS_WASM, "o"), ("native", OURS_NATIVE, "s")):
                    x, y = series(ours, strategy, subscription, topics, path)
                    if x:
                        line(x, y, style, color, marker, lw=2, ms=7)
                        drawn = True
                x, y = kafka_series(kafka, strategy, subscription, topics, "server")
                if x:
                    line(x, y, style, KAFKA, "D", lw=2, ms=7)
                    drawn = True
                x, y = kafka_series(kafka, strategy, subscription, topics, "client")
                if x:
                    line(x, y, style, KAFKA_CLIENT, "^", lw=1.5, ms=7)
                    drawn = True
            ax.set_xscale("log")
            ax.set_yscale("log")
            ax.yaxis.set_major_formatter(FuncFormatter(lambda v, _: f"{v:g}"))
            ax.xaxis.set_major_formatter(FuncFormatter(lambda v, _: f"{v:,.0f}"))
            ax.set_xlim(60, 16000)
            ax.grid(True, which="major", alpha=0.35)
            ax.grid(True, which="minor", alpha=0.12)
            ax.set_title(f"{strategy}, {topics} topics", fontsize=12, fontweight="bold")
            if row == len(STRATEGIES) - 1:
                ax.set_xlabel("members (partitions = members x 10)")
            if col == 0:
                ax.set_ylabel("ms per assignment (log scale)")
            if not drawn:
                ax.text(0.5, 0.5, "not measured", ha="center", va="center",
                        transform=ax.transAxes, color="grey")
    kafka_label = "Kafka " + ", ".join(sorted(versions)) if versions else "Kafka"
    handles = [
        Line2D([], [], color=OURS_WASM, marker="o", lw=2, label="ours, wasm (end to end)"),
        Line2D([], [], color=OURS_NATIVE, marker="s", lw=2, label="ours, native (same encode/decode/checks)"),
        Line2D([], [], color=KAFKA, marker="D", lw=2,
               label=f"{kafka_label} server-side assignor, call alone, same run"),
        Line2D([], [], color=KAFKA_CLIENT, marker="^", lw=1.5,
               label=f"{kafka_label} client-side assignor, call alone, same run"),
        Line2D([], [], color="grey", marker="o", lw=2, ls="-", label="homogeneous subscriptions"),
        Line2D([], [], color="grey", marker="o", mfc="white", mew=1.6, lw=2, ls="--",
               label="heterogeneous (Kafka's 5 buckets): dashed, hollow"),
    ]
    fig.legend(handles=handles, loc="lower center", ncol=4, fontsize=10, frameon=False)
    sources = ", ".join(
        f"{bench} {run_id} @ {commit}{' (dirty tree)' if dirty else ''}"
        for bench, run_id, commit, dirty in runs
    )
    fig.suptitle(
        "assignor-host vs Apache Kafka's own assignors: one full assignment, no racks, "
        "median of several runs\n"
        "2-vCPU VM (its speed drifts up to 2x between days); Kafka's figure excludes "
        "everything around the call, ours includes it",
        fontsize=12,
    )
    fig.text(0.5, 0.06, f"runs: {sources}", ha="center", fontsize=8, color="#555555")
    fig.tight_layout(rect=(0, 0.08, 1, 0.95))
    out.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(out, dpi=110)
    print(f"wrote {out}")


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--dir", type=pathlib.Path, default=ROOT / "target" / "bench",
                        help="where the benches' .jsonl files are (default: target/bench)")
    parser.add_argument("--out", type=pathlib.Path, default=ROOT / "docs" / "numbers.png",
                        help="the PNG to write (default: docs/numbers.png)")
    args = parser.parse_args()
    ours, kafka, runs, versions = cells(args.dir)
    if not ours:
        sys.exit(f"no bench results in {args.dir}: run the benches first "
                 "(cargo bench -p assignor-host --bench server_side, --bench grid)")
    plot(ours, kafka, runs, versions, args.out)


if __name__ == "__main__":
    main()
