"""Time per method at the default size: one `python train.py method=<m>` run of each method (PATE with the default
TauPATE, Private-kNN, DP-SGD's linear probe) on the default data, calibrated to epsilon 8, one after the other.

    python benchmarks/methods.py                         # table on stdout
    python benchmarks/methods.py --json out.json         # also the figures, with the machine and the date
    python benchmarks/methods.py --seed 7                # the seed of the runs (default 1000)

The data, the features and PATE's teachers and votes come from the cache when present (a cold default run builds
them first: `make train`); each method's own stage is rebuilt, because its key holds the seed, which defaults to
one no report uses. Reported per method: the whole run's wall time, and the seconds between the log lines that
start building the method's release and the student (or the results): the method's own work (PATE's
aggregation, Private-kNN's neighbour search and noise, DP-SGD's calibration and training).
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

from record import header, log_stamps, run_command, run_metrics, write_json

METHODS = {"pate (TauPATE)": ["method=pate"], "private_knn": ["method=private_knn"], "dp_sgd": ["method=dp_sgd"]}


def _seconds(log: str) -> float | None:
    """Seconds from the line that starts building the method's release ('aggregate: building') to the next of
    'student: building' and 'results' (DP-SGD trains no student)."""
    start = end = None
    for stamp, text in log_stamps(log):
        if start is None and text.startswith("aggregate: building"):
            start = stamp
        elif start is not None and (text.startswith("student: building") or text == "results"):
            end = stamp
            break
    return None if start is None or end is None else round((end - start).total_seconds(), 1)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--json", type=Path, help="also write the figures as JSON here")
    parser.add_argument("--seed", type=int, default=1000)
    args = parser.parse_args()
    rows, started = [], time.time()
    for name, overrides in METHODS.items():
        log, wall = run_command([sys.executable, "train.py", *overrides, f"seed={args.seed}", "progress=false"])
        metrics = run_metrics(log)
        rows.append(
            {
                "method": name,
                "wall_s": round(wall, 1),
                "method_stage_s": _seconds(log),
                "epsilon": metrics["epsilon"],
                "neighbors": metrics["neighbors"],
                "student_accuracy": metrics["student_accuracy"],
            }
        )
    print("| method | run (s) | its own stage (s) | epsilon (replace, record-level, delta 1e-6) | student accuracy |")
    print("|---|---:|---:|---:|---:|")
    for row in rows:
        print(
            f"| {row['method']} | {row['wall_s']:.1f} | {row['method_stage_s']} | {row['epsilon']:.3f} | "
            f"{row['student_accuracy']:.4f} |"
        )
    if args.json:
        write_json(args.json, {**header("benchmarks/methods.py", started), "seed": args.seed, "rows": rows})


if __name__ == "__main__":
    main()
