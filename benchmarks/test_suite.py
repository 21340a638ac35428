"""How long the test suite takes: ``make test`` (all but the audits), its fast loop (``-m 'not slow'``) and ``make
audit`` (the privacy audits), each run once, one after the other, as the Makefile runs them (one pytest worker per
core).

    python benchmarks/test_suite.py                                  # the table on stdout
    python benchmarks/test_suite.py --json benchmarks/results/test_suite.json   # the file the docs quote

Run it on an otherwise idle machine, from the environment ``make`` built (.venv). A run with a failing test is not
a figure: the script stops and records nothing.
"""

from __future__ import annotations

import argparse
import re
import subprocess
import sys
import time
from pathlib import Path

from record import ROOT, header, write_json

RUNS = {
    "make test": ["--dist", "worksteal"],
    "make test ARGS=\"-m 'not slow'\"": ["--dist", "worksteal", "-m", "not slow"],
    "make audit": ["--audit", "--dist", "loadgroup"],
}
PYTEST = ["-m", "pytest", "-n", "auto", "-q", "-p", "no:cacheprovider"]


def _count(summary: str, outcome: str) -> int:
    match = re.search(rf"(\d+) {outcome}", summary)
    return int(match.group(1)) if match else 0


def run(command: str, args: list[str]) -> dict:
    """One timed run of the suite: its counts from pytest's summary line and its wall time."""
    start = time.perf_counter()
    done = subprocess.run([sys.executable, *PYTEST, *args], cwd=ROOT, capture_output=True, text=True)
    wall = time.perf_counter() - start
    summary = done.stdout.strip().splitlines()[-1] if done.stdout.strip() else ""
    if done.returncode or _count(summary, "failed") or _count(summary, "error"):
        sys.exit(f"{command}: the suite did not pass ({done.returncode}): {summary}\n{done.stdout[-3000:]}")
    return {
        "command": command,
        "passed": _count(summary, "passed"),
        "skipped": _count(summary, "skipped"),
        "wall_s": round(wall, 1),
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--json", type=Path, help="also write the figures here (with the date, commit and machine)")
    args = parser.parse_args(argv)
    record = header("benchmarks/test_suite.py", time.time())
    runs = []
    for command, extra in RUNS.items():
        runs.append(run(command, extra))
        print(
            f"{command}: {runs[-1]['passed']} passed, {runs[-1]['skipped']} skipped in {runs[-1]['wall_s']} s",
            flush=True,
        )
    if args.json:
        write_json(args.json, {**record, "runs": runs})
        print(f"wrote {args.json}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
