"""A self-supervised extractor: a small CNN trained with SimCLR on public images, without any labels.

SimCLR (Chen, Kornblith, Norouzi & Hinton, "A Simple Framework for Contrastive Learning of Visual
Representations", ICML 2020): two random augmentations of each image go through the encoder f and a projection
head g; the NT-Xent loss (their Eq. 1)

    l(i, j) = -log( exp(sim(z_i, z_j) / tau) / sum_{k != i} exp(sim(z_i, z_k) / tau) ),   sim = cosine,

averaged over both orderings of every positive pair in a batch of 2N views, pulls the two views of an image
together and pushes the other 2N - 2 apart. After training, g is dropped and the features are f's last
convolutional maps average-pooled over a ``pool`` x ``pool`` grid (keeping the spatial layout, which helps
linear heads on faces).

What it knows: the public images handed to ``fit`` (the validation split in the default config), nothing
else. No label exists in its signature. Augmentations keep colour (crop, flip, brightness, contrast; no hue
shift or greyscale), since hair and skin colour are among CelebA's attributes.
"""

from __future__ import annotations

import logging
import math
from typing import Any

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

from pate.features.extractors import Extractor, to_unit_interval
from pate.privacy.checks import non_negative, positive, positive_int

log = logging.getLogger(__name__)


def nt_xent_loss(z1: torch.Tensor, z2: torch.Tensor, temperature: float) -> torch.Tensor:
    """SimCLR's NT-Xent loss (Chen et al. 2020, Eq. 1) of N positive pairs (z1[i], z2[i]), averaged over the
    2N anchors. Inputs need not be normalised (cosine similarity)."""
    z = F.normalize(torch.cat([z1, z2]), dim=1)
    n = len(z1)
    logits = z @ z.T / temperature
    logits.fill_diagonal_(float("-inf"))  # k != i
    positives = torch.cat([torch.arange(n, 2 * n), torch.arange(0, n)]).to(z.device)  # the device of the logits
    return F.cross_entropy(logits, positives)


def augment(x: torch.Tensor, gen: torch.Generator, min_scale: float, jitter: float) -> torch.Tensor:
    """One random view per image of a float batch [B, 3, S, S] in [0, 1], vectorised over the batch: a
    random-resized crop (side ratio uniform in [sqrt(min_scale), 1], aspect 1, uniform position), a horizontal
    flip with probability 1/2, then brightness and contrast factors uniform in [1 - jitter, 1 + jitter]. The
    draws come from ``gen`` (a CPU generator), so a batch on a GPU gets the same views as on the CPU."""
    b = len(x)
    side = torch.empty(b).uniform_(math.sqrt(min_scale), 1.0, generator=gen)
    shift = (torch.rand(b, 2, generator=gen) * 2 - 1) * (1 - side)[:, None]
    flip = torch.where(torch.rand(b, generator=gen) < 0.5, -1.0, 1.0)
    theta = torch.zeros(b, 2, 3)
    theta[:, 0, 0], theta[:, 1, 1] = side * flip, side
    theta[:, :, 2] = shift
    grid = F.affine_grid(theta.to(x.device), list(x.shape), align_corners=False)
    view = F.grid_sample(x, grid, mode="bilinear", padding_mode="reflection", align_corners=False)
    brightness = torch.empty(b, 1, 1, 1).uniform_(1 - jitter, 1 + jitter, generator=gen)
    contrast = torch.empty(b, 1, 1, 1).uniform_(1 - jitter, 1 + jitter, generator=gen)
    brightness, contrast = brightness.to(x.device), contrast.to(x.device)
    mean = view.mean(dim=(1, 2, 3), keepdim=True)
    return ((view - mean) * contrast + mean * brightness).clamp(0, 1)


def _encoder(width: int) -> nn.Sequential:
    """Three conv-BN-ReLU stages of w, 2w, 4w channels with a 2x2 max-pool between them: [B, 3, S, S] ->
    [B, 4w, S/4, S/4]. Small on purpose: it trains on a CPU in minutes."""

    def block(cin: int, cout: int) -> list[nn.Module]:
        return [nn.Conv2d(cin, cout, 3, padding=1, bias=False), nn.BatchNorm2d(cout), nn.ReLU(inplace=True)]

    return nn.Sequential(
        *block(3, width), nn.MaxPool2d(2), *block(width, 2 * width), nn.MaxPool2d(2), *block(2 * width, 4 * width)
    )


class SimCLRFeatures(Extractor):
    """Features of a small CNN trained by SimCLR on the public fit images (see the module docstring):
    4 * ``width`` * ``pool``^2 dims. ``epochs`` passes over the fit images in batches of ``train_batch_size``
    pairs, Adam at ``lr``, temperature ``temperature``. Deterministic for a given fit seed (initialisation,
    batch order and augmentations all come from it)."""

    def __init__(
        self,
        width: int = 32,
        pool: int = 3,
        epochs: int = 10,
        train_batch_size: int = 256,
        lr: float = 1e-3,
        temperature: float = 0.2,
        min_scale: float = 0.5,
        jitter: float = 0.3,
        projection_dim: int = 64,
    ):
        super().__init__()
        self.width, self.pool = positive_int("width", width), positive_int("pool", pool)
        self.epochs = positive_int("epochs", epochs)
        self.train_batch_size = positive_int("train_batch_size", train_batch_size)
        self.lr, self.temperature = positive("lr", lr), positive("temperature", temperature)
        self.min_scale, self.jitter = positive("min_scale", min_scale), non_negative("jitter", jitter)
        if self.min_scale > 1:
            raise ValueError(f"min_scale is the smallest crop's area fraction, in (0, 1]; got {min_scale!r}")
        if self.jitter >= 1:
            raise ValueError(f"jitter must lie in [0, 1) (factors 1 +- jitter stay positive), got {jitter!r}")
        self.projection_dim = positive_int("projection_dim", projection_dim)
        self.encoder: nn.Sequential | None = None
        self.losses: list[float] = []  # mean NT-Xent loss of each epoch, for the log and the tests

    learned = ("_mean", "_std", "encoder")

    def load_state(self, state: dict[str, torch.Tensor]) -> SimCLRFeatures:
        """The encoder rebuilt for ``width``, then what the fit learned loaded into it (``Extractor.load_state``)."""
        self.encoder = _encoder(self.width).eval()
        return super().load_state(state)

    def settings(self) -> dict[str, Any]:
        return {
            "width": self.width,
            "pool": self.pool,
            "epochs": self.epochs,
            "train_batch_size": self.train_batch_size,
            "lr": self.lr,
            "temperature": self.temperature,
            "min_scale": self.min_scale,
            "jitter": self.jitter,
            "projection_dim": self.projection_dim,
        }

    def _fit_raw(self, images: np.ndarray, rng: np.random.Generator) -> None:
        if len(images) < 2:
            raise ValueError(f"SimCLR needs at least 2 public images to contrast, got {len(images)}")
        seed = int(rng.integers(2**62))
        gen = torch.Generator().manual_seed(seed)
        with torch.random.fork_rng(devices=[]):  # initialise from the fit seed without touching global state
            torch.manual_seed(seed)
            encoder = _encoder(self.width)
            head = nn.Sequential(
                nn.Linear(4 * self.width, 4 * self.width),
                nn.ReLU(inplace=True),
                nn.Linear(4 * self.width, self.projection_dim),
            )
        encoder, head = encoder.to(self.device), head.to(self.device)  # trained on the extractor's device
        params = [*encoder.parameters(), *head.parameters()]
        optimiser = torch.optim.Adam(params, lr=self.lr)
        pixels = to_unit_interval(torch.from_numpy(np.ascontiguousarray(images)))
        batch = min(self.train_batch_size, len(images))
        encoder.train()
        self.losses = []
        for epoch in range(self.epochs):
            order = torch.from_numpy(rng.permutation(len(images)))
            total, count = 0.0, 0
            for start in range(0, len(order) - batch + 1, batch):  # full batches: a tiny last batch is a poor contrast
                x = pixels[order[start : start + batch]].to(self.device)
                views = torch.cat([augment(x, gen, self.min_scale, self.jitter) for _ in range(2)])
                z = head(encoder(views).mean(dim=(2, 3)))
                loss = nt_xent_loss(z[:batch], z[batch:], self.temperature)
                optimiser.zero_grad(set_to_none=True)
                loss.backward()
                optimiser.step()
                total, count = total + loss.item(), count + 1
            self.losses.append(total / count)
            log.info(
                "features: SimCLR epoch %d/%d on %d public images, NT-Xent loss %.4f (chance %.4f)",
                epoch + 1,
                self.epochs,
                len(images),
                self.losses[-1],
                math.log(2 * batch - 1),
            )
        self.encoder = encoder.eval()

    def _raw(self, images: torch.Tensor) -> torch.Tensor:
        if self.encoder is None:
            raise RuntimeError("SimCLRFeatures needs fit(public_images) before it can encode")
        with torch.inference_mode():
            return F.adaptive_avg_pool2d(self.encoder(to_unit_interval(images)), self.pool).flatten(1)


__all__ = ["SimCLRFeatures", "augment", "nt_xent_loss"]
