"""Hydra callback writing the report of a multirun into its sweep directory when the multirun ends.

Registered in conf/hydra/default.yaml as ``callbacks: {report: {_target_: pate.report.callback.ReportCallback}}``.
Hydra calls ``on_multirun_end`` only after every job returned successfully (its basic sweeper re-raises the
first job failure instead); a sweep with failed jobs is reported by hand with ``python -m pate.report``.
"""

from __future__ import annotations

import logging
import sys
from pathlib import Path
from typing import Any

from hydra.experimental.callback import Callback
from omegaconf import DictConfig, OmegaConf

log = logging.getLogger(__name__)


class ReportCallback(Callback):
    """Refuses a sweep directory that already holds results; writes report.md, results.csv and the plots into
    ``hydra.sweep.dir`` at the end of a multirun."""

    def on_multirun_start(self, config: DictConfig, **kwargs: Any) -> None:
        """A sweep writes into a fresh directory: jobs of an earlier sweep left there would be counted by the report
        as finished under this sweep's settings. One line and exit 2, before any job starts."""
        sweep_dir = Path(str(config.hydra.sweep.dir))
        earlier = sorted(sweep_dir.glob("*/metrics.json")) if sweep_dir.is_dir() else []
        if earlier:
            print(
                f"error: hydra.sweep.dir={sweep_dir} already holds the results of {len(earlier)} job(s) of an earlier "
                f"sweep; a sweep writes into a fresh directory (leave hydra.sweep.dir unset, or move {sweep_dir} "
                f"away)",
                file=sys.stderr,
            )
            sys.exit(2)

    def on_multirun_end(self, config: DictConfig, **kwargs: Any) -> None:
        sweep_dir = config.hydra.sweep.dir
        if any(
            str(o).startswith("teacher_shard=") for o in OmegaConf.select(config, "hydra.overrides.task", default=[])
        ):
            log.info(
                "Sweep %s trained teacher shards (teacher_shard): nothing to report; the same command without "
                "teacher_shard (and without -m) finds the teachers, seals them and runs the rest",
                sweep_dir,
            )
            return
        try:
            from pate.report.generate import write_report  # here: matplotlib only where a report is drawn

            report = write_report(sweep_dir)
        except Exception:
            # The jobs' results are already on disk: log the failure with its traceback and let the sweep
            # end normally; the report can be regenerated with `python -m pate.report <sweep dir>`.
            log.exception(
                "Writing the report of sweep %s failed; rerun `python -m pate.report %s` after fixing the cause",
                sweep_dir,
                sweep_dir,
            )
            return
        log.info("Report of sweep %s written: %s", sweep_dir, ", ".join(str(p) for p in report.files.values()))
        for notice in report.notices():
            log.warning("%s", notice)
