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
  source line).

A block is a bold title (what the cells are, by which axis), the table, and one source line: the file, the commit,
the seeds, the relation (and privacy unit where the file has it), delta, and the legend of the cells; under a table
by target epsilon, a line of references (diagnostics no epsilon covers), with each method's own privacy-free limit
where its runs recorded one. The date and the machine stay in the file. A top-k experiment's results.csv
(``python topk.py``) has its own table, of recall: :func:`render_topk`.
"""

from __future__ import annotations

import csv
import re
from dataclasses import dataclass
from pathlib import Path

from pate.report import Stat  # the reports' own mean and sample sd over seeds

__all__ = ["VALUES", "render", "delta", "render_topk", "source"]


@dataclass(frozen=True)
class Value:
    title: str
    higher_is_better: bool | None  # None: not a score, no column has a best
    digits: int = 4
    on_answered: bool = False  # scored on the answered queries only: a best among different sets is no best


# a column's title; a value that is not a DP guarantee says so here
VALUES = {
    "student_accuracy": Value("Student accuracy", True),
    "student_f1": Value("Student macro F1", True),
    "label_accuracy": Value("Released-label accuracy on the answered queries", True, on_answered=True),
    "label_f1": Value("Released-label micro F1 on the answered queries", True, on_answered=True),
    "mean_k": Value("Labels released per answered query", None, 2),
    "answered_fraction": Value("Fraction of the queries answered", None, 3),
    "released_label_fraction": Value("Fraction of the (query, label) pairs released", None, 3),
    "epsilon": Value("Epsilon (the DP guarantee)", None, 3),
    "epsilon_data_dependent": Value("Data-dependent epsilon (a diagnostic, NOT a DP guarantee)", None, 2),
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
    options = {
        "value": "student_accuracy",
        "by": "target_epsilon",
        "only": "",
        "methods": "",
        "at": "",
        "sd": "caption",
    }
    options.update(_pairs(part, file, OPTIONS))
    if options["at"] and options["by"] == "target_epsilon":
        raise ValueError(
            f"{file}#{part}: at={options['at']!r} picks target epsilons as rows, which a table by "
            f"target epsilon has as columns: use only="
        )
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


def _seeds(seeds: list[str]) -> str:
    """``seeds 0-2``, ``seed 4`` or ``seeds 0, 2, 5``."""
    numbers = sorted(int(seed) for seed in seeds)
    if len(numbers) > 2 and numbers == list(range(numbers[0], numbers[-1] + 1)):
        return f"seeds {numbers[0]}-{numbers[-1]}"
    return f"seed{'s' if len(numbers) > 1 else ''} {', '.join(map(str, numbers))}"


def delta(text: str) -> str:
    return re.sub(r"e-0*", "e-", f"{float(text):g}")


def source(file: str, commits: list[str], *details: str) -> str:
    """The one line under a table: ``Source: `file`, commit c, details.``"""
    if not commits:
        raise ValueError(
            f"{file}: no versions.git column nor a report.md beside it naming its commit: a quoted "
            f"figure says which commit it was measured at"
        )
    return (
        ", ".join(
            [
                f"Source: `{file}`",
                f"commit{'s' if len(commits) > 1 else ''} {', '.join(commits)}",
                *(detail for detail in details if detail),
            ]
        )
        + "."
    )


# the reference figures (diagnostics no epsilon covers) a table of each value is read against: (column, what)
REFERENCES = {
    "student_accuracy": (
        ("majority_class_accuracy", "majority class"),
        ("reference.majority_vote.student_accuracy", "student on the teachers' non-private majority vote"),
        ("reference.true_labels.student_accuracy", "student on the true labels of the queries"),
    ),
    "label_accuracy": (("reference.majority_vote.label_accuracy", "the teachers' non-private majority vote"),),
    "label_f1": (("reference.majority_vote.label_f1", "the teachers' non-private majority vote"),),
}


def _reference_groups(
    rows: list[dict[str, str]], value: str
) -> list[tuple[str, list[tuple[str, str]], list[dict[str, str]]]]:
    """(student kind, [(column, what)], rows) of the reference figures of ``value``: one set per student kind where
    the rows train several (each kind has its own reference students; the kind is "" where there is one)."""
    kinds = _distinct(rows, "student_semi")
    groups = (
        [(kind, [row for row in rows if row.get("student_semi") == kind]) for kind in kinds]
        if len(kinds) > 1
        else [("", rows)]
    )
    return [
        (
            kind,
            [
                (column, name)
                for column, name in REFERENCES.get(value, ())
                if any(_number(row.get(column)) is not None for row in group)
            ],
            group,
        )
        for kind, group in groups
    ]


def _mean(rows: list[dict[str, str]], column: str) -> float | None:
    values = [v for v in (_number(row.get(column)) for row in rows) if v is not None]
    return sum(values) / len(values) if values else None


def _references(rows: list[dict[str, str]], value: str) -> str:
    """The reference figures of ``value`` over ``rows``, as a sentence (a table by target epsilon: the same at every
    epsilon), then the methods' own privacy-free limits (:func:`_limits`)."""
    sentences = [
        (f"{kind} students: " if kind else "")
        + "; ".join(f"{what} {_mean(group, column):.4f}" for column, what in references)
        for kind, references, group in _reference_groups(rows, value)
        if references
    ]
    sentences += [limits] if (limits := _limits(rows, value)) else []
    return f"References (diagnostics, not covered by ε): {'. '.join(sentences)}." if sentences else ""


# a method's own release with its noise set to zero, all else equal (pate.report.limits: DP-SGD, Private-kNN)
LIMIT_COLUMNS = {"student_accuracy": "reference.noise_free.student_accuracy"}


def _limits(rows: list[dict[str, str]], value: str) -> str:
    """The privacy-free limit of each method of ``rows`` that recorded one, as pate.report.limits sets it beside
    the method's result: the mean over the runs at its largest target epsilon (a method's settings may follow its
    target epsilon, and its limit with them); "" where none did."""
    column = LIMIT_COLUMNS.get(value)
    if column is None:
        return ""
    parts = []
    for method in dict.fromkeys(row["method"] for row in rows):
        runs = [
            row
            for row in rows
            if row["method"] == method
            and _number(row.get(column)) is not None
            and _point(row["target_epsilon"]) is not None
        ]
        if runs:
            largest = max(_point(row["target_epsilon"]) for row in runs)
            mean = _mean([row for row in runs if _point(row["target_epsilon"]) == largest], column)
            parts.append(f"`{method}` {mean:.4f} (at ε {largest:g})")
    return f"Each method's own release with noise zero: {', '.join(parts)}" if parts else ""


def _reference_rows(rows: list[dict[str, str]], value: str, by: str, axis: list[float | None]) -> list[str]:
    """The reference figures of ``value`` as table rows, one mean per column: along another axis than the target
    epsilon they change (the vote of T teachers, the true labels of Q queries)."""
    lines = []
    for kind, references, group in _reference_groups(rows, value):
        for column, what in references:
            means = [_mean([row for row in group if _point(row[by]) == point], column) for point in axis]
            lines.append(
                f"| reference (not covered by ε): {what}{f', {kind} students' if kind else ''} | "
                + " | ".join("" if m is None else f"{m:.4f}" for m in means)
                + " |"
            )
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
    label = "method" if by == "target_epsilon" else "method, target epsilon"
    lines = [
        f"**{value.title} by {AXES[by]}**",
        "",
        f"| {label} | {' | '.join(_axis_label(v) for v in axis)} |",
        "|---|" + "---:|" * len(axis),
    ]
    student = options["value"].startswith("student")
    lines += [
        f"| {_row_label(key)}{' (no student)' if student and key[0].partition('+')[0] == 'dp_sgd' else ''} | "
        + " | ".join(
            cells[key, point].text(value, options["sd"] == "cell", best.get((key[1], point))) for point in axis
        )
        + " |"
        for key in table_rows
    ]
    line = _source_line(shown, path, file, options["sd"], value, cells, bool(best))
    if by != "target_epsilon":
        return [*lines, *_reference_rows(shown, options["value"], by, axis), "", line]
    references = _references(shown, options["value"])
    return [*lines, "", line, *(["", references] if references else [])]


def _source_line(
    shown: list[dict[str, str]],
    path: Path,
    file: str,
    sd: str,
    value: Value,
    cells: dict[tuple[Row, float | None], _Cell],
    bold: bool,
) -> str:
    """The line under a report table: its source (the file, commit, seeds, relation, unit, delta) and the legend of
    its cells."""
    sds = [Stat.of(c.values).std for c in cells.values() if len(c.values) > 1]
    spread = {"caption": f", sd ≤ {max(sds):.{value.digits}f}", "cell": " (mean ± sd)"}[sd] if sds else ""
    at = " and epsilon" if len({key[1] for key, _ in cells}) > 1 else ""
    legend = [f"Bold: best per column{at}{' (rows answering all)' if value.on_answered else ''}."] if bold else []
    legend += ["No answer: none in any seed."] if any(c.answered == 0 and not c.values for c in cells.values()) else []
    unit = _unit(shown)
    deltas = ", ".join(f"delta {delta(d)}" for d in _distinct(shown, "delta"))
    return " ".join(
        [
            source(
                file,
                _distinct(shown, "versions.git") or _report_commit(path),
                _seeds(_distinct(shown, "seed")) + spread,
                ", ".join(_distinct(shown, "neighbors")),
                unit and f"unit: {unit}",
                deltas,
            ),
            *legend,
        ]
    )


def _unit(rows: list[dict[str, str]]) -> str:
    """What one neighbour is: the rows' one privacy unit, or, where each method words its own person-level one (PATE's
    names the teacher whose vote it changes), the person they share, pointing to the column for each method's."""
    units = _distinct(rows, "privacy_unit")
    if len(units) > 1 and all(row.get("person_level", "").lower() == "true" for row in rows):
        return "one person of the private split, all of their images (each method's words: privacy_unit)"
    return ", ".join(units)


def _row_epsilon(row: dict[str, str], by: str) -> float | None:
    """The row a job belongs to: its target epsilon, along another axis than the target epsilon."""
    return None if by == "target_epsilon" else _point(row["target_epsilon"])


def _selection(
    rows: list[dict[str, str]], options: dict[str, str], file: str, part: str
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
        absent = (
            ([f"{by} {missing}"] if missing else [])
            + ([f"methods {unknown}"] if unknown else [])
            + ([f"target epsilons {absent_epsilons}"] if absent_epsilons else [])
        )
        raise ValueError(
            f"{file}#{part}: not in the file: {' and '.join(absent)}; the file has {by} "
            f"{[_axis_label(v) for v in in_file]} and methods {methods_in_file}"
        )
    present = {(row["method"], _row_epsilon(row, by)) for row in rows}
    return axis, [(method, epsilon) for method in methods for epsilon in epsilons if (method, epsilon) in present]


def _cell(rows: list[dict[str, str]], key: Row, by: str, point: float | None, column: str) -> _Cell:
    jobs = [row for row in rows if (row["method"], _row_epsilon(row, by)) == key and _point(row[by]) == point]
    # the answered fraction qualifies a score, not a count of what was released
    answered = (
        []
        if column in ("answered_fraction", "released_label_fraction")
        else [v for v in (_number(row.get("answered_fraction")) for row in jobs) if v is not None]
    )
    return _Cell(
        len(jobs),
        tuple(v for v in (_number(row[column]) for row in jobs) if v is not None),
        sum(answered) / len(answered) if answered else None,
    )


def _best(
    cells: dict[tuple[Row, float | None], _Cell], table_rows: list[Row], axis: list[float | None], value: Value
) -> dict[tuple[float | None, float | None], float]:
    """Per (target epsilon of the rows, axis value), the best mean as shown (rounded), where two or more rows have
    one and higher is better; for a value scored on the answered queries, only among the rows that answered them
    all. A table by target epsilon has one group of rows (epsilon None)."""
    best: dict[tuple[float | None, float | None], float] = {}
    for epsilon in dict.fromkeys(e for _, e in table_rows):
        group = [key for key in table_rows if key[1] == epsilon]
        for point in axis:
            means = [
                cells[key, point].mean(value.digits)
                for key in group
                if cells[key, point].values and not (value.on_answered and cells[key, point].partial)
            ]
            if value.higher_is_better and len(means) > 1:
                best[epsilon, point] = max(means)
    return best


TOPK_OPTIONS = ("by", "where", "mechanisms")


def render_topk(rows: list[dict[str, str]], path: Path, file: str, part: str) -> list[str]:
    """A top-k experiment's mean recall: one row per mechanism, one column per distinct value of the ``by`` columns
    (comma-separated, default ``setting``), over the cells that match ``where`` (``column:value`` pairs joined by
    commas, e.g. ``where=k:10``); ``mechanisms`` picks and orders the rows. The recall of a cell is a fixed function
    of the commit and the seeds (no timing), so its source line names the commit, not a machine."""
    options = _pairs(part, file, TOPK_OPTIONS)
    by = options.get("by", "setting").split(",")
    where = (
        dict(condition.partition(":")[::2] for condition in options["where"].split(",")) if options.get("where") else {}
    )
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
    condition = f" ({', '.join(f'{column} = {value}' for column, value in where.items())})" if where else ""
    line = source(
        file,
        _report_commit(path),
        ", ".join(_distinct(shown, "neighbors")),
        f"{', '.join(_distinct(shown, 'trials'))} trials per cell",
    )
    lines = [
        f"**Mean recall of the true top-k by {', '.join(by)}{condition}**",
        "",
        f"| mechanism | {' | '.join(', '.join(column) for column in columns)} |",
        "|---|" + "---:|" * len(columns),
    ]

    def cell(mechanism: str, column: tuple[str, ...]) -> str:
        if (mechanism, column) not in recall:
            return "-"
        text = f"{recall[mechanism, column]:.3f}"
        return f"**{text}**" if recall[mechanism, column] == best[column] else text

    lines += [f"| `{m}` | {' | '.join(cell(m, column) for column in columns)} |" for m in mechanisms]
    return [*lines, "", f"{line} Bold: best per column."]
