"""DP-SGD as a method (Abadi et al. 2016, with Opacus): a model trained directly on the private training split,
and released -- by default a linear probe on the public features (``model: linear``), or a SmallCNN with GroupNorm
on the images, trained from scratch (``model: small_cnn``; BatchNorm mixes the records of a batch, so DP-SGD
cannot use it). No teachers, no public queries to label: the released model is scored on the evaluation images
like every student, and its predictions on the public queries are reported as its released labels
(post-processing).

    features -> dp_sgd (the model, its predictions on the queries, ledger.json, its scores) -> evaluate

With ``privacy.unit=person`` the batches sample people and clip each sampled person's gradient
(``pate.dp_sgd_people``: user-level DP-SGD); N, q and the batch size then count people. With ``method.group_size``
n as well (a public cap on one person's images), the training stays record-level -- records sampled, each one's
gradient clipped -- and the release is priced for n records at once by group privacy (``Ledger(group_size=n)``,
``pate.privacy.group``), its noise calibrated to that price: the person-level epsilon of a library without
user-level DP-SGD. A private split with a person of more than n images is refused before any compute.

Cost: ``steps`` runs of the Poisson-sampled Gaussian at rate q = expected_batch_size / N (as the sampler realises
it, ``realised_sampling_rate``) and noise multiplier sigma (noise standard deviation over the clipping norm,
``clipped_gradient_sum_sensitivity``), under the run's relation (``pate.privacy.sampled_gaussian_steps``); sigma is
calibrated to ``privacy.target_epsilon`` when it is set. The clipped sum is divided by expected_batch_size.

N must be public: q and steps = ceil(epochs / q) are published (the ledger, metrics.json) and decide the
mechanism, so a private N would leak through them and the neighbours' mechanisms would differ. Under replace every
neighbour has as many records, so N is the count of the data read. Under add_remove the neighbours differ in it:
N is ``method.public_num_records`` (a public number, e.g. a published dataset size), or the count read only on the
built-in synthetic data, whose size its config fixes; on other data a run without it is refused before anything
is read. Every hyperparameter is fixed a priori (docs/methods.md says how), never tuned on the private labels.
"""

from __future__ import annotations

import logging
import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar, NamedTuple

import numpy as np
import torch
from dp_accounting import SelfComposedDpEvent
from omegaconf import DictConfig

from pate.aggregate import write_reference, write_release
from pate.artifacts import Artifact, ArtifactStore, Stage
from pate.data.partition import read_queries
from pate.dp_sgd import linear_probe, predict, probe_inputs, score_model, train_dp_sgd
from pate.dp_sgd_people import train_dp_sgd_by_person
from pate.features import read_features
from pate.model_files import write_model
from pate.pipeline.checks import UserError, building
from pate.pipeline.graph import Dataset
from pate.pipeline.methods.base import Method, Release, RunSettings, SharedStages, method_settings
from pate.mechanisms.poisson import realised_sampling_rate
from pate.pipeline.methods.recipes import apply_recipe, recipe_for
from pate.pipeline.noise import SYNTHETIC_READERS
from pate.pipeline.schemas import DPSGDConfig, schema_defaults
from pate.privacy import Ledger, calibrate, clipped_gradient_sum_sensitivity, event_to_dict, sampled_gaussian_steps
from pate.privacy.checks import positive, positive_int
from pate.privacy.unit import privacy_unit
from student.stages import write_student_scores
from teachers.training.data import to_float
from teachers.training.models import SmallCNN

log = logging.getLogger("train")


class SampledGaussian(NamedTuple):
    """DP-SGD's noise: ``steps`` Poisson batches at rate ``sampling_rate`` with noise ``noise_multiplier`` C on the
    clipped sum, under ``neighbors``; its cost event is :attr:`dp_event`."""

    sampling_rate: float
    noise_multiplier: float
    steps: int
    neighbors: str

    @property
    def dp_event(self) -> SelfComposedDpEvent:
        """The cost event (``pate.privacy.sampled_gaussian_steps``)."""
        return sampled_gaussian_steps(self.sampling_rate, self.noise_multiplier, self.steps, self.neighbors)


__all__ = ["DPSGD", "FLAT_SETTINGS", "INPUTS", "MODELS", "RECIPE_KEYS"]

MODELS = ("linear", "small_cnn")
INPUTS = ("unit_norm", "standardized")
RECIPE_KEYS = ("inputs", "momentum", "epochs", "lr")  # what a probe recipe may set, beside its from_epsilon
# the schema's flat settings (conf/method/dp_sgd.yaml states the same; a test holds them equal): what a probe recipe
# may replace
SETTINGS = schema_defaults(DPSGDConfig)
FLAT_SETTINGS = {key: value for key, value in SETTINGS.items() if key != "probe_recipes"}


@dataclass(frozen=True)
class DPSGD(Method):
    """``method=dp_sgd`` (module docstring): the fields are conf/method/dp_sgd.yaml's keys, checked by
    :meth:`from_config`, and the run's settings."""

    contributor: ClassVar[str] = "record"  # every Poisson batch samples records: both relations are record-level
    samples_people: ClassVar[bool] = True  # privacy.unit=person: user-level DP-SGD (pate.dp_sgd_people)

    model: str
    inputs: str
    recipe_from: float | None  # the from_epsilon of the probe recipe applied (None: the flat settings)
    width: int
    expected_batch_size: int
    epochs: float
    clip_norm: float
    lr: float
    momentum: float
    noise_multiplier: float
    group_size: int | None  # a public cap on one person's images, priced by group privacy (None: no group)
    public_num_records: int | None  # the public N that fixes q and the steps (None: the count read, where public)
    run: RunSettings

    @classmethod
    def from_config(cls, cfg: DictConfig, run: RunSettings) -> DPSGD:
        """conf/method/dp_sgd.yaml's keys checked (the model one of ``MODELS``; width, batch size, epochs, lr and
        noise multiplier positive; momentum in [0, 1); ``public_num_records`` null or an integer at least the batch
        size, and set under add_remove unless the data is the built-in synthetic set: the module docstring), the
        linear probe's recipe for the run's target applied first (:func:`~pate.pipeline.methods.recipes.apply_recipe`
        under the run's relation; the CNN keeps the flat settings, its recipe list checked all the same);
        ``privacy.budget_epsilon`` refused: DP-SGD's cost is fixed by its steps. The calibration waits for N where it
        is the count read (:meth:`calibrated_event`, in :meth:`release`)."""
        settings = method_settings(cfg.method, **SETTINGS)
        if settings["model"] == "linear":
            recipe_from, settings = apply_recipe(
                settings,
                {key: FLAT_SETTINGS[key] for key in RECIPE_KEYS},
                "probe_recipes",
                run.target_epsilon,
                run.neighbors,
            )
        else:
            recipe_for(settings.pop("probe_recipes"), None, run.neighbors, RECIPE_KEYS, "method.probe_recipes")
            recipe_from = None
        settings["recipe_from"] = recipe_from
        if settings["model"] not in MODELS:
            raise UserError(f"method.model={settings['model']!r}; expected one of {MODELS}")
        if settings["inputs"] not in INPUTS:
            raise UserError(f"method.inputs={settings['inputs']!r}; expected one of {INPUTS}")
        with building("method"):
            checked = {
                key: check(key, settings[key])
                for key, check in (
                    ("width", positive_int),
                    ("expected_batch_size", positive_int),
                    ("epochs", positive),
                    ("lr", positive),
                    ("noise_multiplier", positive),
                )
            }
            checked["clip_norm"] = clipped_gradient_sum_sensitivity(settings["clip_norm"], run.neighbors)
            if not 0 <= settings["momentum"] < 1:
                raise ValueError(f"momentum={settings['momentum']!r}; expected a number in [0, 1)")
            checked["momentum"] = float(settings["momentum"])  # 0 and 0.0 one training, one cache key
            if settings["public_num_records"] is not None:
                checked["public_num_records"] = positive_int("public_num_records", settings["public_num_records"])
                if checked["public_num_records"] < checked["expected_batch_size"]:
                    raise ValueError(
                        f"public_num_records={checked['public_num_records']} is below "
                        f"expected_batch_size={checked['expected_batch_size']}; expected at least it"
                    )
        reader = str(cfg.data.reader.get("_target_"))
        if settings["public_num_records"] is None and run.neighbors == "add_remove" and reader not in SYNTHETIC_READERS:
            raise UserError(
                f"method.public_num_records=null under privacy.neighbors=add_remove on data read by {reader}: "
                f"add_remove's neighbours differ in their number of records, so DP-SGD's sampling rate and steps "
                f"(published, and the mechanism itself) cannot come from the count read; set "
                f"method.public_num_records to a public number of private records (e.g. a published dataset size)"
            )
        if settings["group_size"] is not None:
            with building("method"):
                checked["group_size"] = positive_int("group_size", settings["group_size"])
            if run.unit != "person":
                raise UserError(
                    f"method.group_size={settings['group_size']!r} prices one person's images at once, but the run's "
                    f"unit is {run.unit!r}; expected privacy.unit=person (data that name people), or "
                    f"method.group_size=null"
                )
        if run.budget_epsilon is not None:
            raise UserError(
                f"privacy.budget_epsilon={cfg.privacy.budget_epsilon!r}: method=dp_sgd answers no queries "
                f"one by one, its cost is fixed by its steps; set privacy.target_epsilon instead"
            )
        return cls(**{**settings, **checked}, run=run)

    @property
    def reads_features(self) -> bool:
        """The linear probe reads the public features; the CNN reads the images."""
        return self.model == "linear"

    def network_node(self, dim: int | None, num_labels: int) -> dict[str, Any]:
        """The ``_target_`` node that rebuilds :meth:`network`'s architecture, kept with its weights."""
        if self.model == "linear":
            return {"_target_": "pate.dp_sgd.linear_probe", "dim": dim, "num_labels": num_labels}
        return {
            "_target_": "teachers.training.models.SmallCNN",
            "num_labels": num_labels,
            "width": self.width,
            "norm": "group",
        }

    def network(self, dim: int, num_labels: int) -> torch.nn.Module:
        """The model to train: the zero-initialised linear probe, or a SmallCNN (GroupNorm) seeded by the run."""
        if self.model == "linear":
            return linear_probe(dim, num_labels)
        network = SmallCNN(num_labels, self.width, norm="group")
        for module in network.modules():  # Opacus' backward hooks cannot follow an in-place activation
            if isinstance(module, torch.nn.ReLU):
                module.inplace = False
        return network

    def public_count(self, num_records: int) -> int:
        """N, the public number of private records that fixes q and the steps: ``public_num_records``, or the
        ``num_records`` read where that count is public (:meth:`from_config` refused the other cases)."""
        return self.public_num_records if self.public_num_records is not None else num_records

    @property
    def samples_people_now(self) -> bool:
        """Whether this run's batches sample people (user-level DP-SGD): a person-level run without a group."""
        return self.run.unit == "person" and self.group_size is None

    def schedule(self, public_count: int) -> tuple[float, int]:
        """(the realised sampling rate of q = expected_batch_size / N, steps = ceil(epochs / q)) for the public N."""
        if self.expected_batch_size > public_count:
            units = "people of the private training split" if self.samples_people_now else "private training records"
            raise UserError(f"method.expected_batch_size={self.expected_batch_size} exceeds the {public_count} {units}")
        rate = self.expected_batch_size / public_count
        return realised_sampling_rate(rate), math.ceil(self.epochs / rate)

    def calibrated_event(self, public_count: int) -> SampledGaussian:
        """The cost of the training for the public N: the Poisson-sampled Gaussian of :meth:`schedule`, its noise
        multiplier calibrated to the run's target epsilon when it has one."""
        rate, steps = self.schedule(public_count)
        run, relation = self.run, self.run.neighbors
        multiplier = self.noise_multiplier
        if run.target_epsilon is not None:
            with building("privacy"):
                multiplier = calibrate(
                    lambda m: sampled_gaussian_steps(rate, m, steps, relation),
                    run.target_epsilon,
                    run.delta,
                    neighbors=relation,
                    accountant=run.accountant,
                    group_size=self.group_size or 1,
                )
            log.info(
                "calibrated DP-SGD (q=%.4g, %d steps) to epsilon=%g at delta=%g by the %s accountant (neighbours: "
                "%s, one neighbour: %s): noise multiplier %.4f",
                rate,
                steps,
                run.target_epsilon,
                run.delta,
                run.accountant,
                relation,
                privacy_unit(self.contributor, relation, self.run.unit, group_size=self.group_size).text,
                multiplier,
            )
        return SampledGaussian(rate, multiplier, steps, relation)

    def release(self, data: Dataset, shared: SharedStages) -> Release:
        """One stage: the noise calibrated for the public N (:meth:`public_count`), the model trained by
        :func:`train_dp_sgd` from the run's noise source, its predictions on the queries as the released labels
        (post-processing) and its scores on the evaluation images (``student.json``: the released model stands in
        for the student)."""
        event = self.calibrated_event(self.public_count(self._units(data.arrays)))
        stage = self._stage(data, shared, event, noise_free=False)
        return Release(stage, {"dp_sgd": stage}, model=stage, facts={"event": event}, cost=self.cost(event))

    def _units(self, arrays) -> int:
        """How many units the batches sample from: the private records, or their people where the unit is a
        person (the count read; under add_remove ``public_num_records`` stands for it: :meth:`from_config`)."""
        train = arrays.indices("train")
        return len(np.unique(arrays.person[train])) if self.samples_people_now else len(train)

    def cost(self, event: SampledGaussian) -> Ledger:
        """The ledger of the release: the calibrated event once, named by :meth:`name`, priced for
        ``group_size`` records at once where the run has a group."""
        ledger = Ledger(group_size=self.group_size or 1)
        return ledger.compose_event(event.dp_event, name=self.name(event), neighbors=event.neighbors)

    def references(self, data: Dataset, release: Release, shared: SharedStages) -> dict[str, Stage | Release]:
        """The privacy-free limit (``noise_free``): the same training -- Poisson batches, clipping, steps and
        settings -- with noise zero. Never released: its labels carry no ledger."""
        stage = self._stage(data, shared, release.facts["event"], noise_free=True)
        return {"noise_free": Release(stage, {"dp_sgd": stage}, model=stage)}

    def _stage(self, data: Dataset, shared: SharedStages, event: SampledGaussian, noise_free: bool) -> Stage:
        """The training stage of :meth:`release`, or with ``noise_free`` its privacy-free limit (noise zero)."""
        arrays, seed, noise = data.arrays, self.run.seed, self.run.noise
        progress, device = self.run.progress, self.run.trainer.device
        private_rows = arrays.indices("train")
        settings = {
            "lr": self.lr,
            "momentum": self.momentum,
            "clip_norm": self.clip_norm,
            "expected_batch_size": self.expected_batch_size,
        }  # the clipped sum's divisor
        probe = {} if self.inputs == "unit_norm" else {"inputs": self.inputs}

        kept_inputs = "features" if self.model == "linear" else "images"
        transform_name = "unit_norm" if self.model == "linear" and self.inputs == "unit_norm" else None

        def build(work: Path, up: dict[str, Artifact]) -> None:
            public = read_queries(up["queries"])
            if self.model == "linear":
                table = read_features(up["features"])
                dim, transform = table.dim, None

                def inputs(rows):
                    return probe_inputs(table.take(rows), self.inputs)
            else:
                dim, transform = None, to_float  # uint8 images, made float batch by batch

                def inputs(rows):
                    return torch.from_numpy(np.asarray(arrays.images[rows]))

            torch.manual_seed(seed)  # the CNN's initial weights (the probe starts at zero)
            model = self.network(dim, arrays.labels.shape[1])
            by_person = {"person": arrays.person[private_rows]} if self.samples_people_now else {}
            (train_dp_sgd_by_person if by_person else train_dp_sgd)(
                model,
                inputs(private_rows),
                torch.from_numpy(arrays.labels[private_rows]),
                **by_person,
                sampling_rate=event.sampling_rate,
                noise_multiplier=0.0 if noise_free else event.noise_multiplier,
                steps=event.steps,
                batches=noise.torch_generator(0),
                noise=noise.torch_generator(1, device),
                progress=progress,
                device=device,
                transform=transform,
                **settings,
            )
            write_model(work, model, self.network_node(dim, arrays.labels.shape[1]), kept_inputs, transform_name, 1024)
            labels = (predict(model, inputs(public.queries), transform=transform) > 0.5).numpy()
            if noise_free:
                write_reference(work, labels)
            else:
                write_release(work, labels, np.ones(len(labels), bool), labels.sum(axis=1), self.cost(event))
            scores = score_model(model, inputs(public.evaluation), arrays.labels[public.evaluation], transform)
            write_student_scores(
                work,
                {
                    **scores,
                    "student_train_size": int(len(private_rows)),
                    "student_semi": "supervised",
                    "student_unlabeled_size": 0,
                },
            )

        upstream = {"queries": shared.queries, **({"features": shared.features} if self.model == "linear" else {})}
        cnn = {} if self.model == "linear" else {"model": self.model, "width": self.width}
        # the key holds the seed only where it decides the batches and the noise (privacy.noise=seeded): a secure
        # release is made once per config and cache, whatever `seed` then initialises
        # the limit is keyed by what it shares with the release (its batches, steps and settings), not by the noise:
        # one limit for every epsilon whose calibration leaves those equal
        cost = (
            {"reference": "noise_free", "sampling_rate": event.sampling_rate, "steps": event.steps}
            if noise_free
            else {
                "event": event_to_dict(event.dp_event),
                **({"group_size": self.group_size} if self.group_size else {}),
            }
        )
        config = {
            "method": "dp_sgd",
            **({"unit": "person"} if self.samples_people_now else {}),  # a record run keeps its key
            **cost,
            "settings": settings,
            **noise.key(),
            "data": data.identity,
            **cnn,
            **probe,
        }
        return Stage("aggregate", config, build, upstream, code=("pate.pipeline.methods.dp_sgd",))

    @property
    def model_name(self) -> str:
        """The model in words, for the console and the report ("linear probe", "small_cnn, width 32")."""
        if self.model != "linear":
            return f"{self.model}, width {self.width}"
        return "linear probe" if self.inputs == "unit_norm" else f"linear probe on the {self.inputs} features"

    def name(self, event: SampledGaussian) -> str:
        """The mechanism's name in the ledger and metrics.json: the model and every privacy-relevant setting."""
        group = f", priced for {self.group_size} records at once" if self.group_size else ""
        return (
            f"DP-SGD({self.model_name}, q={event.sampling_rate:.4g}, "
            f"noise_multiplier={event.noise_multiplier:.4g}, steps={event.steps}, clip_norm={self.clip_norm:g}, "
            f"neighbors={event.neighbors}{group})"
        )

    def metrics(self, store: ArtifactStore, release: Release) -> dict[str, Any]:
        """The method's name (``dp_sgd`` for the probe, ``dp_sgd+<model>`` otherwise), its calibrated event's
        noise, sampling rate and steps, and what was released."""
        event = release.facts["event"]
        # the unit-norm probe, or one that follows its recipes, keeps the plain name its committed reports use (one
        # row across the epsilons); another model or a fixed other input gets its own row in a report
        plain = self.inputs == "unit_norm" or self.recipe_from is not None
        variant = self.model if self.model != "linear" else ("" if plain else self.inputs)
        variant = "+".join(filter(None, (variant, "group" if self.group_size else "")))  # a row beside user-level
        method = f"dp_sgd+{variant}" if variant else "dp_sgd"
        return {
            "method": method,
            "mechanism": self.name(event),
            "target_epsilon": self.run.target_epsilon,
            "noise": {"noise_multiplier": event.noise_multiplier, "clip_norm": self.clip_norm},
            "noise_multiplier": event.noise_multiplier,
            "sampling_rate": event.sampling_rate,
            "steps": event.steps,
            "training": {
                "inputs": self.inputs if self.model == "linear" else "images",
                "lr": self.lr,
                "momentum": self.momentum,
                "epochs": self.epochs,
                "recipe_from_epsilon": self.recipe_from,
                "public_num_records": self.public_num_records,
            },
            "released_model": f"the DP-SGD {self.model_name} itself, trained on the {event.steps} Poisson "
            f"batches of the private split; no student",
        }
