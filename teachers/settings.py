"""The teachers' own settings: typed, immutable, checked when built. The pipeline builds them from a conf/teacher
node (``pate.pipeline.settings``); nothing in ``teachers/`` reads a config.

* :class:`NetworkTeacherSettings`: one network per teacher (conf/teacher/small_cnn.yaml and the ResNets), trained by
  the Lightning loop or the batched engine (teachers/batched.py), whose optimizer is :class:`AdamW`;
* :class:`HeadTeacherSettings`: one ridge head per teacher on the public features (conf/teacher/heads.yaml).

Each holds ``identity``, the teacher node as plain data: a saved teacher (or chunk of heads) is reused only when
it was trained with the same one, and the teachers stage is keyed by it.
"""

from __future__ import annotations

import inspect
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import torch

from pate.features.ridge import check_lambdas
from pate.privacy.checks import non_negative_int, positive_int, set_fields
from teachers.training.recipe import Recipe

# torch.optim.AdamW's own defaults for the keys the engine implements, for the keys an optimizer leaves out.
_ADAMW_DEFAULTS = {
    key: inspect.signature(torch.optim.AdamW).parameters[key].default for key in ("lr", "betas", "eps", "weight_decay")
}


@dataclass(frozen=True)
class AdamW:
    """The settings of ``torch.optim.AdamW`` that the batched engine (teachers/batched.py) implements."""

    lr: float
    betas: tuple[float, float]
    eps: float
    weight_decay: float

    @classmethod
    def from_keywords(cls, keywords: Mapping[str, Any]) -> AdamW | None:
        """The settings of ``torch.optim.AdamW(params, **keywords)``, torch's defaults for the keys left out; None
        when a keyword is one the engine does not implement (amsgrad, maximize, ...)."""
        if not set(keywords) <= set(_ADAMW_DEFAULTS):
            return None
        values = {**_ADAMW_DEFAULTS, **keywords}
        return cls(
            lr=float(values["lr"]),
            betas=tuple(float(b) for b in values["betas"]),
            eps=float(values["eps"]),
            weight_decay=float(values["weight_decay"]),
        )


@dataclass(frozen=True)
class NetworkTeacherSettings:
    """How the network teachers are built and trained (conf/teacher/small_cnn.yaml and the ResNets).

    ``recipe``: the network and optimizer factories, batch size, epochs and augmentation of every teacher.
    ``seed``: teacher i is seeded with ``teachers.ensemble.teacher_seed(seed, i)`` (an integer >= 0).
    ``ensemble_size``: teachers trained together as one stacked model by the batched engine (an integer >= 1; 1 is
    one Lightning fit per teacher). ``adamw``: the optimizer's settings when it is plain ``torch.optim.AdamW``, which
    the batched engine needs; None for any other optimizer (those teachers are trained by the loop).
    ``identity``: the teacher node as plain data, recorded in every teacher file and compared on resume (never
    modified).
    """

    recipe: Recipe
    seed: int
    identity: dict[str, Any]
    ensemble_size: int = 1
    adamw: AdamW | None = None

    def __post_init__(self) -> None:
        non_negative_int("teacher.seed", self.seed)
        group = self.ensemble_size
        if isinstance(group, bool) or not isinstance(group, int) or group < 1:
            raise ValueError(f"teacher.ensemble_size={group!r}; expected an integer >= 1")


@dataclass(frozen=True)
class HeadTeacherSettings:
    """How the ridge-head teachers are fitted and scored (conf/teacher/heads.yaml).

    ``lambdas``: the L2 strengths each head picks from by leave-one-out, in units of trace(K)/n of its own centred
    kernel (a non-empty sequence of finite numbers > 0, kept as a tuple). ``chunk_size``: teachers fitted at once
    and saved together (an integer >= 1). ``accuracy_images``: evaluation images the teachers' accuracy (a
    diagnostic) is scored on (an integer >= 1). ``identity``: the teacher node as plain data, hashed into every
    chunk file and compared on resume (never modified).
    """

    lambdas: tuple[float, ...]
    chunk_size: int
    accuracy_images: int
    identity: dict[str, Any]

    def __post_init__(self) -> None:
        set_fields(
            self,
            lambdas=tuple(float(lam) for lam in check_lambdas(self.lambdas, "teacher.lambdas")),
            chunk_size=positive_int("teacher.chunk_size", self.chunk_size),
            accuracy_images=positive_int("teacher.accuracy_images", self.accuracy_images),
        )


__all__ = ["AdamW", "HeadTeacherSettings", "NetworkTeacherSettings"]
