"""The ``views`` stage: features of one strongly augmented view of every public pool image, for the head
student's consistency method (FixMatch, student/semi.py).

The frozen extractor cannot be stored, so it is fitted again exactly as the features stage fitted it (same
public images, same seed) and must reproduce the cached features of the pool before anything is written: a
refit that drifted would pair weak and strong views from two different extractors. Only pool images are
augmented (the queries and the unlabeled images the student may use); evaluation images never are.
"""

from __future__ import annotations

import numpy as np
import torch

from pate.artifacts import atomic_write_json
from pate.features.extractors import Extractor, to_unit_interval
from pate.features.ssl import augment
from pate.features.stage import FeatureTable, write_features

# A refit extractor must give the cached float16 features up to float16 rounding (and float32 summation order).
REPRODUCTION_TOLERANCE = 1e-2
REPRODUCTION_SAMPLE = 64


def strong_view(images: torch.Tensor, gen: torch.Generator, min_scale: float, jitter: float) -> torch.Tensor:
    """One strong view per uint8 image [B, 3, S, S] -> uint8, with :func:`pate.features.ssl.augment` (random
    resized crop to at least ``min_scale`` of the area, flip, brightness and contrast in [1 - jitter,
    1 + jitter]), drawn from ``gen``."""
    return (augment(to_unit_interval(images), gen, min_scale, jitter) * 255).round().to(torch.uint8)


def check_reproduces(extractor: Extractor, images: np.ndarray, cached: FeatureTable, rows: np.ndarray) -> None:
    """Refuse an extractor whose features of ``images[rows]`` (a sample of at most REPRODUCTION_SAMPLE rows)
    differ from ``cached`` by more than REPRODUCTION_TOLERANCE x (1 + |cached|)."""
    sample = np.asarray(rows, dtype=np.int64)[:REPRODUCTION_SAMPLE]
    fresh = extractor.transform(torch.from_numpy(np.asarray(images[sample]))).half().float()
    expected = cached.take(sample)
    excess = ((fresh - expected).abs() - REPRODUCTION_TOLERANCE * (1 + expected.abs())).max()
    if excess > 0:
        raise RuntimeError(
            f"the refitted {type(extractor).__name__} does not reproduce the cached features of the "
            f"pool (off by {excess.item():.3g} beyond the tolerance): strong views would come from "
            f"another extractor than the weak ones. Delete the features cache and run again."
        )


def build_views(
    work,
    extractor: Extractor,
    images: np.ndarray,
    pool_rows: np.ndarray,
    cached: FeatureTable,
    seed: int,
    min_scale: float,
    jitter: float,
    progress: bool = True,
) -> None:
    """Write the features of one strong view (seeded by ``seed``) of each of ``images[pool_rows]`` in the
    features stage's format (``features.npy``, ``rows.npy``; read back with
    :func:`pate.features.read_features`), after :func:`check_reproduces`. ``extractor`` must be fitted."""
    pool_rows = np.unique(np.asarray(pool_rows, dtype=np.int64))
    check_reproduces(extractor, images, cached, pool_rows)
    gen = torch.Generator().manual_seed(int(seed))
    dim = write_features(
        work,
        extractor,
        images,
        pool_rows,
        progress,
        view=lambda batch: strong_view(batch, gen, min_scale, jitter),
        desc="views: strong augmentation",
    )
    atomic_write_json(
        work / "extractor.json",
        {
            **extractor.identity(),
            "dim": dim,
            "strong_view": {"seed": int(seed), "min_scale": float(min_scale), "jitter": float(jitter)},
        },
    )


__all__ = ["build_views", "check_reproduces", "strong_view"]
