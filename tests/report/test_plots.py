"""The figures: one labelled error-bar series per method on a log-x axis, reference lines, relation in titles."""

import dataclasses
import io
from pathlib import Path

import pytest
from matplotlib.container import ErrorbarContainer

from pate.report import collect_sweep, summarize
from pate.report.collect import Run, Sweep
from pate.report.plots import PLOTS, make_plots, plot_metric_vs_epsilon
from pate.report.summary import HEADLINE_FRACTION, Summary


@pytest.fixture
def summary(sweep_dir):
    return summarize(collect_sweep(sweep_dir))


@pytest.mark.parametrize("spec", PLOTS, ids=lambda s: s.filename)
def test_one_error_bar_series_per_method(summary, spec):
    ax = plot_metric_vs_epsilon(summary, spec).axes[0]
    series = [c for c in ax.containers if isinstance(c, ErrorbarContainer)]
    assert [c.get_label() for c in series] == ["gaussian_pate", "stable_topk_paper"]
    for container, method in zip(series, summary.methods):
        x, y = container.lines[0].get_data()
        cells = [c for c in summary.cells if c.method == method]
        assert list(x) == [1.0, 4.0]
        assert list(y) == pytest.approx([c.stats[spec.metric].mean for c in cells])
    assert ax.get_xscale() == "log"
    assert "neighbors=replace" in ax.get_title() and "δ=1e-06" in ax.get_title()
    assert "neighbors=replace" in ax.get_xlabel() and ax.get_ylabel()
    assert ax.figure.legends and len(ax.figure.legends[0].get_texts()) >= 2


def test_accuracy_plot_draws_references_and_threshold(summary):
    ax = make_plots(summary)["accuracy_vs_epsilon.png"].axes[0]
    labelled = {
        line.get_label(): line.get_ydata()[0] for line in ax.get_lines() if not line.get_label().startswith("_")
    }
    truth = summary.references["true_labels"]["student_accuracy"].mean
    assert labelled["reference: student on the true labels of the 600 queries (non-private)"] == pytest.approx(truth)
    assert labelled[
        "reference: student on the teachers' majority vote (non-private): the PATE aggregators' privacy-free limit"
    ] == pytest.approx(0.875)
    assert labelled["97% of the true-labels student"] == pytest.approx(HEADLINE_FRACTION * truth)


def test_add_remove_relation_in_titles(tmp_path, sweep_factory):
    summary = summarize(collect_sweep(sweep_factory(tmp_path / "s", relation="add_remove")))
    for fig in make_plots(summary).values():
        assert "neighbors=add_remove" in fig.axes[0].get_title()


def test_figure_renders_to_png(summary):
    buffer = io.BytesIO()
    make_plots(summary)["label_f1_vs_epsilon.png"].savefig(buffer, format="png", dpi=50)
    assert buffer.getvalue()[:8] == b"\x89PNG\r\n\x1a\n"


def _legend_summary(make_metrics) -> Summary:
    """A tiny in-memory table: GaussianPATE, DP-SGD with its own privacy-free limit (its recipe, so its limit, changes
    between epsilon 1 and 4) and StableTopK answering no query, 250 queries, 2 seeds."""
    runs = []
    for method in ("gaussian_pate", "dp_sgd", "stable_topk_paper"):
        for eps in (1.0, 4.0):
            for seed in (0, 1):
                metrics = make_metrics("gaussian_pate" if method == "dp_sgd" else method, eps, seed)
                metrics.update(method=method, queries=250, answered=min(metrics["answered"], 250))
                metrics["answered_fraction"] = metrics["answered"] / 250
                if method == "dp_sgd":
                    limit = 0.88 if eps == 1.0 else 0.90
                    metrics.update(
                        privacy_unit="one record replaced",
                        record_level=True,
                        num_teachers=None,
                        student_accuracy=limit - 0.01,
                    )
                    metrics["reference"] = {
                        "true_labels": metrics["reference"]["true_labels"],
                        "noise_free": {"student_accuracy": limit + 0.001 * seed, "label_f1": 0.7},
                    }
                if method == "stable_topk_paper":
                    metrics.update(
                        answered=0,
                        answered_fraction=0.0,
                        mean_k=None,
                        label_f1=None,
                        label_accuracy=None,
                        student_accuracy=None,
                        student_f1=None,
                    )
                runs.append(Run(str(len(runs)), (), {}, metrics))
    return summarize(Sweep(Path("."), (), tuple(runs), (), relation="replace", delta=1e-6))


def _legend(fig) -> list[str]:
    return [text.get_text() for text in fig.legends[0].get_texts()]


def test_legend_names_the_references_limits_and_a_method_without_answers(job_factory):
    """Issue 58: the figure must not read as "private beats non-private": the true-labels student is named with the
    query count of the runs, a method's own privacy-free limit is drawn and named, and a method answering nothing
    is named rather than left out."""
    make_metrics, _ = job_factory
    figures = make_plots(_legend_summary(make_metrics))
    accuracy = figures["accuracy_vs_epsilon.png"]
    assert _legend(accuracy) == [
        "dp_sgd",
        "dp_sgd privacy-free limit (not private)",
        "gaussian_pate",
        "stable_topk_paper: answers no query at any ε (no student)",
        "reference: student on the true labels of the 250 queries (non-private)",
        "reference: student on the teachers' majority vote (non-private): the PATE aggregators' privacy-free limit",
        "97% of the true-labels student",
    ]
    limit = next(
        line for line in accuracy.axes[0].get_lines() if line.get_label() == "dp_sgd privacy-free limit (not private)"
    )
    assert list(limit.get_xdata()) == [1.0, 4.0]
    assert list(limit.get_ydata()) == pytest.approx([0.8805, 0.9005])  # the mean over seeds at each epsilon
    assert limit.get_linestyle() == "--" and limit.get_color() == "C0"  # dashed, in dp_sgd's colour
    labels = _legend(figures["label_f1_vs_epsilon.png"])
    assert "dp_sgd privacy-free limit (not private)" in labels
    assert "stable_topk_paper: answers no query at any ε (no labels)" in labels
    assert "gaussian_pate privacy-free limit (not private)" not in labels
    answered = _legend(figures["answered_vs_epsilon.png"])  # 0 answered is a value: drawn, no note
    assert "stable_topk_paper" in answered and not any("privacy-free" in label for label in answered)


def test_a_method_answering_a_few_queries_but_training_no_student_says_so(job_factory):
    make_metrics, _ = job_factory
    summary = _legend_summary(make_metrics)
    runs = [
        dataclasses.replace(run, metrics={**run.metrics, "answered": 1, "label_f1": 0.4})
        if run.metrics["method"] == "stable_topk_paper" and run.metrics["target_epsilon"] == 4.0
        else run
        for run in summary.sweep.runs
    ]
    summary = summarize(dataclasses.replace(summary.sweep, runs=tuple(runs)))
    labels = _legend(make_plots(summary)["accuracy_vs_epsilon.png"])
    assert "stable_topk_paper: no student at any ε (answers 2 of the 1,000 queries of its 4 runs)" in labels
    assert "stable_topk_paper" in _legend(make_plots(summary)["label_f1_vs_epsilon.png"])  # a point where it answered
