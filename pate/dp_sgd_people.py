"""User-level DP-SGD (``privacy.unit=person``): DP-SGD whose unit is a person, not an image.

Each step Poisson-samples people, not rows (one coin per person, at exactly the rate the caller prices:
``pate.mechanisms.poisson``). Every sampled person contributes one gradient: the mean of the per-example gradients of
all their rows, clipped as a whole to L2 norm C. Gaussian noise N(0, (noise_multiplier C)^2) goes on the sum of
those clipped gradients, which is divided by a public constant (``expected_batch_size``, people per step), then an
SGD step. One person -- any of their rows, all of them, or the person added or removed -- moves the clipped sum of
a step by at most C (added or removed) or 2 C (replaced), exactly as one record moves record-level DP-SGD's, so the
same Poisson-sampled Gaussian prices it with q over people (``pate.privacy.sampled_gaussian_steps``; the relation's
sensitivity: ``clipped_gradient_sum_sensitivity``). This is the user-level DP-SGD of McMahan, Ramage, Talwar &
Zhang (ICLR 2018, "Learning differentially private recurrent language models": DP-FedSGD with one step per user),
with every sampled person's rows in the step.

Per-example gradients come from ``torch.func`` (``vmap`` of ``grad`` through ``functional_call``), so the model
must have no batch-mixing layer (BatchNorm): the linear probe and the GroupNorm SmallCNN qualify. A linear layer (the
probe) skips them: a row's gradient is r x^T (and r for the bias), r the loss's gradient at its logits, so a person's
mean gradient is one product of their rows (:func:`_linear_clipped_sum`), without the rows x labels x features
tensor of per-example gradients (7.6 s a step of 512 people of 20 images of 8,192 features on 2 cores). The
sampled people are processed in chunks of rows, so memory stays bounded whatever a batch holds.
"""

from __future__ import annotations

import numpy as np
import torch
from torch import nn

from pate.mechanisms.poisson import poisson_subsample
from pate.progress import progress_bar

__all__ = ["one_person_clipped", "person_clipped_sum", "train_dp_sgd_by_person"]

_CHUNK_ROWS = 2048  # rows whose per-example gradients are held at once
_PEOPLE_PER_PRODUCT = 8  # people whose float64 mean gradients a linear layer holds at once (64 was 1.5x slower)


def _loss(logits: torch.Tensor, targets: torch.Tensor) -> torch.Tensor:
    """The binary cross-entropy summed over the labels and the rows: a row's gradient of it is its per-example one."""
    return nn.functional.binary_cross_entropy_with_logits(logits, targets, reduction="sum")


def _clip_factor(norms: torch.Tensor, clip: float) -> torch.Tensor:
    """min(1, clip / (norm + 1e-6)): Opacus' clipping rule, for every person's gradient alike."""
    return (clip / (norms + 1e-6)).clamp(max=1.0)


def person_clipped_sum(
    model: nn.Module, inputs: torch.Tensor, targets: torch.Tensor, owner: torch.Tensor, num_owners: int, clip: float
) -> dict[str, torch.Tensor]:
    """The sum over ``num_owners`` people of each one's gradient clipped to L2 norm ``clip``: a person's gradient is
    the mean of the per-example gradients (of the binary cross-entropy summed over the labels) of their rows
    (``owner[i]``: the person of row i, in 0..num_owners - 1, each owning at least one row). Keyed by parameter name,
    in float64 (:func:`_clipped_total` says why).
    Clipping: :func:`_clip_factor`."""
    if isinstance(model, nn.Linear):
        return _linear_clipped_sum(model, inputs, targets, owner, num_owners, clip)
    return _clipped_total(_person_gradients(model, inputs, targets, owner, num_owners), clip)


def _clipped_total(per_person: dict[str, torch.Tensor], clip: float) -> dict[str, torch.Tensor]:
    """The sum over people (the leading dimension of every parameter's gradient) of each person's gradient scaled by
    :func:`_clip_factor` of its norm over all parameters, in float64.

    float64 throughout: a float32 running sum across people lets one person change how every later person's term
    rounds (an outside audit moved the sum by 8 clips so), and its squared norms overflow above 1.8e19. A person whose
    gradient is not finite (an overflow, inf - inf in a logit) contributes zero: it is still a function of their rows
    alone, and a NaN in the sum would tell their presence."""
    flat = {name: g.flatten(1).to(torch.float64) for name, g in per_person.items()}
    # contractions over the people: neither a squared nor a scaled copy of the gradients is made
    norms = torch.sqrt(sum(torch.einsum("pi,pi->p", g, g) for g in flat.values()))
    # a norm is not finite exactly where the gradient holds an inf or a NaN, or where its square overflows
    usable = torch.isfinite(norms)
    factor = torch.where(usable, _clip_factor(norms, clip), 0.0)
    if not bool(usable.all()):  # zero those people's rows: 0 x inf would put a NaN in the sum
        flat = {name: torch.where(usable[:, None], g, 0.0) for name, g in flat.items()}
    return {name: (factor @ g).view(per_person[name].shape[1:]) for name, g in flat.items()}


def _person_gradients(
    model: nn.Module, inputs: torch.Tensor, targets: torch.Tensor, owner: torch.Tensor, num_owners: int
) -> dict[str, torch.Tensor]:
    """Each person's mean gradient, keyed by parameter name (leading dimension: the person), from the per-example
    gradients of ``torch.func``."""
    from torch.func import functional_call, grad, vmap

    params = {name: p.detach() for name, p in model.named_parameters()}
    buffers = {name: b.detach() for name, b in model.named_buffers()}

    def loss(p, x, y):
        logits = functional_call(model, (p, buffers), (x.unsqueeze(0),))
        return _loss(logits, y.unsqueeze(0))

    per_example = vmap(grad(loss), in_dims=(None, 0, 0))(params, inputs, targets)
    counts = torch.bincount(owner, minlength=num_owners)
    per_person = {}
    for name, g in per_example.items():
        summed = torch.zeros((num_owners, *g.shape[1:]), dtype=g.dtype, device=g.device).index_add_(0, owner, g)
        per_person[name] = summed / counts.view(-1, *[1] * (g.dim() - 1)).to(g.dtype)
    return per_person


def _linear_clipped_sum(
    model: nn.Linear, inputs: torch.Tensor, targets: torch.Tensor, owner: torch.Tensor, num_owners: int, clip: float
) -> dict[str, torch.Tensor]:
    """:func:`person_clipped_sum` of a linear layer, without per-example gradients. Row i's gradient is r_i x_i^T for
    the weight and r_i for the bias, r_i the gradient of the loss at the row's logits, so person p's mean gradient
    is G_p = (1 / n_p) R_p^T X_p (and (1 / n_p) sum_i r_i): one batched product over the people, their rows padded
    with zeros to the largest count (a zero row adds nothing). Each G_p is formed and clipped on its own, in
    float64, before any sum across people, so no person's terms can round another's: a norm taken from the Gram
    matrices instead cancels for rows far larger than their difference, and one product over every person's rows
    lets one person's large terms change how another's round (an outside audit built both). People are taken
    ``_PEOPLE_PER_PRODUCT`` at a time, which bounds the memory of the G_p."""
    with torch.no_grad():
        logits = model(inputs)
    logits.requires_grad_(True)
    (residual,) = torch.autograd.grad(_loss(logits, targets), logits)
    counts = torch.bincount(owner, minlength=num_owners)
    order = torch.argsort(owner, stable=True)
    within = torch.empty_like(owner)
    ends = torch.cumsum(counts, 0)  # person p's rows are order[ends[p] - counts[p] : ends[p]]
    within[order] = torch.arange(len(owner), device=owner.device) - (ends - counts)[owner[order]]
    width = max(int(counts.max()), 1)
    blocks = []
    for first in range(0, num_owners, _PEOPLE_PER_PRODUCT):
        people = min(_PEOPLE_PER_PRODUCT, num_owners - first)
        block = order[int(ends[first] - counts[first]) : int(ends[first + people - 1])]  # these people's rows
        rows = torch.zeros((people, width, inputs.shape[1]), dtype=torch.float64, device=inputs.device)
        residuals = torch.zeros((people, width, residual.shape[1]), dtype=torch.float64, device=inputs.device)
        rows[owner[block] - first, within[block]] = inputs[block].to(torch.float64)
        residuals[owner[block] - first, within[block]] = residual[block].to(torch.float64)
        scale = counts[first : first + people].clamp(min=1).to(torch.float64)  # a person of no rows adds zero
        per_person = {"weight": torch.bmm(residuals.transpose(1, 2), rows).div_(scale.view(-1, 1, 1))}
        if model.bias is not None:
            per_person["bias"] = residuals.sum(dim=1) / scale.view(-1, 1)
        blocks.append(_clipped_total(per_person, clip))
    return {name: sum(block[name] for block in blocks) for name in blocks[0]}  # float64: see _clipped_total


def one_person_clipped(
    model: nn.Module, inputs: torch.Tensor, targets: torch.Tensor, rows: np.ndarray, clip: float, transform, device
) -> dict[str, torch.Tensor]:
    """One person's gradient -- the mean over ``rows`` of the per-example gradients, i.e. the gradient of their mean
    loss -- accumulated over chunks of ``_CHUNK_ROWS`` rows by plain backpropagation and clipped as
    :func:`person_clipped_sum` clips it: memory stays bounded however many rows one person holds."""
    params = dict(model.named_parameters())
    total = {name: torch.zeros_like(p) for name, p in params.items()}
    for start in range(0, len(rows), _CHUNK_ROWS):
        chunk = rows[start : start + _CHUNK_ROWS]
        logits = model(transform(inputs[chunk]).to(device))
        loss = _loss(logits, targets[chunk].to(device)) / len(rows)
        for (name, _), g in zip(params.items(), torch.autograd.grad(loss, list(params.values()))):
            total[name] += g
    return _clipped_total({name: g.unsqueeze(0) for name, g in total.items()}, clip)


def _rows_of(chosen: np.ndarray, order: np.ndarray, offsets: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(rows, owner): the rows of the ``chosen`` people (``order`` lists the rows person by person, person p's at
    ``order[offsets[p]:offsets[p + 1]]``) and each row's position in ``chosen``, without a loop over the people."""
    counts = offsets[chosen + 1] - offsets[chosen]
    within = np.arange(counts.sum()) - np.repeat(np.cumsum(counts) - counts, counts)
    return order[np.repeat(offsets[chosen], counts) + within], np.repeat(np.arange(len(chosen)), counts)


def train_dp_sgd_by_person(
    model: nn.Module,
    inputs: torch.Tensor,
    targets: torch.Tensor,
    person: np.ndarray,
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
    """Train ``model`` in place by user-level DP-SGD (module docstring) on (``inputs`` [N, ...], ``targets`` [N, L]
    in {0, 1}), ``person[i]`` the person of row i, and return it. Each of ``steps`` steps keeps every person with
    probability ``realised_sampling_rate(sampling_rate)`` (``poisson_subsample`` over the people, from the CPU
    generator ``batches``), adds N(0, (noise_multiplier clip_norm)^2) per coordinate (from ``noise``, on
    ``device``) to the sum of the sampled people's clipped gradients (:func:`person_clipped_sum`), divides by
    ``expected_batch_size`` and takes an SGD step (``lr``, ``momentum``). ``transform`` turns a batch of inputs into
    the model's (uint8 images into floats)."""
    device = torch.device(device)
    model.to(device)
    transform = transform or (lambda batch: batch)
    codes = np.unique(np.asarray(person), return_inverse=True)[1]
    num_people = int(codes.max()) + 1
    order = np.argsort(codes, kind="stable")
    offsets = np.concatenate([[0], np.cumsum(np.bincount(codes, minlength=num_people))])
    targets = targets.to(torch.float32)
    optimizer = torch.optim.SGD(model.parameters(), lr=lr, momentum=momentum)
    std = noise_multiplier * clip_norm
    bar = progress_bar(total=steps, desc="DP-SGD by person", unit="step", disable=not progress)
    for _ in range(steps):
        chosen = torch.nonzero(poisson_subsample((num_people,), sampling_rate, batches)).squeeze(1).numpy()
        rows, owner = _rows_of(chosen, order, offsets)
        # float64 until the noise is on: the sum across chunks and people rounds no person's term into another's,
        # and the cast of the noisy sum to the parameters' dtype is post-processing
        total = {name: torch.zeros_like(p, dtype=torch.float64) for name, p in model.named_parameters()}
        # chunks of whole people, about _CHUNK_ROWS rows each: bounds[j] is where person j's rows start
        bounds = np.concatenate([[0], np.cumsum(offsets[chosen + 1] - offsets[chosen])])
        start_person = 0
        while start_person < len(chosen):
            end_person = max(
                start_person + 1, int(np.searchsorted(bounds, bounds[start_person] + _CHUNK_ROWS, "right")) - 1
            )
            part = slice(bounds[start_person], bounds[end_person])
            if part.stop - part.start > _CHUNK_ROWS:  # one person of more rows: their gradient chunk by chunk
                clipped = one_person_clipped(model, inputs, targets, rows[part], clip_norm, transform, device)
            else:
                clipped = person_clipped_sum(
                    model,
                    transform(inputs[rows[part]]).to(device),
                    targets[rows[part]].to(device),
                    torch.from_numpy(owner[part] - start_person).to(device),
                    end_person - start_person,
                    clip_norm,
                )
            for name in total:
                total[name] += clipped[name]
            start_person = end_person
        optimizer.zero_grad()
        for name, p in model.named_parameters():
            drawn = torch.normal(0.0, std, size=p.shape, generator=noise, device=device) if std > 0 else 0.0
            p.grad = ((total[name] + drawn) / expected_batch_size).to(p.dtype)
        optimizer.step()
        bar.update(1)
    bar.close()
    return model.cpu()
