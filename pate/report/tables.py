"""Fixed-format tables of a sweep: results.csv (one row per job) and the markdown tables of report.md.

Rows are sorted deterministically and numbers are printed in fixed formats, with no timestamps or absolute
paths, so two sweeps with the same configs and seeds give byte-identical tables.
"""

from __future__ import annotations

import csv
import io
from typing import Any, Iterable, Mapping

from pate.report.collect import Run, Sweep, job_sort_key, shown_overrides
from pate.run_record import FIELDS

# results.csv leads with the run record's checked fields, in its order
_LEADING_FIELDS = tuple(field.name for field in FIELDS if field.checked)
from pate.report.summary import (
    ACHIEVED,
    NON_PRIVATE,
    OPTIONAL_METRICS,
    REFERENCE_METRICS,
    TABLE_METRICS,
    TARGET,
    Cell,
    Stat,
    Summary,
    calibration_error,
    calibration_miss,
)
from pate.report.units import TEACHER_LEVEL_NOTE, teacher_level, unit_cell

METRIC_LABELS = {
    "student_accuracy": "student accuracy",
    "student_f1": "student F1",
    "label_f1": "released-label F1",
    "answered_fraction": "answered fraction",
    "mean_k": "mean k",
    "released_label_fraction": "labels released",
    "epsilon_data_dependent": "raw data-dependent ε (not private, not covered by ε)",
}
REFERENCE_LABELS = {
    "true_labels": "student on the true labels (non-private)",
    "majority_vote": "teacher majority vote (non-private)",
    "majority_class": "majority class (each attribute's majority value on the evaluation split)",
}


# what a report says of its reference lines, wherever it prints them
REFERENCES_NOT_COVERED = (
    "Diagnostics beside the release, NOT covered by any ε of this report: students and labels "
    "computed without noise (the teachers' majority vote, the true labels of the queries). The "
    "publishable form of this report (`pate-report --publishable`) leaves them out."
)


def publishable_note(hidden: tuple[str, ...]) -> list[str]:
    """The lines that open a publishable report: what it left out (``pate.report.collect.publishable_form``)."""
    if not hidden:
        return []
    return [
        f"Publishable form (`pate-report --publishable`): the statistics of the private data that no ε covers "
        f"are left out ({', '.join(f'`{path}`' for path in hidden)}).",
        "",
    ]


def verified_text(sweep: Sweep) -> str:
    """How many finished jobs' epsilons were replayed from their ledgers (pate.report.verify), naming the others."""
    done = len(sweep.runs) - len(sweep.unverified)
    text = (
        f"the ε of {done} of {len(sweep.runs)} finished jobs replayed from the ledger of the release each "
        f"names, and equal to its metrics.json."
    )
    if sweep.unverified:
        text += " Not verified (their releases are not in the cache the report read): " + "; ".join(sweep.unverified)
    return text


def reference_label(name: str) -> str:
    """A reference line's label; ``<name>+<method>`` is the reference for the students of that semi-supervised
    method (pate.report.summary.reference_name)."""
    base, _, semi = name.partition("+")
    return REFERENCE_LABELS.get(base, base) + (f", {semi} student" if semi else "")


# Column order of results.csv: the schema's order, with derived calibration columns after epsilon;
# nested objects (noise, reference, versions, artifacts) become dotted columns, sorted within each.
_CSV_LEADING = ("job", "status")
_CSV_DERIVED_AFTER = {"epsilon": ("epsilon_rel_error", "calibration_miss")}


def format_value(value: Any) -> str:
    """CSV cell: '' for null, true/false, integers as is, floats to 6 significant digits."""
    if value is None:
        return ""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        return f"{value:.6g}"
    return str(value)


def format_epsilon(epsilon: float) -> str:
    return f"{epsilon:.3f}"


def format_stat(stat: Stat | None, digits: int = 4) -> str:
    """'mean ± std' with `digits` decimals; the mean alone for one seed; 'n/a' for a null metric."""
    if stat is None:
        return "n/a"
    if stat.std is None:
        return f"{stat.mean:.{digits}f}"
    return f"{stat.mean:.{digits}f} ± {stat.std:.{digits}f}"


def _flatten(prefix: str, value: Any) -> dict[str, Any]:
    if isinstance(value, Mapping):
        flat: dict[str, Any] = {}
        for key in sorted(value):
            flat.update(_flatten(f"{prefix}.{key}", value[key]))
        return flat
    return {prefix: value}


def _csv_record(metrics: Mapping[str, Any]) -> dict[str, Any]:
    record: dict[str, Any] = {}
    for key in [k for k in _LEADING_FIELDS if k in metrics] + sorted(set(metrics) - set(_LEADING_FIELDS)):
        record.update(_flatten(key, metrics[key]) if isinstance(metrics[key], Mapping) else {key: metrics[key]})
    record["epsilon_rel_error"] = calibration_error(metrics)
    record["calibration_miss"] = calibration_miss(metrics)
    return record


def _csv_columns(records: Iterable[Mapping[str, Any]]) -> list[str]:
    present = set().union(*records)
    columns = list(_CSV_LEADING)
    for key in _LEADING_FIELDS:
        if key in present:
            columns.append(key)
        columns.extend(sorted(c for c in present if c.startswith(key + ".")))
        columns.extend(_CSV_DERIVED_AFTER.get(key, ()))
    known = set(columns)
    columns.extend(sorted(c for c in present - known if c != "overrides"))
    columns.append("overrides")
    return columns


def results_csv(summary: Summary) -> str:
    """One row per job: finished runs in table order (method, epsilon, seed), then failed jobs in job order."""
    return runs_csv(
        [
            run
            for cell in summary.cells
            for run in sorted(cell.runs, key=lambda r: (r.metrics["seed"], job_sort_key(r.job)))
        ],
        summary.sweep,
    )


def runs_csv(runs: Iterable[Run], sweep: Sweep) -> str:
    """results.csv of any report: one row per finished run in the given order, every field of its run record
    (nested objects as dotted columns) but the ones the sweep hides (its publishable form,
    ``pate.report.collect.publishable_form``), then one row per failed job of ``sweep`` and one per job it never
    started."""

    def overrides(of: tuple[str, ...]) -> str:
        return " ".join(shown_overrides(sweep, of))

    records = [
        {"job": run.job, "status": "finished", **_csv_record(run.metrics), "overrides": overrides(run.overrides)}
        for run in runs
    ]
    records += [{"job": job.job, "status": "failed", "overrides": overrides(job.overrides)} for job in sweep.failed]
    records += [
        {"job": job.job, "status": "never started", "overrides": overrides(job.overrides)}
        for job in sweep.never_started
    ]
    columns = [
        column
        for column in _csv_columns(records)
        if not any(column == path or column.startswith(path + ".") for path in sweep.hidden)
    ]
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(columns)
    for record in records:
        writer.writerow(format_value(record.get(column)) for column in columns)
    return out.getvalue()


def _markdown(header: list[str], rows: list[list[str]]) -> str:
    lines = ["| " + " | ".join(header) + " |", "|" + "|".join("---" for _ in header) + "|"]
    lines += ["| " + " | ".join(cell.replace("|", "\\|") for cell in row) + " |" for row in rows]
    return "\n".join(lines) + "\n"


def _target_text(cell: Cell) -> str:
    if cell.axis == NON_PRIVATE:
        return "non-private"
    if cell.axis == ACHIEVED:
        return "none (noise from config)"
    return format_epsilon(cell.epsilon)


def _calibration_text(cell: Cell) -> str:
    if cell.axis != TARGET:
        return "no target"
    misses = cell.calibration_misses
    return "within 1%" if misses == 0 else f"{misses} of {len(cell.runs)} runs off by >1%"


def results_table(summary: Summary) -> str:
    """Mean ± std over seeds per (method, epsilon) cell, with the achieved epsilon, its unit (teacher-level rows
    marked, and the note saying why under the table) and the calibration check."""
    metrics = TABLE_METRICS + tuple(m for m in OPTIONAL_METRICS if any(cell.stats[m] for cell in summary.cells))
    header = ["method", "target ε", "achieved ε", "unit", "calibration", "seeds"] + [METRIC_LABELS[m] for m in metrics]
    rows = []
    for cell in summary.cells:
        rows.append(
            [
                cell.method,
                _target_text(cell),
                format_stat(cell.stats["epsilon"], 3),
                unit_cell(cell.runs),
                _calibration_text(cell),
                str(len(cell.runs)),
            ]
            + [_partial(format_stat(cell.stats[m]), cell.stats[m], len(cell.runs)) for m in metrics]
        )
    return _markdown(header, rows) + _teacher_level_note(summary.sweep.runs)


def _teacher_level_note(runs: Iterable[Run]) -> str:
    """Under a table with teacher-level rows: why they are marked and not comparable with the others."""
    return f"\n{TEACHER_LEVEL_NOTE}\n" if teacher_level(runs) else ""


def _partial(text: str, stat, runs: int) -> str:
    """Mark a statistic taken over fewer runs than the cell has (the others answered no query)."""
    return text if stat is None or stat.n == runs else f"{text} (n={stat.n})"


def reference_table(summary: Summary) -> str:
    """Reference lines (diagnostics NOT covered by ε, left out of the publishable form): mean ± std over seeds."""
    header = ["reference", "seeds"] + [METRIC_LABELS[m] for m in REFERENCE_METRICS]
    rows = []
    for name in sorted(summary.references):
        stats = summary.references[name]
        seeds = max(stat.n for stat in stats.values())
        rows.append([reference_label(name), str(seeds)] + [format_stat(stats.get(m)) for m in REFERENCE_METRICS])
    return _markdown(header, rows)


def jobs_table(sweep: Sweep) -> str:
    """Every job directory of the sweep (relative names), finished or failed, and every job it never started, in
    job order, with the unit of its epsilon; without the seed column where the sweep hides the seed (its publishable
    form)."""
    entries = [
        (
            run.job,
            "finished",
            run.metrics["method"],
            format_value(run.metrics["seed"]),
            format_value(run.metrics["target_epsilon"]),
            format_value(run.metrics["epsilon"]),
            unit_cell([run]),
            run.overrides,
        )
        for run in sweep.runs
    ]
    entries += [(job.job, "**failed**", "", "", "", "", "", job.overrides) for job in sweep.failed]
    entries += [(job.job, "**never started**", "", "", "", "", "", job.overrides) for job in sweep.never_started]
    entries.sort(key=lambda e: job_sort_key(e[0]))
    seeds = "seed" not in sweep.hidden
    rows = [
        [
            job,
            status,
            method,
            *([seed] if seeds else []),
            target,
            eps,
            unit,
            " ".join(f"`{o}`" for o in shown_overrides(sweep, overrides)),
        ]
        for job, status, method, seed, target, eps, unit, overrides in entries
    ]
    header = ["job", "status", "method", *(["seed"] if seeds else []), "target ε", "achieved ε", "unit", "overrides"]
    return _markdown(header, rows) + _teacher_level_note(sweep.runs)
