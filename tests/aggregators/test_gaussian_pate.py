"""GaussianPATE: per-label frequencies against Phi((c - T/2) / sigma), the RDP closed form, argument checks.
Monte Carlo tolerance: 5 binomial standard errors; seeds fixed."""

import math

import numpy as np
import pytest
import torch
from scipy import stats

from pate.aggregators import GaussianPATE
from pate.privacy import Ledger, calibrate_noise
from tests.mechanisms import closed_forms as cf


def test_label_frequencies_match_the_gaussian_threshold():
    draws, teachers, sigma = 50_000, 100, 20.0
    counts = np.array([0, 30, 50, 51, 70, 100])
    res = GaussianPATE(6, teachers, sigma)(np.tile(counts, (draws, 1)), np.random.default_rng(0))
    expected = stats.norm.sf((teachers / 2 - counts) / sigma)
    tolerance = 5 * np.sqrt(expected * (1 - expected) / draws) + 1e-12
    assert np.all(np.abs(res.labels.mean(axis=0) - expected) <= tolerance)
    assert res.answered.all()
    np.testing.assert_array_equal(res.k, res.labels.sum(axis=1))


@pytest.mark.parametrize("relation", ["replace", "add_remove"])
def test_rdp_closed_form_and_ledger(relation):
    agg = GaussianPATE(40, 800, 380.0, relation)
    np.testing.assert_allclose(agg.rdp(cf.ORDERS), cf.ORDERS * 40 / (2 * 380.0**2), rtol=1e-12)
    assert agg.delta_per_query == 0.0
    ledger = Ledger().compose(agg, 600)
    np.testing.assert_allclose(ledger.rdp, 600 * agg.rdp(ledger.orders), rtol=1e-12)


def test_scale_noise_calibration_and_description():
    agg = GaussianPATE(40, 800, 100.0)
    assert agg.scale_noise(3.0).sigma == 300.0 and agg.noise_parameters() == {"sigma": 100.0}
    assert agg.name == "GaussianPATE(sigma=100, neighbors=replace)"
    calibrated, _ = calibrate_noise(agg, target_epsilon=2.0, delta=1e-6, count=600)
    assert Ledger().compose(calibrated, 600).get_epsilon(1e-6, "rdp").epsilon <= 2.0


def test_torch_input_gives_the_numpy_result():
    votes = np.random.default_rng(1).integers(0, 11, size=(50, 4))
    agg = GaussianPATE(4, 10, 2.0)
    np.testing.assert_array_equal(
        agg(votes, np.random.default_rng(2)).labels, agg(torch.from_numpy(votes), np.random.default_rng(2)).labels
    )


@pytest.mark.parametrize(
    "args, match",
    [
        ((0, 10, 1.0), r"num_labels must be an integer >= 1, got 0"),
        ((4, 0, 1.0), r"num_teachers must be an integer >= 1, got 0"),
        ((4, 10, 0.0), r"sigma must be a finite number > 0, got 0.0"),
        ((4, 10, -1.0), r"sigma must be a finite number > 0, got -1.0"),
        ((4, 10, math.nan), r"sigma must be a finite number > 0, got nan"),
        ((4, 10, 1.0, "neighbours"), r"neighbors must be one of .*got 'neighbours'"),
    ],
)
def test_arguments_are_checked(args, match):
    with pytest.raises(ValueError, match=match):
        GaussianPATE(*args)


@pytest.mark.parametrize(
    "votes, match",
    [
        (np.array([[1, -1, 3, 0]]), r"votes must be counts >= 0, got negative value -1"),
        (np.array([[1, 0.5, 3, 0]]), r"votes must be whole-number counts, got fractional value 0.5"),
        (np.array([[1, 12, 3, 0]]), r"votes must be counts <= num_teachers=10, got value 12"),
        (np.array([1, 2, 3, 0]), r"votes must be vote counts of shape \[queries, num_labels=4\], got shape \(4,\)"),
    ],
)
def test_bad_votes_are_refused(votes, match):
    with pytest.raises(ValueError, match=match):
        GaussianPATE(4, 10, 1.0)(votes, np.random.default_rng(0))
