"""A user's own embeddings as the features (``features=precomputed``): one row per image, in the data's row order.

Whether they are public by construction is decided by where they come from, which this code cannot see: a model
trained on public data (or on no data) gives public features; a model that saw the private images or any label
derived from the task does not, and no epsilon printed on top of such features is a guarantee (docs/your-data.md,
"Your own data"). What the code does check: that the file is a NumPy file at all, the file's shape against the data, finite
values, that some column varies, and its SHA-256 in the feature stage's key (other embeddings give other teachers).
Like every extractor's, the standardisation is fitted on the public fit rows only.

Precision: the embeddings are standardised in float64 (exact for float16, float32 and int32 input) before they meet
the working precision, float32, and the feature artifact's float16. Casting first would lose them: float32's
spacing at 1e9 is 64, so ``embeddings + 1e9`` would become constant in every column; standardised first, they give
the same features as without the offset. After standardisation on the fit rows every column has mean 0 and
standard deviation 1 there, which float16's 11 significant bits keep (a relative error of at most 2^-11 per value).
What can still be lost is a value of another row that lies more than float16's largest finite value (65504)
standard deviations from the fit rows' mean: :meth:`PrecomputedFeatures.check_encoding` refuses it, naming the
row and the column, before any stage is built. Not detected: one huge outlier among the fit rows, whose standard
deviation then dwarfs the other rows' spread (that is the standardisation's blind spot, in any precision).
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import torch

from pate.features.extractors import Extractor, batches
from pate.io import sha256_file

_CHECK_ROWS = 65_536  # rows per pass over the table: a bounded memory footprint for a memory-mapped table
_MAGIC = {".npy": (b"\x93NUMPY",), ".npz": (b"PK\x03\x04", b"PK\x05\x06")}  # numpy.save's; a zip archive's
_STORED_MAX = float(np.finfo(np.float16).max)  # the feature artifact's float16 (pate/features/stage.py)


def _check_magic(path: Path) -> None:
    """Refuse a file that does not start as its suffix says. ``np.load`` reads any other file as pickled data and
    advises ``allow_pickle=True``, which would run code from the file: a file that is not NumPy's is said to be
    so instead."""
    if path.suffix not in _MAGIC:
        raise ValueError(f"features.extractor.path={str(path)!r}: expected a .npy or .npz file")
    with path.open("rb") as handle:
        head = handle.read(6)
    if not head.startswith(_MAGIC[path.suffix]):
        made_by = "numpy.save" if path.suffix == ".npy" else "numpy.savez"
        raise ValueError(
            f"features.extractor.path={str(path)!r} is not a NumPy {path.suffix} file (it starts with "
            f"{head!r}, not {_MAGIC[path.suffix][0]!r}); expected an array written by {made_by}"
        )


def _load(path: Path, key: str | None) -> np.ndarray:
    """The array of a ``.npy`` file (memory-mapped) or of a ``.npz`` archive (its ``key``, or its one array)."""
    _check_magic(path)
    if path.suffix == ".npy":
        return np.load(path, mmap_mode="r", allow_pickle=False)
    with np.load(path, allow_pickle=False) as archive:
        names = list(archive.files)
        if key is None and len(names) != 1:
            raise ValueError(
                f"features.extractor.path={str(path)!r} holds {len(names)} arrays {names}; name one "
                f"with features.extractor.key"
            )
        name = key if key is not None else names[0]
        if name not in names:
            raise ValueError(f"features.extractor.key={key!r} is not in {str(path)!r}; it holds {names}")
        return archive[name]


def _check_values(table: np.ndarray, where: str) -> None:
    """Every value finite and some column varying, in float64 (the input's own values; an offset too large for
    float64 itself, such as ``embeddings + 1e39``, leaves every column constant and is refused here)."""
    varies = np.zeros(table.shape[1], dtype=bool)
    first = np.asarray(table[:1], dtype=np.float64)[0]
    for part in batches(len(table), _CHECK_ROWS):
        chunk = np.asarray(table[part], dtype=np.float64)
        bad = ~np.isfinite(chunk).all(axis=1)
        if bad.any():
            row = part.start + int(np.flatnonzero(bad)[0])
            raise ValueError(
                f"{where}: row {row} holds a non-finite value (nan or inf); "
                f"{int(bad.sum())} such row(s) among rows {part.start}..{part.stop - 1}"
            )
        varies |= (chunk != first).any(axis=0)
    if not varies.any():
        raise ValueError(
            f"{where}: every column is constant over all {len(table)} rows (in float64), so the "
            f"embeddings carry no information; expected rows that differ"
        )


def _moments(
    table: np.ndarray, rows: np.ndarray, progress: Callable[[int], None] | None
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Mean, standard deviation and constancy of every column over ``table[rows]``, in float64, merging batches with
    Chan, Golub & LeVeque's update of the centred sums: the textbook E[x^2] - E[x]^2 cancels catastrophically when
    the mean dwarfs the spread (at 1e9, float64's spacing of x^2 is 128, which would swallow a unit variance). A
    column is constant when its minimum equals its maximum, exactly; its mean is then that value, exactly."""
    n, mean, m2, low, high = 0, None, None, None, None
    for part in batches(len(rows), _CHECK_ROWS):
        x = np.asarray(table[rows[part]], dtype=np.float64)
        k, part_mean = len(x), x.mean(axis=0)
        part_m2 = ((x - part_mean) ** 2).sum(axis=0)
        if mean is None:
            mean, m2, low, high = part_mean, part_m2, x.min(axis=0), x.max(axis=0)
        else:
            delta = part_mean - mean
            mean = mean + delta * (k / (n + k))
            m2 = m2 + part_m2 + delta**2 * (n * k / (n + k))
            low, high = np.minimum(low, x.min(axis=0)), np.maximum(high, x.max(axis=0))
        n += k
        if progress is not None:
            progress(k)
    constant = low == high
    return np.where(constant, low, mean), np.sqrt(m2 / n), constant


class PrecomputedFeatures(Extractor):
    """Embeddings read from ``path`` (``.npy``, or ``.npz`` with ``key`` naming the array when it holds several):
    float or integer [N, D], N the data's number of images, row i the embedding of the data's image i (for
    ``data=multilabel_folder``, the CSV file's row order; for CelebA, the attribute file's). Standardised per
    dimension with the public fit rows' mean and standard deviation, like every extractor, here in float64."""

    reads_images = False
    learned = ()  # looked up by row: nothing here could encode a new image, so a kept model cannot label one

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
        _check_values(table, where)
        self.where = where
        self.table = table
        self.sha256 = sha256_file(self.path)

    def settings(self) -> dict[str, Any]:
        # the checksum, not the path, identifies the embeddings
        return {"sha256": self.sha256, "key": self.key, "shape": list(self.table.shape)}

    def check_image_size(self, image_size: int) -> None:
        """Embeddings do not depend on the decoded size."""

    def check_rows(self, num_rows: int) -> None:
        if len(self.table) != num_rows:
            raise ValueError(
                f"features.extractor.path={str(self.path)!r} holds {len(self.table)} rows, the data "
                f"{num_rows} images; expected one row per image, in the data's order"
            )

    def check_encoding(self, fit_rows: np.ndarray, rows: np.ndarray) -> None:
        """Fit on ``fit_rows`` and refuse, before any stage is built, embeddings whose standardised ``rows`` the
        float16 artifact cannot hold: every column constant over the fit rows (all features 0), or a value more
        than 65504 fit-row standard deviations from the fit rows' mean (it would overflow to inf)."""
        self.fit_rows(None, fit_rows)
        if self._constant.all():
            raise ValueError(
                f"{self.where}: every column is constant over the {len(fit_rows)} public fit rows "
                f"(features.fit_split), so every standardised feature would be 0; expected embeddings "
                f"that vary over the public rows"
            )
        rows = np.asarray(rows, dtype=np.int64)
        for part in batches(len(rows), _CHECK_ROWS):
            scaled = np.abs(self._standardised(rows[part]))
            if scaled.max() > _STORED_MAX:
                row, column = np.unravel_index(int(scaled.argmax()), scaled.shape)
                raise ValueError(
                    f"{self.where}: row {int(rows[part][row])}, column {int(column)} standardises to "
                    f"{scaled[row, column]:.3g} in magnitude with the public fit rows' mean and standard deviation, "
                    f"beyond float16's largest value {_STORED_MAX:g} (the stored features' precision); expected "
                    f"every row on the fit rows' scale"
                )

    def _raw(self, images: torch.Tensor) -> torch.Tensor:
        raise TypeError("PrecomputedFeatures are looked up by image row (encode_rows), not computed from pixels")

    def _standardised(self, rows: np.ndarray) -> np.ndarray:
        """float64 [len(rows), D]: standardised in the input's own precision, before any cast (module docstring)."""
        table = np.asarray(self.table[np.asarray(rows, dtype=np.int64)], dtype=np.float64)
        return (table - self._mean) / self._std

    def fit_rows(
        self, images: np.ndarray, rows: np.ndarray, seed: int = 0, progress: Callable[[int], None] | None = None
    ) -> PrecomputedFeatures:
        """The standardisation on ``rows`` (public), kept in float64; a column constant there gets standard
        deviation 1 and its value as mean, so it maps to exactly 0."""
        mean, std, self._constant = _moments(self.table, np.asarray(rows, dtype=np.int64), progress)
        self._mean, self._std = mean, np.where(self._constant, 1.0, std)  # numpy float64: never moved nor cast
        return self

    def encode_rows(
        self, images: np.ndarray, rows: np.ndarray, view: Callable[[torch.Tensor], torch.Tensor] | None = None
    ) -> torch.Tensor:
        if view is not None:
            raise ValueError(
                "features=precomputed has no features of augmented views; student.semi.method="
                "consistency needs an extractor that reads the images"
            )
        if not self.fitted:
            raise RuntimeError("PrecomputedFeatures.encode_rows called before fit_rows(public rows)")
        return torch.from_numpy(self._standardised(rows).astype(np.float32))

    def dim(self, image_size: int) -> int:
        return int(self.table.shape[1])


__all__ = ["PrecomputedFeatures"]
