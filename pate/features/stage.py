"""The ``features`` stage: a frozen public extractor applied once to the images that teachers and students read.

The extractor is fitted on public images only: ``num_fit_images`` images, drawn with ``fit_seed`` from the
public split ``fit_split`` (CelebA's validation split by default, whose labels no stage reads). Its input is
an image array and nothing else, so no label can reach it; ``build_features`` checks that no fit row lies in
the private training split. (With ``fit_split=test``, for data without val rows, the fit rows may include
evaluation images: public, their pixels unlabelled, but then not unseen by the extractor.) The artifact holds
float16 features of ``rows``
(the training and test splits: the teachers' parts, the public queries and the evaluation images), read back
memory-mapped by :class:`FeatureTable`.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import torch

from pate.artifacts import Artifact, atomic_write_json
from pate.features.extractors import Extractor, batches, check_uint8_images
from pate.io import open_npy_for_writing
from pate.privacy.checks import positive_int
from pate.progress import progress_bar

FEATURES_FILE = "features.npy"
ROWS_FILE = "rows.npy"
STATE_FILE = "extractor.pt"  # what the fit learned (``Extractor.state``): a kept model encodes new images with it


def choose_fit_rows(public_rows: np.ndarray, num_fit_images: int, seed: int) -> np.ndarray:
    """A seeded, sorted sample of ``num_fit_images`` of the public rows (all of them if there are fewer)."""
    public_rows = np.asarray(public_rows, dtype=np.int64)
    if public_rows.size == 0:
        raise ValueError("the public fit split holds no images: nothing to fit the extractor on")
    take = min(positive_int("features.num_fit_images", num_fit_images), public_rows.size)
    return np.sort(np.random.default_rng(seed).choice(public_rows, take, replace=False))


def fit_extractor(
    extractor: Extractor,
    images: np.ndarray,
    fit_rows: np.ndarray,
    private_rows: np.ndarray,
    fit_seed: int,
    progress: bool = True,
) -> None:
    """Fit ``extractor`` on ``images[fit_rows]`` (public). ``private_rows`` are the training split's rows: a fit
    row among them is refused before anything runs."""
    check_uint8_images(images)
    fit_rows = np.asarray(fit_rows, dtype=np.int64)
    leaked = np.intersect1d(fit_rows, private_rows)
    if leaked.size:
        raise ValueError(
            f"the extractor's fit rows include {leaked.size} private training rows (e.g. "
            f"{leaked[:5].tolist()}); it may only be fitted on public images"
        )
    with progress_bar(
        total=len(fit_rows), desc="features: fit on public images", unit="img", disable=not progress
    ) as bar:
        extractor.fit_rows(images, fit_rows, seed=fit_seed, progress=bar.update)


def write_features(
    work: Path,
    extractor: Extractor,
    images: np.ndarray,
    rows: np.ndarray,
    progress: bool = True,
    view: Callable[[torch.Tensor], torch.Tensor] | None = None,
    desc: str = "features: extract",
) -> int:
    """Write the fitted ``extractor``'s features of ``images[rows]`` (of ``view(batch)``, a uint8 -> uint8 map,
    when given) as ``features.npy`` float16 [len(rows), D] and ``rows.npy`` int64; ``rows`` must be sorted
    and distinct. Batches are taken in row order, so a seeded ``view`` gives the same file every time. Returns
    D."""
    rows = np.asarray(rows, dtype=np.int64)
    if not np.array_equal(rows, np.unique(rows)):
        raise ValueError("rows must be sorted and distinct")
    dim = extractor.dim(images.shape[-1])
    tmp = work / (FEATURES_FILE + ".tmp")
    out = open_npy_for_writing(tmp, np.float16, (len(rows), dim))  # a full disk: an error here, not SIGBUS later
    with progress_bar(total=len(rows), desc=desc, unit="img", disable=not progress) as bar:
        for part in batches(len(rows), 1024):
            encoded = extractor.encode_rows(images, rows[part], view).numpy().astype(np.float16)
            if not np.isfinite(encoded).all():  # checked per chunk: re-reading the whole file would cost a pass
                raise RuntimeError(
                    f"{type(extractor).__name__} produced non-finite features for image rows "
                    f"{rows[part][:5].tolist()}... (float16 overflow?)"
                )
            out[part] = encoded
            bar.update(part.stop - part.start)
    out.flush()
    del out
    tmp.replace(work / FEATURES_FILE)
    np.save(work / ROWS_FILE, rows)
    return dim


def build_features(
    work: Path,
    extractor: Extractor,
    images: np.ndarray,
    fit_rows: np.ndarray,
    rows: np.ndarray,
    private_rows: np.ndarray,
    fit_seed: int,
    progress: bool = True,
) -> None:
    """Fit ``extractor`` on ``images[fit_rows]`` (public, :func:`fit_extractor`), then write the features of
    ``images[rows]`` (:func:`write_features`), ``extractor.json`` and what the fit learned (:data:`STATE_FILE`)."""
    fit_extractor(extractor, images, fit_rows, private_rows, fit_seed, progress)
    dim = write_features(work, extractor, images, np.unique(np.asarray(rows, dtype=np.int64)), progress)
    atomic_write_json(work / "extractor.json", {**extractor.identity(), "dim": dim, "fit_rows": len(fit_rows)})
    torch.save(extractor.state(), work / STATE_FILE)


_TAKE_CHUNK = 16_384  # rows read from the memory map at once by FeatureTable.take (268 MB of float16 at 8,192 dims)


@dataclass(frozen=True)
class FeatureTable:
    """Memory-mapped features of a set of image rows: ``take(indices)`` -> float32 tensor [len(indices), D]."""

    features: np.ndarray  # float16 [R, D], memory-mapped
    rows: np.ndarray  # int64 [R], sorted
    identity: dict

    @property
    def dim(self) -> int:
        """The feature dimension D."""
        return int(self.features.shape[1])

    def take(self, indices: np.ndarray) -> torch.Tensor:
        """float32 [len(indices), D]: the features of these image rows, in their order; ``KeyError`` naming rows the
        artifact does not cover (it holds the training and test splits only)."""
        indices = np.asarray(indices, dtype=np.int64)
        pos = np.searchsorted(self.rows, indices).clip(0, len(self.rows) - 1)
        missing = indices[self.rows[pos] != indices]
        if missing.size:
            raise KeyError(
                f"the feature artifact has no features for image rows {missing[:5].tolist()} "
                f"({missing.size} in all); it covers the training and test splits only"
            )
        order = np.argsort(pos, kind="stable")  # read the memory map in ascending order
        out = torch.empty((len(indices), self.dim), dtype=torch.float32)
        # in chunks, each float16 chunk widened by torch (exact, and five times as fast as numpy's cast)
        for start in range(0, len(order), _TAKE_CHUNK):
            part = order[start : start + _TAKE_CHUNK]
            out[torch.from_numpy(part)] = torch.from_numpy(self.features[pos[part]]).float()
        return out


def read_features(art: Artifact) -> FeatureTable:
    """The features artifact as a :class:`FeatureTable` (the features memory-mapped, opened through the manifest)."""
    return FeatureTable(
        features=np.load(art.file(FEATURES_FILE), mmap_mode="r"),
        rows=np.load(art.file(ROWS_FILE)),
        identity=json.loads(art.file("extractor.json").read_text()),
    )


__all__ = ["FeatureTable", "build_features", "choose_fit_rows", "fit_extractor", "read_features", "write_features"]
