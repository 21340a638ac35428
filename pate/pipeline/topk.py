"""A private top-k experiment's command line: ``pate-topk [topk_experiment=flat|repeated|checkin] [key=value ...]``
(installed) or ``python topk.py ...`` (a clone).

Calibrates every mechanism in ``topk_experiment.methods`` to each (epsilon, delta) of the experiment by its
own accountant, runs the trials as vectorised batches and writes ``report.md``, ``results.csv`` and
``recall.png`` into the run directory (or ``report_dir``). The experiment itself lives in ``pate.experiments.topk``.
"""

from __future__ import annotations

import logging

import hydra
from omegaconf import DictConfig, OmegaConf

from pate.experiments.topk import run_grid, settings_for, write_topk_report
from pate.locations import CONFIG_DIR
from pate.pipeline.cli import start
from pate.pipeline.help import groups_help

log = logging.getLogger("topk")
# --help lists the groups topk.py composes (conf/topk.yaml), not every directory of conf/.
OmegaConf.register_new_resolver("topk_groups", lambda: groups_help("topk"), replace=True)


def run(cfg: DictConfig, output_dir: str):
    """Run the experiment ``cfg.topk_experiment`` and write its report into ``cfg.report_dir`` or ``output_dir``."""
    experiment = cfg.topk_experiment
    unknown = [name for name in experiment.methods if name not in cfg.mechanisms]
    if unknown:
        raise ValueError(f"topk_experiment.methods names unknown mechanisms {unknown}; known: {list(cfg.mechanisms)}")
    factories = {name: hydra.utils.instantiate(cfg.mechanisms[name]) for name in experiment.methods}
    settings = settings_for(OmegaConf.to_container(experiment.data, resolve=True), experiment.ks, experiment.delta)
    rows = run_grid(
        settings,
        experiment.epsilons,
        factories,
        experiment.trials,
        cfg.neighbors,
        cfg.kbar_factor,
        cfg.seed,
        progress=cfg.progress,
        noise=cfg.noise,
    )
    paths = write_topk_report(rows, OmegaConf.to_container(cfg, resolve=False), cfg.report_dir or output_dir)
    log.info("wrote %s", ", ".join(str(path) for path in paths.values()))
    return rows


# An absolute config path: the clone's conf/ or the installed copy (pate.locations); Hydra names the job after this
# file.
@hydra.main(version_base="1.3", config_path=str(CONFIG_DIR), config_name="topk")
def main(cfg: DictConfig) -> None:
    run(cfg, hydra.core.hydra_config.HydraConfig.get().runtime.output_dir)


def cli() -> None:
    """The command line: ``pate-topk`` / ``python topk.py [overrides]`` (and the in-process runner of the tests)."""
    start(main)


__all__ = ["cli", "main", "run"]
