"""The private top-k application of the papers, in one place: the histograms it runs on (``histograms``: flat,
growing-gap days, check-in data), the grid runner (``grid``: settings x epsilons x k x mechanisms, each
mechanism calibrated by its own accountant) and its report (``report``: results.csv, report.md, recall.png).
Its command line is ``pate-topk`` / ``python topk.py`` (``pate.pipeline.topk``, the Hydra edge) with
conf/topk.yaml and conf/topk_experiment/; the mechanisms themselves are ``pate.mechanisms.topk``.
"""

from pate.experiments.topk.grid import Setting, run_grid, settings_for
from pate.experiments.topk.report import CSV_COLUMNS, write_topk_report

__all__ = ["CSV_COLUMNS", "Setting", "run_grid", "settings_for", "write_topk_report"]
