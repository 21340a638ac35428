"""Every command line the documentation shows composes, and every key the code names exists.

Each ``python train.py ...``, ``python topk.py ...``, ``pate-train ...``, ``pate-topk ...`` and ``make train
ARGS="..."`` of README.md, docs/*.md and
benchmarks/README.md (in code blocks, indented, or inline, with their ``\\`` continuations) is parsed as Hydra
parses it and composed, every job of a command-line sweep included, so a misspelt key, a group option that does
not exist or a value Hydra cannot parse fails here. What a command does when it runs is tested where it can run in
a tiny form (tests/test_docs.py, docs/your-data.md's commands in tests/data/test_multilabel_folder.py); the ones
that need a GPU, SLURM or real data are only composed. Every ``group.key=`` the code writes (in an error or a
hint) must be a key some config file sets, and so must every `` `group.key` `` the pages name."""

from __future__ import annotations

import re
import shlex
from dataclasses import dataclass
from pathlib import Path

import pytest
from hydra import compose, initialize_config_dir
from hydra._internal.core_plugins.basic_sweeper import BasicSweeper
from hydra.core.override_parser.overrides_parser import OverridesParser

ROOT = Path(__file__).resolve().parent.parent
PAGES = [
    ROOT / "README.md",
    *sorted((ROOT / "docs").glob("*.md")),
    ROOT / "benchmarks" / "README.md",
    *sorted((ROOT / "benchmarks" / "results").glob("*.md")),
]
_START = re.compile(r"^(?:\$ )?(python (?:train|topk)\.py|pate-(?:train|topk)|make train)(?=\s|$)")
_INLINE = re.compile(r"`((?:python (?:train|topk)\.py|pate-(?:train|topk)|make train)(?:\s[^`]*)?)`")
_FLAGS = {"-m", "--multirun", "--resolve", "--help", "-h", "--info"}
_CONFIG = {"train.py": "train", "topk.py": "topk"}


@dataclass(frozen=True)
class Command:
    page: Path
    line: int
    text: str


def documented_commands(page: Path) -> list[Command]:
    """The command lines of ``page``, continuations joined, in page order."""
    lines = page.read_text().splitlines()
    commands, i = [], 0
    while i < len(lines):
        stripped, number = lines[i].strip(), i + 1
        if _START.match(stripped):
            text = stripped
            while text.endswith("\\") and i + 1 < len(lines):
                i += 1
                text = text[:-1] + " " + lines[i].strip()
            commands.append(Command(page, number, text.removeprefix("$ ")))
        else:
            commands += [Command(page, number, match) for match in _INLINE.findall(lines[i])]
        i += 1
    return commands


def is_usage(tokens: list[str]) -> bool:
    """A usage line, not a command: ``[group=option ...]``, ``method=<m>``, ``...``."""
    return any(token == "..." or token.startswith("[") or re.search(r"<\w+>", token) for token in tokens)


def script_and_overrides(command: Command) -> tuple[str, list[str]] | None:
    """(config name, overrides) of a command, or None for a usage line."""
    tokens = shlex.split(command.text, comments=True)
    if tokens[:2] == ["make", "train"]:
        args = [token.removeprefix("ARGS=") for token in tokens[2:] if token.startswith("ARGS=")]
        tokens = ["python", "train.py", *(shlex.split(args[0]) if args else [])]
    elif tokens[0] in ("pate-train", "pate-topk"):  # the installed console scripts: the same configs
        tokens = ["python", f"{tokens[0].removeprefix('pate-')}.py", *tokens[1:]]
    script, rest = tokens[1], tokens[2:]
    if is_usage(rest):
        return None
    overrides, skip = [], False
    for token in rest:
        if skip:
            skip = False
        elif token == "--cfg":
            skip = True  # its argument: job, hydra or all
        elif token not in _FLAGS:
            overrides.append(token)
    return _CONFIG[script], overrides


# (config, overrides) of every job composed in this process: the config files do not change during a session, so a
# job that composed once composes again (92 commands are 49 distinct ones); a refused job is never recorded
_COMPOSED: set[tuple[str, tuple[str, ...]]] = set()


def compose_command(command: Command) -> int:
    """Compose every job of ``command`` (a command-line sweep expands as Hydra's basic sweeper expands it) that this
    process has not composed already; returns the number of jobs. Raises what Hydra raises for a key, group or value
    it refuses."""
    parsed = script_and_overrides(command)
    if parsed is None:
        return 0
    config, overrides = parsed
    jobs = [
        list(job)
        for batch in BasicSweeper.split_arguments(OverridesParser.create().parse_overrides(overrides), None)
        for job in batch
    ]
    new = [job for job in jobs if (config, tuple(job)) not in _COMPOSED]
    if new:
        with initialize_config_dir(config_dir=str(ROOT / "conf"), version_base="1.3"):
            for job in new:
                compose(config_name=config, overrides=job, return_hydra_config=True)
                _COMPOSED.add((config, tuple(job)))
    return len(jobs)


ALL = [command for page in PAGES for command in documented_commands(page)]


def test_the_pages_show_many_commands_and_few_usage_lines():
    usage = [command.text for command in ALL if script_and_overrides(command) is None]
    assert len(ALL) >= 50 and len(usage) <= 4, (
        len(ALL),
        usage,
    )  # getting-started's --config-dir line: tests/test_packaging.py


@pytest.mark.slow
@pytest.mark.parametrize("command", ALL, ids=lambda c: f"{c.page.name}:{c.line}")
def test_every_documented_command_composes(command, monkeypatch):
    monkeypatch.chdir(ROOT)  # hydra.searchpath=[file://tests/...] is relative to where the reader runs it
    compose_command(command)


def test_a_misspelt_key_in_a_page_fails(tmp_path, monkeypatch):
    """The check is not vacuous: a fixture page with one good and two bad commands."""
    monkeypatch.chdir(ROOT)
    page = tmp_path / "page.md"
    page.write_text(
        "Run\n\n    python train.py privacy.target_epsilon=3\n\n"
        "or `python train.py privacy.target_epsilonn=3` and\n\n"
        "```bash\npython train.py -m aggregator=tau_pate,gausian_pate \\\n    seed=0\n```\n"
    )
    good, typo, group = documented_commands(page)
    assert (good.line, typo.line, group.line) == (3, 5, 8) and group.text.endswith("seed=0")
    assert compose_command(good) == 1
    with pytest.raises(Exception, match="target_epsilonn"):
        compose_command(typo)
    with pytest.raises(Exception, match="gausian_pate"):
        compose_command(group)


# ------------------------------------------------------------------ keys that error messages name
SOURCES = [
    path
    for package in ("pate", "pipeline", "teachers", "student", "training")
    for path in sorted((ROOT / package).rglob("*.py"))
] + [ROOT / "train.py", ROOT / "topk.py"]
# Deliberately wrong keys that the code names as examples of what it refuses.
EXAMPLES_OF_MISTAKES = {"privacy.target_epsilonn"}


def _paths(node, prefix: str) -> set[str]:
    """Every dotted key path of a YAML mapping, under ``prefix``."""
    if not isinstance(node, dict):
        return set()
    found = set()
    for key, value in node.items():
        if key == "defaults":
            continue
        path = f"{prefix}.{key}" if prefix else str(key)
        found |= {path} | _paths(value, path)
    return found


def config_keys() -> set[str]:
    """Every key path any config file can set: train.yaml's and topk.yaml's own keys, and each group option's keys
    under its group (or at the top for ``# @package _global_`` files)."""
    import yaml

    keys = set()
    for path in sorted((ROOT / "conf").rglob("*.yaml")):
        group = path.parent.relative_to(ROOT / "conf").as_posix()
        if group.startswith("hydra"):
            continue
        text = path.read_text()
        body = yaml.safe_load(text) or {}
        package = "" if group == "." or "@package _global_" in text else group.replace("/", ".")
        keys |= _paths(body, package)
    return keys


_GROUPS = "|".join(sorted({path.name for path in (ROOT / "conf").iterdir() if path.is_dir()} - {"hydra"}))
_FILE_NAMES = re.compile(r"\.(json|npy|npz|csv|yaml|txt|pt|md|png)$")  # `student.json` is a file, not a key


def named_keys() -> dict[str, str]:
    """{key: the file that names it} for every ``group.key=`` the project's code writes (errors, hints)."""
    pattern = re.compile(rf"(?<![\w.+])((?:{_GROUPS})(?:\.[A-Za-z_]\w*)+)=")
    return {key: str(path.relative_to(ROOT)) for path in SOURCES for key in pattern.findall(path.read_text())}


def documented_keys() -> dict[str, str]:
    """{key: the page that names it} for every `` `group.key` `` or `` `group.key=value` `` the pages show."""
    pattern = re.compile(rf"`((?:{_GROUPS})(?:\.[A-Za-z_]\w*)+)(?:=[^`]*)?`")
    return {
        key: page.name for page in PAGES for key in pattern.findall(page.read_text()) if not _FILE_NAMES.search(key)
    }


def test_every_key_the_code_names_exists():
    """A message that tells the user to pass ``features.weights_path=...`` while the key is
    ``features.extractor.weights_path`` is a dead end: every key the code names is a key some config file sets."""
    keys = config_keys()
    assert "features.extractor.weights_path" in keys and "features.weights_path" not in keys  # issue 26's dead end
    missing = {key: where for key, where in named_keys().items() if key not in keys and key not in EXAMPLES_OF_MISTAKES}
    assert len(named_keys()) >= 20 and not missing, missing


def test_every_key_the_docs_name_exists():
    """The same for the keys the pages name in code spans (`data.labels_file`, `features.extractor.key=...`)."""
    keys = config_keys()
    named = documented_keys()
    assert {"data.labels_file", "data.split_seed", "features.extractor.key"} <= set(
        named
    )  # docs/your-data.md's own data
    missing = {key: page for key, page in named.items() if key not in keys}
    assert len(named) >= 30 and not missing, missing
