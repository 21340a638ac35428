"""Datasets and loaders over the decoded image tensor.

Images travel as uint8 (4x less memory and copying than float) and are converted to float on the device,
in the model's step, by :func:`to_float`. A dataset materialises only the rows it is given, once.
"""

from __future__ import annotations

import numpy as np
import torch
from torch.utils.data import DataLoader, Dataset

# A fixed normalisation, the same for every dataset: x / 255 mapped from [0, 1] to [-1, 1].
_MEAN = 0.5
_STD = 0.5


def to_float(images: torch.Tensor) -> torch.Tensor:
    """uint8 images [B, 3, S, S] -> float32 ``(x / 255 - 0.5) / 0.5`` in [-1, 1]."""
    if images.dtype != torch.uint8:
        raise ValueError(f"images must be a uint8 tensor, got dtype {images.dtype}")
    return (images.float() / 255.0 - _MEAN) / _STD


def check_images(images) -> None:
    """``images`` must be a uint8 array [N, 3, S, S] (np.ndarray or np.memmap)."""
    if not isinstance(images, np.ndarray) or images.dtype != np.uint8 or images.ndim != 4 or images.shape[1] != 3:
        shape = getattr(images, "shape", None)
        dtype = getattr(images, "dtype", type(images).__name__)
        raise ValueError(f"images must be a uint8 numpy array [N, 3, S, S], got dtype {dtype} and shape {shape}")


def check_indices(indices, num_images: int, name: str = "indices") -> np.ndarray:
    """A 1-D integer array of row numbers in [0, num_images), returned as int64."""
    indices = np.asarray(indices)
    if indices.ndim != 1 or not (indices.dtype.kind in "iu" or indices.size == 0):
        raise ValueError(f"{name} must be a 1-D integer array, got dtype {indices.dtype} and shape {indices.shape}")
    if indices.size and (indices.min() < 0 or indices.max() >= num_images):
        raise ValueError(f"{name} must lie in [0, {num_images}), got values in [{indices.min()}, {indices.max()}]")
    return indices.astype(np.int64)


def check_labels(labels, num_rows: int, name: str = "labels") -> np.ndarray:
    """A 2-D array [num_rows, L] with values in {0, 1} (bool or integer)."""
    labels = np.asarray(labels)
    if labels.ndim != 2 or labels.shape[0] != num_rows:
        raise ValueError(f"{name} must have shape [{num_rows}, num_labels], got {labels.shape}")
    if labels.dtype != np.bool_ and not (labels.dtype.kind in "iu" and np.isin(labels, (0, 1)).all()):
        raise ValueError(f"{name} must hold only 0 and 1 (bool or integer dtype), got dtype {labels.dtype}")
    return labels


class IndexedImages(Dataset):
    """The rows ``indices`` of ``images`` (uint8 [N, 3, S, S]), materialised once as a uint8 tensor.

    ``labels``, when given, are aligned with ``indices`` (shape [len(indices), L], one row per selected
    image: the caller slices a full label array itself), so that a student's dataset can hold released
    labels that exist only for the answered queries. Items are ``(uint8 image, float labels)``, with a float
    ``mask`` row third when a mask is given (which label entries count in the loss), or the image alone
    without labels. ``indices`` is kept so that callers can check what a loader may see.
    """

    def __init__(self, images, indices, labels=None, mask=None):
        check_images(images)
        self.indices = check_indices(indices, images.shape[0])
        self.images = torch.from_numpy(np.ascontiguousarray(images[self.indices]))
        self.labels = self.mask = None
        if labels is not None:
            self.labels = torch.from_numpy(check_labels(labels, len(self.indices)).astype(np.float32))
        if mask is not None:
            if labels is None:
                raise ValueError("a mask needs labels: it says which label entries count in the loss")
            self.mask = torch.from_numpy(check_labels(mask, len(self.indices), "mask").astype(np.float32))

    def __len__(self) -> int:
        return len(self.indices)

    def __getitem__(self, i):
        if self.labels is None:
            return self.images[i]
        if self.mask is None:
            return self.images[i], self.labels[i]
        return self.images[i], self.labels[i], self.mask[i]


def make_loader(dataset: Dataset, batch_size: int, shuffle: bool, seed: int, num_workers: int) -> DataLoader:
    """A DataLoader whose shuffling order is a function of ``seed`` alone (its own torch.Generator)."""
    if not isinstance(batch_size, int) or batch_size < 1:
        raise ValueError(f"batch_size must be a positive integer, got {batch_size!r}")
    if not isinstance(num_workers, int) or num_workers < 0:
        raise ValueError(f"num_workers must be a non-negative integer, got {num_workers!r}")
    generator = torch.Generator().manual_seed(int(seed))
    return DataLoader(
        dataset,
        batch_size=batch_size,
        shuffle=shuffle,
        generator=generator,
        num_workers=num_workers,
        persistent_workers=num_workers > 0,
    )
