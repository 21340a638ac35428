"""Group the runs of a sweep by (method, epsilon) and reduce them to mean +- std over seeds.

The x-axis of a sweep is the calibration target: runs are grouped by (method, target_epsilon); a run
without a target (noise taken from the config) is grouped by its achieved epsilon; a non-private run has
no epsilon and forms one group per method. Every epsilon here is under the sweep's single relation and delta.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, Iterable, Mapping

import numpy as np

from pate.report.collect import Run, Sweep

# A run whose achieved epsilon is off its target by more than this fraction of the target is flagged.
CALIBRATION_TOLERANCE = 0.01
# The headline asks where the student first reaches this fraction of the true-labels student's accuracy.
HEADLINE_FRACTION = 0.97
TABLE_METRICS = ("student_accuracy", "student_f1", "label_f1", "answered_fraction", "mean_k")
# Shown only in a sweep where some run has them: binary voting's share of (query, label) pairs released and its
# raw data-dependent epsilon (not itself private; the x-axis is always the DP guarantee, ``epsilon``).
OPTIONAL_METRICS = ("released_label_fraction", "epsilon_data_dependent")
REFERENCE_METRICS = ("student_accuracy", "student_f1", "label_f1")

TARGET, ACHIEVED, NON_PRIVATE = "target", "achieved", "non-private"
# references of one method's own release (its privacy-free limit): shown by pate.report.limits, not pooled
PER_METHOD_REFERENCES = ("noise_free",)
_AXIS_ORDER = {TARGET: 0, ACHIEVED: 1, NON_PRIVATE: 2}


@dataclass(frozen=True)
class Stat:
    """Mean and sample standard deviation (ddof=1) of n values; std is None when n == 1."""

    mean: float
    std: float | None
    n: int

    @classmethod
    def of(cls, values: Iterable[float]) -> "Stat":
        x = np.asarray(list(values), dtype=float)
        if x.size == 0:
            raise ValueError("values=[]: expected at least one value")
        return cls(float(x.mean()), float(x.std(ddof=1)) if x.size > 1 else None, int(x.size))


@dataclass(frozen=True)
class Cell:
    """The runs of one method at one grid point, and their statistics over seeds.

    axis: TARGET (epsilon is the calibration target), ACHIEVED (epsilon is the achieved epsilon of runs
    without a target, to 6 significant digits) or NON_PRIVATE (epsilon is None).
    stats: metric name -> Stat over the runs where it is not null, or None where it is null in every run
    ("epsilon" is the achieved epsilon).
    """

    method: str
    axis: str
    epsilon: float | None
    runs: tuple[Run, ...]
    stats: Mapping[str, Stat | None]

    @property
    def calibration_misses(self) -> int:
        return sum(calibration_miss(run.metrics) for run in self.runs)


@dataclass(frozen=True)
class Headline:
    """Where one method's student first reaches the threshold (see `headline`).

    threshold: fraction x the true-labels student's mean accuracy, None without that reference.
    reached: the cell of the smallest grid epsilon at or above the threshold, None when not reached.
    best: the private cell with the highest mean student accuracy (context for "not reached"); None when no
    private cell has a student (no query answered anywhere).
    private: whether the method has private runs at all.
    """

    method: str
    threshold: float | None
    reached: Cell | None
    best: Cell | None
    private: bool = True  # False for a method with non-private runs only


@dataclass(frozen=True)
class Summary:
    sweep: Sweep
    cells: tuple[Cell, ...]
    references: Mapping[str, Mapping[str, Stat]]  # reference name -> metric -> Stat over seeds
    warnings: tuple[str, ...]

    @property
    def methods(self) -> tuple[str, ...]:
        return tuple(sorted({cell.method for cell in self.cells}))

    @property
    def axes(self) -> tuple[str, ...]:
        return tuple(sorted({cell.axis for cell in self.cells}, key=_AXIS_ORDER.__getitem__))


def calibration_error(metrics: Mapping[str, Any]) -> float | None:
    """(epsilon - target_epsilon) / target_epsilon, or None for a run without a target."""
    target = metrics["target_epsilon"]
    return None if target is None else (metrics["epsilon"] - target) / target


def calibration_miss(metrics: Mapping[str, Any]) -> bool:
    """True when the achieved epsilon is off its target by more than CALIBRATION_TOLERANCE of the target."""
    error = calibration_error(metrics)
    return error is not None and abs(error) > CALIBRATION_TOLERANCE


def _grid_point(metrics: Mapping[str, Any]) -> tuple[str, float | None]:
    if not metrics["private"]:
        return NON_PRIVATE, None
    if metrics["target_epsilon"] is not None:
        return TARGET, float(metrics["target_epsilon"])
    # Runs with the same noise spend the same epsilon up to float noise: group on 6 significant digits.
    return ACHIEVED, float(f"{metrics['epsilon']:.6g}")


def _cell(method: str, axis: str, epsilon: float | None, runs: list[Run]) -> Cell:
    by_seed: dict[int, Run] = {}
    for run in runs:
        other = by_seed.setdefault(run.metrics["seed"], run)
        if other is not run:
            raise ValueError(
                f"jobs {other.job} and {run.job} share method={method!r}, epsilon ({axis})={epsilon} and "
                f"seed={run.metrics['seed']}; they differ by {sorted(set(other.overrides) ^ set(run.overrides))}. "
                f"The report averages over seeds only: sweep that setting in separate sweeps"
            )
    stats: dict[str, Stat | None] = {}
    for key in ("epsilon",) + TABLE_METRICS + OPTIONAL_METRICS:
        # A metric is null where a run had nothing to measure (no query answered: no released labels to
        # score, no student to train); the statistic is over the runs that have it, and its n says how many.
        values = [run.metrics[key] for run in runs if run.metrics.get(key) is not None]
        stats[key] = Stat.of(values) if values else None
    return Cell(method, axis, epsilon, tuple(runs), stats)


def reference_name(name: str, student_semi: str | None) -> str:
    """The key of a reference line for a run whose student learns with ``student_semi``: a reference student is
    the run's own student kind trained on other labels, so a semi-supervised student (``student.semi.method``)
    has its own, ``<name>+<method>``; the majority class involves no student."""
    if name == "majority_class" or student_semi in (None, "supervised"):
        return name
    return f"{name}+{student_semi}"


def _references(runs: tuple[Run, ...]) -> tuple[dict[str, dict[str, Stat]], list[str]]:
    """Reference lines: one value per seed (they are cached, so identical across the jobs of a seed that use
    the same student), one line per student kind (:func:`reference_name`)."""
    per_seed: dict[str, dict[str, dict[int, list[float]]]] = {}
    for run in runs:
        for raw, values in sorted((run.metrics["reference"] or {}).items()):
            if raw in PER_METHOD_REFERENCES:  # one method's own, not a line shared by the report
                continue
            name = reference_name(raw, run.metrics.get("student_semi"))
            for metric, value in values.items():
                seeds = per_seed.setdefault(name, {}).setdefault(metric, {})
                seeds.setdefault(run.metrics["seed"], []).append(value)
    references: dict[str, dict[str, Stat]] = {}
    warnings = []
    for name in sorted(per_seed):
        references[name] = {}
        for metric in sorted(per_seed[name]):
            seeds = per_seed[name][metric]
            for seed in sorted(seeds):
                if len(set(seeds[seed])) > 1:
                    warnings.append(
                        f"reference {name}.{metric} differs between the jobs of seed {seed} "
                        f"({sorted(set(seeds[seed]))}); the report uses their mean"
                    )
            references[name][metric] = Stat.of(float(np.mean(seeds[seed])) for seed in sorted(seeds))
    return references, warnings


def distinct(runs: Iterable[Run], get: Callable[[Run], Any]) -> dict[Any, list[str]]:
    """Each distinct value of get(run) -> the jobs holding it, in job order."""
    values: dict[Any, list[str]] = {}
    for run in runs:
        values.setdefault(get(run), []).append(run.job)
    return values


def summarize(sweep: Sweep) -> Summary:
    """Cells sorted by method, then axis (target, achieved, non-private), then epsilon."""
    groups: dict[tuple[str, str, float | None], list[Run]] = {}
    for run in sweep.runs:
        groups.setdefault((run.metrics["method"], *_grid_point(run.metrics)), []).append(run)
    order = sorted(groups, key=lambda k: (k[0], _AXIS_ORDER[k[1]], -1.0 if k[2] is None else k[2]))
    cells = tuple(_cell(*key, groups[key]) for key in order)
    references, warnings = _references(sweep.runs)
    version_keys = sorted({key for run in sweep.runs for key in run.metrics["versions"]})
    for key in version_keys:
        values = distinct(sweep.runs, lambda run: run.metrics["versions"].get(key))
        if len(values) > 1:
            listing = "; ".join(
                f"{value!r} in jobs {jobs}" for value, jobs in sorted(values.items(), key=lambda item: str(item[0]))
            )
            warnings.append(f"runs used different versions.{key}: {listing}")
    return Summary(sweep, cells, references, tuple(warnings))


def true_labels_reference(summary: Summary, method: str) -> str:
    """The name of the true-labels reference that ``method``'s student is measured against."""
    semi = next(
        (run.metrics.get("student_semi") for cell in summary.cells if cell.method == method for run in cell.runs), None
    )
    return reference_name("true_labels", semi)


def headline(summary: Summary, fraction: float = HEADLINE_FRACTION) -> tuple[Headline, ...]:
    """For each method, the smallest grid epsilon whose mean student accuracy >= fraction x the mean
    student accuracy of the true-labels reference (the non-private student of the method's own student kind,
    :func:`reference_name`).

    "Smallest epsilon at which it is reached", literally: a later dip below the threshold does not undo it.
    """
    if not 0.0 < fraction <= 1.0:
        raise ValueError(f"fraction={fraction!r}: expected a number in (0, 1]")
    lines = []
    for method in summary.methods:
        reference = summary.references.get(true_labels_reference(summary, method), {}).get("student_accuracy")
        threshold = None if reference is None else fraction * reference.mean
        # cells where some run answered no query have no student there: they can be "best", but reach the
        # threshold only when every run of the cell has a student
        scored = sorted(
            (
                c
                for c in summary.cells
                if c.method == method and c.axis != NON_PRIVATE and c.stats["student_accuracy"] is not None
            ),
            key=lambda c: c.epsilon,
        )
        reached = None
        if threshold is not None:
            reached = next(
                (
                    c
                    for c in scored
                    if c.stats["student_accuracy"].n == len(c.runs) and c.stats["student_accuracy"].mean >= threshold
                ),
                None,
            )
        best = max(scored, key=lambda c: c.stats["student_accuracy"].mean, default=None)
        lines.append(
            Headline(
                method,
                threshold,
                reached,
                best,
                any(c.method == method and c.axis != NON_PRIVATE for c in summary.cells),
            )
        )
    return tuple(lines)
