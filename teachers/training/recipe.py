"""A conf/teacher or conf/student node, instantiated once: what to build and how to train it.

The config's ``_target_`` nodes are turned into factories here, at the top of a stage, and nothing below
reads the config: ``model`` becomes a network factory (instantiated as a ``_partial_``, one fresh network per
teacher), ``optimizer`` a ``_partial_`` optimizer that receives the network's parameters.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import torch
from hydra.errors import InstantiationException
from hydra.utils import instantiate
from omegaconf import DictConfig
from torch import nn

from teachers.training.module import MultiLabelModule


@dataclass(frozen=True)
class Recipe:
    """A network factory, an optimizer factory and the training settings of one config node."""

    make_net: Callable[[], nn.Module]
    make_optimizer: Callable[..., torch.optim.Optimizer]
    num_labels: int
    augment: bool
    batch_size: int
    max_epochs: int

    @classmethod
    def from_config(cls, cfg: DictConfig, group: str = "teacher") -> Recipe:
        """Instantiate ``cfg.model`` (as a ``_partial_``) and ``cfg.optimizer`` once; ``group`` names the config
        group in errors."""
        try:
            make_net = instantiate(cfg.model, _partial_=True)
            make_optimizer = instantiate(cfg.optimizer)
        except InstantiationException as err:
            raise ValueError(f"cannot build {group}.model / {group}.optimizer: {err}") from err
        if not callable(make_optimizer) or isinstance(make_optimizer, torch.optim.Optimizer):
            raise ValueError(f"{group}.optimizer must be a `_partial_: true` node (a factory that takes the "
                             f"parameters), got {type(make_optimizer).__name__}")
        for key, low, strict in (("lr", 0.0, True), ("weight_decay", 0.0, False)):
            value = cfg.optimizer.get(key)
            if value is not None and not (value > low if strict else value >= low):
                raise ValueError(f"{group}.optimizer.{key} must be {'>' if strict else '>='} {low:g}, got {value!r}")
        for key in ("batch_size", "max_epochs"):
            if not isinstance(cfg[key], int) or cfg[key] < 1:
                raise ValueError(f"{group}.{key} must be a positive integer, got {cfg[key]!r}")
        return cls(make_net=make_net, make_optimizer=make_optimizer, num_labels=int(cfg.model.num_labels),
                   augment=bool(cfg.augment), batch_size=int(cfg.batch_size), max_epochs=int(cfg.max_epochs))

    def module(self) -> MultiLabelModule:
        """A fresh network in a fresh LightningModule (seed the RNG first for a reproducible initialisation)."""
        return MultiLabelModule(self.make_net(), self.num_labels, self.make_optimizer, self.augment)


__all__ = ["Recipe"]
