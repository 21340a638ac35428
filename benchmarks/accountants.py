"""Accountants side by side: every method's noise calibrated by the RDP bound and by the tightest valid epsilon.

    python benchmarks/accountants.py --json benchmarks/results/accountants.json   # about five minutes

The tightest epsilon of a ledger is the smallest of its valid ones (``Ledger.epsilon_tightest``): the RDP bound,
the exact GDP profile where every query is a Gaussian mechanism, the PLD (dp-accounting, pessimistic
discretisation at 1e-4) where every event has one. For each method of the default comparison, under both
relations, this calibrates the noise to each target epsilon twice -- by RDP as runs do today, and by the tightest
epsilon (bisection on the same noise multiplier, to 1e-4 relative) -- and prices the RDP-calibrated noise by each
accountant. The methods are the default configs: 600 queries at delta 1e-6, 40 labels, 400 teachers (the
aggregators); DP-SGD's Poisson sampling at q = 4096 / 120,510 for 589 steps (the synthetic data's private split,
conf/data/synthetic.yaml); Private-kNN with k = 200 and rate 0.1 (conf/method/private_knn.yaml).
"""

from __future__ import annotations

import argparse
import math
import sys
import time
from pathlib import Path

from hydra import compose, initialize_config_dir

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # run from a checkout without installing

from pate.mechanisms import PrivateKNN  # noqa: E402
from pate.pipeline import instantiate  # noqa: E402
from pate.privacy import Ledger, PoissonSampledGaussianEvent, calibrate, calibrate_noise  # noqa: E402
from record import ROOT, header, write_json  # noqa: E402

TARGETS = (0.5, 1.0, 2.0, 8.0)
RELATIONS = ("replace", "add_remove")
AGGREGATORS = ("tau_pate", "gaussian_pate", "binary_voting", "stable_topk_gumbel", "stable_topk_paper")
QUERIES, DELTA, LABELS, TEACHERS = 600, 1e-6, 40, 400
PRIVATE_RECORDS, BATCH, EPOCHS = 120_510, 4096, 20
RTOL = 1e-4


def aggregator(name: str, relation: str):
    """The default config of ``conf/aggregator/<name>.yaml`` under ``relation``."""
    with initialize_config_dir(config_dir=str(ROOT / "conf"), version_base="1.3"):
        cfg = compose(config_name="train", overrides=[f"aggregator={name}", f"privacy.neighbors={relation}",
                                                      f"data.num_labels={LABELS}"])
    return instantiate(cfg.aggregator, "aggregator")


def dp_sgd_event(relation: str):
    """DP-SGD's cost as a function of its noise multiplier (conf/method/dp_sgd.yaml on the synthetic data)."""
    rate = BATCH / PRIVATE_RECORDS
    steps = math.ceil(EPOCHS / rate)
    return lambda multiplier: PoissonSampledGaussianEvent(rate, multiplier, steps, relation)


def least(epsilon_at, target: float, high: float) -> float:
    """The least x in (0, high] with ``epsilon_at(x) <= target`` (decreasing in x; ``high`` meets it), by bisection
    on log x to ``RTOL``."""
    low = high / 2
    while epsilon_at(low) <= target:
        high, low = low, low / 2
    while high / low > 1 + RTOL:
        middle = math.sqrt(low * high)
        low, high = (low, middle) if epsilon_at(middle) <= target else (middle, high)
    return high


def scaled_row(method: str, relation: str, target: float, calibrated, noise: str) -> dict:
    """One (method, relation, target): ``calibrated`` is the RDP-calibrated mechanism (``scale_noise`` scales its
    noise); the tightest calibration scales it down by the least factor that still meets the target."""
    def ledger(factor: float) -> Ledger:
        return Ledger().compose(calibrated.scale_noise(factor), count=QUERIES)

    factor = least(lambda f: ledger(f).epsilon_tightest(DELTA)[0], target, 1.0)
    tight = ledger(factor)
    return _row(method, relation, target, noise, calibrated.noise_parameters()[noise],
                calibrated.scale_noise(factor).noise_parameters()[noise], ledger(1.0), tight.epsilon_tightest(DELTA))


def _row(method, relation, target, noise, rdp_noise, tight_noise, at_rdp_noise: Ledger, tightest) -> dict:
    return {"method": method, "neighbors": relation, "target_epsilon": target, "noise": noise, "rdp_noise": rdp_noise,
            "tightest_noise": tight_noise, "noise_saved": 1 - tight_noise / rdp_noise,
            "tightest_epsilon": tightest[0], "accountant": tightest[1],
            "at_rdp_noise": {"rdp": at_rdp_noise.epsilon(DELTA)[0], "gdp": at_rdp_noise.epsilon_gdp(DELTA),
                             "pld": at_rdp_noise.epsilon_pld(DELTA)}}


def rows(progress: bool = True) -> list[dict]:
    """Every (method, relation, target) of the module docstring."""
    out = []
    for relation in RELATIONS:
        for name in AGGREGATORS:
            configured = aggregator(name, relation)
            first = next(iter(configured.noise_parameters()))  # sigma, or the selection's noise of StableTopK
            for target in TARGETS:
                calibrated, _ = configured.calibrated(target, DELTA, QUERIES)
                out.append(scaled_row(name, relation, target, calibrated, first))
                if progress:
                    print(f"{relation:10s} {name:20s} epsilon {target:g}: noise saved {out[-1]['noise_saved']:.2%}",
                          flush=True)
        knn = PrivateKNN(LABELS, 200, 0.1, 20.0, relation)
        for target in TARGETS:
            calibrated, _ = calibrate_noise(knn, target, DELTA, QUERIES)
            out.append(scaled_row("private_knn", relation, target, calibrated, "sigma"))
        event_of = dp_sgd_event(relation)
        for target in TARGETS:
            by_rdp = calibrate(event_of, target, DELTA, neighbors=relation)
            by_tightest = least(lambda m: Ledger().compose_event(event_of(m), neighbors=relation)
                                .epsilon_tightest(DELTA)[0], target, by_rdp)
            out.append(_row("dp_sgd", relation, target, "noise_multiplier", by_rdp, by_tightest,
                            Ledger().compose_event(event_of(by_rdp), neighbors=relation),
                            Ledger().compose_event(event_of(by_tightest), neighbors=relation)
                            .epsilon_tightest(DELTA)))
        if progress:
            print(f"{relation:10s} private_knn, dp_sgd done", flush=True)
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--json", help="write the figures here (benchmarks/results/accountants.json)")
    args = parser.parse_args(argv)
    started = time.time()
    record = {**header("benchmarks/accountants.py", started), "queries": QUERIES, "delta": DELTA,
              "rtol": RTOL, "rows": rows()}
    record["wall_s"] = time.time() - started
    if args.json:
        write_json(args.json, record)
    return 0


if __name__ == "__main__":
    sys.exit(main())
