"""The privacy unit of a report's rows: every table that prints an epsilon names it, and marks the teacher-level rows.

A run records what one neighbour of its epsilon is (``privacy_unit``) and whether that is a guarantee about one
training record (``record_level``), from ``pate.privacy.unit``. PATE under ``add_remove`` is teacher-level: its
epsilon is not comparable with the record-level epsilons of DP-SGD and Private-kNN under the same relation, so a
table that puts them side by side marks its rows with ``TEACHER_LEVEL_MARK`` and says why in ``TEACHER_LEVEL_NOTE``.
"""

from __future__ import annotations

from typing import Any, Iterable, Mapping

from pate.privacy.unit import PrivacyUnit

__all__ = ["TEACHER_LEVEL_MARK", "TEACHER_LEVEL_NOTE", "run_unit", "teacher_level", "unit_cell", "units_line"]

TEACHER_LEVEL_MARK = "‡"
TEACHER_LEVEL_NOTE = (
    f"{TEACHER_LEVEL_MARK} teacher-level: one teacher added or removed, NOT a record-level "
    f"guarantee (no record-level neighbour adds or removes a whole teacher; PATE's record-level "
    f"guarantee is under its replace relation, docs/concepts.md). Not comparable with the "
    f"record-level rows (DP-SGD, Private-kNN: one record added or removed)."
)


def run_unit(metrics: Mapping[str, Any]) -> PrivacyUnit | None:
    """The unit a run recorded; None for a record written before runs recorded it (never guessed)."""
    if "privacy_unit" not in metrics:
        return None
    return PrivacyUnit(
        metrics["privacy_unit"],
        metrics["record_level"],
        metrics.get("person_level", False),
        metrics.get("images_per_person"),
    )


def _units(runs: Iterable[Any]) -> set[PrivacyUnit | None]:
    return {run_unit(run.metrics) for run in runs}


def teacher_level(runs: Iterable[Any]) -> bool:
    """Whether any of ``runs`` (pate.report.collect.Run) holds a teacher-level epsilon."""
    return any(unit is not None and not unit.record_level for unit in _units(runs))


def unit_cell(runs: Iterable[Any]) -> str:
    """A table cell naming the unit of ``runs``' epsilons: record-level, teacher-level (marked) or not recorded."""
    units = _units(runs)
    if None in units:
        return "not recorded"
    if all(unit.person_level for unit in units):
        return "person-level"
    if all(unit.record_level for unit in units):
        return "record-level"
    return f"teacher-level {TEACHER_LEVEL_MARK}"


def units_line(runs: Iterable[Any]) -> str:
    """One sentence: what one neighbour is for each method of ``runs``, with its level."""
    by_unit: dict[str, set[str]] = {}
    for run in runs:
        unit = run_unit(run.metrics)
        text = "not recorded (runs before the field)" if unit is None else unit.text
        by_unit.setdefault(text, set()).add(run.metrics["method"])
    return (
        "One neighbour: "
        + "; ".join(
            f"{', '.join(f'`{m}`' for m in sorted(methods))}: {text}" for text, methods in sorted(by_unit.items())
        )
        + "."
    )
