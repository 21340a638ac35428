"""Exact output laws of one query, read off each mechanism's code: what is compared with what, and the noise scale
the code draws with (its ``sigma``, ``noise_scale``, ``margin``, ``threshold``), never its sensitivity function.
The deterministic parts (sorting, gaps, clipping, the released set, kNN votes, the distance to a budget) are the
code's own functions, called on the input. A law maps each output to its log-probability.

* Per-label Gaussian comparisons (GaussianPATE, TauPATE, BinaryVoting, Private-kNN's release): label l is on
  with probability Phi(m_l / s), m_l the margin the code compares with 0 and s the standard deviation of the
  noise in that comparison; labels are independent, so a label vector's probability is the product.
* Report-noisy-max (StableTopK's selection): Pr[argmax = j] = int f(z - u_j) prod_{i != j} F(z - u_i) dz, by a
  rectangle rule in log space on a grid of step scale / 200 (Laplace: / 2000) spanning 60 scales past the
  scores; its error is below 1e-7 (test_yardsticks.py).
* PTR (GapTest): pass iff Z > s + margin - max(q, s): a survival function.
"""

from __future__ import annotations

import dataclasses
import functools
import itertools
import math
from collections.abc import Callable

import numpy as np
import torch
from scipy import stats
from scipy.special import log_ndtr, logsumexp, xlogy

from pate.aggregators.binary_voting import _label_scale
from pate.aggregators.tau_pate import clipped_counts
from pate.mechanisms import count_gaps, sorted_padded_counts, subsampled_knn_votes, top_k_labels
from pate.mechanisms.dd_release import cost_table, costs_within, distance_to_budget

__all__ = [
    "argmax_log_probs",
    "binary_voting_law",
    "data_dependent_binary_voting_law",
    "gap_selection_law",
    "gap_test_law",
    "gaussian_pate_law",
    "knn_law",
    "knn_votes",
    "label_log_probs",
    "label_product_law",
    "pass_log_prob",
    "selection_log_probs",
    "stable_topk_law",
    "tau_pate_law",
]

_NOISE = {"gaussian": stats.norm, "laplace": stats.laplace, "gumbel": stats.gumbel_r}


def _bits(num_labels: int) -> np.ndarray:
    """bool [2^L, L]: every label vector."""
    return np.array(list(itertools.product((False, True), repeat=num_labels)))


def label_log_probs(margin: np.ndarray, scale: float) -> np.ndarray:
    """[..., 2^L]: log Pr[label vector] for independent labels with Pr[on_l] = Phi(margin_l / scale)."""
    z = np.asarray(margin, np.float64)[..., None, :] / scale
    bits = _bits(z.shape[-1])
    return np.where(bits, log_ndtr(z), log_ndtr(-z)).sum(axis=-1)


def label_product_law(margin: np.ndarray, scale: float) -> dict:
    """The law of independent per-label comparisons ``margin + N(0, scale^2) > 0``."""
    return dict(zip(map(tuple, _bits(len(margin)).astype(int)), label_log_probs(margin, scale)))


def gaussian_pate_law(agg, h: np.ndarray) -> dict:
    """GaussianPATE: noisy_threshold(h, sigma, T / 2), i.e. h + N(0, sigma^2) > T / 2."""
    return label_product_law(h - agg.threshold, agg.sigma)


def binary_voting_law(agg, h: np.ndarray) -> dict:
    """BinaryVoting: binary_gnmax draws N1, N2 ~ N(0, sigma^2) and compares h + N1 > (T - h) + N2, i.e.
    (2h - T) + (N1 - N2) > 0 with N1 - N2 ~ N(0, 2 sigma^2): T is the configured constant."""
    return label_product_law(2.0 * h - agg.num_teachers, math.sqrt(2.0) * agg.sigma)


def tau_pate_law(agg, rows: tuple) -> dict:
    """TauPATE on per-teacher vote rows (a multiset of T rows, T = len(rows)): the code's clipped counts c, then
    c + N(0, sigma^2) > T / 2, the threshold of the aggregator built for that ensemble (``agg`` with T teachers)."""
    bits = np.array(rows, dtype=bool)[None]
    ensemble = dataclasses.replace(agg, num_teachers=len(rows))
    return label_product_law(clipped_counts(bits, agg.tau, agg.norm)[0] - ensemble.threshold, agg.sigma)


def knn_law(mechanism, records: tuple, votes_of: Callable) -> dict:
    """Private-kNN, one query on a record set (records: (features, labels) tuples in index order): the Poisson
    subsample keeps each record with probability ``sampling_rate`` (the code: uniform < rate), the votes of a
    subsample S are the code's ``votes_of(S)``, and the release is votes + N(0, sigma^2) > k / 2. A mixture over
    the 2^n subsamples, weighted rate^|S| (1 - rate)^(n - |S|)."""
    n, rate = len(records), mechanism.sampling_rate
    masks = np.array(list(itertools.product((False, True), repeat=n)), dtype=bool).reshape(2**n, n)
    kept = masks.sum(axis=1)
    log_weight = xlogy(kept, rate) + xlogy(n - kept, 1.0 - rate)
    votes = np.array([votes_of(tuple(record for record, keep in zip(records, mask) if keep)) for mask in masks])
    joint = log_weight[:, None] + label_log_probs(votes - mechanism.k / 2.0, mechanism.sigma)
    return dict(zip(map(tuple, _bits(mechanism.num_labels).astype(int)), logsumexp(joint, axis=0)))


def knn_votes(records: tuple, query: np.ndarray, k: int, num_labels: int) -> np.ndarray:
    """The code's votes of a record set with every record kept (``subsampled_knn_votes`` at rate 1); none for
    the empty set."""
    if not records:
        return np.zeros(num_labels, np.int64)
    features = torch.tensor(np.array([record[0] for record in records]), dtype=torch.float32)
    labels = torch.tensor(np.array([record[1] for record in records]), dtype=torch.uint8)
    return subsampled_knn_votes(
        features, labels, torch.tensor(query[None], dtype=torch.float32), k, 1.0, torch.Generator().manual_seed(0)
    )[0]


def argmax_log_probs(scores: np.ndarray, kind: str, scale: float) -> np.ndarray:
    """log Pr[argmax_j scores_j + Z_j = j] for i.i.d. noise Z of ``kind`` and ``scale`` (module docstring)."""
    noise = _NOISE[kind](scale=scale)
    step = scale / (2000.0 if kind == "laplace" else 200.0)  # the Laplace density's kink needs a finer grid
    z = np.arange(scores.min() - 60 * scale, scores.max() + 60 * scale, step)
    shifted = z[None, :] - scores[:, None]
    log_pdf, log_cdf = noise.logpdf(shifted), noise.logcdf(shifted)
    integrand = log_pdf + log_cdf.sum(axis=0, keepdims=True) - log_cdf
    return logsumexp(integrand, axis=1) + math.log(step)


def selection_log_probs(selection, h: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(k [m], log Pr[k] [m], gaps [L + 1]) of GapSelection on one count vector: scores gap + r at the code's
    candidate columns, noise of the code's kind at ``noise_scale``; column i is k = L - i."""
    gaps = count_gaps(sorted_padded_counts(np.asarray(h)[None], selection.num_teachers))[0]
    columns = np.arange(selection.num_labels + 1)[selection._columns]
    scores = gaps[columns].astype(np.float64)
    if selection._offset is not None:
        scores = scores + selection._offset
    log_probs = argmax_log_probs(scores, selection.selection, selection.noise_scale)
    return selection.num_labels - columns, log_probs, gaps


def gap_selection_law(selection, h: np.ndarray) -> dict:
    """GapSelection: the law of the chosen k."""
    ks, log_probs, _ = selection_log_probs(selection, h)
    return dict(zip(ks.tolist(), log_probs))


def pass_log_prob(test, gap: float) -> tuple[float, float]:
    """(log Pr[pass], log Pr[fail]) of GapTest on a gap: q_hat = max(q, s) + Z - margin > s, i.e.
    Z > s + margin - max(q, s), Z of the test's kind at its ``noise_scale``."""
    threshold = test.sensitivity + test.margin - max(float(gap), test.sensitivity)
    noise = _NOISE[test.test](scale=test.noise_scale)
    return float(noise.logsf(threshold)), float(noise.logcdf(threshold))


def gap_test_law(test, gap: float) -> dict:
    """GapTest: the law of its pass/fail on one gap."""
    passed, failed = pass_log_prob(test, gap)
    return {True: passed, False: failed}


def stable_topk_law(agg, h: np.ndarray, coarse: bool = False) -> dict:
    """StableTopK on one count vector: k by the selection, the test on the gap at k, and on a pass the code's
    top-k set. Outputs (k, answered, labels) as the result exposes them (``selected_k`` is released);
    ``coarse``: (k, answered) only, a post-processing of (k, q_hat), which the RDP curve covers without delta_t
    (each (k, answered) holds one labels value, so dropping it keeps the probabilities)."""
    law = _stable_topk_law(agg, tuple(np.asarray(h).tolist()))
    return {key[:2]: value for key, value in law.items()} if coarse else dict(law)


@functools.lru_cache(maxsize=None)
def _stable_topk_law(agg, h: tuple) -> dict:
    counts = np.array(h)[None]
    ks, log_probs, gaps = selection_log_probs(agg.selection_mechanism, counts[0])
    padded = sorted_padded_counts(counts, agg.num_teachers)
    law = {}
    for k, log_k in zip(ks.tolist(), log_probs):
        passed, failed = pass_log_prob(agg.test_mechanism, gaps[agg.num_labels - k])
        labels = tuple(top_k_labels(counts, padded, np.array([k]))[0].astype(int).tolist())
        law[(k, True, labels)] = log_k + passed
        law[(k, False, ())] = log_k + failed
    return law


def data_dependent_binary_voting_law(agg, h: np.ndarray) -> dict:
    """DataDependentBinaryVoting on one query: the distance to the budget as its ``__call__`` computes it (the
    code's ``cost_table``, ``costs_within`` and ``distance_to_budget`` at its scale), the test min(distance, d_cap) +
    N(0, test_sigma^2) > threshold, and on a pass per label: screened with probability Phi((max(h, T - h) -
    screen threshold) / screen_sigma) (always without a screen), then GNMax as ``binary_voting_law``. Output per
    label: -1 (not released), 0 or 1."""
    t, test = agg.num_teachers, agg.test
    counts = np.asarray(h)[None]
    scale = _label_scale(agg.sigma, agg.neighbors)
    table = cost_table(t + test.max_distance + 1, agg.order, agg.sigma, scale, agg.screen)
    distance = distance_to_budget(costs_within(table, counts, t - counts, test.max_distance), test.budget)
    capped = min(distance, test.max_distance - 1)
    log_pass = float(log_ndtr((capped - test.threshold) / test.sigma))
    log_fail = float(log_ndtr((test.threshold - capped) / test.sigma))
    margin = (2.0 * counts[0] - t) / (math.sqrt(2.0) * agg.sigma)
    if agg.screen is None:
        log_screen, log_no_screen = np.zeros(agg.num_labels), np.full(agg.num_labels, -np.inf)
    else:
        z = (np.maximum(counts[0], t - counts[0]) - agg.screen[1]) / agg.screen[0]
        log_screen, log_no_screen = log_ndtr(z), log_ndtr(-z)
    per_label = np.stack([log_no_screen, log_screen + log_ndtr(-margin), log_screen + log_ndtr(margin)], axis=1)
    law = {}
    for states in itertools.product((-1, 0, 1), repeat=agg.num_labels):
        log_p = log_pass + sum(per_label[label, state + 1] for label, state in enumerate(states))
        if all(state == -1 for state in states):
            log_p = np.logaddexp(log_p, log_fail)
        law[states] = float(log_p)
    return law
