"""Tables quoted from the committed sweep reports, rendered from their ``results.csv`` (one row per job), never typed
by hand. benchmarks/figures.py calls :func:`render` for a block that names a results.csv; the part after ``#`` says
which table, as ``key=value`` pairs joined by ``&``::

    <!-- figures: benchmarks/results/eps_sweep_replace/results.csv#value=student_accuracy&by=target_epsilon -->

- ``value``: the column averaged over seeds (default ``student_accuracy``; any of :data:`VALUES`);
- ``by``: the column axis, ``target_epsilon`` (default), ``queries`` or ``num_teachers``;
- ``only``: the axis values shown, comma-separated (default: every value in the file; ``none``: the runs without a
  target epsilon, at their configured noise);
- ``methods``: the methods shown, comma-separated, in that order (default: every method, in the file's order);
- ``at``: with another axis than ``target_epsilon``, the target epsilons shown, comma-separated (default: every one
  in the file); each (method, target epsilon) is one row, and the reference figures, which vary along such an axis
  (the vote of T teachers, the true labels of Q queries), are rows of the table too;
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
AXES = {"target_epsilon": "target epsilon", "queries": "public queries Q", "num_teachers": "teachers T"}
OPTIONS = ("value", "by", "only", "methods", "at", "sd")


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
    options = {"value": "student_accuracy", "by": "target_epsilon", "only": "", "methods": "", "at": "",
               "sd": "caption"}
    options.update(_pairs(part, file, OPTIONS))
    if options["at"] and options["by"] == "target_epsilon":
        raise ValueError(f"{file}#{part}: at={options['at']!r} picks target epsilons as rows, which a table by "
                         f"target epsilon has as columns: use only=")
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


# the reference figures (diagnostics no epsilon covers) a table of each value is read against: (column, what)
REFERENCES = {
    "student_accuracy": (("majority_class_accuracy", "majority class"),
                         ("reference.majority_vote.student_accuracy",
                          "student on the teachers' non-private majority vote"),
                         ("reference.true_labels.student_accuracy", "student on the true labels of the queries")),
    "label_accuracy": (("reference.majority_vote.label_accuracy", "the teachers' non-private majority vote"),),
    "label_f1": (("reference.majority_vote.label_f1", "the teachers' non-private majority vote"),),
}


def _reference_groups(rows: list[dict[str, str]], value: str
                      ) -> list[tuple[str, list[tuple[str, str]], list[dict[str, str]]]]:
    """(student kind, [(column, what)], rows) of the reference figures of ``value``: one set per student kind where
    the rows train several (each kind has its own reference students; the kind is "" where there is one)."""
    kinds = _distinct(rows, "student_semi")
    groups = [(kind, [row for row in rows if row.get("student_semi") == kind]) for kind in kinds] \
        if len(kinds) > 1 else [("", rows)]
    return [(kind, [(column, name) for column, name in REFERENCES.get(value, ())
                    if any(_number(row.get(column)) is not None for row in group)], group) for kind, group in groups]


def _mean(rows: list[dict[str, str]], column: str) -> float | None:
    values = [v for v in (_number(row.get(column)) for row in rows) if v is not None]
    return sum(values) / len(values) if values else None


def _references(rows: list[dict[str, str]], value: str) -> str:
    """The reference figures of ``value`` over ``rows``, as a sentence (a table by target epsilon: the same at every
    epsilon)."""
    sentences = [(f"{kind} students: " if kind else "") + "; ".join(f"{what} {_mean(group, column):.4f}"
                                                                     for column, what in references)
                 for kind, references, group in _reference_groups(rows, value) if references]
    return (f"References (diagnostics NOT covered by ε, left out of a publishable report; the same queries and "
            f"evaluation images): {'. '.join(sentences)}.") if sentences else ""


def _reference_rows(rows: list[dict[str, str]], value: str, by: str, axis: list[float | None]) -> list[str]:
    """The reference figures of ``value`` as table rows, one mean per column: along another axis than the target
    epsilon they change (the vote of T teachers, the true labels of Q queries)."""
    lines = []
    for kind, references, group in _reference_groups(rows, value):
        for column, what in references:
            means = [_mean([row for row in group if _point(row[by]) == point], column) for point in axis]
            lines.append(f"| reference: {what}{f', {kind} students' if kind else ''} | "
                         + " | ".join("" if m is None else f"{m:.4f}" for m in means) + " |")
    return lines


Row = tuple[str, "float | None"]  # (method, target epsilon; None in a table by target epsilon)


def _row_label(row: Row) -> str:
    method, epsilon = row
    return f"`{method}`" if epsilon is None else f"`{method}`, epsilon {epsilon:g}"


def render(path: Path, file: str, part: str) -> list[str]:
    """The table ``part`` asks for (module docstring), from the report rows in ``path`` (shown as ``file``): a
    sweep report's jobs, or a top-k experiment's cells (``python topk.py``; :func:`render_topk`)."""
    with open(path, newline="", encoding="utf-8") as handle:
        rows = [row for row in csv.DictReader(handle) if row.get("status", "finished") == "finished"]
    if rows and "recall_mean" in rows[0]:
        return render_topk(rows, path, file, part)
    options = _options(part, file)
    value, by = VALUES[options["value"]], options["by"]
    axis, table_rows = _selection(rows, options, file, part)
    shown = [row for row in rows if (row["method"], _row_epsilon(row, by)) in table_rows and _point(row[by]) in axis]
    cells = {(key, point): _cell(shown, key, by, point, options["value"]) for key in table_rows for point in axis}
    best = _best(cells, table_rows, axis, value)
    sds = [Stat.of(c.values).std for c in cells.values() if len(c.values) > 1]
    spread = f" (largest sd {max(sds):.{value.digits}f})" if sds and options["sd"] == "caption" else ""
    spread = " ± sd" if sds and options["sd"] == "cell" else spread
    among = " among the methods that answered every query" if value.on_answered else ""
    at = " at the same target epsilon" if len({epsilon for _, epsilon in table_rows}) > 1 else ""
    notes = [f"bold: the best mean in each column{at}{among}"] if best else []
    if any(c.partial for c in cells.values()):
        notes.append("in brackets the fraction of queries answered where not all (\"no answer\": none in any seed)")
    methods = list(dict.fromkeys(method for method, _ in table_rows))
    what = value.what + (" (`dp_sgd`: the released model itself, no student)" if "dp_sgd" in methods else "")
    caption = (f"From `{file}` ({_provenance(shown, len(rows), path, file)}): {what}, by {AXES[by]}, mean over "
               f"seeds {', '.join(_distinct(shown, 'seed'))}{spread}" + "".join(f"; {note}" for note in notes) + ".")
    label = "method" if by == "target_epsilon" else "method, target epsilon"
    lines = [caption, "", f"| {label} | {' | '.join(_axis_label(v) for v in axis)} |", "|---|" + "---:|" * len(axis)]
    lines += [f"| {_row_label(key)} | " + " | ".join(cells[key, point].text(value, options["sd"] == "cell",
                                                                             best.get((key[1], point)))
                                                  for point in axis) + " |"
              for key in table_rows]
    if by != "target_epsilon":
        return lines + _reference_rows(shown, options["value"], by, axis)
    references = _references(shown, options["value"])
    return lines + (["", references] if references else [])


def _row_epsilon(row: dict[str, str], by: str) -> float | None:
    """The row a job belongs to: its target epsilon, along another axis than the target epsilon."""
    return None if by == "target_epsilon" else _point(row["target_epsilon"])


def _selection(rows: list[dict[str, str]], options: dict[str, str], file: str, part: str
               ) -> tuple[list[float | None], list[Row]]:
    """The axis values and the table's rows, (method, target epsilon), each checked against the file."""
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
    epsilons_in_file = sorted({_row_epsilon(row, by) for row in rows}, key=_axis_order)
    epsilons = [_point(v) for v in options["at"].split(",")] if options["at"] else epsilons_in_file
    absent_epsilons = [_axis_label(v) for v in epsilons if v not in epsilons_in_file]
    if missing or unknown or absent_epsilons:
        absent = ([f"{by} {missing}"] if missing else []) + ([f"methods {unknown}"] if unknown else []) \
            + ([f"target epsilons {absent_epsilons}"] if absent_epsilons else [])
        raise ValueError(f"{file}#{part}: not in the file: {' and '.join(absent)}; the file has {by} "
                         f"{[_axis_label(v) for v in in_file]} and methods {methods_in_file}")
    present = {(row["method"], _row_epsilon(row, by)) for row in rows}
    return axis, [(method, epsilon) for method in methods for epsilon in epsilons if (method, epsilon) in present]


def _cell(rows: list[dict[str, str]], key: Row, by: str, point: float | None, column: str) -> _Cell:
    jobs = [row for row in rows if (row["method"], _row_epsilon(row, by)) == key and _point(row[by]) == point]
    # the answered fraction qualifies a score, not a count of what was released
    answered = [] if column in ("answered_fraction", "released_label_fraction") else \
        [v for v in (_number(row.get("answered_fraction")) for row in jobs) if v is not None]
    return _Cell(len(jobs), tuple(v for v in (_number(row[column]) for row in jobs) if v is not None),
                 sum(answered) / len(answered) if answered else None)


def _best(cells: dict[tuple[Row, float | None], _Cell], table_rows: list[Row], axis: list[float | None],
          value: Value) -> dict[tuple[float | None, float | None], float]:
    """Per (target epsilon of the rows, axis value), the best mean as shown (rounded), where two or more rows have
    one and higher is better; for a value scored on the answered queries, only among the rows that answered them
    all. A table by target epsilon has one group of rows (epsilon None)."""
    best: dict[tuple[float | None, float | None], float] = {}
    for epsilon in dict.fromkeys(e for _, e in table_rows):
        group = [key for key in table_rows if key[1] == epsilon]
        for point in axis:
            means = [cells[key, point].mean(value.digits) for key in group if cells[key, point].values
                     and not (value.on_answered and cells[key, point].partial)]
            if value.higher_is_better and len(means) > 1:
                best[epsilon, point] = max(means)
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
