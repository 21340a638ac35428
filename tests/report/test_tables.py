"""results.csv and the markdown tables: rows, order, columns, fixed formats, no absolute paths."""

import csv
import io

import pytest

from pate.report import collect_sweep, summarize
from pate.report.summary import Stat
from pate.report.tables import format_stat, format_value, jobs_table, results_csv, results_table


@pytest.fixture
def summary(sweep_dir):
    return summarize(collect_sweep(sweep_dir))


def _rows(summary):
    return list(csv.DictReader(io.StringIO(results_csv(summary))))


def test_csv_has_one_row_per_job_sorted_by_method_epsilon_seed(summary):
    rows = _rows(summary)
    assert len(rows) == 9
    finished = [(r["method"], float(r["target_epsilon"]), int(r["seed"])) for r in rows if r["status"] == "finished"]
    assert finished == sorted(finished) and len(finished) == 8
    assert finished[0] == ("gaussian_pate", 1.0, 0)
    assert rows[-1]["status"] == "failed" and rows[-1]["job"] == "8" and rows[-1]["student_accuracy"] == ""
    assert rows[-1]["overrides"] == "aggregator=stable_topk_paper target_epsilon=8.0 seed=0"


def test_csv_columns_flatten_nested_objects_and_add_calibration(summary):
    header = results_csv(summary).splitlines()[0].split(",")
    assert header[:5] == ["job", "status", "method", "aggregator", "private"]  # the schema's order
    for column in (
        "noise.sigma",
        "noise.sigma_select",
        "reference.true_labels.student_accuracy",
        "versions.git",
        "artifacts.votes",
        "epsilon_rel_error",
        "calibration_miss",
    ):
        assert column in header
    assert header.index("epsilon_rel_error") == header.index("epsilon") + 1
    row = _rows(summary)[0]
    assert row["noise.sigma"] == "30" and row["noise.sigma_select"] == ""  # gaussian_pate has no sigma_select
    assert row["epsilon_rel_error"] == "0" and row["calibration_miss"] == "false"
    assert row["mean_k"] == "" and row["private"] == "true" and row["delta"] == "1e-06"


def test_tables_hold_no_absolute_path(summary, sweep_dir):
    for text in (results_csv(summary), results_table(summary), jobs_table(summary.sweep)):
        assert str(sweep_dir) not in text and "/tmp" not in text


@pytest.mark.parametrize(
    "value, text",
    [(None, ""), (True, "true"), (3, "3"), (0.1 + 0.2, "0.3"), (1e-6, "1e-06"), (2.9712345678, "2.97123"), ("x", "x")],
)
def test_format_value(value, text):
    assert format_value(value) == text


def test_format_stat():
    assert format_stat(Stat(0.86, 0.00141421, 2)) == "0.8600 ± 0.0014"
    assert format_stat(Stat(0.86, None, 1)) == "0.8600"
    assert format_stat(None) == "n/a"
    assert format_stat(Stat(2.97, 0.01, 2), 3) == "2.970 ± 0.010"


def test_results_table_rows(summary):
    lines = results_table(summary).splitlines()
    assert len(lines) == 2 + 4
    assert lines[2].startswith(
        "| gaussian_pate | 1.000 | 1.000 ± 0.000 | record-level | within 1% | 2 | 0.8210 ± 0.0014 |"
    )
    assert lines[5].endswith("| 6.9500 ± 0.0707 |")  # mean k of stable_topk_paper; "n/a" for gaussian_pate
    assert lines[2].endswith("| n/a |")
