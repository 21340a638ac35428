"""Read a finished Hydra multirun directory into validated run records.

A sweep directory holds Hydra's ``multirun.yaml`` and one directory per job with ``.hydra/config.yaml``
and ``.hydra/overrides.yaml``; a job that finished also holds the ``metrics.json`` written by a ``train.py`` run.
A job without ``metrics.json`` is recorded as failed, never dropped; a job the sweep's overrides promise that has
no directory at all is recorded as never started, with its number and overrides. A ``metrics.json`` that breaks the
run record (``pate.run_record``) is a pipeline bug and raises ``ValueError`` naming the file and the key.
"""

from __future__ import annotations

import copy
import dataclasses
import json
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from pate.report.verify import cache_dir_of, verify_epsilon
from pate.run_record import NOT_COVERED_BY_EPSILON, check_record, not_covered_by_epsilon

RELATIONS = ("replace", "add_remove")


@dataclass(frozen=True)
class Run:
    """One finished job: its directory name (relative to the sweep), overrides, composed config and metrics."""

    job: str
    overrides: tuple[str, ...]
    config: dict[str, Any]
    metrics: dict[str, Any]


@dataclass(frozen=True)
class FailedJob:
    """A job directory without metrics.json (the job raised or was killed), or a job of the sweep that never started
    (``job`` is then its number in the sweep's order)."""

    job: str
    overrides: tuple[str, ...]


@dataclass(frozen=True)
class Sweep:
    """A whole multirun: the command-line sweep overrides, finished runs and failed jobs, in job order.

    ``relation`` and ``delta`` are shared by every finished run; a sweep mixing them is refused.
    """

    directory: Path
    overrides: tuple[str, ...]
    runs: tuple[Run, ...]
    failed: tuple[FailedJob, ...]
    relation: str
    delta: float
    unverified: tuple[str, ...] = ()  # why a finished job's epsilon could not be replayed (pate.report.verify)
    never_started: tuple[FailedJob, ...] = ()  # jobs the sweep's overrides promise that have no directory (a sweep
    # cut short: a job that failed ended it), by number and overrides
    foreign: tuple[str, ...] = ()  # job directories whose overrides this sweep does not produce: left out
    hidden: tuple[str, ...] = ()  # run-record paths its report leaves out: its publishable form (publishable_form)


BASIC_SWEEPER = "hydra._internal.core_plugins.basic_sweeper.BasicSweeper"


def expected_overrides(multirun: dict[str, Any]) -> list[tuple[str, ...]] | None:
    """Each job's overrides as the sweep's own overrides produce them (the sweeper's ``params``, overridden by the
    command line's, expanded as Hydra's basic sweeper expands them), in job order; None for another sweeper, a
    multirun.yaml that does not name its sweeper (Hydra always writes it), or overrides that do not parse (then
    unknown, not guessed)."""
    from hydra._internal.core_plugins.basic_sweeper import BasicSweeper
    from hydra.core.override_parser.overrides_parser import OverridesParser
    from hydra.errors import HydraException

    hydra = multirun.get("hydra") or {}
    sweeper = hydra.get("sweeper") or {}
    if sweeper.get("_target_") != BASIC_SWEEPER:
        return None
    overrides = [f"{key}={value}" for key, value in (sweeper.get("params") or {}).items()]
    overrides += list((hydra.get("overrides") or {}).get("task") or ())
    try:
        parsed = {override.key_or_group: override for override in OverridesParser.create().parse_overrides(overrides)}
        batches = BasicSweeper.split_arguments(list(parsed.values()), None)  # a key given twice: the last one
    except (HydraException, ValueError, TypeError):
        return None
    return [tuple(job) for batch in batches for job in batch]


def promised_jobs(multirun: dict[str, Any]) -> int | None:
    """How many jobs the sweep's overrides promise (``expected_overrides``); None when unknown."""
    expected = expected_overrides(multirun)
    return None if expected is None else len(expected)


def job_sort_key(name: str) -> tuple[int, int, str]:
    """Numeric job names (Hydra's default subdir ``${hydra.job.num}``) in numeric order, then the rest."""
    return (0, int(name), "") if name.isdigit() else (1, 0, name)


def _read_jobs(
    directory: Path, jobs: list[str], expected: set[frozenset[str]] | None
) -> tuple[list[Run], list[FailedJob], list[str]]:
    """The finished runs (schema-checked), the failed jobs (no metrics.json) and the finished jobs whose overrides
    are not among ``expected`` (copied in, or left by another sweep)."""
    runs, failed, foreign = [], [], []
    for job in jobs:
        hydra_dir = directory / job / ".hydra"
        overrides = tuple(_load_yaml(hydra_dir / "overrides.yaml") or ())
        metrics_path = directory / job / "metrics.json"
        if not metrics_path.is_file():
            failed.append(FailedJob(job, overrides))
            continue
        try:
            metrics = json.loads(metrics_path.read_text())
        except json.JSONDecodeError as err:
            raise ValueError(f"{metrics_path}: not valid JSON ({err})") from err
        check_record(metrics, metrics_path)
        runs.append(Run(job, overrides, _load_yaml(hydra_dir / "config.yaml") or {}, metrics))
        if expected is not None and frozenset(overrides) not in expected:
            foreign.append(job)
    return runs, failed, foreign


def _never_started(expected: list[tuple[str, ...]] | None, present: list[Run | FailedJob]) -> tuple[FailedJob, ...]:
    """The jobs of ``expected`` (the sweep's own expansion, in job order) that no job directory holds: a sweep ended
    by a failed job, or killed, never started them. Named by number and overrides, so a rerun of just those is
    possible; none when the expansion is unknown (another sweeper)."""
    if expected is None:
        return ()
    started = {frozenset(job.overrides) for job in present}
    return tuple(
        FailedJob(str(number), overrides)
        for number, overrides in enumerate(expected)
        if frozenset(overrides) not in started
    )


def _load_yaml(path: Path) -> Any:
    if not path.is_file():
        raise ValueError(f"{path}: missing; expected a file written by Hydra for this sweep")
    with path.open() as f:
        return yaml.safe_load(f)


def _single(values: dict[Any, list[str]], what: str, directory: Path) -> Any:
    """The one value every finished run shares, or a ValueError listing which jobs hold which value."""
    if len(values) != 1:
        listing = "; ".join(f"{what}={value!r} in jobs {jobs}" for value, jobs in sorted(values.items()))
        raise ValueError(
            f"{directory}: the sweep mixes {what} ({listing}); a report compares methods "
            f"under one {what}: run one sweep per {what} and compare their reports side by side"
        )
    return next(iter(values))


# Run-record fields a report's cells must not mix: the tables average the runs of one (method, epsilon) over seeds,
# so runs with another query count or another number of teachers must not join them (an axis report names the one
# it plots against). A run without the field (num_teachers: DP-SGD, Private-kNN) takes no part.
SINGLE_VALUED = ("queries", "num_teachers")


def collect_sweep(sweep_dir: str | Path, axis: str | None = None, cache_dir: str | Path | None = None) -> Sweep:
    """Read every job of the Hydra multirun at ``sweep_dir``.

    Job directories are the sub-directories holding ``.hydra/`` (so launcher folders such as
    ``.submitit/`` are not jobs). Raises ValueError when ``sweep_dir`` is not a multirun directory, when a
    metrics.json breaks the schema, when no job finished, when finished runs mix relations, deltas or a
    field of ``SINGLE_VALUED`` (except ``axis``, the field an axis report plots against: ``pate.report.axis``), or
    when a job's recorded epsilon disagrees
    with the replay of its ledger (``pate.report.verify``) in ``cache_dir`` (default: each job's own
    ``paths.cache_dir``, resolved from the working directory as the run resolved it).
    """
    if axis is not None and axis not in SINGLE_VALUED:  # before any job is read or its ledger replayed
        raise ValueError(
            f"axis={axis!r}: expected one of {list(SINGLE_VALUED)} (the run-record field an axis report "
            f"plots against) or None"
        )
    directory = Path(sweep_dir)
    if not (directory / "multirun.yaml").is_file():
        raise ValueError(
            f"sweep_dir={str(sweep_dir)!r}: no multirun.yaml; expected the directory of a "
            f"finished Hydra multirun (hydra.sweep.dir)"
        )
    multirun = _load_yaml(directory / "multirun.yaml") or {}
    sweep_overrides = tuple((multirun.get("hydra") or {}).get("overrides", {}).get("task") or ())

    jobs = sorted((p.name for p in directory.iterdir() if (p / ".hydra").is_dir()), key=job_sort_key)
    expected = expected_overrides(multirun)
    known = None if expected is None else {frozenset(job) for job in expected}
    runs, failed, foreign = _read_jobs(directory, jobs, known)
    unverified = []
    for run in runs:
        cache = Path(cache_dir) if cache_dir is not None else cache_dir_of(run.config, Path.cwd())
        try:
            reason = verify_epsilon(run.job, run.metrics, cache)
        except ValueError as err:
            raise ValueError(f"{directory}: {err}") from err
        if reason is not None:
            unverified.append(reason)

    if not runs:
        raise ValueError(
            f"sweep_dir={str(sweep_dir)!r}: no finished job (no metrics.json); failed jobs: {[f.job for f in failed]}"
        )
    relations: dict[str, list[str]] = {}
    deltas: dict[float, list[str]] = {}
    for run in runs:
        relations.setdefault(run.metrics["neighbors"], []).append(run.job)
        deltas.setdefault(float(run.metrics["delta"]), []).append(run.job)
    for field in SINGLE_VALUED:
        values: dict[int, list[str]] = {}
        for run in runs:
            if run.metrics.get(field) is not None:
                values.setdefault(int(run.metrics[field]), []).append(run.job)
        if field != axis and values:
            _single(values, field, directory)
    never_started = _never_started(expected, [*runs, *failed])
    # every finished job took part in the checks above (a foreign one mixing relations is refused all the same);
    # the report's tables leave the foreign ones out, and its notices name them
    runs = [run for run in runs if run.job not in foreign]
    return Sweep(
        directory,
        sweep_overrides,
        tuple(runs),
        tuple(failed),
        relation=_single(relations, "neighbors", directory),
        delta=_single(deltas, "delta", directory),
        unverified=tuple(unverified),
        never_started=never_started,
        foreign=tuple(foreign),
    )


def publishable_form(sweep: Sweep) -> Sweep:
    """The sweep as its publishable report shows it: every statistic the runs' epsilons do not cover
    (``pate.run_record.not_covered_by_epsilon``: the diagnostics, the reference students, the data-dependent
    statistics) taken out of their records, and named in ``hidden``. A seeded run's seed stays in its record, since
    the report pairs runs over seeds by it, and is hidden from everything the report prints (``shown_overrides``)."""
    hidden = tuple(
        path
        for path in NOT_COVERED_BY_EPSILON
        if any(path in not_covered_by_epsilon(run.metrics) for run in sweep.runs)
    )
    runs = tuple(
        dataclasses.replace(run, metrics=_without(run.metrics, [p for p in hidden if p != "seed"]))
        for run in sweep.runs
    )
    if "seed" in hidden:
        runs = tuple(dataclasses.replace(run, metrics=_seed_left_out(run.metrics)) for run in runs)
    return dataclasses.replace(sweep, runs=runs, hidden=hidden)


def _seed_left_out(record: dict[str, Any]) -> dict[str, Any]:
    """``record`` whose ``noise_source`` names no seed: records written before it stopped naming one said
    "seeded from seed=<n>", which would publish the seed the report hides."""
    if "noise_source" not in record:
        return record
    return {**record, "noise_source": re.sub(r"seed=\d+", "seed=<left out>", str(record["noise_source"]))}


def _without(record: dict[str, Any], paths: list[str]) -> dict[str, Any]:
    """A copy of ``record`` without the dotted ``paths`` it holds."""
    record = copy.deepcopy(record)
    for path in paths:
        *parents, last = path.split(".")
        inner = record
        for key in parents:
            inner = inner.get(key) if isinstance(inner, dict) else None
        if isinstance(inner, dict):
            inner.pop(last, None)
    return record


def shown_overrides(sweep: Sweep, overrides: tuple[str, ...]) -> tuple[str, ...]:
    """The overrides a report prints: all of them, or, where the seed is hidden (``publishable_form``), all but the
    seed's."""
    if "seed" not in sweep.hidden:
        return overrides
    return tuple(o for o in overrides if o.split("=", 1)[0].lstrip("+~") != "seed")
