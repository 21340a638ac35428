"""What every benchmark's JSON file starts with -- the benchmark, the date (UTC) and the machine -- and the atomic
write of that file; and, for the benchmarks that time a command of the project, one timed run of it and the
reading of its log. The docs quote these files, never typed figures: benchmarks/figures.py renders each into the
pages' marked blocks, and tests/test_docs_figures.py checks that every block is what its file renders."""

from __future__ import annotations

import importlib.util
import json
import os
import platform
import re
import subprocess
import sys
import tempfile
import time
from datetime import datetime
from pathlib import Path
from typing import Any

__all__ = [
    "ROOT",
    "commit",
    "header",
    "log_stamps",
    "machine",
    "run_command",
    "run_metrics",
    "stage_seconds",
    "train_config",
    "write_json",
]

ROOT = Path(__file__).resolve().parents[1]
# A log line as conf/hydra/default.yaml formats it: [time][logger][level] - message.
_LOG_LINE = re.compile(r"^\[(\d{4}-\d\d-\d\d \d\d:\d\d:\d\d,\d{3})\]\[[\w.]+\]\[\w+\] - (.*)$")
_BUILDING = re.compile(r"^(\w+): building ")


def machine() -> dict[str, Any]:
    """The CPU model, the logical CPUs, the OS and the Python, numpy and torch versions of this machine (a lent
    GPU machine runs its own torch, not the pinned one)."""
    import numpy as np
    import torch

    # pate/host.py by path, not by import: a benchmark run from a worktree reads that tree's file, whatever
    # checkout the environment's editable install points at (the module imports nothing of pate)
    spec = importlib.util.spec_from_file_location("pate_host", ROOT / "pate" / "host.py")
    host = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(host)
    return {
        "cpu": host.cpu_model(),
        "logical_cpus": os.cpu_count(),
        "platform": platform.platform(),
        "python": platform.python_version(),
        "numpy": np.__version__,
        "torch": torch.__version__,
    }


def commit() -> str:
    """The checkout's commit (``git describe --always --dirty``); outside a git checkout (a copy of the tree sent
    to a lent GPU machine, which carries no .git) the commit named by $BENCHMARK_COMMIT, else "unknown"."""
    if os.environ.get("BENCHMARK_COMMIT") and not (ROOT / ".git").exists():
        return os.environ["BENCHMARK_COMMIT"] + " (a copy without .git, named by $BENCHMARK_COMMIT)"
    try:
        return subprocess.run(
            ["git", "describe", "--always", "--dirty", "--abbrev=12"],
            cwd=Path(__file__).parent,
            capture_output=True,
            text=True,
            timeout=10,
            check=True,
        ).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        return "unknown"


def header(benchmark: str, started: float) -> dict[str, Any]:
    """``{"benchmark", "date_utc", "commit", "machine", "load_average_before"}`` of a benchmark started at
    ``started`` (``time.time()``)."""
    return {
        "benchmark": benchmark,
        "date_utc": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(started)),
        "commit": commit(),
        "machine": machine(),
        "load_average_before": list(os.getloadavg()),
    }


def write_json(path: str | os.PathLike, payload: dict[str, Any]) -> None:
    """Atomic write: a temporary file in the same folder, then ``os.replace``."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.NamedTemporaryFile(
        "w", dir=path.parent, prefix=f".{path.name}-", suffix=".tmp", delete=False
    ) as handle:
        json.dump(payload, handle, indent=1)
        handle.write("\n")
    os.chmod(handle.name, 0o644)  # not the temporary file's 0600
    os.replace(handle.name, path)


def run_command(command: list[str], env: dict[str, str] | None = None) -> tuple[str, float]:
    """Run ``command`` in the repository, its output captured: (its log, stderr then stdout; its wall seconds).
    A failure ends the benchmark with the command and its stderr's tail: a failed run is not a figure."""
    start = time.perf_counter()
    done = subprocess.run(command, cwd=ROOT, capture_output=True, text=True, env=env)
    wall = time.perf_counter() - start
    if done.returncode:
        sys.exit(f"{' '.join(command)} failed ({done.returncode}):\n{done.stderr[-3000:]}")
    return done.stderr + done.stdout, wall


def log_stamps(log: str) -> list[tuple[datetime, str]]:
    """(time, message) of each timestamped line of a run's log, in order."""
    return [
        (datetime.strptime(match.group(1), "%Y-%m-%d %H:%M:%S,%f"), match.group(2))
        for match in map(_LOG_LINE.match, log.splitlines())
        if match
    ]


def stage_seconds(log: str) -> dict[str, float]:
    """Seconds per stage of a train.py run, from its timestamped log lines: a stage runs from the line that starts
    building it ('<stage>: building') to the next such line, the last to the 'results' line; the data stage
    (generating and decoding the images, or finding them on disk) from the run's first line. A stage the run read
    from the cache has no entry (but data, which always has one)."""
    marks: list[tuple[str, datetime]] = []
    for stamp, text in log_stamps(log):
        if not marks:
            marks.append(("data", stamp))
        if (building := _BUILDING.match(text)) and building.group(1) != "data":
            marks.append((building.group(1), stamp))
        elif text == "results":
            marks.append(("results", stamp))
    seconds: dict[str, float] = {}
    for (stage, start), (_, end) in zip(marks, marks[1:]):
        seconds[stage] = round(seconds.get(stage, 0.0) + (end - start).total_seconds(), 1)
    return seconds


def run_metrics(log: str) -> dict[str, Any]:
    """The metrics.json that a train.py run's log says it wrote."""
    return json.loads(Path(re.findall(r"metrics written to (\S+)", log)[-1]).read_text())


def train_config(*overrides: str):
    """``conf/train.yaml`` composed with ``progress=false`` and ``overrides``, ``data.num_labels`` set from the
    reader's label names as a run sets it: the config of the benchmarks that call the pipeline's functions
    directly. Hydra and the package are imported here, not above, because the benchmarks that only time commands
    (default_run.py, test_suite.py) import this module without them."""
    from hydra import compose, initialize_config_dir

    from pate.pipeline import instantiate, set_num_labels

    with initialize_config_dir(config_dir=str(ROOT / "conf"), version_base="1.3"):
        cfg = compose(config_name="train", overrides=["progress=false", *overrides])
    set_num_labels(cfg, instantiate(cfg.data.reader, "data.reader").label_names())
    return cfg
