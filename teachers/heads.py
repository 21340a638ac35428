"""``teacher=heads``: one ridge head per teacher on the public features, all T fitted as batched problems.

Teacher i sees only ``features[partition[i]]`` and ``labels[partition[i]]``: its feature mean, its label means
and its L2 strengths (leave-one-out over its own rows, per attribute) come from its own part, and the feature
standardisation was fitted on public images (``pate.features``). Nothing couples teachers; fitting them
together or one at a time gives the same heads (up to float rounding; tested).

Resume: teachers are fitted in chunks of ``teacher.chunk_size``; chunk c is saved atomically as
``heads_{c:05d}.npz`` when done, with the identity of every teacher in it (index, part checksum, settings). A
rerun keeps every chunk that loads (zip CRC checked) and matches, and refits any other with a warning naming
the file.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import warnings
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import torch

from pate.artifacts import Artifact
from pate.features import FeatureTable, fit_ridge_heads, head_scores, head_weights
from pate.progress import progress_bar
from teachers.settings import HeadTeacherSettings

log = logging.getLogger(__name__)


def _chunk_path(work_dir: Path, chunk: int) -> Path:
    return Path(work_dir) / f"heads_{chunk:05d}.npz"


def _chunk_file(teachers: Path | Artifact, chunk: int) -> Path:
    """The file of ``chunk`` to read: through the teachers artifact's manifest when given one (``Artifact.file``
    refuses a file the manifest does not list), else in the directory ``teachers``."""
    if isinstance(teachers, Artifact):
        return teachers.file(_chunk_path(Path(), chunk).name)
    return _chunk_path(teachers, chunk)


def _identity(settings: HeadTeacherSettings, ids: Sequence[int], parts: Sequence[np.ndarray]) -> str:
    h = hashlib.sha256(json.dumps(settings.identity, sort_keys=True).encode())
    for i in ids:
        h.update(f"|{i}|".encode())
        h.update(np.ascontiguousarray(parts[i], dtype=np.int64).tobytes())
    return h.hexdigest()


def _same_size_groups(ids: Sequence[int], parts: Sequence[np.ndarray]) -> list[list[int]]:
    """The teacher ids grouped by part size: each group is one batched problem [G, n, D]."""
    by_size: dict[int, list[int]] = {}
    for i in ids:
        by_size.setdefault(len(parts[i]), []).append(i)
    return list(by_size.values())


def fit_heads(
    features: FeatureTable, labels: np.ndarray, parts: Sequence[np.ndarray], ids: Sequence[int], lambdas
) -> dict[str, np.ndarray]:
    """Fit the heads of teachers ``ids``; returns their dual form, concatenated over teachers in ``ids`` order:
    ``beta`` float32 [sum n_i, L], ``offsets`` [len(ids)+1], ``ybar``, ``lam``, ``loo_mse`` float32
    [len(ids), L]."""
    if any(len(parts[i]) < 2 for i in ids):
        raise ValueError(
            "teacher=heads needs at least 2 records per teacher (leave-one-out); "
            f"smallest part: {min(len(parts[i]) for i in ids)}"
        )
    position = {i: k for k, i in enumerate(ids)}
    beta: list[np.ndarray | None] = [None] * len(ids)
    per_teacher = {name: np.zeros((len(ids), labels.shape[1]), np.float32) for name in ("ybar", "lam", "loo_mse")}
    for group in _same_size_groups(ids, parts):
        rows = np.stack([parts[i] for i in group])  # [G, n]
        x = features.take(rows.reshape(-1)).reshape(len(group), rows.shape[1], -1)
        y = torch.from_numpy(labels[rows].astype(np.float32))
        heads = fit_ridge_heads(x, y, lambdas)
        for g, i in enumerate(group):
            beta[position[i]] = heads.beta[g].numpy()
            for name in per_teacher:
                per_teacher[name][position[i]] = getattr(heads, name)[g].numpy()
    offsets = np.cumsum([0] + [len(parts[i]) for i in ids])
    return {"beta": np.concatenate(beta), "offsets": offsets, **per_teacher}


def _load_chunk(path: Path, identity: str) -> tuple[dict[str, np.ndarray] | None, str | None]:
    try:
        with np.load(path) as z:
            chunk = {name: z[name] for name in z.files}
    except Exception as err:  # a damaged zip raises BadZipFile, EOFError, ValueError, OSError, ...
        return None, f"unreadable ({type(err).__name__}: {str(err)[:120]})"
    if str(chunk.get("identity")) != identity:
        return None, "it was fitted for other teachers, parts or settings"
    return chunk, None


def train_head_teachers(
    settings: HeadTeacherSettings,
    features: FeatureTable,
    labels: np.ndarray,
    parts: Sequence[np.ndarray],
    work_dir: Path,
    progress: bool = True,
) -> None:
    """Fit every teacher's head into ``work_dir``, chunk by chunk, keeping chunks already saved there."""
    work_dir = Path(work_dir)
    size, num = settings.chunk_size, len(parts)
    chunks = [list(range(s, min(s + size, num))) for s in range(0, num, size)]
    todo = []
    for c, ids in enumerate(chunks):
        path = _chunk_path(work_dir, c)
        if path.exists():
            _, problem = _load_chunk(path, _identity(settings, ids, parts))
            if problem is None:
                continue
            warnings.warn(
                f"teacher heads file {path} is not usable ({problem}); refitting teachers {ids[0]}..{ids[-1]}",
                stacklevel=2,
            )
        todo.append(c)
    log.info(
        "teacher heads: %d of %d chunks already fitted, %d to fit", len(chunks) - len(todo), len(chunks), len(todo)
    )
    with progress_bar(
        total=num,
        initial=num - sum(len(chunks[c]) for c in todo),
        desc="teachers (heads)",
        unit="teacher",
        disable=not progress,
    ) as bar:
        for c in todo:
            fitted = fit_heads(features, labels, parts, chunks[c], settings.lambdas)
            path = _chunk_path(work_dir, c)
            tmp = path.with_name(f".{path.name}.tmp-{os.getpid()}.npz")
            np.savez(tmp, identity=np.array(_identity(settings, chunks[c], parts)), ids=np.array(chunks[c]), **fitted)
            os.replace(tmp, path)
            bar.update(len(chunks[c]))


def head_votes(
    settings: HeadTeacherSettings,
    work_dir: Path | Artifact,
    features: FeatureTable,
    parts: Sequence[np.ndarray],
    query_rows: np.ndarray,
    eval_rows: np.ndarray,
    eval_labels: np.ndarray,
    progress: bool = True,
) -> tuple[np.ndarray, np.ndarray]:
    """(votes bool [Q, T, L] of every teacher on the queries, mean per-attribute accuracy [T] of every teacher
    on ``eval_rows``). A vote is on iff the head's score exceeds 1/2."""
    size, num = settings.chunk_size, len(parts)
    queries, evaluation = features.take(query_rows), features.take(eval_rows)
    truth = torch.from_numpy(np.asarray(eval_labels, dtype=bool))
    votes = np.zeros((len(query_rows), num, eval_labels.shape[1]), dtype=bool)
    accuracy = np.zeros(num)
    starts = progress_bar(range(0, num, size), desc="votes (heads)", unit="chunk", disable=not progress)
    for c, start in enumerate(starts):
        ids = list(range(start, min(start + size, num)))
        path = _chunk_file(work_dir, c)
        chunk, problem = _load_chunk(path, _identity(settings, ids, parts))
        if problem is not None:
            raise RuntimeError(f"teacher heads file {path} is not usable: {problem}")
        for group in _same_size_groups(ids, parts):
            rows = np.stack([parts[i] for i in group])
            x = features.take(rows.reshape(-1)).reshape(len(group), rows.shape[1], -1)
            k = [i - start for i in group]
            beta = torch.from_numpy(np.stack([chunk["beta"][chunk["offsets"][j] : chunk["offsets"][j + 1]] for j in k]))
            weights, bias = head_weights(x, beta, torch.from_numpy(chunk["ybar"][k]))
            votes[:, group] = (head_scores(queries, weights, bias) > 0.5).permute(1, 0, 2).numpy()
            accuracy[group] = ((head_scores(evaluation, weights, bias) > 0.5) == truth).double().mean((1, 2)).numpy()
    return votes, accuracy


__all__ = ["fit_heads", "head_votes", "train_head_teachers"]
