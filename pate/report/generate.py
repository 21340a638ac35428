"""Write the report of a finished sweep: report.md, results.csv and the metric-vs-epsilon PNGs, or, for a sweep
over the number of queries, the query-budget report (``pate.report.queries``)."""

from __future__ import annotations

import io
from dataclasses import dataclass
from pathlib import Path
from typing import Mapping

from pate.io import atomic_write_bytes
from pate.report.collect import collect_sweep
from pate.report.markdown import render_report
from pate.report.plots import make_plots
from pate.report.queries import PLOT_NAME as QUERY_PLOT
from pate.report.queries import QuerySummary, query_csv, query_plot, render_query_report, summarize_queries
from pate.report.summary import CALIBRATION_TOLERANCE, Summary, calibration_miss, headline, summarize
from pate.report.tables import results_csv

REPORT_NAME = "report.md"
CSV_NAME = "results.csv"


@dataclass(frozen=True)
class Report:
    """What write_report wrote (file name -> path) and the summary it was computed from."""

    files: Mapping[str, Path]
    summary: Summary | QuerySummary

    def notices(self) -> list[str]:
        """One line per thing a reader must not miss: failed jobs, calibration misses, warnings."""
        sweep = self.summary.sweep
        lines = [f"failed job (no metrics.json): {sweep.directory / job.job}" for job in sweep.failed]
        misses = [run.job for run in sweep.runs if calibration_miss(run.metrics)]
        if misses:
            lines.append(f"jobs {misses} miss their target epsilon by more than {CALIBRATION_TOLERANCE:.0%} "
                         f"(neighbors={sweep.relation}, delta={sweep.delta:g})")
        return lines + list(self.summary.warnings)


def write_report(sweep_dir: str | Path, out_dir: str | Path | None = None) -> Report:
    """Read the sweep at `sweep_dir` and write its report into `out_dir` (default: the sweep directory).

    Everything is computed before the first file is written, so bad input (see ``collect_sweep``) raises
    ValueError without leaving a partial report.
    """
    sweep = collect_sweep(sweep_dir, mixed_queries=True)
    if len({run.metrics["queries"] for run in sweep.runs}) > 1:  # a sweep over data.num_queries
        summary = summarize_queries(sweep)
        contents = {REPORT_NAME: render_query_report(summary).encode(), CSV_NAME: query_csv(summary).encode()}
        figures = {QUERY_PLOT: query_plot(summary)}
    else:
        summary = summarize(sweep)
        contents = {REPORT_NAME: render_report(summary, headline(summary)).encode(),
                    CSV_NAME: results_csv(summary).encode()}
        figures = make_plots(summary)
    for name, fig in figures.items():
        buffer = io.BytesIO()
        # No metadata: the PNG depends on the data only (matplotlib otherwise stamps its version).
        fig.savefig(buffer, format="png", dpi=120, metadata={"Software": None})
        contents[name] = buffer.getvalue()
    out = Path(sweep_dir if out_dir is None else out_dir)
    out.mkdir(parents=True, exist_ok=True)
    for name, data in contents.items():
        atomic_write_bytes(out / name, data)
    return Report({name: out / name for name in contents}, summary)
