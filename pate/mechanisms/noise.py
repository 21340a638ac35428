"""The noise every mechanism here adds, and the check of its parameter.

Noise is float64 on purpose. The privacy proofs assume continuous noise; a float sample is a discrete
approximation whose coarsest part is the far tail. A float32 Gumbel variate -log(E) from numpy's
ziggurat (about 2^-23 resolution in E) is truncated near 14 scale units with the mass beyond lumped
onto a few points, which is a probability of order 1e-6 per coordinate: not negligible next to the
deltas of a PATE run (1e-6 over hundreds of queries). In float64 the same effects sit below 1e-15.
(float32 normals would be accurate enough, but measured no faster here, so one dtype serves all.)
"""

from __future__ import annotations

import numpy as np

from pate.privacy import checks

__all__ = ["NOISES", "noise_parameter", "sample_noise"]

NOISES = ("gaussian", "laplace", "gumbel", "exponential")


def sample_noise(kind: str, scale: float, shape: int | tuple[int, ...], rng: np.random.Generator) -> np.ndarray:
    """i.i.d. float64 noise of ``shape``: N(0, scale^2), Laplace(0, scale), Gumbel(0, scale) or Exponential(scale).

    Laplace(scale) is sampled as scale * (E1 - E2) with E1, E2 ~ Exp(1) independent (the difference is
    exactly Laplace(0, 1)); one exponential fill is faster than ``Generator.laplace``. Gumbel(scale) is
    sampled as -scale * log(E) with E ~ Exp(1) (one logarithm per variate; E = 0, probability ~2^-53,
    gives +inf, the Gumbel's own upper tail, not an error).
    """
    shape = (shape,) if isinstance(shape, (int, np.integer)) else tuple(shape)
    if kind == "gaussian":
        noise = rng.standard_normal(shape)
    elif kind == "laplace":
        pairs = rng.standard_exponential((2, *shape))
        noise = np.subtract(pairs[0], pairs[1], out=pairs[0])
    elif kind == "exponential":
        noise = rng.standard_exponential(shape)
    elif kind == "gumbel":
        noise = rng.standard_exponential(shape)
        with np.errstate(divide="ignore"):
            np.log(noise, out=noise)
        scale = -scale
    else:
        raise ValueError(f"noise kind must be one of {NOISES}, got {kind!r}")
    noise *= scale
    return noise


def noise_parameter(takes_epsilon: bool, sigma, epsilon, sigma_name: str, epsilon_name: str, user: str) -> float:
    """Check that exactly the parameter ``user`` takes was given (> 0, finite) and return it.

    ``takes_epsilon`` says whether ``user`` (e.g. "selection='gumbel'") is parameterised by a pure-DP
    epsilon or by a noise scale sigma; the other one must be None. Errors name the arguments as the
    caller's signature spells them (``sigma_name``, ``epsilon_name``).
    """
    wanted, wanted_name, other, other_name = (
        (epsilon, epsilon_name, sigma, sigma_name) if takes_epsilon else (sigma, sigma_name, epsilon, epsilon_name)
    )
    if other is not None:
        raise ValueError(
            f"{other_name}={other!r} is not used by {user}, which takes {wanted_name}; leave {other_name} unset"
        )
    if wanted is None:
        raise ValueError(f"{wanted_name} is required by {user} (a finite number > 0), got None")
    return checks.positive(wanted_name, wanted)
