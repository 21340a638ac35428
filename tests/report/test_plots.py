"""The figures: one labelled error-bar series per method on a log-x axis, reference lines, relation in titles."""

import io

import pytest
from matplotlib.container import ErrorbarContainer

from pate.report import collect_sweep, summarize
from pate.report.plots import PLOTS, make_plots, plot_metric_vs_epsilon
from pate.report.summary import HEADLINE_FRACTION


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
    labelled = {line.get_label(): line.get_ydata()[0] for line in ax.get_lines()
                if not line.get_label().startswith("_")}
    truth = summary.references["true_labels"]["student_accuracy"].mean
    assert labelled["reference: student on the true labels (non-private)"] == pytest.approx(truth)
    assert labelled["reference: teacher majority vote (non-private)"] == pytest.approx(0.875)
    assert labelled["97% of the true-labels student"] == pytest.approx(HEADLINE_FRACTION * truth)


def test_add_remove_relation_in_titles(tmp_path, sweep_factory):
    summary = summarize(collect_sweep(sweep_factory(tmp_path / "s", relation="add_remove")))
    for fig in make_plots(summary).values():
        assert "neighbors=add_remove" in fig.axes[0].get_title()


def test_figure_renders_to_png(summary):
    buffer = io.BytesIO()
    make_plots(summary)["label_f1_vs_epsilon.png"].savefig(buffer, format="png", dpi=50)
    assert buffer.getvalue()[:8] == b"\x89PNG\r\n\x1a\n"
