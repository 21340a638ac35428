"""The default grid of Renyi-DP orders.

Epsilon is minimised over a finite grid, so the grid decides how close the reported epsilon gets to
the curve's continuous optimum. The grid is dense where optima of PATE-sized compositions land and
reaches far enough for near-pure-DP curves:

* every order of dp-accounting's default ``RdpAccountant`` grid (1.1..10.9 by 0.1, 11..63, 128, 256,
  512, 1024), so that results can be compared with it order by order;
* 1.01..1.99 by 0.01 (large-epsilon regime, optimum close to 1);
* 11..63.5 by 0.5;
* 150 geometrically spaced orders from 64 to 1e5 (ratio ~1.05 between neighbours), for small per-query
  costs composed few times and for pure-DP-like curves whose optimum runs off to infinity.

Grid error: if consecutive values of (alpha - 1) differ by a factor at most q around the optimum, the
classic-conversion epsilon of a linear curve rho * alpha, rho + 2 sqrt(rho log(1/delta)) in the
continuum, is overstated by a relative amount of at most (q^(1/4) - q^(-1/4))^2 / 2. Here q <= 1.1 for
every order >= 1.1 (relative error <= 1.2e-3); ``tests/privacy/test_conversion.py`` checks it.
"""

from __future__ import annotations

import numpy as np

__all__ = ["DEFAULT_ORDERS"]


def _build_default_orders() -> np.ndarray:
    # dp-accounting's defaults, generated with the same float arithmetic so that they are included exactly.
    dp_accounting_orders = np.concatenate(
        [1.0 + np.arange(1, 100) / 10.0, np.arange(11, 64), [128.0, 256.0, 512.0, 1024.0]]
    )
    extra = np.concatenate(
        [
            1.0 + np.arange(1, 100) / 100.0,
            np.arange(11.0, 64.0, 0.5),
            np.geomspace(64.0, 1e5, 150),
        ]
    )
    # Drop extra orders that duplicate a dp-accounting order up to rounding (e.g. 1 + 10/100 vs 1 + 1/10).
    near = np.isclose(extra[:, None], dp_accounting_orders[None, :], rtol=1e-9, atol=0).any(axis=1)
    orders = np.unique(np.concatenate([dp_accounting_orders, extra[~near]]).astype(np.float64))
    orders.setflags(write=False)
    return orders


DEFAULT_ORDERS: np.ndarray = _build_default_orders()
