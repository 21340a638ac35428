"""A user's own embeddings as the features (``features=precomputed``): one row per image, in the data's row order.

Whether they are public by construction is decided by where they come from, which this code cannot see: a model
trained on public data (or on no data) gives public features; a model that saw the private images or any label
derived from the task does not, and no epsilon printed on top of such features is a guarantee (README, "Your own
data"). What the code does check: the file's shape against the data, finite values, and its SHA-256 in the
feature stage's key (other embeddings give other teachers). Like every extractor's, the standardisation is fitted
on the public fit rows only.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import torch

from pate.features.extractors import Extractor, batches
from pate.io import sha256_file

_CHECK_ROWS = 65_536  # rows per finiteness check: a bounded memory footprint for a memory-mapped table


def _load(path: Path, key: str | None) -> np.ndarray:
    """The array of a ``.npy`` file (memory-mapped) or of a ``.npz`` archive (its ``key``, or its one array)."""
    if path.suffix == ".npy":
        return np.load(path, mmap_mode="r", allow_pickle=False)
    if path.suffix != ".npz":
        raise ValueError(f"features.extractor.path={str(path)!r}: expected a .npy or .npz file")
    with np.load(path, allow_pickle=False) as archive:
        names = list(archive.files)
        if key is None and len(names) != 1:
            raise ValueError(f"features.extractor.path={str(path)!r} holds {len(names)} arrays {names}; name one "
                             f"with features.extractor.key")
        name = key if key is not None else names[0]
        if name not in names:
            raise ValueError(f"features.extractor.key={key!r} is not in {str(path)!r}; it holds {names}")
        return archive[name]


class PrecomputedFeatures(Extractor):
    """Embeddings read from ``path`` (``.npy``, or ``.npz`` with ``key`` naming the array when it holds several):
    float or integer [N, D], N the data's number of images, row i the embedding of the data's image i (for
    ``data=multilabel_folder``, the CSV file's row order; for CelebA, the attribute file's). Standardised per
    dimension with the public fit rows' mean and standard deviation, like every extractor."""

    reads_images = False

    def __init__(self, path: str, key: str | None = None):
        super().__init__()
        if not path:
            raise ValueError("features.extractor.path is not set; expected the .npy or .npz file of the embeddings")
        self.path = Path(path).expanduser()
        if not self.path.is_file():
            raise FileNotFoundError(f"features.extractor.path={str(self.path)!r}: no such file")
        self.key = key
        table = _load(self.path, key)
        where = f"features.extractor.path={str(self.path)!r}" + (f" (key {key!r})" if key else "")
        if table.ndim != 2 or table.shape[0] < 1 or table.shape[1] < 1:
            raise ValueError(f"{where}: expected a 2-D array [images, dims], found shape {table.shape}")
        if not (np.issubdtype(table.dtype, np.floating) or np.issubdtype(table.dtype, np.integer)):
            raise ValueError(f"{where}: expected float or integer values, found dtype {table.dtype}")
        for part in batches(len(table), _CHECK_ROWS):
            bad = ~np.isfinite(np.asarray(table[part], dtype=np.float64)).all(axis=1)
            if bad.any():
                row = part.start + int(np.flatnonzero(bad)[0])
                raise ValueError(f"{where}: row {row} holds a non-finite value (nan or inf); "
                                 f"{int(bad.sum())} such row(s) among rows {part.start}..{part.stop - 1}")
        self.table = table
        self.sha256 = sha256_file(self.path)

    def settings(self) -> dict[str, Any]:
        # the checksum, not the path, identifies the embeddings
        return {"sha256": self.sha256, "key": self.key, "shape": list(self.table.shape)}

    def check_image_size(self, image_size: int) -> None:
        """Embeddings do not depend on the decoded size."""

    def check_rows(self, num_rows: int) -> None:
        if len(self.table) != num_rows:
            raise ValueError(f"features.extractor.path={str(self.path)!r} holds {len(self.table)} rows, the data "
                             f"{num_rows} images; expected one row per image, in the data's order")

    def _raw(self, images: torch.Tensor) -> torch.Tensor:
        raise TypeError("PrecomputedFeatures are looked up by image row (encode_rows), not computed from pixels")

    def _rows(self, rows: np.ndarray) -> torch.Tensor:
        return torch.from_numpy(np.asarray(self.table[np.asarray(rows, dtype=np.int64)], dtype=np.float32))

    def fit_rows(self, images: np.ndarray, rows: np.ndarray, seed: int = 0,
                 progress: Callable[[int], None] | None = None) -> PrecomputedFeatures:
        rows = np.asarray(rows, dtype=np.int64)
        return self._standardise_on((self._rows(rows[part]) for part in batches(len(rows), 4096)), progress)

    def encode_rows(self, images: np.ndarray, rows: np.ndarray,
                    view: Callable[[torch.Tensor], torch.Tensor] | None = None) -> torch.Tensor:
        if view is not None:
            raise ValueError("features=precomputed has no features of augmented views; student.semi.method="
                             "consistency needs an extractor that reads the images")
        if not self.fitted:
            raise RuntimeError("PrecomputedFeatures.encode_rows called before fit_rows(public rows)")
        return (self._rows(rows) - self._mean) / self._std

    def dim(self, image_size: int) -> int:
        return int(self.table.shape[1])


__all__ = ["PrecomputedFeatures"]
