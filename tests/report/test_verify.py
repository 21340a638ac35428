"""A report verifies every epsilon it prints: the job's release artifact (named in its metrics.json) is read from
the cache, its ledger replayed, and a recorded figure that disagrees is refused by job number; a job whose release
is not in the cache is listed as not verified, in the report and on the console."""

import json
from pathlib import Path

import pytest
import yaml

from pate.pipeline.runner import run
from pate.report.collect import collect_sweep
from pate.report.generate import write_report


@pytest.fixture
def real_sweep(tiny_cfg, tmp_path, shared_root, job_factory):
    """A one-job sweep directory around a real tiny run (GaussianPATE and Private-kNN at epsilon 200)."""
    _, write_job = job_factory
    sweep = tmp_path / "sweep"
    sweep.mkdir()
    (sweep / "multirun.yaml").write_text(
        yaml.safe_dump({"hydra": {"overrides": {"task": ["seed=0"]}}, "report": "accuracy_vs_epsilon"})
    )
    for job, overrides in enumerate([[], ["method=private_knn", "method.k=10"]]):
        metrics = run(tiny_cfg(*overrides), output_dir=tmp_path / f"run{job}")
        write_job(sweep, str(job), ["seed=0"], json.loads(json.dumps(metrics)))
    return sweep, shared_root / "cache"


def _edit(sweep: Path, job: str, **changes) -> None:
    path = sweep / job / "metrics.json"
    path.write_text(json.dumps({**json.loads(path.read_text()), **changes}))


def test_every_epsilon_of_a_real_sweep_is_replayed_and_agrees(real_sweep):
    sweep, cache = real_sweep
    assert collect_sweep(sweep, cache_dir=cache).unverified == ()
    report = write_report(sweep, cache_dir=cache)
    assert not any("not verified" in line for line in report.notices())
    assert "the ε of 2 of 2 finished jobs replayed from the ledger" in (sweep / "report.md").read_text()


@pytest.mark.parametrize("job", ["0", "1"])
def test_an_edited_epsilon_is_refused_naming_the_job(real_sweep, job):
    sweep, cache = real_sweep
    _edit(sweep, job, epsilon=1.0)
    with pytest.raises(
        ValueError,
        match=rf"job {job}: metrics.json says epsilon=1.0, its ledger \(aggregate/\w+/"
        rf"ledger.json\) replays to epsilon=(199.9|200)",
    ):
        collect_sweep(sweep, cache_dir=cache)


def test_an_edited_relation_is_refused(real_sweep):
    sweep, cache = real_sweep
    _edit(sweep, "0", neighbors="add_remove")
    with pytest.raises(ValueError, match="job 0: metrics.json says neighbors='add_remove', its ledger"):
        collect_sweep(sweep, cache_dir=cache)


def test_a_release_missing_from_the_cache_is_reported_as_not_verified(real_sweep, tmp_path):
    sweep, _ = real_sweep
    collected = collect_sweep(sweep, cache_dir=tmp_path / "elsewhere")
    assert len(collected.unverified) == 2 and collected.unverified[0].startswith("job 0: no intact release")
    report = write_report(sweep, cache_dir=tmp_path / "elsewhere")
    assert "the ε of 0 of 2 finished jobs" in (sweep / "report.md").read_text()
    assert "Not verified" in (sweep / "report.md").read_text()
    assert any(line.startswith("epsilon not verified: job 1") for line in report.notices())


def test_the_report_command_takes_the_cache_to_verify_against(real_sweep, tmp_path, capsys):
    """`python -m pate.report <dir> --cache-dir DIR`, as docs/reports.md shows it."""
    from pate.report.__main__ import main

    sweep, cache = real_sweep
    assert main([str(sweep), "--cache-dir", str(cache)]) == 0
    assert "epsilon not verified" not in capsys.readouterr().err
    assert main([str(sweep), "--cache-dir", str(tmp_path / "elsewhere")]) == 0
    assert "epsilon not verified: job 0" in capsys.readouterr().err
