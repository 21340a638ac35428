"""The whole report, through write_report and the CLI: files, content, determinism, relation, errors."""

import csv
import json
import struct
import subprocess
import sys

import pytest

from pate.report import write_report

FILES = {"report.md", "results.csv", "accuracy_vs_epsilon.png", "label_f1_vs_epsilon.png", "answered_vs_epsilon.png"}


def _png_size(path):
    data = path.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n" and data[12:16] == b"IHDR"
    return struct.unpack(">II", data[16:24])


def test_tiny_sweep_produces_every_file(sweep_dir):
    report = write_report(sweep_dir)
    assert set(report.files) == FILES
    assert {p.name for p in sweep_dir.iterdir() if p.is_file()} == FILES | {"multirun.yaml"}  # no temp files left
    for name in FILES:
        if name.endswith(".png"):
            width, height = _png_size(sweep_dir / name)
            assert width >= 600 and height >= 400
    rows = list(csv.DictReader((sweep_dir / "results.csv").open()))
    assert len(rows) == 9 and sum(r["status"] == "failed" for r in rows) == 1


def test_report_content(sweep_factory, tmp_path):
    # job 1 (stable_topk_paper, target 1, seed 1) overspends by 2%; job 0 is 0.4% under: not flagged.
    off = {("stable_topk_paper", 1.0, 1): 1.02, ("stable_topk_paper", 1.0, 0): 0.996}
    sweep = sweep_factory(tmp_path / "s", epsilon_of=lambda m, e, s: e * off.get((m, e, s), 1.0))
    report = write_report(sweep)
    text = (sweep / "report.md").read_text()
    assert text.startswith("# Sweep report: neighbors=replace, δ=1e-06\n")
    assert "- **stable_topk_paper**: target ε 4.000 (student accuracy 0.8710 ± 0.0014)." in text
    assert "- **gaussian_pate**: not reached on this grid (best: 0.8510 ± 0.0014 at target ε 4.000)." in text
    assert "(0.97 × 0.8850 = 0.8584)" in text  # 0.97 x 0.885 = 0.858449999... in binary
    assert "| stable_topk_paper | 1.000 | 1.008 ± 0.017 | record-level | 1 of 2 runs off by >1% | 2 |" in text
    assert "**1 of 8 runs miss their target ε by more than 1%**" in text
    assert "- job `1` (stable_topk_paper, seed 1): target 1.000, achieved 1.020 (+2.00%): spent MORE" in text
    assert "- job `0`" not in text
    assert "- directory `8/`: `aggregator=stable_topk_paper` `target_epsilon=8.0` `seed=0`" in text
    assert "| 8 | **failed** |" in text
    assert str(tmp_path) not in text
    assert [n for n in report.notices() if "miss their target" in n] == [
        "jobs ['1'] miss their target epsilon by more than 1% (neighbors=replace, delta=1e-06)"
    ]


@pytest.mark.slow
def test_two_identical_sweeps_give_identical_reports(tmp_path, sweep_factory):
    first, second = sweep_factory(tmp_path / "a" / "2024-01-01"), sweep_factory(tmp_path / "b" / "2025-06-30")
    write_report(first)
    write_report(second)
    for name in FILES:
        assert (first / name).read_bytes() == (second / name).read_bytes(), name
    before = (first / "report.md").read_bytes()
    write_report(first)  # regenerating from the directory alone gives the same report
    assert (first / "report.md").read_bytes() == before


def test_add_remove_sweep_names_its_relation(tmp_path, sweep_factory):
    sweep = sweep_factory(tmp_path / "s", relation="add_remove")
    write_report(sweep)
    text = (sweep / "report.md").read_text()
    assert text.startswith("# Sweep report: neighbors=add_remove, δ=1e-06\n")
    assert "`neighbors=add_remove` (one teacher's vote added or removed" in text
    assert "neighbors=replace" not in text


def test_bad_sweep_writes_nothing(sweep_dir, job_factory):
    make_metrics, write_job = job_factory
    write_job(sweep_dir, "9", [], make_metrics("gaussian_pate", 1.0, 5, relation="add_remove"))
    with pytest.raises(ValueError, match="mixes neighbors"):
        write_report(sweep_dir)
    assert not (sweep_dir / "report.md").exists()


def _cli(env, *args):
    return subprocess.run(
        [sys.executable, "-m", "pate.report", *map(str, args)], capture_output=True, text=True, timeout=120, env=env
    )


@pytest.mark.slow
def test_cli_writes_report_and_warns_about_failed_jobs(sweep_dir, tmp_path, subprocess_env):
    out = tmp_path / "elsewhere"
    result = _cli(subprocess_env, sweep_dir, "--out", out)
    assert result.returncode == 0, result.stderr
    assert {p.name for p in out.iterdir()} == FILES
    assert not (sweep_dir / "report.md").exists()
    assert f"wrote {out / 'report.md'}" in result.stdout
    assert f"warning: failed job (no metrics.json): {sweep_dir / '8'}" in result.stderr


@pytest.mark.slow
def test_cli_refuses_mixed_relations_with_a_clear_error(sweep_dir, job_factory, subprocess_env):
    make_metrics, write_job = job_factory
    write_job(sweep_dir, "9", [], make_metrics("gaussian_pate", 1.0, 5, relation="add_remove"))
    result = _cli(subprocess_env, sweep_dir)
    assert result.returncode == 2
    assert result.stderr.startswith("error: ") and "mixes neighbors" in result.stderr
    assert "Traceback" not in result.stderr


@pytest.mark.slow
def test_report_imports_neither_torch_nor_lightning(subprocess_env):
    code = (
        "import sys, pate.report, pate.report.callback, pate.report.__main__; "
        "print(sorted(m for m in ('torch', 'lightning', 'pytorch_lightning', 'teachers', 'student') "
        "if m in sys.modules))"
    )
    result = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=120, env=subprocess_env
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "[]"


def test_the_report_kind_is_named_by_the_sweep_never_guessed(sweep_dir, tmp_path):
    """A sweep whose config names no report kind is refused naming the key; --kind names one; an unknown kind
    is refused with the registry's names."""
    import yaml

    from pate.report.generate import REPORTS, report_kind

    assert report_kind(sweep_dir) == "accuracy_vs_epsilon" and set(REPORTS) >= {"accuracy_vs_queries"}
    config = yaml.safe_load((sweep_dir / "multirun.yaml").read_text())
    del config["report"]
    (sweep_dir / "multirun.yaml").write_text(yaml.safe_dump(config))
    with pytest.raises(ValueError, match=r"names no report kind \(its config's `report` key"):
        write_report(sweep_dir)
    assert write_report(sweep_dir, tmp_path / "out", kind="accuracy_vs_epsilon").files
    with pytest.raises(ValueError, match=r"report kind 'vibes' is unknown; expected one of \['accuracy_vs_epsilon'"):
        write_report(sweep_dir, kind="vibes")


def test_the_report_says_where_and_when_its_jobs_ran(sweep_factory, tmp_path):
    sweep = sweep_factory(tmp_path / "s")
    write_report(sweep)
    assert "- Machines: not recorded by these runs.\n" in (sweep / "report.md").read_text()
    jobs = sorted(sweep.glob("*/metrics.json"))
    for index, path in enumerate(jobs[:-1]):  # the last job predates the host record
        metrics = json.loads(path.read_text())
        metrics["host"] = {
            "cpu": "AMD EPYC",
            "logical_cpus": 2,
            "platform": "Linux",
            "finished_utc": f"2026-11-2{4 + index % 2}T10:00:00Z",
            "accelerator": "NVIDIA H100" if index == 0 else None,
        }
        path.write_text(json.dumps(metrics))
    write_report(sweep)
    assert (
        "- Machines: AMD EPYC (2 logical CPUs); AMD EPYC (2 logical CPUs, NVIDIA H100); finished 2026-11-24 to "
        "2026-11-25 (UTC) (1 job did not record its).\n"
    ) in (sweep / "report.md").read_text()
