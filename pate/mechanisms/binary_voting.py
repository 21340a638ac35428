"""Binary voting: each label of a query is its own two-class GNMax over the (yes, no) counts of the T teachers
(Papernot et al. 2018, Section 4.1, applied per label), optionally screened first by a noisy threshold on the
larger of the two counts (their Algorithm 1, Confident-GNMax, per label).

Vectorised over [Q, L] with one generator. The labels' costs: ``pate.privacy.binary_vote_l2_sensitivity`` (GNMax,
data-independent), ``count_l2_sensitivity`` (the screen: each label's larger count moves by at most 1 under
either relation), and the data-dependent analysis of ``pate.mechanisms.dd_release``.
"""

from __future__ import annotations

import numpy as np

from pate.mechanisms.noise import sample_noise

__all__ = ["binary_gnmax", "larger_counts", "screen_labels"]


def larger_counts(yes: np.ndarray, num_teachers: int) -> np.ndarray:
    """max(yes, T - yes): the count of each label's likelier answer."""
    return np.maximum(yes, num_teachers - yes)


def binary_gnmax(yes: np.ndarray, num_teachers: int, sigma: float, rng: np.random.Generator) -> np.ndarray:
    """bool, shape of ``yes``: yes + N(0, sigma^2) > (T - yes) + N(0, sigma^2), independently per entry."""
    noisy_yes = sample_noise("gaussian", sigma, yes.shape, rng) + yes
    noisy_no = sample_noise("gaussian", sigma, yes.shape, rng) + (num_teachers - yes)
    return noisy_yes > noisy_no


def screen_labels(
    yes: np.ndarray, num_teachers: int, sigma: float, threshold: float, rng: np.random.Generator
) -> np.ndarray:
    """bool, shape of ``yes``: max(yes, T - yes) + N(0, sigma^2) >= threshold (the label is confident enough to
    be released)."""
    noisy = sample_noise("gaussian", sigma, yes.shape, rng) + larger_counts(yes, num_teachers)
    return noisy >= threshold
