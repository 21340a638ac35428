"""What to build and how to train it: a network factory, an optimizer factory and the training settings of one
teacher or student network. The pipeline builds it from a conf/teacher or conf/student node
(``pate.pipeline.settings.build_recipe``); nothing here reads a config.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

import torch
from torch import nn

if TYPE_CHECKING:
    from teachers.training.module import MultiLabelModule


@dataclass(frozen=True)
class Recipe:
    """A network factory (one fresh network per call), an optimizer factory that receives the network's
    parameters, the number of outputs, random horizontal flips or not, the batch size and the epochs."""

    make_net: Callable[[], nn.Module]
    make_optimizer: Callable[..., torch.optim.Optimizer]
    num_labels: int
    augment: bool
    batch_size: int
    max_epochs: int

    def module(self) -> MultiLabelModule:
        """A fresh network in a fresh LightningModule (seed the RNG first for a reproducible initialisation)."""
        from teachers.training.module import MultiLabelModule  # Lightning: imported where a network is trained

        return MultiLabelModule(self.make_net(), self.num_labels, self.make_optimizer, self.augment)


__all__ = ["Recipe"]
