"""See and prune the artifact cache, and list the privacy budget of each private dataset: ``pate-cache
[list|prune|budget] [--cache-dir DIR] [--logs DIR] [--dry-run] [--budget-dir DIR] [--delta D]`` (also ``python -m
pate.cache ...``).

``budget`` lists every private dataset's ledger (``pate.budget``): the total epsilon of its releases drawn with
secret noise, under each relation they use, and one line per release.

``list`` prints, per top-level directory of the cache (every stage, and ``tensors``: the decoded images), how many
finished entries it holds (artifact directories; for ``tensors``, decoded tensors with their sidecars), their size
and the age of the oldest and newest, then the total of every directory and every leftover: ``<key>.partial``
directories (a build that was interrupted; the same command resumes it, or ``prune`` removes it) and
``<key>.damaged-N`` directories (files a run found damaged, or an artifact whose manifest is another stage's, key's
or config's, moved aside). ``prune`` removes the leftovers (never the decoded images), skipping a ``.partial``
whose build holds its lock right now; with ``--logs`` it also removes the finished artifacts that no
``metrics.json`` under that directory names, no other artifact builds on and no run in progress holds
(``pate.cache_holds``; ``--dry-run`` says what it would remove). The default cache is ``$PROJECT_ROOT/cache``,
else the ``cache`` directory of this clone (of the working directory, installed), as train.py resolves it.
"""

from __future__ import annotations

import argparse
import fcntl
import json
import os
import shutil
import sys
import time
from dataclasses import dataclass
from pathlib import Path

from pate.artifacts import MANIFEST
from pate.budget import BudgetLedger, default_budget_dir
from pate.cache_holds import held_artifacts, registry_locked
from pate.errors import UserError
from pate.locations import command_name, default_project_root

__all__ = ["CacheEntry", "default_cache_dir", "describe_budgets", "main", "prune", "scan"]


@dataclass(frozen=True)
class CacheEntry:
    """One entry of the cache: ``kind`` is "artifact", "partial" or "damaged" (a directory of a stage), or "files"
    (the files beside them that share a name up to the suffix: a decoded tensor of ``tensors/``, its sidecar and
    stats)."""

    stage: str
    key: str
    kind: str
    path: Path
    bytes: int
    modified: float


def default_cache_dir() -> Path:
    """``$PROJECT_ROOT/cache``, else ``cache`` in this clone, else in the working directory (as train.py resolves
    it: ``pate.pipeline.paths``)."""
    return Path(os.environ.get("PROJECT_ROOT") or default_project_root()) / "cache"


def describe_budgets(budget_dir: Path, delta: float, accountant: str) -> str:
    """The ``budget`` listing: per private split (dataset id), its total over the releases on data sharing a record
    with it (priced at ``delta`` by ``accountant`` under the relation and level of its releases), then one line per
    release on it, oldest first; then the leftovers of writes a crash cut short."""
    ledger = BudgetLedger(budget_dir)
    if not ledger.root.is_dir():
        return f"no privacy budget ledger at {budget_dir}"
    with ledger.locked():
        entries = ledger.entries()
    if not entries:
        return f"no release recorded in the privacy budget ledger {budget_dir}"
    lines = [f"privacy budget ledger {Path(budget_dir).resolve()}: {len(entries)} release(s)"]
    for dataset in sorted({entry.dataset for entry in entries}):
        own = [entry for entry in entries if entry.dataset == dataset]
        lines.append(f"dataset {dataset}: {len(own)} release(s) on it")
        for neighbors, record_level in sorted({(entry.neighbors, entry.record_level) for entry in own}):
            total = ledger.total(ledger.records(dataset), delta, neighbors, record_level, accountant, entries)
            lines.append(f"  total: {total.describe()}")
        lines.extend(
            f"  {entry.time}  {entry.stage}/{entry.key}  {entry.neighbors}  "
            f"{entry.config.get('method', '?').rsplit('.', 1)[-1]}  "
            f"target_epsilon={entry.config.get('target_epsilon')}  "
            f"{', '.join(event.name for event in entry.events)}"
            for entry in own
        )
    lines.extend(
        f"leftover {path}: a write cut short by a crash, never an entry (no noise was drawn for it)"
        for path in ledger.leftovers()
    )
    return "\n".join(lines)


def _size(path: Path) -> int:
    return sum(p.stat().st_size for p in path.rglob("*") if p.is_file())


def scan(cache_dir: Path) -> list[CacheEntry]:
    """Every entry of every top-level directory of ``cache_dir`` (``_entries``), sorted by directory and key: the
    listing accounts for all of the cache, the decoded images of ``tensors/`` included."""
    return [
        entry
        for top in sorted(p for p in Path(cache_dir).iterdir() if p.is_dir() and not p.name.startswith("."))
        for entry in _entries(top)
    ]


def _entries(top: Path) -> list[CacheEntry]:
    """The artifact and leftover directories of ``top``, and its other files grouped by name up to the suffix (a
    decoded tensor ``x.npy`` with ``x.json`` and ``x.stats``). Lock files are left out: they hold no data, and a
    build's lock is how ``prune`` knows a ``.partial`` is in use."""
    entries = []
    for path in sorted(p for p in top.iterdir() if p.is_dir()):
        name = path.name
        if name.endswith(".partial"):
            key, kind = name[: -len(".partial")], "partial"
        elif ".damaged-" in name:
            key, kind = name.split(".damaged-")[0], "damaged"
        else:
            key, kind = name, "artifact"
        entries.append(CacheEntry(top.name, key, kind, path, _size(path), path.stat().st_mtime))
    groups: dict[str, list[Path]] = {}
    for path in sorted(p for p in top.iterdir() if p.is_file() and p.suffix != ".lock"):
        groups.setdefault(path.stem, []).append(path)
    for key, paths in groups.items():
        entries.append(
            CacheEntry(
                top.name,
                key,
                "files",
                paths[0],
                sum(p.stat().st_size for p in paths),
                max(p.stat().st_mtime for p in paths),
            )
        )
    return sorted(entries, key=lambda entry: (entry.key, entry.kind))


def _building(entry: CacheEntry) -> bool:
    """Whether a build of ``entry``'s key holds its lock now (then its ``.partial`` is in use)."""
    lock = entry.path.with_name(entry.key + ".lock")
    if not lock.exists():
        return False
    try:
        with open(lock) as fh:
            fcntl.flock(fh, fcntl.LOCK_SH | fcntl.LOCK_NB)
            fcntl.flock(fh, fcntl.LOCK_UN)
        return False
    except BlockingIOError:
        return True


def _referenced(entries: list[CacheEntry], logs: Path) -> set[str]:
    """Artifact keys a ``metrics.json`` under ``logs`` names, and every key they build on (their manifests'
    upstream, followed to the data)."""
    keys: set[str] = set()
    for metrics in logs.rglob("metrics.json"):
        try:
            keys.update(str(key) for key in (json.loads(metrics.read_text()).get("artifacts") or {}).values())
        except (OSError, ValueError, AttributeError):
            continue
    upstream = {}
    for entry in entries:
        if entry.kind == "artifact":
            try:
                upstream[entry.key] = list(json.loads((entry.path / MANIFEST).read_text())["upstream"].values())
            except (OSError, ValueError, KeyError, TypeError):
                upstream[entry.key] = []
    pending = list(keys)
    while pending:
        for key in upstream.get(pending.pop(), []):
            if key not in keys:
                keys.add(key)
                pending.append(key)
    return keys


def prune(cache_dir: Path, logs: Path | None = None, dry_run: bool = False) -> list[CacheEntry]:
    """Remove the leftovers (and, with ``logs``, the unreferenced artifacts) of ``cache_dir``; returns what was
    (or, with ``dry_run``, would be) removed. An artifact that a run in progress holds is never removed
    (``pate.cache_holds``): the scan and the deletions happen under the lock that runs register under."""
    with registry_locked(cache_dir):
        held = held_artifacts(cache_dir)
        entries = scan(cache_dir)
        referenced = _referenced(entries, logs) if logs is not None else None
        doomed = [
            entry
            for entry in entries
            if (entry.kind == "damaged")
            or (entry.kind == "partial" and not _building(entry))
            or (
                referenced is not None
                and entry.kind == "artifact"
                and entry.key not in referenced
                and f"{entry.stage}/{entry.key}" not in held
            )
        ]
        if not dry_run:
            for entry in doomed:
                shutil.rmtree(entry.path)
    return doomed


def _human(size: float) -> str:
    for unit in ("B", "KB", "MB", "GB"):
        if size < 1024 or unit == "GB":
            return f"{size:.0f} {unit}" if unit == "B" else f"{size:.1f} {unit}"
        size /= 1024
    raise AssertionError("unreachable")


def _age(seconds: float) -> str:
    for unit, length in (("d", 86400), ("h", 3600), ("min", 60)):
        if seconds >= length:
            return f"{seconds / length:.0f} {unit}"
    return f"{seconds:.0f} s"


def describe(entries: list[CacheEntry], now: float | None = None) -> str:
    """The ``list`` table: per top-level directory, its finished entries (artifacts, or decoded tensors), size,
    oldest and newest; then the leftovers, one line each."""
    now = time.time() if now is None else now
    lines = [f"{'directory':<10} {'entries':>9} {'size':>10} {'oldest':>8} {'newest':>8}"]
    for stage in sorted({entry.stage for entry in entries}):
        done = [entry for entry in entries if entry.stage == stage and entry.kind in ("artifact", "files")]
        ages = (
            (_age(now - min(e.modified for e in done)), _age(now - max(e.modified for e in done)))
            if done
            else ("-", "-")
        )
        lines.append(f"{stage:<10} {len(done):>9} {_human(sum(e.bytes for e in done)):>10} {ages[0]:>8} {ages[1]:>8}")
    leftovers = [entry for entry in entries if entry.kind in ("partial", "damaged")]
    lines.append(
        f"total {_human(sum(e.bytes for e in entries))}; {len(leftovers)} leftover(s)"
        + (
            f" ({_human(sum(e.bytes for e in leftovers))}, removed by `python -m pate.cache prune`):"
            if leftovers
            else ""
        )
    )
    lines.extend(
        f"  {entry.path}  {entry.kind}  {_human(entry.bytes)}  {_age(now - entry.modified)} old"
        + ("  (a build is using it now)" if entry.kind == "partial" and _building(entry) else "")
        for entry in leftovers
    )
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog=command_name("pate-cache", "pate.cache"), description=__doc__.split("\n\n")[0]
    )
    parser.add_argument("command", choices=("list", "prune", "budget"), nargs="?", default="list")
    parser.add_argument(
        "--cache-dir", type=Path, default=None, help="default: $PROJECT_ROOT/cache or ./cache of this checkout"
    )
    parser.add_argument(
        "--logs",
        type=Path,
        default=None,
        help="prune: also remove finished artifacts that no metrics.json under this directory uses",
    )
    parser.add_argument("--dry-run", action="store_true", help="prune: only say what would be removed")
    parser.add_argument(
        "--budget-dir",
        type=Path,
        default=None,
        help="budget: the ledgers' directory (default: $PATE_BUDGET_DIR or ~/.local/share/pate/budget)",
    )
    parser.add_argument("--delta", type=float, default=1e-6, help="budget: the delta of the totals (default 1e-6)")
    parser.add_argument(
        "--accountant",
        choices=("tightest", "rdp"),
        default="tightest",
        help="budget: what prices the totals (default tightest)",
    )
    args = parser.parse_args(argv)
    if args.command == "budget":
        if not 0 < args.delta < 1:
            print(f"error: --delta {args.delta}; expected a number in (0, 1)", file=sys.stderr)
            return 2
        try:
            print(describe_budgets(args.budget_dir or default_budget_dir(), args.delta, args.accountant))
        except UserError as err:
            print(f"error: {err}", file=sys.stderr)
            return 2
        return 0
    cache_dir = args.cache_dir or default_cache_dir()
    if not cache_dir.is_dir():
        print(f"error: {cache_dir} is not a directory (no cache there; --cache-dir names another)", file=sys.stderr)
        return 2
    if args.logs is not None and not args.logs.is_dir():
        print(f"error: --logs {args.logs} is not a directory", file=sys.stderr)
        return 2
    print(f"cache {cache_dir.resolve()}")
    if args.command == "list":
        print(describe(scan(cache_dir)))
        return 0
    removed = prune(cache_dir, args.logs, args.dry_run)
    verb = "would remove" if args.dry_run else "removed"
    for entry in removed:
        print(f"{verb} {entry.path} ({entry.kind}, {_human(entry.bytes)})")
    print(
        f"{verb} {len(removed)} director{'y' if len(removed) == 1 else 'ies'}, {_human(sum(e.bytes for e in removed))}"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
