"""Accountants side by side: every method's noise calibrated by the RDP bound and by the tightest valid epsilon.

    python benchmarks/accountants.py --json benchmarks/results/accountants.json   # a few minutes

The tightest epsilon of a ledger is the smallest of its valid ones (``Ledger.get_epsilon(delta)``): the RDP bound,
the exact GDP profile where every query is a Gaussian mechanism, the PLD (dp-accounting, pessimistic
discretisation at 1e-4) where every event has one. For each method of the default comparison, under both
relations, this calibrates the noise to each target epsilon twice with ``pate.privacy.calibrate`` -- by RDP as
runs do today, and by the tightest epsilon (``accountant="tightest"``), each within 1e-4 relative below the
target -- and prices the RDP-calibrated noise by each accountant. The methods are the default configs: 600 queries
at delta 1e-6, 40 labels, 400 teachers (the aggregators); DP-SGD's Poisson sampling at q = 4096 / 120,510 (the
synthetic data's private split, conf/data/synthetic.yaml) for the steps of the epochs its probe recipe runs at each
target (conf/method/dp_sgd.yaml: 20 epochs, 589 steps, below epsilon 4 under replace and 2 under add_remove; 30
epochs, 883 steps, from there up); Private-kNN
with conf/method/private_knn.yaml's k, sigma and the sampling rate its recipe sets at each target (0.1 below
epsilon 8 under replace and 4 under add_remove, 0.3 from there: the rate and the noise's scale, not k, set the cost).
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
from pate.privacy import (
    Ledger,
    calibrate,
    calibrate_noise,  # noqa: E402
    privacy_unit,
    sampled_gaussian_steps,
)
from record import ROOT, header, write_json  # noqa: E402

TARGETS = (0.5, 1.0, 2.0, 8.0)
RELATIONS = ("replace", "add_remove")
AGGREGATORS = ("tau_pate", "gaussian_pate", "binary_voting", "stable_topk_gumbel", "stable_topk_paper")
QUERIES, DELTA, LABELS, TEACHERS = 600, 1e-6, 40, 400
PRIVATE_RECORDS = 120_510
RTOL = 1e-4


def _config(overrides: list[str]):
    with initialize_config_dir(config_dir=str(ROOT / "conf"), version_base="1.3"):
        return compose(config_name="train", overrides=overrides)


def aggregator(name: str, relation: str):
    """The default config of ``conf/aggregator/<name>.yaml`` under ``relation``."""
    cfg = _config([f"aggregator={name}", f"privacy.neighbors={relation}", f"data.num_labels={LABELS}"])
    return instantiate(cfg.aggregator, "aggregator")


def _recipe(recipes, target: float, relation: str) -> dict:
    """The settings the recipe list ``recipes`` sets at ``target`` under ``relation``: those of the last recipe (the
    list is increasing, as runs check) whose from_epsilon (one number, or one per relation) is at or below
    ``target``; none below the first."""

    def start(recipe) -> float:
        return recipe.from_epsilon if isinstance(recipe.from_epsilon, (int, float)) else recipe.from_epsilon[relation]

    reached = [recipe for recipe in recipes if start(recipe) <= target]
    return {key: value for key, value in reached[-1].items() if key != "from_epsilon"} if reached else {}


def private_knn(relation: str, target: float) -> PrivateKNN:
    """Private-kNN as conf/method/private_knn.yaml configures it at ``target`` (its recipe's k and sampling rate),
    under ``relation``."""
    method = _config(["method=private_knn"]).method
    settings = {"k": method.k, "sampling_rate": method.sampling_rate, **_recipe(method.recipes, target, relation)}
    return PrivateKNN(LABELS, settings["k"], settings["sampling_rate"], method.sigma, relation)


def dp_sgd_event(relation: str, target: float):
    """DP-SGD's cost at ``target`` as a function of its noise multiplier: conf/method/dp_sgd.yaml on the synthetic
    data, its epochs those of the probe recipe that ``target`` selects under ``relation``."""
    method = _config(["method=dp_sgd"]).method
    rate = method.expected_batch_size / PRIVATE_RECORDS
    steps = math.ceil(_recipe(method.probe_recipes, target, relation).get("epochs", method.epochs) / rate)
    return lambda multiplier: sampled_gaussian_steps(rate, multiplier, steps, relation)


def mechanism_row(method: str, relation: str, target: float, configured, noise: str) -> dict:
    """One (method, relation, target) of a configured mechanism, calibrated by each accountant
    (``calibrate_noise``); ``noise`` names the noise parameter reported (``noise_parameters()``'s key)."""
    by_rdp, _ = calibrate_noise(configured, target, DELTA, QUERIES, rtol=RTOL)
    by_tightest, _ = calibrate_noise(configured, target, DELTA, QUERIES, rtol=RTOL, accountant="tightest")
    return _row(
        method,
        relation,
        target,
        noise,
        by_rdp.noise_parameters()[noise],
        by_tightest.noise_parameters()[noise],
        Ledger().compose(by_rdp, count=QUERIES),
        Ledger().compose(by_tightest, count=QUERIES).get_epsilon(DELTA),
    )


def _alone(ledger: Ledger, accountant: str) -> float | None:
    """The epsilon by ``accountant`` alone, or None where the history has no such form (JSON null in the record)."""
    try:
        return ledger.get_epsilon(DELTA, accountant).epsilon
    except ValueError:  # DELTA is valid, so this is the accountant's missing form
        return None


def _row(method, relation, target, noise, rdp_noise, tight_noise, at_rdp_noise: Ledger, tightest) -> dict:
    contributor = "record" if method in ("private_knn", "dp_sgd") else "teacher"  # PATE's aggregators see votes
    return {
        "method": method,
        "neighbors": relation,
        "unit": privacy_unit(contributor, relation).text,
        "target_epsilon": target,
        "noise": noise,
        "rdp_noise": rdp_noise,
        "tightest_noise": tight_noise,
        "noise_saved": 1 - tight_noise / rdp_noise,
        "tightest_epsilon": tightest.epsilon,
        "accountant": tightest.accountant,
        "at_rdp_noise": {
            "rdp": at_rdp_noise.get_epsilon(DELTA, "rdp").epsilon,
            "gdp": _alone(at_rdp_noise, "gdp"),
            "pld": _alone(at_rdp_noise, "pld"),
        },
    }


def rows(progress: bool = True) -> list[dict]:
    """Every (method, relation, target) of the module docstring."""
    out = []
    for relation in RELATIONS:
        for name in AGGREGATORS:
            configured = aggregator(name, relation)
            first = next(iter(configured.noise_parameters()))  # sigma, or the selection's noise of StableTopK
            for target in TARGETS:
                out.append(mechanism_row(name, relation, target, configured, first))
                if progress:
                    print(
                        f"{relation:10s} {name:20s} epsilon {target:g}: noise saved {out[-1]['noise_saved']:.2%}",
                        flush=True,
                    )
        for target in TARGETS:
            out.append(mechanism_row("private_knn", relation, target, private_knn(relation, target), "sigma"))
        for target in TARGETS:
            event_of = dp_sgd_event(relation, target)
            by_rdp = calibrate(event_of, target, DELTA, rtol=RTOL, neighbors=relation)
            by_tightest = calibrate(event_of, target, DELTA, rtol=RTOL, neighbors=relation, accountant="tightest")
            out.append(
                _row(
                    "dp_sgd",
                    relation,
                    target,
                    "noise_multiplier",
                    by_rdp,
                    by_tightest,
                    Ledger().compose_event(event_of(by_rdp), neighbors=relation),
                    Ledger().compose_event(event_of(by_tightest), neighbors=relation).get_epsilon(DELTA),
                )
            )
        if progress:
            print(f"{relation:10s} private_knn, dp_sgd done", flush=True)
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--json", help="write the figures here (benchmarks/results/accountants.json)")
    args = parser.parse_args(argv)
    started = time.time()
    record = {
        **header("benchmarks/accountants.py", started),
        "queries": QUERIES,
        "delta": DELTA,
        "rtol": RTOL,
        "rows": rows(),
    }
    record["wall_s"] = time.time() - started
    if args.json:
        write_json(args.json, record)
    return 0


if __name__ == "__main__":
    sys.exit(main())
