"""The shared Poisson sampler (Private-kNN's subsamples, DP-SGD's batches): the rate it realises, exactly, against
counting with exact rationals, and its kept fractions against that rate (Monte Carlo, seeded)."""

from __future__ import annotations

import math
from fractions import Fraction

import pytest
import torch

from pate.mechanisms.poisson import SAMPLE_BITS, poisson_subsample, realised_sampling_rate


@pytest.mark.parametrize("rate", [0.1, 0.3, 1e-9, 1e-300, 0.5, 1.0])
def test_the_priced_rate_is_the_least_multiple_of_two_to_the_minus_53_at_or_above_gamma(rate):
    """The sampler keeps a record iff a uniform integer in [0, 2^53) is below ceil(gamma 2^53): the realised rate,
    by counting, is ceil(gamma 2^53) / 2^53 (exact rationals here, not floats), never below gamma."""
    exact = Fraction(math.ceil(Fraction(rate) * 2**SAMPLE_BITS), 2**SAMPLE_BITS)
    assert Fraction(realised_sampling_rate(rate)) == exact >= Fraction(rate)
    assert exact - Fraction(rate) < Fraction(1, 2**SAMPLE_BITS)


def test_a_tiny_rate_keeps_records_at_the_rate_priced_not_at_a_float32_grid():
    """gamma = 1e-10 is priced at about 1e-10. A float32 uniform compared with gamma (the first implementation)
    keeps a record with probability 2^-24 = 6.0e-8 instead: about 6 of 10^8 draws, where the priced rate expects
    0.01. Seeded: at most one kept record of 10^8 (a float32 sampler passes this with probability 1.7%)."""
    generator = torch.Generator().manual_seed(0)
    kept = sum(int(poisson_subsample((10_000_000,), 1e-10, generator).sum()) for _ in range(10))
    assert kept <= 1


@pytest.mark.parametrize("rate", [0.1, 0.3])
def test_the_subsample_keeps_each_record_at_the_rate(rate):
    """Monte Carlo, seeded: 2 x 10^6 inclusions, the kept fraction within 5 standard errors of gamma."""
    kept = poisson_subsample((2_000_000,), rate, torch.Generator().manual_seed(1)).double().mean().item()
    assert abs(kept - rate) <= 5 * math.sqrt(rate * (1 - rate) / 2_000_000)
