"""Fixture sweep directories in Hydra's multirun layout, built programmatically (no training)."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any, Callable

import pytest
import yaml

from pate.privacy.unit import privacy_unit

METHODS = {
    "stable_topk_paper": "StableTopK(selection=gaussian, test=gaussian, neighbors={relation})",
    "gaussian_pate": "GaussianPATE(sigma=calibrated, neighbors={relation})",
}
# student accuracy per (method, target epsilon) for seed 0; seed 1 adds 0.002. The true-labels student
# reaches 0.884 (seed 0) and 0.886 (seed 1): threshold 0.97 x 0.885 = 0.85845.
ACCURACY = {
    ("stable_topk_paper", 1.0): 0.840,
    ("stable_topk_paper", 4.0): 0.870,
    ("gaussian_pate", 1.0): 0.820,
    ("gaussian_pate", 4.0): 0.850,
}


def make_metrics(
    method: str,
    target: float | None,
    seed: int,
    relation: str = "replace",
    delta: float = 1e-6,
    epsilon: float | None = None,
    accuracy: float | None = None,
) -> dict[str, Any]:
    """A metrics.json following the pipeline's schema; epsilon defaults to the target."""
    acc = ACCURACY.get((method, target), 0.83) + 0.002 * seed if accuracy is None else accuracy
    eps = target if epsilon is None else epsilon
    top_k = method == "stable_topk_paper"
    answered = min(600, round(600 * ((0.55 if top_k else 0.45) + 0.08 * eps)) + 5 * seed)
    unit = privacy_unit("teacher", relation)  # both fixture methods are PATE aggregators
    return {
        "method": method,
        "aggregator": METHODS[method].format(relation=relation),
        "private": True,
        "neighbors": relation,
        "delta": delta,
        "privacy_unit": unit.neighbour,
        "record_level": unit.record_level,
        "epsilon": eps,
        "epsilon_order": 14.0,
        "target_epsilon": target,
        "noise": {"sigma_select": 41.2 / eps, "sigma_test": 49.4 / eps} if top_k else {"sigma": 30.0 / eps},
        "noise_multiplier": 0.82 if target is not None else None,
        "seed": seed,
        "queries": 600,
        "answered": answered,
        "answered_fraction": answered / 600,
        "mean_k": 6.9 + 0.1 * seed if top_k else None,
        "label_f1": (0.60 if top_k else 0.55) + 0.02 * eps + 0.01 * seed,
        "label_accuracy": 0.88,
        "student_accuracy": acc,
        "student_f1": acc - 0.3,
        "teacher_accuracy": 0.84,
        "majority_class_accuracy": 0.80,
        "num_teachers": 20,
        "num_labels": 40,
        "data": "synthetic",
        "reference": {
            "majority_vote": {"label_f1": 0.78 + 0.01 * seed, "student_accuracy": 0.875, "student_f1": 0.58},
            "true_labels": {"label_f1": 1.0, "student_accuracy": 0.884 + 0.002 * seed, "student_f1": 0.61},
        },
        "versions": {"pate": "0.1.0", "torch": "2.14.1", "python": "3.11.7", "git": "abc1234"},
        "artifacts": {"teachers": "3f9c", "votes": "a1b2", "aggregate": f"{method}-{target}-{seed}"},
    }


def write_job(sweep: Path, job: str, overrides: list[str], metrics: dict[str, Any] | None) -> Path:
    """One job directory; metrics=None makes a failed job (no metrics.json)."""
    job_dir = sweep / job
    (job_dir / ".hydra").mkdir(parents=True)
    config = {
        "seed": 0,
        "task_name": "train",
        "neighbors": "replace",
        "delta": 1e-6,
        "target_epsilon": None,
        "aggregator": {"_target_": "pate.aggregators.StableTopK", "selection": "gaussian"},
        "paths": {"output_dir": "${hydra:runtime.output_dir}"},
    }
    for override in overrides:
        key, value = override.split("=", 1)
        if key == "aggregator":
            config["aggregator"] = {"_target_": f"pate.aggregators.{value}", "neighbors": "${neighbors}"}
        else:
            config[key] = yaml.safe_load(value)
    (job_dir / ".hydra" / "config.yaml").write_text(yaml.safe_dump(config, sort_keys=False))
    (job_dir / ".hydra" / "overrides.yaml").write_text(yaml.safe_dump(overrides))
    (job_dir / ".hydra" / "hydra.yaml").write_text(yaml.safe_dump({"hydra": {"job": {"num": int(job)}}}))
    if metrics is not None:
        (job_dir / "metrics.json").write_text(json.dumps(metrics, indent=2))
    return job_dir


def build_sweep(
    sweep: Path,
    relation: str = "replace",
    epsilons=(1.0, 4.0),
    seeds=(0, 1),
    methods=("stable_topk_paper", "gaussian_pate"),
    epsilon_of: Callable[[str, float, int], float] | None = None,
    failed: bool = True,
) -> Path:
    """methods x epsilons x seeds finished jobs, then one failed job; epsilon_of overrides achieved epsilons."""
    sweep.mkdir(parents=True)
    task = [
        f"aggregator={','.join(methods)}",
        f"target_epsilon={','.join(map(str, epsilons))}",
        f"seed={','.join(map(str, seeds))}",
        f"neighbors={relation}",
    ]
    (sweep / "multirun.yaml").write_text(
        yaml.safe_dump({"hydra": {"overrides": {"task": task}}, "seed": 0, "report": "accuracy_vs_epsilon"})
    )
    job = 0
    for method in methods:
        for eps in epsilons:
            for seed in seeds:
                achieved = eps if epsilon_of is None else epsilon_of(method, eps, seed)
                overrides = [f"aggregator={method}", f"target_epsilon={eps}", f"seed={seed}", f"neighbors={relation}"]
                write_job(
                    sweep, str(job), overrides, make_metrics(method, eps, seed, relation=relation, epsilon=achieved)
                )
                job += 1
    if failed:
        write_job(sweep, str(job), [f"aggregator={methods[0]}", "target_epsilon=8.0", "seed=0"], None)
    return sweep


@pytest.fixture
def sweep_dir(tmp_path: Path) -> Path:
    """The standard fixture: 2 methods x 2 target epsilons x 2 seeds, one failed job, exact calibration."""
    return build_sweep(tmp_path / "sweep")


@pytest.fixture
def sweep_factory() -> Callable[..., Path]:
    """build_sweep, for tests that need a variant of the standard sweep."""
    return build_sweep


@pytest.fixture
def job_factory() -> Callable[..., Path]:
    """(make_metrics, write_job), for tests that assemble a sweep job by job."""
    return make_metrics, write_job


@pytest.fixture
def subprocess_env() -> dict[str, str]:
    """The environment for a child Python: the repository root first on PYTHONPATH, so `pate` imports from
    this checkout whatever the child's working directory."""
    root = str(Path(__file__).resolve().parents[2])
    return {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [root, os.environ.get("PYTHONPATH")]))}
