"""Gaussian noisy threshold: label i is on iff its (possibly clipped) count plus N(0, sigma^2) exceeds a threshold.

This is the Gaussian mechanism on the whole count vector followed by post-processing, so its cost is
``gaussian_rdp(orders, sigma, Delta_2)`` with Delta_2 the L2 sensitivity of the vector that is noised
(Mironov 2017, Proposition 7); the aggregators take Delta_2 from ``pate.privacy.sensitivity``.
"""

from __future__ import annotations

import numpy as np

from pate.mechanisms.noise import sample_noise

__all__ = ["noisy_threshold"]


def noisy_threshold(values: np.ndarray, sigma: float, threshold: float, rng: np.random.Generator) -> np.ndarray:
    """bool, shape of ``values``: values + N(0, sigma^2) > threshold, independently per entry (float64 noise)."""
    noisy = sample_noise("gaussian", sigma, values.shape, rng)
    noisy += values
    return noisy > threshold
