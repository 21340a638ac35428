"""An mkdocs hook (mkdocs.yml ``hooks:``): the findings pages and their plots on the site, from their one home.

The findings live beside the reports they read, in benchmarks/results/ (a page per sweep, a folder of plots per
report), and benchmarks/README.md says what each benchmark measures. mkdocs serves only docs_dir, so this hook adds
those files to the site at build time instead of copying them into docs/ (a copy drifts):

* ``benchmarks/README.md`` is served as ``benchmarks.md``;
* ``benchmarks/results/<page>.md`` as ``results/<page>.md`` (the "Findings" section of the nav);
* every ``benchmarks/results/<report>/*.png`` as ``results/<report>/<name>.png``, where the pages' image paths
  (``eps_sweep_replace/accuracy_vs_epsilon.png``) find them as they do on GitHub.

A page's relative links are written for the repository, so that they work on GitHub: ``docs/reports.md`` links
``../benchmarks/results/eps_sweep.md``, a findings page links ``../../docs/reports.md#...``. Before each page is
rendered, a link whose target is a file the site serves under another path is rewritten to that path; mkdocs then
checks it as any other link (``--strict``). A link to a repository file the site does not serve, and a findings
page missing from the nav, are warnings, so the strict build fails on them.
"""

from __future__ import annotations

import logging
import posixpath
import re
from pathlib import Path

from mkdocs.structure.files import File, Files

ROOT = Path(__file__).resolve().parent.parent
BENCHMARKS = ROOT / "benchmarks"
RESULTS = BENCHMARKS / "results"

log = logging.getLogger("mkdocs.hooks.findings")

# the target of an inline link or image: [text](target#anchor "title")
LINK = re.compile(r"(?<=\]\()(?P<target>[^()\s#]+)(?P<anchor>#[^()\s]*)?(?=[\s)])")
FENCE = re.compile(r"^\s*(```|~~~)")

_served: dict[Path, str] = {}  # a file's path in the repository -> its src_uri on the site, for this build


def findings_files() -> dict[str, Path]:
    """The site path (src_uri) of every file this hook serves, and the repository file it is."""
    files = {"benchmarks.md": BENCHMARKS / "README.md"}
    files.update({f"results/{page.name}": page for page in sorted(RESULTS.glob("*.md"))})
    files.update({f"results/{png.relative_to(RESULTS).as_posix()}": png for png in sorted(RESULTS.glob("*/*.png"))})
    return files


def on_files(files: Files, config) -> Files:
    for src_uri, path in findings_files().items():
        files.append(File.generated(config, src_uri, abs_src_path=str(path)))
    _served.clear()
    _served.update({Path(file.abs_src_path).resolve(): file.src_uri for file in files if file.abs_src_path})
    return files


def on_nav(nav, config, files: Files):
    in_nav = {page.file.src_uri for page in nav.pages}
    for src_uri, path in findings_files().items():
        if src_uri.endswith(".md") and src_uri not in in_nav:
            log.warning("%s (%s) is not in mkdocs.yml's nav", src_uri, path.relative_to(ROOT))
    return nav


def site_link(target: str, page_path: Path, page_uri: str) -> str | None:
    """``target``, a relative link of the page at ``page_path`` (served as ``page_uri``), rewritten to where the site
    serves the file it names; None when it needs no rewriting (a URL, an anchor, or already right)."""
    if "://" in target or target.startswith(("/", "mailto:")):
        return None
    path = (page_path.parent / target).resolve()
    if path not in _served:
        if path.is_file() and ROOT in path.parents:
            log.warning(
                "%s links to %s, a repository file the site does not serve (docs/hooks.py)",
                page_uri,
                path.relative_to(ROOT),
            )
        return None
    link = posixpath.relpath(_served[path], posixpath.dirname(page_uri) or ".")
    return None if link == target else link


def on_page_markdown(markdown: str, page, config, files: Files) -> str:
    if page.file.abs_src_path is None:  # a page generated without a file has no repository links
        return markdown
    page_path, page_uri = Path(page.file.abs_src_path).resolve(), page.file.src_uri

    def rewrite(match: re.Match) -> str:
        link = site_link(match["target"], page_path, page_uri)
        return match[0] if link is None else link + (match["anchor"] or "")

    lines, fenced = markdown.split("\n"), False
    for i, line in enumerate(lines):
        if FENCE.match(line):
            fenced = not fenced
        elif not fenced and "](" in line:
            lines[i] = LINK.sub(rewrite, line)
    return "\n".join(lines)
