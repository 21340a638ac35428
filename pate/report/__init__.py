"""Reports of finished sweeps: tables, plots and report.md from a Hydra multirun directory.

``python -m pate.report <sweep dir> [--out DIR]`` by hand, ``pate.report.callback.ReportCallback`` at the
end of a multirun. Imports no torch and no Lightning: a report needs only the sweep's files.
"""

from pate.report.collect import FailedJob, Run, Sweep, collect_sweep
from pate.report.generate import Report, write_report
from pate.report.summary import Cell, Headline, Stat, Summary, headline, summarize

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
