"""Propose-test-release on the chosen gap (Zhu & Wang 2022, Algorithms 4 and 5, Lemma 18, Corollary 19).

Given the gap q = q_k at the chosen k and the relation's gap sensitivity s (``gap_sensitivity``: 2
replace, 1 add_remove; the paper's "1" is s for its add_remove relation), release a noisy lower bound

    q_hat = max(s, q) + Z - margin

and answer (release the top-k set without noise) iff q_hat > s.

* ``"gaussian"`` (PTR-Gaussian, Algorithm 4): Z ~ N(0, sigma^2), margin = sigma sqrt(2 log(1/delta_t)).
  q_hat is a Gaussian mechanism on max(s, q), which has sensitivity s (max with a constant is
  1-Lipschitz): eps(alpha) = alpha s^2 / (2 sigma^2) (``gaussian_rdp``).
* ``"laplace"`` (PTR-Laplace, Algorithm 5): Z ~ Lap(b) with b = s / eps, margin = b log(1/delta_t).
  q_hat is eps-DP; its exact RDP curve is ``laplace_rdp(alpha, b, s)`` (<= eps at every order).
  Algorithm 5 writes q instead of max(s, q); taking the max changes nothing for q > s and makes the
  answer probability for q <= s exactly the tail bound below.

Validity (Lemma 18). The top-k set is the same on neighbouring histograms whenever q_k > s (Lemma 10
for s = 1; for replace every count moves by <= 1 either way, so q_k > 2 keeps the sets apart), so the
set itself only leaks on pairs with q_k <= s on both sides. There the test answers only if
Z > margin, with probability Pr[N(0,1) > sqrt(2 log(1/delta_t))] <= delta_t (Gaussian, Chernoff bound
exp(-t^2/2)) or (1/2) delta_t (Laplace tail). Hence the whole release is delta_t-approximately
(alpha, eps(alpha))-RDP with the curve of q_hat: ``delta_per_query = delta_t``.

Utility (Theorem 11 for the Gaussian test, Theorem 20 for both): if q >= s + 2 margin the answer comes
with probability >= 1 - delta_t (``reliable_gap``).
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass

import numpy as np

from pate.mechanisms.noise import noise_parameter, sample_noise
from pate.privacy import checks
from pate.privacy.accountant import PricedByEvent
from pate.privacy.events import ApproximateEvent, gaussian_event, laplace_event
from pate.privacy.sensitivity import NeighboringRelation, check_relation, gap_sensitivity

__all__ = ["TESTS", "GapTest", "check_test"]

TESTS = ("gaussian", "laplace")


def check_test(test) -> str:
    """``test`` if it is one of ``TESTS``; ``ValueError`` naming it otherwise."""
    if not isinstance(test, str) or test not in TESTS:
        raise ValueError(f"test must be one of {TESTS}, got {test!r}")
    return test


@dataclass(frozen=True)
class GapTest(PricedByEvent):
    """The PTR test on a gap: ``passes(gaps, rng)`` says, per query, whether the top-k set may be released.

    Arguments: ``test`` in {"gaussian", "laplace"}; ``delta_t`` in (0, 1); ``sigma`` (gaussian: standard
    deviation) or ``epsilon`` (laplace: pure-DP parameter of q_hat) -- the other must be left None;
    ``neighbors``. See the module docstring for the formulas and their sources.
    """

    test: str
    delta_t: float
    sigma: float | None = None
    epsilon: float | None = None
    neighbors: NeighboringRelation | str = "replace"

    def __post_init__(self):
        check_test(self.test)
        value = noise_parameter(
            self.test == "laplace", self.sigma, self.epsilon, "sigma", "epsilon", f"test={self.test!r}"
        )
        checks.set_fields(self, **{"epsilon" if self.test == "laplace" else "sigma": value})
        checks.set_fields(
            self,
            delta_t=checks.open_unit("delta_t", self.delta_t),
            neighbors=check_relation(self.neighbors),
        )

    # ------------------------------------------------------------------ facts
    @property
    def sensitivity(self) -> float:
        """Gap sensitivity s of the relation (``pate.privacy.gap_sensitivity``)."""
        return gap_sensitivity(self.neighbors)

    @property
    def noise_scale(self) -> float:
        """sigma (Gaussian) or b = s / eps (Laplace)."""
        return self.sigma if self.test == "gaussian" else self.sensitivity / self.epsilon

    @property
    def margin(self) -> float:
        """How far q_hat is shifted down: sigma sqrt(2 log(1/delta_t)) or b log(1/delta_t)."""
        log_inverse_delta = math.log(1.0 / self.delta_t)
        if self.test == "gaussian":
            return self.sigma * math.sqrt(2.0 * log_inverse_delta)
        return self.noise_scale * log_inverse_delta

    @property
    def reliable_gap(self) -> float:
        """Gap above which the test passes with probability >= 1 - delta_t: s + 2 * margin (Theorems 11, 20)."""
        return self.sensitivity + 2.0 * self.margin

    @property
    def name(self) -> str:
        parameter = f"sigma={self.sigma:g}" if self.test == "gaussian" else f"eps={self.epsilon:g}"
        return f"GapTest({self.test}, {parameter}, delta_t={self.delta_t:g}, neighbors={self.neighbors})"

    def noise_parameters(self) -> dict[str, float]:
        return {"sigma": self.sigma} if self.test == "gaussian" else {"epsilon": self.epsilon}

    def scale_noise(self, multiplier: float) -> "GapTest":
        """The same test with its noise scale multiplied by ``multiplier`` (epsilon divided by it)."""
        multiplier = checks.positive("multiplier", multiplier)
        if self.test == "gaussian":
            return dataclasses.replace(self, sigma=self.sigma * multiplier)
        return dataclasses.replace(self, epsilon=self.epsilon / multiplier)

    # ------------------------------------------------------------------- cost
    @property
    def dp_event(self) -> ApproximateEvent:
        """One query: q_hat's Gaussian (alpha s^2 / (2 sigma^2)) or Laplace (scale s / eps) release, delta_t-approximate
        (Lemma 18)."""
        noisy_bound = (
            gaussian_event(self.sigma, self.sensitivity)
            if self.test == "gaussian"
            else laplace_event(self.noise_scale, self.sensitivity)
        )
        return ApproximateEvent(noisy_bound, self.delta_t)

    # ------------------------------------------------------------ mechanism
    def draw_noise(self, shape, rng: np.random.Generator) -> np.ndarray:
        """The noise Z of ``shape`` queries (float64, already scaled)."""
        return sample_noise(self.test, self.noise_scale, shape, rng)

    def lower_bound(self, gaps, noise: np.ndarray) -> np.ndarray:
        """q_hat = max(s, q) + Z - margin, float64, one per entry of ``gaps``.

        ``noise`` from ``draw_noise`` (overwritten).
        """
        bound = noise
        bound += np.maximum(gaps, self.sensitivity)
        bound -= self.margin
        return bound

    def passes_given_noise(self, gaps, noise: np.ndarray) -> np.ndarray:
        """bool, shape of ``gaps``: q_hat > s, with the noise drawn beforehand."""
        return self.lower_bound(gaps, noise) > self.sensitivity

    def passes(self, gaps, rng: np.random.Generator) -> np.ndarray:
        """bool, shape of ``gaps``: q_hat > s."""
        gaps = np.asarray(gaps)
        return self.passes_given_noise(gaps, self.draw_noise(gaps.shape, rng))
