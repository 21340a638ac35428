"""Grouping by (method, epsilon), statistics over seeds, references, calibration flag and the headline."""

import math

import pytest

from pate.report import Stat, collect_sweep, headline, summarize
from pate.report.summary import ACHIEVED, NON_PRIVATE, TARGET, calibration_miss
from pate.report.tables import results_table


def test_stat_closed_form():
    stat = Stat.of([1.0, 2.0, 4.0])
    assert stat.mean == pytest.approx(7 / 3)
    assert stat.std == pytest.approx(math.sqrt(((1 - 7 / 3) ** 2 + (2 - 7 / 3) ** 2 + (4 - 7 / 3) ** 2) / 2))
    assert Stat.of([0.5]) == Stat(0.5, None, 1)
    with pytest.raises(ValueError, match="values"):
        Stat.of([])


def test_cells_group_by_method_and_target_over_seeds(sweep_dir):
    summary = summarize(collect_sweep(sweep_dir))
    keys = [(c.method, c.axis, c.epsilon) for c in summary.cells]
    assert keys == [
        ("gaussian_pate", TARGET, 1.0),
        ("gaussian_pate", TARGET, 4.0),
        ("stable_topk_paper", TARGET, 1.0),
        ("stable_topk_paper", TARGET, 4.0),
    ]
    cell = summary.cells[3]
    assert sorted(run.metrics["seed"] for run in cell.runs) == [0, 1]
    assert cell.stats["student_accuracy"].mean == pytest.approx(0.871)
    assert cell.stats["student_accuracy"].std == pytest.approx(0.002 / math.sqrt(2))
    assert cell.stats["mean_k"].mean == pytest.approx(6.95)
    assert summary.cells[0].stats["mean_k"] is None  # not a top-k method
    assert cell.stats["epsilon"] == Stat(4.0, 0.0, 2)


def test_references_are_taken_once_per_seed(sweep_dir):
    summary = summarize(collect_sweep(sweep_dir))
    true_acc = summary.references["true_labels"]["student_accuracy"]
    # 8 jobs but 2 seeds: the std is over the two per-seed values, not over jobs.
    assert true_acc.n == 2
    assert true_acc.mean == pytest.approx(0.885)
    assert true_acc.std == pytest.approx(0.002 / math.sqrt(2))
    assert summary.warnings == ()


def test_inconsistent_reference_within_a_seed_is_warned(sweep_dir):
    import json

    path = sweep_dir / "0" / "metrics.json"
    metrics = json.loads(path.read_text())
    metrics["reference"]["true_labels"]["student_accuracy"] = 0.5
    path.write_text(json.dumps(metrics))
    warnings = summarize(collect_sweep(sweep_dir)).warnings
    assert len(warnings) == 1 and "true_labels.student_accuracy differs between the jobs of seed 0" in warnings[0]


def test_headline_smallest_reaching_epsilon_or_not_reached(sweep_dir):
    lines = {h.method: h for h in headline(summarize(collect_sweep(sweep_dir)))}
    assert lines["stable_topk_paper"].threshold == pytest.approx(0.97 * 0.885)
    assert lines["stable_topk_paper"].reached.epsilon == 4.0  # eps 1 gives 0.841 < 0.85845 <= 0.871
    assert lines["gaussian_pate"].reached is None  # 0.851 at best
    assert lines["gaussian_pate"].best.epsilon == 4.0


def test_headline_takes_the_smallest_epsilon_even_if_a_larger_one_dips(tmp_path, job_factory):
    make_metrics, write_job = job_factory
    sweep = tmp_path / "s"
    sweep.mkdir()
    (sweep / "multirun.yaml").write_text("hydra: {overrides: {task: []}}\nreport: accuracy_vs_epsilon\n")
    for job, (eps, acc) in enumerate([(0.5, 0.80), (1.0, 0.87), (2.0, 0.85), (4.0, 0.88)]):
        write_job(sweep, str(job), [], make_metrics("gaussian_pate", eps, 0, accuracy=acc))
    (line,) = headline(summarize(collect_sweep(sweep)))
    assert line.reached.epsilon == 1.0
    (line,) = headline(summarize(collect_sweep(sweep)), fraction=1.0)  # 0.884 needed
    assert line.reached is None and line.best.epsilon == 4.0
    with pytest.raises(ValueError, match="fraction=0"):
        headline(summarize(collect_sweep(sweep)), fraction=0)


def test_headline_without_references(tmp_path, job_factory):
    make_metrics, write_job = job_factory
    sweep = tmp_path / "s"
    sweep.mkdir()
    (sweep / "multirun.yaml").write_text("hydra: {overrides: {task: []}}\nreport: accuracy_vs_epsilon\n")
    metrics = make_metrics("gaussian_pate", 1.0, 0)
    metrics["reference"] = None
    write_job(sweep, "0", [], metrics)
    summary = summarize(collect_sweep(sweep))
    assert summary.references == {}
    assert headline(summary)[0].threshold is None and headline(summary)[0].reached is None


@pytest.mark.parametrize("achieved, missed", [(4.036, False), (3.964, False), (4.044, True), (3.956, True)])
def test_calibration_flag_at_one_percent(achieved, missed, job_factory):
    make_metrics, _ = job_factory
    assert calibration_miss(make_metrics("gaussian_pate", 4.0, 0, epsilon=achieved)) is missed


def test_runs_without_target_group_by_achieved_epsilon(tmp_path, job_factory):
    make_metrics, write_job = job_factory
    sweep = tmp_path / "s"
    sweep.mkdir()
    (sweep / "multirun.yaml").write_text("hydra: {overrides: {task: []}}\nreport: accuracy_vs_epsilon\n")
    for job, (eps, seed) in enumerate([(2.5, 0), (2.5 + 1e-12, 1), (0.7, 0)]):
        metrics = make_metrics("gaussian_pate", None, seed, epsilon=eps)
        write_job(sweep, str(job), [], metrics)
    non_private = make_metrics("gaussian_pate", None, 0, epsilon=1.0)
    non_private.update(private=False, epsilon=None, method="stable_topk_paper")
    write_job(sweep, "3", [], non_private)
    summary = summarize(collect_sweep(sweep))
    assert [(c.method, c.axis, c.epsilon, len(c.runs)) for c in summary.cells] == [
        ("gaussian_pate", ACHIEVED, 0.7, 1),
        ("gaussian_pate", ACHIEVED, 2.5, 2),
        ("stable_topk_paper", NON_PRIVATE, None, 1),
    ]
    lines = {h.method: h for h in headline(summary)}
    assert lines["stable_topk_paper"].best is None  # non-private only: no epsilon to report


def test_same_seed_twice_in_a_cell_is_refused(sweep_dir, job_factory):
    make_metrics, write_job = job_factory
    overrides = ["aggregator=gaussian_pate", "target_epsilon=1.0", "seed=0", "neighbors=replace"]
    write_job(sweep_dir, "9", overrides + ["aggregator.tau=3"], make_metrics("gaussian_pate", 1.0, 0))
    with pytest.raises(
        ValueError,
        match=r"jobs 4 and 9 share method='gaussian_pate'.*seed=0; "
        r"they differ by \['aggregator.tau=3'\]",
    ):
        summarize(collect_sweep(sweep_dir))


def test_metric_null_in_some_runs_is_averaged_over_the_others(sweep_dir, job_factory):
    """A run that answered no query has no label F1 or student: the cell's statistic is over the runs that
    have one, its n says how many, and the table marks it."""
    make_metrics, write_job = job_factory
    metrics = make_metrics("gaussian_pate", 1.0, 2)
    metrics.update(label_f1=None, student_accuracy=None, student_f1=None, answered=0, answered_fraction=0.0)
    write_job(sweep_dir, "9", [], metrics)
    summary = summarize(collect_sweep(sweep_dir))
    cell = next(c for c in summary.cells if c.method == "gaussian_pate" and c.epsilon == 1.0)
    assert len(cell.runs) == 3
    assert cell.stats["label_f1"].n == 2 and cell.stats["answered_fraction"].n == 3
    assert "(n=2)" in results_table(summary)


def test_headline_of_a_method_that_never_answered(sweep_dir, job_factory):
    """A method with no answered query anywhere has no student: the headline says not reached, no crash."""
    make_metrics, write_job = job_factory
    for job, eps in (("9", 1.0), ("10", 2.0)):
        metrics = make_metrics("stable_topk_paper", eps, 0)
        metrics["method"] = "stable_topk_gumbel"
        metrics.update(
            label_f1=None,
            label_accuracy=None,
            student_accuracy=None,
            student_f1=None,
            mean_k=None,
            answered=0,
            answered_fraction=0.0,
        )
        write_job(sweep_dir, job, [], metrics)
    lines = {line.method: line for line in headline(summarize(collect_sweep(sweep_dir)))}
    assert lines["stable_topk_gumbel"].private
    assert lines["stable_topk_gumbel"].reached is None and lines["stable_topk_gumbel"].best is None


def test_each_student_kind_has_its_own_reference(tmp_path, job_factory):
    """A sweep over supervised and pseudo-labelling students: the reference students differ by kind, which is
    no inconsistency; each method's headline threshold is its own kind's true-labels student."""
    from pate.report import write_report

    make_metrics, write_job = job_factory
    sweep = tmp_path / "s"
    sweep.mkdir()
    (sweep / "multirun.yaml").write_text("hydra: {overrides: {task: []}}\nreport: accuracy_vs_epsilon\n")
    job = 0
    for semi, true_acc in (("supervised", 0.88), ("pseudo_label", 0.90)):
        for seed in (0, 1):
            metrics = make_metrics("gaussian_pate", 4.0, seed, accuracy=0.86)
            metrics["method"] = "gaussian_pate" + ("" if semi == "supervised" else f"+{semi}")
            metrics["student_semi"] = semi
            metrics["reference"]["true_labels"]["student_accuracy"] = true_acc
            write_job(sweep, str(job), [f"seed={seed}"], metrics)
            job += 1
    summary = summarize(collect_sweep(sweep))
    assert summary.warnings == ()
    assert summary.references["true_labels"]["student_accuracy"].mean == pytest.approx(0.88)
    assert summary.references["true_labels+pseudo_label"]["student_accuracy"].mean == pytest.approx(0.90)
    assert "majority_class+pseudo_label" not in summary.references
    lines = {h.method: h for h in headline(summary)}
    assert lines["gaussian_pate"].threshold == pytest.approx(0.97 * 0.88)
    assert lines["gaussian_pate+pseudo_label"].threshold == pytest.approx(0.97 * 0.90)
    assert lines["gaussian_pate"].reached is not None and lines["gaussian_pate+pseudo_label"].reached is None
    write_report(sweep, tmp_path / "out")
    report = (tmp_path / "out" / "report.md").read_text()
    assert "gaussian_pate+pseudo_label 0.8730" in report
    assert "student on the true labels (non-private), pseudo_label student" in report
