"""Batched ridge heads: leave-one-out against brute force, batching against one-at-a-time, closed forms."""

import numpy as np
import pytest
import torch

from pate.features import fit_ridge_heads, head_scores, head_weights

LAMBDAS = [0.01, 0.1, 1.0, 10.0]


def _problem(g=3, n=12, d=20, labels=4, seed=0):
    rng = np.random.default_rng(seed)
    x = torch.from_numpy(rng.normal(size=(g, n, d))).float()
    y = torch.from_numpy((rng.random((g, n, labels)) < 0.4).astype(np.float32))
    return x, y


def _ridge_with_intercept(x: np.ndarray, y: np.ndarray, lam: float):
    """Reference: minimise |y - b - X w|^2 + lam |w|^2 (b unpenalised) by the normal equations."""
    mu, ybar = x.mean(0), y.mean(0)
    xc = x - mu
    w = np.linalg.solve(xc.T @ xc + lam * np.eye(x.shape[1]), xc.T @ (y - ybar))
    return w, ybar - mu @ w


def test_leave_one_out_choice_matches_brute_force():
    x, y = _problem(g=2, n=10, d=15, labels=3)
    heads = fit_ridge_heads(x, y, LAMBDAS)
    for g in range(2):
        xg, yg = x[g].double().numpy(), y[g].double().numpy()
        xc = xg - xg.mean(0)
        scale = np.trace(xc @ xc.T) / len(xg)
        errors = np.zeros((len(LAMBDAS), yg.shape[1]))
        held_out = np.zeros((len(LAMBDAS), *yg.shape))  # [C, n, L]: row i's score by the fit without it
        for c, lam in enumerate(LAMBDAS):
            for i in range(len(xg)):  # refit without row i, predict row i
                keep = np.arange(len(xg)) != i
                w, b = _ridge_with_intercept(xg[keep], yg[keep], lam * scale)
                held_out[c, i] = xg[i] @ w + b
                errors[c] += (yg[i] - held_out[c, i]) ** 2 / len(xg)
        np.testing.assert_allclose(heads.loo_mse[g].numpy(), errors.min(0), rtol=1e-4)
        np.testing.assert_allclose(heads.lam[g].numpy(), np.asarray(LAMBDAS)[errors.argmin(0)], rtol=1e-5)
        chosen = held_out[errors.argmin(0), :, np.arange(yg.shape[1])].T  # [n, L] at each label's strength
        np.testing.assert_allclose(heads.loo_scores[g].numpy(), chosen, atol=1e-4)


def test_primal_weights_solve_the_ridge_problem_with_the_chosen_strength():
    x, y = _problem(g=2)
    heads = fit_ridge_heads(x, y, LAMBDAS)
    weights, bias = head_weights(x, heads.beta, heads.ybar)
    for g in range(2):
        xg, yg = x[g].double().numpy(), y[g].double().numpy()
        xc = xg - xg.mean(0)
        scale = np.trace(xc @ xc.T) / len(xg)
        for label in range(y.shape[2]):
            w, b = _ridge_with_intercept(xg, yg[:, label], float(heads.lam[g, label]) * scale)
            np.testing.assert_allclose(weights[g, :, label].numpy(), w, atol=2e-4)
            assert float(bias[g, label]) == pytest.approx(b, abs=2e-4)


def test_heads_fitted_together_equal_heads_fitted_one_at_a_time():
    """Nothing couples the heads of a batch: each equals its own fit to float32 rounding (rtol 1e-4)."""
    x, y = _problem(g=5, n=16, d=30, labels=6, seed=1)
    together = fit_ridge_heads(x, y, LAMBDAS)
    queries = torch.randn(7, 30, generator=torch.Generator().manual_seed(0))
    scores = head_scores(queries, *head_weights(x, together.beta, together.ybar))
    for g in range(5):
        alone = fit_ridge_heads(x[g : g + 1], y[g : g + 1], LAMBDAS)
        np.testing.assert_array_equal(alone.lam[0].numpy(), together.lam[g].numpy())
        np.testing.assert_allclose(alone.beta[0].numpy(), together.beta[g].numpy(), rtol=1e-4, atol=1e-6)
        own = head_scores(queries, *head_weights(x[g : g + 1], alone.beta, alone.ybar))[0]
        np.testing.assert_allclose(own.numpy(), scores[g].numpy(), rtol=1e-4, atol=1e-5)


def test_a_constant_label_is_predicted_as_its_constant():
    x, y = _problem(g=1, labels=2)
    y[..., 0] = 0.0  # e.g. a rare attribute absent from a teacher's part
    y[..., 1] = 1.0
    heads = fit_ridge_heads(x, y, LAMBDAS)
    scores = head_scores(torch.randn(4, x.shape[2]), *head_weights(x, heads.beta, heads.ybar))
    np.testing.assert_allclose(scores[0].numpy(), np.tile([0.0, 1.0], (4, 1)), atol=1e-6)


@pytest.mark.parametrize("lambdas", [[], [0.0], [-1.0], [float("nan")]])
def test_bad_lambdas_are_refused(lambdas):
    x, y = _problem()
    with pytest.raises(ValueError, match="lambdas"):
        fit_ridge_heads(x, y, lambdas)


def test_shapes_and_sizes_are_checked():
    x, y = _problem()
    with pytest.raises(ValueError, match="must agree"):
        fit_ridge_heads(x, y[:, :5], LAMBDAS)
    with pytest.raises(ValueError, match="at least 2"):
        fit_ridge_heads(x[:, :1], y[:, :1], LAMBDAS)
