"""The pipeline's command line: ``pate-train [group=option ...] [key=value ...]`` (installed) or ``python train.py``
(a clone).

    data -> features -> partition -> teachers -> votes -> aggregate -> student -> evaluate

Each stage is an artifact in the content-addressed cache, keyed by its config, its upstream keys, the code that
builds it and (through the data) the content of the dataset: a run that changes only the aggregator, the noise,
the target epsilon or the seed reuses the trained teachers and their votes. The stage graph is
``pate/pipeline/graph.py``; a run (checks first, then the stages, then ``metrics.json`` in the run directory) is
``pate/pipeline/runner.py``. docs/architecture.md describes both.
"""

from __future__ import annotations

import os
import secrets

import hydra
from omegaconf import DictConfig, OmegaConf

from pate.locations import CONFIG_DIR
from pate.pipeline.cli import command_line_errors, start
from pate.pipeline.help import groups_help

# A suffix for this process's run directory (conf/hydra/default.yaml): two runs started in the same second get
# different directories, and one run resolves the same suffix every time it is asked.
RUN_ID = f"{os.getpid()}-{secrets.token_hex(2)}"
OmegaConf.register_new_resolver("run_id", lambda: RUN_ID, replace=True)
# --help lists the groups train.py composes (conf/hydra/default.yaml), not every directory of conf/.
OmegaConf.register_new_resolver("train_groups", groups_help, replace=True)


# An absolute config path: the clone's conf/ or the installed copy (pate.locations), wherever the command runs from.
# Hydra names the job after this file (train.log, hydra.job.name: train), so train.py and pate-train name it alike.
@hydra.main(version_base="1.3", config_path=str(CONFIG_DIR), config_name="train")
def main(cfg: DictConfig) -> float | None:
    from pate.pipeline.runner import run  # torch and Lightning: imported for a run, not for --help

    with command_line_errors(cfg):  # a config or data mistake: one line, exit 2; Ctrl-C: how to resume, exit 130
        metrics = run(cfg)
    return metrics.get("student_accuracy")  # the objective for Hydra sweepers that optimise


def cli() -> None:
    """The command line: ``pate-train`` / ``python train.py [overrides]`` (and the in-process runner of the
    tests)."""
    start(main)


__all__ = ["cli", "main"]
