"""Where the noise a privacy guarantee rests on comes from (``privacy.noise``), decided in this one place.

A DP guarantee holds only while its noise is secret: anyone who can replay the noise can subtract it. A run's
``seed`` is recorded in ``metrics.json``, so noise drawn from it can be replayed from the code and that file, and
the guarantee is void. Hence two sources:

* ``secure``: every random number a guarantee rests on (the aggregator's noise and tests, Private-kNN's Poisson
  subsample and noise, DP-SGD's Poisson batches and gradient noise) comes from the operating system's entropy
  (``SeedSequence()``, ``secrets``), which is never recorded or logged. The release cannot be replayed, so its
  stage key holds no seed: one config in one cache is released once, and a rerun reuses that release instead of
  drawing (and spending) a second one.
* ``seeded``: the noise is drawn from the run's ``seed``, reproducible to the bit: benchmarks on synthetic data.

``auto`` (the default) is ``seeded`` on the built-in synthetic generator and ``secure`` on any other data.
Randomness no guarantee rests on (the partition, the queries, the student, the features) stays seeded by its own
keys whatever the mode.
"""

from __future__ import annotations

import logging
import secrets
from dataclasses import dataclass
from typing import Any

import numpy as np
import torch
from omegaconf import DictConfig

from pate.artifacts import ArtifactStore, Stage

log = logging.getLogger("train")

__all__ = ["MODES", "NoiseSource", "log_reused_release", "noise_source"]

MODES = ("auto", "seeded", "secure")
# the readers whose data the project generates itself: nothing private to protect, so auto may seed the noise
SYNTHETIC_READERS = ("pate.data.readers.SyntheticCelebA",)


@dataclass(frozen=True)
class NoiseSource:
    """The resolved source of a run's privacy noise: ``mode`` is ``seeded`` or ``secure``; ``seed`` is the run's
    seed in seeded mode and None in secure mode, so a secure source holds nothing that could replay its draws."""

    mode: str
    seed: int | None
    configured: str  # privacy.noise as written (auto, seeded, secure), for the record

    def generator(self) -> np.random.Generator:
        """A numpy generator for the noise: from the seed, or from fresh OS entropy (its entropy is never kept)."""
        return np.random.default_rng(self.seed if self.mode == "seeded" else np.random.SeedSequence())

    def torch_seed(self, offset: int = 0) -> int:
        """A seed for a torch generator: ``seed + offset``, or 62 fresh secret bits (torch's generators take a
        64-bit seed; 62 leave room for the offsets a caller adds for its second stream)."""
        return self.seed + offset if self.mode == "seeded" else secrets.randbits(62)

    def torch_generator(self, offset: int = 0) -> torch.Generator:
        """A CPU torch generator seeded by :meth:`torch_seed`."""
        return torch.Generator().manual_seed(self.torch_seed(offset))

    def key(self) -> dict[str, Any]:
        """What a release stage's key holds of the noise: the mode, and the seed only where it decides the draw
        (secure: none, so a rerun of the config finds its release instead of drawing a second one)."""
        return {"noise": self.mode, **({"seed": self.seed} if self.mode == "seeded" else {})}

    def describe(self) -> str:
        """One line for ``metrics.json``'s ``noise_source`` and the console."""
        data = "the built-in synthetic data" if self.mode == "seeded" else "data other than the built-in synthetic set"
        how = "" if self.configured == self.mode else f" (privacy.noise={self.configured} on {data})"
        if self.mode == "secure":
            return (f"secure{how}: drawn from the operating system's entropy, no seed recorded; the release cannot "
                    f"be replayed")
        return (f"seeded from seed={self.seed}{how}: the noise can be replayed from the recorded seed, so the "
                f"guarantee holds only where nothing is private (reproducible benchmarks on synthetic data)")


def noise_source(cfg: DictConfig) -> NoiseSource:
    """The run's :class:`NoiseSource` from ``privacy.noise`` and the data's reader (``auto``: seeded only on the
    built-in synthetic data); ``ValueError`` naming the key for a value outside ``MODES`` (``check_config`` asks
    first, so a run stops on it before any data is read)."""
    configured = cfg.privacy.get("noise", "auto")
    if configured not in MODES:
        raise ValueError(f"privacy.noise={configured!r}; expected one of {MODES}: secure (noise from the operating "
                         f"system's entropy), seeded (from `seed`, replayable) or auto (seeded on the built-in "
                         f"synthetic data only)")
    mode = configured
    if mode == "auto":
        mode = "seeded" if str(cfg.data.reader.get("_target_")) in SYNTHETIC_READERS else "secure"
    return NoiseSource(mode, int(cfg.seed) if mode == "seeded" else None, configured)


def log_reused_release(store: ArtifactStore, release: Stage, noise: NoiseSource) -> None:
    """Say so when a secure release was read back from the cache rather than drawn: the labels are the ones
    released before, and no new noise (no second release of the same data) was drawn."""
    if noise.mode == "secure" and store.reused(release):
        log.info("release reused from the cache (%s): the labels released before, no new noise drawn (secure noise: "
                 "one release per config and cache)", store.path(release))
