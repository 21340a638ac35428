"""Argument checks shared by the privacy core, the mechanisms and the aggregators.

Every check raises ``ValueError`` naming the argument, the value and what was expected, before any
compute is spent; nothing is clipped or coerced silently (bools are refused where numbers are expected).
"""

from __future__ import annotations

import math
import numbers

import numpy as np


def set_fields(obj, **values) -> None:
    """Store the checked, normalised ``values`` in the frozen dataclass ``obj``: the one write to a frozen
    instance, called once from its ``__post_init__`` with each argument already passed through its check
    (``sigma=positive("sigma", self.sigma)``), so that every instance holds only valid values in one normal form."""
    for name, value in values.items():
        object.__setattr__(obj, name, value)


def _is_real(value) -> bool:
    return isinstance(value, numbers.Real) and not isinstance(value, (bool, np.bool_))


def _show(array: np.ndarray) -> str:
    """A short rendering of a possibly long array for error messages."""
    return np.array2string(array, threshold=10, edgeitems=3)


def positive(name: str, value) -> float:
    """A finite real number > 0."""
    if not _is_real(value) or not math.isfinite(value) or value <= 0:
        raise ValueError(f"{name} must be a finite number > 0, got {value!r}")
    return float(value)


def non_negative(name: str, value) -> float:
    """A finite real number >= 0."""
    if not _is_real(value) or not math.isfinite(value) or value < 0:
        raise ValueError(f"{name} must be a finite number >= 0, got {value!r}")
    return float(value)


def open_unit(name: str, value) -> float:
    """A real number in the open interval (0, 1), e.g. a target delta."""
    if not _is_real(value) or not 0 < value < 1:
        raise ValueError(f"{name} must lie in the open interval (0, 1), got {value!r}")
    return float(value)


def sampling_rate(name: str, value) -> float:
    """A probability in the half-open interval (0, 1]: a Poisson sampling rate (1 keeps every record)."""
    rate = positive(name, value)
    if rate > 1:
        raise ValueError(f"{name} must lie in (0, 1], got {value!r}")
    return rate


def non_negative_int(name: str, value) -> int:
    """An integer >= 0 (a float such as 3.0 is refused: counts are integers)."""
    if not isinstance(value, numbers.Integral) or isinstance(value, (bool, np.bool_)) or value < 0:
        raise ValueError(f"{name} must be an integer >= 0, got {value!r}")
    return int(value)


def positive_int(name: str, value) -> int:
    """An integer >= 1."""
    if not isinstance(value, numbers.Integral) or isinstance(value, (bool, np.bool_)) or value < 1:
        raise ValueError(f"{name} must be an integer >= 1, got {value!r}")
    return int(value)


def orders_array(orders, name: str = "orders") -> np.ndarray:
    """RDP orders as a float64 array of any shape, every entry finite and > 1."""
    array = np.asarray(orders, dtype=np.float64)
    if array.size == 0 or not np.all(np.isfinite(array)) or not np.all(array > 1):
        raise ValueError(f"{name} must be non-empty, finite and > 1 everywhere, got {_show(array)}")
    return array


def rdp_array(rdp, orders: np.ndarray, name: str = "rdp") -> np.ndarray:
    """An RDP curve matching ``orders``: float64, same shape, no NaN, >= 0 (+inf allowed)."""
    array = np.asarray(rdp, dtype=np.float64)
    if array.shape != orders.shape:
        raise ValueError(f"{name} must have the shape of orders {orders.shape}, got shape {array.shape}")
    if np.any(np.isnan(array)) or np.any(array < 0):
        raise ValueError(f"{name} must be >= 0 with no NaN (+inf allowed), got {_show(array)}")
    return array
