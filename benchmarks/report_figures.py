"""Tables quoted from the committed sweep reports, rendered from their ``results.csv`` (one row per job), never typed
by hand. benchmarks/figures.py calls :func:`render` for a block that names a results.csv; the part after ``#`` says
which table, as ``key=value`` pairs joined by ``&``::

    <!-- figures: benchmarks/results/eps_sweep_replace/results.csv#value=student_accuracy&by=target_epsilon -->

- ``value``: the column averaged over seeds (default ``student_accuracy``; any of :data:`VALUES`);
- ``by``: the column axis, ``target_epsilon`` (default) or ``queries``;
- ``only``: the axis values shown, comma-separated (default: every value in the file; ``none``: the runs without a
  target epsilon, at their configured noise);
- ``methods``: the methods shown, comma-separated, in that order (default: every method, in the file's order);
- ``sd``: ``cell`` puts each cell's standard deviation over seeds beside its mean (default: the largest one in the
  caption).

The caption says which file, which jobs, which commit(s), relation and delta, and -- where the runs recorded them
(metrics.json's ``host``) -- the date and the machine. A top-k experiment's results.csv (``python topk.py``) has its
own table, of recall: :func:`render_topk`.
"""

from __future__ import annotations

import csv
import re
from dataclasses import dataclass
from pathlib import Path

from pate.report.summary import Stat  # the reports' own mean and sample sd over seeds

__all__ = ["VALUES", "render", "render_topk"]


@dataclass(frozen=True)
class Value:
    what: str
    higher_is_better: bool | None  # None: not a score, no column has a best
    digits: int = 4
    on_answered: bool = False  # scored on the answered queries only: a best among different sets is no best


# what a column means in a caption; a value that is not a DP guarantee says so here
VALUES = {
    "student_accuracy": Value("student accuracy on the evaluation images", True),
    "student_f1": Value("student macro F1 on the evaluation images", True),
    "label_accuracy": Value("accuracy of the released labels on the answered queries", True, on_answered=True),
    "label_f1": Value("micro F1 of the released labels on the answered queries", True, on_answered=True),
    "mean_k": Value("mean number of labels released per answered query", None, 2),
    "answered_fraction": Value("fraction of the queries answered", None, 3),
    "released_label_fraction": Value("fraction of the (query, label) pairs released", None, 3),
    "epsilon": Value("epsilon, the DP guarantee of the release", None, 3),
    "epsilon_data_dependent": Value("the raw data-dependent epsilon (Papernot et al. 2018) of the same votes, NOT "
                                    "itself a DP guarantee (a diagnostic)", None, 2),
}
AXES = {"target_epsilon": "target epsilon", "queries": "public queries Q"}
OPTIONS = ("value", "by", "only", "methods", "sd")


def _pairs(part: str, file: str, allowed: tuple[str, ...]) -> dict[str, str]:
    """The ``key=value`` pairs of a block's part, each key one of ``allowed`` and given once."""
    pairs = [pair.partition("=") for pair in part.split("&")] if part else []
    malformed = [key for key, equals, _ in pairs if not equals]
    if malformed:
        raise ValueError(f"{file}#{part}: expected key=value pairs joined by '&', got {malformed}")
    parsed: dict[str, list[str]] = {}
    for key, _, text in pairs:
        parsed.setdefault(key, []).append(text)
    unknown = sorted(set(parsed) - set(allowed))
    if unknown:
        raise ValueError(f"{file}#{part}: unknown option(s) {unknown}; expected some of {list(allowed)}")
    repeated = sorted(key for key, values in parsed.items() if len(values) > 1)
    if repeated:
        raise ValueError(f"{file}#{part}: option(s) {repeated} given twice")
    return {key: values[0] for key, values in parsed.items()}


def _options(part: str, file: str) -> dict[str, str]:
    options = {"value": "student_accuracy", "by": "target_epsilon", "only": "", "methods": "", "sd": "caption"}
    options.update(_pairs(part, file, OPTIONS))
    if options["value"] not in VALUES:
        raise ValueError(f"{file}#{part}: value={options['value']!r}, expected one of {sorted(VALUES)}")
    if options["by"] not in AXES:
        raise ValueError(f"{file}#{part}: by={options['by']!r}, expected one of {sorted(AXES)}")
    if options["sd"] not in ("caption", "cell"):
        raise ValueError(f"{file}#{part}: sd={options['sd']!r}, expected 'caption' or 'cell'")
    return options


def _number(text: str | None) -> float | None:
    return float(text) if text not in (None, "") else None


def _point(text: str) -> float | None:
    """An axis value of the file or of ``only``: a number, or None for none (a run with no target epsilon: its
    configured noise); "none" in ``only``."""
    return None if text in ("", "none") else float(text)


def _axis_order(point: float | None) -> tuple[bool, float]:
    return point is not None, point or 0.0


def _axis_label(point: float | None) -> str:
    return "none (the configured noise)" if point is None else f"{point:g}"


@dataclass(frozen=True)
class _Cell:
    jobs: int
    values: tuple[float, ...]  # the seeds that have a value
    answered: float | None  # mean fraction of the queries answered

    @property
    def partial(self) -> bool:
        """Some queries went unanswered (in the mean over seeds)."""
        return self.answered is not None and self.answered < 0.995

    def mean(self, digits: int) -> float:
        return round(Stat.of(self.values).mean, digits)

    def text(self, value: Value, with_sd: bool, best: float | None) -> str:
        """The cell as a page shows it; bold where its mean, as shown, is the column's ``best``."""
        answered = f"{100 * self.answered:.2g}% answered" if self.partial else ""
        if not self.values:
            if self.answered == 0:
                return "no answer"
            return f"no value ({answered})" if answered else "no value"
        stat = Stat.of(self.values)
        number = f"{stat.mean:.{value.digits}f}"
        eligible = not (value.on_answered and self.partial)  # as _best decides
        text = f"**{number}**" if eligible and best is not None and self.mean(value.digits) == best else number
        if with_sd and len(self.values) > 1:
            text += f" ± {stat.std:.{value.digits}f}"
        notes = [answered] if answered else []
        if len(self.values) < self.jobs:
            notes.append(f"{len(self.values)} of {self.jobs} seeds")
        return f"{text} ({', '.join(notes)})" if notes else text


def _distinct(rows: list[dict[str, str]], key: str) -> list[str]:
    return sorted({row[key] for row in rows if row.get(key)})


def _report_commit(path: Path) -> list[str]:
    """The commit of a report's "Versions: git <commit>" line: the query-budget and top-k reports' results.csv
    name none."""
    report = path.with_name("report.md")
    text = report.read_text(encoding="utf-8") if report.is_file() else ""
    return sorted(set(re.findall(r"^(?:- )?Versions: git ([0-9a-z-]+)", text, re.MULTILINE)))


def _provenance(rows: list[dict[str, str]], total: int, path: Path, file: str) -> str:
    commits, relations, deltas = (_distinct(rows, key) for key in ("versions.git", "neighbors", "delta"))
    commits = commits or _report_commit(path)
    if not commits:
        raise ValueError(f"{file}: no versions.git column nor a report.md beside it naming its commit: a quoted "
                         f"figure says which commit it was measured at")
    teachers = _distinct(rows, "num_teachers")
    where = [f"commit{'s' if len(commits) > 1 else ''} {', '.join(commits)}"]
    where += [f"neighbors={', '.join(relations)}"] if relations else []
    where += [f"delta {', '.join(deltas)}"] if deltas else []
    where += [f"data {', '.join(_distinct(rows, 'data'))}"] if "data" in rows[0] else []
    where += [f"{', '.join(teachers)} teachers (PATE)"] if teachers else []
    dates, cpus = _distinct(rows, "host.finished_utc"), _distinct(rows, "host.cpu")
    if dates and cpus:
        logical, accelerators = _distinct(rows, "host.logical_cpus"), _distinct(rows, "host.accelerator")
        span = dates[0][:10] if dates[0][:10] == dates[-1][:10] else f"{dates[0][:10]} to {dates[-1][:10]}"
        where.append(f"finished {span} UTC on {', '.join(cpus)} ({', '.join(logical)} logical CPUs"
                     + (f"; {', '.join(accelerators)}" if accelerators else "") + ")")
    else:
        where.append("date and machine not recorded by these runs (they predate metrics.json's host)")
    jobs = f"{len(rows)} of its {total} finished jobs" if len(rows) < total else f"{total} finished jobs"
    return f"{jobs}; {'; '.join(where)}"


# the reference figures (no privacy cost) a table of each value is read against: (column, what)
REFERENCES = {
    "student_accuracy": (("majority_class_accuracy", "majority class"),
                         ("reference.majority_vote.student_accuracy",
                          "student on the teachers' non-private majority vote"),
                         ("reference.true_labels.student_accuracy", "student on the true labels of the queries")),
    "label_accuracy": (("reference.majority_vote.label_accuracy", "the teachers' non-private majority vote"),),
    "label_f1": (("reference.majority_vote.label_f1", "the teachers' non-private majority vote"),),
}


def _references(rows: list[dict[str, str]], value: str) -> str:
    """The reference figures of ``value`` over ``rows``; one set per student kind where the rows train several (each
    kind has its own reference students)."""
    kinds = _distinct(rows, "student_semi")
    groups = [(kind, [row for row in rows if row.get("student_semi") == kind]) for kind in kinds] \
        if len(kinds) > 1 else [("", rows)]
    sentences = []
    for kind, group in groups:
        parts = []
        for column, name in REFERENCES.get(value, ()):
            values = [v for v in (_number(row.get(column)) for row in group) if v is not None]
            if values:
                parts.append(f"{name} {sum(values) / len(values):.4f}")
        if parts:
            sentences.append((f"{kind} students: " if kind else "") + "; ".join(parts))
    return f"References (no privacy cost, the same queries and evaluation images): {'. '.join(sentences)}." \
        if sentences else ""


def render(path: Path, file: str, part: str) -> list[str]:
    """The table ``part`` asks for (module docstring), from the report rows in ``path`` (shown as ``file``): a
    sweep report's jobs, or a top-k experiment's cells (``python topk.py``; :func:`render_topk`)."""
    with open(path, newline="", encoding="utf-8") as handle:
        rows = [row for row in csv.DictReader(handle) if row.get("status", "finished") == "finished"]
    if rows and "recall_mean" in rows[0]:
        return render_topk(rows, path, file, part)
    options = _options(part, file)
    value, by = VALUES[options["value"]], options["by"]
    axis, methods = _selection(rows, options, file, part)
    shown = [row for row in rows if row["method"] in methods and _point(row[by]) in axis]
    cells = {(method, point): _cell(shown, method, by, point, options["value"]) for method in methods
             for point in axis}
    best = _best(cells, methods, axis, value)
    sds = [Stat.of(c.values).std for c in cells.values() if len(c.values) > 1]
    spread = f" (largest sd {max(sds):.{value.digits}f})" if sds and options["sd"] == "caption" else ""
    spread = " ± sd" if sds and options["sd"] == "cell" else spread
    among = " among the methods that answered every query" if value.on_answered else ""
    notes = [f"bold: the best mean in each column{among}"] if best else []
    if any(c.partial for c in cells.values()):
        notes.append("in brackets the fraction of queries answered where not all (\"no answer\": none in any seed)")
    what = value.what + (" (`dp_sgd`: the released model itself, no student)" if "dp_sgd" in methods else "")
    caption = (f"From `{file}` ({_provenance(shown, len(rows), path, file)}): {what}, by {AXES[by]}, mean over "
               f"seeds {', '.join(_distinct(shown, 'seed'))}{spread}" + "".join(f"; {note}" for note in notes) + ".")
    lines = [caption, "", f"| method | {' | '.join(_axis_label(v) for v in axis)} |", "|---|" + "---:|" * len(axis)]
    lines += [f"| `{method}` | " + " | ".join(cells[method, point].text(value, options["sd"] == "cell",
                                                                          best.get(point)) for point in axis) + " |"
              for method in methods]
    references = _references(shown, options["value"])
    return lines + (["", references] if references else [])


def _selection(rows: list[dict[str, str]], options: dict[str, str], file: str, part: str
               ) -> tuple[list[float | None], list[str]]:
    """The axis values and the methods a table shows, each checked against the file."""
    by = options["by"]
    for column in ("method", "seed", by, options["value"]):
        if not rows or column not in rows[0]:
            raise ValueError(f"{file}: no column {column!r} (or no finished job) for the table {part!r}")
    in_file = sorted({_point(row[by]) for row in rows}, key=_axis_order)
    axis = [_point(v) for v in options["only"].split(",")] if options["only"] else in_file
    missing = [_axis_label(v) for v in axis if v not in in_file]
    methods_in_file = list(dict.fromkeys(row["method"] for row in rows))
    methods = options["methods"].split(",") if options["methods"] else methods_in_file
    unknown = [m for m in methods if m not in methods_in_file]
    if missing or unknown:
        absent = ([f"{by} {missing}"] if missing else []) + ([f"methods {unknown}"] if unknown else [])
        raise ValueError(f"{file}#{part}: not in the file: {' and '.join(absent)}; the file has {by} "
                         f"{[_axis_label(v) for v in in_file]} and methods {methods_in_file}")
    return axis, methods


def _cell(rows: list[dict[str, str]], method: str, by: str, point: float | None, column: str) -> _Cell:
    jobs = [row for row in rows if row["method"] == method and _point(row[by]) == point]
    # the answered fraction qualifies a score, not a count of what was released
    answered = [] if column in ("answered_fraction", "released_label_fraction") else \
        [v for v in (_number(row.get("answered_fraction")) for row in jobs) if v is not None]
    return _Cell(len(jobs), tuple(v for v in (_number(row[column]) for row in jobs) if v is not None),
                 sum(answered) / len(answered) if answered else None)


def _best(cells: dict[tuple[str, float | None], _Cell], methods: list[str], axis: list[float | None], value: Value
          ) -> dict[float | None, float]:
    """Per axis value, the best mean as shown (rounded), where two or more methods have one and higher is better; for a
    value scored on the answered queries, only among the methods that answered them all."""
    best: dict[float | None, float] = {}
    for point in axis:
        means = [cells[m, point].mean(value.digits) for m in methods if cells[m, point].values
                 and not (value.on_answered and cells[m, point].partial)]
        if value.higher_is_better and len(means) > 1:
            best[point] = max(means)
    return best


TOPK_OPTIONS = ("by", "where", "mechanisms")


def render_topk(rows: list[dict[str, str]], path: Path, file: str, part: str) -> list[str]:
    """A top-k experiment's mean recall: one row per mechanism, one column per distinct value of the ``by`` columns
    (comma-separated, default ``setting``), over the cells that match ``where`` (``column:value`` pairs joined by
    commas, e.g. ``where=k:10``); ``mechanisms`` picks and orders the rows. The recall of a cell is a fixed function
    of the commit and the seeds (no timing), so the caption names the commit, not a machine."""
    options = _pairs(part, file, TOPK_OPTIONS)
    by = options.get("by", "setting").split(",")
    where = dict(condition.partition(":")[::2] for condition in options["where"].split(",")) \
        if options.get("where") else {}
    for column in [*by, *where]:
        if column not in rows[0]:
            raise ValueError(f"{file}#{part}: no column {column!r}; the file has {list(rows[0])}")
    shown = [row for row in rows if all(row[column] == value for column, value in where.items())]
    mechanisms_in_file = list(dict.fromkeys(row["mechanism"] for row in shown))
    mechanisms = options["mechanisms"].split(",") if options.get("mechanisms") else mechanisms_in_file
    if not shown or any(m not in mechanisms_in_file for m in mechanisms):
        raise ValueError(f"{file}#{part}: no cell matches {where} or a mechanism is not among {mechanisms_in_file}")
    columns = list(dict.fromkeys(tuple(row[column] for column in by) for row in shown))
    recall: dict[tuple[str, tuple[str, ...]], float] = {}
    for row in shown:
        key = (row["mechanism"], tuple(row[column] for column in by))
        if key in recall:
            raise ValueError(f"{file}#{part}: several cells for {key}: add a where= condition")
        recall[key] = float(row["recall_mean"])
    best = {column: max(recall[m, column] for m in mechanisms if (m, column) in recall) for column in columns}
    commits = _report_commit(path)
    if not commits:
        raise ValueError(f"{file}: no report.md beside it naming its commit (Versions: git ...)")
    relations, trials = _distinct(shown, "neighbors"), _distinct(shown, "trials")
    condition = "".join(f", {column} = {value}" for column, value in where.items())
    lines = [f"From `{file}` (commit {', '.join(commits)}; neighbors={', '.join(relations)}; {', '.join(trials)} "
             f"trials per cell{condition}; a fixed function of the commit and the seeds, no timing): mean recall of "
             f"the true top-k, by {', '.join(by)}; bold: the best in each column.", "",
             f"| mechanism | {' | '.join(', '.join(column) for column in columns)} |", "|---|" + "---:|" * len(columns)]

    def cell(mechanism: str, column: tuple[str, ...]) -> str:
        if (mechanism, column) not in recall:
            return "-"
        text = f"{recall[mechanism, column]:.3f}"
        return f"**{text}**" if recall[mechanism, column] == best[column] else text

    lines += [f"| `{m}` | {' | '.join(cell(m, column) for column in columns)} |" for m in mechanisms]
    return lines
