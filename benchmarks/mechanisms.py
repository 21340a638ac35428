"""Speed of the multi-label aggregators: vectorised queries/second against a plain per-query loop, in one run.

    python benchmarks/mechanisms.py                  # prints a table (about a minute)
    python benchmarks/mechanisms.py --json out.json  # and writes the figures as JSON

For StableTopK (three selections), GaussianPATE and TauPATE at L = 40 and L = 1000 (T = 800 teachers),
it times the library's batched call and a straightforward per-query loop of the same mechanism written
below (one numpy call sequence per query), and reports the ratio. Each figure is the best of a few
repeats (the least disturbed by other processes); the load average is recorded because the machine
may be shared. Targets: StableTopK at L = 40 >= 1e6 queries/s and >= 20x the loop.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # run from a checkout without installing

from pate.aggregators import GaussianPATE, PackedVotes, StableTopK, TauPATE  # noqa: E402
from record import header, write_json  # noqa: E402

TEACHERS = 800
TARGET_QPS, TARGET_RATIO = 1e6, 20.0


# ----------------------------------------------------------------------------------------- data
def vote_probabilities(num_queries, num_labels, rng):
    """Per (query, label) probability that a teacher votes for the label: mostly near 0 or 1 (consensus)."""
    return rng.beta(0.3, 0.3, size=(num_queries, num_labels))


def make_counts(num_queries, num_labels, rng):
    return rng.binomial(TEACHERS, vote_probabilities(num_queries, num_labels, rng)).astype(np.int32)


def make_packed_votes(num_queries, num_labels, rng):
    probabilities = vote_probabilities(num_queries, num_labels, rng)
    packed = [
        np.packbits(rng.random((TEACHERS, num_labels)) < p, axis=-1) for p in probabilities
    ]  # one query at a time: the unpacked bits of all queries would not fit comfortably
    return PackedVotes(np.stack(packed), num_labels)


# ------------------------------------------------------------------------- per-query loops
def stable_topk_loop(agg: StableTopK, counts, rng):
    """StableTopK one query at a time: sort, pad, gaps, noisy argmax, PTR test, threshold."""
    selection, test = agg.selection_mechanism, agg.test_mechanism
    s, scale, margin = selection.sensitivity, selection.noise_scale, test.margin
    labels = np.zeros(counts.shape, dtype=bool)
    for q, row in enumerate(counts):
        padded = np.concatenate(([agg.num_teachers], np.sort(row)[::-1], [0]))
        gaps = padded[:-1] - padded[1:]
        if selection.selection == "gaussian":
            noise = rng.normal(0.0, scale, gaps.size)
        elif selection.selection == "laplace":
            noise = rng.laplace(0.0, scale, gaps.size)
        else:
            noise = -scale * np.log(rng.standard_exponential(gaps.size))
        k = int(np.argmax(gaps + noise))
        lower = max(s, gaps[k]) + rng.normal(0.0, test.sigma) - margin
        if lower > s and k > 0:
            labels[q] = row >= padded[k]
    return labels


def gaussian_pate_loop(agg: GaussianPATE, counts, rng):
    labels = np.zeros(counts.shape, dtype=bool)
    for q, row in enumerate(counts):
        labels[q] = row + rng.normal(0.0, agg.sigma, row.size) > agg.num_teachers / 2
    return labels


def tau_pate_loop(agg: TauPATE, votes: PackedVotes, rng):
    labels = np.zeros((votes.shape[0], agg.num_labels), dtype=bool)
    for q, packed in enumerate(votes.bits):
        bits = np.unpackbits(packed, axis=-1, count=agg.num_labels).astype(np.float64)
        ratio = np.minimum(1.0, agg.tau / np.maximum(bits.sum(axis=1), 1))
        weights = ratio if agg.norm == "l1" else np.sqrt(ratio)
        labels[q] = weights @ bits + rng.normal(0.0, agg.sigma, agg.num_labels) > agg.num_teachers / 2
    return labels


# ------------------------------------------------------------------------------- timing
def queries_per_second(run, num_queries, repeats):
    """Best of ``repeats`` timed calls of ``run()`` after one warm-up call."""
    run()
    best = min(_timed(run) for _ in range(repeats))
    return num_queries / best


def _timed(run):
    start = time.perf_counter()
    run()
    return time.perf_counter() - start


# --------------------------------------------------------------------------------- cases
def cases(scale):
    """(name, L, aggregator, vectorised queries, loop queries, data kind, loop function)."""
    paper = dict(sigma_select=50.0, sigma_test=60.0, delta_t=1e-9)
    sizes = ((40, 200_000, 3_000, 3_000, 600), (1000, 5_000, 300, 100, 40))
    for num_labels, vector_q, loop_q, tau_vector_q, tau_loop_q in sizes:
        n = lambda q: max(1, int(q * scale))  # noqa: E731
        yield (
            "StableTopK gaussian/gaussian (paper)",
            num_labels,
            StableTopK(num_labels, TEACHERS, "gaussian", **paper),
            n(vector_q),
            n(loop_q),
            "counts",
            stable_topk_loop,
        )
        yield (
            "StableTopK gumbel/gaussian",
            num_labels,
            StableTopK(num_labels, TEACHERS, "gumbel", eps_select=0.0333, sigma_test=60.0, delta_t=1e-9),
            n(vector_q),
            n(loop_q),
            "counts",
            stable_topk_loop,
        )
        yield (
            "StableTopK laplace/gaussian",
            num_labels,
            StableTopK(num_labels, TEACHERS, "laplace", sigma_select=50.0, sigma_test=60.0, delta_t=1e-9),
            n(vector_q),
            n(loop_q),
            "counts",
            stable_topk_loop,
        )
        yield (
            "GaussianPATE",
            num_labels,
            GaussianPATE(num_labels, TEACHERS, 380.0),
            n(vector_q),
            n(loop_q),
            "counts",
            gaussian_pate_loop,
        )
        yield (
            "TauPATE l1 (tau=10)",
            num_labels,
            TauPATE(num_labels, TEACHERS, 190.0, 10.0, "l1"),
            n(tau_vector_q),
            n(tau_loop_q),
            "packed",
            tau_pate_loop,
        )


def run(scale, repeats):
    rng = np.random.default_rng(0)
    results = []
    for name, num_labels, agg, vector_q, loop_q, kind, loop in cases(scale):
        make = make_counts if kind == "counts" else make_packed_votes
        vector_data, loop_data = make(vector_q, num_labels, rng), make(loop_q, num_labels, rng)
        vector_qps = queries_per_second(lambda: agg(vector_data, rng), vector_q, repeats)
        loop_qps = queries_per_second(lambda: loop(agg, loop_data, rng), loop_q, repeats)
        results.append(
            {
                "aggregator": name,
                "aggregator_repr": agg.name,
                "num_labels": num_labels,
                "num_teachers": TEACHERS,
                "input": "vote counts int32 [Q, L]" if kind == "counts" else "packed per-teacher votes [Q, T, L/8]",
                "vectorised_queries": vector_q,
                "loop_queries": loop_q,
                "vectorised_qps": vector_qps,
                "loop_qps": loop_qps,
                "speedup": vector_qps / loop_qps,
            }
        )
        print(_row(results[-1]), flush=True)
    return results


def _row(r):
    return (
        f"{r['aggregator']:<38} {r['num_labels']:>5} {r['vectorised_qps']:>14,.0f} {r['loop_qps']:>12,.0f} "
        f"{r['speedup']:>8.1f}x"
    )


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--json", metavar="PATH", help="also write the figures as JSON to PATH")
    parser.add_argument(
        "--scale", type=float, default=1.0, help="multiply every query count (e.g. 0.05 for a smoke run)"
    )
    parser.add_argument("--repeats", type=int, default=5, help="timed calls per figure; the best is kept (default 5)")
    args = parser.parse_args(argv)

    started = time.time()
    record = header("benchmarks/mechanisms.py", started)
    machine, load_before = record["machine"], record["load_average_before"]
    print(
        f"{machine['cpu']} ({machine['logical_cpus']} logical CPUs), "
        f"Python {machine['python']}, numpy {machine['numpy']}"
    )
    print(f"load average before: {load_before}; T = {TEACHERS} teachers; queries/second, best of {args.repeats}\n")
    print(f"{'aggregator':<38} {'L':>5} {'vectorised q/s':>14} {'loop q/s':>12} {'speedup':>9}")
    results = run(args.scale, args.repeats)
    load_after = list(os.getloadavg())

    met = []
    for r in results:
        if r["aggregator"].startswith("StableTopK") and r["num_labels"] == 40:
            ok = r["vectorised_qps"] >= TARGET_QPS and r["speedup"] >= TARGET_RATIO
            met.append(ok)
            print(
                f"target (>= {TARGET_QPS:,.0f} q/s and >= {TARGET_RATIO:.0f}x) {'met' if ok else 'NOT met'}: "
                f"{r['aggregator']} at L = 40"
            )
    print(f"load average after: {load_after}; {time.time() - started:.0f} s")
    if args.json:
        write_json(
            args.json,
            {
                **record,
                "load_average_after": load_after,
                "repeats": args.repeats,
                "scale": args.scale,
                "targets": {
                    "stable_topk_L40_qps": TARGET_QPS,
                    "stable_topk_L40_speedup": TARGET_RATIO,
                    "met": all(met),
                },
                "results": results,
            },
        )
        print(f"wrote {args.json}")


if __name__ == "__main__":
    main()
