"""Would soft votes, or per-attribute thresholds, raise the teachers' ceiling (benchmarks/results/levers.md, "Soft
votes and per-attribute thresholds")? The non-private vote of the default ridge heads on the 600 public queries,
three ways, for T = 100, 200, 400, 800 teachers on the default data and features:

- hard: each head's score thresholded at 1/2, then the majority (the pipeline's vote);
- soft: the mean of the heads' scores clipped to [0, 1], thresholded at 1/2;
- thresholds: each head's score thresholded, per attribute, at the threshold of ``THRESHOLDS`` that maximises
  that head's leave-one-out accuracy on its own part (``RidgeHeads.loo_scores``: each of its rows scored by the
  head fitted without it), ties going to the threshold nearest 1/2; then the majority. A per-teacher choice on
  the teacher's own part, so public by construction holds, and a vote is still a 0/1 vector.

A soft vote changes no sensitivity: a teacher's clipped score vector lies in [0, 1]^L like its bits, so TauPATE's
per-teacher norm clip bounds it exactly as it bounds the bits (pate/privacy/sensitivity.py,
clipped_vote_l2_sensitivity) and the noise at a given epsilon would be the same. What a soft vote could change is
the vote itself, which this measures before any aggregator is written for it: the gain it would bring is at most
the gain of the non-private vote.

    python benchmarks/soft_votes.py                                             # the table on stdout
    python benchmarks/soft_votes.py --json benchmarks/results/soft_votes.json   # the file the docs quote

Everything goes through the pipeline's own code: the default config, the cached data, features and queries
stages (built if missing), the partition function and the ridge heads' fit (``pate.features.ridge``, as
``teacher=heads`` fits them). The heads are refitted here (seconds per hundred teachers) because the teachers
artifact keeps no scores. Accuracies are on the queries' true labels (the public queries, as the "vote" column of
levers.md, "The teachers' ceiling"), never on the evaluation images.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np
import torch

# the repository's packages first: this folder's teachers.py would shadow the package of that name
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from pate.data import data_identity, partition_teachers, read_queries  # noqa: E402
from pate.features import fit_ridge_heads, head_scores, head_weights, read_features  # noqa: E402
from pate.pipeline import ArtifactStore, Dataset, features_stage, instantiate, queries_stage  # noqa: E402
from record import header, train_config, write_json  # noqa: E402

# the candidate thresholds, fixed a priori, nearest 1/2 first (argmax keeps the first of tied maxima)
THRESHOLDS = sorted(np.linspace(0.05, 0.95, 19).round(2), key=lambda t: (abs(t - 0.5), t))
GROUP = 25  # heads fitted at once: [GROUP, n, D] float32 stays under 1 GB at 100 teachers of the default data


def votes(features, labels: np.ndarray, parts: list[np.ndarray], queries: np.ndarray, lambdas) -> dict:
    """Hard, soft and per-attribute-threshold vote counts [Q, L], and the teachers' mean accuracy on the queries
    with each head thresholded at 1/2 and at its own thresholds; the heads fitted GROUP at a time over teachers of
    the same part size."""
    x_queries = features.take(queries)
    hard = np.zeros((len(queries), labels.shape[1]))
    soft = np.zeros_like(hard)
    thresholded = np.zeros_like(hard)
    accuracy, threshold_accuracy = [], []
    grid = torch.tensor(THRESHOLDS, dtype=torch.float32)
    truth = torch.from_numpy(labels[queries].astype(bool))
    by_size: dict[int, list[int]] = {}
    for i, part in enumerate(parts):
        by_size.setdefault(len(part), []).append(i)
    for ids in by_size.values():
        for start in range(0, len(ids), GROUP):
            rows = np.stack([parts[i] for i in ids[start : start + GROUP]])  # [G, n]
            x = features.take(rows.reshape(-1)).reshape(len(rows), rows.shape[1], -1)
            fitted = fit_ridge_heads(x, torch.from_numpy(labels[rows].astype(np.float32)), lambdas)
            weights, bias = head_weights(x, fitted.beta.float(), fitted.ybar.float())
            scores = head_scores(x_queries, weights, bias)  # [G, Q, L]
            hard += (scores > 0.5).sum(0).numpy()
            soft += scores.clamp(0, 1).sum(0).double().numpy()
            accuracy += ((scores > 0.5) == truth).double().mean((1, 2)).tolist()
            own = torch.from_numpy(labels[rows].astype(bool))  # [G, n, L]
            loo_correct = (fitted.loo_scores[:, None] > grid[None, :, None, None]) == own[:, None]  # [G, C, n, L]
            cut = grid[loo_correct.double().mean(2).argmax(1)]  # [G, L]
            decided = scores > cut[:, None, :]
            thresholded += decided.sum(0).numpy()
            threshold_accuracy += (decided == truth).double().mean((1, 2)).tolist()
    return {
        "hard": hard,
        "soft": soft,
        "thresholded": thresholded,
        "teacher_accuracy": float(np.mean(accuracy)),
        "threshold_teacher_accuracy": float(np.mean(threshold_accuracy)),
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--teachers", nargs="+", type=int, default=[100, 200, 400, 800])
    parser.add_argument("--json", type=Path, help="also write the figures here (with the date, commit and machine)")
    args = parser.parse_args(argv)
    record = header("benchmarks/soft_votes.py", time.time())
    torch.set_num_threads(2)
    cfg = train_config()
    data = instantiate(cfg.data.reader, "data.reader").load(Path(cfg.paths.cache_dir) / "tensors", progress=False)
    dataset = Dataset(data, data_identity(cfg.data.name, cfg.data.image_size, data))
    store = ArtifactStore(Path(cfg.paths.cache_dir))
    features = read_features(
        store.get(features_stage(cfg, dataset, instantiate(cfg.features.extractor, "feature extractor")))
    )
    queries = read_queries(store.get(queries_stage(cfg, dataset))).queries
    truth = data.labels[queries].astype(bool)
    record.update(
        images=int(cfg.data.synthetic.num_images), pool=int(cfg.features.extractor.pool), queries=len(queries), rows=[]
    )
    for num_teachers in args.teachers:
        start = time.perf_counter()
        parts = partition_teachers(data.indices("train"), num_teachers, int(cfg.partition.seed))
        counts = votes(features, data.labels, parts, queries, list(cfg.teacher.lambdas))
        row = {
            "teachers": num_teachers,
            "faces_per_teacher": float(np.mean([len(p) for p in parts])),
            "teacher_accuracy": counts["teacher_accuracy"],
            "hard_vote": float(((counts["hard"] > num_teachers / 2) == truth).mean()),
            "soft_vote": float(((counts["soft"] > num_teachers / 2) == truth).mean()),
            "threshold_teacher_accuracy": counts["threshold_teacher_accuracy"],
            "threshold_vote": float(((counts["thresholded"] > num_teachers / 2) == truth).mean()),
            "seconds": round(time.perf_counter() - start, 1),
        }
        record["rows"].append(row)
        print(
            f"T = {num_teachers:4d} (~{row['faces_per_teacher']:.0f} faces): teacher {row['teacher_accuracy']:.2%}, "
            f"hard vote {row['hard_vote']:.2%}, soft vote {row['soft_vote']:.2%}; thresholds: teacher "
            f"{row['threshold_teacher_accuracy']:.2%}, vote {row['threshold_vote']:.2%} ({row['seconds']:.0f} s)",
            flush=True,
        )
    if args.json:
        write_json(args.json, record)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
