"""Record-level DP-SGD's clipped sum is rounded too little to move by more than its sensitivity: a batch built so
that a float32 sum over the batch rounds every later record's term by whether one record is in it. Summed in
float32, as Opacus sums a float32 model's, that record moves the released sum by 1.115 C (bound: C, add/remove);
``train_dp_sgd`` sums in float64, where the same pair moves it by C to within 1e-6."""

from __future__ import annotations

import math

import torch

from pate.dp_sgd import linear_probe, probe_inputs, train_dp_sgd

BATCH, DIM, LABELS = 4096, 512, 2


def _adversarial_batch(act: int) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, int]:
    """(weight, bias, inputs, big): ``big`` records whose clipped terms put the running sum of each active weight
    coordinate just at a power of two 2^e with the first of them and just below it without, then records of tiny
    residuals whose unclipped terms are 0.7 of a float32 unit in the last place at 2^e: each rounds up to a whole
    unit above 2^e and down to half a unit below it, so the first record moves the sum by about twice its own term.
    Every row is a standardized probe input (``probe_inputs``), labels 0, logits set by the weight."""
    g = torch.Generator().manual_seed(0)
    sign = torch.zeros(DIM)
    sign[:act] = torch.randint(0, 2, (act,), generator=g).float() * 2 - 1
    flip = torch.ones(DIM)
    flip[torch.randperm(act, generator=g)[: act // 2]] = -1
    other = sign * flip  # orthogonal to sign
    x_big = probe_inputs((8 * sign).half().float()[None], "standardized")[0]
    x_small = probe_inputs((8 * (sign + other / 8)).half().float()[None], "standardized")[0]
    big_norm = 0.5 * math.sqrt(LABELS) * math.sqrt(float(x_big.double().norm() ** 2) + 1)  # residual 1/2 at logit 0
    term = 1.0 / (big_norm + 1e-6) * 0.5 * float(x_big.abs().max())  # one clipped big record, per coordinate
    exponent = math.floor(math.log2(term * BATCH / 4))
    big = math.ceil(2.0**exponent / term)
    residual = 0.7 * 2.0 ** (exponent - 23) / float(x_small.abs().max())
    direction = other / math.sqrt(act)
    scale = -math.log(residual / (1 - residual)) / float((direction * x_small).sum())
    weight = (-scale * direction).repeat(LABELS, 1)
    rows = torch.cat([x_big.expand(big, DIM), x_small.expand(BATCH - big, DIM)]).contiguous()
    return weight, torch.zeros(LABELS), rows, big


def _one_step(model, rows, sampling_rate=1.0, expected_batch_size=1, noise_multiplier=0.0):
    """``model`` after one step of ``train_dp_sgd`` on ``rows`` (labels 0, clip 1, lr 1, no momentum)."""
    return train_dp_sgd(
        model,
        rows,
        torch.zeros(len(rows), LABELS),
        sampling_rate=sampling_rate,
        expected_batch_size=expected_batch_size,
        noise_multiplier=noise_multiplier,
        clip_norm=1.0,
        steps=1,
        lr=1.0,
        momentum=0.0,
        batches=torch.Generator().manual_seed(1),
        noise=torch.Generator().manual_seed(2),
    )


def _released_sum(weight, bias, rows) -> torch.Tensor:
    """The clipped sum one step of ``train_dp_sgd`` adds to the model (every record sampled, no noise, lr 1, divisor
    1): the change of the parameters."""
    model = linear_probe(DIM, LABELS)
    with torch.no_grad():
        model.weight.copy_(weight)
        model.bias.copy_(bias)
    trained = _one_step(model, rows)
    return torch.cat([(weight - trained.weight.detach()).flatten(), (bias - trained.bias.detach()).flatten()])


def test_one_record_moves_the_clipped_sum_by_at_most_the_clipping_norm():
    weight, bias, rows, big = _adversarial_batch(act=400)
    assert 2 <= big < BATCH
    with_record = _released_sum(weight, bias, rows).double()
    without_record = _released_sum(weight, bias, rows[1:]).double()
    moved = float((with_record - without_record).norm())
    assert 0.999 <= moved <= 1.0 + 1e-6, moved  # the record's own clipped term, C = 1, and no more


def test_the_trained_model_comes_back_in_float32():
    model = _one_step(linear_probe(DIM, LABELS), torch.randn(8, DIM), 0.5, 4, 1.0)
    assert all(p.dtype == torch.float32 for p in model.parameters())
