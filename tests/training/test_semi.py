"""Semi-supervised students: per-attribute confidence thresholds, the ridge self-training refit against its
definition, and the masked loss of CNN pseudo-labelling."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from omegaconf import OmegaConf

from pate.features import fit_ridge_heads, head_scores, head_weights
from student.head import train_head_student
from student.semi import SemiSupervision, confident_pseudo_labels
from training.models import SmallCNN
from training.data import to_float
from training.module import MultiLabelModule


def test_the_threshold_is_per_attribute():
    """Attribute 0's scores sit near 1/2, attribute 1's far from it: each keeps its own most confident half."""
    gen = torch.Generator().manual_seed(0)
    scores = torch.stack([0.5 + 0.01 * torch.randn(1000, generator=gen),
                          0.5 + 0.4 * torch.randn(1000, generator=gen)], dim=1)
    hard, confident = confident_pseudo_labels(scores, keep_fraction=0.5)
    assert torch.equal(hard, (scores > 0.5).float())
    np.testing.assert_allclose(confident.double().mean(0).numpy(), [0.5, 0.5], atol=0.002)
    # one global threshold (the median over both attributes) would keep few of attribute 0's entries
    assert (((scores - 0.5).abs() >= (scores - 0.5).abs().median())[:, 0]).double().mean() < 0.1


@pytest.mark.parametrize("node, match", [({"method": "fixmatch"}, "method"), ({"keep_fraction": 0}, "keep_fraction"),
                                         ({"keep_fraction": 1.5}, "keep_fraction"), ({"rounds": 0}, "rounds")])
def test_bad_semi_settings_name_the_key(node, match):
    cfg = OmegaConf.create({"semi": {"method": "pseudo_label", "keep_fraction": 0.5, "rounds": 1, **node}})
    with pytest.raises(ValueError, match=f"student.semi.{match}"):
        SemiSupervision.from_config(cfg)


def _problem(n=60, u=200, e=100, d=12, labels=3, seed=0):
    rng = np.random.default_rng(seed)
    w = rng.normal(size=(d, labels))
    x = torch.from_numpy(rng.normal(size=(n + u + e, d))).float()
    y = ((x.numpy() @ w) > 0).astype(np.uint8)
    return x[:n], y[:n], x[n:n + u], x[n + u:], y[n + u:]


def test_head_self_training_is_the_refit_it_describes():
    """One round = ridge on the labeled rows, then ridge on labeled + unlabeled rows whose targets are the hard
    pseudo-label where confident and the first head's score elsewhere."""
    x, y, unlabeled, x_eval, y_eval = _problem()
    lambdas = [0.01, 0.1, 1.0]
    cfg = OmegaConf.create({"lambdas": lambdas, "semi": {"method": "pseudo_label", "keep_fraction": 0.3, "rounds": 1}})
    got = train_head_student(cfg, x, y, unlabeled, x_eval, y_eval)

    def fit(features, targets):
        heads = fit_ridge_heads(features[None], targets[None], lambdas)
        return head_weights(features[None], heads.beta, heads.ybar)

    w, b = fit(x, torch.from_numpy(y).float())
    scores = head_scores(unlabeled, w, b)[0]
    conf = (scores - 0.5).abs()
    keep = conf >= torch.quantile(conf.double(), 0.7, dim=0).float()
    w, b = fit(torch.cat([x, unlabeled]), torch.cat([torch.from_numpy(y).float(),
                                                     torch.where(keep, (scores > 0.5).float(), scores)]))
    predicted = (head_scores(x_eval, w, b)[0] > 0.5).numpy()
    assert got["student_accuracy"] == pytest.approx(float((predicted == y_eval.astype(bool)).mean()), abs=1e-6)
    assert got["student_unlabeled_size"] == len(unlabeled) and got["student_semi"] == "pseudo_label"
    assert got["student_pseudo_labelled_fraction"] == pytest.approx(0.3, abs=0.02)
    supervised = train_head_student(OmegaConf.create({"lambdas": lambdas}), x, y, unlabeled, x_eval, y_eval)
    assert supervised["student_unlabeled_size"] == 0 and supervised["student_pseudo_labelled_fraction"] == 0


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
