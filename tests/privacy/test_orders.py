"""The default order grid: contents, density, immutability."""

import numpy as np
import pytest
from dp_accounting.rdp import rdp_privacy_accountant

from pate.privacy import DEFAULT_ORDERS


def test_includes_every_dp_accounting_default_order_exactly():
    reference = np.asarray(rdp_privacy_accountant.DEFAULT_RDP_ORDERS, dtype=np.float64)
    assert np.all(np.isin(reference, DEFAULT_ORDERS))


def test_sorted_float64_above_one_and_reaching_far():
    assert DEFAULT_ORDERS.dtype == np.float64 and DEFAULT_ORDERS.ndim == 1
    assert np.all(np.diff(DEFAULT_ORDERS) > 0)
    assert DEFAULT_ORDERS[0] == pytest.approx(1.01) and np.all(DEFAULT_ORDERS > 1)
    assert DEFAULT_ORDERS[-1] >= 1e4


def test_dense_enough_for_the_documented_grid_error():
    """Consecutive (alpha - 1) differ by a factor <= 1.1 from order 1.1 on (orders.py's error bound)."""
    beta = DEFAULT_ORDERS - 1
    ratios = beta[1:] / beta[:-1]
    assert ratios[DEFAULT_ORDERS[:-1] >= 1.1].max() <= 1.1 + 1e-12


def test_read_only():
    with pytest.raises(ValueError):
        DEFAULT_ORDERS[0] = 2.0
