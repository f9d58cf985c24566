#!/usr/bin/env bash
# Draws docs/numbers.png from the benches' results (target/bench/*.jsonl): the built-in
# uniform and range, ours natively and in wasm, against Apache Kafka's own assignors.
#
#   cargo bench -p assignor-host --bench server_side   # and --bench grid, --bench uniform
#   scripts/plot-numbers.sh                             # arguments go to plot_numbers.py
#
# matplotlib comes from PyPI into a venv of its own under target/ (made on first run).
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
venv="$root/target/plot-venv"
if [ ! -x "$venv/bin/python" ] || ! "$venv/bin/python" -c 'import matplotlib' 2>/dev/null; then
    python3 -m venv "$venv"
    "$venv/bin/python" -m pip install --quiet --disable-pip-version-check 'matplotlib>=3.8,<4'
fi
exec "$venv/bin/python" "$root/scripts/plot_numbers.py" "$@"
