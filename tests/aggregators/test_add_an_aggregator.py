"""An aggregator added from outside the package through config alone (the class of examples/custom_aggregator.py and
a config file found by hydra.searchpath; no edit under pate/ or conf/) is calibrated, released, priced and reported
like the shipped ones."""

import math
from pathlib import Path

import numpy as np
import pytest

from examples.custom_aggregator import MajorityRandomizedResponse
from pate.aggregators import Aggregator
from pate.pipeline.runner import run
from pate.privacy import DEFAULT_ORDERS, epsilon_from_rdp, pure_dp_rdp
from tests.conftest import compose_config

SEARCHPATH = f"hydra.searchpath=[file://{Path(__file__).resolve().parent / 'conf'}]"


@pytest.mark.parametrize("relation", ["replace", "add_remove"])
def test_a_toy_aggregator_runs_end_to_end_calibrated(shared_root, tmp_path, relation):
    cfg = compose_config(
        [
            "debug=tiny",
            SEARCHPATH,
            "aggregator=majority_rr",
            f"privacy.neighbors={relation}",
            "privacy.target_epsilon=50",
        ],
        shared_root,
    )
    metrics = run(cfg, output_dir=tmp_path)
    # outside a Hydra run (compose) the method is named by the class; train.py names it by the config, majority_rr
    assert metrics["method"] == "MajorityRandomizedResponse" and metrics["aggregator"].startswith("MajorityRR(")
    per_label = metrics["noise"]["epsilon"]
    curve = 40 * metrics["queries"] * pure_dp_rdp(DEFAULT_ORDERS, per_label)  # L = 40 labels per query
    assert math.isclose(metrics["epsilon"], epsilon_from_rdp(DEFAULT_ORDERS, curve, 1e-6)[0], rel_tol=1e-12)
    assert 50 * (1 - 1e-3) <= metrics["epsilon"] <= 50
    assert metrics["answered"] == metrics["queries"] and metrics["neighbors"] == relation


def test_the_toy_aggregator_keeps_the_protocol_and_flips_at_the_stated_rate():
    aggregator = MajorityRandomizedResponse(num_labels=3, num_teachers=10, epsilon=1.0)
    assert isinstance(aggregator, Aggregator)
    votes = np.tile([[9, 1, 6]], (200_000, 1))
    released = aggregator(votes, np.random.default_rng(0)).labels
    # every bit flips with probability 1 / (1 + e): 0.2689; 5 standard errors at 200,000 draws is 0.005
    assert np.allclose(np.mean(released != [True, False, True], axis=0), 1 / (1 + math.e), atol=0.005)
