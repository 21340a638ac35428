"""Speed of the top-k mechanisms on a batch of 1000 histograms of 15000 bins, against a per-histogram loop.

    python benchmarks/topk_speed.py                  # prints a table (a few minutes on 2 cores)
    python benchmarks/topk_speed.py --json out.json  # and writes the figures as JSON

Every mechanism of ``pate.mechanisms.topk``, calibrated to (1.0, 1e-6)-DP for one query (add_remove,
kbar = k), answers one batch of 1000 heavy-tailed histograms (Poisson counts with Gamma-distributed
means, d = 15000) at k = 10 and k = 100. It is timed once on the whole batch and once as a Python loop
of single-histogram calls over the first ``--loop`` histograms (scaled to 1000); the ratio is the
gain of batching. Target: every mechanism handles the batch without a per-bin Python loop.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # run from a checkout without installing

from pate.mechanisms.topk import (  # noqa: E402
    EMPeeling,
    Joint,
    LimitedDomain,
    PNFPeeling,
    StableTopKFixed,
    TopStable,
)
from record import header, write_json  # noqa: E402

BATCH, BINS, EPSILON, DELTA = 1000, 15000, 1.0, 1e-6


def make_histograms(rng: np.random.Generator) -> np.ndarray:
    means = rng.gamma(0.5, 40.0, size=(BATCH, BINS))
    return rng.poisson(means).astype(np.int64)


def mechanisms(k: int) -> dict:
    common = dict(k=k, epsilon=EPSILON, delta=DELTA, queries=1, neighbors="add_remove")
    return {
        "EM-CDP": EMPeeling.for_budget(**common),
        "PNF-peel": PNFPeeling.for_budget(**common),
        "JOINT": Joint.for_budget(**common),
        "LD": LimitedDomain.for_budget(**common, max_k=k),
        "TS": TopStable.for_budget(**common, max_k=k),
        "StableTopK-fixed": StableTopKFixed.for_budget(**common, max_k=k),
    }


def best_of(repeats: int, run) -> float:
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        run()
        times.append(time.perf_counter() - start)
    return min(times)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--json", type=Path, help="also write the figures to this JSON file")
    parser.add_argument("--loop", type=int, default=50, help="histograms in the per-histogram loop (scaled to 1000)")
    args = parser.parse_args(argv)
    histograms = make_histograms(np.random.default_rng(0))
    rows, record = [], header("benchmarks/topk_speed.py", time.time())
    print(f"batch {BATCH} x {BINS} bins; load average {os.getloadavg()[0]:.2f}; {record['machine']['cpu']}")
    print(f"{'mechanism':<18}{'k':>5}{'batch s':>10}{'hist/s':>10}{'loop s (x1000)':>16}{'ratio':>8}")
    for k in (10, 100):
        for name, mechanism in mechanisms(k).items():
            rng = np.random.default_rng(1)
            batch_seconds = best_of(1 if name == "PNF-peel" else 2, lambda: mechanism(histograms, rng))
            sample = histograms[: args.loop]
            loop_seconds = best_of(1, lambda: [mechanism(row[None, :], rng) for row in sample]) * BATCH / args.loop
            row = dict(
                mechanism=name,
                k=k,
                batch_seconds=batch_seconds,
                histograms_per_second=BATCH / batch_seconds,
                loop_seconds=loop_seconds,
                ratio=loop_seconds / batch_seconds,
            )
            rows.append(row)
            print(
                f"{name:<18}{k:>5}{batch_seconds:>10.2f}{BATCH / batch_seconds:>10.0f}{loop_seconds:>16.2f}"
                f"{row['ratio']:>8.1f}"
            )
    if args.json:
        write_json(
            args.json,
            {**record, "load_average_after": list(os.getloadavg()), "batch": BATCH, "bins": BINS, "rows": rows},
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
