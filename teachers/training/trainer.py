"""The Lightning Trainer's settings (``TrainerSettings``, a conf/trainer node's ``_target_``), the Trainer factory and
the device helpers shared by teacher and student training. Lightning is imported where a Trainer is built, not
here: the settings serve runs that train no network (ridge-head teachers and students) too."""

from __future__ import annotations

import logging
import warnings
from collections.abc import Iterator
from contextlib import AbstractContextManager, contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import torch

from pate.progress import progress_bar

if TYPE_CHECKING:
    import pytorch_lightning as pl

_LOGGERS = ("csv", "tensorboard")


def epoch_bar(desc: str) -> pl.Callback:
    """A callback that draws one progress bar over a fit's epochs (Lightning's own bar redraws per epoch and per
    step)."""
    import pytorch_lightning as pl

    class EpochBar(pl.Callback):
        def on_train_start(self, trainer, pl_module) -> None:
            self.bar = progress_bar(total=trainer.max_epochs, desc=desc, unit="epoch")

        def on_train_epoch_end(self, trainer, pl_module) -> None:
            self.bar.update(1)

        def on_train_end(self, trainer, pl_module) -> None:
            self.bar.close()

    return EpochBar()


@dataclass(frozen=True)
class TrainerSettings:
    """How Lightning trains and where tensors live, shared by the teacher and student stages (conf/trainer).

    ``accelerator``, ``devices``, ``precision`` and ``deterministic`` go to ``pl.Trainer`` as they are;
    ``num_workers`` is the DataLoader's worker count (0 loads in the main process); ``logger`` is "csv" or
    "tensorboard"; ``verbose`` shows Lightning's own bars and info lines instead of one bar per fit. A bad logger
    or worker count is a ValueError here; a bad accelerator, device count or precision is one in :meth:`check`.
    """

    accelerator: str = "cpu"
    devices: int | str = 1
    precision: str | int = "32-true"
    deterministic: bool = True
    num_workers: int = 0
    logger: str = "csv"
    verbose: bool = False

    def __post_init__(self) -> None:
        if self.logger not in _LOGGERS:
            raise ValueError(f"trainer.logger must be one of {_LOGGERS}, got {self.logger!r}")
        if not isinstance(self.num_workers, int) or isinstance(self.num_workers, bool) or self.num_workers < 0:
            raise ValueError(f"trainer.num_workers must be a non-negative integer, got {self.num_workers!r}")

    def check(self) -> None:
        """Build (and drop) a Trainer, so that a bad accelerator, device count or precision is a ValueError naming
        them before any data is read, not a Lightning traceback after the teachers' data."""
        from pytorch_lightning.utilities.exceptions import MisconfigurationException

        try:
            with quiet_lightning(), expected_warnings_hidden():
                build_trainer(self, 1)
        except (MisconfigurationException, ValueError, TypeError) as err:
            raise ValueError(
                f"trainer.accelerator={self.accelerator!r}, trainer.devices={self.devices!r}, "
                f"trainer.precision={self.precision!r}: {' '.join(str(err).split())}"
            ) from err

    @property
    def device(self) -> torch.device:
        """``accelerator`` as a torch device: "cpu" -> cpu, "gpu" or "cuda" -> the current CUDA device."""
        if self.accelerator == "cpu":
            return torch.device("cpu")
        if self.accelerator in ("gpu", "cuda"):
            if not torch.cuda.is_available():
                raise ValueError(
                    f"trainer.accelerator={self.accelerator!r} but torch sees no CUDA device (use trainer=cpu)"
                )
            return torch.device("cuda")
        raise ValueError(f"trainer.accelerator must be 'cpu' or 'gpu' for inference, got {self.accelerator!r}")


def build_trainer(
    settings: TrainerSettings,
    max_epochs: int,
    log_dir: Path | None = None,
    progress: bool = False,
    desc: str = "training",
) -> pl.Trainer:
    """A Lightning Trainer from ``settings``: no checkpoints (stages save their own outputs), no model summary, a
    CSV (or TensorBoard) logger writing to ``log_dir`` (no logger when ``log_dir`` is None) and, when
    ``progress``, one bar over the epochs named ``desc`` -- or Lightning's own bars with ``settings.verbose``
    (train.py ``verbose=true``)."""
    import pytorch_lightning as pl
    from pytorch_lightning.loggers import CSVLogger, TensorBoardLogger

    if not isinstance(max_epochs, int) or max_epochs < 1:
        raise ValueError(f"max_epochs must be a positive integer, got {max_epochs!r}")
    logger = False
    if log_dir is not None:
        if settings.logger == "tensorboard":
            try:
                import tensorboard  # noqa: F401  (TensorBoardLogger fails late and obscurely without it)
            except ImportError as err:
                raise ImportError(
                    "trainer.logger=tensorboard needs the tensorboard package: pip install -e '.[tensorboard]'"
                ) from err
            logger = TensorBoardLogger(save_dir=str(log_dir), name="")
        else:
            logger = CSVLogger(save_dir=str(log_dir), name="")
    return pl.Trainer(
        accelerator=settings.accelerator,
        devices=settings.devices,
        precision=settings.precision,
        deterministic=settings.deterministic,
        max_epochs=max_epochs,
        logger=logger,
        default_root_dir=None if log_dir is None else str(log_dir),
        enable_checkpointing=False,
        enable_model_summary=False,
        enable_progress_bar=progress and settings.verbose,
        callbacks=[epoch_bar(desc)] if progress and not settings.verbose else None,
        # train/loss is logged per epoch; this only silences the warning about short epochs.
        log_every_n_steps=1,
    )


@contextmanager
def expected_warnings_hidden() -> Iterator[None]:
    """Hide two warnings that are expected here and say nothing actionable: Lightning's note that the module's
    validation_step is unused (stages fit without validation) and pytorch-lightning 2.6 using torch's
    deprecated ``LeafSpec`` (printed once per teacher otherwise)."""
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message="You defined a `validation_step` but have no `val_dataloader`")
        warnings.filterwarnings("ignore", message=r"`isinstance\(treespec, LeafSpec\)` is deprecated")
        yield


def fit(trainer: pl.Trainer, module: pl.LightningModule, loader) -> None:
    """``trainer.fit`` without validation, with :func:`expected_warnings_hidden`."""
    with expected_warnings_hidden():
        trainer.fit(module, loader)


@contextmanager
def quiet_lightning(enabled: bool = True) -> Iterator[None]:
    """Hide Lightning's per-Trainer info lines ("GPU available: ...", library tips) unless ``enabled`` is False
    (``trainer.verbose``)."""
    if not enabled:
        yield
        return
    loggers = [logging.getLogger(name) for name in ("pytorch_lightning", "lightning.pytorch", "lightning_fabric")]
    levels = [lg.level for lg in loggers]
    for lg in loggers:
        lg.setLevel(logging.WARNING)
    try:
        yield
    finally:
        for lg, level in zip(loggers, levels, strict=True):
            lg.setLevel(level)


def autocast_for(device: torch.device, precision) -> AbstractContextManager:
    """Autocast matching Lightning's ``precision`` setting: bf16 for "bf16-*", fp16 for "16-*", else off."""
    precision = str(precision)
    dtype = torch.bfloat16 if precision.startswith("bf16") else torch.float16 if precision.startswith("16") else None
    return torch.autocast(device.type, dtype=dtype, enabled=dtype is not None)


__all__ = ["TrainerSettings", "autocast_for", "build_trainer", "expected_warnings_hidden", "fit", "quiet_lightning"]
