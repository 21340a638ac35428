"""FixMatch for the CNN student, adapted to multi-label (``student.semi.method=consistency``, student/semi.py).

Each training step reads a batch of B answered queries with their released labels and a batch of mu * B
unlabeled pool images (``unlabeled_ratio`` = mu, drawn with replacement by a seeded sampler, so that an epoch is
one pass over the labeled queries however large the pool). The loss is Sohn et al. (2020), Alg. 1, with
per-attribute thresholds in place of the softmax threshold:

    loss = mean BCE(f(flip(x_b)), y_b)
           + unlabeled_weight * (1 / (mu B L)) sum_{u, l} 1[confident_ul] BCE(f(strong(x_u))_l, hard_ul)

where hard_ul = 1[sigmoid(f(flip(x_u)))_l > 1/2] comes from the weak view without gradient, and confident_ul
marks the ``keep_fraction`` most confident entries of attribute l in the batch
(:func:`student.semi.confident_pseudo_labels`). The strong views are drawn from a generator seeded by (seed,
step), so a run is reproducible. The three forward passes (labeled, weak, strong) are separate, so BatchNorm
normalises each batch on its own statistics.
"""

from __future__ import annotations

import numpy as np
import torch
from pytorch_lightning.utilities import CombinedLoader
from torch.nn import functional as F
from torch.utils.data import DataLoader, RandomSampler

from pate.features.views import strong_view
from student.semi import SemiSupervision, confident_pseudo_labels
from teachers.training import IndexedImages, MultiLabelModule, Recipe, random_hflip, to_float

_STEP_STRIDE = 1_000_003  # a prime: (seed, step) -> a distinct generator seed for every step of every seed


class ConsistencyModule(MultiLabelModule):
    """:class:`teachers.training.module.MultiLabelModule` whose training step is the FixMatch loss above; batches are
    ``{"labeled": (images, labels), "unlabeled": images}``. ``confident_fraction`` is the mean share of
    unlabeled entries that carried a pseudo-label, over the steps so far."""

    def __init__(self, recipe: Recipe, semi: SemiSupervision, seed: int):
        super().__init__(recipe.make_net(), recipe.num_labels, recipe.make_optimizer, recipe.augment)
        self.semi, self.view_seed = semi, int(seed)
        self._confident_sum, self._steps = 0.0, 0

    @property
    def confident_fraction(self) -> float:
        return self._confident_sum / max(self._steps, 1)

    def training_step(self, batch, batch_idx):
        (images, targets, *mask), unlabeled = batch["labeled"], batch["unlabeled"]
        x = to_float(images)
        if self.hparams.augment:
            x = random_hflip(x)
        # a label the release left out (a confident selection's missing entry) adds nothing to the loss
        losses = F.binary_cross_entropy_with_logits(self.net(x), targets, reduction="none")
        supervised = (losses * mask[0]).sum() / mask[0].sum().clamp_min(1) if mask else losses.mean()
        with torch.no_grad():
            weak = torch.sigmoid(self.net(random_hflip(to_float(unlabeled))))
        hard, confident = confident_pseudo_labels(weak, self.semi.keep_fraction)
        gen = torch.Generator().manual_seed(self.view_seed * _STEP_STRIDE + int(self.global_step))
        strong = strong_view(unlabeled.cpu(), gen, self.semi.min_scale, self.semi.jitter).to(unlabeled.device)
        losses = F.binary_cross_entropy_with_logits(self.net(to_float(strong)), hard, reduction="none")
        unsupervised = (losses * confident).mean()
        loss = supervised + self.semi.unlabeled_weight * unsupervised
        self._confident_sum, self._steps = self._confident_sum + float(confident.double().mean()), self._steps + 1
        self.log_dict(
            {"train/loss": loss, "train/unlabeled_loss": unsupervised},
            on_step=False,
            on_epoch=True,
            prog_bar=True,
            batch_size=len(targets),
        )
        return loss


def consistency_loaders(
    labeled: DataLoader, unlabeled_images: np.ndarray, ratio: int, seed: int, num_workers: int
) -> CombinedLoader:
    """The labeled loader paired, batch for batch, with ``ratio`` x its batch size unlabeled images drawn with
    replacement (seeded by ``seed``): one epoch is one pass over the labeled queries."""
    dataset = IndexedImages(unlabeled_images, np.arange(len(unlabeled_images)))
    batch = ratio * labeled.batch_size
    sampler = RandomSampler(
        dataset, replacement=True, num_samples=len(labeled) * batch, generator=torch.Generator().manual_seed(int(seed))
    )
    loader = DataLoader(
        dataset, batch_size=batch, sampler=sampler, num_workers=num_workers, persistent_workers=num_workers > 0
    )
    return CombinedLoader({"labeled": labeled, "unlabeled": loader}, mode="min_size")


__all__ = ["ConsistencyModule", "consistency_loaders"]
