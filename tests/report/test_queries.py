"""The query-budget report: grouping by (method, epsilon, Q), the per-Q reference, the cheapest-setting
headline, and its routing from write_report."""

from __future__ import annotations

import pytest

from pate.report.collect import collect_sweep
from pate.report.generate import write_report
from pate.report.queries import query_headline, summarize_queries


def _query_sweep(root, job_factory, accuracy):
    """2 methods x Q in (100, 400) x 2 seeds at target epsilon 4; accuracy(method, q, seed); the true-labels
    student is 0.85 + 0.01 * Q / 100."""
    make_metrics, write_job = job_factory
    sweep = root / "sweep"
    sweep.mkdir()
    (sweep / "multirun.yaml").write_text("hydra:\n  overrides:\n    task: [experiment=query_sweep]\n"
                                         "  sweeper:\n    _target_: hydra._internal.core_plugins.basic_sweeper.BasicSweeper\n    params: {compare: 'gaussian_pate,stable_topk_paper', "
                                         "data.num_queries: '100,400', seed: '0,1'}\n"
                                         "report: accuracy_vs_queries\n")
    job = 0
    for method in ("gaussian_pate", "stable_topk_paper"):
        for q in (100, 400):
            for seed in (0, 1):
                m = make_metrics(method, 4.0, seed, accuracy=accuracy(method, q, seed))
                m["queries"], m["answered"] = q, round(q * m["answered_fraction"])
                m["reference"]["true_labels"]["student_accuracy"] = 0.85 + 0.01 * q / 100
                m["reference"]["majority_class"] = {"student_accuracy": 0.80}
                write_job(sweep, str(job), [f"compare={method}", f"data.num_queries={q}", f"seed={seed}",
                                            "experiment=query_sweep"], m)
                job += 1
    return sweep


def test_cells_group_by_method_epsilon_and_queries(tmp_path, job_factory):
    sweep = _query_sweep(tmp_path, job_factory, lambda method, q, seed: 0.80 + q / 10000 + 0.001 * seed)
    summary = summarize_queries(collect_sweep(sweep, mixed_queries=True))
    assert summary.query_counts == (100, 400) and len(summary.cells) == 4
    cell = next(c for c in summary.cells if (c.method, c.queries) == ("stable_topk_paper", 400))
    assert cell.student_accuracy.n == 2 and cell.student_accuracy.mean == pytest.approx(0.8405)
    assert summary.true_labels[400].mean == pytest.approx(0.89) and summary.majority_class.mean == 0.80


def test_the_headline_is_the_fewest_queries_that_reach_the_threshold(tmp_path, job_factory):
    # threshold 0.97 x 0.89 = 0.8633: stable_topk_paper reaches it with 100 queries, gaussian_pate only with 400
    accuracy = {("stable_topk_paper", 100): 0.87, ("stable_topk_paper", 400): 0.88, ("gaussian_pate", 100): 0.85,
                ("gaussian_pate", 400): 0.87}
    sweep = _query_sweep(tmp_path, job_factory, lambda method, q, seed: accuracy[(method, q)])
    threshold, cheapest = query_headline(summarize_queries(collect_sweep(sweep, mixed_queries=True)))
    assert threshold == pytest.approx(0.97 * 0.89)
    assert (cheapest.method, cheapest.queries) == ("stable_topk_paper", 100)


def test_write_report_routes_a_query_sweep_to_the_query_report(tmp_path, job_factory):
    sweep = _query_sweep(tmp_path, job_factory, lambda method, q, seed: 0.86)
    report = write_report(sweep)
    text = (sweep / "report.md").read_text()
    assert text.startswith("# Query-budget report: neighbors=replace")
    assert text.count("| stable_topk_paper | 4 | 0.8600 ± 0.0000") == 1 and "| gaussian_pate | 4 | 0.8600" in text
    assert "No setting reaches 97%" in text  # 0.86 < 0.97 x 0.89
    assert sorted(report.files) == ["accuracy_vs_queries.png", "report.md", "results.csv"]
    assert (sweep / "results.csv").read_text().count("\n") == 1 + 8
