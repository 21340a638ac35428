"""Metric-vs-epsilon figures of a sweep: one error-bar series per private method on a log-x axis.

Figures are built on matplotlib's object API (``Figure``, no pyplot): no global state, no display needed,
and the PNG is rendered by the Agg canvas. Error bars are the sample std over seeds; reference lines
(diagnostics not covered by epsilon) are drawn horizontally with a band of +- one std over seeds; a method whose
epsilons are teacher-level (PATE under add_remove, ``pate.report.units``) says so in the legend.
"""

from __future__ import annotations

from dataclasses import dataclass

from matplotlib.figure import Figure

from pate.report.summary import ACHIEVED, HEADLINE_FRACTION, NON_PRIVATE, TARGET, Summary
from pate.report.tables import METRIC_LABELS, reference_label
from pate.report.units import teacher_level

_MARKERS = ("o", "s", "^", "D", "v", "P", "X", "<", ">", "*")
_REFERENCE_STYLE = {"true_labels": dict(color="black", linestyle="-"),
                    "majority_vote": dict(color="tab:gray", linestyle="--"),
                    "majority_class": dict(color="tab:red", linestyle=":")}


@dataclass(frozen=True)
class PlotSpec:
    """One figure: the metric on the y-axis and the reference lines drawn for it."""

    filename: str
    metric: str
    references: tuple[str, ...]
    threshold: bool = False  # draw HEADLINE_FRACTION x the true-labels student accuracy


PLOTS = (
    PlotSpec("accuracy_vs_epsilon.png", "student_accuracy", ("true_labels", "majority_vote", "majority_class"),
             threshold=True),
    PlotSpec("label_f1_vs_epsilon.png", "label_f1", ("majority_vote",)),
    PlotSpec("answered_vs_epsilon.png", "answered_fraction", ()),
)


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
    fig = Figure(figsize=(8.0, 6.0), layout="constrained")
    ax = fig.add_subplot()
    grid = sorted({c.epsilon for c in summary.cells if c.axis != NON_PRIVATE})
    for i, method in enumerate(summary.methods):
        cells = [c for c in summary.cells if c.method == method]
        # a cell whose runs answered no query has no value for answer-based metrics: no point drawn there
        private = sorted((c for c in cells if c.axis != NON_PRIVATE and c.stats[spec.metric] is not None),
                         key=lambda c: c.epsilon)
        style = dict(marker=_MARKERS[i % len(_MARKERS)], color=f"C{i % 10}")
        if private:
            stats = [c.stats[spec.metric] for c in private]
            ax.errorbar([c.epsilon for c in private], [s.mean for s in stats], yerr=[s.std or 0.0 for s in stats],
                        label=method + (" (teacher-level ε)" if teacher_level(run for c in private for run in c.runs)
                                        else ""), capsize=3, linewidth=1.5, markersize=5, **style)
        for cell in (c for c in cells if c.axis == NON_PRIVATE and c.stats[spec.metric] is not None):
            ax.axhline(cell.stats[spec.metric].mean, linestyle=":", color=style["color"],
                       label=f"{method} (non-private)")
    names = [name for base in spec.references for name in sorted(summary.references)
             if name == base or name.startswith(base + "+")]  # with each semi-supervised student's own
    for name in names:
        stat = summary.references[name].get(spec.metric)
        if stat is None:
            continue
        base, _, semi = name.partition("+")
        ref_style = dict(_REFERENCE_STYLE.get(base, dict(color="tab:brown", linestyle="-.")))
        if semi:
            ref_style["linestyle"] = (0, (1, 1)) if base == "true_labels" else (0, (3, 1, 1, 1))
        ax.axhline(stat.mean, linewidth=1.2, label=f"reference: {reference_label(name)}", **ref_style)
        if stat.std:
            ax.axhspan(stat.mean - stat.std, stat.mean + stat.std, color=ref_style["color"], alpha=0.12, linewidth=0)
    true_accuracy = summary.references.get("true_labels", {}).get("student_accuracy")
    if spec.threshold and true_accuracy is not None:  # the supervised student's; semi-supervised ones in report.md
        ax.axhline(HEADLINE_FRACTION * true_accuracy.mean, color="black", linestyle=":", linewidth=1.0,
                   label=f"{HEADLINE_FRACTION:.0%} of the true-labels student")
    ax.set_xscale("log")
    if grid:
        ax.set_xticks(grid, [f"{x:g}" for x in grid])
        ax.minorticks_off()
    ax.set_xlabel(_x_label(summary))
    ax.set_ylabel(f"{metric_label} (mean ± std over seeds)")
    ax.set_title(f"{metric_label[0].upper()}{metric_label[1:]} vs ε — "
                 f"neighbors={summary.sweep.relation}, δ={summary.sweep.delta:g}")
    ax.grid(True, which="major", alpha=0.3)
    fig.legend(loc="outside lower center", ncols=2, fontsize="small", frameon=False)
    return fig


def make_plots(summary: Summary) -> dict[str, Figure]:
    """filename -> figure, for every plot in PLOTS."""
    return {spec.filename: plot_metric_vs_epsilon(summary, spec) for spec in PLOTS}
