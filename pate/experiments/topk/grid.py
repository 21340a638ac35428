"""The private top-k experiments of the papers, as one grid runner: settings x epsilons x k x mechanisms.

A *setting* is a batch of Q histograms that one run of the experiment answers as Q adaptive queries (one
flat histogram; ten consecutive days; one check-in data set) together with its delta. For every epsilon,
k and mechanism the mechanism is calibrated so that Q queries cost (epsilon, delta) by its own accountant
(``for_budget``), the privacy actually spent is recomputed (``spent``) and checked against the target,
and ``trials`` independent repetitions of the Q queries run as one vectorised batch. The measure is the
recall of the true top-k (``top_k_recall``), averaged over the Q queries of a trial; the rows report its
mean and standard deviation over trials.
"""

from __future__ import annotations

import inspect
import zlib
from dataclasses import dataclass
from typing import Any, Callable, Iterator

import numpy as np

from pate.experiments.topk.histograms import (
    CHECKIN_SHAPES,
    flat_histogram,
    growing_gap_days,
    heavy_tailed_histogram,
    read_checkins,
)
from pate.mechanisms.topk import check_histograms, top_k_recall
from pate.mechanisms.topk.base import check_k
from pate.privacy import checks
from pate.progress import progress_bar

__all__ = ["NOISE_MODES", "Setting", "noise_mode", "run_grid", "settings_for"]

EXPERIMENT_KINDS = ("flat", "repeated", "checkin")
NOISE_MODES = ("auto", "seeded", "secure")
# A calibrated mechanism may overshoot its target by the calibration's rounding only.
SPENT_TOLERANCE = 1e-6


@dataclass(frozen=True, eq=False)
class Setting:
    """Histograms answered together as ``queries`` adaptive queries, and the delta they are held to."""

    label: str
    histograms: np.ndarray  # int64 [queries, d]
    delta: float
    ks: tuple[int, ...]
    source: str  # where the histograms come from, for the report
    private: bool = False  # read from a user's file: its noise must be secret (``noise_mode``)

    @property
    def queries(self) -> int:
        return int(self.histograms.shape[0])


def settings_for(data: dict[str, Any], ks, delta) -> list[Setting]:
    """The settings of an experiment's ``data`` config (``conf/topk_experiment/*.yaml``)."""
    kind = data.get("kind")
    if kind not in EXPERIMENT_KINDS:
        raise ValueError(f"topk_experiment.data.kind must be one of {EXPERIMENT_KINDS}, got {kind!r}")
    ks = tuple(checks.positive_int("k", k) for k in ks)
    if kind == "flat":
        return [
            Setting(
                f"k={k}",
                flat_histogram(data["num_bins"], k, data["value"])[None, :],
                float(delta),
                (k,),
                f"flat: {data['num_bins']} bins, top {k} at {data['value']}, the rest 0",
            )
            for k in ks
        ]
    if kind == "repeated":
        days = growing_gap_days(
            data["num_bins"], data["num_days"], data["start_total"], data["growth"], data["tail"], data["seed"]
        )
        span = checks.positive_int("topk_experiment.data.queries_per_interval", data["queries_per_interval"])
        if data["num_days"] % span:
            raise ValueError(
                f"topk_experiment.data.num_days={data['num_days']} must be a multiple of "
                f"topk_experiment.data.queries_per_interval={span}"
            )
        return [
            Setting(
                f"days {start + 1}-{start + span}",
                days[start : start + span],
                float(delta),
                ks,
                f"growing-gap days: {data['num_bins']} regions, growth {data['growth']}/day, seed {data['seed']}",
            )
            for start in range(0, data["num_days"], span)
        ]
    return [_checkin_setting(name, spec, ks, delta) for name, spec in data["datasets"].items()]


def _checkin_setting(name: str, spec: dict[str, Any], ks, delta) -> Setting:
    """One check-in data set: a real file when ``spec.path`` is set, else the published shape (synthetic)."""
    if spec.get("path"):
        counts, users = read_checkins(spec["path"], spec["user_column"], spec["item_column"], spec.get("delimiter"))
        source = f"{name}: file {spec['path']} ({users} users, {counts.size} venues, max count {counts.max()})"
        private = True
    else:
        if name not in CHECKIN_SHAPES:
            raise ValueError(
                f"no path given for check-in data set {name!r} and no published shape for it "
                f"(known: {sorted(CHECKIN_SHAPES)})"
            )
        shape = CHECKIN_SHAPES[name]
        counts = heavy_tailed_histogram(shape["bins"], shape["max_count"], spec.get("seed", 0))
        users = shape["users"]
        source = (
            f"{name}: synthetic power law with the published shape ({users} users, {shape['bins']} venues, "
            f"max count {shape['max_count']}), seed {spec.get('seed', 0)}"
        )
        private = False
    if delta is None:
        source += (
            f"; delta = 1/n = {1.0 / users:.3g}, the papers' choice: a failure probability of one in n "
            f"users, weaker than the delta far below 1/n a guarantee for n users asks"
        )
    return Setting(name, counts[None, :], 1.0 / users if delta is None else float(delta), ks, source, private)


def _build(factory: Callable, k: int, epsilon: float, delta: float, queries: int, neighbors: str, kbar: int):
    """Call a mechanism's ``for_budget`` partial; ``max_k`` (kbar) only where the mechanism takes one."""
    arguments = dict(k=k, epsilon=epsilon, delta=delta, queries=queries, neighbors=neighbors)
    if "max_k" in inspect.signature(factory).parameters:
        arguments["max_k"] = kbar
    return factory(**arguments)


def noise_mode(configured: str, settings: list[Setting]) -> str:
    """``seeded`` or ``secure``: ``auto`` is secure when any setting reads a user's file (a published seed would
    replay the noise, and the guarantee with it; ``pate.pipeline.noise``) and seeded on generated histograms;
    ``ValueError`` naming ``noise`` for a value outside ``NOISE_MODES``."""
    if configured not in NOISE_MODES:
        raise ValueError(
            f"noise={configured!r}; expected one of {NOISE_MODES}: secure (the operating system's "
            f"entropy), seeded (from `seed`, replayable) or auto (secure where a file is read)"
        )
    if configured != "auto":
        return configured
    return "secure" if any(setting.private for setting in settings) else "seeded"


def _generator(mode: str, seed: int, *parts) -> np.random.Generator:
    """A generator for one grid cell: fixed by the run seed and the cell (stable across runs and Python versions),
    or, secure, from fresh operating-system entropy that is never kept."""
    if mode == "secure":
        return np.random.default_rng(np.random.SeedSequence())
    return np.random.default_rng([seed, *(zlib.crc32(str(part).encode()) for part in parts)])


def _cells(settings, epsilons, factories) -> Iterator[tuple]:
    for setting in settings:
        for epsilon in epsilons:
            for k in setting.ks:
                for name, factory in factories.items():
                    yield setting, float(epsilon), k, name, factory


def run_grid(
    settings: list[Setting],
    epsilons,
    factories: dict[str, Callable],
    trials: int,
    neighbors: str,
    kbar_factor: int,
    seed: int,
    progress: bool = True,
    noise: str = "auto",
) -> list[dict[str, Any]]:
    """Run every (setting, epsilon, k, mechanism) cell; one result row per cell (module docstring). ``noise``: where
    the mechanisms' noise comes from (``noise_mode``); each row names the mode.

    Everything checkable is checked before any mechanism runs: the histograms, each k against the
    number of bins, and that every mechanism can be calibrated to every (epsilon, delta, queries).
    """
    trials = checks.positive_int("trials", trials)
    kbar_factor = checks.positive_int("kbar_factor", kbar_factor)
    mode = noise_mode(noise, settings)
    for setting in settings:
        check_histograms(setting.histograms, f"histograms of {setting.label}")
        for k in setting.ks:
            check_k(k, setting.histograms.shape[1], name=f"k (setting {setting.label})")
    cells = list(_cells(settings, epsilons, factories))
    mechanisms = {}
    for setting, epsilon, k, name, factory in cells:
        kbar = min(kbar_factor * k, setting.histograms.shape[1] - 1)
        mechanism = _build(factory, k, epsilon, setting.delta, setting.queries, neighbors, kbar)
        spent = mechanism.spent(setting.queries, setting.delta)
        if spent > epsilon * (1.0 + SPENT_TOLERANCE):
            raise ValueError(
                f"{name} calibrated for epsilon={epsilon} spends {spent} over {setting.queries} queries "
                f"at delta={setting.delta}: calibration bug"
            )
        mechanisms[(setting.label, epsilon, k, name)] = (mechanism, spent, kbar)

    rows = []
    for setting, epsilon, k, name, _ in progress_bar(cells, desc="top-k grid", unit="cell", disable=not progress):
        mechanism, spent, kbar = mechanisms[(setting.label, epsilon, k, name)]
        batch = np.tile(setting.histograms, (trials, 1))
        rng = _generator(mode, seed, setting.label, epsilon, k, name)
        result = mechanism(batch, rng)
        recall = top_k_recall(batch, result.indices, k).reshape(trials, setting.queries).mean(axis=1)
        returned = result.returned.reshape(trials, setting.queries).mean(axis=1)
        rows.append(
            {
                "setting": setting.label,
                "mechanism": name,
                "k": k,
                "kbar": kbar,
                "epsilon": epsilon,
                "delta": setting.delta,
                "neighbors": neighbors,
                "queries": setting.queries,
                "trials": trials,
                "recall_mean": float(recall.mean()),
                "recall_std": float(recall.std(ddof=1)) if trials > 1 else 0.0,
                "returned_mean": float(returned.mean()),
                "epsilon_spent": float(spent),
                "privacy": _privacy_line(mechanism, setting.queries, setting.delta),
                "mechanism_detail": mechanism.name,
                "source": setting.source,
                "noise": mode,
                "from_file": setting.private,
            }
        )
    return rows


def _privacy_line(mechanism, queries: int, delta: float) -> str:
    """How the mechanism's cost was accounted, with the relation and delta."""
    queries_text = f"{queries} quer{'y' if queries == 1 else 'ies'}"
    return f"{mechanism.accounting}; {queries_text}, delta={delta:.3g}, {mechanism.neighbors}"
