"""Private-kNN as a method (Zhu, Yin, Feng & Wang, CVPR 2020): no teachers; every public query is labelled by its
k nearest private records, by cosine on the public features, among a fresh Poisson subsample of the private
training split, through Gaussian noise on the per-label counts and the threshold k / 2
(``pate.mechanisms.PrivateKNN``, whose docstring gives the privacy argument).

    features -> private_knn (the aggregate artifact: released labels, ledger.json) -> student

``sigma`` is calibrated to ``privacy.target_epsilon`` over the queries when it is set (like PATE's aggregators),
and ``k`` and ``sampling_rate`` follow the noise: ``method.recipes`` (``pate.pipeline.methods.recipes``) picks them
by the target. ``privacy.budget_epsilon`` stops answering queries where it would be exceeded.
"""

from __future__ import annotations

import logging
from pathlib import Path
from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np
import torch
from omegaconf import DictConfig

from pate.aggregate import UNANSWERED, queries_within_budget, write_reference, write_release
from pate.artifacts import Artifact, ArtifactStore, Stage
from pate.data.partition import read_queries
from pate.features import read_features
from pate.mechanisms import PrivateKNN, subsampled_knn_votes
from pate.pipeline.checks import building
from pate.pipeline.graph import Dataset
from pate.pipeline.methods.base import Method, Release, RunSettings, SharedStages, method_settings
from pate.pipeline.methods.recipes import apply_recipe
from pate.pipeline.schemas import PrivateKNNConfig, schema_defaults
from pate.privacy import Ledger, calibrate_noise, event_to_dict
from pate.privacy.unit import privacy_unit

log = logging.getLogger("train")

__all__ = ["PrivateKNNMethod", "RECIPE_DEFAULTS"]

# the schema's settings (conf/method/private_knn.yaml states the same; a test holds them equal); its k and
# sampling_rate are what a recipe may replace
SETTINGS = schema_defaults(PrivateKNNConfig)
RECIPE_DEFAULTS = {key: SETTINGS[key] for key in ("k", "sampling_rate")}


@dataclass(frozen=True)
class PrivateKNNMethod(Method):
    """``method=private_knn`` (module docstring): the calibrated ``mechanism`` answering the first ``asked`` queries,
    its noise ``multiplier`` (None without a target), the ``from_epsilon`` of the recipe that chose its k and
    sampling rate (None: the config's own) and the run's settings. ``conf/method/private_knn.yaml``'s ``k``,
    ``sampling_rate``, ``sigma`` and ``recipes`` are read by :meth:`from_config`."""

    contributor: ClassVar[str] = "record"  # each record votes on its own: both relations are record-level
    reads_features: ClassVar[bool] = True
    samples_people: ClassVar[bool] = True  # privacy.unit=person: one coin and at most one vote per person

    mechanism: PrivateKNN
    multiplier: float | None
    recipe_from: float | None
    asked: int
    run: RunSettings

    @classmethod
    def from_config(cls, cfg: DictConfig, run: RunSettings) -> PrivateKNNMethod:
        """The mechanism built from ``k``, ``sampling_rate`` (the recipe's for the run's target, when one covers
        it: :func:`~pate.pipeline.methods.recipes.apply_recipe`) and ``sigma``, calibrated to the run's target
        epsilon when it has one, and the queries the budget allows."""
        recipe_from, settings = apply_recipe(
            method_settings(cfg.method, **SETTINGS),
            RECIPE_DEFAULTS,
            "recipes",
            run.target_epsilon,
            run.neighbors,
        )
        with building("method"):
            mechanism = PrivateKNN(
                run.num_labels, settings["k"], settings["sampling_rate"], settings["sigma"], run.neighbors
            )
        multiplier = None
        with building("privacy"):
            if run.target_epsilon is not None:
                mechanism, multiplier = calibrate_noise(
                    mechanism, run.target_epsilon, run.delta, run.num_queries, accountant=run.accountant
                )
                log.info(
                    "calibrated %s to epsilon=%g at delta=%g over %d queries by the %s accountant (neighbours: "
                    "%s, one neighbour: %s)",
                    mechanism.name,
                    run.target_epsilon,
                    run.delta,
                    run.num_queries,
                    run.accountant,
                    mechanism.neighbors,
                    privacy_unit(cls.contributor, mechanism.neighbors, run.unit).text,
                )
            asked = queries_within_budget(mechanism, run.num_queries, run.budget_epsilon, run.delta, run.accountant)
        return cls(mechanism, multiplier, recipe_from, asked, run)

    def release(self, data: Dataset, shared: SharedStages) -> Release:
        """features -> private_knn: the first ``asked`` queries labelled, the rest unanswered."""
        mechanism, asked, arrays, noise = self.mechanism, self.asked, data.arrays, self.run.noise

        def build(work: Path, up: dict[str, Artifact]) -> None:
            """The Poisson subsample and the Gaussian noise both come from the run's noise source: the
            amplification by subsampling holds only while the subsample is secret too."""
            queries, counts = self._votes(arrays, up)
            labels = np.zeros((len(queries), mechanism.num_labels), dtype=bool)
            labels[:asked] = mechanism.release(counts, noise.generator())
            answered = np.arange(len(queries)) < asked
            k = np.where(answered, labels.sum(axis=1), UNANSWERED)
            write_release(work, labels, answered, k, Ledger().compose(mechanism, count=asked))

        # the exact settings and cost, not only the name (which prints them to 6 digits): two configs that differ
        # beyond that must not share a release
        stage = Stage(
            "aggregate",
            {
                "method": "private_knn",
                "mechanism": mechanism.name,
                "k": mechanism.k,
                "sampling_rate": mechanism.sampling_rate,
                "sigma": mechanism.sigma,
                "event": event_to_dict(mechanism.dp_event),
                "asked": asked,
                **noise.key(),
                "data": data.identity,
                **self._unit_key(),
            },
            build,
            {"features": shared.features, "queries": shared.queries},
            code=("pate.pipeline.methods.private_knn",),
        )
        return Release(stage, {"aggregate": stage}, cost=Ledger().compose(mechanism, count=asked))

    def _unit_key(self) -> dict[str, str]:
        """The stage keys name the unit only where the votes sample people: a record run keeps its keys."""
        return {"unit": "person"} if self.run.unit == "person" else {}

    def _votes(self, arrays, up: dict[str, Artifact]) -> tuple[np.ndarray, np.ndarray]:
        """(the public queries, the vote counts [asked, L] of each asked query's k nearest private records among
        a fresh Poisson subsample), every draw from the run's noise source."""
        table, queries = read_features(up["features"]), read_queries(up["queries"]).queries
        private_rows = arrays.indices("train")
        counts = subsampled_knn_votes(
            table.take(private_rows),
            torch.from_numpy(arrays.labels[private_rows]),
            table.take(queries[: self.asked]),
            self.mechanism.k,
            self.mechanism.sampling_rate,
            self.run.noise.torch_generator(),
            person=arrays.person[private_rows] if self.run.unit == "person" else None,
        )
        return queries, counts

    def references(self, data: Dataset, release: Release, shared: SharedStages) -> dict[str, Stage]:
        """The privacy-free limit (``noise_free``): the same subsampled k-nearest-neighbour votes on the same
        queries, thresholded at k / 2 with noise zero. Never released: its labels carry no ledger."""
        mechanism, asked, arrays, noise = self.mechanism, self.asked, data.arrays, self.run.noise

        def build(work: Path, up: dict[str, Artifact]) -> None:
            queries, counts = self._votes(arrays, up)
            labels = np.zeros((len(queries), mechanism.num_labels), dtype=bool)
            labels[:asked] = np.asarray(counts) > mechanism.k / 2.0
            write_reference(work, labels)

        config = {
            "method": "private_knn",
            "reference": "noise_free",
            "k": mechanism.k,
            "sampling_rate": mechanism.sampling_rate,
            "asked": asked,
            **noise.key(),
            "data": data.identity,
            **self._unit_key(),
        }
        return {
            "noise_free": Stage(
                "aggregate",
                config,
                build,
                {"features": shared.features, "queries": shared.queries},
                code=("pate.pipeline.methods.private_knn",),
            )
        }

    def metrics(self, store: ArtifactStore, release: Release) -> dict[str, Any]:
        """The mechanism's name and noise, the calibration, the queries asked and the settings the recipe chose."""
        return {
            "method": self.run.named("private_knn"),
            "target_epsilon": self.run.target_epsilon,
            "budget_epsilon": self.run.budget_epsilon,
            "noise": self.mechanism.noise_parameters(),
            "noise_multiplier": self.multiplier,
            "queries_asked": self.asked,
            "mechanism": self.mechanism.name,
            "settings": {
                "k": self.mechanism.k,
                "sampling_rate": self.mechanism.sampling_rate,
                "recipe_from_epsilon": self.recipe_from,
            },
        }
