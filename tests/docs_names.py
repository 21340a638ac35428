"""The checker of tests/test_docs_names.py (whose docstring states the rules): the names a page gives, and if they exist."""

from __future__ import annotations

import ast
import builtins
import dataclasses
import fnmatch
import functools
import glob
import importlib
import inspect
import re
from collections import defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
EXAMPLES = "test_docs_names.py"  # its made-up pages name what does not exist: not evidence that it does


def pages(root: Path = ROOT) -> list[Path]:
    return [
        root / "README.md",
        *sorted((root / "docs").glob("*.md")),
        root / "benchmarks" / "README.md",
        *sorted((root / "benchmarks" / "results").glob("*.md")),
    ]


PACKAGES = ("pate", "teachers", "student")
# top-level directories a repository path in a page starts with
TOP_DIRS = ("pate", "teachers", "student", "conf", "tests", "benchmarks", "docs")
PYTHON_SOURCES = ("pate", "teachers", "student", "benchmarks", "tests", "train.py", "topk.py")
# names that look like the project's but are another library's (or a file another repository holds)
ALLOWED = {
    "research/pate_2018/core.py": "tensorflow/privacy's reference code for PATE 2018",
    "experiment=mine": "a user's own config directory on Hydra's search path (docs/getting-started.md)",
}
# a dotted name ending so is a file name (`student.json`, `teachers.py`), not an attribute
FILE_SUFFIXES = {"json", "py", "yaml", "yml", "md", "csv", "npz", "npy", "pt", "pth", "txt", "png", "toml", "sh"}

GENERATED = re.compile(r"^<!-- figures: \S+ -->\n.*?^<!-- end figures -->$", re.MULTILINE | re.DOTALL)
FENCE = re.compile(
    r"^(?P<indent> *)(?P<fence>```+|~~~+)(?P<info>[^\n]*)\n(?P<body>.*?)^(?P=indent)(?P=fence) *$",
    re.MULTILINE | re.DOTALL,
)
SPAN = re.compile(r"(?<!`)(`+)(?!`)(?P<text>.+?)(?<!`)\1(?!`)", re.DOTALL)
DOTTED = re.compile(r"^(?P<name>[A-Za-z_]\w*(?:\.[A-Za-z_]\w*)+)(?:\(.*\))?$", re.DOTALL)
CALL = re.compile(r"^(?P<name>[A-Za-z_]\w*)\(", re.DOTALL)
SNAKE = re.compile(r"^[a-z][a-z0-9]*(?:_[a-z0-9]+)+$")
GROUP_VALUE = re.compile(r"^[+~]*(?P<group>[a-z_]+(?:/[a-z_]+)*)=(?P<value>\S+)$")
KEY_VALUE = re.compile(r"^(?P<key>[a-z_]+(?:\.[a-z_]\w*)+)=")  # an override of an existing key (not `+key=`)


# ---- what the project defines ----


@functools.lru_cache(maxsize=None)
def python_files(root: Path = ROOT) -> tuple[Path, ...]:
    files = []
    for name in PYTHON_SOURCES:
        path = root / name
        files += [path] if path.is_file() else sorted(path.rglob("*.py"))
    return tuple(files)


@functools.lru_cache(maxsize=None)
def callable_names(root: Path = ROOT) -> frozenset[str]:
    """Every function and class the project's Python defines, and every name it calls (``check_splits(split)``,
    ``np.random.SeedSequence()``): what a page may show called."""
    names: set[str] = set()
    for path in python_files(root):
        if path.name == EXAMPLES:
            continue
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                names.add(node.name)
            elif isinstance(node, ast.Call):
                func = node.func
                names.add(func.id if isinstance(func, ast.Name) else getattr(func, "attr", ""))
    return frozenset(names)


@functools.lru_cache(maxsize=None)
def project_classes(root: Path = ROOT) -> dict[str, set[str]]:
    """Class name -> the importable modules (under the packages) that define it at top level."""
    classes: dict[str, set[str]] = defaultdict(set)
    for package in PACKAGES:
        for path in sorted((root / package).rglob("*.py")):
            module = ".".join(path.relative_to(root).with_suffix("").parts).removesuffix(".__init__")
            for node in ast.parse(path.read_text(), str(path)).body:
                if isinstance(node, ast.ClassDef):
                    classes[node.name].add(module)
    return classes


@functools.lru_cache(maxsize=None)
def spelled_words(root: Path = ROOT) -> frozenset[str]:
    """Every identifier-like word of the project's code, configs and scripts."""
    words: set[str] = set()
    files = [path for path in python_files(root) if path.name != EXAMPLES]  # not the test's examples
    for pattern in ("conf/**/*.yaml", "benchmarks/*.sh", "pyproject.toml", "Makefile", "benchmarks/results/*.json"):
        files += sorted(root.glob(pattern))
    for path in files:
        words |= set(re.findall(r"[A-Za-z_]\w*", path.read_text(errors="replace")))
    return frozenset(words)


@functools.lru_cache(maxsize=None)
def repo_files(root: Path = ROOT) -> frozenset[str]:
    """Paths (relative, with '/') of the files and directories under the top-level directories, and the root's."""
    found = {p.name for p in root.iterdir()}
    for top in TOP_DIRS:
        for path in (root / top).rglob("*"):
            if "__pycache__" not in path.parts:
                found.add(path.relative_to(root).as_posix())
    return frozenset(found)


# ---- resolving one name ----


def _class_has(cls: type, attr: str) -> bool:
    if hasattr(cls, attr):
        return True
    for klass in inspect.getmro(cls):
        if attr in getattr(klass, "__annotations__", {}):
            return True
        if dataclasses.is_dataclass(klass) and attr in {f.name for f in dataclasses.fields(klass)}:
            return True
        try:
            source = inspect.getsource(klass)
        except (OSError, TypeError):
            continue
        if re.search(rf"\bself\.{attr}\s*(?::[^=\n]+)?=", source):
            return True
    return False


def _has(obj, attr: str) -> bool:
    return _class_has(obj, attr) if inspect.isclass(obj) else hasattr(obj, attr)


def resolves(dotted: str) -> bool:
    """``pate.privacy.Ledger.replay``: the longest importable module prefix, then attribute by attribute."""
    parts = dotted.split(".")
    for cut in range(len(parts), 0, -1):
        try:
            obj = importlib.import_module(".".join(parts[:cut]))
        except ImportError:
            continue
        for i, attr in enumerate(parts[cut:]):
            if not _has(obj, attr):
                return False
            obj = getattr(obj, attr, None)
            if obj is None and i < len(parts[cut:]) - 1:
                return True  # an attribute set at run time (a dataclass field): its own attributes are not known here
        return True
    return False


@functools.lru_cache(maxsize=None)
def group_members(group: str, root: Path = ROOT) -> tuple[dict, ...]:
    """The members of config group ``group`` (``conf/<group>/*.yaml``) as plain dicts."""
    from omegaconf import OmegaConf

    return tuple(
        OmegaConf.to_container(OmegaConf.load(path)) or {} for path in sorted((root / "conf" / group).glob("*.yaml"))
    )


def config_key_exists(dotted: str, root: Path = ROOT) -> bool:
    """``student.semi.keep_fraction``: the key is set in some member of its group (``conf/student/*.yaml``), or in
    ``conf/train.yaml`` for a top-level key."""
    from omegaconf import OmegaConf

    group, *keys = dotted.split(".")
    trees = [{group: member} for member in group_members(group, root)]
    trees.append(OmegaConf.to_container(OmegaConf.load(root / "conf" / "train.yaml")))
    for member in group_members("experiment", root):  # an experiment's keys are global (`report`, `references`)
        trees.append(member)
    for tree in trees:
        node = tree
        for key in [group, *keys]:
            if not isinstance(node, dict) or key not in node:
                break
            node = node[key]
        else:
            return True
    return False


def class_attribute_exists(cls_name: str, attrs: list[str]) -> bool:
    return any(resolves(".".join([module, cls_name, *attrs])) for module in project_classes()[cls_name])


# ---- the rules ----


def expand_braces(text: str) -> list[str]:
    match = re.search(r"\{([^{}]*)\}", text)
    if not match:
        return [text]
    return [
        out for alt in match[1].split(",") for out in expand_braces(text[: match.start()] + alt + text[match.end() :])
    ]


def _path_pattern(token: str) -> str:
    token = re.sub(r"<[^<>/]*>", "*", token)
    token = re.sub(r"X{3,}", "*", token)
    return token.replace("...", "*")


def path_exists(token: str, root: Path = ROOT) -> bool:
    for alternative in expand_braces(token):
        pattern = _path_pattern(alternative).rstrip("/")
        if any(ch in pattern for ch in "*?["):
            if glob.glob(str(root / pattern)) or glob.glob(str(root / pattern) + ".*"):
                continue
            return False
        if not (root / pattern).exists():
            return False
    return True


def _path_token(token: str) -> str:
    return token.strip("()[],;:'\"").split("#")[0].split("::")[0]


def check_path(token: str, root: Path = ROOT, here: Path | None = None) -> str | None:
    """A repository path: from the root (``pate/votes.py``), or from the page's directory or benchmarks/ when its
    first directory is one there (``results/eps_sweep.md``, ``eps_sweep_replace/report.md``)."""
    token = _path_token(token)
    if not token or token in ALLOWED or "://" in token:
        return None
    first = token.split("/", 1)[0]
    if "/" in token and first in TOP_DIRS:
        return None if path_exists(token, root) else f"no such file: {token}"
    bases = [
        base
        for base in (here, root / "benchmarks")
        if base is not None and first not in ("", ".", "..") and "/" in token and (base / first).is_dir()
    ]
    if bases:
        return None if any(path_exists(token, base) for base in bases) else f"no such file: {token}"
    if "/" not in token and re.fullmatch(r"[\w.<>{},*-]+\.(?:py|ya?ml)", token):
        names = {Path(p).name for p in repo_files(root)}
        alternatives = [_path_pattern(a) for a in expand_braces(token)]
        if all(fnmatch.filter(names, alternative) for alternative in alternatives):
            return None
        return f"no such file anywhere in the repository: {token}"
    return None


@functools.lru_cache(maxsize=None)
def plugin_configs(group: str) -> frozenset[str]:
    """The members Hydra's plugins store for ``group`` (``hydra/launcher=submitit_slurm``)."""
    from hydra.core.config_store import ConfigStore
    from hydra.core.plugins import Plugins

    Plugins.instance()
    try:
        return frozenset(name.removesuffix(".yaml") for name in ConfigStore.instance().list(group))
    except OSError:
        return frozenset()


def check_group(token: str, root: Path = ROOT, search: tuple[Path, ...] = ()) -> str | None:
    """``group=value`` (each of ``a,b``) is a file of ``conf/<group>/`` or of a directory on ``hydra.searchpath``
    (``search``); ``group.key=value`` overrides a key that exists."""
    token = token.strip("(),;'\"")
    key = KEY_VALUE.match(token)
    if key and (root / "conf" / key["key"].split(".")[0]).is_dir() and not key["key"].startswith("hydra."):
        return None if config_key_exists(key["key"], root) else f"no such config key: {key['key']}"
    match = GROUP_VALUE.match(token)
    if not match or not (root / "conf" / match["group"]).is_dir() or token in ALLOWED:
        return None
    group = match["group"]
    missing = [
        value
        for value in match["value"].split(",")
        if value
        and value not in ("null", "...")
        and not re.search(r"[<>*{}$]", value)
        and value not in plugin_configs(group)
        and not any((conf / group / f"{value}.yaml").is_file() for conf in (root / "conf", *search))
    ]
    return f"no such config: {group}={','.join(missing)}" if missing else None


def check_name(span: str, root: Path = ROOT) -> str | None:
    """The name a backticked span (stripped) names, if it is one of the project's and does not exist."""
    dotted = DOTTED.match(span)
    if dotted:
        name = dotted["name"]
        head, *rest = name.split(".")
        if rest[-1] in FILE_SUFFIXES:
            return None  # a file name: the path rules check it
        if head in PACKAGES:
            if resolves(name) or (root / "conf" / head).is_dir() and config_key_exists(name, root):
                return None
            return f"no such module or attribute: {name}"
        if (root / "conf" / head).is_dir() and head != "hydra" and not dotted[0].endswith(")"):
            return None if config_key_exists(name, root) else f"no such config key: {name}"
        if head in project_classes(root) and rest:
            return None if class_attribute_exists(head, rest) else f"no such attribute: {name}"
        return None
    call = CALL.match(span)
    if call:
        name = call["name"]
        if name in callable_names(root) or hasattr(builtins, name):
            return None
        return f"no such function or class: {name}("
    if SNAKE.match(span) and span not in spelled_words(root):
        return f"no such name in the code or configs: {span}"
    return None


def check_span(span: str, root: Path = ROOT, here: Path | None = None) -> list[str]:
    span = span.strip()
    problems = [check_name(span, root)]
    for token in span.split():
        problems += [check_path(token, root, here), check_group(token, root)]
    return [p for p in problems if p]


COMMAND = re.compile(r"^\s*(?:\$ )?(?:python \S*(?:train|topk)\.py|pate-(?:train|topk))\b")


def command_lines(text: str) -> list[tuple[int, str]]:
    """(line number, text) of every ``python train.py``/``topk.py`` command line of ``text`` (a code block's or an
    indented one), its ``\\`` continuation lines included, comments cut."""
    found, going_on = [], False
    for number, line in enumerate(text.splitlines(), 1):
        if COMMAND.match(line) or going_on:
            found.append((number, line.split(" #")[0]))
        going_on = (COMMAND.match(line) is not None or going_on) and line.rstrip().endswith("\\")
    return found


def check_command(line: str, root: Path = ROOT, here: Path | None = None) -> list[str]:
    search = tuple(root / path for path in re.findall(r"hydra\.searchpath=\[file://([^\],]+)\]", line))
    problems = [None if path.is_dir() else f"no such directory: {path.relative_to(root)}" for path in search]
    for token in line.split():
        problems += [check_path(token, root, here), check_group(token, root, search)]
    return [p for p in problems if p]


def check_code_block(info: str, body: str, root: Path = ROOT) -> list[str]:
    """A ``python`` block's imports of the project."""
    problems = []
    if info.strip().startswith("python"):
        try:
            tree = ast.parse(body)
        except SyntaxError:
            tree = None
        for node in ast.walk(tree) if tree else ():
            if isinstance(node, ast.ImportFrom) and node.module and node.module.split(".")[0] in PACKAGES:
                problems += [
                    None
                    if resolves(f"{node.module}.{alias.name}")
                    else f"no such module or attribute: {node.module}.{alias.name}"
                    for alias in node.names
                ]
            elif isinstance(node, ast.Import):
                problems += [
                    None if resolves(alias.name) else f"no such module: {alias.name}"
                    for alias in node.names
                    if alias.name.split(".")[0] in PACKAGES
                ]
    return [p for p in problems if p]


def _line_of(text: str, offset: int) -> int:
    return text.count("\n", 0, offset) + 1


LIST_ITEM = re.compile(r"^\s*(?:[-*+]|\d+[.)])\s")


def _blank_indented_blocks(text: str) -> str:
    """Blank the indented code blocks: lines indented by four spaces or more after a blank line, where the paragraph
    before that blank line is not a list item (whose continuation they would be)."""
    lines, out = text.split("\n"), []
    in_block, in_list, previous = False, False, ""
    for line in lines:
        if not line.strip():
            out.append(line)
        elif in_block and line.startswith("    "):
            out.append("")
        elif line.startswith("    ") and not previous.strip() and not in_list:
            in_block = True
            out.append("")
        else:
            in_block = False
            in_list = bool(LIST_ITEM.match(line)) or (in_list and line.startswith(" "))
            out.append(line)
        previous = line
    return "\n".join(out)


def prose(text: str) -> str:
    """``text`` with the generated blocks and the code blocks (fenced or indented) blanked, line numbers kept."""
    blank = lambda match: "\n" * match[0].count("\n")  # noqa: E731
    return _blank_indented_blocks(FENCE.sub(blank, GENERATED.sub(blank, text)))


def stale_names(page: Path, root: Path = ROOT) -> list[str]:
    """'<page>:<line>: <what does not exist>' for every name of ``page`` that does not exist."""
    text = page.read_text()
    without_generated = GENERATED.sub(lambda m: "\n" * m[0].count("\n"), text)
    where = page.relative_to(root) if page.is_relative_to(root) else page.name
    found = []
    for block in FENCE.finditer(without_generated):
        found += [
            f"{where}:{_line_of(without_generated, block.start())}: {problem}"
            for problem in check_code_block(block["info"], block["body"], root)
        ]
    for number, line in command_lines(without_generated):
        found += [f"{where}:{number}: {problem}" for problem in check_command(line, root, page.parent)]
    body = prose(text)
    for span in SPAN.finditer(body):
        found += [
            f"{where}:{_line_of(body, span.start())}: {problem}"
            for problem in check_span(span["text"], root, page.parent)
        ]
    return sorted(set(found), key=lambda line: (int(line.split(":")[1]), line))
