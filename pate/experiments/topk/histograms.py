"""Histograms for the private top-k experiments: the papers' synthetic shapes and a check-in file reader.

Every generator is a pure function of its arguments and a seed, returns int64 counts (the number of users
per bin, so each user adds at most 1 to a bin) and never looks at a mechanism.

* ``flat_histogram``: Zhu & Wang 2022, EXP2 (second part): d bins, the top k at ``value``, the rest at 0.
* ``growing_gap_days``: daily histograms whose k-th gap grows over time, the shape of the US Covid-19
  cases by state used in Zhu & Wang 2022, EXP2 (first part): cumulative counts of regions with
  heavy-tailed base rates growing exponentially, so every gap scales up day by day.
* ``heavy_tailed_histogram``: the shape of a check-in data set (Carvalho et al. 2020, Section 5;
  Zhu & Wang 2022, EXP1): d venues, counts from a power law whose largest count and number of
  non-empty bins match the data set's published figures.
* ``read_checkins``: real check-in files (one check-in per line, user and venue columns): counts the
  distinct users per venue.
"""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np

from pate.io import read_text
from pate.privacy import checks

__all__ = ["CHECKIN_SHAPES", "flat_histogram", "growing_gap_days", "heavy_tailed_histogram", "read_checkins"]

# Published shapes (Carvalho et al. 2020, Table 1; Zhu & Wang 2022, EXP1): users, venues, largest count.
CHECKIN_SHAPES = {
    "foursquare": {"users": 2293, "bins": 100191, "max_count": 1274},
    "brightkite": {"users": 51406, "bins": 772966, "max_count": 3204},
}


def flat_histogram(num_bins: int, k: int, value: int) -> np.ndarray:
    """int64 ``[num_bins]``: ``value`` in the first k bins, 0 elsewhere (which bins are high is irrelevant
    to every mechanism here: none of them looks at bin identities)."""
    num_bins = checks.positive_int("num_bins", num_bins)
    k = checks.positive_int("k", k)
    if k >= num_bins:
        raise ValueError(f"k must be < num_bins={num_bins}, got {k}")
    histogram = np.zeros(num_bins, dtype=np.int64)
    histogram[:k] = checks.positive_int("value", value)
    return histogram


def growing_gap_days(
    num_bins: int, num_days: int, start_total: float, growth: float, tail: float, seed: int
) -> np.ndarray:
    """int64 ``[num_days, num_bins]``: cumulative counts of ``num_bins`` regions whose gaps grow over time.

    Region i has a base share w_i proportional to i^(-tail) (i = 1..num_bins, a Zipf profile like
    cases per state); the expected number of new cases on day t is start_total exp(growth t), and region
    i's new cases are independent Poisson draws with mean start_total exp(growth t) w_i. Day t's
    histogram is each region's total up to day t, the shape of a cumulative "cases by state" report
    (each person counted at most once): every gap of the expected histogram grows with t, for every k,
    and the Poisson draws add noise of order sqrt(count). Bin identities are shuffled once (``seed``).
    """
    num_bins = checks.positive_int("num_bins", num_bins)
    num_days = checks.positive_int("num_days", num_days)
    start_total = checks.positive("start_total", start_total)
    growth = checks.positive("growth", growth)
    tail = checks.positive("tail", tail)
    rng = np.random.default_rng(seed)
    shares = np.arange(1, num_bins + 1, dtype=np.float64) ** -tail
    shares = rng.permutation(shares / shares.sum())
    means = start_total * np.exp(growth * np.arange(num_days))[:, None] * shares[None, :]
    return np.cumsum(rng.poisson(means), axis=0).astype(np.int64)


def heavy_tailed_histogram(num_bins: int, max_count: int, seed: int, spread: float = 0.25) -> np.ndarray:
    """int64 ``[num_bins]``: a power-law histogram with largest count ~max_count and every bin >= 1.

    The r-th largest expected count is max_count r^(-a) with a = log(max_count) / log(num_bins), so the
    profile falls from max_count to 1 at r = num_bins, the shape of check-in counts (few venues visited by
    many users, a long tail visited once). Each count is that profile times a log-normal factor
    exp(spread N(0, 1)), rounded, floored at 1 and capped at max_count (so the gaps between neighbouring
    ranks are random, not a fixed function of the rank); the largest count is then set to max_count.
    Bin identities are shuffled (fixed by ``seed``).
    """
    num_bins = checks.positive_int("num_bins", num_bins)
    max_count = checks.positive_int("max_count", max_count)
    spread = checks.non_negative("spread", spread)
    if num_bins < 2:
        raise ValueError(f"num_bins must be >= 2, got {num_bins}")
    rng = np.random.default_rng(seed)
    exponent = math.log(max_count) / math.log(num_bins)
    profile = max_count * np.arange(1, num_bins + 1, dtype=np.float64) ** -exponent
    counts = np.clip(np.rint(profile * np.exp(spread * rng.standard_normal(num_bins))), 1, max_count).astype(np.int64)
    counts[np.argmax(counts)] = max_count
    return rng.permutation(counts)


def read_checkins(path, user_column: int, item_column: int, delimiter: str | None = None) -> tuple[np.ndarray, int]:
    """(counts int64 ``[venues]``, number of users) from a check-in file: distinct users per venue.

    One check-in per line; columns split on ``delimiter`` (None: any whitespace); ``user_column`` and
    ``item_column`` are 0-based. Blank lines are skipped; a line with too few columns raises
    ``ValueError`` naming the file and line. A user counts at most once per venue (Zhu & Wang 2022,
    EXP1: "each user gives at most one count when she visited a certain location"). Examples:
    SNAP loc-brightkite_totalCheckins.txt is ``user time latitude longitude venue`` (whitespace;
    user_column=0, item_column=4); Foursquare dataset_TSMC2014_NYC.txt is tab-separated
    ``user venue category ...`` (delimiter="\\t", user_column=0, item_column=1).
    """
    path = Path(path)
    if not path.is_file():
        raise ValueError(f"check-in file {str(path)!r} does not exist (path)")
    user_column = checks.non_negative_int("user_column", user_column)
    item_column = checks.non_negative_int("item_column", item_column)
    pairs: set[tuple[str, str]] = set()
    needed = max(user_column, item_column) + 1
    text = read_text(path, "a text check-in file (one check-in per line)")
    for number, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        fields = line.split(delimiter)
        if len(fields) < needed:
            raise ValueError(f"{path}:{number}: expected at least {needed} columns, got {len(fields)}: {line[:80]!r}")
        pairs.add((fields[user_column], fields[item_column]))
    if not pairs:
        raise ValueError(f"check-in file {str(path)!r} holds no check-ins")
    users = {user for user, _ in pairs}
    _, counts = np.unique([item for _, item in pairs], return_counts=True)
    return counts.astype(np.int64), len(users)
