"""The axis reports: the query-budget report (grouping by (method, epsilon, Q), the per-Q reference, the
cheapest-setting headline) and the teacher-count report (per-T references, the best T at each epsilon), and their
routing from write_report."""

from __future__ import annotations

import json

import pytest

from pate.report.axis import QUERIES, TEACHERS, best_teachers, query_headline, summarize_axis
from pate.report.collect import collect_sweep
from pate.report.generate import write_report


def _query_sweep(root, job_factory, accuracy):
    """2 methods x Q in (100, 400) x 2 seeds at target epsilon 4; accuracy(method, q, seed); the true-labels
    student is 0.85 + 0.01 * Q / 100."""
    make_metrics, write_job = job_factory
    sweep = root / "sweep"
    sweep.mkdir()
    (sweep / "multirun.yaml").write_text(
        "hydra:\n  overrides:\n    task: [experiment=query_sweep]\n"
        "  sweeper:\n    _target_: hydra._internal.core_plugins.basic_sweeper.BasicSweeper\n    params: {compare: 'gaussian_pate,stable_topk_paper', "
        "data.num_queries: '100,400', seed: '0,1'}\n"
        "report: accuracy_vs_queries\n"
    )
    job = 0
    for method in ("gaussian_pate", "stable_topk_paper"):
        for q in (100, 400):
            for seed in (0, 1):
                m = make_metrics(method, 4.0, seed, accuracy=accuracy(method, q, seed))
                m["queries"], m["answered"] = q, round(q * m["answered_fraction"])
                m["reference"]["true_labels"]["student_accuracy"] = 0.85 + 0.01 * q / 100
                m["reference"]["majority_class"] = {"student_accuracy": 0.80}
                write_job(
                    sweep,
                    str(job),
                    [f"compare={method}", f"data.num_queries={q}", f"seed={seed}", "experiment=query_sweep"],
                    m,
                )
                job += 1
    return sweep


def test_cells_group_by_method_epsilon_and_queries(tmp_path, job_factory):
    sweep = _query_sweep(tmp_path, job_factory, lambda method, q, seed: 0.80 + q / 10000 + 0.001 * seed)
    summary = summarize_axis(collect_sweep(sweep, axis="queries"), QUERIES)
    assert summary.values == (100, 400) and len(summary.cells) == 4
    cell = next(c for c in summary.cells if (c.method, c.value) == ("stable_topk_paper", 400))
    assert cell.student_accuracy.n == 2 and cell.student_accuracy.mean == pytest.approx(0.8405)
    assert summary.references["reference.true_labels.student_accuracy"][400].mean == pytest.approx(0.89)
    assert summary.majority_class.mean == 0.80


def test_the_headline_is_the_fewest_queries_that_reach_the_threshold(tmp_path, job_factory):
    # threshold 0.97 x 0.89 = 0.8633: stable_topk_paper reaches it with 100 queries, gaussian_pate only with 400
    accuracy = {
        ("stable_topk_paper", 100): 0.87,
        ("stable_topk_paper", 400): 0.88,
        ("gaussian_pate", 100): 0.85,
        ("gaussian_pate", 400): 0.87,
    }
    sweep = _query_sweep(tmp_path, job_factory, lambda method, q, seed: accuracy[(method, q)])
    threshold, cheapest = query_headline(summarize_axis(collect_sweep(sweep, axis="queries"), QUERIES))
    assert threshold == pytest.approx(0.97 * 0.89)
    assert (cheapest.method, cheapest.value) == ("stable_topk_paper", 100)


def test_write_report_routes_a_query_sweep_to_the_query_report(tmp_path, job_factory):
    sweep = _query_sweep(tmp_path, job_factory, lambda method, q, seed: 0.86)
    report = write_report(sweep)
    text = (sweep / "report.md").read_text()
    assert text.startswith("# Query-budget report: neighbors=replace")
    assert text.count("| stable_topk_paper | 4 | record-level | 0.8600 ± 0.0000") == 1
    assert "| gaussian_pate | 4 | record-level | 0.8600" in text
    assert "No setting reaches 97%" in text  # 0.86 < 0.97 x 0.89
    assert sorted(report.files) == ["accuracy_vs_queries.png", "report.md", "results.csv"]
    assert (sweep / "results.csv").read_text().count("\n") == 1 + 8


def _teacher_sweep(root, job_factory, accuracy):
    """gaussian_pate x T in (100, 400) x target epsilon in (1, 8) x 2 seeds, one DP-SGD job (no teachers);
    accuracy(T, epsilon); the vote and its student are better with fewer teachers."""
    make_metrics, write_job = job_factory
    sweep = root / "sweep"
    sweep.mkdir()
    (sweep / "multirun.yaml").write_text(
        "hydra:\n  overrides:\n    task: [experiment=teacher_sweep]\nreport: accuracy_vs_teachers\n"
    )
    job = 0
    for teachers in (100, 400):
        for epsilon in (1.0, 8.0):
            for seed in (0, 1):
                m = make_metrics("gaussian_pate", epsilon, seed, accuracy=accuracy(teachers, epsilon) + 0.001 * seed)
                m["num_teachers"], m["teacher_accuracy"] = teachers, 0.88 - teachers / 10000
                m["reference"]["majority_vote"].update(
                    label_accuracy=0.90 - teachers / 20000, student_accuracy=0.87 - teachers / 20000
                )
                m["reference"]["majority_class"] = {"student_accuracy": 0.80}
                write_job(
                    sweep,
                    str(job),
                    [f"partition.num_teachers={teachers}", f"target_epsilon={epsilon}", f"seed={seed}"],
                    m,
                )
                job += 1
    dp_sgd = {
        key: value
        for key, value in make_metrics("gaussian_pate", 8.0, 0).items()
        if key not in ("num_teachers", "teacher_accuracy")
    }
    write_job(sweep, str(job), ["compare=dp_sgd", "target_epsilon=8.0", "seed=0"], {**dp_sgd, "method": "dp_sgd"})
    return sweep


def test_the_teacher_report_has_per_t_references_and_the_best_t_at_each_epsilon(tmp_path, job_factory):
    # at epsilon 1 the noise favours 400 teachers, at epsilon 8 the better vote of 100 teachers wins
    accuracy = {(100, 1.0): 0.82, (400, 1.0): 0.84, (100, 8.0): 0.86, (400, 8.0): 0.85}
    sweep = _teacher_sweep(tmp_path, job_factory, lambda t, eps: accuracy[(t, eps)])
    summary = summarize_axis(collect_sweep(sweep, axis="num_teachers"), TEACHERS)
    assert summary.values == (100, 400) and len(summary.cells) == 4
    assert {eps: (c.value, round(c.student_accuracy.mean, 4)) for eps, c in best_teachers(summary).items()} == {
        1.0: (400, 0.8405),
        8.0: (100, 0.8605),
    }
    vote = summary.references["reference.majority_vote.label_accuracy"]
    assert vote[100].mean == pytest.approx(0.895) and vote[400].mean == pytest.approx(0.88)
    assert summary.references["teacher_accuracy"][400].mean == pytest.approx(0.84)
    assert summary.warnings == ("methods ['dp_sgd'] record no num_teachers: left out of this report",)

    report = write_report(sweep)
    text = (sweep / "report.md").read_text()
    assert text.startswith("# Teacher-count report: neighbors=replace")
    assert "- ε 1: **T = 400** (gaussian_pate, student accuracy 0.8405 ± 0.0007)" in text
    assert "| gaussian_pate | 8 | record-level | 0.8605 ± 0.0007 | 0.8505 ± 0.0007 |" in text
    assert "| the teachers' non-private majority vote on the queries | 0.8950 ± 0.0000 | 0.8800 ± 0.0000 |" in text
    assert sorted(report.files) == ["accuracy_vs_teachers.png", "report.md", "results.csv"]
    rows = (sweep / "results.csv").read_text().splitlines()
    assert len(rows) == 1 + 8 and "num_teachers" in rows[0].split(",")


def test_an_axis_report_needs_runs_with_its_field(tmp_path, job_factory):
    sweep = _query_sweep(tmp_path, job_factory, lambda method, q, seed: 0.86)
    for path in sweep.glob("*/metrics.json"):  # runs without teachers (DP-SGD, Private-kNN)
        metrics = json.loads(path.read_text())
        del metrics["num_teachers"], metrics["teacher_accuracy"]
        path.write_text(json.dumps(metrics))
    with pytest.raises(ValueError, match="no finished job records 'num_teachers'"):
        summarize_axis(collect_sweep(sweep, axis="queries"), TEACHERS)
