"""Batched CNN teachers: G teachers of one architecture trained together, as one stacked model (torch.func).

The per-teacher loop (teachers/ensemble.py) pays a Lightning Trainer, a loader and a small, unbatched
workload per teacher. Here the G teachers' parameters are stacked along a new leading axis and one call of
``vmap(functional_call(net, ...))`` runs all G forward passes; autograd gives each teacher the gradient of its
own loss only (the summed loss has no cross terms). Nothing is coupled: each teacher keeps

* its own initialisation: teacher g's network is built after seeding with its seed, as in the loop;
* its own data and order: its part, reshuffled every epoch by ``torch.randperm`` on a generator seeded with
  its seed -- exactly the permutations of the loop's seeded ``DataLoader`` (:func:`_epoch_order`); a teacher
  with a smaller part has fewer steps per epoch: its batches are padded and masked, and it makes no update
  at a step it has no batch;
* its own optimiser state: AdamW (Loshchilov & Hutter 2019, Alg. 2, as ``torch.optim.AdamW`` computes it) with a
  per-teacher step count, and the cosine decay to zero over its own number of steps that the LightningModule
  uses (``teachers/training/module.py``);
* its own augmentation: flips drawn from its own generator (the loop draws them from the global RNG, seeded
  with the same seed: the same distribution, other draws).

So with ``augment`` off the engine reproduces the loop's weights up to float rounding
(tests/teachers/test_batched.py).

Normalisation: only layers that treat each sample alone and hold no changing state stack: GroupNorm
(``teacher.model.norm=group``, SmallCNN or a ResNet trained from scratch) and BatchNorm with frozen statistics
(``norm=frozen``, :class:`teachers.training.models.FrozenStatsBatchNorm2d`, for a pretrained ResNet). Plain BatchNorm
cannot: its batch statistics would mix a teacher's padded entries into its statistics, and its running buffers
cannot be updated in place under vmap; such a model (``norm=batch``, the default) is trained by the loop, with
a warning. So is an optimiser other than AdamW, and a precision other than 32 and bf16-mixed (fp16 needs
per-teacher loss scaling, which the engine does not implement).

Frozen parameters (``requires_grad`` off, e.g. ``teacher.model.frozen_stages``) and the frozen statistics are
stacked too, as constants: each teacher keeps its own copy, no optimiser state and no gradient.
``trainer.precision=bf16-mixed`` runs the forward and backward passes in bfloat16 on bfloat16 copies of the
float32 parameters; the loss, the gradients and AdamW's state stay float32. This is cast by hand because
``torch.autocast`` does not reach inside ``torch.func.vmap`` (a convolution there stays float32), so unlike
Lightning's autocast it also runs the normalisation layers in bfloat16: the two engines then agree only to
bfloat16's precision (tests/teachers/test_batched.py measures how far).
"""

from __future__ import annotations

import math
import time
from collections.abc import Sequence

import numpy as np
import pytorch_lightning as pl
import torch
from torch import nn
from torch.func import functional_call, vmap
from torch.nn import functional as F

from teachers.settings import AdamW, NetworkTeacherSettings
from teachers.training.data import to_float
from teachers.training.models import FrozenStatsBatchNorm2d
from teachers.training.recipe import Recipe

_PRECISIONS = ("32", "32-true", "bf16-mixed")


def refusal(settings: NetworkTeacherSettings, precision) -> str | None:
    """Why these teachers cannot be trained batched in ``precision`` (None when they can)."""
    net = settings.recipe.make_net()
    if any(
        isinstance(m, nn.modules.batchnorm._BatchNorm) and not isinstance(m, FrozenStatsBatchNorm2d)
        for m in net.modules()
    ):
        return (
            "the model has BatchNorm layers that learn statistics (use teacher.model.norm=group, or "
            "norm=frozen for a pretrained ResNet)"
        )
    frozen_stats = {id(b) for m in net.modules() if isinstance(m, FrozenStatsBatchNorm2d) for b in m.buffers()}
    if any(id(b) not in frozen_stats for b in net.buffers()):
        return "the model has buffers that change in training, which stacked training does not update"
    if settings.adamw is None:
        return f"the optimizer is not plain torch.optim.AdamW ({settings.identity['optimizer']})"
    if str(precision) not in _PRECISIONS:
        return f"the batched engine trains in {' or '.join(_PRECISIONS)}, not trainer.precision={precision!r}"
    return None


def cosine_lr(base: torch.Tensor, step: torch.Tensor, total: torch.Tensor) -> torch.Tensor:
    """CosineAnnealingLR's closed form with eta_min = 0: base (1 + cos(pi step / total)) / 2, per teacher."""
    return base * (1 + torch.cos(math.pi * step / total)) / 2


def adamw_step(
    params: dict[str, torch.Tensor],
    grads: dict[str, torch.Tensor],
    state: dict,
    settings: AdamW,
    lr: torch.Tensor,
    step: torch.Tensor,
    active: torch.Tensor,
) -> None:
    """One AdamW update of every stacked parameter [G, ...], in place, for the teachers where ``active``
    ([G] bool); ``lr`` and ``step`` (the step number, from 1) are per teacher. As torch.optim.AdamW:
    p <- p (1 - lr wd); m <- b1 m + (1 - b1) g; v <- b2 v + (1 - b2) g^2;
    p <- p - lr / (1 - b1^t) * m / (sqrt(v) / sqrt(1 - b2^t) + eps)."""
    b1, b2 = settings.betas
    with torch.no_grad():
        for name, p in params.items():
            shape = (-1,) + (1,) * (p.ndim - 1)
            on, rate, t = active.view(shape), lr.view(shape), step.view(shape)
            g = grads[name]
            m, v = state[name]
            new_m, new_v = torch.lerp(m, g, 1 - b1), v * b2 + (1 - b2) * g * g
            denom = (new_v.sqrt() / torch.sqrt(1 - b2**t)) + settings.eps
            new_p = p * (1 - rate * settings.weight_decay) - rate / (1 - b1**t) * new_m / denom
            p.copy_(torch.where(on, new_p, p))
            m.copy_(torch.where(on, new_m, m))
            v.copy_(torch.where(on, new_v, v))


def _epoch_order(n: int, gen: torch.Generator) -> np.ndarray:
    """One epoch's order of a shuffled DataLoader whose generator is ``gen``, with the same draws: the loader's
    iterator draws its base seed, the RandomSampler draws ``randperm(n)``, and when it is exhausted a second
    ``randperm(n)`` of which it yields the first ``num_samples % n`` = 0 entries."""
    torch.empty((), dtype=torch.int64).random_(generator=gen)
    order = torch.randperm(n, generator=gen).numpy()
    torch.randperm(n, generator=gen)
    return order


def _stack(nets: Sequence[nn.Module], device: torch.device) -> tuple[dict[str, torch.Tensor], dict[str, torch.Tensor]]:
    """The G networks' tensors stacked along a new leading axis: (trainable parameters, which require grad;
    constants: frozen parameters and buffers)."""
    states = [net.state_dict(keep_vars=True) for net in nets]
    trainable = {name for name, p in nets[0].named_parameters() if p.requires_grad}
    stacked = {name: torch.stack([state[name].detach() for state in states]).to(device) for name in states[0]}
    params = {name: t.requires_grad_() for name, t in stacked.items() if name in trainable}
    return params, {name: t for name, t in stacked.items() if name not in trainable}


def _step_batch(perms, t: int, batch: int, images: np.ndarray, labels: np.ndarray, flips):
    """Step ``t``'s batch of every teacher, stacked: images, labels and the mask of real entries (a teacher whose
    epoch has ended, or whose last batch is short, is padded and masked). A padded entry is zeros, image and labels:
    never another teacher's record, whose pixels would otherwise pass through this teacher's network (masked, but a
    non-finite activation would not stay masked). With ``flips`` (one generator per teacher) each teacher draws its
    horizontal flips for its own images only: none when it is idle."""
    g_count = len(perms)
    rows = np.zeros((g_count, batch), dtype=np.int64)
    mask = torch.zeros(g_count, batch)
    for g, perm in enumerate(perms):
        chunk = perm[t * batch : (t + 1) * batch]
        rows[g, : len(chunk)], mask[g, : len(chunk)] = chunk, 1.0
    x = to_float(torch.from_numpy(np.asarray(images[rows.reshape(-1)]))).view(g_count, batch, *images.shape[1:])
    if flips is not None:
        flip = torch.zeros(g_count, batch, dtype=torch.bool)
        for g, gen in enumerate(flips):
            count = int(mask[g].sum())
            flip[g, :count] = torch.rand(count, generator=gen) < 0.5
        x = torch.where(flip[:, :, None, None, None], x.flip(-1), x)
    real = mask.bool()
    x = torch.where(real[:, :, None, None, None], x, torch.zeros((), dtype=x.dtype))
    y = torch.where(real[:, :, None], torch.from_numpy(labels[rows].astype(np.float32)), torch.zeros(()))
    return x, y, mask


def train_group(
    recipe: Recipe,
    settings: AdamW,
    images: np.ndarray,
    labels: np.ndarray,
    parts: Sequence[np.ndarray],
    seeds: Sequence[int],
    device: torch.device,
    precision="32-true",
) -> tuple[list[dict[str, torch.Tensor]], list[float], float]:
    """Train one teacher per (part, seed) together, in ``precision`` (one of 32, 32-true, bf16-mixed). Returns
    their state dicts (parameters and buffers, on CPU), their last epoch's mean training loss and the seconds
    taken."""
    if str(precision) not in _PRECISIONS:
        raise ValueError(f"precision must be one of {_PRECISIONS}, got {precision!r}")
    start = time.perf_counter()
    nets = []
    for seed in seeds:
        pl.seed_everything(seed, workers=True, verbose=False)  # the loop's initialisation of this teacher
        nets.append(recipe.make_net())
    params, constants = _stack(nets, device)
    skeleton = nets[0].to(device)  # only its structure is used: functional_call swaps in the stacked tensors
    state = {name: (torch.zeros_like(p), torch.zeros_like(p)) for name, p in params.items()}
    g_count, batch = len(parts), recipe.batch_size
    sizes = torch.tensor([len(part) for part in parts])
    per_epoch = (sizes + batch - 1) // batch
    total = (per_epoch * recipe.max_epochs).double().to(device)
    steps = torch.zeros(g_count, dtype=torch.float64, device=device)
    orders = [torch.Generator().manual_seed(int(seed)) for seed in seeds]
    flips = [torch.Generator().manual_seed(int(seed)) for seed in seeds]
    base_lr = torch.full((g_count,), settings.lr, dtype=torch.float64, device=device)

    def loss_of(p, c, x, y, mask):  # one teacher: the mean BCE over its real entries (as the loop's loss.mean())
        logits = functional_call(
            skeleton,
            {name: t.to(dtype) if t.is_floating_point() else t for name, t in {**p, **c}.items()},
            (x.to(dtype),),
        )
        losses = F.binary_cross_entropy_with_logits(logits.float(), y, reduction="none")
        return (losses * mask[:, None]).sum() / (mask.sum() * y.shape[1]).clamp_min(1)

    # torch.autocast does not reach inside torch.func.vmap (a convolution there stays float32), so bf16-mixed
    # casts by hand: the forward pass in bfloat16 on bfloat16 copies of the float32 master weights, whose
    # gradients flow back in float32 (mixed precision as Micikevicius et al. 2018 define it).
    dtype = torch.bfloat16 if str(precision) == "bf16-mixed" else torch.float32
    batched_loss = vmap(loss_of)
    last_loss = [0.0] * g_count
    for _ in range(recipe.max_epochs):
        perms = [parts[g][_epoch_order(len(parts[g]), orders[g])] for g in range(g_count)]
        epoch_loss, epoch_seen = torch.zeros(g_count), torch.zeros(g_count)
        for t in range(int(per_epoch.max())):
            x, y, mask = _step_batch(perms, t, batch, images, labels, flips if recipe.augment else None)
            x, y, mask = x.to(device), y.to(device), mask.to(device)
            losses = batched_loss(params, constants, x, y, mask)
            grads = dict(zip(params, torch.autograd.grad(losses.sum(), list(params.values())), strict=True))
            active = mask.any(dim=1)
            lr = cosine_lr(base_lr, steps, total)  # the rate of this step: the schedule has taken `steps` steps
            steps += active
            adamw_step(params, grads, state, settings, lr.float(), steps.float(), active)
            seen = mask.sum(dim=1).cpu()
            epoch_loss += losses.detach().cpu() * seen
            epoch_seen += seen
        last_loss = (epoch_loss / epoch_seen.clamp_min(1)).tolist()
    stacked = {**params, **constants}
    states = [{name: stacked[name][g].detach().cpu().clone() for name in skeleton.state_dict()} for g in range(g_count)]
    return states, last_loss, time.perf_counter() - start


__all__ = ["adamw_step", "cosine_lr", "refusal", "train_group"]
