"""DP-SGD with Opacus (Abadi et al. 2016): Poisson-sampled batches, per-example gradients clipped to L2 norm C,
Gaussian noise N(0, (noise_multiplier C)^2) on their sum, an SGD step. Plain torch and Opacus, no Lightning; any
model Opacus can wrap (a linear probe on features, a CNN with GroupNorm on images).

Opacus computes the per-example gradient norms by ghost clipping (``GradSampleModuleFastGradientClipping``: for a
linear layer ||g_i|| = ||dL_i/dz_i|| ||x_i||, never the [B, L, D] tensor of per-example gradients) and adds the
noise (``DPOptimizerFastGradientClipping``); tests/test_dp_sgd.py checks both against a direct
computation. Layers without a ghost norm (convolutions, GroupNorm) get their per-example gradients materialised
by Opacus, as in its plain mode. The batches are drawn here, one coin per record and step, at exactly the rate the
caller prices (``pate.mechanisms.poisson``: Poisson sampling, as the privacy analysis of
``pate.privacy.sampled_gaussian_steps`` needs), so an empty batch is possible and is a noise-only step. The clipped sum
is divided by a constant the caller fixes (``expected_batch_size``), never by a count of the private records:
under add_remove the neighbours differ in that count.

The model trains in float64 and is handed back in float32 (post-processing of the noisy float64 parameters). In
float32 the clipped sum -- a matrix product over the batch -- rounds each record's term by where the running sum
stands, and one record moves that for every later one: there are batches of inputs the probe can take where one
record added or removed moves the float32 sum by nearly 2 C, against a bound of C (tests/test_dp_sgd_rounding.py
builds one). In float64 one record moves it by at most about B^2 / 4 2^-53 C beyond C (under 1e-8 C up to 16,384
records), which the accounting does not price: it would move epsilon by about as little, relatively.
"""

from __future__ import annotations

import logging
import warnings

import torch
from torch import nn

from pate.evaluation import student_scores
from pate.mechanisms.poisson import poisson_subsample
from pate.progress import progress_bar

__all__ = ["MultiLabelLoss", "linear_probe", "predict", "probe_inputs", "score_model", "train_dp_sgd"]


class MultiLabelLoss(nn.Module):
    """Binary cross-entropy with logits summed over the labels: one loss per record ([B] with ``reduction="none"``),
    their mean or sum otherwise. Opacus' ghost clipping needs the per-record loss, hence not BCEWithLogitsLoss."""

    def __init__(self, reduction: str = "mean"):
        super().__init__()
        self.reduction = reduction

    def forward(self, logits: torch.Tensor, targets: torch.Tensor) -> torch.Tensor:
        per_record = nn.functional.binary_cross_entropy_with_logits(logits, targets, reduction="none").sum(dim=1)
        if self.reduction == "none":
            return per_record
        return per_record.mean() if self.reduction == "mean" else per_record.sum()


def probe_inputs(features: torch.Tensor, inputs: str = "unit_norm") -> torch.Tensor:
    """The linear probe's inputs. ``unit_norm``: each feature vector scaled to unit L2 norm, a per-record map that
    needs no data, so a record's gradient norm is bounded by its labels' error alone. ``standardized``: the public
    features as the features stage wrote them (standardised by statistics of public images only). Both are public
    by construction: no statistic of the private split enters them."""
    return torch.nn.functional.normalize(features, dim=1) if inputs == "unit_norm" else features


def linear_probe(dim: int, num_labels: int) -> nn.Module:
    """A linear layer from the features to one logit per label, initialised at zero (a data-free start: every
    label at probability 1/2)."""
    layer = nn.Linear(dim, num_labels)
    nn.init.zeros_(layer.weight)
    nn.init.zeros_(layer.bias)
    return layer


def train_dp_sgd(
    model: nn.Module,
    inputs: torch.Tensor,
    targets: torch.Tensor,
    *,
    sampling_rate: float,
    expected_batch_size: int,
    noise_multiplier: float,
    clip_norm: float,
    steps: int,
    lr: float,
    momentum: float,
    batches: torch.Generator,
    noise: torch.Generator,
    progress: bool = False,
    device: torch.device | str = "cpu",
    transform=None,
) -> nn.Module:
    """Train ``model`` in place by DP-SGD on (``inputs`` [N, ...], ``targets`` [N, L] in {0, 1}) and return it, in
    float64 throughout and float32 when handed back (module docstring).

    Each of ``steps`` steps keeps every record with probability ``realised_sampling_rate(sampling_rate)``
    (``poisson_subsample``, drawn from the CPU generator ``batches``), clips each kept record's gradient of its own
    loss to ``clip_norm``, sums, adds N(0, (noise_multiplier clip_norm)^2) per coordinate (drawn from ``noise``, a
    generator on ``device``) and divides by ``expected_batch_size`` (Opacus' "mean" reduction; a public constant,
    never a function of N), then takes an SGD step (``lr``, ``momentum``). The caller passes generators holding
    secret entropy where the guarantee must hold (pate/pipeline/noise.py). The model trains on ``device``;
    ``inputs`` stay where they are and each batch is moved there (through ``transform`` when given: uint8 images
    become floats batch by batch, not all at once).
    """
    from opacus.grad_sample import GradSampleModuleFastGradientClipping
    from opacus.optimizers import DPOptimizerFastGradientClipping
    from opacus.utils.fast_gradient_clipping_utils import DPLossFastGradientClipping

    num_records = inputs.shape[0]
    device = torch.device(device)
    model.to(device, torch.float64)  # the clipped sum in float64: the module docstring says why
    transform = transform or (lambda batch: batch)
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message=".*[Ss]ecure.*")  # Opacus' note on secure_mode, once per run
        module = GradSampleModuleFastGradientClipping(
            model, batch_first=True, loss_reduction="mean", max_grad_norm=clip_norm, use_ghost_clipping=True
        )
        optimizer = DPOptimizerFastGradientClipping(
            torch.optim.SGD(module.parameters(), lr=lr, momentum=momentum),
            noise_multiplier=noise_multiplier,
            max_grad_norm=clip_norm,
            expected_batch_size=expected_batch_size,
            loss_reduction="mean",
            generator=noise,
        )
    criterion = DPLossFastGradientClipping(module, optimizer, MultiLabelLoss("mean"), loss_reduction="mean")
    # Opacus logs one INFO line per layer it wraps ("under Ghost Clipping"): not news for a console run
    logging.getLogger("opacus").setLevel(max(logging.WARNING, logging.getLogger("opacus").level))
    targets = targets.to(torch.float64)
    bar = progress_bar(total=steps, desc="DP-SGD", unit="step", disable=not progress)
    with warnings.catch_warnings():
        # the input features need no gradient, so torch notes that the backward hook fires on the outputs
        warnings.filterwarnings("ignore", message="Full backward hook is firing", category=UserWarning)
        for _ in range(steps):
            batch = torch.nonzero(poisson_subsample((num_records,), sampling_rate, batches)).squeeze(1)
            optimizer.zero_grad()
            loss = criterion(module(transform(inputs[batch]).to(device, torch.float64)), targets[batch].to(device))
            loss.backward()
            optimizer.step()
            bar.update(1)
    bar.close()
    module.disable_hooks()
    return model.to("cpu", torch.float32)


def predict(model: nn.Module, inputs: torch.Tensor, batch_size: int = 1024, transform=None) -> torch.Tensor:
    """sigmoid(logits) of ``model`` on ``inputs`` [R, ...] (through ``transform``, batch by batch), on the CPU."""
    transform = transform or (lambda batch: batch)
    model.eval()
    with torch.no_grad():
        return torch.cat(
            [model(transform(inputs[i : i + batch_size])).sigmoid() for i in range(0, len(inputs), batch_size)]
        )


def score_model(model: nn.Module, inputs: torch.Tensor, truth, transform=None) -> dict:
    """The released model's metrics on the evaluation rows, scored as every student is (``student_scores``)."""
    return student_scores(predict(model, inputs, transform=transform), truth)
