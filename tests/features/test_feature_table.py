"""``FeatureTable.take``: the float16 rows of a memory-mapped feature artifact, widened to float32 exactly, in the
order asked, whatever chunks the read goes through."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from pate.features import stage
from pate.features.stage import FeatureTable


@pytest.fixture
def table(tmp_path) -> FeatureTable:
    rng = np.random.default_rng(0)
    np.save(tmp_path / "features.npy", rng.normal(size=(50, 6)).astype(np.float16))
    rows = np.sort(rng.choice(1000, 50, replace=False))
    return FeatureTable(np.load(tmp_path / "features.npy", mmap_mode="r"), rows, {})


@pytest.mark.parametrize("chunk", [1, 7, 16_384])
def test_take_gives_each_asked_row_widened_exactly_in_the_order_asked(table, monkeypatch, chunk):
    monkeypatch.setattr(stage, "_TAKE_CHUNK", chunk)
    asked = table.rows[[5, 0, 49, 5, 17, 3]]  # unsorted, one row twice
    taken = table.take(asked)
    expected = np.asarray(table.features)[[5, 0, 49, 5, 17, 3]].astype(np.float32)
    assert taken.dtype == torch.float32 and torch.equal(taken, torch.from_numpy(expected))
    assert table.take(np.array([], dtype=np.int64)).shape == (0, 6)


def test_take_names_rows_the_artifact_does_not_hold(table):
    absent = np.setdiff1d(np.arange(1000), table.rows)[:2]
    with pytest.raises(KeyError, match=f"no features for image rows \\[{absent[0]}, {absent[1]}\\]"):
        table.take(np.concatenate([table.rows[:3], absent]))
