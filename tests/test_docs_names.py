"""The pages name only what exists, and type each measured figure once.

A page (README.md, docs/*.md, benchmarks/README.md, benchmarks/results/*.md) that names in backticks a module,
function, class or attribute of the project, a config group member or key, or a repository file fails this test
when the name does not exist. The rules, each applied to the backticked spans outside the generated figure blocks
and the code blocks (whose ``python train.py``/``topk.py`` command lines, fenced or indented, and whose ``python``
blocks' imports of the project are checked too):

* a dotted name rooted at the project's packages (``pate.``, ``teachers.``, ``student.``) imports and resolves
  attribute by attribute (a dataclass field or an attribute a class sets in its methods counts); ``student.x`` may
  also be a key of the ``student`` config group;
* a dotted name rooted at a class the project defines (``Ledger.replay``) names an attribute of that class;
* a dotted name rooted at a config group (``privacy.budget_epsilon``), and the key of ``key.sub=value``, is set in
  some member of that group (or in an experiment, or conf/train.yaml);
* a bare identifier called (``build_aggregate(...)``) is defined (``def``/``class``) or called in the project's
  Python;
* a bare snake_case identifier (``features_stage``) is spelled somewhere in the project's code or configs;
* a repository path (a token with ``/`` under a top-level directory of the project, or under a directory of the
  page's own directory or of benchmarks/: ``results/eps_sweep.md``) exists: ``{a,b}`` braces expand, ``*`` globs,
  ``<name>`` and ``XXXX`` are wildcards; a bare ``name.py``/``name.yaml`` exists somewhere in those directories;
* ``group=value`` with ``group`` a directory of ``conf/`` names an existing ``conf/<group>/<value>.yaml`` (each value
  of a comma-separated sweep; a command's ``hydra.searchpath`` and Hydra's plugins count too).

Names of external libraries (torch, numpy, dp_accounting, Opacus, Hydra, Lightning, ...) never match these rules
unless they are spelled like the project's; ``ALLOWED`` lists the few that are, and the files a page names that a
benchmark has not written yet.

A second test keeps every figure typed once: an accuracy (or F1) of 0.1 or more written with three or more decimals
appears in one page only (its findings page, benchmarks/results/<sweep>.md), outside the generated blocks and code
blocks; the other pages link to it or give the headline without the number.
"""

from __future__ import annotations

import re
from collections import defaultdict
from pathlib import Path

import pytest

from tests.docs_names import ROOT, pages, prose, stale_names

# ---- the tests ----


@pytest.mark.parametrize("page", pages(), ids=lambda page: str(page.relative_to(ROOT)))
def test_every_name_a_page_gives_exists(page):
    assert stale_names(page) == []


def test_a_page_naming_what_does_not_exist_is_caught(tmp_path):
    page = tmp_path / "page.md"
    page.write_text(
        "# A page\n\n"
        "Calibrate with `pate.privacy.no_such_function` and `pate.privacy.calibrate`; each stage is built by\n"
        "`teachers_stage(cfg, data)` or `aggregate_stage(cfg, aggregator, asked, votes)`, configured in\n"
        "`conf/aggregator/nope.yaml` beside `conf/aggregator/{tau_pate,gaussian_pate}.yaml` and\n"
        "`conf/method/<name>.yaml`; run `python train.py aggregator=nope` or "
        "`aggregator=tau_pate privacy.nope=1`; see\n"
        "`Ledger.replay`, `Ledger.no_such_method`, `Release.model`, `features_stage`, `votes_stage`, "
        "`torch.nn.Linear`\n"
        "and `metrics.json`, `student.json`, `student.semi.keep_fraction`, `student.semi.nope`, `results/nope.md`.\n\n"
        "```bash\npython train.py -m compare=tau_pate,nope_either \\\n    data=nope_data\n```\n\n"
        "    python train.py teacher=nope_teacher\n\n"
        "```python\nfrom pate.privacy import Ledger, NoSuchLedger\n```\n\n"
        "<!-- figures: benchmarks/results/methods.json -->\n`pate.generated_is_skipped`\n<!-- end figures -->\n"
    )
    assert stale_names(page) == [
        "page.md:3: no such module or attribute: pate.privacy.no_such_function",
        "page.md:4: no such function or class: teachers_stage(",
        "page.md:5: no such file: conf/aggregator/nope.yaml",
        "page.md:6: no such config key: privacy.nope",
        "page.md:6: no such config: aggregator=nope",
        "page.md:7: no such attribute: Ledger.no_such_method",
        "page.md:7: no such name in the code or configs: votes_stage",
        "page.md:8: no such file: results/nope.md",
        "page.md:8: no such module or attribute: student.semi.nope",
        "page.md:11: no such config: compare=nope_either",
        "page.md:12: no such config: data=nope_data",
        "page.md:15: no such config: teacher=nope_teacher",
        "page.md:17: no such module or attribute: pate.privacy.NoSuchLedger",
    ]


# ---- every figure typed once ----

# an accuracy or F1 of 0.1 or more, three decimals or more (0.8524, 0.852; not a tolerance such as "within 0.005")
FIGURE = re.compile(r"(?<![\w.])0\.[1-9]\d{2,}(?![\w.])")


def typed_figures(page: Path) -> set[str]:
    """The accuracies ``page`` types outside its generated and code blocks."""
    return set(FIGURE.findall(prose(page.read_text())))


def figures_typed_twice(paths: list[Path], root: Path = ROOT) -> dict[str, list[str]]:
    where: dict[str, list[str]] = defaultdict(list)
    for page in paths:
        for figure in typed_figures(page):
            where[figure].append(str(page.relative_to(root)))
    return {figure: places for figure, places in sorted(where.items()) if len(places) > 1}


def test_no_figure_is_typed_in_two_pages():
    """A figure lives on its findings page (or in a generated block); the other pages link to it."""
    assert figures_typed_twice(pages()) == {}


def test_a_figure_typed_in_two_pages_is_caught(tmp_path):
    (tmp_path / "a.md").write_text("The student reaches 0.8524 (and 0.91 without noise; sd 0.005).\n")
    (tmp_path / "b.md").write_text(
        "```\nstudent 0.7777\n```\nAs [a](a.md) says, 0.8524; epsilon 7.999.\n\n"
        "    student 0.7777   (an indented console block)\n"
    )
    (tmp_path / "c.md").write_text("student 0.7777, sd 0.005\n")
    assert figures_typed_twice([tmp_path / "a.md", tmp_path / "b.md", tmp_path / "c.md"], tmp_path) == {
        "0.8524": ["a.md", "b.md"]
    }
