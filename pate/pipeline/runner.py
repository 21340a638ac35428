"""One run of the pipeline: check everything that can fail before training, build (or reuse) the stage graph's
artifacts, evaluate, and write ``metrics.json``."""

from __future__ import annotations

import dataclasses
import logging
import math
import platform
import textwrap
from collections.abc import Callable
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import torch
from omegaconf import DictConfig, open_dict

from pate.aggregate import LEDGER_FILE, read_aggregate, replay_privacy
from pate.artifacts import ArtifactStore, Stage, atomic_write_json, code_version
from pate.data.partition import check_partition_config, deal_people, read_queries
from pate.data.readers import data_identity
from pate.evaluation import label_metrics, majority_class_accuracy
from pate.host import host
from pate.io import move_aside
from pate.cache_holds import hold_stages
from pate.pipeline.budget import BudgetGuard, budget_metrics, plan_release
from pate.pipeline.keep import keep_run_model
from pate.pipeline.checks import UserError, building, check_config, check_fit_split, component_class, instantiate
from pate.pipeline.graph import Dataset, check_features, features_stage, queries_stage, reference_stage, views_stage
from pate.pipeline.methods.base import Method, Release, RunSettings, SharedStages
from pate.pipeline.noise import log_reused_release, noise_source
from pate.pipeline.paths import check_locations
from pate.pipeline.settings import run_settings
from pate.pipeline.students import student_component
from pate.data.people import most_images_per_person
from pate.privacy.group import chained_group_epsilon, group_ledger, log_delta_text
from pate.privacy.ledger import Ledger
from pate.privacy.unit import PrivacyUnit, privacy_unit, resolve_unit
from pate.run_record import check_record, not_covered_by_epsilon, ordered
from student.stages import read_student_scores

log = logging.getLogger("train")


@dataclass(frozen=True)
class Graph:
    """Every stage of one run, declared at once before anything is built (``ArtifactStore.get`` builds what is
    read): the shared ones, the method's release, the student trained on it (or the method's released model),
    the views of the pool for the head student's consistency method, and, with ``references=true``, each reference
    source's labels with the student trained on them."""

    shared: SharedStages
    release: Release
    student: Stage
    views: Stage | None = None
    references: Mapping[str, tuple[Stage, Stage]] = field(default_factory=dict)
    budget: BudgetGuard | None = None  # the data's privacy budget, for a release drawn from secret noise
    unit: PrivacyUnit | None = None  # what one neighbour of the release's epsilon is (pate.privacy.unit)

    def stages(self) -> list[Stage]:
        """Every stage the run may read, upstream ones included: what a running run holds in the cache."""
        found: dict[str, Stage] = {}
        pending = [
            self.shared.queries,
            self.shared.features,
            *self.release.stages.values(),
            self.release.labels,
            self.release.model,
            self.student,
            self.views,
            *(stage for pair in self.references.values() for stage in pair),
        ]
        while pending:
            stage = pending.pop()
            if stage is not None and f"{stage.name}/{stage.key}" not in found:
                found[f"{stage.name}/{stage.key}"] = stage
                pending.extend(stage.upstream.values())
        return list(found.values())

    def keys(self) -> dict[str, str]:
        stages = {
            "queries": self.shared.queries,
            "features": self.shared.features,
            **self.release.stages,
            "views": self.views,
        }
        return {name: stage.key for name, stage in stages.items() if stage is not None}


def set_num_labels(cfg: DictConfig, names: tuple[str, ...]) -> None:
    """``data.num_labels`` from the data's label names (null in the config), or a check of the configured one."""
    configured = cfg.data.get("num_labels")
    if configured is not None and configured != len(names):
        raise UserError(
            f"data.num_labels={configured!r} but the data has {len(names)} labels ({', '.join(names[:5])}"
            f"{', ...' if len(names) > 5 else ''}); set data.num_labels=null to take it from the data"
        )
    with open_dict(cfg):
        cfg.data.num_labels = len(names)


def prepare(cfg: DictConfig) -> tuple[Graph, Dataset, Any]:
    """Everything that can fail without training fails here, as a one-line :class:`UserError` naming the key or
    the file: the plain keys (``check_config``), the method (its config and calibration), the models, the
    trainer, the extractor, the data and the split sizes. Returns (graph, dataset, method)."""
    check_locations(cfg)
    check_config(cfg)
    reader = instantiate(cfg.data.reader, "data.reader")
    with building(None):  # the reader names the file or the key itself
        reader.check()
        set_num_labels(cfg, reader.label_names())
    kind = component_class(cfg.method, "method", Method)
    # the split's source and the unit are properties of the data and the method's class: settled before the method
    # calibrates
    check_split_source(reader, kind, str(cfg.privacy.neighbors))
    with building(None):  # resolve_unit names privacy.unit itself
        has_people = getattr(reader, "has_people", lambda: False)()
        hint = getattr(reader, "people_hint", lambda: "")()
        unit = resolve_unit(
            cfg.privacy.get("unit"), has_people, kind.contributor, kind.samples_people, hint, str(cfg.privacy.neighbors)
        )
    settings = dataclasses.replace(run_settings(cfg), unit=unit)
    method = method_component(cfg, settings)
    student = student_component(cfg)
    uses_features = method.reads_features or student.reads_features
    extractor = instantiate(cfg.features.extractor, "features.extractor") if uses_features else None
    if extractor is not None:
        with building(None):
            extractor.to(settings.trainer.device)  # features on trainer.accelerator's device
            extractor.check_image_size(int(cfg.data.image_size))
        if student.needs_views and not extractor.reads_images:
            raise UserError(
                f"student.semi.method={cfg.student.semi.method} needs features of augmented images, which "
                f"{type(extractor).__name__} (features.extractor) cannot compute; use another "
                f"student.semi.method or an extractor that reads the images"
            )
    with building(None):  # the data code names the file or the key itself
        arrays = reader.load(
            Path(cfg.paths.cache_dir) / "tensors",
            progress=bool(cfg.progress),
            check_splits=split_checks(cfg, method, uses_features),
        )
    data = Dataset(arrays, data_identity(cfg.data.name, cfg.data.image_size, arrays))
    release_unit = privacy_unit(
        method.contributor,
        settings.neighbors,
        settings.unit,
        check_people(cfg, arrays, method, settings.unit),
        group_size=getattr(method, "group_size", None),  # getattr: only DP-SGD prices a group
    )
    if extractor is not None:
        with building(None):  # precomputed embeddings: one row per image of the data just read, storable
            extractor.check_rows(len(arrays))
            check_features(cfg, data, extractor)
    queries = queries_stage(cfg, data)
    features = features_stage(cfg, data, extractor) if extractor is not None else None
    shared = SharedStages(queries, features)
    views = views_stage(cfg, data, extractor, features, queries) if student.needs_views else None
    release, guard = plan_release(
        cfg,
        data,
        method.release(data, shared),
        settings.noise,
        release_unit.record_level,
    )

    def student_of(labels: Stage) -> Stage:
        return student.stage(data, labels, queries, features, views)

    references = {}
    if cfg.get("references", False):
        sources = {
            **method.references(data, release, shared),
            "true_labels": reference_stage("true_labels", data, None, queries),
        }
        references = {
            source: (ref.labels, ref.model or student_of(ref.labels))
            if isinstance(ref, Release)
            else (ref, student_of(ref))
            for source, ref in sources.items()
        }
    graph = Graph(shared, release, release.model or student_of(release.labels), views, references, guard, release_unit)
    return graph, data, method


def check_people(cfg: DictConfig, arrays, method: Method, unit: str) -> int | None:
    """The most images one private person holds (None: the data name no people); where PATE deals whole people to
    its teachers (``unit`` person), the dealing the partition stage will make, checked before any compute; where
    the method prices a group of at most ``method.group_size`` images, that no private person holds more."""
    if arrays.person is None:
        return None
    private_people = arrays.person[arrays.indices("train")]
    most = most_images_per_person(private_people)
    cap = getattr(method, "group_size", None)  # getattr: only DP-SGD prices a group
    if cap is not None and most > cap:
        raise UserError(
            f"method.group_size={cap}: a person of the private split holds more images than that, whom its group "
            f"privacy would not cover; expected a public cap at least every person's image count"
        )
    if unit == "person" and method.contributor == "teacher":
        with building(None):  # deal_people names partition.num_teachers and partition.seed itself
            deal_people(
                private_people, int(cfg.partition.num_teachers), int(cfg.partition.seed), method.records_per_teacher[0]
            )
    return most


def method_component(cfg: DictConfig, run: RunSettings) -> Method:
    """The method of ``method._target_``, from its ``from_config`` (the one place it reads the config): every
    setting checked and its noise calibrated before any data is read."""
    kind = component_class(cfg.method, "method", Method)
    with building("method", cfg.method):
        return kind.from_config(cfg, run)


def check_split_source(reader, method: type[Method], neighbors: str) -> None:
    """Refuse a record-level add_remove run on data whose split is drawn from all its rows (a reader's
    ``draws_split()``, e.g. a folder without a split column): one record added or removed would move thousands of
    others between the private and the public splits, whatever the mechanism then adds."""
    if neighbors == "add_remove" and method.contributor == "record" and getattr(reader, "draws_split", lambda: False)():
        raise UserError(
            f"privacy.neighbors=add_remove with {type(reader).__name__} data that has no split column: its "
            f"rows are split by a seeded permutation of all of them (data.split_fractions, "
            f"data.split_seed), so one record added or removed moves thousands of others between the "
            f"private and the public splits; give the file a split column (each record's own split), or "
            f"use privacy.neighbors=replace"
        )


def split_checks(cfg: DictConfig, method, uses_features: bool) -> Callable[[np.ndarray], None]:
    """What every stage needs of the splits, checked on the split codes before any image is decoded: train and test
    for the partition and the queries (``check_partition_config``) and, where features are computed, the public fit
    split (``check_fit_split``). The teachers' count against the private records is checked only for a method that
    has teachers: for a record-level one it would make the run's refusal depend on the number of private records,
    which add_remove's neighbours differ in (it then needs only one private record)."""
    num_teachers = int(cfg.partition.num_teachers) if method.contributor == "teacher" else 1

    def check(split: np.ndarray) -> None:
        check_partition_config(
            split, num_teachers, int(cfg.data.num_queries), float(cfg.data.pool_fraction), *method.records_per_teacher
        )
        if uses_features:
            check_fit_split(split, cfg.features.fit_split)

    return check


def student_result(store: ArtifactStore, graph: Graph, data: Dataset, labels: Stage, student: Stage) -> dict[str, Any]:
    """The released (or reference) labels of ``labels`` with their quality on the public queries, and the scores of
    ``student``: the student trained on them, or the model a method released."""
    released = read_aggregate(store.get(labels))
    query_indices = read_queries(store.get(graph.shared.queries)).queries
    scores = read_student_scores(store.get(student))
    return {
        "released": released,
        "student": scores,
        "student_key": student.key,
        **label_metrics(
            released["labels"], released["answered"], data.arrays.labels[query_indices], released["released"]
        ),
    }


def with_unit(description: str, unit: PrivacyUnit) -> str:
    """A ledger's one-line description of an epsilon, with what one neighbour is and whether that is record-level."""
    return f"{description}; one neighbour: {unit.text}"


def data_dependent_metrics(privacy: dict[str, Any], unit: PrivacyUnit) -> dict[str, Any]:
    """The other prices of the same release, where its aggregator measured them (binary voting): the raw
    data-dependent epsilon (PATE 2018's figure, not itself private) and the data-independent one, each with the
    same relation, unit and delta as ``epsilon``; and the data-dependent release's test (``privacy["details"]``)."""
    metrics = {}
    for name in ("data_dependent", "data_independent"):
        if f"epsilon_{name}" in privacy:
            metrics[f"epsilon_{name}"] = privacy[f"epsilon_{name}"]
            metrics[f"privacy_{name}"] = with_unit(privacy[f"privacy_{name}"], unit)
    if "test" in privacy.get("details", {}):
        metrics["data_dependent_test"] = privacy["details"]["test"]
    return metrics


def largest_person_metrics(release, delta: float, accountant: str, unit: PrivacyUnit, relation: str) -> dict[str, Any]:
    """What a record-level epsilon on data with people implies for the largest person (DESIGN.md, section 2): the
    release's events for a group of their ``images_per_person`` records (``pate.privacy.group``), priced by
    ``accountant`` at ``delta``; where an event has no exact group conversion, the looser bound of chaining the
    release's per-record privacy profile (``chained_group_epsilon``); None, said in its line, for a data-dependent
    release. Both depend on that person's image count, a statistic of the private data: not covered by epsilon.
    Empty for a person-level or teacher-level epsilon, or data without people."""
    size = unit.images_per_person
    if unit.person_level or not unit.record_level or size is None:
        return {}
    ledger = Ledger.load(release.file(LEDGER_FILE))
    change = "replaced" if relation == "replace" else "added or removed"
    neighbour = (
        f"one neighbour: the largest person's {size} images {change} at once (group privacy of the record-level "
        f"release: {size} of its neighbouring steps)"
    )
    grouped = group_ledger(ledger, size)  # its events, priced afresh
    if grouped is not None:
        priced = grouped.get_epsilon(delta, accountant)
        return {
            "epsilon_largest_person": priced.epsilon,
            "privacy_largest_person": f"{priced.description}; {neighbour}",
        }
    chained = chained_group_epsilon(ledger, size, delta, accountant)
    if chained is None:
        why = (
            "the release's epsilon is data-dependent, no DP guarantee to extend"
            if ledger.data_dependent
            else f"no per-record epsilon chained over {size} steps meets delta = {delta:.3g}"
        )
        return {
            "epsilon_largest_person": None,
            "privacy_largest_person": f"not computed: {why} (the largest person's {size} images)",
        }
    return {
        "epsilon_largest_person": chained.epsilon,
        "privacy_largest_person": f"epsilon <= {chained.epsilon:.4g} at delta = {delta:.3g} (neighbours: {relation}; "
        f"an upper bound, loose: its events have no exact group conversion, so the release's per-record "
        f"({chained.record_epsilon:.4g}, {log_delta_text(chained.log_record_delta)})-DP is chained over {size} steps, "
        f"pate.privacy.group); {neighbour}",
    }


def evaluate(cfg: DictConfig, store: ArtifactStore, graph: Graph, data: Dataset, method) -> dict[str, Any]:
    """The run's metrics: the privacy of the release (replayed from its cost events), the released labels'
    quality, the student's, the method's own keys and, with ``references=true``, the reference students."""
    delta = float(cfg.privacy.delta)
    main = student_result(store, graph, data, graph.release.labels, graph.student)
    privacy = replay_privacy(store.get(graph.release.labels), delta, str(cfg.privacy.accountant))
    eval_indices = read_queries(store.get(graph.shared.queries)).evaluation
    answered = main["released"]["answered"]
    unit = graph.unit
    record_unit = privacy_unit(method.contributor, privacy["neighbors"], "record", unit.images_per_person)
    metrics: dict[str, Any] = {
        "private": True,
        "neighbors": str(privacy["neighbors"]),
        "delta": delta,
        "epsilon": privacy["epsilon"],
        "accountant": str(cfg.privacy.accountant),
        "epsilon_accountant": privacy["epsilon_accountant"],
        "epsilon_rdp": privacy["epsilon_rdp"],
        "epsilon_order": privacy["epsilon_order"],
        "privacy": with_unit(privacy["description"], unit),
        "privacy_accounting": privacy["accounting"],
        "privacy_unit": unit.neighbour,
        "record_level": unit.record_level,
        "person_level": unit.person_level,
        "images_per_person": unit.images_per_person,
        # the total composes every release on this data, record-level ones too: it is never person-level
        **budget_metrics(graph.budget, record_unit.text),
        **data_dependent_metrics(privacy, unit),
        **largest_person_metrics(
            store.get(graph.release.labels), delta, str(cfg.privacy.accountant), unit, str(privacy["neighbors"])
        ),
        "seed": int(cfg.seed),
        "noise_source": noise_source(cfg).describe(),
        "queries": int(cfg.data.num_queries),
        "answered": int(answered.sum()),
        "answered_fraction": float(answered.mean()),
        "mean_k": float(main["released"]["k"][answered].mean()) if answered.any() else None,
        "released_label_fraction": float(main["released"]["released"].mean()),
        "label_f1": main["label_f1"],
        "label_accuracy": main["label_accuracy"],
        "student_accuracy": main["student"]["student_accuracy"],
        "student_f1": main["student"]["student_f1"],
        "student_train_size": main["student"]["student_train_size"],
        "student_semi": str(cfg.student.semi.method) if cfg.student.get("semi") is not None else "supervised",
        "student_unlabeled_size": main["student"].get("student_unlabeled_size", 0),
        "majority_class_accuracy": majority_class_accuracy(data.arrays.labels[eval_indices]),
        "num_labels": int(cfg.data.num_labels),
        "data": str(cfg.data.name),
        "reference": None,
        "versions": {**code_version(), "torch": torch.__version__, "python": platform.python_version()},
        "host": host(),
        "artifacts": {**graph.keys(), "student": main["student_key"]},
        **method.metrics(store, graph.release),
    }
    if graph.references:
        # the floor every student must clear: it needs no teacher and no training
        metrics["reference"] = {"majority_class": {"student_accuracy": metrics["majority_class_accuracy"]}}
        for source, (labels, student) in graph.references.items():
            ref = student_result(store, graph, data, labels, student)
            metrics["reference"][source] = {
                "label_f1": ref["label_f1"],
                "label_accuracy": ref["label_accuracy"],
                "student_accuracy": ref["student"]["student_accuracy"],
                "student_f1": ref["student"]["student_f1"],
            }
    metrics["not_covered_by_epsilon"] = {
        "keys": not_covered_by_epsilon(metrics),
        "why": "statistics of the private data (or diagnostics beside the release) that no cost event priced: never "
        "publish them; pate-report --publishable leaves them out (docs/run-record.md)",
    }
    check_record(metrics, "the run's metrics")  # a method that breaks the run record fails here, not in a report
    return ordered(metrics)


def run(cfg: DictConfig, output_dir: str | Path | None = None) -> dict[str, Any]:
    """Run every stage (reusing cached artifacts), keep the trained model (``pate.pipeline.keep``) and write
    ``metrics.json`` into ``output_dir``."""
    output_dir = Path(output_dir if output_dir is not None else cfg.paths.output_dir)
    log.info(
        "data under %s, cache under %s, this run's directory %s",
        Path(cfg.paths.data_dir).resolve(),
        Path(cfg.paths.cache_dir).resolve(),
        output_dir.resolve(),
    )
    output_dir.mkdir(parents=True, exist_ok=True)
    _move_earlier_result_aside(output_dir)
    graph, data, method = prepare(cfg)
    store = ArtifactStore(Path(cfg.paths.cache_dir), guard=graph.budget)
    with hold_stages(store.root, [(stage.name, stage.key) for stage in graph.stages()]):
        if cfg.get("teacher_shard"):
            return method.train_shard(store, graph.release, data, str(cfg.teacher_shard))
        metrics = evaluate(cfg, store, graph, data, method)
        keep_run_model(cfg, store, graph, data, output_dir, metrics)
    log_reused_release(store, graph.release.labels, noise_source(cfg))
    atomic_write_json(output_dir / "metrics.json", metrics)
    log.info(summary(metrics))
    log.info("metrics written to %s", output_dir / "metrics.json")
    return metrics


def _move_earlier_result_aside(output_dir: Path) -> None:
    """A run directory used again (``hydra.run.dir`` given twice) must not show the earlier run's results as this
    run's while it works, after it fails, or where it keeps no model: its metrics.json, model/ and evaluation.csv
    are kept, renamed ``<name>.previous-<n><suffix>``."""
    for name in ("metrics.json", "model", "evaluation.csv"):
        earlier = output_dir / name
        if earlier.exists():
            aside = move_aside(earlier)
            log.warning(
                "%s held an earlier run's %s: kept as %s; this run writes its own", output_dir, earlier.name, aside.name
            )


# the console summary: lines of at most SUMMARY_WIDTH characters, an 18-character label column after two spaces
SUMMARY_WIDTH = 100
_LABEL = 18
_TEXT = SUMMARY_WIDTH - 2 - _LABEL
# said right after an epsilon that is no guarantee because its noise can be replayed from the recorded seed
SEEDED = "not a guarantee: seeded noise"
# the accountant beside a run's epsilon (``epsilon_accountant``); ACCOUNTANT_TEXT's long names are in metrics.json
_ACCOUNTANT = {"rdp": "RDP", "gdp": "Gaussian-DP", "pld": "PLD"}


def _entry(label: str, *parts: str) -> list[str]:
    """One entry of the summary: each part wrapped at the text width onto lines of its own (a name is never cut:
    what does not fit goes on to the next line), the first line after ``label``, the others under it."""
    lines = [line for part in parts for line in textwrap.wrap(part, _TEXT, break_on_hyphens=False) or [""]]
    return [f"{label if i == 0 else '':<{_LABEL}}{line}" for i, line in enumerate(lines)]


def _number(value: float) -> str:
    """An epsilon in at most 8 characters (4 significant digits, 3 from 10,000 on), so that its line, caveat,
    relation and delta included, always fits."""
    return f"{value:.4g}" if abs(value) < 1e4 else f"{value:.3g}"


def _epsilon(value: float, m: dict[str, Any], caveat: str | None = None) -> str:
    """``epsilon = 8 (replace, delta = 1e-06)``: an epsilon with its relation and delta, and first in its brackets
    the ``caveat`` that says it is no guarantee, where it is not one."""
    return f"epsilon = {_number(value)} ({caveat + '; ' if caveat else ''}{m['neighbors']}, delta = {m['delta']:.3g})"


def _accounting(m: dict[str, Any], seeded: bool) -> str:
    """The accountant that gave the run's epsilon, and the RDP bound beside it where another one did."""
    by, order = m.get("epsilon_accountant", "rdp"), m.get("epsilon_order")
    if by == "chain":  # no one order: the RDP bound's own chain stands beside it
        return f"group privacy, the per-record profile chained; the RDP bound's chain {_number(m['epsilon_rdp'])}"
    if order is None or not np.isfinite(order):
        return "nothing composed"
    if by == "rdp":
        return f"RDP accountant, tight conversion at order {order:.4g}"
    return f"{_ACCOUNTANT[by]} accountant; RDP bound {_number(m['epsilon_rdp'])} at order {order:.4g}" + (
        " (seeded: no guarantee)" if seeded else ""
    )


def _noise(seeded: bool) -> list[str]:
    """The ``noise source`` entry: whether the noise can be replayed (``noise_source`` holds the whole sentence)."""
    if seeded:
        return _entry(
            "noise source",
            "seeded: the noise can be replayed from the seed; the run carries no guarantee",
            "its epsilon is what the same release guarantees with privacy.noise=secure",
        )
    return _entry("noise source", "secure: OS entropy, no seed recorded; the release cannot be replayed")


def _budget(m: dict[str, Any], seeded: bool) -> list[str]:
    """The ``privacy budget`` entry: the total spent on the run's private data (``dataset_epsilon``; NOT PRICED
    where it is null), what it covers and what this run's release was (its cap is in ``dataset_budget``)."""
    budget = m["dataset_budget"]
    this = f"this run's release: {budget['this_release'].replace('_', ' ')}"
    if m.get("dataset_epsilon") is None:
        total = budget["releases"] + budget["other_relations"]
        return _entry(
            "privacy budget",
            f"total epsilon NOT PRICED ({m['neighbors']}, delta = {m['delta']:.3g})",
            f"{budget['other_relations']} of the {total} release(s) on this private data were drawn under another "
            f"relation or level, and no epsilon composes them (`pate-cache budget` lists them)",
            this,
        )
    return _entry(
        "privacy budget",
        f"total {_epsilon(m['dataset_epsilon'], m, SEEDED if seeded else None)}",
        f"over {budget['releases']} release(s) on this "
        + (
            f"data or data sharing its records ({budget['datasets']} private splits)"
            if budget["datasets"] > 1
            else "private data"
        ),
        (f"by the {m['accountant']} accountant; " if m.get("accountant") else "") + this,
    )


def _largest_person(m: dict[str, Any], caveat: str | None) -> list[str]:
    """The summary's line of what a record-level epsilon implies for the largest person (group privacy)."""
    if m["epsilon_largest_person"] is None:
        return _entry("largest person", m["privacy_largest_person"])
    return _entry(
        "largest person",
        _epsilon(m["epsilon_largest_person"], m, caveat),
        "all of their images at once, by group privacy"
        + ("" if m["privacy_largest_person"].startswith("epsilon =") else " (an upper bound, loose)")
        + "; a function of their image count: not covered by epsilon",
    )


def summary(m: dict[str, Any]) -> str:
    """A short human-readable account of a run (what the default run prints at its end), in lines of at most
    ``SUMMARY_WIDTH`` characters: the full text of each line is in metrics.json. Every epsilon says its relation
    and delta in its line, and says there that it is no guarantee where it is not one (seeded noise, a raw
    data-dependent bound); the ``privacy unit`` line says what one neighbour is."""

    def pct(x):
        return "n/a" if x is None else f"{100 * x:.1f}%"

    seeded = not str(m.get("noise_source", "")).startswith("secure")
    caveat = SEEDED if seeded else None
    unit = PrivacyUnit(
        m["privacy_unit"], m["record_level"], m.get("person_level", False), m.get("images_per_person")
    ).text
    lines = [
        *(
            _entry("aggregator", m["aggregator"])
            if m.get("aggregator")
            else _entry("method", m.get("mechanism") or m["method"])
        ),
        *_entry("privacy", _epsilon(m["epsilon"], m, caveat), _accounting(m, seeded)),
        *_entry("privacy unit", unit),
        *(_largest_person(m, caveat) if "privacy_largest_person" in m else []),
        *(_noise(seeded) if "noise_source" in m else []),
        *(_budget(m, seeded) if m.get("dataset_budget") else []),
        *(
            _entry(
                "data-dependent",
                _epsilon(m["epsilon_data_dependent"], m, "NOT ITSELF PRIVATE"),
                "PATE 2018's raw bound: it depends on the private votes; not covered by epsilon",
            )
            if "epsilon_data_dependent" in m
            else []
        ),
        *(
            _entry(
                "data-independent",
                _epsilon(m["epsilon_data_independent"], m, caveat),
                "the same labels priced without looking at the votes",
            )
            if "epsilon_data_independent" in m
            else []
        ),
        *(
            _entry(
                "proposal test",
                f"{'passed' if m['data_dependent_test']['passed'] else 'FAILED: nothing released'} (proposed RDP "
                f"{m['data_dependent_test']['rdp_budget']:.4g} at order {m['data_dependent_test']['order']:.4g})",
            )
            if "data_dependent_test" in m
            else []
        ),
        *_entry(
            "answered",
            f"{m['answered']}/{m['queries']} queries ({pct(m['answered_fraction'])}), "
            f"mean k = {m['mean_k'] if m['mean_k'] is None else round(m['mean_k'], 2)}",
        ),
        *_entry(
            "released labels",
            f"F1 {pct(m['label_f1'])}, accuracy {pct(m['label_accuracy'])}"
            + (
                f" ({pct(m['released_label_fraction'])} of the (query, label) pairs released)"
                if m["released_label_fraction"] < m["answered_fraction"]
                else ""
            ),
        ),
        *(
            _entry(
                "teachers",
                f"mean accuracy {pct(m['teacher_accuracy'])} ({m['num_teachers']} teachers; a diagnostic, not "
                f"covered by epsilon)",
            )
            if "teacher_accuracy" in m
            else []
        ),
        *_entry(
            "student",
            f"accuracy {pct(m['student_accuracy'])}, macro F1 {pct(m['student_f1'])} "
            + (
                f"({m['released_model']})"
                if m.get("released_model")
                else f"(trained on {m['student_train_size']} released label sets"
                + (
                    f" and {m['student_unlabeled_size']} unlabeled pool images, {m['student_semi']})"
                    if m["student_unlabeled_size"]
                    else ")"
                )
            ),
        ),
        *_entry("baseline", f"majority class accuracy {pct(m['majority_class_accuracy'])}"),
        *_entry(
            "not covered",
            f"by epsilon: {', '.join(m['not_covered_by_epsilon']['keys']) or 'nothing'}",
            "(never publish them; pate-report --publishable leaves them out)",
        ),
        *_entry("details", "the full text of each line is in metrics.json (privacy, noise_source, ...)"),
    ]
    return "results\n  " + "\n  ".join(lines)


__all__ = ["Graph", "evaluate", "method_component", "prepare", "run", "set_num_labels", "split_checks", "summary"]
