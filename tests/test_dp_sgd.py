"""DP-SGD with Opacus: its clipped per-example gradients against a direct computation (to 1e-6), its noise
against its stated distribution, and a run's epsilon against dp-accounting (add_remove: RDP, to 1e-3; replace:
the tight PLD, never below it) and against Opacus' own accountant (add_remove)."""

from __future__ import annotations

import copy

import numpy as np
import pytest
import torch
from dp_accounting import dp_event as dpa
from dp_accounting.pld import PLDAccountant
from dp_accounting.privacy_accountant import NeighboringRelation as NeighborRel
from dp_accounting.rdp import RdpAccountant

from pate.dp_sgd import MultiLabelLoss, linear_probe, score_model, train_dp_sgd
from pate.mechanisms.poisson import poisson_subsample
from pate.privacy import DEFAULT_ORDERS, Ledger, sampled_gaussian_steps


def _seeded(seed, device="cpu"):
    """train_dp_sgd's generators, seeded: the batches' on the CPU from ``seed``, the noise's from ``seed + 1``."""
    return {
        "batches": torch.Generator().manual_seed(seed),
        "noise": torch.Generator(device=device).manual_seed(seed + 1),
    }


def _task(n=64, d=9, num_labels=4, seed=0):
    gen = torch.Generator().manual_seed(seed)
    return 3 * torch.randn(n, d, generator=gen), (torch.rand(n, num_labels, generator=gen) < 0.4).float()


def _direct_step(model, x, y, batch, clip, expected_batch, lr):
    """One DP-SGD step without noise, by hand: each record's gradient of its own loss, scaled by
    min(1, C / (||g|| + 1e-6)) (Opacus' clipping factor), summed and divided by the expected batch size."""
    weight, bias = model.weight.detach().clone(), model.bias.detach().clone()
    total_w, total_b = torch.zeros_like(weight), torch.zeros_like(bias)
    for i in batch.tolist():
        w, b = weight.clone().requires_grad_(True), bias.clone().requires_grad_(True)
        loss = MultiLabelLoss("sum")((x[i] @ w.T + b)[None], y[i][None])
        gw, gb = torch.autograd.grad(loss, [w, b])
        factor = min(1.0, clip / (float(torch.sqrt((gw**2).sum() + (gb**2).sum())) + 1e-6))
        total_w += factor * gw
        total_b += factor * gb
    return weight - lr * total_w / expected_batch, bias - lr * total_b / expected_batch


@pytest.mark.parametrize("rate", [1.0, 0.5])
def test_opacus_clipped_gradients_equal_a_direct_computation(rate):
    x, y = _task()
    model = linear_probe(9, 4)
    torch.nn.init.normal_(model.weight, generator=torch.Generator().manual_seed(1))
    start = copy.deepcopy(model)
    train_dp_sgd(
        model,
        x,
        y,
        sampling_rate=rate,
        expected_batch_size=round(rate * 64),
        noise_multiplier=1e-12,
        clip_norm=0.5,
        steps=1,
        lr=0.3,
        momentum=0.0,
        **_seeded(7),
    )
    # the batch is the shared Poisson sampler's draw from the batches' generator
    batch = torch.nonzero(poisson_subsample((64,), rate, torch.Generator().manual_seed(7))).squeeze(1)
    weight, bias = _direct_step(start, x, y, batch, 0.5, round(rate * 64), 0.3)
    torch.testing.assert_close(model.weight.detach(), weight, atol=1e-6, rtol=0)
    torch.testing.assert_close(model.bias.detach(), bias, atol=1e-6, rtol=0)


def test_the_noise_has_standard_deviation_multiplier_times_clip_over_the_expected_batch():
    """Inputs of zero give weight gradients of zero: a step moves the weights by the noise alone,
    N(0, (sigma C / B)^2) per coordinate, 20,000 coordinates (standard error of the std ~0.5%)."""
    x, y = torch.zeros(50, 2000), (torch.rand(50, 10, generator=torch.Generator().manual_seed(0)) < 0.5).float()
    model = linear_probe(2000, 10)
    train_dp_sgd(
        model,
        x,
        y,
        sampling_rate=1.0,
        expected_batch_size=50,
        noise_multiplier=2.0,
        clip_norm=0.7,
        steps=1,
        lr=1.0,
        momentum=0.0,
        **_seeded(0),
    )
    step = model.weight.detach().numpy().ravel()
    assert abs(step.mean()) < 4 * 2.0 * 0.7 / 50 / np.sqrt(step.size)
    assert step.std() == pytest.approx(2.0 * 0.7 / 50, rel=0.02)


def test_a_poisson_batch_can_be_empty_and_that_step_is_noise_alone():
    x, y = _task()
    model = linear_probe(9, 4)
    train_dp_sgd(
        model,
        x,
        y,
        sampling_rate=1e-9,
        expected_batch_size=1,
        noise_multiplier=1.0,
        clip_norm=1.0,
        steps=1,
        lr=1.0,
        momentum=0.0,
        **_seeded(0),
    )
    assert model.weight.abs().sum() > 0  # no record, yet the noise moved it


def test_the_divisor_is_the_given_constant_not_a_count_of_the_records():
    """Noise alone (inputs of zero): the step's spread is sigma C / expected_batch_size whatever the number of
    records, so two record sets of different sizes (add_remove's neighbours) get the same divisor."""
    spreads = []
    for n in (50, 51):
        x, y = torch.zeros(n, 2000), torch.zeros(n, 10)
        model = linear_probe(2000, 10)
        train_dp_sgd(
            model,
            x,
            y,
            sampling_rate=1.0,
            expected_batch_size=40,
            noise_multiplier=2.0,
            clip_norm=0.7,
            steps=1,
            lr=1.0,
            momentum=0.0,
            **_seeded(3),
        )
        spreads.append(model.weight.detach().numpy().std())
    assert spreads[0] == spreads[1] == pytest.approx(2.0 * 0.7 / 40, rel=0.02)  # same noise draws, same divisor


def test_dp_sgd_learns_an_easy_task_and_is_scored_like_a_student():
    x, y = _task(n=2000)
    y = (x[:, :4] > 0).float()  # label l is the sign of feature l
    model = train_dp_sgd(
        linear_probe(9, 4),
        x,
        y,
        sampling_rate=0.25,
        expected_batch_size=500,
        noise_multiplier=0.5,
        clip_norm=1.0,
        steps=60,
        lr=2.0,
        momentum=0.9,
        **_seeded(0),
    )
    scores = score_model(model, x, y.numpy())
    assert scores["student_accuracy"] > 0.95 and len(scores["student_per_attribute_accuracy"]) == 4


@pytest.mark.parametrize("rate,sigma,steps", [(0.051, 1.0, 392), (0.01, 0.8, 2000)])
def test_the_add_remove_epsilon_equals_dp_accountings_and_opacus(rate, sigma, steps):
    from opacus.accountants import RDPAccountant as OpacusRDP

    ours = (
        Ledger(neighbors="add_remove")
        .compose_event(sampled_gaussian_steps(rate, sigma, steps, "add_remove"))
        .get_epsilon(1e-6, "rdp")
        .epsilon
    )
    integer_orders = [float(a) for a in range(2, 257)]
    reference = RdpAccountant(orders=integer_orders)
    reference.compose(dpa.PoissonSampledDpEvent(rate, dpa.GaussianDpEvent(sigma)), steps)
    on_integers = (
        Ledger(orders=integer_orders, neighbors="add_remove")
        .compose_event(sampled_gaussian_steps(rate, sigma, steps, "add_remove"))
        .get_epsilon(1e-6, "rdp")
        .epsilon
    )
    assert on_integers == pytest.approx(reference.get_epsilon(1e-6), rel=1e-3)
    opacus = OpacusRDP()
    opacus.history = [(sigma, rate, steps)]
    # Opacus prices fractional orders exactly and searches a coarser grid; ours charges ceil(alpha) on a finer one
    assert ours == pytest.approx(opacus.get_epsilon(1e-6), rel=0.03)
    assert ours <= on_integers  # the default grid contains every integer order up to 256


def test_the_replace_epsilon_never_undercuts_dp_accountings_tight_pld_and_stays_within_ten_percent():
    ours = (
        Ledger(orders=DEFAULT_ORDERS, neighbors="replace")
        .compose_event(sampled_gaussian_steps(0.051, 1.0, 392, "replace"))
        .get_epsilon(1e-6, "rdp")
        .epsilon
    )
    pld = PLDAccountant(neighboring_relation=NeighborRel.REPLACE_ONE, value_discretization_interval=1e-3)
    pld.compose(dpa.PoissonSampledDpEvent(0.051, dpa.GaussianDpEvent(1.0)), 392)
    assert pld.get_epsilon(1e-6) <= ours <= 1.1 * pld.get_epsilon(1e-6)


@pytest.mark.gpu
def test_dp_sgd_trains_on_a_cuda_device_and_returns_the_model_on_the_cpu():
    x, _ = _task(n=4000)
    y = (x[:, :4] > 0).float()
    model = train_dp_sgd(
        linear_probe(9, 4),
        x,
        y,
        sampling_rate=0.25,
        expected_batch_size=1000,
        noise_multiplier=0.5,
        clip_norm=1.0,
        steps=60,
        lr=2.0,
        momentum=0.9,
        device="cuda",
        **_seeded(0, "cuda"),
    )
    assert model.weight.device.type == "cpu"
    assert score_model(model, x, y.numpy())["student_accuracy"] > 0.95
