"""A tiny accuracy-vs-epsilon sweep through Hydra's multirun: calibrated runs, the report callback's files."""

import csv
from pathlib import Path

import pytest

from tests.cli import run_cli

pytestmark = pytest.mark.slow  # command lines, end-to-end runs or heavy computations: not in the fast loop

REPO = Path(__file__).resolve().parents[2]
METHODS, EPSILONS, SEEDS = ("gaussian_pate", "tau_pate"), (100.0, 200.0), (0, 1)


@pytest.fixture(scope="module")
def sweep_dir(shared_root, tmp_path_factory) -> Path:
    # a fresh sweep directory each time the fixture is set up: pytest-xdist's worksteal may split this module's
    # tests so that one worker sets it up twice, and a second sweep into the first one's directory is refused
    out = tmp_path_factory.mktemp("sweep")
    args = [
        "-m",
        "debug=tiny",
        "references=true",
        f"aggregator={','.join(METHODS)}",
        f"privacy.target_epsilon={','.join(map(str, EPSILONS))}",
        f"seed={','.join(map(str, SEEDS))}",
        f"paths.root_dir={shared_root}",
        f"hydra.sweep.dir={out}",
    ]
    proc = run_cli("train.py", args, cwd=REPO)  # the command line, in this process (tests/cli.py)
    assert proc.returncode == 0, proc.stderr[-4000:]
    return out


def test_sweep_writes_every_report_file(sweep_dir):
    for name in (
        "report.md",
        "results.csv",
        "accuracy_vs_epsilon.png",
        "label_f1_vs_epsilon.png",
        "answered_vs_epsilon.png",
    ):
        assert (sweep_dir / name).stat().st_size > 0, name
    for png in sweep_dir.glob("*.png"):
        assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n", png


def test_results_csv_has_one_calibrated_row_per_run(sweep_dir):
    with open(sweep_dir / "results.csv") as fh:
        rows = list(csv.DictReader(fh))
    assert len(rows) == len(METHODS) * len(EPSILONS) * len(SEEDS)
    assert {(r["method"], float(r["target_epsilon"]), int(r["seed"])) for r in rows} == {
        (m, e, s) for m in METHODS for e in EPSILONS for s in SEEDS
    }
    for r in rows:
        assert r["neighbors"] == "replace" and float(r["delta"]) == 1e-6
        target, achieved = float(r["target_epsilon"]), float(r["epsilon"])
        assert achieved <= target * (1 + 1e-9) and achieved == pytest.approx(target, rel=0.01)


def test_report_names_the_relation_and_every_method(sweep_dir):
    text = (sweep_dir / "report.md").read_text()
    assert "replace" in text and "1e-06" in text
    for method in METHODS:
        assert method in text


def test_each_plot_has_one_series_per_method(sweep_dir):
    from pate.report import collect_sweep, summarize
    from pate.report.plots import PLOTS, plot_metric_vs_epsilon

    summary = summarize(collect_sweep(sweep_dir))
    for spec in PLOTS:
        fig = plot_metric_vs_epsilon(summary, spec)
        labels = [c.get_label() for c in fig.axes[0].containers]
        assert sorted(labels) == sorted(METHODS), (spec.filename, labels)


def test_a_failed_job_is_named_and_the_report_names_the_jobs_that_never_started(shared_root, tmp_path):
    """Job 1's data error (more teachers than training records: a check of the data, not of the config) names the
    job and ends the sweep; the sweep's report names job 1 as failed and job 2 as never started."""
    from pate.report.generate import write_report

    out = tmp_path / "sweep"
    done = run_cli(
        "train.py",
        [
            "-m",
            "debug=tiny",
            "partition.num_teachers=4,100000,5",
            f"paths.root_dir={shared_root}",
            f"hydra.sweep.dir={out}",
        ],
        cwd=REPO,
    )
    lines = [line for line in done.stderr.splitlines() if line.strip()]
    assert done.returncode == 2 and len(lines) == 1, done.stderr[-4000:]
    job, _, error = lines[0].partition(f") of the sweep in {out}: ")
    assert job.startswith("error: job 1 (") and "partition.num_teachers=100000" in job.split(), lines[0]
    assert error.startswith("partition.num_teachers=100000 but the private training split holds"), lines[0]
    assert error.endswith(f"(the sweep stops here; `python -m pate.report {out}` reports its jobs)"), lines[0]
    report = write_report(out)
    text = (out / "report.md").read_text()
    failed = next(line for line in text.splitlines() if line.startswith("- directory `1/`: "))
    never = next(line for line in text.splitlines() if line.startswith("- job 2: "))
    assert "`partition.num_teachers=100000`" in failed and "`partition.num_teachers=5`" in never
    assert "1 more promised by the sweep's overrides never started" in text
    notice = next(notice for notice in report.notices() if "never started" in notice)
    assert "job 2 (" in notice and "partition.num_teachers=5" in notice
