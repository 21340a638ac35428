"""The levers of the teachers' ceiling (benchmarks/results/levers.md, "The teachers' ceiling"), measured through
the pipeline itself: for each variant of a fixed base run (``BASE``: 100,000 images, 800 teachers, the 3 x 3 grid,
the starting point every lever is measured from) -- the random-patch filter bank, the pooling grid, the number of
teachers, more faces -- ``python train.py <BASE with the variant's overrides> privacy.target_epsilon=E
references=true`` at epsilon 2 and 8 (replace, delta 1e-6), one after the other, in a fresh PROJECT_ROOT (the base
data copied in, so every features stage is built and timed). The variants pin the base, so the files in
benchmarks/results/ stay reproducible under today's default (150,000 images, 400 teachers, 4 x 4: the variant
"150,000 images, T = 400, 4 x 4").

    python benchmarks/teacher_levers.py                                         # the table on stdout
    python benchmarks/teacher_levers.py --json benchmarks/results/teacher_levers.json   # the file the docs quote
    python benchmarks/teacher_levers.py --levers faces --json benchmarks/results/teacher_levers_faces.json

Per variant: teacher accuracy, the teachers' non-private majority vote on the 600 queries ("vote"), TauPATE's
released labels and the head student at each epsilon, the student on the non-private vote, the data and features
stages' seconds where the variant built them, the features' size on disk, and the wall time of the variant's first
run. The ``faces`` lever generates its larger data set in the fresh root (only the base data is copied in), so
its data stage is timed from scratch. Variants with several ``seeds`` repeat the two epsilons with those seeds of
the noise and the student (the same teachers). A default is chosen on the public queries (the accuracy of the vote
and of the released labels there) and on the time budget, never on the students' accuracy on the evaluation
images, which is reported but may not be tuned on.
"""

from __future__ import annotations

import argparse
import os
import shutil
import sys
import tempfile
import time
from pathlib import Path

from record import ROOT, header, run_command, run_metrics, stage_seconds, write_json

EPSILONS = (2, 8)
# (lever, label, overrides, seeds)
VARIANTS = [
    ("filters", "256 filters (the default before issue 21)", [], (0, 1, 2)),
    ("filters", "512 filters", ["features.extractor.num_filters=512"], (0,)),
    ("filters", "1,024 filters", ["features.extractor.num_filters=1024"], (0,)),
    ("pool", "2 x 2", ["features.extractor.pool=2"], (0,)),
    ("pool", "4 x 4", ["features.extractor.pool=4"], (0, 1, 2)),
    ("pool", "6 x 6", ["features.extractor.pool=6"], (0,)),
    ("pool", "8 x 8", ["features.extractor.pool=8"], (0,)),
    ("teachers", "T = 100, 3 x 3", ["partition.num_teachers=100"], (0,)),
    ("teachers", "T = 200, 3 x 3", ["partition.num_teachers=200"], (0,)),
    ("teachers", "T = 400, 3 x 3", ["partition.num_teachers=400"], (0,)),
    ("teachers", "T = 200, 4 x 4", ["partition.num_teachers=200", "features.extractor.pool=4"], (0,)),
    ("teachers", "T = 400, 4 x 4", ["partition.num_teachers=400", "features.extractor.pool=4"], (0,)),
    # CelebA's scale: 200,000 images in CelebA's proportions give 160,680 private faces
    (
        "faces",
        "200,000 images, T = 800, 4 x 4",
        ["data.synthetic.num_images=200000", "features.extractor.pool=4"],
        (0, 1, 2),
    ),
    (
        "faces",
        "200,000 images, T = 400, 4 x 4",
        ["data.synthetic.num_images=200000", "features.extractor.pool=4", "partition.num_teachers=400"],
        (0, 1, 2),
    ),
    ("faces", "200,000 images, T = 800, 3 x 3", ["data.synthetic.num_images=200000"], (0,)),
    (
        "faces",
        "150,000 images, T = 400, 4 x 4",
        ["data.synthetic.num_images=150000", "features.extractor.pool=4", "partition.num_teachers=400"],
        (0,),
    ),
    # the non-PATE baseline on the same data and features: more private records help DP-SGD too
    (
        "faces",
        "DP-SGD linear probe, 200,000 images, 4 x 4",
        ["data.synthetic.num_images=200000", "features.extractor.pool=4", "method=dp_sgd"],
        (0,),
    ),
    (
        "faces",
        "DP-SGD linear probe, 150,000 images, 4 x 4",
        ["data.synthetic.num_images=150000", "features.extractor.pool=4", "method=dp_sgd"],
        (0,),
    ),
]
# the base run, the starting point of every lever, which every variant changes in one or more of its settings
BASE = {"data.synthetic.num_images": "100000", "partition.num_teachers": "800", "features.extractor.pool": "3"}
BASE_DATA = "synthetic_celeba_n100000_px64_seed0"  # conf/data/synthetic.yaml's root at BASE's num_images
LEVERS = tuple(dict.fromkeys(lever for lever, *_ in VARIANTS))


def on_base(overrides: list[str]) -> list[str]:
    """BASE with the variant's overrides on top (Hydra refuses a key given twice)."""
    settings = {**BASE, **dict(override.split("=", 1) for override in overrides)}
    return [f"{key}={value}" for key, value in settings.items()]


def run(root: Path, overrides: list[str], epsilon: float, seed: int) -> tuple[dict, str, float]:
    log, wall = run_command(
        [
            sys.executable,
            "train.py",
            *on_base(overrides),
            f"privacy.target_epsilon={epsilon}",
            f"seed={seed}",
            "references=true",
            "progress=false",
        ],
        {**os.environ, "PROJECT_ROOT": str(root)},
    )
    return run_metrics(log), log, wall


def variant(root: Path, overrides: list[str], seeds: tuple[int, ...]) -> dict:
    result: dict = {
        "overrides": overrides,
        "seeds": list(seeds),
        "students": {str(e): [] for e in EPSILONS},
        "labels": {str(e): [] for e in EPSILONS},
    }
    for seed in seeds:
        for epsilon in EPSILONS:
            metrics, log, wall = run(root, overrides, epsilon, seed)
            if "features_seconds" not in result:
                stages = stage_seconds(log)
                # the data stage counts only where the variant built its own partition: else it only read them
                result.update(
                    first_run_s=round(wall, 1),
                    features_seconds=stages.get("features"),
                    data_seconds=stages["data"] if "partition" in stages else None,
                )
                features = root / "cache" / "features" / metrics["artifacts"]["features"]
                result["features_bytes"] = sum(f.stat().st_size for f in features.rglob("*") if f.is_file())
            # DP-SGD has no teachers, no vote and no released labels: its "student" is the released model itself
            vote = metrics["reference"].get("majority_vote", {})
            result.update(
                method=metrics["method"],
                teacher=metrics.get("teacher_accuracy"),
                vote=vote.get("label_accuracy"),
                student_on_vote=vote.get("student_accuracy"),
                num_teachers=metrics.get("num_teachers"),
            )
            result["students"][str(epsilon)].append(metrics["student_accuracy"])
            result["labels"][str(epsilon)].append(metrics["label_accuracy"] if "num_teachers" in metrics else None)
    return result


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--json", type=Path, help="also write the figures here (with the date, commit and machine)")
    parser.add_argument(
        "--levers", nargs="+", choices=LEVERS, default=list(LEVERS), help="measure only these levers (default: all)"
    )
    parser.add_argument(
        "--data",
        type=Path,
        default=ROOT / "data",
        help="where the base data already is (copied into the fresh PROJECT_ROOT; generated there when absent)",
    )
    args = parser.parse_args(argv)
    record, rows = header("benchmarks/teacher_levers.py", time.time()), []
    with tempfile.TemporaryDirectory(prefix="pate-levers-") as root:
        base_data = args.data / BASE_DATA
        if base_data.is_dir():  # only the base set: a lever's own data is generated, and timed, here
            shutil.copytree(base_data, Path(root) / "data" / BASE_DATA, symlinks=True)
        for lever, label, overrides, seeds in (v for v in VARIANTS if v[0] in args.levers):
            rows.append({"lever": lever, "label": label, **variant(Path(root), overrides, seeds)})
            row = rows[-1]
            print(
                f"{label}: teacher {row['teacher']}, vote {row['vote']}, students "
                f"{[round(s, 4) for e in EPSILONS for s in row['students'][str(e)]]}, on the vote "
                f"{row['student_on_vote']}, features {row['features_seconds']} s",
                flush=True,
            )
            shutil.rmtree(Path(root) / "logs", ignore_errors=True)
    if args.json:
        write_json(
            args.json, {**record, "epsilons": list(EPSILONS), "delta": 1e-6, "neighbors": "replace", "rows": rows}
        )
        print(f"wrote {args.json}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
