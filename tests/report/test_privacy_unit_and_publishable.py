"""Every report table that prints an epsilon names its unit and marks PATE's teacher-level rows under add_remove;
the publishable form of a report leaves out every statistic the epsilons do not cover."""

import csv
import io
import json

import yaml

from pate.report.__main__ import main
from pate.report.generate import write_report
from pate.report.units import TEACHER_LEVEL_NOTE
from pate.run_record import NOT_COVERED_BY_EPSILON
from tests.report.test_axis import _query_sweep, _teacher_sweep


def _mixed_sweep(root, job_factory, relation="add_remove"):
    """gaussian_pate (teacher votes) beside dp_sgd (records) at target epsilon 1 and 4, one seed."""
    make_metrics, write_job = job_factory
    sweep = root / "mixed"
    sweep.mkdir()
    task = ["compare=gaussian_pate,dp_sgd", "target_epsilon=1.0,4.0", "seed=0", f"neighbors={relation}"]
    (sweep / "multirun.yaml").write_text(
        yaml.safe_dump({"hydra": {"overrides": {"task": task}}, "report": "accuracy_vs_epsilon"})
    )
    job = 0
    for method in ("gaussian_pate", "dp_sgd"):
        for epsilon in (1.0, 4.0):
            metrics = make_metrics("gaussian_pate", epsilon, 0, relation=relation)
            if method == "dp_sgd":
                for key in ("aggregator", "num_teachers", "teacher_accuracy"):
                    del metrics[key]
                neighbour = "one record added or removed" if relation == "add_remove" else "one record replaced"
                metrics.update(
                    method="dp_sgd",
                    mechanism="DP-SGD(linear probe)",
                    privacy_unit=neighbour,
                    record_level=True,
                    reference=None,
                )
            write_job(
                sweep,
                str(job),
                [f"compare={method}", f"target_epsilon={epsilon}", "seed=0", f"neighbors={relation}"],
                metrics,
            )
            job += 1
    return sweep


def test_teacher_level_rows_are_marked_and_said_not_comparable(tmp_path, job_factory):
    sweep = _mixed_sweep(tmp_path, job_factory)
    write_report(sweep)
    text = (sweep / "report.md").read_text()
    assert (
        "One neighbour: `dp_sgd`: one record added or removed (record-level); `gaussian_pate`: one teacher added "
        "or removed (teacher-level: NOT a record-level guarantee)."
    ) in text
    assert "| gaussian_pate | 1.000 | 1.000 | teacher-level ‡ |" in text
    assert "| dp_sgd | 1.000 | 1.000 | record-level |" in text
    assert TEACHER_LEVEL_NOTE in text and "- **gaussian_pate ‡**:" in text and "- **dp_sgd**:" in text
    rows = list(csv.DictReader(io.StringIO((sweep / "results.csv").read_text())))
    assert {(row["method"], row["record_level"]) for row in rows} == {("gaussian_pate", "false"), ("dp_sgd", "true")}


def test_a_replace_sweep_has_no_teacher_level_mark(tmp_path, job_factory):
    sweep = _mixed_sweep(tmp_path, job_factory, relation="replace")
    write_report(sweep)
    text = (sweep / "report.md").read_text()
    assert "‡" not in text and "| gaussian_pate | 1.000 | 1.000 | record-level |" in text
    assert "`gaussian_pate`: one teacher's vote replaced (record-level)" in text


def _not_covered(column: str) -> bool:
    return any(column == path or column.startswith(path + ".") for path in NOT_COVERED_BY_EPSILON)


def test_the_publishable_form_leaves_out_every_statistic_epsilon_does_not_cover(sweep_dir, tmp_path):
    for path in sweep_dir.glob("*/metrics.json"):  # a data-dependent release's statistics too
        metrics = json.loads(path.read_text())
        metrics.update(
            epsilon_data_dependent=0.5,
            privacy_data_dependent="raw bound",
            data_dependent_test={"passed": True, "not_itself_private": {"distance": 3}},
        )
        path.write_text(json.dumps(metrics))
    write_report(sweep_dir, tmp_path / "full")
    assert main([str(sweep_dir), "--out", str(tmp_path / "public"), "--publishable"]) == 0

    full = (tmp_path / "full" / "results.csv").read_text().splitlines()[0].split(",")
    assert {
        "teacher_accuracy",
        "reference.majority_vote.student_accuracy",
        "seed",
        "epsilon_data_dependent",
        "data_dependent_test.not_itself_private.distance",
    } <= set(full)  # the diagnostic form keeps them
    public_csv = (tmp_path / "public" / "results.csv").read_text()
    public = public_csv.splitlines()[0].split(",")
    assert [column for column in public if _not_covered(column)] == []
    assert {
        "epsilon",
        "neighbors",
        "delta",
        "student_accuracy",
        "privacy_unit",
        "record_level",
        "data_dependent_test.passed",
    } <= set(public)
    assert "seed=" not in public_csv

    report = (tmp_path / "public" / "report.md").read_text()
    assert "Publishable form (`pate-report --publishable`)" in report
    for absent in (
        "teacher majority vote (non-private)",
        "true labels (non-private)",
        "raw data-dependent",
        "seed=",
        "| seed |",
        "seed: 0",
        "no privacy cost",
        "0.8850",
    ):
        assert absent not in report, absent
    assert "- Seeds: 2 (their values left out" in report
    diagnostic = (tmp_path / "full" / "report.md").read_text()
    assert "## Reference lines (not covered by ε)" in diagnostic and "no privacy cost" not in diagnostic


def test_an_axis_report_marks_teacher_level_rows_and_its_publishable_form_drops_the_diagnostics(tmp_path, job_factory):
    sweep = _teacher_sweep(tmp_path, job_factory, lambda teachers, epsilon: 0.85)
    for path in sweep.glob("*/metrics.json"):
        metrics = json.loads(path.read_text())
        teachers = "num_teachers" in metrics
        metrics.update(
            neighbors="add_remove",
            record_level=not teachers,
            privacy_unit="one teacher added or removed" if teachers else "one record added or removed",
        )
        path.write_text(json.dumps(metrics))
    write_report(sweep, tmp_path / "full")
    text = (tmp_path / "full" / "report.md").read_text()
    assert "| gaussian_pate | 1 | teacher-level ‡ |" in text and TEACHER_LEVEL_NOTE in text
    assert "## Reference lines (not covered by ε)" in text and "| mean teacher's accuracy" in text

    write_report(sweep, tmp_path / "public", publishable=True)
    public = (tmp_path / "public" / "report.md").read_text()
    assert "| gaussian_pate | 1 | teacher-level ‡ |" in public and "| majority class |" in public
    for absent in ("teacher's accuracy", "| the teachers' non-private majority vote", "| student on", "0, 1."):
        assert absent not in public, absent
    header = (tmp_path / "public" / "results.csv").read_text().splitlines()[0].split(",")
    assert [column for column in header if _not_covered(column)] == []


def test_a_publishable_query_report_has_no_headline_against_the_true_labels(tmp_path, job_factory):
    sweep = _query_sweep(tmp_path, job_factory, lambda method, q, seed: 0.86)
    write_report(sweep, tmp_path / "public", publishable=True)
    text = (tmp_path / "public" / "report.md").read_text()
    assert "Left out of this publishable form: the headline is measured against the student on the true labels" in text
    assert "| student on the true labels" not in text and "Cheapest setting" not in text


def test_a_publishable_axis_report_names_no_seed_of_a_job_that_never_started(tmp_path, job_factory):
    """An outside audit: a query sweep cut short printed its never-started jobs' raw overrides, seed=1 among them,
    beside 'Seeds: 1 (their values left out)', and so gave the finished runs' seed away as 0."""
    sweep = _query_sweep(tmp_path, job_factory, lambda method, q, seed: 0.86)
    for job in sweep.iterdir():
        if (
            job.is_dir()
            and (job / "metrics.json").is_file()
            and json.loads((job / "metrics.json").read_text())["seed"] == 1
        ):
            for file in job.rglob("*"):
                if file.is_file():
                    file.unlink()
            for folder in sorted(job.rglob("*"), reverse=True):
                folder.rmdir()
            job.rmdir()
    write_report(sweep, tmp_path / "full")
    assert "never started" in (tmp_path / "full" / "report.md").read_text()
    write_report(sweep, tmp_path / "public", publishable=True)
    public = (tmp_path / "public" / "report.md").read_text()
    assert "never started" in public and "seed=" not in public
