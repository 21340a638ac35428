"""Training the teacher ensemble: one model per partition, each saved as soon as it is done.

Teacher i is a function of (teacher settings, teacher.seed, i, partition[i]) only: its seed is derived from
(teacher.seed, i), never from the order of training, so with ``trainer.deterministic`` a shard of teachers
trained by a cluster array job is bit-identical (same hardware and software) to the same teachers trained
in one run.

Resume: ``work_dir/teacher_{i:04d}.pt`` is written atomically when teacher i finishes. A rerun reuses every
file that loads and matches what would be trained now (index, seed, partition checksum, teacher settings, parameter
shapes, checksum of the parameters); any other file is retrained with a warning saying why.
"""

from __future__ import annotations

import hashlib
import logging
import os
import time
import warnings
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import pytorch_lightning as pl
import torch

from pate.progress import progress_bar
from teachers.batched import refusal, train_group
from teachers.settings import NetworkTeacherSettings
from teachers.training.data import IndexedImages, check_images, check_indices, check_labels, make_loader
from teachers.training.recipe import Recipe
from teachers.training.trainer import TrainerSettings, build_trainer, fit, quiet_lightning

log = logging.getLogger(__name__)


def teacher_seed(base_seed: int, teacher: int) -> int:
    """The seed of teacher ``teacher``: a 32-bit word of numpy's SeedSequence([base_seed, teacher]), so that
    teachers get well-separated streams and no teacher's seed depends on which others are trained."""
    if not isinstance(base_seed, int) or base_seed < 0:
        raise ValueError(f"teacher.seed must be a non-negative integer, got {base_seed!r}")
    return int(np.random.SeedSequence([base_seed, teacher]).generate_state(1)[0])


def teacher_path(work_dir: Path, teacher: int) -> Path:
    return Path(work_dir) / f"teacher_{teacher:04d}.pt"


def _indices_sha256(indices: np.ndarray) -> str:
    return hashlib.sha256(np.ascontiguousarray(indices, dtype=np.int64).tobytes()).hexdigest()


def _state_sha256(state: dict[str, torch.Tensor]) -> str:
    """SHA-256 over names, dtypes, shapes and raw bytes of a state dict. torch.load does not verify the
    data of a zip record, so a flipped byte inside a tensor would otherwise load silently."""
    h = hashlib.sha256()
    for name in sorted(state):
        tensor = state[name].detach().cpu().contiguous()
        h.update(f"{name}|{tensor.dtype}|{tuple(tensor.shape)}|".encode())
        h.update(tensor.reshape(-1).view(torch.uint8).numpy().tobytes())
    return h.hexdigest()


def _atomic_torch_save(obj, path: Path) -> None:
    tmp = path.with_name(f".{path.name}.tmp-{os.getpid()}")
    with open(tmp, "wb") as fh:
        torch.save(obj, fh)
        fh.flush()
        os.fsync(fh.fileno())
    os.replace(tmp, path)


def _problem_with(path: Path, identity: dict, shapes: dict[str, tuple]) -> str | None:
    """None if ``path`` holds a usable teacher with this identity and these parameter shapes, else why not."""
    try:
        payload = torch.load(path, map_location="cpu", weights_only=True)
        state, meta = payload["state_dict"], payload["meta"]
    except Exception as err:  # torch.load raises many types on a damaged file (zip, pickle, EOF, KeyError)
        first_line = (str(err).strip().splitlines() or [""])[0][:200]
        return f"unreadable, {type(err).__name__}: {first_line}"
    for key, value in identity.items():
        if meta.get(key) != value:
            return f"meta[{key!r}] is {meta.get(key)!r}, expected {value!r}"
    found = {k: tuple(v.shape) for k, v in state.items()}
    if found != shapes:
        return "its parameters do not match the configured model"
    if meta.get("state_sha256") != _state_sha256(state):
        return "checksum mismatch: its parameters changed after saving"
    return None


def _checked_inputs(images, labels, partition, teacher_ids):
    """(labels, the sorted teacher ids asked for, their parts) after checking every input, before any training."""
    check_images(images)
    labels = check_labels(labels, images.shape[0])
    num_teachers = len(partition)
    if num_teachers < 1:
        raise ValueError("partition must hold at least one part (one per teacher), got none")
    ids = range(num_teachers) if teacher_ids is None else [int(i) for i in teacher_ids]
    bad = [i for i in ids if not 0 <= i < num_teachers]
    if bad:
        raise ValueError(f"teacher_ids must lie in [0, {num_teachers}), got {bad}")
    ids = sorted(set(ids))
    parts = {i: check_indices(partition[i], images.shape[0], f"partition[{i}]") for i in ids}
    empty = [i for i in ids if parts[i].size == 0]
    if empty:
        raise ValueError(f"partition parts {empty} are empty: every teacher needs at least one training record")
    return labels, ids, parts


def _to_train(work_dir: Path, ids, identities, shapes) -> list[int]:
    """The teachers without a usable file: missing, or damaged or of other settings (a warning names why)."""
    todo = []
    for i in ids:
        path = teacher_path(work_dir, i)
        if not path.exists():
            todo.append(i)
        elif (problem := _problem_with(path, identities[i], shapes)) is not None:
            warnings.warn(f"teacher file {path} is not usable ({problem}); retraining teacher {i}", stacklevel=3)
            todo.append(i)
    return todo


def train_teachers(
    settings: NetworkTeacherSettings,
    trainer: TrainerSettings,
    images: np.ndarray,
    labels: np.ndarray,
    partition: Sequence[np.ndarray],
    work_dir: Path,
    teacher_ids: Sequence[int] | None = None,
    progress: bool = True,
) -> list[Path]:
    """Train teacher i on ``images[partition[i]]`` with ``labels[partition[i]]`` for each i in ``teacher_ids``
    (default: all) as ``settings`` say, with ``trainer``'s device and precision, skipping teachers already saved in
    ``work_dir``.

    Each file holds ``{"state_dict": the network's parameters on CPU, "meta": {...}}``; CSV logs go to
    ``work_dir/logs/teacher_{i:04d}/``. Returns the paths of all ``len(partition)`` teachers; raises
    RuntimeError if a requested one is missing at the end.
    """
    labels, ids, parts = _checked_inputs(images, labels, partition, teacher_ids)
    num_teachers = len(partition)
    work_dir = Path(work_dir)
    work_dir.mkdir(parents=True, exist_ok=True)
    recipe = settings.recipe
    shapes = {k: tuple(v.shape) for k, v in recipe.make_net().state_dict().items()}
    identities = {
        i: {
            "teacher": i,
            "seed": teacher_seed(settings.seed, i),
            "indices_sha256": _indices_sha256(parts[i]),
            "config": settings.identity,
        }
        for i in ids
    }
    todo = _to_train(work_dir, ids, identities, shapes)
    reused = len(ids) - len(todo)
    log.info("teachers: %d of %d requested already trained, %d to train", reused, len(ids), len(todo))
    group = _ensemble_size(settings, trainer) if todo else 1
    bar = progress_bar(total=len(ids), initial=reused, desc="teachers", unit="teacher", disable=not progress)
    with quiet_lightning(), bar:
        if group > 1:
            device = trainer.device
            for start in range(0, len(todo), group):
                chunk = todo[start : start + group]
                states, losses, seconds = train_group(
                    recipe,
                    settings.adamw,
                    images,
                    labels,
                    [parts[i] for i in chunk],
                    [identities[i]["seed"] for i in chunk],
                    device,
                    trainer.precision,
                )
                for i, state, loss in zip(chunk, states, losses, strict=True):
                    _save(state, identities[i], parts[i], trainer, loss, seconds / len(chunk), "batched", work_dir)
                bar.update(len(chunk))
        else:
            for i in todo:
                _train_one(recipe, trainer, images, labels, parts[i], identities[i], work_dir)
                bar.update()

    missing = [i for i in ids if not teacher_path(work_dir, i).exists()]
    if missing:
        raise RuntimeError(f"teachers {missing} were requested but are missing from {work_dir}")
    return [teacher_path(work_dir, i) for i in range(num_teachers)]


def _train_one(
    recipe: Recipe, trainer: TrainerSettings, images, labels, indices, identity: dict, work_dir: Path
) -> None:
    i, seed = identity["teacher"], identity["seed"]
    pl.seed_everything(seed, workers=True, verbose=False)
    module = recipe.module()
    net = module.net
    dataset = IndexedImages(images, indices, labels[indices])
    loader = make_loader(dataset, recipe.batch_size, shuffle=True, seed=seed, num_workers=trainer.num_workers)
    lightning = build_trainer(trainer, recipe.max_epochs, log_dir=work_dir / "logs" / f"teacher_{i:04d}")
    start = time.perf_counter()
    fit(lightning, module, loader)
    state = {k: v.detach().cpu() for k, v in net.state_dict().items()}
    loss = lightning.callback_metrics.get("train/loss")  # absent only if no step ran
    _save(
        state,
        identity,
        indices,
        trainer,
        float("nan") if loss is None else float(loss),
        time.perf_counter() - start,
        "loop",
        work_dir,
    )


def _ensemble_size(settings: NetworkTeacherSettings, trainer: TrainerSettings) -> int:
    """``settings.ensemble_size`` (G teachers trained together, teachers/batched.py), or 1 with a warning when
    these teachers cannot be stacked."""
    group = settings.ensemble_size
    why = refusal(settings, trainer.precision) if group > 1 else None
    if why is not None:
        log.warning("teacher.ensemble_size=%d, but %s: training one teacher at a time", group, why)
        return 1
    return group


def _save(
    state: dict[str, torch.Tensor],
    identity: dict,
    indices: np.ndarray,
    trainer: TrainerSettings,
    train_loss: float,
    seconds: float,
    engine: str,
    work_dir: Path,
) -> None:
    """Write teacher ``identity["teacher"]``'s file atomically, refusing parameters that are not finite."""
    i = identity["teacher"]
    if not all(torch.isfinite(v).all() for v in state.values() if v.is_floating_point()):
        raise RuntimeError(
            f"teacher {i} diverged: its parameters are not finite after training (lower teacher.optimizer.lr?)"
        )
    meta = dict(
        identity,
        num_train=len(indices),
        train_loss=train_loss,
        seconds=seconds,
        engine=engine,
        accelerator=str(trainer.accelerator),
        precision=str(trainer.precision),
        torch=str(torch.__version__),
        lightning=str(pl.__version__),
        state_sha256=_state_sha256(state),
    )
    _atomic_torch_save({"state_dict": state, "meta": meta}, teacher_path(work_dir, i))
