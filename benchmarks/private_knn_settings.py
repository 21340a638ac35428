"""Private-kNN's k and sampling rate gamma, checked on the built-in synthetic data: a grid of k and gamma
at two target epsilons, one seed, the default relation and student, through ``python train.py -m``. The synthetic
data plays the role of public data for a user's own data, so a setting chosen here is public for theirs.

    python benchmarks/private_knn_settings.py --output benchmarks/results/private_knn_settings_replace.json
    python benchmarks/private_knn_settings.py --epsilons 16 --noise-free \
        --output benchmarks/results/private_knn_settings_eps16_replace.json
    python benchmarks/private_knn_settings.py --epsilons 32,64 --noise-free \
        --output benchmarks/results/private_knn_settings_eps32_64_replace.json
    python benchmarks/private_knn_settings.py --epsilons 4 --relation add_remove \
        --output benchmarks/results/private_knn_settings_eps4_add_remove.json
    python benchmarks/private_knn_settings.py --epsilons 2 --relation add_remove \
        --output benchmarks/results/private_knn_settings_eps2_add_remove.json

About 11 minutes on 2 cores (18 runs); ``--noise-free`` also trains each setting's privacy-free limit (its votes
without noise, ``references=true``; the same at every epsilon, so built once per seed) and records it. Every setting
runs as given (``method.recipes=[]``: the shipped recipes would refuse a k or gamma they replace). Recorded results
and findings: benchmarks/results/levers.md, "Private-kNN's settings", whose recipe (conf/method/private_knn.yaml)
these grids chose.
"""

from __future__ import annotations

import argparse
import json
import re
import shutil
import sys
import tempfile
import time
from pathlib import Path

from record import header, run_command, write_json

KS, RATES = (50, 200, 800), (0.05, 0.1, 0.3)


def _epsilons(text: str) -> tuple[float, ...]:
    try:
        values = tuple(float(part) for part in text.split(","))
    except ValueError:
        raise argparse.ArgumentTypeError(f"--epsilons={text!r}; expected comma-separated numbers") from None
    if not all(value > 0 for value in values):
        raise argparse.ArgumentTypeError(f"--epsilons={text!r}; expected target epsilons > 0")
    return values


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--output", type=Path, required=True)
    parser.add_argument("--epsilons", type=_epsilons, default=(1.0, 8.0), help="target epsilons (default 1,8)")
    parser.add_argument("--noise-free", action="store_true", help="also each setting's privacy-free limit")
    parser.add_argument("--seed", type=int, default=0, help="the runs' seed (default 0)")
    parser.add_argument(
        "--relation",
        choices=("replace", "add_remove"),
        default="replace",
        help="the neighbouring relation the noise is calibrated under (default replace)",
    )
    args = parser.parse_args()
    started = time.time()
    record = header("benchmarks/private_knn_settings.py", started)
    sweep = Path(tempfile.mkdtemp(prefix="private_knn_settings-"))
    command = [
        sys.executable,
        "train.py",
        "-m",
        "method=private_knn",
        "method.recipes=[]",
        f"method.k={','.join(map(str, KS))}",
        f"method.sampling_rate={','.join(map(str, RATES))}",
        f"privacy.target_epsilon={','.join(f'{e:g}' for e in args.epsilons)}",
        f"seed={args.seed}",
        f"privacy.neighbors={args.relation}",
        "progress=false",
        *(["references=true"] if args.noise_free else []),
    ]
    _, seconds = run_command([*command, f"hydra.sweep.dir={sweep}"])
    runs = []
    for path in sorted(sweep.glob("*/metrics.json")):
        metrics = json.loads(path.read_text())
        k, rate = re.search(r"k=(\d+), sampling_rate=([\d.]+)", metrics["mechanism"]).groups()
        runs.append(
            {
                "k": int(k),
                "sampling_rate": float(rate),
                "target_epsilon": metrics["target_epsilon"],
                "epsilon": metrics["epsilon"],
                "epsilon_accountant": metrics["epsilon_accountant"],
                "neighbors": metrics["neighbors"],
                "delta": metrics["delta"],
                "sigma": metrics["noise"]["sigma"],
                "label_accuracy": metrics["label_accuracy"],
                "student_accuracy": metrics["student_accuracy"],
                **(
                    {"noise_free_student_accuracy": metrics["reference"]["noise_free"]["student_accuracy"]}
                    if args.noise_free
                    else {}
                ),
            }
        )
    shutil.rmtree(sweep)
    expected = len(KS) * len(RATES) * len(args.epsilons)
    if len(runs) != expected:
        sys.exit(f"{len(runs)} runs finished of {expected}: a grid with holes is no figure")
    runs.sort(key=lambda run: (run["k"], run["sampling_rate"], run["target_epsilon"]))
    write_json(
        args.output, {**record, "command": " ".join(command[1:]), "seconds": seconds, "seed": args.seed, "runs": runs}
    )
    print(f"wrote {args.output} ({len(runs)} runs in {seconds / 60:.1f} min)")


if __name__ == "__main__":
    main()
