"""Hydra callback: every job of a multirun passes the plain config checks before the first job starts.

Without it a sweep such as ``-m privacy.target_epsilon=100,nan,200`` runs job 0, fails on job 1 and never starts
job 2. The jobs' configs are built as the launcher builds them (Hydra's config loader on each job's overrides, as
the basic sweeper splits them) and checked by ``pate.pipeline.checks.check_config``, and a job labelled by a method
axis (``compare=<name>``) must run the method and aggregator that ``conf/compare/<name>.yaml`` selects (another
config after it, a debug or experiment config, must not change them: its row would carry one method's label and
another's numbers). The first bad job ends the sweep in one line naming the job and the value, exit 2. Registered
in conf/hydra/default.yaml.
"""

from __future__ import annotations

import logging
import sys
from typing import Any

from hydra.core.global_hydra import GlobalHydra
from hydra.experimental.callback import Callback
from omegaconf import DictConfig, OmegaConf, open_dict

from pate.locations import CONFIG_DIR
from pate.pipeline.checks import UserError, check_config
from pate.report.collect import expected_overrides

log = logging.getLogger(__name__)

__all__ = ["SweepChecks", "check_label", "compare_selects", "job_overrides"]


def check_label(choices, overrides: tuple[str, ...]) -> None:
    """``UserError`` when a job labelled ``compare=<name>`` runs another method or aggregator (``choices``: the
    job's ``hydra.runtime.choices``) than ``conf/compare/<name>.yaml`` selects."""
    label = next((o.split("=", 1)[1] for o in overrides if o.startswith("compare=")), None)
    if label is None:
        return
    for group, wanted in compare_selects(label).items():
        if choices.get(group) != wanted:
            raise UserError(
                f"compare={label} selects {group}={wanted}, but the job's config runs "
                f"{group}={choices.get(group)} (a config composed after the method axis, such as a "
                f"debug or experiment config, changed it): its results would carry the wrong label"
            )


def compare_selects(label: str) -> dict[str, str]:
    """The option of each config group that ``conf/compare/<label>.yaml`` selects (its defaults list): the method,
    and for PATE the aggregator."""
    selects = OmegaConf.load(CONFIG_DIR / "compare" / f"{label}.yaml").get("defaults", [])
    return {
        key.removeprefix("override").strip().lstrip("/"): wanted for item in selects for key, wanted in item.items()
    }


def job_overrides(config: DictConfig) -> list[tuple[str, ...]] | None:
    """Each job's overrides, in the order the basic sweeper runs them (the report's own expansion,
    ``pate.report.collect.expected_overrides``, on the running multirun's config); None under another sweeper."""
    hydra = {
        "sweeper": OmegaConf.to_container(config.hydra.sweeper, resolve=False),
        "overrides": {"task": list(config.hydra.overrides.task)},
    }
    return expected_overrides({"hydra": hydra})


class SweepChecks(Callback):
    """Checks every job's config before the first job runs (module docstring)."""

    def on_multirun_start(self, config: DictConfig, **kwargs: Any) -> None:
        jobs = job_overrides(config)
        if not jobs or len(jobs) < 2:
            return
        loader = GlobalHydra.instance().config_loader()
        for number, overrides in enumerate(jobs):
            job = loader.load_sweep_config(config, list(overrides))
            choices = OmegaConf.to_container(job.hydra.runtime.choices)
            with open_dict(job):
                job.hydra = None  # the job's own keys only (the checks read no Hydra runtime)
            try:
                check_label(choices, overrides)
                check_config(job)
            except UserError as err:
                print(f"error: job {number} ({' '.join(overrides)}): {err}; no job was started", file=sys.stderr)
                sys.exit(2)
        log.info("checked the configs of all %d jobs before starting the first", len(jobs))
