"""The figures the docs quote come from the files the benchmarks write: every marked block of README.md, docs/ and
benchmarks/README.md is exactly what benchmarks/figures.py renders from its file, every such file says its date,
commit and machine, and a figure edited by hand in a page is caught."""

from __future__ import annotations

import importlib.util
import json
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
    files = ("mechanisms", "topk_speed", "methods", "test_suite", "default_run", "topk_runs", "teachers",
             "teachers_ssl", "synthetic_difficulty", "teacher_levers")
    assert {f"benchmarks/results/{name}.json" for name in files} <= quoted
    assert {f"benchmarks/results/{name}.json#engines" for name in ("teacher_engines", "teacher_engines_resnet18")} \
        <= quoted


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
