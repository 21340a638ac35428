"""Binary voting end to end on the tiny data: the three epsilons of a run, a failed test that releases nothing,
and a confident selection whose missing labels reach the student as missing."""

from pathlib import Path

import numpy as np
import pytest

from pate.pipeline.runner import run


def test_binary_voting_reports_the_raw_data_dependent_epsilon_beside_the_guarantee(tiny_cfg, tmp_path):
    metrics = run(tiny_cfg("aggregator=binary_voting"), output_dir=tmp_path)
    assert metrics["epsilon"] == pytest.approx(200, rel=1e-3)  # calibrated data-independently: the guarantee
    assert metrics["epsilon_data_independent"] == pytest.approx(metrics["epsilon"], rel=1e-9)
    assert metrics["epsilon_data_dependent"] <= metrics["epsilon_data_independent"] * (1 + 1e-9)
    assert "DATA-DEPENDENT" in metrics["privacy_data_dependent"] and "replace" in metrics["privacy_data_dependent"]
    assert metrics["released_label_fraction"] == metrics["answered_fraction"] == 1.0


def test_a_failed_test_releases_nothing_and_the_epsilon_is_still_the_proposals(tiny_cfg, tmp_path):
    """Four teachers never lie far from a contentious histogram: the proposal's test fails, no label is released,
    no student is trained, and epsilon is the proposal's (a DP guarantee whatever the test says)."""
    metrics = run(tiny_cfg("aggregator=binary_voting_dd"), output_dir=tmp_path)
    assert metrics["data_dependent_test"]["passed"] is False
    assert metrics["answered"] == 0 and metrics["released_label_fraction"] == 0.0
    assert metrics["student_accuracy"] is None and metrics["label_f1"] is None
    assert metrics["epsilon"] == pytest.approx(200, rel=1e-3)


def test_a_confident_selection_releases_some_labels_and_the_student_sees_the_rest_as_missing(tiny_cfg, tmp_path):
    """A proposal no histogram can exceed (1e6 at order 2: each of the 1,600 labels costs at most the
    data-independent 2 / 0.5^2 = 8) passes; the screen leaves some labels out."""
    cfg = tiny_cfg(
        "aggregator=confident_binary_voting",
        "privacy.target_epsilon=null",
        "aggregator.sigma=0.5",
        "aggregator.screen_sigma=1.0",
        "aggregator.screen_threshold=0.9",
        "aggregator.order=2",
        "aggregator.test_sigma=0.5",
        "aggregator.rdp_budget=1e6",
    )
    metrics = run(cfg, output_dir=tmp_path)
    assert metrics["data_dependent_test"]["passed"] is True
    assert 0 < metrics["released_label_fraction"] < metrics["answered_fraction"]
    release = np.load(Path(cfg.paths.cache_dir) / "aggregate" / metrics["artifacts"]["aggregate"] / "aggregate.npz")
    assert not release["labels"][~release["released"]].any()
    assert np.array_equal(release["released"].any(axis=1), release["answered"])
    assert metrics["student_accuracy"] is not None and metrics["student_train_size"] == metrics["answered"]
    assert metrics["epsilon_data_dependent"] <= metrics["epsilon_data_independent"]
