"""The one LightningModule of the project: multi-label training of any ``nn.Module`` from the zoo.

Teachers and the student both use it. Following Lightning's style guide the network is passed in; the
module owns the loss (binary cross-entropy on logits, one independent Bernoulli per label, optionally masked
per entry), the optimiser (built by the ``optimizer`` factory, AdamW in every shipped config, with a per-step
cosine decay to zero), the uint8 -> float conversion, the augmentation and the metrics, named
``split/metric``.

A label is predicted present iff sigmoid(logit) > 0.5, i.e. logit > 0: the same rule the vote stage uses.
"""

from __future__ import annotations

from collections.abc import Callable

import pytorch_lightning as pl
import torch
from torch import nn
from torch.nn import functional as F
from teachers.training.data import to_float
from teachers.training.label_metrics import accuracy_metric, f1_metric


def random_hflip(images: torch.Tensor) -> torch.Tensor:
    """Flip each image of the batch left-right with probability 1/2 (torch's global RNG, seeded by Lightning)."""
    flip = torch.rand(images.shape[0], device=images.device) < 0.5
    return torch.where(flip[:, None, None, None], images.flip(-1), images)


class MultiLabelModule(pl.LightningModule):
    """BCE-with-logits training of ``net`` (float [B, 3, S, S] -> logits [B, num_labels]).

    Logs ``train/loss``; ``val/acc``, ``val/f1`` in validation; ``test/acc``, ``test/f1`` in testing, where acc
    is the mean over labels of the per-label accuracy (macro) and f1 the macro F1. After ``trainer.test``,
    ``test_per_attribute_accuracy`` holds the accuracy of each label (a float tensor [num_labels]).
    """

    def __init__(
        self,
        net: nn.Module,
        num_labels: int,
        optimizer: Callable[..., torch.optim.Optimizer] = torch.optim.AdamW,
        augment: bool = False,
    ):
        super().__init__()
        if not callable(optimizer):
            raise ValueError(
                f"optimizer must be a factory taking the parameters (a `_partial_` node), got {optimizer!r}"
            )
        self.save_hyperparameters("num_labels", "augment")  # by name: a subclass's own arguments stay out
        self.net = net
        self.make_optimizer = optimizer
        self.metrics = nn.ModuleDict(
            {
                f"{split}_{name}": metric(num_labels)
                for split in ("val", "test")
                for name, metric in (("acc", accuracy_metric), ("f1", f1_metric))
            }
        )
        self.test_acc_per_attribute = accuracy_metric(num_labels, per_label=True)
        self.test_per_attribute_accuracy: torch.Tensor | None = None

    def forward(self, images: torch.Tensor) -> torch.Tensor:
        """uint8 images -> logits."""
        return self.net(to_float(images))

    def training_step(self, batch, batch_idx):
        # (images, targets) or (images, targets, mask): a masked entry (pseudo-labelling's unconfident guess)
        # adds nothing to the loss, which averages over the entries that count
        images, targets, *mask = batch
        x = to_float(images)
        if self.hparams.augment:
            x = random_hflip(x)
        losses = F.binary_cross_entropy_with_logits(self.net(x), targets, reduction="none")
        loss = (losses * mask[0]).sum() / mask[0].sum().clamp_min(1) if mask else losses.mean()
        self.log("train/loss", loss, on_step=False, on_epoch=True, prog_bar=True, batch_size=len(targets))
        return loss

    def _evaluate(self, batch, split: str) -> None:
        images, targets = batch
        # Probabilities, not logits: torchmetrics applies its own sigmoid only when values leave [0, 1].
        probs = torch.sigmoid(self(images))
        targets = targets.int()
        for name in ("acc", "f1"):
            metric = self.metrics[f"{split}_{name}"]
            metric(probs, targets)
            self.log(f"{split}/{name}", metric, on_step=False, on_epoch=True, prog_bar=split == "val")
        if split == "test":
            self.test_acc_per_attribute.update(probs, targets)

    def validation_step(self, batch, batch_idx):
        self._evaluate(batch, "val")

    def test_step(self, batch, batch_idx):
        self._evaluate(batch, "test")

    def on_test_epoch_end(self) -> None:
        self.test_per_attribute_accuracy = self.test_acc_per_attribute.compute().detach().cpu().reshape(-1)
        self.test_acc_per_attribute.reset()

    def configure_optimizers(self):
        # frozen layers (requires_grad off, e.g. resnet frozen_stages) are not the optimiser's to update or decay
        optimizer = self.make_optimizer([p for p in self.net.parameters() if p.requires_grad])
        total_steps = max(1, int(self.trainer.estimated_stepping_batches))
        scheduler = torch.optim.lr_scheduler.CosineAnnealingLR(optimizer, T_max=total_steps)
        return {"optimizer": optimizer, "lr_scheduler": {"scheduler": scheduler, "interval": "step"}}


@torch.inference_mode()
def predict_logits(net: nn.Module, images: torch.Tensor, batch_size: int) -> torch.Tensor:
    """float32 logits [n, L] of ``net`` on uint8 ``images`` [n, 3, S, S] (on the net's device), in batches."""
    if not isinstance(batch_size, int) or batch_size < 1:
        raise ValueError(f"batch_size must be a positive integer, got {batch_size!r}")
    return torch.cat([net(to_float(images[s : s + batch_size])).float() for s in range(0, len(images), batch_size)])
