"""Reports of finished sweeps: tables, plots and report.md from a Hydra multirun directory.

``python -m pate.report <sweep dir> [--out DIR]`` by hand, ``pate.report.callback.ReportCallback`` at the
end of a multirun. Imports no torch and no Lightning: a report needs only the sweep's files. Its names are
imported on first use, so a run that reads one helper of ``pate.report.collect`` does not load matplotlib.
"""

from pate.lazy import lazy_names

_HOMES = {
    **dict.fromkeys(["FailedJob", "Run", "Sweep", "collect_sweep"], "pate.report.collect"),
    **dict.fromkeys(["Report", "write_report"], "pate.report.generate"),
    **dict.fromkeys(["Cell", "Headline", "Stat", "Summary", "headline", "summarize"], "pate.report.summary"),
}
__all__ = [
    "Cell",
    "FailedJob",
    "Headline",
    "Report",
    "Run",
    "Stat",
    "Summary",
    "Sweep",
    "collect_sweep",
    "headline",
    "summarize",
    "write_report",
]
__getattr__ = lazy_names(__name__, _HOMES)
