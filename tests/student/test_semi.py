"""Semi-supervised students: per-attribute confidence thresholds, the ridge self-training and consistency refits
against their definition, the masked loss of CNN pseudo-labelling and FixMatch's loss and batches."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from omegaconf import OmegaConf
from torch.nn import functional as F

from pate.features import fit_ridge_heads, head_scores, head_weights
from pate.features.views import strong_view
from pate.pipeline.settings import head_student_settings, semi_supervision
from student.consistency import ConsistencyModule, consistency_loaders
from student.head import train_head_student
from student.semi import SemiSupervision, confident_pseudo_labels
from student.settings import NetworkStudentSettings
from student.train import student_loader
from teachers.training.data import to_float
from teachers.training.models import SmallCNN
from teachers.training.module import MultiLabelModule, random_hflip
from teachers.training.recipe import Recipe
from teachers.training.trainer import TrainerSettings


def test_the_threshold_is_per_attribute():
    """Attribute 0's scores sit near 1/2, attribute 1's far from it: each keeps its own most confident half."""
    gen = torch.Generator().manual_seed(0)
    scores = torch.stack(
        [0.5 + 0.01 * torch.randn(1000, generator=gen), 0.5 + 0.4 * torch.randn(1000, generator=gen)], dim=1
    )
    hard, confident = confident_pseudo_labels(scores, keep_fraction=0.5)
    assert torch.equal(hard, (scores > 0.5).float())
    np.testing.assert_allclose(confident.double().mean(0).numpy(), [0.5, 0.5], atol=0.002)
    # one global threshold (the median over both attributes) would keep few of attribute 0's entries
    assert (((scores - 0.5).abs() >= (scores - 0.5).abs().median())[:, 0]).double().mean() < 0.1


@pytest.mark.parametrize(
    "node, match",
    [
        ({"method": "fixmatch"}, "method"),
        ({"keep_fraction": 0}, "keep_fraction"),
        ({"keep_fraction": 1.5}, "keep_fraction"),
        ({"rounds": 0}, "rounds"),
        ({"unlabeled_weight": 0}, "unlabeled_weight"),
        ({"unlabeled_ratio": 1.5}, "unlabeled_ratio"),
        ({"min_scale": 0}, "min_scale"),
        ({"jitter": 1.2}, "jitter"),
        ({"jiter": 0.1}, ""),
    ],
)
def test_bad_semi_settings_name_the_key(node, match):
    cfg = OmegaConf.create({"semi": {"method": "pseudo_label", "keep_fraction": 0.5, "rounds": 1, **node}})
    with pytest.raises(ValueError, match=f"student.semi.{match}"):
        semi_supervision(cfg)


def _problem(n=60, u=200, e=100, d=12, labels=3, seed=0):
    rng = np.random.default_rng(seed)
    w = rng.normal(size=(d, labels))
    x = torch.from_numpy(rng.normal(size=(n + u + e, d))).float()
    y = ((x.numpy() @ w) > 0).astype(np.uint8)
    return x[:n], y[:n], x[n : n + u], x[n + u :], y[n + u :]


@pytest.mark.parametrize("method", ["pseudo_label", "consistency"])
def test_head_self_training_is_the_refit_it_describes(method):
    """One round = ridge on the labeled rows, then ridge on labeled + refit rows whose targets are the hard
    pseudo-label of the unlabeled features where confident and the first head's score on the refit rows
    elsewhere; the refit rows are the unlabeled features themselves (pseudo_label) or their strong views
    (consistency)."""
    x, y, unlabeled, x_eval, y_eval = _problem()
    strong = unlabeled + 0.3 * torch.randn(unlabeled.shape, generator=torch.Generator().manual_seed(1))
    lambdas = [0.01, 0.1, 1.0]
    semi = {"method": method, "keep_fraction": 0.3, "rounds": 1}
    settings = head_student_settings(OmegaConf.create({"lambdas": lambdas, "semi": semi}))
    got = train_head_student(settings, x, y, unlabeled, x_eval, y_eval, strong_features=strong)

    def fit(features, targets):
        heads = fit_ridge_heads(features[None], targets[None], lambdas)
        return head_weights(features[None], heads.beta, heads.ybar)

    refit_on = strong if method == "consistency" else unlabeled
    w, b = fit(x, torch.from_numpy(y).float())
    scores = head_scores(unlabeled, w, b)[0]
    conf = (scores - 0.5).abs()
    keep = conf >= torch.quantile(conf.double(), 0.7, dim=0).float()
    w, b = fit(
        torch.cat([x, refit_on]),
        torch.cat(
            [torch.from_numpy(y).float(), torch.where(keep, (scores > 0.5).float(), head_scores(refit_on, w, b)[0])]
        ),
    )
    predicted = (head_scores(x_eval, w, b)[0] > 0.5).numpy()
    assert got["student_accuracy"] == pytest.approx(float((predicted == y_eval.astype(bool)).mean()), abs=1e-6)
    assert got["student_unlabeled_size"] == len(unlabeled) and got["student_semi"] == method
    assert got["student_pseudo_labelled_fraction"] == pytest.approx(0.3, abs=0.02)
    supervised = train_head_student(
        head_student_settings(OmegaConf.create({"lambdas": lambdas})), x, y, unlabeled, x_eval, y_eval
    )
    assert supervised["student_unlabeled_size"] == 0 and supervised["student_pseudo_labelled_fraction"] == 0


def test_head_consistency_with_identical_views_is_pseudo_labelling():
    x, y, unlabeled, x_eval, y_eval = _problem(seed=3)
    node = {"keep_fraction": 0.4, "rounds": 2}
    runs = [
        train_head_student(
            head_student_settings(OmegaConf.create({"lambdas": [0.1, 1.0], "semi": {"method": method, **node}})),
            x,
            y,
            unlabeled,
            x_eval,
            y_eval,
            strong_features=unlabeled.clone(),
        )
        for method in ("pseudo_label", "consistency")
    ]
    assert runs[0]["student_per_attribute_accuracy"] == runs[1]["student_per_attribute_accuracy"]


def test_head_consistency_needs_the_strong_views():
    x, y, unlabeled, x_eval, y_eval = _problem()
    settings = head_student_settings(OmegaConf.create({"lambdas": [1.0], "semi": {"method": "consistency"}}))
    with pytest.raises(ValueError, match="consistency needs strong_features"):
        train_head_student(settings, x, y, unlabeled, x_eval, y_eval)
    with pytest.raises(ValueError, match=r"shape \(200, 12\), got \(199, 12\)"):
        train_head_student(settings, x, y, unlabeled, x_eval, y_eval, strong_features=unlabeled[1:])


def test_masked_entries_add_nothing_to_the_loss():
    torch.manual_seed(0)
    module = MultiLabelModule(SmallCNN(num_labels=3, width=4), num_labels=3)
    images = torch.randint(0, 256, (4, 3, 32, 32), dtype=torch.uint8)
    targets = torch.randint(0, 2, (4, 3)).float()
    mask = torch.tensor([[1, 0, 1], [1, 1, 1], [0, 0, 1], [1, 0, 0]]).float()
    module.log = lambda *a, **k: None
    loss = module.training_step((images, targets, mask), 0)
    flipped = torch.where(mask.bool(), targets, 1 - targets)  # change only what is masked out
    assert torch.allclose(loss, module.training_step((images, flipped, mask), 0))
    logits = module.net(to_float(images))
    expected = torch.nn.functional.binary_cross_entropy_with_logits(logits, targets, reduction="none")
    assert torch.allclose(loss, (expected * mask).sum() / mask.sum())


def _consistency_module(seed=5, weight=0.7):
    semi = SemiSupervision(method="consistency", keep_fraction=0.5, unlabeled_weight=weight)
    recipe = Recipe(
        make_net=lambda: SmallCNN(num_labels=3, width=4),
        make_optimizer=torch.optim.AdamW,
        num_labels=3,
        augment=False,
        batch_size=4,
        max_epochs=1,
    )
    torch.manual_seed(0)
    module = ConsistencyModule(recipe, semi, seed)
    module.log_dict = lambda *a, **k: None
    return module, semi


def test_the_consistency_loss_is_fixmatch_with_per_attribute_thresholds():
    """The step's loss = BCE on the labeled batch + weight x the mean over all unlabeled entries of the
    confident entries' BCE between the strong view's logits and the weak view's hard labels."""
    module, semi = _consistency_module()
    images = torch.randint(0, 256, (4, 3, 32, 32), dtype=torch.uint8)
    targets = torch.randint(0, 2, (4, 3)).float()
    unlabeled = torch.randint(0, 256, (8, 3, 32, 32), dtype=torch.uint8)
    torch.manual_seed(11)  # the weak view's flips come from the global RNG
    loss = module.training_step({"labeled": (images, targets), "unlabeled": unlabeled}, 0)
    torch.manual_seed(11)
    net = module.net
    supervised = F.binary_cross_entropy_with_logits(net(to_float(images)), targets)
    with torch.no_grad():
        weak = torch.sigmoid(net(random_hflip(to_float(unlabeled))))
    hard, confident = confident_pseudo_labels(weak, semi.keep_fraction)
    strong = strong_view(unlabeled, torch.Generator().manual_seed(5 * 1_000_003), semi.min_scale, semi.jitter)
    unsupervised = (
        F.binary_cross_entropy_with_logits(net(to_float(strong)), hard, reduction="none") * confident
    ).sum() / hard.numel()
    torch.testing.assert_close(loss, supervised + 0.7 * unsupervised)
    assert module.confident_fraction == pytest.approx(float(confident.double().mean()))
    assert not torch.equal(strong, unlabeled) and strong.dtype == torch.uint8


def test_consistency_batches_pair_each_labeled_batch_with_ratio_times_as_many_pool_images():
    recipe = Recipe(
        make_net=lambda: SmallCNN(num_labels=2, width=4),
        make_optimizer=torch.optim.AdamW,
        num_labels=2,
        augment=False,
        batch_size=4,
        max_epochs=1,
    )
    labeled = student_loader(
        NetworkStudentSettings(recipe),
        TrainerSettings(num_workers=0),
        np.full((10, 3, 8, 8), 3, np.uint8),
        np.zeros((10, 2), np.uint8),
        seed=0,
    )
    pool = np.full((50, 3, 8, 8), 7, np.uint8)
    pool[:, 0, 0, 0] = np.arange(50)  # tell the images apart
    combined = consistency_loaders(labeled, pool, ratio=2, seed=1, num_workers=0)
    batches = [batch for batch, *_ in combined]
    assert len(batches) == len(labeled) == 3
    for batch in batches:
        assert batch["unlabeled"].shape == (8, 3, 8, 8) and (batch["unlabeled"][:, 1] == 7).all()
        assert (batch["labeled"][0] == 3).all()
    again = [batch["unlabeled"][:, 0, 0, 0] for batch, *_ in consistency_loaders(labeled, pool, 2, 1, 0)]
    assert all(torch.equal(a["unlabeled"][:, 0, 0, 0], b) for a, b in zip(batches, again))


def test_a_label_left_out_of_the_release_adds_nothing_to_the_head_student():
    """A confident selection's missing labels: each attribute's head is the ridge on the rows that released it, so
    flipping a missing entry changes nothing, and the result equals fitting that attribute on its rows alone."""
    x, y, unlabeled, x_eval, y_eval = _problem(seed=4)
    mask = np.random.default_rng(9).random(y.shape) < 0.7
    settings = head_student_settings(OmegaConf.create({"lambdas": [0.1, 1.0]}))
    got = train_head_student(settings, x, y, unlabeled, x_eval, y_eval, train_mask=mask)
    flipped = np.where(mask, y, 1 - y)
    assert train_head_student(settings, x, flipped, unlabeled, x_eval, y_eval, train_mask=mask) == got
    for label in range(y.shape[1]):
        rows = torch.from_numpy(mask[:, label])
        twice = [label, label]  # two columns: the scores need at least 2 labels
        alone = train_head_student(settings, x[rows], y[mask[:, label]][:, twice], unlabeled, x_eval, y_eval[:, twice])
        assert got["student_per_attribute_accuracy"][label] == pytest.approx(
            alone["student_per_attribute_accuracy"][0], abs=1e-6
        )
    everything = train_head_student(settings, x, y, unlabeled, x_eval, y_eval)
    assert train_head_student(settings, x, y, unlabeled, x_eval, y_eval, train_mask=np.ones_like(mask)) == everything
    with pytest.raises(ValueError, match="train_mask must have the shape"):
        train_head_student(settings, x, y, unlabeled, x_eval, y_eval, train_mask=mask[:, :2])


def test_a_label_left_out_of_the_release_adds_nothing_to_the_consistency_loss():
    module, _ = _consistency_module()
    images = torch.randint(0, 256, (4, 3, 32, 32), dtype=torch.uint8)
    targets = torch.randint(0, 2, (4, 3)).float()
    mask = torch.tensor([[1, 0, 1], [1, 1, 1], [0, 0, 1], [1, 0, 0]]).float()
    unlabeled = torch.randint(0, 256, (8, 3, 32, 32), dtype=torch.uint8)
    losses = []
    for labels in (targets, torch.where(mask.bool(), targets, 1 - targets)):
        torch.manual_seed(11)
        losses.append(module.training_step({"labeled": (images, labels, mask), "unlabeled": unlabeled}, 0))
    torch.testing.assert_close(losses[0], losses[1])
