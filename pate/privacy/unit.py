"""What one neighbour is, for a method and a relation, and whether that is a guarantee about one training record.

The unit of privacy is one training record (docs/concepts.md, "The privacy unit"). A relation
(``pate.privacy.sensitivity.NeighboringRelation``) is applied to what a method's mechanism takes as input, and what
one step of it changes depends on who contributes to that input:

* teacher votes (PATE): a record lives in exactly one teacher's part, so changing, adding or removing a record
  changes at most that teacher's vote. ``replace`` (one teacher's vote replaced) covers every such change: it is a
  record-level guarantee. ``add_remove`` (one teacher added or removed) is not: no record-level neighbour adds or
  removes a whole teacher, so it reproduces the literature's teacher-level accounting only.
* records (DP-SGD, Private-kNN): the relation moves one record itself, so both relations are record-level.
  Private-kNN and DP-SGD can sample people instead (one coin per person; one vote, or one clipped gradient, per
  sampled person): ``replace`` then moves one person (``add_remove`` would not cover a record added to a person
  already present: :func:`resolve_unit`).

Where the data name the person each record shows (``LabelledImages.person``), the unit can be a person
(``privacy.unit=person``, the default there): PATE then gives each person's records to one teacher
(``pate.data.partition.partition_teachers_by_person``), so changing any of one person's records -- all of them,
any number -- changes at most that teacher's vote, and ``replace`` is person-level with the same noise and the
same epsilon. Record-level epsilons on data with people say that they are not person-level (the most images a
person holds is a statistic of the private data: metrics.json keeps it as ``images_per_person``, not covered).

Every epsilon the project prints names its unit from here (the console, ``metrics.json``'s ``privacy_unit`` and
``record_level``, every report table), so that a teacher-level epsilon is never compared with a record-level one
unmarked.
"""

from __future__ import annotations

from dataclasses import dataclass

from pate.privacy.sensitivity import NeighboringRelation, check_relation

__all__ = ["CONTRIBUTORS", "UNITS", "PrivacyUnit", "privacy_unit", "resolve_unit"]

# who contributes one unit to what a method's mechanism takes as input: a teacher's vote, or one record
CONTRIBUTORS = ("teacher", "record")
UNITS = ("record", "person")  # privacy.unit: what a guarantee is asked to cover

_NEIGHBOUR = {
    ("teacher", NeighboringRelation.REPLACE): "one teacher's vote replaced",
    ("teacher", NeighboringRelation.ADD_REMOVE): "one teacher added or removed",
    ("record", NeighboringRelation.REPLACE): "one record replaced",
    ("record", NeighboringRelation.ADD_REMOVE): "one record added or removed",
}


@dataclass(frozen=True)
class PrivacyUnit:
    """``neighbour``: what one neighbour is, in words; ``record_level``: whether a guarantee between such neighbours
    is a guarantee about one training record; ``person_level``: whether it is one about one person, all of their
    records (which implies record-level); ``images_per_person``: the most records one person holds, where the data
    name people (None otherwise)."""

    neighbour: str
    record_level: bool
    person_level: bool = False
    images_per_person: int | None = None

    @property
    def text(self) -> str:
        """The neighbour with its level, for a line beside an epsilon: a teacher-level one says it is not a
        record-level guarantee, and a record-level one on data with people that it is not a person-level one. The
        most images a person holds is a statistic of the private data, so it stays out of this line
        (``images_per_person`` in metrics.json, not covered by epsilon)."""
        if self.person_level:
            level = "person-level"
        elif not self.record_level:
            level = "teacher-level: NOT a record-level guarantee"
        elif self.images_per_person is not None:
            level = "record-level: NOT a person-level guarantee, and a person has several images"
        else:
            level = "record-level"
        return f"{self.neighbour} ({level})"


def privacy_unit(
    contributor: str,
    neighbors,
    unit: str = "record",
    images_per_person: int | None = None,
    group_size: int | None = None,
) -> PrivacyUnit:
    """The unit of an epsilon under ``neighbors`` for a method whose mechanism takes ``contributor``'s
    contributions (one of ``CONTRIBUTORS``; a method says which by its ``contributor`` attribute), asked for
    ``unit`` (``UNITS``, as :func:`resolve_unit` settles it) on data whose people hold at most
    ``images_per_person`` records (None: the data name no people). Only PATE's ``add_remove`` is teacher-level;
    person-level are PATE's ``replace`` partitioned by person, a sampler of people under ``replace``, and a release
    of record steps priced for a ``group_size`` (a public cap on one person's records) by group privacy (module
    docstring); an unknown contributor, relation or unit raises ``ValueError`` naming it."""
    if contributor not in CONTRIBUTORS:
        raise ValueError(f"contributor must be one of {CONTRIBUTORS}, got {contributor!r}")
    if unit not in UNITS:
        raise ValueError(f"unit must be one of {UNITS}, got {unit!r}")
    relation = check_relation(neighbors)
    record_level = contributor == "record" or relation is NeighboringRelation.REPLACE
    person_level = unit == "person" and record_level
    neighbour = _NEIGHBOUR[contributor, relation]
    if person_level and contributor == "teacher":
        neighbour = f"one person of the private split changed, all of their images: {neighbour}"
    elif person_level and group_size is not None:  # record steps, one person's priced at once
        neighbour = (
            neighbour.replace("one record", "one person of the private split")
            + f", all of their images, up to {group_size} (group privacy: {group_size} one-record steps at once)"
        )
    elif person_level:  # a method that samples people: the relation moves one person
        neighbour = neighbour.replace("one record", "one person of the private split") + ", all of their images"
    return PrivacyUnit(neighbour, record_level, person_level, images_per_person)


def resolve_unit(
    asked: str | None,
    has_people: bool,
    contributor: str,
    samples_people: bool = False,
    hint: str = "",
    neighbors: str = "replace",
) -> str:
    """``privacy.unit`` settled for the data and the method: ``asked`` (``record``, ``person``, or None: person
    where the data name people and the method can give a person-level guarantee -- PATE, whose teachers see
    people whole, or a method that ``samples_people``: Private-kNN, DP-SGD -- and record otherwise). ``ValueError``
    naming the key for ``person`` on data without people or for a method that samples records only; ``hint`` says
    what would name the people of this data.

    A method that samples people is person-level under ``replace`` only: its ``add_remove`` price covers a whole
    person added or removed, but a record added to a person already in the data changes that person's contribution
    where they are sampled -- a replace-type change, which the add_remove price of the same sensitivity does not
    cover. So there the default is ``record``, and ``person`` asked is refused naming ``privacy.neighbors``."""
    can = contributor == "teacher" or (samples_people and check_relation(neighbors) is NeighboringRelation.REPLACE)
    if asked is None:
        return "person" if has_people and can else "record"
    if asked not in UNITS:
        raise ValueError(
            f"privacy.unit={asked!r}; expected one of {UNITS}, or null (person where the data name people)"
        )
    if asked == "person" and not has_people:
        raise ValueError(
            f"privacy.unit=person but the data name no people; expected {hint or 'data that say which person each image shows'}, "
            f"or privacy.unit=record"
        )
    if asked == "person" and not can and samples_people:  # a sampler of people, under add_remove
        raise ValueError(
            "privacy.unit=person with privacy.neighbors=add_remove and a method that samples people: add_remove's "
            "price covers a whole person added or removed, not a record added to a person already in the data "
            "(a replace-type change); expected privacy.neighbors=replace, or privacy.unit=record"
        )
    if asked == "person" and not can:
        raise ValueError(
            "privacy.unit=person with a method that samples records only; expected a method that can sample "
            "people (pate, private_knn, dp_sgd), or privacy.unit=record"
        )
    return asked
