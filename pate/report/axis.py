"""Axis reports: student accuracy against one setting of the sweep, each method recalibrated to a fixed epsilon.

Two axes, each a report kind (``pate.report.generate.REPORTS``):

* ``accuracy_vs_queries`` (``experiment=query_sweep``): the number of public queries Q. Fewer queries at the same
  total epsilon buy less noise per query. Its reference at each Q is the student trained on the *true* labels of
  those Q queries, and its headline names the cheapest setting: the smallest Q (then the smallest epsilon) whose
  student reaches HEADLINE_FRACTION of the true-labels student trained with the most queries of the sweep.
* ``accuracy_vs_teachers`` (``experiment=teacher_sweep``): the number of teachers T. Fewer teachers each see
  more private records (a better vote) but the same noise weighs more on their smaller vote counts (the trade-off
  of benchmarks/results/levers.md, "The teachers' ceiling"). Its references at each T are the mean teacher's
  accuracy, the accuracy of the teachers' non-private majority vote on the queries, and the student trained on that
  vote; its headline names, at each target epsilon, the T (and method) with the best student.

Runs are grouped by (method, target epsilon, axis value) and averaged over seeds. A reference takes one value per
seed; where the jobs of a seed disagree (a sweep over student kinds trains one reference student per kind) the best
is taken: the stricter threshold.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable

import numpy as np

from pate.report.collect import Run, Sweep, shown_overrides
from pate.report.summary import HEADLINE_FRACTION, Stat, distinct
from pate.report.guarantee import opening
from pate.report.tables import REFERENCES_NOT_COVERED, publishable_note, runs_csv, verified_text
from pate.report.units import TEACHER_LEVEL_NOTE, teacher_level, unit_cell


@dataclass(frozen=True)
class Axis:
    """What an axis report plots against: the run record's ``field``, shown as ``symbol`` (Q, T)."""

    field: str
    symbol: str
    title: str  # the report's first heading
    label: str  # the plot's x-axis and the tables' columns, in words
    description: str  # what changes along the axis, and why it matters
    references: tuple[tuple[str, str], ...]  # per axis value: (dotted path in metrics.json, what it is)
    plot_name: str
    headline: Callable[["AxisSummary"], list[str]]


@dataclass(frozen=True)
class AxisCell:
    """The runs of one method at one (target epsilon, axis value), with mean +- std over seeds (None: no student)."""

    method: str
    epsilon: float
    value: int
    runs: tuple[Run, ...]
    student_accuracy: Stat | None
    answered_fraction: Stat


@dataclass(frozen=True)
class AxisSummary:
    axis: Axis
    sweep: Sweep
    cells: tuple[AxisCell, ...]
    references: dict[str, dict[int, Stat]]  # reference path -> axis value -> over seeds
    majority_class: Stat | None
    warnings: tuple[str, ...] = ()

    @property
    def values(self) -> tuple[int, ...]:
        return tuple(sorted({cell.value for cell in self.cells}))

    @property
    def privacy(self) -> str:
        return f"neighbors={self.sweep.relation}, δ={self.sweep.delta:g}"


def _stat(runs, key) -> Stat | None:
    values = [run.metrics[key] for run in runs if run.metrics.get(key) is not None]
    return Stat.of(values) if values else None


def _dotted(metrics: dict[str, Any], path: str) -> Any:
    for key in path.split("."):
        metrics = metrics.get(key) if isinstance(metrics, dict) else None
    return metrics


def _seed_reference(runs: list[Run], path: str) -> Stat | None:
    """A reference, one value per seed (the best where a seed's jobs disagree), over seeds."""
    by_seed: dict[int, list[float]] = {}
    for run in runs:
        value = _dotted(run.metrics, path)
        if value is not None:
            by_seed.setdefault(run.metrics["seed"], []).append(float(value))
    return Stat.of(float(np.max(v)) for _, v in sorted(by_seed.items())) if by_seed else None


def summarize_axis(sweep: Sweep, axis: Axis) -> AxisSummary:
    """Group the private, targeted runs that have the axis's field by (method, target epsilon, value); a run
    without a target is refused (an axis report compares settings at one calibrated epsilon), and so is a sweep
    with no run that has the field."""
    untargeted = [run.job for run in sweep.runs if run.metrics["target_epsilon"] is None]
    if untargeted:
        raise ValueError(
            f"{sweep.directory}: jobs {untargeted} have no target epsilon; an axis report compares "
            f"settings at a calibrated epsilon (privacy.target_epsilon)"
        )
    runs = [run for run in sweep.runs if run.metrics.get(axis.field) is not None]
    if not runs:
        raise ValueError(
            f"{sweep.directory}: no finished job records {axis.field!r}; a report of student accuracy "
            f"against {axis.label} needs runs that have one"
        )
    groups = distinct(
        runs, lambda run: (run.metrics["method"], float(run.metrics["target_epsilon"]), int(run.metrics[axis.field]))
    )
    by_job = {run.job: run for run in runs}
    cells = []
    for (method, epsilon, value), jobs in sorted(groups.items()):
        grouped = tuple(by_job[job] for job in jobs)
        cells.append(
            AxisCell(
                method, epsilon, value, grouped, _stat(grouped, "student_accuracy"), _stat(grouped, "answered_fraction")
            )
        )
    by_value = distinct(runs, lambda run: int(run.metrics[axis.field]))
    references = {
        path: {
            value: stat
            for value, jobs in sorted(by_value.items())
            if (stat := _seed_reference([by_job[j] for j in jobs], path)) is not None
        }
        for path, _ in _shown_references(axis, sweep)
    }
    left_out = sorted({run.metrics["method"] for run in sweep.runs} - {run.metrics["method"] for run in runs})
    warnings = (f"methods {left_out} record no {axis.field}: left out of this report",) if left_out else ()
    return AxisSummary(
        axis,
        sweep,
        tuple(cells),
        references,
        _seed_reference(list(sweep.runs), "reference.majority_class.student_accuracy"),
        warnings,
    )


def _shown_references(axis: Axis, sweep: Sweep) -> tuple[tuple[str, str], ...]:
    """The axis's reference lines but the ones the sweep hides (its publishable form: none is covered by ε)."""
    return tuple(
        (path, what)
        for path, what in axis.references
        if not any(path == hidden or path.startswith(hidden + ".") for hidden in sweep.hidden)
    )


def _fmt(stat: Stat | None) -> str:
    if stat is None:
        return "n/a"
    return f"{stat.mean:.4f}" if stat.std is None else f"{stat.mean:.4f} ± {stat.std:.4f}"


def query_headline(summary: AxisSummary, fraction: float = HEADLINE_FRACTION) -> tuple[float | None, AxisCell | None]:
    """(threshold, the cheapest cell reaching it): threshold = fraction x the true-labels student at the
    largest Q; cheapest = smallest Q, then smallest epsilon, then highest accuracy. (None, None) without the
    reference."""
    true_labels = summary.references["reference.true_labels.student_accuracy"]
    if not true_labels:
        return None, None
    threshold = fraction * true_labels[max(true_labels)].mean
    reached = [c for c in summary.cells if c.student_accuracy is not None and c.student_accuracy.mean >= threshold]
    if not reached:
        return threshold, None
    return threshold, min(reached, key=lambda c: (c.value, c.epsilon, -c.student_accuracy.mean))


def _query_headline_lines(summary: AxisSummary) -> list[str]:
    if "reference.true_labels" in summary.sweep.hidden:
        return [
            "Left out of this publishable form: the headline is measured against the student on the true "
            "labels, a diagnostic not covered by ε."
        ]
    threshold, cheapest = query_headline(summary)
    most = max(summary.values)
    if threshold is None:
        return ["No true-labels reference student in this sweep (run it with `references=true`)."]
    if cheapest is None:
        return [
            f"No setting reaches {HEADLINE_FRACTION:.0%} of the true-labels student with {most} queries "
            f"({threshold:.4f}); {summary.privacy}."
        ]
    return [
        f"Cheapest setting reaching {HEADLINE_FRACTION:.0%} of the true-labels student with {most} queries "
        f"({threshold:.4f}): **{cheapest.method} with {cheapest.value} queries at target ε {cheapest.epsilon:g}** "
        f"(student accuracy {_fmt(cheapest.student_accuracy)}); {summary.privacy}."
    ]


def best_teachers(summary: AxisSummary) -> dict[float, AxisCell]:
    """Per target epsilon, the cell with the best mean student (ties: fewer teachers, then the method's name)."""
    best: dict[float, AxisCell] = {}
    for cell in summary.cells:
        if cell.student_accuracy is None:
            continue
        other = best.get(cell.epsilon)
        key = (-cell.student_accuracy.mean, cell.value, cell.method)
        if other is None or key < (-other.student_accuracy.mean, other.value, other.method):
            best[cell.epsilon] = cell
    return dict(sorted(best.items()))


def _teacher_headline_lines(summary: AxisSummary) -> list[str]:
    best = best_teachers(summary)
    if not best:
        return ["No run trained a student."]
    return [f"The number of teachers with the best student at each target ε ({summary.privacy}):", ""] + [
        f"- ε {epsilon:g}: **T = {cell.value}** ({cell.method}, student accuracy {_fmt(cell.student_accuracy)})"
        for epsilon, cell in best.items()
    ]


QUERIES = Axis(
    "queries",
    "Q",
    "Query-budget report",
    "public queries Q",
    "the number of public queries the teachers answer (smaller query sets are subsets of larger ones)",
    (("reference.true_labels.student_accuracy", "student on the true labels of the Q queries"),),
    "accuracy_vs_queries.png",
    _query_headline_lines,
)
TEACHERS = Axis(
    "num_teachers",
    "T",
    "Teacher-count report",
    "teachers T",
    "the number of teachers the private split is divided among (each teacher's part shrinks as T grows)",
    (
        ("teacher_accuracy", "mean teacher's accuracy (a diagnostic: the teachers are private)"),
        ("reference.majority_vote.label_accuracy", "the teachers' non-private majority vote on the queries"),
        ("reference.majority_vote.student_accuracy", "student on the teachers' non-private majority vote"),
        ("reference.true_labels.student_accuracy", "student on the true labels of the queries"),
    ),
    "accuracy_vs_teachers.png",
    _teacher_headline_lines,
)
AXES = {axis.field: axis for axis in (QUERIES, TEACHERS)}


def _seeds(sweep: Sweep) -> str:
    """The seeds, or only how many where the report hides them (seeded noise, publishable form)."""
    seeds = sorted({run.metrics["seed"] for run in sweep.runs})
    if "seed" in sweep.hidden:
        return f"{len(seeds)} (their values left out: the noise was seeded, and a published seed replays it)"
    return ", ".join(str(seed) for seed in seeds)


def render_axis_report(summary: AxisSummary) -> str:
    axis, sweep, values = summary.axis, summary.sweep, summary.values
    symbol = axis.symbol
    lines = [
        f"# {axis.title}: {summary.privacy}",
        "",
        *opening(
            sweep.runs,
            sweep.relation,
            sweep.delta,
            f": each run's noise is calibrated so that all its queries together cost the target ε; along "
            f"the axis changes {axis.description}.",
        ),
        *publishable_note(sweep.hidden),
        "## What was run",
        "",
        f"- {axis.label[0].upper()}{axis.label[1:]}: {', '.join(str(v) for v in values)}.",
        f"- Methods: {', '.join(sorted({c.method for c in summary.cells}))}.",
        f"- Target ε: {', '.join(f'{e:g}' for e in sorted({c.epsilon for c in summary.cells}))}.",
        f"- Seeds: {_seeds(sweep)}.",
        f"- Jobs: {len(sweep.runs)} finished, {len(sweep.failed)} failed"
        + "".join(
            f"; job {job.job} ({' '.join(shown_overrides(sweep, job.overrides))}) never started"
            for job in sweep.never_started
        )
        + ".",
        f"- Privacy verified: {verified_text(sweep)}",
        f"- Versions: git {', '.join(sorted({str(r.metrics['versions'].get('git')) for r in sweep.runs}))}.",
        *(f"- Warning: {warning}." for warning in summary.warnings),
        "",
        "## Headline",
        "",
        *axis.headline(summary),
        "",
        f"## Student accuracy by {axis.label}",
        "",
        f"Mean ± sample std over seeds ({summary.privacy}); in brackets the fraction of queries answered where "
        f"not all; n/a: no query answered, no student.",
        "",
        "| method | target ε | unit | " + " | ".join(f"{symbol} = {v}" for v in values) + " |",
        "|---|---|---|" + "---|" * len(values),
    ]
    cells = {(c.method, c.epsilon, c.value): c for c in summary.cells}
    for method, epsilon in sorted({(c.method, c.epsilon) for c in summary.cells}):
        row = []
        for value in values:
            cell = cells.get((method, epsilon, value))
            if cell is None:
                row.append("")
                continue
            answered = cell.answered_fraction.mean
            row.append(_fmt(cell.student_accuracy) + (f" ({answered:.0%})" if answered < 0.995 else ""))
        unit = unit_cell(
            run for value in values if (method, epsilon, value) in cells for run in cells[method, epsilon, value].runs
        )
        lines.append(f"| {method} | {epsilon:g} | {unit} | " + " | ".join(row) + " |")
    if teacher_level(sweep.runs):
        lines += ["", TEACHER_LEVEL_NOTE]
    lines += [
        "",
        "## Reference lines (not covered by ε)",
        "",
        REFERENCES_NOT_COVERED,
        "",
        "| reference | " + " | ".join(f"{symbol} = {v}" for v in values) + " |",
        "|---|" + "---|" * len(values),
    ]
    lines += [
        f"| {what} | " + " | ".join(_fmt(summary.references[path].get(v)) for v in values) + " |"
        for path, what in _shown_references(axis, sweep)
    ]
    lines += [
        f"| majority class | {_fmt(summary.majority_class)} |" + " |" * (len(values) - 1),
        "",
        f"![student accuracy vs {axis.label}]({axis.plot_name})",
        "",
    ]
    return "\n".join(lines)


def axis_csv(summary: AxisSummary) -> str:
    """results.csv: every field of each run's record (the format of the epsilon report's), in (method, target
    epsilon, axis value, seed) order, then the failed jobs."""
    return runs_csv(
        [run for cell in summary.cells for run in sorted(cell.runs, key=lambda r: r.metrics["seed"])], summary.sweep
    )


def axis_plot(summary: AxisSummary):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    axis = summary.axis
    fig, ax = plt.subplots(figsize=(8, 5.5))
    for method, epsilon in sorted({(c.method, c.epsilon) for c in summary.cells}):
        cells = [c for c in summary.cells if (c.method, c.epsilon) == (method, epsilon) and c.student_accuracy]
        if cells:
            ax.errorbar(
                [c.value for c in cells],
                [c.student_accuracy.mean for c in cells],
                yerr=[c.student_accuracy.std or 0 for c in cells],
                marker="o",
                capsize=3,
                label=f"{method}, ε={epsilon:g}"
                + (" (teacher-level ε)" if teacher_level(run for c in cells for run in c.runs) else ""),
            )
    for (path, what), style in zip(
        (r for r in _shown_references(axis, summary.sweep) if r[1].startswith("student")), ("k-", "k--")
    ):
        values = sorted(summary.references[path])
        if values:
            ax.plot(values, [summary.references[path][v].mean for v in values], style, label=f"reference: {what}")
    if summary.majority_class is not None:
        ax.axhline(summary.majority_class.mean, color="tab:red", linestyle=":", label="reference: majority class")
    if axis is TEACHERS:
        ax.set_xscale("log", base=2)
        ax.set_xticks(summary.values, [str(v) for v in summary.values])
    ax.set_xlabel(f"{axis.label} ({summary.privacy})")
    ax.set_ylabel("student accuracy (mean ± std over seeds)")
    ax.set_title(f"Student accuracy vs {axis.label} at a fixed ε")
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8, loc="lower right")
    fig.tight_layout()
    return fig


__all__ = [
    "AXES",
    "Axis",
    "AxisCell",
    "AxisSummary",
    "QUERIES",
    "TEACHERS",
    "axis_csv",
    "axis_plot",
    "best_teachers",
    "query_headline",
    "render_axis_report",
    "summarize_axis",
]
