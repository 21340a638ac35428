"""The views stage: strong views are seeded, cover the pool rows only, and come from an extractor that
reproduces the cached features (a refit that drifted is refused)."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from pate.artifacts import Artifact
from pate.features import RandomConvFeatures, build_features, read_features
from pate.features.views import build_views, check_reproduces, strong_view


@pytest.fixture(scope="module")
def images():
    return np.random.default_rng(0).integers(0, 256, (40, 3, 16, 16), dtype=np.uint8)


def _table(tmp_path, images, seed=0):
    work = tmp_path / f"features{seed}"
    work.mkdir()
    extractor = RandomConvFeatures(width=4, pool=2, seed=seed)
    build_features(
        work,
        extractor,
        images,
        fit_rows=np.arange(30, 40),
        rows=np.arange(30),
        private_rows=np.arange(10),
        fit_seed=0,
        progress=False,
    )
    return extractor, read_features(Artifact("features", "k", work))


def test_strong_views_are_seeded_uint8_images(images):
    batch = torch.from_numpy(images[:8])
    views = [strong_view(batch, torch.Generator().manual_seed(s), 0.5, 0.3) for s in (1, 1, 2)]
    assert views[0].dtype == torch.uint8 and views[0].shape == batch.shape
    assert torch.equal(views[0], views[1]) and not torch.equal(views[0], views[2])
    assert not torch.equal(views[0], batch)


def test_views_cover_the_pool_rows_and_are_seeded(tmp_path, images):
    extractor, table = _table(tmp_path, images)
    pool = np.array([25, 12, 14, 20])
    outs = []
    for name, seed in (("a", 3), ("b", 3), ("c", 4)):
        (tmp_path / name).mkdir()
        build_views(tmp_path / name, extractor, images, pool, table, seed, 0.5, 0.3, progress=False)
        outs.append(read_features(Artifact("views", name, tmp_path / name)))
    assert outs[0].rows.tolist() == sorted(pool.tolist())
    assert torch.equal(outs[0].take(pool), outs[1].take(pool)) and not torch.equal(
        outs[0].take(pool), outs[2].take(pool)
    )
    assert not torch.allclose(outs[0].take(pool), table.take(pool), atol=0.05)  # augmented, not the image itself
    assert outs[0].identity["strong_view"] == {"seed": 3, "min_scale": 0.5, "jitter": 0.3}
    with pytest.raises(KeyError, match="no features for image rows"):
        outs[0].take(np.array([0]))  # not a pool row


def test_an_extractor_that_does_not_reproduce_the_cached_features_is_refused(tmp_path, images):
    extractor, table = _table(tmp_path, images)
    check_reproduces(extractor, images, table, np.arange(30))
    other, _ = _table(tmp_path, images, seed=1)
    with pytest.raises(RuntimeError, match="does not reproduce the cached features"):
        check_reproduces(other, images, table, np.arange(30))
