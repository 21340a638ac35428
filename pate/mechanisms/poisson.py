"""Poisson sampling at exactly the rate the ledger prices: the one sampler behind Private-kNN's per-query
subsamples and DP-SGD's batches.

Each record is kept independently with probability ``realised_sampling_rate(q)`` = ceil(q 2^53) / 2^53 >= q: a
uniform integer in [0, 2^53) (``torch.randint`` over a power-of-two range has no modulo bias) falls under
ceil(q 2^53). Both mechanisms price that rate, not q (``pate.privacy.sampled_gaussian_steps``; Mironov, Talwar & Zhang 2019
analyse exactly this sampling). A float32 uniform compared with q (the first implementation of each) keeps a record
with probability ceil(fl32(q) 2^24) / 2^24, up to 2^-24 more than the q the ledger priced: 60 times q at q = 1e-9,
and 3.7e-7 relative at DP-SGD's default q = 4096 / 120,510.
"""

from __future__ import annotations

import math

import torch

__all__ = ["SAMPLE_BITS", "poisson_subsample", "realised_sampling_rate"]

SAMPLE_BITS = 53  # a record's inclusion is decided by a uniform integer in [0, 2^53)


def _inclusion_threshold(sampling_rate: float) -> int:
    """ceil(q 2^53): a record is kept when its uniform integer in [0, 2^53) is below this (exact in float64, where
    multiplying by a power of two is exact)."""
    return math.ceil(sampling_rate * 2.0**SAMPLE_BITS)


def realised_sampling_rate(sampling_rate: float) -> float:
    """The probability with which ``poisson_subsample`` keeps a record: ceil(q 2^53) / 2^53, the least multiple of
    2^-53 at or above q; q itself when it is such a multiple (0.5, 0.25, 1). This, not q, is what is priced."""
    return _inclusion_threshold(sampling_rate) / 2.0**SAMPLE_BITS


def poisson_subsample(shape: tuple[int, ...], sampling_rate: float, generator: torch.Generator) -> torch.Tensor:
    """bool ``shape`` on the CPU: each entry True independently with probability
    ``realised_sampling_rate(sampling_rate)``, exactly."""
    return torch.randint(0, 2**SAMPLE_BITS, shape, generator=generator, dtype=torch.int64) < _inclusion_threshold(
        sampling_rate
    )
