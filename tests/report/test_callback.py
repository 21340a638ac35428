"""ReportCallback: writes the report at the end of a real Hydra multirun; logs failures with their traceback."""

import json
import logging
import subprocess
import sys
import textwrap

import pytest
from omegaconf import OmegaConf

from pate.report.callback import ReportCallback


def _config(sweep_dir):
    return OmegaConf.create({"hydra": {"sweep": {"dir": str(sweep_dir)}}})


def test_writes_report_into_sweep_dir_and_logs_where(sweep_dir, caplog):
    with caplog.at_level(logging.INFO, logger="pate.report.callback"):
        ReportCallback().on_multirun_end(_config(sweep_dir))
    assert (sweep_dir / "report.md").is_file() and (sweep_dir / "accuracy_vs_epsilon.png").is_file()
    messages = [r.getMessage() for r in caplog.records]
    assert any(f"Report of sweep {sweep_dir} written" in m and str(sweep_dir / "report.md") in m for m in messages)
    assert any(f"failed job (no metrics.json): {sweep_dir / '8'}" in m for m in messages)


def test_failure_is_logged_with_traceback_and_not_raised(tmp_path, caplog):
    with caplog.at_level(logging.ERROR, logger="pate.report.callback"):
        ReportCallback().on_multirun_end(_config(tmp_path))  # no multirun.yaml: not a sweep directory
    (record,) = caplog.records
    assert record.levelno == logging.ERROR and f"Writing the report of sweep {tmp_path} failed" in record.getMessage()
    assert record.exc_info is not None and "no multirun.yaml" in str(record.exc_info[1])


def test_a_teacher_shard_sweep_has_no_report(tmp_path, caplog):
    config = OmegaConf.create(
        {"hydra": {"sweep": {"dir": str(tmp_path)}, "overrides": {"task": ["debug=tiny_cnn", "teacher_shard=0/2,1/2"]}}}
    )
    with caplog.at_level(logging.INFO, logger="pate.report.callback"):
        ReportCallback().on_multirun_end(config)
    assert not (tmp_path / "report.md").exists()
    assert [r.levelno for r in caplog.records] == [logging.INFO] and "teacher shards" in caplog.text


APP = """
import json
from pathlib import Path

import hydra
from hydra.core.hydra_config import HydraConfig

@hydra.main(version_base="1.3", config_path=".", config_name="config")
def main(cfg):
    table = json.loads(Path(cfg.metrics_table).read_text())
    out = Path(HydraConfig.get().runtime.output_dir)
    (out / "metrics.json").write_text(json.dumps(table[f"{cfg.method}|{cfg.target_epsilon}|{cfg.seed}"]))

main()
"""

CONFIG = """
method: stable_topk_paper
target_epsilon: 1.0
seed: 0
report: accuracy_vs_epsilon
metrics_table: ???
hydra:
  sweep:
    dir: {root}/multiruns/${{now:%Y-%m-%d_%H-%M-%S}}
    subdir: ${{hydra.job.num}}
  callbacks:
    report:
      _target_: pate.report.callback.ReportCallback
"""


@pytest.mark.slow
def test_real_hydra_multirun_gets_its_report(tmp_path, job_factory, subprocess_env):
    """The registration the lead puts in conf/hydra/default.yaml, with the same ${now:} sweep dir."""
    make_metrics, _ = job_factory
    table = {
        f"{m}|{e}|{s}": make_metrics(m, e, s)
        for m in ("stable_topk_paper", "gaussian_pate")
        for e in (1.0, 4.0)
        for s in (0, 1)
    }
    (tmp_path / "table.json").write_text(json.dumps(table))
    (tmp_path / "app.py").write_text(APP)
    (tmp_path / "config.yaml").write_text(textwrap.dedent(CONFIG.format(root=tmp_path)))
    result = subprocess.run(
        [
            sys.executable,
            str(tmp_path / "app.py"),
            "-m",
            "method=stable_topk_paper,gaussian_pate",
            "target_epsilon=1.0,4.0",
            "seed=0,1",
            f"metrics_table={tmp_path / 'table.json'}",
        ],
        capture_output=True,
        text=True,
        timeout=300,
        cwd=tmp_path,
        env=subprocess_env,
    )
    assert result.returncode == 0, result.stderr
    (sweep,) = (tmp_path / "multiruns").iterdir()
    assert (sweep / "report.md").is_file() and (sweep / "results.csv").is_file()
    assert len((sweep / "results.csv").read_text().splitlines()) == 1 + 8
    assert "Writing the report" not in result.stdout + result.stderr
    assert f"Report of sweep {sweep} written" in result.stdout + result.stderr
