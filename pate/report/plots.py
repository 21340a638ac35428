"""Metric-vs-epsilon figures of a sweep: one error-bar series per private method on a log-x axis.

Figures are built on matplotlib's object API (``Figure``, no pyplot): no global state, no display needed,
and the PNG is rendered by the Agg canvas. Error bars are the sample std over seeds; reference lines
(diagnostics not covered by epsilon) are drawn horizontally with a band of +- one std over seeds; a method whose
epsilons are teacher-level (PATE under add_remove, ``pate.report.units``) says so in the legend.

The legend says what each line is, so that a figure cannot read as "private beats non-private": the true-labels
student is named with the number of queries it was trained on (from the runs), a method's own privacy-free limit
(its ``noise_free`` reference: DP-SGD, Private-kNN) is drawn as a dashed line in the method's colour at each ε
("<method> privacy-free limit (not private)"), the teachers' majority vote is named as the PATE aggregators'
privacy-free limit, and a method with no value at any ε (it answered no query) is named by a legend entry rather
than left out.
"""

from __future__ import annotations

from dataclasses import dataclass

from matplotlib.figure import Figure

from pate.report.limits import cell_limit
from pate.report.summary import ACHIEVED, HEADLINE_FRACTION, NON_PRIVATE, TARGET, Summary
from pate.report.tables import METRIC_LABELS, reference_label
from pate.report.units import teacher_level

_MARKERS = ("o", "s", "^", "D", "v", "P", "X", "<", ">", "*")
_REFERENCE_STYLE = {
    "true_labels": dict(color="black", linestyle="-"),
    "majority_vote": dict(color="tab:gray", linestyle="--"),
    "majority_class": dict(color="tab:red", linestyle=":"),
}


@dataclass(frozen=True)
class PlotSpec:
    """One figure: the metric on the y-axis and the reference lines drawn for it."""

    filename: str
    metric: str
    references: tuple[str, ...]
    threshold: bool = False  # draw HEADLINE_FRACTION x the true-labels student accuracy


PLOTS = (
    PlotSpec(
        "accuracy_vs_epsilon.png",
        "student_accuracy",
        ("true_labels", "majority_vote", "majority_class"),
        threshold=True,
    ),
    PlotSpec("label_f1_vs_epsilon.png", "label_f1", ("majority_vote",)),
    PlotSpec("answered_vs_epsilon.png", "answered_fraction", ()),
)


_STUDENT_METRICS = ("student_accuracy", "student_f1")
LIMIT_REFERENCE = "noise_free"  # a method's own privacy-free limit (pate.report.limits)
_TWO_COLUMN_LABEL = 50  # the longest legend label that still fits in one of two columns
# inches: the axes with their labels, one row of the legend, and the least height (the figure's before its legend grew)
_AXES_HEIGHT, _LEGEND_ROW_HEIGHT, _MIN_HEIGHT = 5.0, 0.19, 6.0


def _queries_text(summary: Summary, name: str) -> str:
    """ "the 600 queries": the query count of the runs that recorded the reference ``name`` (one count per report,
    pate.report.collect.SINGLE_VALUED), or "the queries" where they recorded none or several."""
    counts = {run.metrics.get("queries") for run in summary.sweep.runs if name in (run.metrics.get("reference") or {})}
    return f"the {counts.pop():,} queries" if len(counts) == 1 and None not in counts else "the queries"


def reference_plot_label(summary: Summary, name: str, metric: str) -> str:
    """A reference line's legend label on the figure of ``metric`` (``<name>+<method>``: the reference of that
    semi-supervised student kind, pate.report.summary.reference_name)."""
    base, _, semi = name.partition("+")
    student = metric in _STUDENT_METRICS
    if base == "true_labels":
        text = f"student on the true labels of {_queries_text(summary, base)} (non-private)"
    elif base == "majority_vote":
        text = (
            f"{'student on the ' if student else ''}teachers' majority vote (non-private): the PATE aggregators' "
            f"privacy-free limit"
        )
    else:
        return f"reference: {reference_label(name)}"
    return f"reference: {text}" + (f", {semi} student" if semi else "")


def _no_value_note(method: str, cells: list, metric: str) -> str:
    """The legend entry of a method whose private cells have no value of ``metric`` at any ε."""
    runs = [run for cell in cells for run in cell.runs]
    answered = sum(run.metrics.get("answered") or 0 for run in runs)
    if not answered:
        return f"{method}: answers no query at any ε ({'no student' if metric in _STUDENT_METRICS else 'no labels'})"
    asked = sum(run.metrics.get("queries") or 0 for run in runs)
    what = "no student" if metric in _STUDENT_METRICS else f"no {METRIC_LABELS.get(metric, metric)}"
    return f"{method}: {what} at any ε (answers {answered:,} of the {asked:,} queries of its {len(runs)} runs)"


def _limit_points(cells: list, metric: str) -> list[tuple[float, float]]:
    """(ε, mean over the cell's runs) of the method's own privacy-free limit for ``metric``, at each grid point
    where its runs recorded one (the limit follows the settings, which may change with ε)."""
    limits = [(cell.epsilon, cell_limit(cell, LIMIT_REFERENCE, metric)) for cell in cells]
    return [(epsilon, limit.mean) for epsilon, limit in limits if limit is not None]


def _x_label(summary: Summary) -> str:
    axes = [a for a in summary.axes if a != NON_PRIVATE]
    privacy = f"(neighbors={summary.sweep.relation}, δ={summary.sweep.delta:g})"
    if axes == [TARGET]:
        return f"target ε of the calibration {privacy}"
    if axes == [ACHIEVED]:
        return f"achieved ε {privacy}"
    return f"ε: calibration target, or achieved where the run had no target {privacy}"


def plot_metric_vs_epsilon(summary: Summary, spec: PlotSpec) -> Figure:
    """The figure for `spec`: one labelled error-bar series per private method (ax.containers, in method
    order), horizontal lines for non-private methods and the requested references."""
    metric_label = METRIC_LABELS[spec.metric]
    fig = Figure(figsize=(8.0, _MIN_HEIGHT), layout="constrained")
    ax = fig.add_subplot()
    entries = []  # the legend's artists, in drawing order
    grid = sorted({c.epsilon for c in summary.cells if c.axis != NON_PRIVATE})
    for i, method in enumerate(summary.methods):
        cells = [c for c in summary.cells if c.method == method]
        # a cell whose runs answered no query has no value for answer-based metrics: no point drawn there
        private = sorted(
            (c for c in cells if c.axis != NON_PRIVATE and c.stats[spec.metric] is not None), key=lambda c: c.epsilon
        )
        style = dict(marker=_MARKERS[i % len(_MARKERS)], color=f"C{i % 10}")
        if private:
            stats = [c.stats[spec.metric] for c in private]
            entries.append(
                ax.errorbar(
                    [c.epsilon for c in private],
                    [s.mean for s in stats],
                    yerr=[s.std or 0.0 for s in stats],
                    label=method
                    + (" (teacher-level ε)" if teacher_level(run for c in private for run in c.runs) else ""),
                    capsize=3,
                    linewidth=1.5,
                    markersize=5,
                    **style,
                )
            )
        elif any(c.axis != NON_PRIVATE for c in cells):  # private runs, none with a value: named, not left out
            entries += ax.plot(
                [],
                [],
                linestyle="none",
                marker=style["marker"],
                color=style["color"],
                markerfacecolor="none",
                label=_no_value_note(method, [c for c in cells if c.axis != NON_PRIVATE], spec.metric),
            )
        limit = _limit_points(sorted((c for c in cells if c.axis != NON_PRIVATE), key=lambda c: c.epsilon), spec.metric)
        if limit:
            entries += ax.plot(
                [x for x, _ in limit],
                [y for _, y in limit],
                linestyle="--",
                linewidth=1.2,
                color=style["color"],
                marker="_" if len(limit) == 1 else None,
                markersize=14,
                label=f"{method} privacy-free limit (not private)",
            )
        for cell in (c for c in cells if c.axis == NON_PRIVATE and c.stats[spec.metric] is not None):
            entries.append(
                ax.axhline(
                    cell.stats[spec.metric].mean, linestyle=":", color=style["color"], label=f"{method} (non-private)"
                )
            )
    entries += _draw_references(ax, summary, spec)
    true_accuracy = summary.references.get("true_labels", {}).get("student_accuracy")
    if spec.threshold and true_accuracy is not None:  # the supervised student's; semi-supervised ones in report.md
        entries.append(
            ax.axhline(
                HEADLINE_FRACTION * true_accuracy.mean,
                color="black",
                linestyle=":",
                linewidth=1.0,
                label=f"{HEADLINE_FRACTION:.0%} of the true-labels student",
            )
        )
    ax.set_xscale("log")
    if grid:
        ax.set_xticks(grid, [f"{x:g}" for x in grid])
        ax.minorticks_off()
    ax.set_xlabel(_x_label(summary))
    ax.set_ylabel(f"{metric_label} (mean ± std over seeds)")
    ax.set_title(
        f"{metric_label[0].upper()}{metric_label[1:]} vs ε — "
        f"neighbors={summary.sweep.relation}, δ={summary.sweep.delta:g}"
    )
    ax.grid(True, which="major", alpha=0.3)
    # in drawing order (each method with its own limit), two columns where the labels are short enough, and the
    # figure as tall as its legend needs
    labels = [entry.get_label() for entry in entries]
    ncols = 2 if max(map(len, labels), default=0) <= _TWO_COLUMN_LABEL else 1
    fig.legend(entries, labels, loc="outside lower center", ncols=ncols, fontsize="small", frameon=False)
    fig.set_figheight(max(_MIN_HEIGHT, _AXES_HEIGHT + _LEGEND_ROW_HEIGHT * -(-len(labels) // ncols)))
    return fig


def _draw_references(ax, summary: Summary, spec: PlotSpec) -> list:
    """A horizontal line (with its std band) per requested reference of ``summary``, each semi-supervised
    student's own included; returns their legend artists."""
    entries = []
    names = [
        name
        for base in spec.references
        for name in sorted(summary.references)
        if name == base or name.startswith(base + "+")
    ]
    for name in names:
        stat = summary.references[name].get(spec.metric)
        if stat is None:
            continue
        base, _, semi = name.partition("+")
        ref_style = dict(_REFERENCE_STYLE.get(base, dict(color="tab:brown", linestyle="-.")))
        if semi:
            ref_style["linestyle"] = (0, (1, 1)) if base == "true_labels" else (0, (3, 1, 1, 1))
        entries.append(
            ax.axhline(stat.mean, linewidth=1.2, label=reference_plot_label(summary, name, spec.metric), **ref_style)
        )
        if stat.std:
            ax.axhspan(stat.mean - stat.std, stat.mean + stat.std, color=ref_style["color"], alpha=0.12, linewidth=0)
    return entries


def make_plots(summary: Summary) -> dict[str, Figure]:
    """filename -> figure, for every plot in PLOTS."""
    return {spec.filename: plot_metric_vs_epsilon(summary, spec) for spec in PLOTS}
