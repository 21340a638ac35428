"""Teacher partition and public-query split: disjoint, covering, balanced, deterministic per seed."""

import numpy as np
import pytest

from pate.data.partition import check_partition_config, partition_teachers, pool_size, split_public

# Record ids need not be 0..n-1: the training split of CelebA is a subset of all rows.
RECORDS = np.arange(1000, dtype=np.int64) * 3 + 7


@pytest.mark.parametrize("n, num_teachers", [(1000, 1), (1000, 7), (1000, 250), (1000, 1000), (37, 5)])
def test_parts_are_disjoint_covering_balanced_sorted(n, num_teachers):
    parts = partition_teachers(RECORDS[:n], num_teachers, seed=3)
    assert len(parts) == num_teachers
    joined = np.concatenate(parts)
    assert joined.size == n and np.array_equal(np.sort(joined), RECORDS[:n])  # covering, and so disjoint
    sizes = [len(p) for p in parts]
    assert max(sizes) - min(sizes) <= 1
    assert all(np.all(np.diff(p) > 0) for p in parts)


def test_partition_is_deterministic_per_seed_and_differs_across_seeds():
    a = partition_teachers(RECORDS, 20, seed=5)
    b = partition_teachers(RECORDS, 20, seed=5)
    c = partition_teachers(RECORDS, 20, seed=6)
    assert all(np.array_equal(x, y) for x, y in zip(a, b))
    assert not all(np.array_equal(x, y) for x, y in zip(a, c))


def test_partition_uses_default_rng_permutation():
    """The documented recipe: shuffle with default_rng(seed).permutation, cut into array_split pieces."""
    perm = RECORDS[np.random.default_rng(11).permutation(RECORDS.size)]
    expected = [np.sort(p) for p in np.array_split(perm, 9)]
    assert all(np.array_equal(x, y) for x, y in zip(partition_teachers(RECORDS, 9, seed=11), expected))


def test_each_record_is_equally_likely_to_land_with_each_teacher():
    """Over 3000 seeds record 0 of 10 (5 teachers of 2) should sit with each teacher 600 times; binomial sd is
    sqrt(3000 * 0.2 * 0.8) ~ 21.9, and 5 sd = 110 bounds every count (fixed seeds, so no flakiness)."""
    counts = np.zeros(5, dtype=int)
    for seed in range(3000):
        parts = partition_teachers(np.arange(10), 5, seed)
        counts[[0 in p for p in parts].index(True)] += 1
    assert np.all(np.abs(counts - 600) < 110), counts


@pytest.mark.parametrize("num_teachers", [0, -1, 1001, 2.5, True])
def test_partition_rejects_bad_num_teachers(num_teachers):
    with pytest.raises(ValueError, match=r"num_teachers=.*1000 records"):
        partition_teachers(RECORDS, num_teachers, seed=0)


def test_partition_rejects_bad_indices_and_seed():
    with pytest.raises(ValueError, match="repeated"):
        partition_teachers(np.array([1, 2, 2]), 2, seed=0)
    with pytest.raises(ValueError, match="1-D integer"):
        partition_teachers(np.array([0.5, 1.5]), 1, seed=0)
    with pytest.raises(ValueError, match="seed"):
        partition_teachers(RECORDS, 2, seed=-1)


@pytest.mark.parametrize("pool, num_queries", [(1, 1), (600, 600), (999, 1), (500, 120)])
def test_split_public_is_disjoint_covering_and_sized(pool, num_queries):
    split = split_public(RECORDS, pool, num_queries, seed=2)
    assert (len(split.pool), len(split.queries), len(split.evaluation)) == (pool, num_queries, RECORDS.size - pool)
    assert np.isin(split.queries, split.pool).all()
    assert np.intersect1d(split.pool, split.evaluation).size == 0
    assert np.array_equal(np.sort(np.concatenate([split.pool, split.evaluation])), RECORDS)
    everything = np.ones(len(split.queries), dtype=bool)
    assert np.array_equal(np.sort(np.concatenate([split.queries, split.unlabeled(everything)])), split.pool)
    assert np.array_equal(split.unlabeled(~everything), split.pool)  # unanswered queries stay in the pool
    for part in (split.pool, split.queries, split.evaluation):
        assert np.all(np.diff(part) > 0)


def test_split_public_is_deterministic_per_seed_and_nested_in_num_queries():
    first, again = split_public(RECORDS, 500, 100, seed=4), split_public(RECORDS, 500, 100, seed=4)
    assert all(np.array_equal(getattr(first, f), getattr(again, f)) for f in ("pool", "queries", "evaluation"))
    assert not np.array_equal(first.queries, split_public(RECORDS, 500, 100, seed=5).queries)
    more = split_public(RECORDS, 500, 400, seed=4)  # a query-budget sweep keeps the pool and the evaluation set
    assert np.isin(first.queries, more.queries).all()
    assert np.array_equal(first.pool, more.pool) and np.array_equal(first.evaluation, more.evaluation)


@pytest.mark.parametrize(
    "pool, num_queries, match",
    [
        (500, 0, "num_queries=0"),
        (500, -3, "num_queries=-3"),
        (500, 501, "num_queries=501"),
        (500, 1.0, "num_queries=1.0"),
        (1000, 10, "pool size 1000"),
        (0, 0, "pool size 0"),
    ],
)
def test_split_public_rejects_bad_sizes(pool, num_queries, match):
    with pytest.raises(ValueError, match=match):
        split_public(RECORDS, pool, num_queries, seed=0)


@pytest.mark.parametrize("fraction", [0, 1, 1.5, -0.1, True])
def test_pool_fraction_must_lie_strictly_between_0_and_1(fraction):
    with pytest.raises(ValueError, match="data.pool_fraction"):
        pool_size(1000, fraction)


def test_too_few_private_records_for_one_teacher_is_a_sentence():
    """One private record where a teacher needs three: the error says that no teacher can be trained and why,
    not an impossible range (``expected 1 <= num_teachers <= 0``)."""
    split = np.array([0, 2, 2, 2, 2, 2], dtype=np.int8)
    with pytest.raises(
        ValueError,
        match=r"the private training split holds 1 record, and even one teacher needs 3 "
        r"\(ridge heads fit on at least 3\): no teacher can be trained",
    ) as err:
        check_partition_config(split, 4, 1, 0.5, records_per_teacher=3, why="ridge heads fit on at least 3")
    assert "<=" not in str(err.value)
