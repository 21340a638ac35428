"""User-level DP-SGD (``pate.dp_sgd_people``): each sampled person's gradient, the mean of their rows' per-example
gradients, clipped as a whole, so one person -- all of their rows -- moves a step's clipped sum by at most the
clipping norm. The neighbours are built by the relation on the input the step takes: every row of one person
removed."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from pate.dp_sgd import linear_probe
from pate.dp_sgd_people import person_clipped_sum, train_dp_sgd_by_person
from teachers.training.models import SmallCNN

CLIP = 0.5


def _data(seed: int = 0):
    """60 rows of 14 people (2 to 6 rows each); person 0's rows carry large, aligned gradients (same input, all
    labels 1 against a probe at 1/2)."""
    rng = np.random.default_rng(seed)
    person = np.repeat(np.arange(14), rng.integers(2, 7, 14))
    x = torch.from_numpy(rng.normal(size=(len(person), 8))).float()
    y = torch.from_numpy(rng.integers(0, 2, (len(person), 3))).float()
    x[person == 0], y[person == 0] = 5.0, 1.0
    return x, y, person


def _norm(gradients: dict) -> float:
    return float(torch.sqrt(sum((g**2).sum() for g in gradients.values())))


def _clipped(model, x, y, owner):
    codes = torch.from_numpy(np.unique(owner, return_inverse=True)[1])
    total = person_clipped_sum(model, x, y, codes, int(codes.max()) + 1, CLIP)
    assert all(g.dtype == torch.float64 for g in total.values())  # summed across people in float64
    return {name: g.float() for name, g in total.items()}


def test_a_persons_gradient_is_the_mean_of_their_rows_clipped_as_a_whole():
    x, y, person = _data()
    model = linear_probe(8, 3)
    expected = {name: torch.zeros_like(p) for name, p in model.named_parameters()}
    for who in np.unique(person):
        model.zero_grad()
        rows = person == who
        loss = torch.nn.functional.binary_cross_entropy_with_logits(model(x[rows]), y[rows], reduction="sum")
        (loss / rows.sum()).backward()
        gradient = {name: p.grad.clone() for name, p in model.named_parameters()}
        factor = min(1.0, CLIP / (_norm(gradient) + 1e-6))
        for name in expected:
            expected[name] += factor * gradient[name]
    got = _clipped(model, x, y, person)
    assert all(torch.allclose(got[name], expected[name], atol=1e-6) for name in expected)


@pytest.mark.parametrize("model", [linear_probe(8, 3), None], ids=["linear", "small_cnn"])
def test_removing_one_person_moves_the_clipped_sum_by_at_most_the_clip_and_per_row_clipping_by_more(model):
    """The planted weakening -- each row clipped on its own, as record-level DP-SGD does -- lets person 0's five
    aligned rows move the sum by about five times the clip."""
    x, y, person = _data()
    if model is None:  # images: 3 x 16 x 16, the GroupNorm CNN DP-SGD trains from scratch
        torch.manual_seed(0)
        model = SmallCNN(3, 4, norm="group")
        x = x.repeat_interleave(96, dim=1).reshape(-1, 3, 16, 16)
    keep = person != 0
    by_person = _clipped(model, x, y, person)
    without = _clipped(model, x[keep], y[keep], person[keep])
    assert _norm({k: by_person[k] - without[k] for k in by_person}) <= CLIP * (1 + 1e-5)
    rows = np.arange(len(person))  # every row its own owner: per-example clipping
    by_row = _clipped(model, x, y, rows)
    without_rows = _clipped(model, x[keep], y[keep], rows[keep])
    assert _norm({k: by_row[k] - without_rows[k] for k in by_row}) > 2 * CLIP


def _noise_free_step(model, x, y, person, expected_batch_size: int, lr: float) -> None:
    """One user-level DP-SGD step of ``model``, in place: every person sampled, no noise, no momentum."""
    train_dp_sgd_by_person(
        model,
        x,
        y,
        person,
        sampling_rate=1.0,
        expected_batch_size=expected_batch_size,
        noise_multiplier=0.0,
        clip_norm=CLIP,
        steps=1,
        lr=lr,
        momentum=0.0,
        batches=torch.Generator().manual_seed(0),
        noise=torch.Generator().manual_seed(1),
    )


def test_a_step_without_noise_at_rate_one_is_the_clipped_mean_gradient_step():
    """Every person sampled, no noise, no momentum: one step moves the weights by -lr / B times the clipped sum."""
    x, y, person = _data(1)
    model, reference = linear_probe(8, 3), linear_probe(8, 3)
    expected = _clipped(reference, x, y, person)
    _noise_free_step(model, x, y, person, expected_batch_size=10, lr=0.3)
    for name, p in model.named_parameters():
        assert torch.allclose(
            p.detach(), dict(reference.named_parameters())[name] - 0.3 / 10 * expected[name], atol=1e-6
        )


def test_a_person_of_more_rows_than_a_chunk_is_clipped_once_chunk_by_chunk(monkeypatch):
    """A person holding more rows than one chunk gets the gradient of their mean loss accumulated by chunks, the
    same as the per-example route, and a noise-free step at rate 1 moves the weights as the direct clipped sum."""
    import pate.dp_sgd_people as people

    x, y, person = _data(2)
    model = linear_probe(8, 3)
    direct = _clipped(model, x, y, person)
    monkeypatch.setattr(people, "_CHUNK_ROWS", 3)  # person 0's rows exceed it; the others fit
    reference = linear_probe(8, 3)
    _noise_free_step(model, x, y, person, expected_batch_size=1, lr=1.0)
    for name, p in model.named_parameters():
        assert torch.allclose(p.detach(), dict(reference.named_parameters())[name] - direct[name], atol=1e-5)


def test_a_linear_layers_clipped_sum_is_the_per_example_routes_without_per_example_gradients():
    """The probe's shortcut (norms from the Gram matrices of a person's rows, the clipped sum as one product) against
    ``torch.func``'s per-example gradients summed and clipped person by person, for people whose rows are
    interleaved and of unequal counts, some clipped and some not."""
    from pate.dp_sgd_people import _clip_factor, _linear_clipped_sum, _person_gradients

    rng = np.random.default_rng(3)
    owner = torch.from_numpy(rng.permutation(np.repeat(np.arange(9), rng.integers(1, 8, 9))))
    x = torch.from_numpy(rng.normal(size=(len(owner), 6))).float()
    y = torch.from_numpy(rng.integers(0, 2, (len(owner), 4))).float()
    model = linear_probe(6, 4)
    torch.nn.init.normal_(model.weight, generator=torch.Generator().manual_seed(4))
    per_person = _person_gradients(model, x, y, owner, 9)
    norms = torch.sqrt(sum(g.flatten(1).pow(2).sum(dim=1) for g in per_person.values()))
    clip = float(norms.median())
    assert (norms < clip).any() and (norms > clip).any()
    factor = _clip_factor(norms, clip)
    direct = {name: (g * factor.view(-1, *[1] * (g.dim() - 1))).sum(dim=0) for name, g in per_person.items()}
    shortcut = _linear_clipped_sum(model, x, y, owner, 9, clip)
    assert shortcut.keys() == direct.keys() == {"weight", "bias"}
    assert all(torch.allclose(shortcut[name].float(), direct[name], atol=1e-5) for name in direct)


def test_huge_nearly_equal_rows_are_clipped_and_cannot_round_another_persons_gradient():
    """An outside audit's pairs. (1) One person of two rows near 2^39 that differ in one place, labels 1 and 0: a
    norm taken from the Gram matrices cancelled to zero and left the mean gradient (norm 16,384) unclipped. (2)
    Person A's large terms that cancel, person B's small one between them: one product over everyone's rows let
    A round B's term into a change of 2 clips. Each person's gradient is now formed and clipped on its own."""
    from pate.dp_sgd_people import person_clipped_sum

    rng = np.random.default_rng(0)
    x = torch.from_numpy(rng.uniform(2.0**39, 2.0**40, (1, 1000))).float().repeat(2, 1)
    x[1, 0] = torch.nextafter(x[1, 0], torch.tensor(float("inf")))
    model = linear_probe(1000, 1)
    clipped = person_clipped_sum(model, x, torch.tensor([[1.0], [0.0]]), torch.tensor([0, 0]), 1, 1.0)
    assert 0.99 < _norm(clipped) <= 1.0 + 1e-6
    big = 2.0**24 + 2
    rows = torch.tensor([[-big], [-1.0], [big]])  # A, B, A: every label 0, so each row's term is x / 2
    model = torch.nn.Linear(1, 1, bias=False)
    torch.nn.init.zeros_(model.weight)
    y = torch.zeros(3, 1)
    with_b = person_clipped_sum(model, rows, y, torch.tensor([0, 1, 0]), 2, 1.00001)
    without_b = person_clipped_sum(model, rows[[0, 2]], y[:2], torch.tensor([0, 0]), 1, 1.00001)
    assert _norm({"weight": with_b["weight"] - without_b["weight"]}) <= 1.00001


def _drifting_people(person: float) -> tuple[torch.Tensor, torch.Tensor]:
    """2,048 one-row people of a zero-initialised one-weight model, all targets 0, so a row's gradient is x / 2: a
    float32 running sum brought to just below 2^10 by the people before ``person``, and 1,000 people of -0.6 of
    that float32 spacing after (an outside audit's construction): whether the sum sits below or above 2^10 after
    ``person`` decides whether each later term rounds to a whole spacing or to nothing."""
    spacing = 2.0 ** (10 - 24)
    lead = np.float32(31 / 32)
    count = int(np.ceil(2.0**10 / lead)) - 1
    total = np.float32(0)
    for _ in range(count):
        total = np.float32(total + lead)
    helper = np.float32(2.0**10 + 2 * spacing - float(total))
    tail = np.full(2048 - count - 2, np.float32(-0.6 * spacing))
    values = np.concatenate([np.full(count, lead), [helper, np.float32(person)], tail]).astype(np.float32)
    return torch.from_numpy(2 * values).view(-1, 1), torch.zeros(len(values), 1)


def test_one_person_moves_the_clipped_sum_by_at_most_their_clip_whatever_the_others_round_to():
    """Summed in float32 across people, removing the person moved this sum by 1.06 clips and replacing them by 2.06
    (an outside audit); in float64 the moves are their own gradients, 0.999 and 1.998."""

    def clipped(x, y):
        model = torch.nn.Sequential(torch.nn.Linear(1, 1, bias=False))
        torch.nn.init.zeros_(model[0].weight)
        return person_clipped_sum(model, x, y, torch.arange(len(x)), len(x), 1.0)["0.weight"]

    with_person, y = _drifting_people(-0.999)
    replaced, _ = _drifting_people(0.999)
    keep = torch.arange(len(with_person)) != int(np.ceil(2.0**10 / np.float32(31 / 32)))  # the person's row
    base = clipped(with_person, y)
    assert float((base - clipped(with_person[keep], y[keep])).norm()) <= 1.0
    assert float((base - clipped(replaced, y)).norm()) <= 2.0


def test_a_person_whose_gradient_overflows_adds_zero_not_nan():
    """A row whose float32 gradient overflows (x = 1e20, target -1e20) would make 0 x inf = NaN in the sum, telling
    the person's presence; that person contributes zero instead, the others as before."""
    model = torch.nn.Sequential(torch.nn.Linear(1, 1, bias=False))
    torch.nn.init.zeros_(model[0].weight)
    x, y = torch.tensor([[1.0], [1e20]]), torch.tensor([[1.0], [-1e20]])
    total = person_clipped_sum(model, x, y, torch.tensor([0, 1]), 2, 1.0)["0.weight"]
    alone = person_clipped_sum(model, x[:1], y[:1], torch.tensor([0]), 1, 1.0)["0.weight"]
    assert torch.isfinite(total).all() and torch.equal(total, alone)
