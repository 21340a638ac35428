"""What one neighbour is, for a method and a relation, and whether that is a guarantee about one training record.

The unit of privacy is one training record (docs/concepts.md, "The privacy unit"). A relation
(``pate.privacy.sensitivity.NeighboringRelation``) is applied to what a method's mechanism takes as input, and what
one step of it changes depends on who contributes to that input:

* teacher votes (PATE): a record lives in exactly one teacher's part, so changing, adding or removing a record
  changes at most that teacher's vote. ``replace`` (one teacher's vote replaced) covers every such change: it is a
  record-level guarantee. ``add_remove`` (one teacher added or removed) is not: no record-level neighbour adds or
  removes a whole teacher, so it reproduces the literature's teacher-level accounting only.
* records (DP-SGD, Private-kNN): the relation moves one record itself, so both relations are record-level.

Every epsilon the project prints names its unit from here (the console, ``metrics.json``'s ``privacy_unit`` and
``record_level``, every report table), so that a teacher-level epsilon is never compared with a record-level one
unmarked.
"""

from __future__ import annotations

from dataclasses import dataclass

from pate.privacy.sensitivity import NeighboringRelation, check_relation

__all__ = ["CONTRIBUTORS", "PrivacyUnit", "privacy_unit"]

# who contributes one unit to what a method's mechanism takes as input: a teacher's vote, or one record
CONTRIBUTORS = ("teacher", "record")

_NEIGHBOUR = {
    ("teacher", NeighboringRelation.REPLACE): "one teacher's vote replaced",
    ("teacher", NeighboringRelation.ADD_REMOVE): "one teacher added or removed",
    ("record", NeighboringRelation.REPLACE): "one record replaced",
    ("record", NeighboringRelation.ADD_REMOVE): "one record added or removed",
}


@dataclass(frozen=True)
class PrivacyUnit:
    """``neighbour``: what one neighbour is, in words; ``record_level``: whether a guarantee between such neighbours
    is a guarantee about one training record."""

    neighbour: str
    record_level: bool

    @property
    def text(self) -> str:
        """The neighbour with its level, for a line beside an epsilon: a teacher-level one says it is not a
        record-level guarantee, so that it is never read as one."""
        level = "record-level" if self.record_level else "teacher-level: NOT a record-level guarantee"
        return f"{self.neighbour} ({level})"


def privacy_unit(contributor: str, neighbors) -> PrivacyUnit:
    """The unit of an epsilon under ``neighbors`` for a method whose mechanism takes ``contributor``'s
    contributions (one of ``CONTRIBUTORS``; a method says which by its ``contributor`` attribute). Only PATE's
    ``add_remove`` is teacher-level (module docstring); an unknown contributor or relation raises ``ValueError``
    naming it."""
    if contributor not in CONTRIBUTORS:
        raise ValueError(f"contributor must be one of {CONTRIBUTORS}, got {contributor!r}")
    relation = check_relation(neighbors)
    record_level = contributor == "record" or relation is NeighboringRelation.REPLACE
    return PrivacyUnit(_NEIGHBOUR[contributor, relation], record_level)
