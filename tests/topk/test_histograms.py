"""The top-k experiments' histograms: the papers' shapes, determinism, and the check-in reader."""

import numpy as np
import pytest

from pate.experiments.topk.histograms import (
    CHECKIN_SHAPES,
    flat_histogram,
    growing_gap_days,
    heavy_tailed_histogram,
    read_checkins,
)


def test_flat_histogram():
    histogram = flat_histogram(15000, 1500, 700)
    assert histogram.shape == (15000,) and histogram.dtype == np.int64
    assert (histogram[:1500] == 700).all() and (histogram[1500:] == 0).all()
    with pytest.raises(ValueError, match="k must be < num_bins"):
        flat_histogram(10, 10, 5)


def test_growing_gap_days_gaps_grow_and_are_deterministic():
    days = growing_gap_days(56, 40, 500.0, 0.1, 1.0, seed=0)
    assert days.shape == (40, 56) and days.dtype == np.int64 and (days >= 0).all()
    np.testing.assert_array_equal(days, growing_gap_days(56, 40, 500.0, 0.1, 1.0, seed=0))
    assert not np.array_equal(days, growing_gap_days(56, 40, 500.0, 0.1, 1.0, seed=1))
    ordered = -np.sort(-days, axis=1)
    gap_15 = ordered[:, 14] - ordered[:, 15]
    assert (np.diff(days, axis=0) >= 0).all()  # cumulative counts
    new_cases = np.diff(days.sum(axis=1))
    assert new_cases[-10:].mean() > 15 * new_cases[:10].mean()  # exp(0.1 * 30) = 20x in 30 days
    assert gap_15[-10:].mean() > 5 * max(gap_15[:10].mean(), 1.0)


@pytest.mark.parametrize("name", sorted(CHECKIN_SHAPES))
def test_heavy_tailed_histogram_has_the_published_shape(name):
    shape = CHECKIN_SHAPES[name]
    histogram = heavy_tailed_histogram(shape["bins"], shape["max_count"], seed=0)
    assert histogram.shape == (shape["bins"],)
    assert histogram.max() == shape["max_count"] and histogram.min() >= 1
    assert (histogram == 1).mean() > 0.2  # a long tail of venues visited once
    assert np.array_equal(histogram, heavy_tailed_histogram(shape["bins"], shape["max_count"], seed=0))
    assert not np.array_equal(histogram, heavy_tailed_histogram(shape["bins"], shape["max_count"], seed=1))


def test_read_checkins_counts_distinct_users_per_venue(tmp_path):
    path = tmp_path / "checkins.txt"
    path.write_text("u1 t 0 0 v1\nu1 t 0 0 v1\nu2 t 0 0 v1\n\nu2 t 0 0 v2\nu3 t 0 0 v3\n")
    counts, users = read_checkins(path, user_column=0, item_column=4)
    assert sorted(counts.tolist()) == [1, 1, 2] and users == 3
    tabbed = tmp_path / "tabbed.tsv"
    tabbed.write_text("u1\tv 1\tx\nu2\tv 1\ty\n")
    counts, users = read_checkins(tabbed, user_column=0, item_column=1, delimiter="\t")
    assert counts.tolist() == [2] and users == 2


def test_read_checkins_refuses_bad_files(tmp_path):
    with pytest.raises(ValueError, match="does not exist"):
        read_checkins(tmp_path / "missing.txt", 0, 1)
    short = tmp_path / "short.txt"
    short.write_text("u1 v1\nu2\n")
    with pytest.raises(ValueError, match=r"short.txt:2: expected at least 2 columns"):
        read_checkins(short, 0, 1)
    empty = tmp_path / "empty.txt"
    empty.write_text("\n\n")
    with pytest.raises(ValueError, match="no check-ins"):
        read_checkins(empty, 0, 1)
