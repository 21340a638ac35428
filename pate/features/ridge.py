"""Batched ridge-regression heads with an unpenalised intercept and L2 strength chosen by exact leave-one-out.

One head maps a feature vector x (D dims) to scores f(x) = (x - mu) . W + ybar for L binary targets; a label
is predicted on iff f(x) > 1/2 (regression on 0/1 targets). G heads with the same number n of training rows
are fitted at once as one batched problem; nothing is shared between them: every statistic below (mu, ybar,
the kernel, the choice of lambda) is computed from that head's own n rows.

Dual form (n << D here): with X_c = X - 1 mu^T (mu the head's own feature mean) and y_c = y - ybar,

    W = X_c^T beta,   beta = (K + lambda I)^-1 y_c,   K = X_c X_c^T = U diag(s) U^T.

Leave-one-out (Allen 1974; e.g. Hastie, Tibshirani & Friedman, ESL 2nd ed., eq. 7.52, exact for linear
smoothers): the fitted values are yhat = H y with H = (1/n) 1 1^T + U diag(s / (s + lambda)) U^T (the
intercept's projection plus the ridge smoother on the centred data, since X_c^T 1 = 0), so

    e_loo_i = (y_i - yhat_i) / (1 - H_ii),   y - yhat = U diag(lambda / (s + lambda)) U^T y_c,
    H_ii = 1/n + sum_j U_ij^2 s_j / (s_j + lambda),

and each (head, label) keeps the lambda of its grid with the smallest mean squared e_loo -- a per-head choice
made on that head's own rows only. The leave-one-out scores y_i - e_loo_i at that lambda (each training row's
score by the head fitted without it) are kept too: a per-head choice that needs held-out scores, such as a
decision threshold, can be made on them without a validation split.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch


def check_lambdas(lambdas, name: str = "lambdas") -> np.ndarray:
    """The L2-strength grid as float64 [n]: non-empty, finite and > 0, else a ``ValueError`` naming it as ``name``
    (``teacher.lambdas``, ``student.lambdas`` where a config gave it) and showing it as given."""
    try:
        grid = np.asarray(lambdas, dtype=np.float64)
    except (TypeError, ValueError):
        grid = None  # not numbers at all: the same error as numbers out of range
    if grid is None or grid.ndim != 1 or grid.size < 1 or not np.all(np.isfinite(grid)) or not np.all(grid > 0):
        raise ValueError(f"{name}={lambdas!r}; expected a non-empty list of finite L2 strengths > 0")
    return grid


@dataclass(frozen=True)
class RidgeHeads:
    """G fitted heads in dual form: ``beta`` [G, n, L], ``ybar`` [G, L], ``lam`` [G, L] (the chosen strength),
    ``loo_mse`` [G, L] (its leave-one-out mean squared error), ``loo_scores`` [G, n, L] (each training row's
    leave-one-out score at that strength). The primal weights need the training features again:
    :func:`head_weights`."""

    beta: torch.Tensor
    ybar: torch.Tensor
    lam: torch.Tensor
    loo_mse: torch.Tensor
    loo_scores: torch.Tensor


def fit_ridge_heads(features: torch.Tensor, targets: torch.Tensor, lambdas) -> RidgeHeads:
    """Fit G heads on ``features`` [G, n, D] (float) and 0/1 ``targets`` [G, n, L]; see the module docstring.

    ``lambdas`` is the grid of L2 strengths, in units of the mean diagonal of the head's centred kernel
    (trace(K)/n, the mean squared norm of a centred feature vector), so one grid suits any feature scale and
    dimension. The eigendecomposition runs in float64 for stability.
    """
    grid = check_lambdas(lambdas)
    if features.ndim != 3 or targets.ndim != 3 or features.shape[:2] != targets.shape[:2]:
        raise ValueError(
            f"features [G, n, D] and targets [G, n, L] must agree on G and n, got "
            f"{tuple(features.shape)} and {tuple(targets.shape)}"
        )
    n = features.shape[1]
    if n < 2:
        raise ValueError(f"each head needs at least 2 training rows for leave-one-out, got n={n}")
    x = features.float()
    xc = x - x.mean(1, keepdim=True)
    kernel = torch.bmm(xc, xc.transpose(1, 2)).double()  # [G, n, n]
    y = targets.double()
    ybar = y.mean(1)  # [G, L]
    yc = y - ybar[:, None, :]
    s, u = torch.linalg.eigh(kernel)  # ascending, [G, n], [G, n, n]
    s = s.clamp_min(0)
    scale = (s.sum(1) / n).clamp_min(1e-12)  # trace(K)/n per head
    lam = scale[:, None] * torch.as_tensor(grid, dtype=torch.float64)[None, :]  # [G, C]
    z = torch.bmm(u.transpose(1, 2), yc)  # U^T y_c, [G, n, L]
    shrink = lam[:, None, :] / (s[:, :, None] + lam[:, None, :])  # [G, n, C]: lambda/(s+lambda)
    # residuals y - yhat for every lambda: U diag(shrink_c) z -> [G, C, n, L]
    resid = torch.einsum("gij,gjc,gjl->gcil", u, shrink, z)
    leverage = 1.0 / n + torch.einsum("gij,gjc->gci", u * u, 1 - shrink)  # H_ii, [G, C, n]
    e_loo = resid / (1 - leverage).clamp_min(1e-12)[..., None]  # [G, C, n, L]
    mse = (e_loo**2).mean(2)  # [G, C, L]
    best = mse.argmin(1)  # [G, L]
    chosen = torch.gather(lam, 1, best)  # [G, L]
    beta = torch.bmm(u, z / (s[:, :, None] + chosen[:, None, :]))  # [G, n, L]
    e_chosen = torch.gather(e_loo, 1, best[:, None, None, :].expand(-1, 1, n, -1))[:, 0]  # [G, n, L]
    return RidgeHeads(
        beta=beta.float(),
        ybar=ybar.float(),
        lam=(chosen / scale[:, None]).float(),
        loo_mse=torch.gather(mse, 1, best[:, None, :])[:, 0].float(),
        loo_scores=(y - e_chosen).float(),
    )


def head_weights(features: torch.Tensor, beta: torch.Tensor, ybar: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """Primal form of fitted heads: (W [G, D, L], b [G, L]) with scores x . W + b, from the heads' own training
    ``features`` [G, n, D]: W = X_c^T beta and b = ybar - mu . W."""
    x = features.float()
    mu = x.mean(1)  # [G, D]
    weights = torch.bmm((x - mu[:, None, :]).transpose(1, 2), beta)
    return weights, ybar - torch.einsum("gd,gdl->gl", mu, weights)


def head_scores(queries: torch.Tensor, weights: torch.Tensor, bias: torch.Tensor) -> torch.Tensor:
    """Scores [G, B, L] of G heads on a shared batch ``queries`` [B, D]."""
    return torch.einsum("bd,gdl->gbl", queries.float(), weights) + bias[:, None, :]


class RidgeHead(torch.nn.Module):
    """One fitted head (``weights`` [D, L], ``bias`` [L]) as a module, kept with a trained model: its output is the
    score minus 1/2, so that, like a network's logit, it is positive exactly where the label is predicted present.
    The scores are :func:`head_scores`'s, so a kept head predicts what the head predicted when it was scored."""

    def __init__(self, dim: int, num_labels: int):
        super().__init__()
        self.register_buffer("weights", torch.zeros(1, dim, num_labels))
        self.register_buffer("bias", torch.zeros(1, num_labels))

    @classmethod
    def of(cls, weights: torch.Tensor, bias: torch.Tensor) -> RidgeHead:
        """The head of :func:`head_weights`' (W [1, D, L], b [1, L])."""
        head = cls(weights.shape[1], weights.shape[2])
        head.weights.copy_(weights)
        head.bias.copy_(bias)
        return head

    def forward(self, features: torch.Tensor) -> torch.Tensor:
        """float32 [B, L]: the scores of ``features`` [B, D] minus 1/2."""
        return head_scores(features, self.weights, self.bias)[0] - 0.5


__all__ = ["RidgeHead", "RidgeHeads", "check_lambdas", "fit_ridge_heads", "head_scores", "head_weights"]
