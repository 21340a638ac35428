"""The query-budget report: student accuracy against the number of public queries at a fixed epsilon.

A sweep over ``data.num_queries`` (``experiment=query_sweep``) recalibrates every aggregator to the same
target epsilon for each query count Q, so fewer queries buy less noise per query. The report groups runs by
(method, target epsilon, Q) and averages over seeds; its reference line at each Q is the student trained on
the *true* labels of those Q queries (same pool, no privacy cost; the best student kind where the sweep has
several). Its headline names the cheapest setting:
the smallest Q (then the smallest epsilon) whose student reaches HEADLINE_FRACTION of the true-labels student
trained with the most queries of the sweep.
"""

from __future__ import annotations

import csv
import io
from dataclasses import dataclass

import numpy as np

from pate.report.collect import Run, Sweep
from pate.report.summary import HEADLINE_FRACTION, Stat, distinct

PLOT_NAME = "accuracy_vs_queries.png"


@dataclass(frozen=True)
class QueryCell:
    """The runs of one method at one (target epsilon, Q), with mean +- std over seeds (None: no student)."""

    method: str
    epsilon: float
    queries: int
    runs: tuple[Run, ...]
    student_accuracy: Stat | None
    answered_fraction: Stat


@dataclass(frozen=True)
class QuerySummary:
    sweep: Sweep
    cells: tuple[QueryCell, ...]
    true_labels: dict[int, Stat]  # Q -> the true-labels student over seeds
    majority_class: Stat | None
    warnings: tuple[str, ...] = ()

    @property
    def query_counts(self) -> tuple[int, ...]:
        return tuple(sorted({cell.queries for cell in self.cells}))


def _stat(runs, key) -> Stat | None:
    values = [run.metrics[key] for run in runs if run.metrics[key] is not None]
    return Stat.of(values) if values else None


def _seed_reference(runs: list[Run], name: str) -> Stat | None:
    """A reference student, one value per seed, over seeds. Where the jobs of a seed disagree (a sweep over
    student kinds trains one reference per kind) the best is taken: the stricter threshold."""
    by_seed: dict[int, list[float]] = {}
    for run in runs:
        ref = (run.metrics.get("reference") or {}).get(name) or {}
        if ref.get("student_accuracy") is not None:
            by_seed.setdefault(run.metrics["seed"], []).append(float(ref["student_accuracy"]))
    return Stat.of(float(np.max(v)) for _, v in sorted(by_seed.items())) if by_seed else None


def summarize_queries(sweep: Sweep) -> QuerySummary:
    """Group the private, targeted runs by (method, target epsilon, Q); a run without a target is refused
    (the query axis compares settings at one calibrated epsilon)."""
    untargeted = [run.job for run in sweep.runs if run.metrics["target_epsilon"] is None]
    if untargeted:
        raise ValueError(f"{sweep.directory}: jobs {untargeted} have no target epsilon; a query-budget report "
                         f"compares query counts at a calibrated epsilon (privacy.target_epsilon)")
    groups = distinct(sweep.runs, lambda run: (run.metrics["method"], float(run.metrics["target_epsilon"]),
                                               int(run.metrics["queries"])))
    by_job = {run.job: run for run in sweep.runs}
    cells = []
    for (method, epsilon, queries), jobs in sorted(groups.items()):
        runs = tuple(by_job[job] for job in jobs)
        cells.append(QueryCell(method, epsilon, queries, runs, _stat(runs, "student_accuracy"),
                               _stat(runs, "answered_fraction")))
    by_q = distinct(sweep.runs, lambda run: int(run.metrics["queries"]))
    true_labels = {q: stat for q, jobs in sorted(by_q.items())
                   if (stat := _seed_reference([by_job[j] for j in jobs], "true_labels")) is not None}
    return QuerySummary(sweep, tuple(cells), true_labels, _seed_reference(list(sweep.runs), "majority_class"))


def query_headline(summary: QuerySummary, fraction: float = HEADLINE_FRACTION) -> tuple[float | None,
                                                                                        QueryCell | None]:
    """(threshold, the cheapest cell reaching it): threshold = fraction x the true-labels student at the
    largest Q; cheapest = smallest Q, then smallest epsilon, then highest accuracy. (None, None) without the
    reference."""
    if not summary.true_labels:
        return None, None
    threshold = fraction * summary.true_labels[max(summary.true_labels)].mean
    reached = [c for c in summary.cells if c.student_accuracy is not None and c.student_accuracy.mean >= threshold]
    if not reached:
        return threshold, None
    return threshold, min(reached, key=lambda c: (c.queries, c.epsilon, -c.student_accuracy.mean))


def _fmt(stat: Stat | None) -> str:
    if stat is None:
        return "n/a"
    return f"{stat.mean:.4f}" if stat.std is None else f"{stat.mean:.4f} ± {stat.std:.4f}"


def render_query_report(summary: QuerySummary) -> str:
    sweep, qs = summary.sweep, summary.query_counts
    privacy = f"neighbors={sweep.relation}, δ={sweep.delta:g}"
    threshold, cheapest = query_headline(summary)
    lines = [f"# Query-budget report: {privacy}", "",
             f"Every ε in this report is an (ε, δ)-DP guarantee under `neighbors={sweep.relation}` with "
             f"δ = {sweep.delta:g}: each run's noise is calibrated so that all its queries together cost the "
             f"target ε.", "", "## What was run", "",
             f"- Query counts: {', '.join(str(q) for q in qs)}.",
             f"- Methods: {', '.join(sorted({c.method for c in summary.cells}))}.",
             f"- Target ε: {', '.join(f'{e:g}' for e in sorted({c.epsilon for c in summary.cells}))}.",
             f"- Seeds: {', '.join(str(s) for s in sorted({r.metrics['seed'] for r in sweep.runs}))}.",
             f"- Jobs: {len(sweep.runs)} finished, {len(sweep.failed)} failed.",
             f"- Versions: git {', '.join(sorted({str(r.metrics['versions'].get('git')) for r in sweep.runs}))}.",
             "", "## Headline", ""]
    if threshold is None:
        lines.append("No true-labels reference student in this sweep (run it with `references=true`).")
    elif cheapest is None:
        lines.append(f"No setting reaches {HEADLINE_FRACTION:.0%} of the true-labels student with "
                     f"{max(summary.true_labels)} queries ({threshold:.4f}); {privacy}.")
    else:
        lines.append(f"Cheapest setting reaching {HEADLINE_FRACTION:.0%} of the true-labels student with "
                     f"{max(summary.true_labels)} queries ({threshold:.4f}): **{cheapest.method} with "
                     f"{cheapest.queries} queries at target ε {cheapest.epsilon:g}** (student accuracy "
                     f"{_fmt(cheapest.student_accuracy)}); {privacy}.")
    lines += ["", "## Student accuracy by number of queries", "",
              f"Mean ± sample std over seeds ({privacy}); in brackets the fraction of queries answered where not "
              f"all; n/a: no query answered, no student.", "",
              "| method | target ε | " + " | ".join(f"Q = {q}" for q in qs) + " |",
              "|---|---|" + "---|" * len(qs)]
    for method, epsilon in sorted({(c.method, c.epsilon) for c in summary.cells}):
        row = []
        for q in qs:
            cell = next((c for c in summary.cells if (c.method, c.epsilon, c.queries) == (method, epsilon, q)), None)
            if cell is None:
                row.append("")
                continue
            answered = cell.answered_fraction.mean
            row.append(_fmt(cell.student_accuracy) + (f" ({answered:.0%})" if answered < 0.995 else ""))
        lines.append(f"| {method} | {epsilon:g} | " + " | ".join(row) + " |")
    lines += ["", "## Reference lines (no privacy cost)", "",
              "| reference | " + " | ".join(f"Q = {q}" for q in qs) + " |", "|---|" + "---|" * len(qs),
              "| student on the true labels of the Q queries | "
              + " | ".join(_fmt(summary.true_labels.get(q)) for q in qs) + " |",
              f"| majority class | {_fmt(summary.majority_class)} |" + " |" * (len(qs) - 1), "",
              f"![student accuracy vs queries]({PLOT_NAME})", ""]
    return "\n".join(lines)


def query_csv(summary: QuerySummary) -> str:
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(["job", "method", "target_epsilon", "epsilon", "queries", "seed", "answered_fraction",
                     "student_accuracy", "student_f1"])
    for cell in summary.cells:
        for run in cell.runs:
            m = run.metrics
            writer.writerow([run.job, m["method"], m["target_epsilon"], m["epsilon"], m["queries"], m["seed"],
                             m["answered_fraction"], m["student_accuracy"], m["student_f1"]])
    return out.getvalue()


def query_plot(summary: QuerySummary):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(8, 5.5))
    for method, epsilon in sorted({(c.method, c.epsilon) for c in summary.cells}):
        cells = [c for c in summary.cells if (c.method, c.epsilon) == (method, epsilon) and c.student_accuracy]
        if cells:
            ax.errorbar([c.queries for c in cells], [c.student_accuracy.mean for c in cells],
                        yerr=[c.student_accuracy.std or 0 for c in cells], marker="o", capsize=3,
                        label=f"{method}, ε={epsilon:g}")
    if summary.true_labels:
        qs = sorted(summary.true_labels)
        ax.plot(qs, [summary.true_labels[q].mean for q in qs], "k-", label="reference: true labels of the Q queries")
    if summary.majority_class is not None:
        ax.axhline(summary.majority_class.mean, color="tab:red", linestyle=":", label="reference: majority class")
    ax.set_xlabel(f"public queries Q (neighbors={summary.sweep.relation}, δ={summary.sweep.delta:g})")
    ax.set_ylabel("student accuracy (mean ± std over seeds)")
    ax.set_title("Student accuracy vs number of queries at a fixed ε")
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8, loc="lower right")
    fig.tight_layout()
    return fig


__all__ = ["PLOT_NAME", "QueryCell", "QuerySummary", "query_csv", "query_headline", "query_plot",
           "render_query_report", "summarize_queries"]
