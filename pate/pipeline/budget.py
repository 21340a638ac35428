"""A run and the privacy budget of its data (``pate.budget``): what a run draws on its private data is counted
there before its noise is drawn, and the run reports the total beside its own epsilon.

Only releases drawn with secret noise are counted: a seeded release (``privacy.noise=seeded``, the built-in
synthetic data's default) can be replayed from its seed and guarantees nothing, so there is nothing to spend.

Before any compute (``plan_release``, called by ``pate.pipeline.runner.prepare``):

* a release already in the cache is reused and adds nothing;
* a release of the same quantity as one in the ledger (``Stage.definition``: the same data and settings) under
  another key -- a code change or an upgrade re-keys it -- is announced as a second release of the same data,
  with the total it makes; ``privacy.reuse_release=true`` reuses the earlier one instead, where its artifact is
  still in the cache;
* ``privacy.dataset_budget`` refuses a release that would take the total past it, in one line giving the total
  so far.

While building (``BudgetGuard``, the artifact store's guard): the cap is checked again and the release recorded
under the ledger's lock, before the noise is drawn (a release the plan saw in the cache and that disappeared
since is announced there); after the draw, the cost events the release wrote must be the ones recorded.
"""

from __future__ import annotations

import dataclasses
import json
import logging
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np
from omegaconf import DictConfig

from pate.aggregate import LEDGER_FILE
from pate.artifacts import MANIFEST, Stage, read_artifact
from pate.budget import BudgetEntry, BudgetLedger, BudgetTotal, default_budget_dir, private_data_id, private_records
from pate.errors import UserError
from pate.pipeline.graph import Dataset
from pate.pipeline.methods.base import Release
from pate.pipeline.noise import NoiseSource
from pate.privacy import Ledger

log = logging.getLogger("train")

__all__ = ["BudgetGuard", "PinnedStage", "budget_metrics", "plan_release"]

SECOND = (
    "this run draws a SECOND release of the same private data and settings: %d earlier release(s) of the same "
    "quantity are recorded (the last at %s, cache key %s; a code change, an upgrade or a deleted artifact "
    "re-draws a release). Both are counted: the total on this private data becomes %s. "
    "privacy.reuse_release=true reuses an earlier release instead, while it is in the cache."
)


@dataclasses.dataclass(frozen=True)
class PinnedStage(Stage):
    """A finished artifact taken as it is, under the key it was built with (``privacy.reuse_release``: an earlier
    release of the same quantity, built by another code version): its manifest's config and upstream keys stand,
    and it is never built; if it is gone when read, ``build`` says so in one line."""

    pinned_key: str = ""
    pinned_upstream: Mapping[str, str] = dataclasses.field(default_factory=dict)
    pinned_definition: str = ""

    @property
    def key(self) -> str:
        return self.pinned_key

    @property
    def upstream_keys(self) -> dict[str, str]:
        return dict(self.pinned_upstream)

    @property
    def definition(self) -> str:
        return self.pinned_definition


@dataclasses.dataclass
class BudgetGuard:
    """The run's hold on the budget ledger: the run's private split (``records``, ``dataset``), ``release`` the
    stage that draws the release, ``cost`` its cost events, ``cap`` the ``privacy.dataset_budget`` (None: no cap),
    priced at ``delta`` by ``accountant`` under ``neighbors`` at the run's level (``record_level``). ``drawn``
    says whether this run drew (and recorded) it, ``announced`` whether a second release was announced."""

    ledger: BudgetLedger
    records: np.ndarray
    release: Stage
    cost: Ledger
    cap: float | None
    delta: float
    accountant: str
    neighbors: str
    record_level: bool
    config: dict[str, Any]
    drawn: bool = False
    announced: bool = False

    @property
    def dataset(self) -> str:
        return private_data_id(self.records)

    def total(self, planned: Ledger | None = None, entries=None) -> BudgetTotal:
        """The ledger's total for this run's data now (with ``planned``, a release about to be drawn, added)."""
        return self.ledger.total(
            self.records, self.delta, self.neighbors, self.record_level, self.accountant, entries, planned
        )

    def check_cap(self, entries) -> BudgetTotal:
        """The total with this run's release added; ``UserError`` if it passes the cap, or if it cannot be priced
        (releases on this data under another relation or level)."""
        after = self.total(self.cost, entries)
        if self.cap is None:
            return after
        before = self.total(entries=entries)
        if after.epsilon is None or after.epsilon > self.cap:
            raise UserError(
                f"privacy.dataset_budget={self.cap:g}: this release would take the total spent on this private data "
                f"to {'an unpriced total' if after.epsilon is None else f'epsilon {after.epsilon:.4g}'} (delta "
                f"{self.delta:g}, neighbours: {self.neighbors}); spent so far: {before.describe()}; refused before "
                f"any compute (`pate-cache budget` lists the ledger)"
            )
        return after

    def announce(self, entries, after: BudgetTotal) -> None:
        """Say so, once, when the release about to be drawn is of a quantity already recorded on this data;
        ``after`` is the total with it (``check_cap``'s, priced once: a PLD costs seconds)."""
        same = [entry for entry in entries if entry.definition == self.release.definition]
        if same and not self.announced:
            self.announced = True
            log.warning(SECOND, len(same), same[-1].time, same[-1].key, after.describe())

    def before_draw(self, stage: Stage) -> None:
        """Record the release about to be drawn, under the ledger's lock, after checking the cap again (another
        run may have spent on the same data since this run was planned). A reference (a privacy-free limit, never
        released) is not counted; any other stage drawing secret noise is refused: nothing unpriced is drawn. An
        earlier release pinned by ``privacy.reuse_release`` is never drawn: asked to build, it refuses (it is gone)
        before anything is recorded."""
        if isinstance(stage, PinnedStage):
            stage.build(None, {})
        if stage.key != self.release.key:
            if "reference" in stage.config:
                return
            raise RuntimeError(
                f"{stage.name}/{stage.key} draws secret noise but is neither the run's release nor a "
                f"reference: its cost would be in no ledger"
            )
        with self.ledger.locked():
            entries = self.ledger.entries()
            after = self.check_cap(entries)
            self.announce(entries, after)
            dataset = self.ledger.add_records(self.records)
            path = self.ledger.append(
                BudgetEntry.new(
                    dataset, stage.name, stage.key, stage.definition, self.cost, self.record_level, self.config
                )
            )
        self.drawn = True
        log.info(
            "privacy budget: this release is recorded in %s; the total on this private data is now %s",
            path,
            after.describe(),
        )

    def after_draw(self, stage: Stage, work: Path) -> None:
        """The cost events the release wrote must be those recorded before the draw: a method that declares one
        cost and writes another is a bug the budget would hide."""
        if stage.key != self.release.key:
            return
        written = [event.to_dict() for event in Ledger.load(work / LEDGER_FILE).history]
        if written != [event.to_dict() for event in self.cost.history]:
            raise RuntimeError(
                f"{stage.name}: the release wrote cost events {written!r:.300} to {LEDGER_FILE}, but "
                f"the method declared {[e.to_dict() for e in self.cost.history]!r:.300} "
                f"(Release.cost), which the privacy budget recorded"
            )


def plan_release(
    cfg: DictConfig, data: Dataset, release: Release, noise: NoiseSource, record_level: bool
) -> tuple[Release, BudgetGuard | None]:
    """The run's release as it will be read, and the guard of its data's ledger (None for a seeded run): see the
    module docstring. Raises ``UserError`` before any compute for a damaged ledger, a release of secret noise that
    declares no cost, or a cap the release would pass."""
    cap = cfg.privacy.get("dataset_budget")
    if noise.mode != "secure":
        if cap is not None:
            log.info(
                "privacy.dataset_budget=%g does not apply: this run's noise is seeded (privacy.noise), so its "
                "release can be replayed and spends no budget",
                cap,
            )
        return release, None
    if release.cost is None:
        raise UserError(
            f"method {cfg.method._target_}: its release draws secret noise but declares no cost "
            f"(Release.cost), so the privacy budget of the data could not count it; a method must say "
            f"what its release costs (docs/add-a-method.md)"
        )
    stage = release.labels
    ledger = BudgetLedger(cfg.paths.get("budget_dir") or default_budget_dir())
    with ledger.locked():  # a reader without the lock could see an entry before the head that counts it
        entries = ledger.entries()
    settings = {
        "neighbors": str(cfg.privacy.neighbors),
        "delta": float(cfg.privacy.delta),
        "target_epsilon": cfg.privacy.target_epsilon,
        "budget_epsilon": cfg.privacy.budget_epsilon,
        "accountant": str(cfg.privacy.accountant),
        "method": str(cfg.method._target_),
    }
    guard = BudgetGuard(
        ledger,
        private_records(data.arrays),
        stage,
        release.cost,
        None if cap is None else float(cap),
        float(cfg.privacy.delta),
        str(cfg.privacy.accountant),
        str(cfg.privacy.neighbors),
        record_level,
        settings,
    )
    cache = Path(cfg.paths.cache_dir)
    if (cache / stage.name / stage.key / MANIFEST).is_file():
        return release, guard  # reused (the store verifies it when read): nothing new is drawn
    entries = ledger.sharing(guard.records, entries)
    same = [entry for entry in entries if entry.definition == stage.definition]
    if same and cfg.privacy.get("reuse_release", False):
        for entry in reversed(same):
            pinned = _pinned(cache, entry, stage)
            if pinned is not None:
                log.warning(
                    "privacy.reuse_release=true: reusing the earlier release %s of the same data and settings "
                    "(recorded %s), built by another code version; nothing new is drawn",
                    pinned.key,
                    entry.time,
                )
                return _with_release(release, pinned), dataclasses.replace(guard, release=pinned)
        log.warning(
            "privacy.reuse_release=true, but no earlier release of the same data and settings is left in "
            "the cache with the cost recorded for it (%d recorded in %s): this run draws a new one",
            len(same),
            ledger.root,
        )
    after = guard.check_cap(entries)
    guard.announce(entries, after)
    if entries and not same:
        log.info(
            "this run draws a new release on private data with %d earlier release(s); the total becomes %s",
            len(entries),
            after.describe(),
        )
    return release, guard


def _pinned(cache: Path, entry: BudgetEntry, stage: Stage) -> PinnedStage | None:
    """The earlier release of ``entry`` as a stage of this run, if it is in the cache, intact, and its cost events
    are those the ledger recorded for it."""
    name, key = entry.stage, entry.key
    art = read_artifact(cache, name, key)
    if art is None or not art.has(LEDGER_FILE):
        return None
    recorded = [event.to_dict() for event in entry.events]
    if [event.to_dict() for event in Ledger.load(art.file(LEDGER_FILE)).history] != recorded:
        return None
    manifest = json.loads((art.path / MANIFEST).read_text())

    def gone(work: Path, _) -> None:
        raise UserError(
            f"privacy.reuse_release=true: the earlier release {cache / name / key} disappeared or was "
            f"damaged while this run went on; run again (without privacy.reuse_release to draw anew)"
        )

    return PinnedStage(
        name,
        manifest["config"],
        gone,
        pinned_key=key,
        pinned_upstream=manifest["upstream"],
        pinned_definition=stage.definition,
    )


def _with_release(release: Release, pinned: Stage) -> Release:
    """``release`` with its releasing stage replaced by ``pinned`` wherever it appears."""
    old = release.labels
    stages = {name: pinned if stage is old else stage for name, stage in release.stages.items()}
    return dataclasses.replace(
        release, labels=pinned, stages=stages, model=pinned if release.model is old else release.model
    )


def budget_metrics(guard: BudgetGuard | None, unit_text: str) -> dict[str, Any]:
    """``metrics.json``'s ``dataset_epsilon``, ``dataset_privacy`` and ``dataset_budget`` (docs/run-record.md):
    the total on the run's private data after this run, or nulls for a seeded run (nothing secret released)."""
    if guard is None:
        return {"dataset_epsilon": None, "dataset_budget": None}
    with guard.ledger.locked():
        total = guard.total()
    this = "reused_earlier" if isinstance(guard.release, PinnedStage) else "drawn" if guard.drawn else "reused"
    return {
        "dataset_epsilon": total.epsilon,
        "dataset_privacy": f"{total.describe()}; one neighbour: {unit_text}",
        "dataset_budget": {
            "dataset": guard.dataset,
            "ledger": str(guard.ledger.root.resolve()),
            "releases": total.releases,
            "datasets": total.datasets,
            "other_relations": total.other_relations,
            "cap": guard.cap,
            "this_release": this,
        },
    }
