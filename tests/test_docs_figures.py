"""The figures the docs quote come from the files the benchmarks write: every marked block of README.md, docs/ and
benchmarks/README.md is exactly what benchmarks/figures.py renders from its file, every such file says its date,
commit and machine, every block reads as a table (a bold title, the table, one short source line; the machine stays
in the file), and a figure edited by hand in a page is caught."""

from __future__ import annotations

import csv
import importlib.util
import json
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
_spec = importlib.util.spec_from_file_location("benchmark_figures", ROOT / "benchmarks" / "figures.py")
figures = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(figures)


@pytest.mark.parametrize("page", figures.PAGES, ids=lambda page: str(page.relative_to(ROOT)))
def test_every_quoted_block_is_what_its_file_renders(page):
    assert figures.stale_blocks(page) == [], "run python benchmarks/figures.py (after the benchmark that wrote it)"


def test_the_benchmarks_figures_are_quoted_from_their_files():
    quoted = {match["file"] for page in figures.PAGES for match in figures.BLOCK.finditer(page.read_text())}
    files = (
        "mechanisms",
        "topk_speed",
        "methods",
        "test_suite",
        "default_run",
        "topk_runs",
        "teachers",
        "teachers_ssl",
        "synthetic_difficulty",
        "teacher_levers",
        "teacher_levers_faces",
        "soft_votes",
    )
    assert {f"benchmarks/results/{name}.json" for name in files} <= quoted
    assert {
        f"benchmarks/results/{name}.json#engines" for name in ("teacher_engines", "teacher_engines_resnet18")
    } <= quoted


def _blocks() -> list[tuple[str, list[str]]]:
    return [
        (match["file"], match["body"].splitlines())
        for page in figures.PAGES
        for match in figures.BLOCK.finditer(page.read_text())
        if not match["file"].endswith(("#console", "#predict"))  # a command's output, quoted as it printed it
    ]


def _machine(file: str) -> set[str]:
    """The CPU and platform strings ``file`` records: what a page leaves out."""
    path = ROOT / file.partition("#")[0]
    if path.suffix == ".json":
        machine = json.loads(path.read_text())["machine"]
        return {machine["cpu"], machine["platform"]}
    with open(path, newline="", encoding="utf-8") as handle:
        return {row[key] for row in csv.DictReader(handle) for key in ("host.cpu", "host.platform") if row.get(key)}


def test_every_block_is_a_title_a_table_and_one_short_source_line():
    blocks = _blocks()
    assert len(blocks) > 40 and sum(bool(_machine(file)) for file, _ in blocks) > 30  # the files say the machine
    for file, lines in blocks:
        assert re.fullmatch(r"\*\*[^*]+\*\*.*", lines[0]), (file, lines[0])
        assert lines[1] == "" and lines[2].startswith("| "), (file, lines[:3])
        sources = [line for line in lines if line.startswith("Source: ")]
        # 260: a source line names its privacy units (results.csv records them; add_remove's two: ~60 characters)
        assert len(sources) == 1 and len(sources[0]) <= 260, (file, sources)
        assert sources[0].startswith(f"Source: `{file.partition('#')[0]}`, commit"), (file, sources[0])
        assert lines[lines.index(sources[0]) - 2].startswith("|"), (file, "the source line follows the table")
        text = "\n".join(lines)
        machine = _machine(file)
        assert not any(name in text for name in machine), (file, machine)
        assert not any(word in text for word in ("logical CPU", "load average", "Linux", "no privacy cost")), file


def test_the_reference_lines_say_epsilon_does_not_cover_them():
    lines = [line for _, lines in _blocks() for line in lines]
    references = [line for line in lines if line.startswith("References")]
    assert references and all(line.startswith("References (diagnostics, not covered by ε): ") for line in references)
    rows = [line for line in lines if line.startswith("| reference")]
    assert rows and all(line.startswith("| reference (not covered by ε): ") for line in rows)


def test_a_figure_edited_by_hand_in_a_page_is_caught(tmp_path):
    file = "benchmarks/results/mechanisms.json"
    block = f"<!-- figures: {file} -->\n{figures.render(file)}<!-- end figures -->\n"
    page = tmp_path / "page.md"
    page.write_text(f"# A page\n\n{block}")
    assert figures.stale_blocks(page) == []
    edited = block.replace(" | 40 | ", " | 41 | ", 1)
    assert edited != block
    page.write_text(f"# A page\n\n{edited}")
    assert figures.stale_blocks(page) == [f"{page}:3: {file}"]
    assert figures.rewrite(page) and figures.stale_blocks(page) == []


def test_a_file_that_does_not_say_when_and_where_is_refused(tmp_path):
    record = json.loads((ROOT / "benchmarks/results/methods.json").read_text())
    del record["commit"], record["machine"]
    (tmp_path / "old.json").write_text(json.dumps(record))
    with pytest.raises(ValueError, match=r"old.json: no commit, machine: a quoted figure says when"):
        figures.render(str(tmp_path / "old.json"))


# ---- tables quoted from the committed reports' results.csv (benchmarks/report_figures.py) ----

REPORTS = sorted(path.parent.name for path in (ROOT / "benchmarks" / "results").glob("*/results.csv"))
# pages of findings that keep a typed table, and why
TYPED_TABLES_ALLOWED = {"benchmarks/results/history_20_cnn_teachers.md": "its reports are no longer in the tree"}


def test_every_committed_report_is_quoted_from_its_results_csv():
    quoted = {
        match["file"].partition("#")[0] for page in figures.PAGES for match in figures.BLOCK.finditer(page.read_text())
    }
    assert REPORTS and {f"benchmarks/results/{name}/results.csv" for name in REPORTS} <= quoted


def typed_table_rows(text: str) -> list[str]:
    """The markdown table rows of ``text``, outside the rendered blocks, with two or more measured-looking figures
    (three decimals or more, or a percentage with decimals): figures typed by hand."""
    return [
        line
        for line in figures.BLOCK.sub("", text).splitlines()
        if line.startswith("|") and len(re.findall(r"\b\d\.\d{3,}\b|\b\d+\.\d+%", line)) >= 2
    ]


@pytest.mark.parametrize("page", figures.PAGES, ids=lambda page: str(page.relative_to(ROOT)))
def test_no_page_types_a_table_of_measured_figures(page):
    """The report tables are rendered from their results.csv and the benchmarks' from their JSON."""
    typed = typed_table_rows(page.read_text())
    assert not typed or str(page.relative_to(ROOT)) in TYPED_TABLES_ALLOWED, typed[:3]


def test_a_typed_table_is_caught_and_a_rendered_one_is_not():
    file = "benchmarks/results/eps_sweep_replace/results.csv#only=8"
    rendered = f"<!-- figures: {file} -->\n{figures.render(file)}<!-- end figures -->\n"
    assert typed_table_rows(rendered) == []
    typed = "| method | eps 1 | eps 2 |\n|---|---:|---:|\n| TauPATE | 83.95% | 84.0% |\n| kNN | 0.8071 | 0.8139 |\n"
    assert typed_table_rows(rendered + typed) == ["| TauPATE | 83.95% | 84.0% |", "| kNN | 0.8071 | 0.8139 |"]
    assert typed_table_rows("| piece | learnt from |\n|---|---|\n| q | 0.051 of the records |\n") == []


def _write_sweep(directory: Path, rows: list[dict], extra: tuple[str, ...] = ()) -> Path:
    directory.mkdir()
    columns = [
        "job",
        "status",
        "method",
        "neighbors",
        "delta",
        "target_epsilon",
        "seed",
        "answered_fraction",
        "student_accuracy",
        "label_accuracy",
        "majority_class_accuracy",
        "versions.git",
        *extra,
    ]
    lines = [",".join(columns)] + [",".join(str(row.get(c, "")) for c in columns) for row in rows]
    (directory / "results.csv").write_text("\n".join(lines) + "\n")
    return directory / "results.csv"


def _job(method, epsilon, seed, accuracy, answered=1.0, status="finished"):
    return {
        "status": status,
        "method": method,
        "neighbors": "replace",
        "delta": "1e-06",
        "target_epsilon": epsilon,
        "seed": seed,
        "answered_fraction": answered,
        "student_accuracy": accuracy,
        "majority_class_accuracy": 0.5,
        "versions.git": "abc123",
    }


def test_a_report_table_is_the_mean_over_seeds_with_its_gaps_said(tmp_path):
    csv_path = _write_sweep(
        tmp_path / "sweep",
        [
            _job("a", 1, 0, 0.70),
            _job("a", 1, 1, 0.80),
            _job("a", 2, 0, 0.90),
            _job("a", 2, 1, 0.90),
            _job("b", 1, 0, "", answered=0.0),
            _job("b", 1, 1, "", answered=0.0),
            _job("b", 2, 0, 0.95, answered=0.5),
            _job("b", 2, 1, "", answered=0.0),
            _job("b", 2, 2, 0.10, status="failed"),  # a failed job is not a figure
        ],
    )
    lines = figures.report_figures.render(csv_path, "sweep/results.csv", "")
    # a column's best is bold only among two or more means
    assert lines == [
        "**Student accuracy by target epsilon**",
        "",
        "| method | 1 | 2 |",
        "|---|---:|---:|",
        "| `a` | 0.7500 | 0.9000 |",
        "| `b` | no answer | **0.9500** (25% answered, 1 of 2 seeds) |",
        "",
        "Source: `sweep/results.csv`, commit abc123, seeds 0, 1, sd ≤ 0.0707, replace, delta 1e-6. "
        "Bold: best per column. No answer: none in any seed.",
        "",
        "References (diagnostics, not covered by ε): majority class 0.5000.",
    ]
    only = figures.report_figures.render(csv_path, "sweep/results.csv", "only=2&methods=b,a&sd=cell")
    assert only[2:5] == ["| method | 2 |", "|---|---:|", "| `b` | **0.9500** (25% answered, 1 of 2 seeds) |"]
    assert only[5] == "| `a` | 0.9000 ± 0.0000 |"
    assert only[7].startswith("Source: `sweep/results.csv`, commit abc123, seeds 0, 1 (mean ± sd), replace")


def test_a_methods_privacy_free_limit_is_quoted_at_its_largest_target_epsilon(tmp_path):
    limit = "reference.noise_free.student_accuracy"  # its settings follow epsilon: its limit at 1 is another's
    csv_path = _write_sweep(
        tmp_path / "sweep",
        [
            {**_job("d", 1, 0, 0.70), limit: 0.80},
            {**_job("d", 8, 0, 0.84), limit: 0.90},
            {**_job("d", 8, 1, 0.86), limit: 0.92},
            _job("p", 1, 0, 0.60),
            _job("p", 8, 0, 0.85),
        ],
        extra=(limit,),
    )
    lines = figures.report_figures.render(csv_path, "sweep/results.csv", "")
    assert lines[-1] == (
        "References (diagnostics, not covered by ε): majority class 0.5000. Each method's own "
        "release with noise zero: `d` 0.9100 (at ε 8)."
    )
    assert figures.report_figures.render(csv_path, "sweep/results.csv", "only=1")[-1].endswith("`d` 0.8000 (at ε 1).")
    assert "noise zero" not in figures.report_figures.render(csv_path, "sweep/results.csv", "value=label_accuracy")[-1]


def test_a_score_on_the_answered_queries_is_best_only_among_methods_that_answered_them_all(tmp_path):
    partial = {**_job("b", 1, 0, 0.8, answered=0.2), "label_accuracy": 0.99}  # more accurate, on a fifth of them
    csv_path = _write_sweep(
        tmp_path / "sweep",
        [{**_job("a", 1, 0, 0.7), "label_accuracy": 0.9}, {**_job("c", 1, 0, 0.6), "label_accuracy": 0.85}, partial],
    )
    lines = figures.report_figures.render(csv_path, "sweep/results.csv", "value=label_accuracy")
    assert lines[0] == "**Released-label accuracy on the answered queries by target epsilon**"
    assert lines[8].endswith("Bold: best per column (rows answering all).")
    assert lines[4:7] == ["| `a` | **0.9000** |", "| `c` | 0.8500 |", "| `b` | 0.9900 (20% answered) |"]
    # a student is scored on every evaluation image, whatever its labels covered: there the partial one may win
    assert "| `b` | **0.8000** (20% answered) |" in figures.report_figures.render(csv_path, "sweep/results.csv", "")


def test_a_table_by_the_number_of_teachers_has_a_row_per_epsilon_and_its_references_per_column(tmp_path):
    vote = "reference.majority_vote.student_accuracy"
    rows = [
        {**_job(method, epsilon, seed, accuracy + 0.01 * seed), "num_teachers": teachers, vote: 0.9 - teachers / 1000}
        for method, epsilon, teachers, accuracy in [
            ("a", 1, 100, 0.70),
            ("a", 1, 400, 0.80),
            ("a", 8, 100, 0.85),
            ("a", 8, 400, 0.82),
            ("b", 1, 100, 0.75),
            ("b", 1, 400, 0.78),
            ("b", 8, 100, 0.84),
            ("b", 8, 400, 0.81),
        ]
        for seed in (0, 1)
    ]
    csv_path = _write_sweep(tmp_path / "sweep", rows, extra=("num_teachers", vote))
    lines = figures.report_figures.render(csv_path, "sweep/results.csv", "by=num_teachers")
    assert lines[0] == "**Student accuracy by teachers T**"
    assert lines[-1] == (
        "Source: `sweep/results.csv`, commit abc123, seeds 0, 1, sd ≤ 0.0071, replace, delta 1e-6. "
        "Bold: best per column and epsilon."
    )
    assert lines[2:-2] == [
        "| method, target epsilon | 100 | 400 |",
        "|---|---:|---:|",
        "| `a`, epsilon 1 | 0.7050 | **0.8050** |",
        "| `a`, epsilon 8 | **0.8550** | **0.8250** |",
        "| `b`, epsilon 1 | **0.7550** | 0.7850 |",
        "| `b`, epsilon 8 | 0.8450 | 0.8150 |",
        "| reference (not covered by ε): majority class | 0.5000 | 0.5000 |",
        "| reference (not covered by ε): student on the teachers' non-private majority vote | 0.8000 | 0.5000 |",
    ]
    one = figures.report_figures.render(csv_path, "sweep/results.csv", "by=num_teachers&methods=b&at=8&only=400")
    assert one[2:5] == ["| method, target epsilon | 400 |", "|---|---:|", "| `b`, epsilon 8 | 0.8150 |"]
    with pytest.raises(ValueError, match=r"not in the file: target epsilons \['2'\]"):
        figures.report_figures.render(csv_path, "sweep/results.csv", "by=num_teachers&at=2")


@pytest.mark.parametrize(
    "part, message",
    [
        ("at=1", r"at='1' picks target epsilons as rows"),
        ("value=recall", r"value='recall', expected one of"),
        ("colour=red", r"unknown option\(s\) \['colour'\]"),
        ("only=3", r"not in the file: target_epsilon \['3'\]; the file has target_epsilon \['1'\]"),
        ("methods=c", r"not in the file: methods \['c'\]"),
        ("sd", r"expected key=value pairs"),
    ],
)
def test_a_report_table_that_asks_for_what_the_file_lacks_is_refused(tmp_path, part, message):
    csv_path = _write_sweep(tmp_path / "sweep", [_job("a", 1, 0, 0.7)])
    with pytest.raises(ValueError, match=message):
        figures.report_figures.render(csv_path, "sweep/results.csv", part)


def test_a_person_level_table_of_several_wordings_names_the_person_once(tmp_path):
    """PATE words its person-level neighbour by the teacher's vote it changes, the samplers by the person replaced:
    the source line names the person they share once, not each wording (which ran past the line's length)."""
    pate = {**_job("a", 1, 0, 0.7), "privacy_unit": "one person changed: one teacher's vote replaced"}
    sgd = {**_job("b", 1, 0, 0.8), "privacy_unit": "one person replaced with all of their images"}
    extra = ("privacy_unit", "person_level")

    def source(name: str, levels: tuple[str, str]) -> str:
        rows = [{**pate, "person_level": levels[0]}, {**sgd, "person_level": levels[1]}]  # as results.csv writes them
        lines = figures.report_figures.render(_write_sweep(tmp_path / name, rows, extra), "t", "")
        return next(line for line in lines if line.startswith("Source:"))

    shared = "unit: one person of the private split, all of their images (each method's words: privacy_unit)"
    assert shared in source("person", ("true", "true"))
    assert "unit: one person changed: one teacher's vote replaced, one person replaced" in source(
        "mixed", ("true", "false")
    )


def test_a_report_table_without_its_commit_is_refused(tmp_path):
    job = _job("a", 1, 0, 0.7)
    del job["versions.git"]
    csv_path = _write_sweep(tmp_path / "sweep", [job])
    with pytest.raises(ValueError, match="says which commit"):
        figures.report_figures.render(csv_path, "sweep/results.csv", "")
    (tmp_path / "sweep" / "report.md").write_text("# r\n\n- Versions: git 0123abc.\n")
    assert (
        figures.report_figures.render(csv_path, "sweep/results.csv", "")[-3]
        == "Source: `sweep/results.csv`, commit 0123abc, seed 0, replace, delta 1e-6."
    )


def test_a_topk_table_is_the_recall_of_each_cell(tmp_path):
    (tmp_path / "t").mkdir()
    rows = [
        "setting,mechanism,k,neighbors,trials,recall_mean",
        "x,em,10,add_remove,5,0.5",
        "x,st,10,add_remove,5,1",
        "y,em,10,add_remove,5,0.25",
        "y,st,10,add_remove,5,0.125",
        "y,em,50,add_remove,5,0.9",
    ]
    (tmp_path / "t" / "results.csv").write_text("\n".join(rows) + "\n")
    (tmp_path / "t" / "report.md").write_text("# t\n\nVersions: git 0123abc; pate 0.1.0.\n")
    lines = figures.report_figures.render(tmp_path / "t" / "results.csv", "t/results.csv", "where=k:10")
    assert lines[0] == "**Mean recall of the true top-k by setting (k = 10)**"
    assert lines[-1] == "Source: `t/results.csv`, commit 0123abc, add_remove, 5 trials per cell. Bold: best per column."
    assert lines[2:-2] == [
        "| mechanism | x | y |",
        "|---|---:|---:|",
        "| `em` | 0.500 | **0.250** |",
        "| `st` | **1.000** | 0.125 |",
    ]
    with pytest.raises(ValueError, match="several cells"):
        figures.report_figures.render(tmp_path / "t" / "results.csv", "t/results.csv", "")


@pytest.mark.parametrize(
    "text,line",
    [
        (
            "a\n<!-- figures: x.json -->\nold\n<!-- /figures -->\nprose\n<!-- figures: y.json -->\n<!-- end figures -->\n",
            6,
        ),
        ("<!-- figures: x.json -->\nold\n", 1),
        ("prose\n<!-- end figures -->\n", 2),
    ],
)
def test_a_block_without_its_end_marker_is_refused_before_the_page_is_rewritten(tmp_path, text, line):
    """A misspelt end marker once let the block's pattern run on to the next block's end: a rewrite would have
    replaced the prose between them with a table. Both the check and the rewrite refuse the page, untouched."""
    page = tmp_path / "page.md"
    page.write_text(text)
    for action in (figures.stale_blocks, figures.rewrite):
        with pytest.raises(ValueError, match=rf"page.md:{line}: .*end figures"):
            action(page)
    assert page.read_text() == text
