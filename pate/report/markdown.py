"""report.md of a sweep: what was run, the headline, the results and reference tables, the calibration
check, failed jobs, the plots, the job list and the configs. Deterministic text: no timestamps, no
absolute paths, fixed number formats."""

from __future__ import annotations

from typing import Any, Callable, Iterable

import yaml

from pate.report.collect import Run, shown_overrides
from pate.report.plots import PLOTS
from pate.report.limits import limits_section
from pate.report.summary import (
    CALIBRATION_TOLERANCE,
    HEADLINE_FRACTION,
    NON_PRIVATE,
    TARGET,
    Cell,
    Headline,
    Summary,
    calibration_error,
    calibration_miss,
    distinct,
    true_labels_reference,
)
from pate.report.tables import (
    REFERENCES_NOT_COVERED,
    format_epsilon,
    format_stat,
    format_value,
    jobs_table,
    publishable_note,
    reference_table,
    results_table,
    verified_text,
)
from pate.report.guarantee import opening
from pate.report.units import TEACHER_LEVEL_MARK, teacher_level

RELATION_TEXT = {
    "replace": "one teacher's vote vector replaced: every label count may move by at most 1, in either direction; "
    "for DP-SGD and Private-kNN, one training record replaced, or all of one person's where a run is person-level "
    "(each method's unit: the one-neighbour line above and the unit column)",
    "add_remove": "one teacher's vote added or removed: every label count moves by at most 1, all in the same "
    "direction (the accounting of the literature; for PATE a teacher-level relation, NOT a record-level "
    "guarantee); for DP-SGD and Private-kNN, one training record added or removed (record-level)",
}


def _privacy(summary: Summary) -> str:
    return f"neighbors={summary.sweep.relation}, δ={summary.sweep.delta:g}"


def _listing(runs: Iterable[Run], get: Callable[[Run], Any]) -> str:
    """The distinct values of get(run), sorted (null last), comma-separated."""
    return ", ".join(format_value(v) for v in sorted(distinct(runs, get), key=lambda v: (v is None, v)))


def _values(runs: Iterable[Run], key: str) -> str:
    """A setting every run should share; flagged in the text where it does not."""

    def get(run: Run) -> Any:
        return run.metrics[key]

    text = _listing(runs, get)
    return text if len(distinct(runs, get)) == 1 else f"{text} (differs between jobs)"


def released_by(run: Run) -> str:
    """What released the labels or the model: PATE's aggregator, another method's mechanism, or its name."""
    return run.metrics.get("aggregator") or run.metrics.get("mechanism") or run.metrics["method"]


def _teachers(runs: Iterable[Run]) -> str:
    """The teachers of the PATE runs (the other methods train none)."""
    with_teachers = [run for run in runs if "num_teachers" in run.metrics]
    if not with_teachers:
        return "none"
    text = _values(with_teachers, "num_teachers")
    return text if len(with_teachers) == len(list(runs)) else f"{text} (PATE runs; the other methods train none)"


def _grid_point(cell: Cell) -> str:
    word = "target ε" if cell.axis == TARGET else "achieved ε"
    return f"{word} {format_epsilon(cell.epsilon)}"


def _method_line(method: str, aggregators: list[str]) -> str:
    """One line per method: its aggregator, or -- when calibration gave each ε its own noise -- how many
    settings there were and the first of them (every run's noise is in results.csv)."""
    if len(aggregators) == 1:
        return f"  - `{method}`: {aggregators[0]}"
    return (
        f"  - `{method}`: {len(aggregators)} noise settings (calibrated per ε; each run's in results.csv), "
        f"e.g. {aggregators[0]}"
    )


def _what_was_run(summary: Summary) -> list[str]:
    sweep, runs = summary.sweep, summary.sweep.runs
    methods = distinct(runs, lambda run: (run.metrics["method"], released_by(run)))
    grid = sorted({c.epsilon for c in summary.cells if c.axis != NON_PRIVATE})
    versions = sorted({key for run in runs for key in run.metrics["versions"]})
    lines = [
        "## What was run",
        "",
        f"- Relation: `neighbors={sweep.relation}` ({RELATION_TEXT[sweep.relation]}).",
        f"- δ = {sweep.delta:g}.",
        f"- Public queries per run: {_values(runs, 'queries')}.",
        f"- Data: {_values(runs, 'data')}; teachers: {_teachers(runs)}; labels: {_values(runs, 'num_labels')}.",
        "- Methods (conf/compare: a PATE aggregator, dp_sgd or private_knn):",
        *(
            _method_line(method, [a for m, a in sorted(methods) if m == method])
            for method in sorted({m for m, _ in methods})
        ),
        f"- Seeds: {_seeds(sweep)}.",
        f"- ε grid: {', '.join(f'{x:g}' for x in grid) or 'none (non-private runs only)'}.",
        f"- Jobs: {len(runs) + len(sweep.failed)} ({len(runs)} finished, {len(sweep.failed)} failed)"
        + (
            f"; {len(sweep.never_started)} more promised by the sweep's overrides never started (the sweep was cut "
            f"short: rerun it, finished jobs come from the cache; listed under Failed jobs)."
            if sweep.never_started
            else "."
        ),
        f"- Privacy verified: {verified_text(sweep)}",
        f"- Sweep overrides: {' '.join(f'`{o}`' for o in shown_overrides(sweep, sweep.overrides)) or 'none'}.",
        "- Versions: "
        + "; ".join(f"{key} {_listing(runs, lambda run: run.metrics['versions'].get(key))}" for key in versions)
        + ".",
        _where_and_when(runs),
    ]
    return lines


def _seeds(sweep) -> str:
    """The seeds of the sweep, or only how many where the report hides them (seeded noise, publishable form)."""
    if "seed" in sweep.hidden:
        return (
            f"{len(distinct(sweep.runs, lambda run: run.metrics['seed']))} (their values left out: the noise was "
            f"seeded, and a published seed replays it)"
        )
    return _listing(sweep.runs, lambda run: run.metrics["seed"])


def _where_and_when(runs) -> str:
    """The machines the jobs ran on and the days they ended (metrics.json's ``host``; runs before it have none)."""
    hosts = [run.metrics["host"] for run in runs if isinstance(run.metrics.get("host"), dict)]
    if not hosts:
        return "- Machines: not recorded by these runs."
    machines = sorted(
        {
            f"{h['cpu']} ({h['logical_cpus']} logical CPUs"
            + (f", {h['accelerator']}" if h.get("accelerator") else "")
            + ")"
            for h in hosts
        }
    )
    days = sorted(h["finished_utc"][:10] for h in hosts if "finished_utc" in h)
    span = "" if not days else f"; finished {days[0]}" if days[0] == days[-1] else f"; finished {days[0]} to {days[-1]}"
    missing = len(runs) - len(hosts)
    unrecorded = (
        f" ({missing} job{'s' if missing > 1 else ''} did not record {'theirs' if missing > 1 else 'its'})"
        if missing
        else ""
    )
    return f"- Machines: {'; '.join(machines)}{span}{' (UTC)' if days else ''}{unrecorded}."


def _marked(summary: Summary, method: str) -> str:
    """A method's name, marked where its epsilons are teacher-level (``pate.report.units``)."""
    runs = [run for cell in summary.cells if cell.method == method for run in cell.runs]
    return f"{method} {TEACHER_LEVEL_MARK}" if teacher_level(runs) else method


def _headline(summary: Summary, lines: tuple[Headline, ...]) -> list[str]:
    out = ["## Headline", ""]
    threshold = lines[0].threshold if lines else None
    if "reference.true_labels" in summary.sweep.hidden:
        return out + [
            "Left out of this publishable form: the headline is measured against the student on the true "
            "labels, a diagnostic not covered by ε."
        ]
    if threshold is None:
        return out + [
            "No true-labels reference in this sweep (reference runs were off), so the headline "
            "(the ε at which the student reaches "
            f"{HEADLINE_FRACTION:.0%} of the non-private student's accuracy) cannot be computed."
        ]
    thresholds = {line.threshold for line in lines}
    if len(thresholds) == 1:
        reference = summary.references[true_labels_reference(summary, lines[0].method)]["student_accuracy"]
        out += [
            f"Smallest ε on the grid at which the student's mean accuracy reaches {HEADLINE_FRACTION:.0%} of "
            f"the student trained on the true labels ({HEADLINE_FRACTION:g} × {reference.mean:.4f} = "
            f"{threshold:.4f}); {_privacy(summary)}:",
            "",
        ]
    else:
        out += [
            f"Smallest ε on the grid at which the student's mean accuracy reaches {HEADLINE_FRACTION:.0%} of "
            f"the same kind of student (supervised or semi-supervised) trained on the true labels; "
            f"{_privacy(summary)}. Thresholds: "
            + "; ".join(f"{line.method} {line.threshold:.4f}" for line in lines if line.threshold is not None)
            + ".",
            "",
        ]
    for line in lines:
        if not line.private:
            out.append(f"- **{_marked(summary, line.method)}**: non-private runs only, no ε.")
        elif line.best is None:
            out.append(
                f"- **{_marked(summary, line.method)}**: not reached on this grid (no query answered at any "
                f"ε of the grid, so no student was trained)."
            )
        elif line.reached is not None:
            out.append(
                f"- **{_marked(summary, line.method)}**: {_grid_point(line.reached)} (student accuracy "
                f"{format_stat(line.reached.stats['student_accuracy'])})."
            )
        else:
            out.append(
                f"- **{_marked(summary, line.method)}**: not reached on this grid (best: "
                f"{format_stat(line.best.stats['student_accuracy'])} at {_grid_point(line.best)})."
            )
    if teacher_level(summary.sweep.runs):
        out += [
            "",
            f"{TEACHER_LEVEL_MARK} teacher-level ε: not a record-level guarantee, not comparable with the "
            f"record-level methods' ε (see the note under the results table).",
        ]
    return out


def _calibration(summary: Summary) -> list[str]:
    targeted = [run for run in summary.sweep.runs if run.metrics["target_epsilon"] is not None]
    out = ["## Calibration", ""]
    if not targeted:
        return out + ["No run had a target ε (the noise came from the configs)."]
    misses = [run for run in targeted if calibration_miss(run.metrics)]
    if not misses:
        return out + [
            f"All {len(targeted)} runs with a target ε achieved it within "
            f"{CALIBRATION_TOLERANCE:.0%} ({_privacy(summary)})."
        ]
    out += [
        f"**{len(misses)} of {len(targeted)} runs miss their target ε by more than "
        f"{CALIBRATION_TOLERANCE:.0%}** ({_privacy(summary)}):",
        "",
    ]
    for run in misses:
        m, error = run.metrics, calibration_error(run.metrics)
        direction = "spent MORE than the target" if error > 0 else "spent less than the target"
        seed = "" if "seed" in summary.sweep.hidden else f", seed {m['seed']}"
        out.append(
            f"- job `{run.job}` ({m['method']}{seed}): "
            f"target {format_epsilon(m['target_epsilon'])}, achieved {format_epsilon(m['epsilon'])} "
            f"({error:+.2%}): {direction}."
        )
    return out


def _failed(summary: Summary) -> list[str]:
    """The section naming every job without results: those that failed (a directory, no metrics.json) and those
    that never started (no directory: an earlier job's failure or a kill ended the sweep)."""
    sweep = summary.sweep
    if not sweep.failed and not sweep.never_started:
        return []

    def shown(job) -> str:
        return " ".join(f"`{o}`" for o in shown_overrides(sweep, job.overrides)) or "no overrides"

    out = ["## Failed jobs", ""]
    if sweep.failed:
        out += [
            f"{len(sweep.failed)} job(s) wrote no metrics.json (the job raised or was killed); they are not in "
            "the tables. See each directory's log:",
            "",
        ]
        out += [f"- directory `{job.job}/`: {shown(job)}" for job in sweep.failed] + [""]
    if sweep.never_started:
        out += [f"{len(sweep.never_started)} job(s) the sweep's overrides promise never started (no directory):", ""]
        out += [f"- job {job.job}: {shown(job)}" for job in sweep.never_started] + [""]
    return out


def _yaml(data: Any) -> list[str]:
    return [
        "```yaml",
        yaml.safe_dump(data, sort_keys=False, default_flow_style=False, allow_unicode=True).rstrip(),
        "```",
    ]


def _configs(summary: Summary) -> list[str]:
    runs = summary.sweep.runs
    out = [
        "## Configs",
        "",
        "The config of the first job of each method, as written: its `method` and, for PATE, its "
        "`aggregator`. The noise they name is before calibration; where a target ε was set, each run's calibrated "
        'noise is in results.csv (and one per method under "What was run").',
        "",
    ]
    for method in summary.methods:
        first = next(run for run in runs if run.metrics["method"] == method)
        groups = ("method", "aggregator") if first.metrics.get("aggregator") else ("method",)
        out += [f"`{method}` (job `{first.job}`):", ""]
        shown = {group: first.config[group] for group in groups if group in first.config}
        out += _yaml(shown) if shown else [f"(no {' or '.join(f'`{g}`' for g in groups)} key in the job config)"]
        out.append("")
    first = runs[0]
    config = {key: value for key, value in first.config.items() if key not in summary.sweep.hidden}
    out += [
        "<details><summary>Composed config of job "
        f"<code>{first.job}</code> (the other jobs differ by their overrides, listed in the job table)</summary>",
        "",
        *_yaml(config),
        "",
        "</details>",
    ]
    return out


def render_report(summary: Summary, headline: tuple[Headline, ...]) -> str:
    """The text of report.md."""
    privacy = _privacy(summary)
    lines = [
        f"# Sweep report: {privacy}",
        "",
        *opening(
            summary.sweep.runs, summary.sweep.relation, summary.sweep.delta, ", computed from what the run released."
        ),
        *publishable_note(summary.sweep.hidden),
    ]
    lines += _what_was_run(summary) + [""]
    lines += _headline(summary, headline) + [""]
    lines += [
        "## Results",
        "",
        f'Per method and ε ({privacy}): mean ± sample std (ddof=1) over seeds; "calibration" checks '
        f"every run's achieved ε against its target ({CALIBRATION_TOLERANCE:.0%} tolerance). "
        "Released-label F1 is measured on the answered queries only.",
        "",
        results_table(summary),
    ]
    if summary.references:
        lines += [
            "## Reference lines (not covered by ε)",
            "",
            REFERENCES_NOT_COVERED,
            "Identical across the jobs of one seed; mean ± std over seeds.",
            "",
            reference_table(summary),
        ]
    lines += limits_section(summary)
    lines += _calibration(summary) + [""]
    lines += _failed(summary)
    if summary.warnings:
        lines += ["## Warnings", "", *(f"- {w}" for w in summary.warnings), ""]
    lines += ["## Plots", "", *(f"![{spec.metric} vs epsilon]({spec.filename})" for spec in PLOTS), ""]
    lines += ["## Jobs", "", jobs_table(summary.sweep)]
    lines += _configs(summary)
    return "\n".join(lines) + "\n"
