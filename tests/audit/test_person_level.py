"""The person-level audits (``privacy.unit=person``): the exact law of one query of Private-kNN over people, and of
one step of user-level DP-SGD, on tiny data whose rows name their person, against the price of the mechanism, over
every neighbouring pair the person-level relation defines on that input: all of one person's rows removed or a new
person's rows added (add_remove), all of one person's rows replaced by others (replace). Power: the record-level
forms on the same neighbours -- a coin per row and every row voting, each row's gradient clipped on its own --
exceed the same price: image-level sampling and per-example clipping priced as person-level are caught. Under
add_remove these audit a whole person added or removed, what that price covers; a record added to a person already
in the data is a replace-type change it does not cover, so the pipeline offers person-level samplers under replace
only (``pate.privacy.unit.resolve_unit``). (PATE's
person-level claim rests on its partition: tests/pipeline/test_person_level.py and
tests/data/test_partition_by_person.py; its aggregators' replace price is the audit of tests/audit/test_audit.py.)"""

from __future__ import annotations

import functools
import itertools

import numpy as np
import pytest
import torch
from scipy import stats as scipy_stats
from scipy.special import logsumexp, xlogy

from pate.mechanisms import PrivateKNN
from pate.mechanisms.private_knn import subsampled_knn_votes
from tests.audit import laws
from tests.audit.audits import exact_rdp_audit
from tests.audit.recipes import QUERY, RELATIONS

pytestmark = pytest.mark.audit  # `make audit` (which CI also runs), not `make test`

NEAR, MIDDLE, FAR = (1.0, 0.0), (1.0, 1.0), (0.0, 1.0)  # cosine 1, 0.71, 0 to the query


def _votes(rows: tuple, num_labels: int, k: int, by_person: bool) -> np.ndarray:
    """The code's votes on ``rows`` ((person, feature, labels) in row order) with every row or person kept."""
    if not rows:
        return np.zeros(num_labels, np.int64)
    person = np.array([row[0] for row in rows]) if by_person else None
    features = torch.tensor(np.array([row[1] for row in rows]), dtype=torch.float32)
    labels = torch.tensor(np.array([row[2] for row in rows]), dtype=torch.uint8)
    query = torch.tensor(QUERY[None], dtype=torch.float32)
    return subsampled_knn_votes(features, labels, query, k, 1.0, torch.Generator().manual_seed(0), person=person)[0]


def _law(mechanism, rows: tuple, by_person: bool) -> dict:
    """One query's output law: a mixture over the Poisson subsamples -- of the people (one coin each) where
    ``by_person``, of the rows otherwise -- of the code's votes plus N(0, sigma^2) per label, thresholded at k / 2."""
    units = sorted({row[0] for row in rows}) if by_person else list(range(len(rows)))
    n, rate = len(units), mechanism.sampling_rate
    masks = np.array(list(itertools.product((False, True), repeat=n)), dtype=bool).reshape(2**n, n)
    kept = masks.sum(axis=1)
    log_weight = xlogy(kept, rate) + xlogy(n - kept, 1.0 - rate)
    votes = []
    for mask in masks:
        chosen = {unit for unit, keep in zip(units, mask) if keep}
        subset = tuple(row for i, row in enumerate(rows) if (row[0] if by_person else i) in chosen)
        votes.append(_cached_votes(subset, mechanism.num_labels, mechanism.k, by_person))
    joint = log_weight[:, None] + laws.label_log_probs(np.array(votes) - mechanism.k / 2.0, mechanism.sigma)
    return dict(zip(map(tuple, laws._bits(mechanism.num_labels).astype(int)), logsumexp(joint, axis=0)))


_cached_votes = functools.lru_cache(maxsize=None)(_votes)


def _contents(num_labels: int) -> list[tuple]:
    """What a person's rows may be: one row anywhere, or two rows near or at the middle distance (the same person
    photographed twice), each with all labels present or none."""
    ones, zeros = (1,) * num_labels, (0,) * num_labels
    singles = [((f, y),) for f in (NEAR, MIDDLE, FAR) for y in itertools.product((0, 1), repeat=num_labels)]
    pair_rows = [(f, y) for f in (NEAR, MIDDLE) for y in (ones, zeros)]
    return singles + [pair for pair in itertools.product(pair_rows, repeat=2)]


def _person_neighbours(rows: tuple, contents: list[tuple], relation: str) -> list[tuple]:
    """The person-level neighbours of ``rows``: every row of one person removed, or a new person's rows added
    first or last (add_remove); every row of one person replaced by other rows, the person kept (replace)."""
    people = sorted({row[0] for row in rows})
    if relation == "add_remove":
        removed = [tuple(row for row in rows if row[0] != who) for who in people]
        added = [
            placed
            for content in contents
            for new in [tuple(("new",) + r for r in content)]
            for placed in (new + rows, rows + new)
        ]
        return removed + added
    return [
        tuple(row for row in rows if row[0] != who) + tuple((who,) + r for r in content)
        for who in people
        for content in contents
        if tuple(row[1:] for row in rows if row[0] == who) != content
    ]


def _bases(num_labels: int) -> list[tuple]:
    ones, zeros = (1,) * num_labels, (0,) * num_labels
    return [
        (("a", NEAR, ones), ("a", NEAR, ones), ("b", MIDDLE, zeros), ("c", FAR, ones)),
        (("a", MIDDLE, ones), ("b", NEAR, zeros), ("b", MIDDLE, zeros)),
    ]


def _audit(relation: str, by_person: bool):
    results = []
    for num_labels in (1, 2):
        mechanism = PrivateKNN(num_labels, 2, 0.9, 1.0, relation)
        contents = _contents(num_labels)
        results.append(
            exact_rdp_audit(
                functools.partial(_law, mechanism, by_person=by_person),
                _bases(num_labels),
                lambda x: _person_neighbours(x, contents, relation),
                mechanism,
            )
        )
    return max(results, key=lambda result: result.ratio)


@pytest.mark.parametrize("relation", RELATIONS)
def test_private_knn_over_people_stays_within_its_price_for_one_person(relation):
    result = _audit(relation, by_person=True)
    print(f"PrivateKNN over people, {relation}: {result}")
    assert result.holds, str(result)


@pytest.mark.parametrize("relation", ["add_remove"])
def test_sampling_rows_priced_as_people_is_caught(relation):
    """The planted weakening: a coin per row and every row voting, priced as one person. A person with two rows
    next to the query casts two of the k = 2 votes. Caught under add_remove, as the record-level audit's weakened
    claims are (tests/audit/recipes.py: ``caught_under``); replace's price, for a vote changed in place, leaves
    room at these sizes (measured 0.64 of it)."""
    result = _audit(relation, by_person=False)
    print(f"PrivateKNN over rows, person neighbours, {relation}: {result}")
    assert not result.holds, str(result)


# ---------------------------------------------------------------- user-level DP-SGD
CLIP, MULTIPLIER, BIN = 0.5, 1.0, 0.02  # the move's law is binned at 0.02 C: binning only lowers a divergence


def _dp_sgd_move(rows: tuple, by_person: bool) -> float:
    """The clipped sum of one step of a zero-initialised probe on feature 1 (``person_clipped_sum``, the code's),
    along (1, 1) / sqrt(2), in units of C: each row (person, label) has gradient (1/2 - y)(1, 1), of norm
    1/sqrt(2) > C. ``by_person``: each person's mean gradient clipped; otherwise each row clipped (the weakening)."""
    if not rows:
        return 0.0
    from pate.dp_sgd import linear_probe
    from pate.dp_sgd_people import person_clipped_sum

    owners = [row[0] for row in rows] if by_person else list(range(len(rows)))
    codes = torch.from_numpy(np.unique(np.array(owners), return_inverse=True)[1])
    clipped = person_clipped_sum(
        linear_probe(1, 1),
        torch.ones(len(rows), 1),
        torch.tensor([[float(row[1])] for row in rows]),
        codes,
        int(codes.max()) + 1,
        CLIP,
    )
    return float(sum(g.sum() for g in clipped.values())) / np.sqrt(2.0) / CLIP


def _binned_normal(edges: np.ndarray, loc: float, scale: float) -> np.ndarray:
    """log N(loc, scale^2) mass of (-inf, e_0], each (e_i, e_(i+1)] and (e_last, inf), to full relative precision
    in the tails: log(F(b) - F(a)) from the CDF left of ``loc`` and from the survival function right of it."""
    z = (edges - loc) / scale
    log_cdf, log_sf = scipy_stats.norm.logcdf(z), scipy_stats.norm.logsf(z)
    with np.errstate(divide="ignore"):  # the form np.where discards is -inf far on its wrong side
        left = log_cdf[1:] + np.log1p(-np.exp(log_cdf[:-1] - log_cdf[1:]))
        right = log_sf[:-1] + np.log1p(-np.exp(log_sf[1:] - log_sf[:-1]))
    middle = np.where(z[1:] <= 0, left, right)
    return np.concatenate([[log_cdf[0]], middle, [log_sf[-1]]])


def _dp_sgd_law(rate: float, rows: tuple, by_person: bool) -> dict:
    """One step's move in units of C: a mixture over the Poisson subsamples (of the people, or of the rows) of
    N(move(S), MULTIPLIER^2), binned at ``BIN`` on [-12, 12] with the two tails as outputs."""
    units = sorted({row[0] for row in rows}) if by_person else list(range(len(rows)))
    edges = np.arange(-12.0, 12.0 + BIN / 2, BIN)
    log_mass = []
    for mask in itertools.product((False, True), repeat=len(units)):
        chosen = {unit for unit, keep in zip(units, mask) if keep}
        subset = tuple(row for i, row in enumerate(rows) if (row[0] if by_person else i) in chosen)
        cells = _binned_normal(edges, _dp_sgd_move(subset, by_person), MULTIPLIER)
        log_mass.append(sum(xlogy(keep, rate) + xlogy(1 - keep, 1.0 - rate) for keep in mask) + cells)
    return dict(enumerate(logsumexp(np.array(log_mass), axis=0)))


def _dp_sgd_person_audit(relation: str, by_person: bool):
    """Bases: two people, one with three rows; neighbours by the person-level relation (``_person_neighbours``)
    over a person's rows all labelled 0 or all 1, one to three of them. The claim: one step of the sampled
    Gaussian at q over people, under the relation (``sampled_gaussian_steps``)."""
    from pate.privacy import Ledger, sampled_gaussian_steps

    rate = 1.0 if relation == "replace" else 0.5
    contents = [((None, y),) * n for y in (0, 1) for n in (1, 2, 3)]
    bases = [(("a", 0), ("b", 1), ("b", 1), ("b", 1)), (("a", 1), ("a", 1), ("a", 1))]

    def neighbours(rows):
        plain = tuple((who, y) for who, y in rows)
        found = _person_neighbours(tuple((who, None, y) for who, y in plain), contents, relation)
        return [tuple((row[0], row[2]) for row in x) for x in found]

    class Claim:
        def rdp(self, orders):
            event = sampled_gaussian_steps(rate, MULTIPLIER, 1, relation)
            return Ledger(orders=orders).compose_event(event, neighbors=relation).rdp

    return exact_rdp_audit(functools.partial(_dp_sgd_law, rate, by_person=by_person), bases, neighbours, Claim())


@pytest.mark.parametrize("relation", RELATIONS)
def test_user_level_dp_sgd_stays_within_its_price_for_one_person(relation):
    result = _dp_sgd_person_audit(relation, by_person=True)
    print(f"user-level DP-SGD, {relation}: {result}")
    assert result.holds, str(result)


@pytest.mark.parametrize("relation", RELATIONS)
def test_per_row_clipping_priced_as_one_person_is_caught(relation):
    """The planted weakening: each row clipped (and, under add_remove, each row sampled), priced as one person: a
    person's three rows move the sum by 3 C where the price allows C (2 C replaced)."""
    result = _dp_sgd_person_audit(relation, by_person=False)
    print(f"DP-SGD clipping rows, person neighbours, {relation}: {result}")
    assert not result.holds, str(result)
