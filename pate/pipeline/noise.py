"""Where the noise a privacy guarantee rests on comes from (``privacy.noise``), decided in this one place.

A DP guarantee holds only while its noise is secret: anyone who can replay the noise can subtract it. A run's
``seed`` is recorded in ``metrics.json``, so noise drawn from it can be replayed from the code and that file, and
the guarantee is void. Hence two sources:

* ``secure``: every random number a guarantee rests on (the aggregator's noise and tests, Private-kNN's Poisson
  subsample and noise, DP-SGD's Poisson batches and gradient noise) comes from the operating system's entropy
  (numpy: ``SeedSequence()``; torch: the generator's whole state from ``secrets``, ``secret_torch_generator``),
  which is never recorded or logged. The release cannot be replayed, so its
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
from typing import TYPE_CHECKING, Any

import numpy as np
from omegaconf import DictConfig

from pate.artifacts import ArtifactStore, Stage

if TYPE_CHECKING:  # torch is imported where a generator is made: the config checks that import this need none
    import torch

log = logging.getLogger("train")

__all__ = ["MODES", "NoiseSource", "log_reused_release", "mt19937_generator", "noise_source", "secret_torch_generator"]

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

    def torch_generator(self, stream: int = 0, device: torch.device | str = "cpu") -> torch.Generator:
        """A torch generator on ``device`` for the noise: seeded from (seed, stream) through numpy's SeedSequence,
        so that every pair gets its own stream (``seed + stream`` would hand seed s's stream 1 to seed s + 1 as its
        stream 0, and a sweep's seeds would share draws); or holding fresh secret entropy in its whole state
        (``secret_torch_generator``): never a secret integer seed, which torch's CPU generator would cut to its low
        32 bits."""
        if self.mode == "seeded":
            import torch

            seed = int(np.random.SeedSequence([self.seed, stream]).generate_state(1, np.uint32)[0])
            return torch.Generator(device=device).manual_seed(seed)
        return secret_torch_generator(device)

    def key(self) -> dict[str, Any]:
        """What a release stage's key holds of the noise: the mode, and the seed only where it decides the draw
        (secure: none, so a rerun of the config finds its release instead of drawing a second one)."""
        return {"noise": self.mode, **({"seed": self.seed} if self.mode == "seeded" else {})}

    def describe(self) -> str:
        """One line for ``metrics.json``'s ``noise_source`` and the console."""
        data = "the built-in synthetic data" if self.mode == "seeded" else "data other than the built-in synthetic set"
        how = "" if self.configured == self.mode else f" (privacy.noise={self.configured} on {data})"
        if self.mode == "secure":
            return (
                f"secure{how}: drawn from the operating system's entropy, no seed recorded; the release cannot "
                f"be replayed"
            )
        return (
            f"seeded from the run's seed{how}: the noise can be replayed from the seed, so the run carries no "
            f"guarantee; its epsilon is what the same release guarantees with secret noise (privacy.noise="
            f"secure), for reproducible benchmarks where nothing is private"
        )


# torch's CPU generator is an MT19937 whose state (``get_state``, 5,056 bytes in torch 2.x) holds the 624 state
# words as 64-bit integers from byte 24 on, after the initial seed (8 bytes), the counters left and seeded (4 each)
# and next (8)
_MT_STATE_OFFSET, _MT_STATE_WORDS = 24, 624


def secret_torch_generator(device: torch.device | str = "cpu") -> torch.Generator:
    """A torch generator on ``device`` whose state comes from the operating system's entropy (``secrets``), never
    recorded. Seeding cannot do it on the CPU: ``manual_seed`` keeps the low 32 bits of any seed (seeds s and
    s mod 2^32 give the same stream), so 2^32 candidate seeds would replay every draw. The CPU generator gets its
    19,937-bit MT19937 state instead, 624 words of 32 secret bits each (tests/pipeline/test_secure_noise.py checks
    the layout: the state MT19937's own seeding writes reproduces ``manual_seed``'s stream). A CUDA generator
    (Philox) keeps a 64-bit seed whole: it gets 64 secret bits."""
    import torch

    device = torch.device(device)
    if device.type != "cpu":
        return torch.Generator(device=device).manual_seed(secrets.randbits(64))
    return mt19937_generator([secrets.randbits(32) for _ in range(_MT_STATE_WORDS)])


def mt19937_generator(words: list[int]) -> torch.Generator:
    """A CPU torch generator whose MT19937 state is ``words`` (624 integers in [0, 2^32), not all zero), the next
    draw regenerating from it; ``ValueError`` for another count, a word out of range or an all-zero state (MT19937
    would then draw zeros forever)."""
    if len(words) != _MT_STATE_WORDS or not all(0 <= word < 2**32 for word in words) or not any(words):
        raise ValueError(
            f"words: expected {_MT_STATE_WORDS} integers in [0, 2^32), not all zero; got {len(words)} "
            f"words in [{min(words, default=None)}, {max(words, default=None)}]"
        )
    import torch

    generator = torch.Generator()
    state = generator.get_state().numpy().copy()
    # initial seed 0 (it says nothing of the state), left = 1 (the next draw regenerates the 624 words from these),
    # seeded = 1, next = 0: what manual_seed writes, with the words in place of its seeding
    state[:_MT_STATE_OFFSET] = np.array([0, 1 | 1 << 32, 0], "<u8").view(np.uint8)
    state[_MT_STATE_OFFSET : _MT_STATE_OFFSET + 8 * _MT_STATE_WORDS] = np.asarray(words, "<u8").view(np.uint8)
    generator.set_state(torch.from_numpy(state))
    return generator


def noise_source(cfg: DictConfig) -> NoiseSource:
    """The run's :class:`NoiseSource` from ``privacy.noise`` and the data's reader (``auto``: seeded only on the
    built-in synthetic data); ``ValueError`` naming the key for a value outside ``MODES`` (``check_config`` asks
    first, so a run stops on it before any data is read)."""
    configured = cfg.privacy.get("noise", "auto")
    if configured not in MODES:
        raise ValueError(
            f"privacy.noise={configured!r}; expected one of {MODES}: secure (noise from the operating "
            f"system's entropy), seeded (from `seed`, replayable) or auto (seeded on the built-in "
            f"synthetic data only)"
        )
    mode = configured
    if mode == "auto":
        mode = "seeded" if str(cfg.data.reader.get("_target_")) in SYNTHETIC_READERS else "secure"
    return NoiseSource(mode, int(cfg.seed) if mode == "seeded" else None, configured)


def log_reused_release(store: ArtifactStore, release: Stage, noise: NoiseSource) -> None:
    """Say so when a secure release was read back from the cache rather than drawn: the labels are the ones
    released before, and no new noise (no second release of the same data) was drawn."""
    if noise.mode == "secure" and store.reused(release):
        log.info(
            "release reused from the cache (%s): the labels released before, no new noise drawn (secure noise: "
            "one release per config and cache)",
            store.path(release),
        )
