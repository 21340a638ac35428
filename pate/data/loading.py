"""The data stage: read (and on first use generate) the dataset, and what identifies it in stage keys."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import numpy as np

from pate.data.celeba import CelebAArrays, load_celeba
from pate.data.synthetic import generate_synthetic_celeba

__all__ = ["data_identity", "load_data"]


def data_identity(data_cfg: Mapping[str, Any], data: CelebAArrays) -> dict[str, Any]:
    """What identifies the decoded dataset in stage keys: its name, resolution and content fingerprint
    (``CelebAArrays.fingerprint``: labels, splits, file names and images) -- never its location on disk, so
    moving a dataset keeps the cache and editing it in place does not."""
    if not data.fingerprint:
        raise ValueError("the dataset has no content fingerprint; read it with load_data (pate.data.load_celeba)")
    return {"name": str(data_cfg["name"]), "image_size": int(data_cfg["image_size"]), "content": data.fingerprint}


def load_data(data_cfg: Mapping[str, Any], tensor_cache_dir: Path, progress: bool = True,
              check_splits: Callable[[np.ndarray], None] | None = None) -> CelebAArrays:
    """Generate the synthetic set on first use (when ``data.synthetic`` is set), then read it -- or real
    CelebA at ``data.root`` -- through the one CelebA reader into the memory-mapped tensor cache.
    ``check_splits(split codes)`` runs after the text files are read, before any image is decoded."""
    root = Path(data_cfg["root"]).expanduser()
    syn = data_cfg.get("synthetic")
    if syn is not None:
        generate_synthetic_celeba(
            root,
            num_images=int(syn["num_images"]),
            image_size=int(syn["image_size"]),
            split_fractions=tuple(syn["split_fractions"]),
            seed=int(syn["seed"]),
            num_workers=int(data_cfg.get("num_workers", 0)),
            progress=progress,
        )
    return load_celeba(
        root,
        image_size=int(data_cfg["image_size"]),
        cache_dir=tensor_cache_dir,
        num_workers=int(data_cfg.get("num_workers", 0)),
        progress=progress,
        check_splits=check_splits,
    )
