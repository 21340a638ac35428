"""Reading a sweep directory: finished and failed jobs, schema checks, refusal of mixed relations/deltas."""

import json

import pytest

from pate.report import collect_sweep

BASIC = "hydra._internal.core_plugins.basic_sweeper.BasicSweeper"


def test_collects_finished_runs_and_failed_job_in_job_order(sweep_dir):
    sweep = collect_sweep(sweep_dir)
    assert [run.job for run in sweep.runs] == [str(i) for i in range(8)]
    assert [job.job for job in sweep.failed] == ["8"]
    assert sweep.failed[0].overrides == ("aggregator=stable_topk_paper", "target_epsilon=8.0", "seed=0")
    assert (sweep.relation, sweep.delta) == ("replace", 1e-6)
    assert sweep.overrides[0] == "aggregator=stable_topk_paper,gaussian_pate"
    assert sweep.runs[2].config["aggregator"]["_target_"] == "pate.aggregators.stable_topk_paper"


def test_numeric_job_names_sort_numerically(tmp_path, sweep_factory):
    sweep = collect_sweep(sweep_factory(tmp_path / "s", epsilons=(0.5, 1.0, 2.0, 4.0, 8.0), seeds=(0,)))
    assert [run.job for run in sweep.runs] == [str(i) for i in range(10)]  # "10" would sort before "2" as text


def test_launcher_folders_are_not_jobs(sweep_dir):
    (sweep_dir / ".submitit" / "123").mkdir(parents=True)
    assert len(collect_sweep(sweep_dir).runs) == 8


@pytest.mark.parametrize(
    "key, value, message",
    [
        ("epsilon", None, "epsilon=None"),
        ("neighbors", "swap", "neighbors='swap'"),
        ("delta", 1.5, "delta=1.5"),
        ("student_accuracy", "high", "student_accuracy=.high."),
        ("seed", 0.5, "seed=0.5"),
        ("private", 1, "private=1"),
    ],
)
def test_schema_violation_names_file_key_and_value(sweep_dir, key, value, message):
    path = sweep_dir / "3" / "metrics.json"
    metrics = json.loads(path.read_text())
    metrics[key] = value
    path.write_text(json.dumps(metrics))
    with pytest.raises(ValueError, match=message) as err:
        collect_sweep(sweep_dir)
    assert str(path) in str(err.value)


def test_missing_key_and_broken_json_are_errors(sweep_dir):
    path = sweep_dir / "1" / "metrics.json"
    metrics = json.loads(path.read_text())
    del metrics["label_f1"]
    path.write_text(json.dumps(metrics))
    with pytest.raises(ValueError, match=r"missing keys \['label_f1'\]"):
        collect_sweep(sweep_dir)
    path.write_text("{")
    with pytest.raises(ValueError, match="not valid JSON"):
        collect_sweep(sweep_dir)


def test_not_a_sweep_directory(tmp_path):
    with pytest.raises(ValueError, match="no multirun.yaml"):
        collect_sweep(tmp_path)


def test_all_jobs_failed_is_an_error_listing_them(tmp_path, sweep_factory):
    sweep = sweep_factory(tmp_path / "s")
    for metrics in sweep.glob("*/metrics.json"):
        metrics.unlink()
    with pytest.raises(ValueError, match=r"no finished job .*'0', '1'"):
        collect_sweep(sweep)


def test_mixed_relations_are_refused(sweep_dir, job_factory):
    make_metrics, write_job = job_factory
    write_job(sweep_dir, "9", ["neighbors=add_remove"], make_metrics("gaussian_pate", 1.0, 5, relation="add_remove"))
    with pytest.raises(ValueError, match=r"mixes neighbors .*'add_remove' in jobs \['9'\]"):
        collect_sweep(sweep_dir)


def test_mixed_query_counts_are_refused(sweep_dir, job_factory):
    """Runs of one (method, epsilon) are averaged as seeds: another query count must not slip in among them."""
    make_metrics, write_job = job_factory
    write_job(
        sweep_dir,
        "9",
        ["data.num_queries=200"],
        {**make_metrics("gaussian_pate", 1.0, 5), "queries": 200, "answered": 200, "answered_fraction": 1.0},
    )
    with pytest.raises(ValueError, match=r"mixes queries .*200 in jobs \['9'\]"):
        collect_sweep(sweep_dir)


def test_mixed_teacher_counts_are_refused_unless_they_are_the_axis(sweep_dir, job_factory):
    """Another number of teachers must not slip in among the seeds either; a run with none (DP-SGD) mixes nothing,
    and the axis report over the number of teachers reads them all."""
    make_metrics, write_job = job_factory
    write_job(
        sweep_dir, "9", ["partition.num_teachers=40"], {**make_metrics("gaussian_pate", 1.0, 5), "num_teachers": 40}
    )
    with pytest.raises(ValueError, match=r"mixes num_teachers .*40 in jobs \['9'\]"):
        collect_sweep(sweep_dir)
    collect_sweep(sweep_dir, axis="num_teachers")
    without = {key: value for key, value in make_metrics("gaussian_pate", 1.0, 5).items() if key != "num_teachers"}
    (sweep_dir / "9" / "metrics.json").write_text(json.dumps(without))
    collect_sweep(sweep_dir)
    with pytest.raises(ValueError, match=r"axis='seed': expected one of \['queries', 'num_teachers'\]"):
        collect_sweep(sweep_dir, axis="seed")


def test_mixed_deltas_are_refused(sweep_dir, job_factory):
    make_metrics, write_job = job_factory
    write_job(sweep_dir, "9", ["delta=1e-5"], make_metrics("gaussian_pate", 1.0, 5, delta=1e-5))
    with pytest.raises(ValueError, match=r"mixes delta .*1e-05 in jobs \['9'\]"):
        collect_sweep(sweep_dir)


def test_jobs_the_overrides_promise_but_never_started_are_named(tmp_path, sweep_factory):
    """-m privacy.target_epsilon=100,nan,200 stopped at its refused job 1: job 2 never started, and the report names
    it by number and overrides (report.md, results.csv and the console)."""
    import yaml

    from pate.report.collect import promised_jobs
    from pate.report.generate import write_report

    sweep = sweep_factory(tmp_path / "sweep", seeds=(0,), failed=False)  # 2 methods x 2 epsilons: 4 jobs
    multirun = yaml.safe_load((sweep / "multirun.yaml").read_text())
    multirun["hydra"]["overrides"]["task"].append("seed=0,1,2")  # now promises 12
    multirun["hydra"]["sweeper"] = {"_target_": "hydra._internal.core_plugins.basic_sweeper.BasicSweeper"}
    (sweep / "multirun.yaml").write_text(yaml.safe_dump(multirun))
    assert promised_jobs(multirun) == 12
    never = collect_sweep(sweep).never_started
    assert len(never) == 8 and all("seed=0" not in job.overrides for job in never)  # seed 0 ran: jobs 0..3
    assert [job.job for job in never] == [str(n) for n in range(12) if n % 3]  # seed varies fastest
    report = write_report(sweep)
    text = (sweep / "report.md").read_text()
    assert "8 more promised by the sweep's overrides never started" in text
    assert f"- job {never[0].job}: " + " ".join(f"`{o}`" for o in never[0].overrides) in text
    assert (
        sum(
            line.endswith(",never started") or ",never started," in line
            for line in (sweep / "results.csv").read_text().splitlines()
        )
        == 8
    )
    notice = next(line for line in report.notices() if "never started" in line)
    assert notice.startswith("8 job(s) promised by the sweep's overrides never started: job 1 (")


def test_finished_jobs_the_sweep_does_not_produce_are_left_out_and_named(sweep_dir, job_factory):
    """A job directory copied in from another sweep (its overrides are not among this sweep's): its results are not
    counted under this sweep's settings, and the report's notices name it."""
    from pate.report.generate import write_report

    import yaml

    multirun = yaml.safe_load((sweep_dir / "multirun.yaml").read_text())
    multirun["hydra"]["sweeper"] = {"_target_": BASIC}  # as Hydra writes it: the report can enumerate the jobs
    (sweep_dir / "multirun.yaml").write_text(yaml.safe_dump(multirun))
    make_metrics, write_job = job_factory
    write_job(
        sweep_dir,
        "9",
        ["aggregator=gaussian_pate", "target_epsilon=8.0", "seed=0", "neighbors=replace"],
        make_metrics("gaussian_pate", 8.0, 0),
    )
    sweep = collect_sweep(sweep_dir)
    assert sweep.foreign == ("9",) and "9" not in [run.job for run in sweep.runs] and len(sweep.runs) == 8
    assert any(
        "jobs ['9'] hold settings this sweep's overrides do not produce" in line
        for line in write_report(sweep_dir).notices()
    )


def test_promised_jobs_follow_hydras_sweep_grammar():
    from pate.report.collect import promised_jobs

    multirun = {
        "hydra": {
            "sweeper": {"_target_": BASIC, "params": {"seed": "range(0,3)", "compare": "a,b"}},
            "overrides": {"task": ["compare=a,b,c", "x=[1,2]", "y=choice(1,2)"]},
        }
    }
    assert promised_jobs(multirun) == 3 * 3 * 2  # the command line's compare replaces the config's
    assert promised_jobs({"hydra": {"sweeper": {"_target_": "hydra_plugins.optuna.Sweeper"}}}) is None
