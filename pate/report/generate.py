"""Write the report of a finished sweep: report.md, results.csv and its plots, of the kind the sweep names.

A sweep names its report by the ``report`` key of its config (``conf/train.yaml``; an experiment sets it): a
name in ``REPORTS``, the registry of report kinds. ``accuracy_vs_epsilon`` (the default) compares methods at the
same (epsilon, delta) and relation; ``accuracy_vs_queries`` and ``accuracy_vs_teachers`` plot student accuracy
against the number of queries or of teachers at a fixed epsilon (``pate.report.axis``).
The kind is read from the sweep's ``multirun.yaml``, never guessed from the results.

``publishable=True`` writes the publishable form of any kind: every statistic the epsilons do not cover
(``pate.run_record.NOT_COVERED_BY_EPSILON``: teacher accuracy, the reference students, the data-dependent statistics,
a seeded run's seed) is left out of results.csv, report.md and the plots
(``pate.report.collect.publishable_form``)."""

from __future__ import annotations

import io
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Mapping

import yaml

from pate.io import atomic_write_bytes
from pate.report.axis import AXES, AxisSummary, axis_csv, axis_plot, render_axis_report, summarize_axis
from pate.report.collect import Sweep, collect_sweep, publishable_form
from pate.report.markdown import render_report
from pate.report.plots import make_plots
from pate.report.summary import CALIBRATION_TOLERANCE, Summary, calibration_miss, headline, summarize
from pate.report.tables import results_csv

REPORT_NAME = "report.md"
CSV_NAME = "results.csv"


@dataclass(frozen=True)
class Report:
    """What write_report wrote (file name -> path) and the summary it was computed from."""

    files: Mapping[str, Path]
    summary: Summary | AxisSummary

    def notices(self) -> list[str]:
        """One line per thing a reader must not miss: failed jobs, calibration misses, warnings."""
        sweep = self.summary.sweep
        lines = [
            f"failed job (no metrics.json): {sweep.directory / job.job} ({' '.join(job.overrides)})"
            for job in sweep.failed
        ]
        lines += [f"epsilon not verified: {reason}" for reason in sweep.unverified]
        if sweep.never_started:
            lines.append(
                f"{len(sweep.never_started)} job(s) promised by the sweep's overrides never started: "
                + "; ".join(f"job {job.job} ({' '.join(job.overrides)})" for job in sweep.never_started)
            )
        if sweep.foreign:
            lines.append(
                f"jobs {list(sweep.foreign)} hold settings this sweep's overrides do not produce (another "
                f"sweep's results?): left out of the report"
            )
        misses = [run.job for run in sweep.runs if calibration_miss(run.metrics)]
        if misses:
            lines.append(
                f"jobs {misses} miss their target epsilon by more than {CALIBRATION_TOLERANCE:.0%} "
                f"(neighbors={sweep.relation}, delta={sweep.delta:g})"
            )
        return lines + list(self.summary.warnings)


def _shown(sweep: Sweep, publishable: bool) -> Sweep:
    """The sweep a report shows: as collected, or its publishable form."""
    return publishable_form(sweep) if publishable else sweep


def _epsilon_report(sweep_dir, cache_dir=None, publishable=False) -> tuple[Summary, dict, dict]:
    summary = summarize(_shown(collect_sweep(sweep_dir, cache_dir=cache_dir), publishable))
    contents = {
        REPORT_NAME: render_report(summary, headline(summary)).encode(),
        CSV_NAME: results_csv(summary).encode(),
    }
    return summary, contents, make_plots(summary)


def _axis_report(field: str) -> Callable[..., tuple[AxisSummary, dict, dict]]:
    """The report of student accuracy against the run-record ``field`` (a key of ``pate.report.axis.AXES``)."""
    axis = AXES[field]

    def report(sweep_dir, cache_dir=None, publishable=False) -> tuple[AxisSummary, dict, dict]:
        summary = summarize_axis(_shown(collect_sweep(sweep_dir, axis=field, cache_dir=cache_dir), publishable), axis)
        contents = {REPORT_NAME: render_axis_report(summary).encode(), CSV_NAME: axis_csv(summary).encode()}
        return summary, contents, {axis.plot_name: axis_plot(summary)}

    return report


# The report kinds a sweep can name (its config's `report` key): name -> ((sweep directory, cache directory or
# None: each job's own, publishable) -> summary, the text files, the figures). A new kind of report is one function
# here and one experiment config that names it.
REPORTS: dict[str, Callable[..., tuple]] = {
    "accuracy_vs_epsilon": _epsilon_report,
    "accuracy_vs_queries": _axis_report("queries"),
    "accuracy_vs_teachers": _axis_report("num_teachers"),
}


def report_kind(sweep_dir: str | Path) -> str:
    """The report kind the sweep's config names (``report`` in its ``multirun.yaml``)."""
    path = Path(sweep_dir) / "multirun.yaml"
    if not path.is_file():
        raise ValueError(
            f"sweep_dir={str(sweep_dir)!r}: no multirun.yaml; expected the directory of a finished "
            f"Hydra multirun (hydra.sweep.dir)"
        )
    config = yaml.safe_load(path.read_text())
    kind = config.get("report") if isinstance(config, dict) else None
    if kind is None:
        raise ValueError(
            f"{path}: the sweep names no report kind (its config's `report` key, one of "
            f"{sorted(REPORTS)}); pass it with --kind"
        )
    return str(kind)


def write_report(
    sweep_dir: str | Path,
    out_dir: str | Path | None = None,
    kind: str | None = None,
    cache_dir: str | Path | None = None,
    publishable: bool = False,
) -> Report:
    """Read the sweep at `sweep_dir` and write the report of ``kind`` (default: the one the sweep's config
    names) into `out_dir` (default: the sweep directory). Every job's epsilon is replayed from its ledger in
    ``cache_dir`` (default: the cache each job's config names, ``pate.report.verify``). ``publishable`` writes the
    publishable form (module docstring).

    Everything is computed before the first file is written, so bad input (see ``collect_sweep``) raises
    ValueError without leaving a partial report.
    """
    kind = report_kind(sweep_dir) if kind is None else kind
    if kind not in REPORTS:
        raise ValueError(f"report kind {kind!r} is unknown; expected one of {sorted(REPORTS)}")
    summary, contents, figures = REPORTS[kind](Path(sweep_dir), cache_dir, publishable)
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
