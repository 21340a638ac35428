"""The default run from cold, as a new user meets it: ``python train.py`` with an empty data and cache directory
(a fresh ``PROJECT_ROOT``), its wall time, the seconds of each stage, its peak memory, what it leaves on disk, the
size of the environment it ran in, and the console's last lines; then ``pate-predict`` with the model the run kept,
on the run's evaluation images (``evaluation.csv``), and what it prints: the accuracy it finds beside the run's.

    python benchmarks/default_run.py                                        # the figures on stdout
    python benchmarks/default_run.py --json benchmarks/results/default_run.json  # the file the docs quote

A stage's seconds run from the log line that starts building it to the next such line (the data stage: from the
run's first log line, generation and decoding together); the results line ends the last. Run it on an otherwise
idle machine: a second process on the same cores slows both.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import resource
import sys
import tempfile
import time
from pathlib import Path

from record import header, run_command, run_metrics, stage_seconds, write_json


def console_tail(log: str) -> list[str]:
    """The run's calibration line, then its results as the console shows them, timestamps dropped and the run's
    own directory written as a pattern."""
    lines = [re.sub(r"^\[\d{4}-\d\d-\d\d \d\d:\d\d:\d\d,\d{3}\]", "", line) for line in log.splitlines()]
    calibrated = next(line for line in lines if line.startswith("[train][INFO] - calibrated "))
    start = lines.index("[train][INFO] - results")
    end = next(i for i in range(start, len(lines)) if lines[i].startswith("[train][INFO] - metrics written to "))
    written = "[train][INFO] - metrics written to logs/train/runs/<time>_<pid>-<random>/metrics.json"
    return [calibrated, "...", *lines[start:end], written]


def size_bytes(path: Path) -> int:
    return sum(file.stat().st_size for file in path.rglob("*") if file.is_file() and not file.is_symlink())


def predict(run_dir: Path, root: Path) -> dict:
    """``pate-predict`` on the run's own evaluation images: the command as a user types it, its wall time and its
    output, the run's directory written as a pattern."""
    command = [
        "pate-predict",
        "<run dir>",
        "<run dir>/evaluation.csv",
        "--resize",
        "--no-progress",
        "-o",
        "predictions.csv",
    ]
    args = [
        str(run_dir),
        str(run_dir / "evaluation.csv"),
        "--resize",
        "--no-progress",
        "-o",
        str(root / "predictions.csv"),
    ]
    log, wall = run_command([sys.executable, "-m", "pate.predict", *args], dict(os.environ))
    output = [line.replace(str(run_dir), "<run dir>").replace(str(root), "<root>") for line in log.splitlines()]
    return {"command": " ".join(command), "wall_s": round(wall, 1), "output": output}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--json", type=Path, help="also write the figures here (with the date, commit and machine)")
    args = parser.parse_args(argv)
    record = header("benchmarks/default_run.py", time.time())
    with tempfile.TemporaryDirectory(prefix="pate-default-run-") as root:
        log, wall = run_command([sys.executable, "train.py", "progress=false"], {**os.environ, "PROJECT_ROOT": root})
        metrics = run_metrics(log)
        result = {
            "wall_s": round(wall, 1),
            "stages_s": stage_seconds(log),
            "peak_memory_bytes": resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss * 1024,
            "data_bytes": size_bytes(Path(root, "data")),
            "cache_bytes": size_bytes(Path(root, "cache")),
            "environment_bytes": size_bytes(Path(sys.prefix)),
            "epsilon": metrics["epsilon"],
            "delta": metrics["delta"],
            "neighbors": metrics["neighbors"],
            "student_accuracy": metrics["student_accuracy"],
            "teacher_accuracy": metrics["teacher_accuracy"],
            "console": console_tail(log),
            "predict": predict(Path(re.findall(r"metrics written to (\S+)", log)[-1]).parent, Path(root)),
        }
    print(json.dumps(result, indent=1))
    if args.json:
        write_json(args.json, {**record, **result})
        print(f"wrote {args.json}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
