"""How long each private top-k experiment takes: ``python topk.py topk_experiment=<name>`` for flat, repeated and
checkin (the synthetic check-in shapes), one after the other, each writing its report into a temporary folder.

    python benchmarks/topk_runs.py                                       # the wall times on stdout
    python benchmarks/topk_runs.py --json benchmarks/results/topk_runs.json   # the file docs/reports.md quotes

Run it on an otherwise idle machine: a second process on the same cores slows both.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

from record import header, run_command, write_json

EXPERIMENTS = ("flat", "repeated", "checkin")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--json", type=Path, help="also write the figures here (with the date, commit and machine)")
    args = parser.parse_args(argv)
    record, rows = header("benchmarks/topk_runs.py", time.time()), []
    for name in EXPERIMENTS:
        with tempfile.TemporaryDirectory(prefix=f"topk-{name}-") as out:
            _, wall = run_command(
                [
                    sys.executable,
                    "topk.py",
                    f"topk_experiment={name}",
                    "progress=false",
                    f"report_dir={out}",
                    f"hydra.run.dir={out}/run",
                ]
            )
        rows.append({"experiment": name, "command": f"python topk.py topk_experiment={name}", "wall_s": round(wall, 1)})
        print(f"{rows[-1]['command']}: {wall:.1f} s", flush=True)
    if args.json:
        write_json(args.json, {**record, "rows": rows})
        print(f"wrote {args.json}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
