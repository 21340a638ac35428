"""The run record: the one definition of what ``metrics.json`` holds, in its order, for the runner that writes it
(``pate.pipeline.runner``), the report that reads and checks it (``pate.report.collect``), results.csv's leading
columns (``pate.report.tables``) and the docs (``docs/run-record.md``, checked against this table by a test).

A field is ``required`` of every run, or a method's own (``required=False``: PATE's aggregator and teachers,
DP-SGD's schedule, absent for a method that has none). ``checked`` fields are validated by the report, and lead
results.csv in this order; the others follow there sorted by name.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any

__all__ = ["FIELDS", "Field", "NOT_COVERED_BY_EPSILON", "check_record", "not_covered_by_epsilon", "ordered"]

KINDS = ("string", "number", "integer", "bool", "object")


@dataclass(frozen=True)
class Field:
    name: str
    kind: str
    doc: str
    nullable: bool = False
    required: bool = True
    checked: bool = True


_METHOD = dict(required=False)  # a method's own key
FIELDS: tuple[Field, ...] = (
    Field(
        "method",
        "string",
        "the method's name in reports (PATE: the aggregator's config name, +semi method; "
        "DP-SGD: dp_sgd, +model unless linear)",
    ),
    Field("aggregator", "string", "PATE: the calibrated aggregator, with its noise and relation", **_METHOD),
    Field(
        "mechanism",
        "string",
        "DP-SGD and Private-kNN: the calibrated mechanism, with its noise and relation",
        checked=False,
        **_METHOD,
    ),
    Field("private", "bool", "whether the released labels are differentially private"),
    Field("neighbors", "string", "the neighbouring relation of every epsilon: replace or add_remove"),
    Field("delta", "number", "the delta of every epsilon"),
    Field("epsilon", "number", "the DP guarantee, replayed from the release's cost events", nullable=True),
    Field(
        "accountant",
        "string",
        "privacy.accountant: tightest (the least valid epsilon) or rdp; absent from "
        "records written before it (all rdp)",
        required=False,
    ),
    Field(
        "epsilon_accountant",
        "string",
        "the accountant that gave epsilon: rdp, gdp (the exact profile of composed "
        "Gaussians), pld (dp-accounting's privacy loss distribution) or chain (group privacy: the per-record profile "
        "chained over a group, method.group_size); absent from records written before it (all rdp)",
        required=False,
    ),
    Field(
        "epsilon_rdp",
        "number",
        "the RDP bound of the same release, beside epsilon (equal where the accountant "
        "is rdp); absent from records written before it",
        nullable=True,
        required=False,
    ),
    Field(
        "epsilon_order",
        "number",
        "the RDP order of the RDP bound's tight conversion; null for a chain, which has no one order",
        nullable=True,
    ),
    Field(
        "privacy",
        "string",
        "one line: epsilon, delta, relation, the accountant that gave epsilon (with the RDP "
        "bound beside it when another did), what was composed",
        checked=False,
    ),
    Field("privacy_accounting", "string", "how epsilon was obtained (replayed from the ledger)", checked=False),
    Field(
        "privacy_unit",
        "string",
        "what one neighbour of every epsilon is: one teacher's vote replaced or one "
        "teacher added or removed (PATE), one record replaced or added or removed (DP-SGD, Private-kNN); absent "
        "from records written before it",
        required=False,
    ),
    Field(
        "record_level",
        "bool",
        "whether every epsilon is a guarantee about one training record: false for PATE "
        "under add_remove, a teacher-level relation (docs/concepts.md)",
        required=False,
    ),
    Field(
        "person_level",
        "bool",
        "whether every epsilon is a guarantee about one person of the private split, all of their images "
        "(privacy.unit=person, on data that name people, under replace): PATE partitioned by person, Private-kNN "
        "and DP-SGD sampling people; the dataset total stays record-level; absent from records written before it",
        required=False,
    ),
    Field(
        "images_per_person",
        "integer",
        "the most private training images one person holds, where the data name people (data.person_column); "
        "null otherwise, and absent from records written before it. A statistic of the private data, not covered by "
        "epsilon",
        nullable=True,
        required=False,
    ),
    Field(
        "epsilon_largest_person",
        "number",
        "a record-level release on data that name people: its epsilon for the largest person, all of their images "
        "changed at once (group privacy: exact for Gaussian, Laplace and pure-DP events, a loose upper bound by "
        "chaining for the others); null for a data-dependent release; absent elsewhere. A function of that person's "
        "image count: not covered by epsilon",
        nullable=True,
        required=False,
        checked=False,
    ),
    Field(
        "privacy_largest_person",
        "string",
        "the line of epsilon_largest_person (or why it is not computed); not covered by epsilon",
        required=False,
        checked=False,
    ),
    Field(
        "dataset_epsilon",
        "number",
        "the total epsilon spent on this private data: every release drawn with "
        "secret noise on it (its privacy budget ledger; pate-cache budget), composed and priced by the "
        "accountant at delta under neighbors, at this run's level; null for a seeded run, whose release "
        "spends no budget",
        nullable=True,
        required=False,
        checked=False,
    ),
    Field(
        "dataset_privacy",
        "string",
        "one line for dataset_epsilon: delta, relation, level, the releases "
        "counted, the accountant, and the releases under another relation or level it leaves out",
        required=False,
        checked=False,
    ),
    Field(
        "dataset_budget",
        "object",
        "the privacy budget ledger: dataset (the private split's content id), "
        "ledger (its directory), releases, datasets, other_relations, cap (privacy.dataset_budget) and this_release "
        "(drawn, reused, or reused_earlier: privacy.reuse_release); null for a seeded run",
        nullable=True,
        required=False,
        checked=False,
    ),
    Field(
        "epsilon_data_dependent",
        "number",
        "binary voting: the raw data-dependent epsilon (PATE 2018), NOT itself private",
        checked=False,
        **_METHOD,
    ),
    Field("privacy_data_dependent", "string", "one line for epsilon_data_dependent", checked=False, **_METHOD),
    Field(
        "epsilon_data_independent",
        "number",
        "binary voting: the same labels priced data-independently",
        checked=False,
        **_METHOD,
    ),
    Field("privacy_data_independent", "string", "one line for epsilon_data_independent", checked=False, **_METHOD),
    Field(
        "data_dependent_test",
        "object",
        "a data-dependent release: its proposal and whether its test passed",
        checked=False,
        **_METHOD,
    ),
    Field("target_epsilon", "number", "the epsilon the noise was calibrated to", nullable=True, **_METHOD),
    Field(
        "budget_epsilon", "number", "the budget that stops answering queries", nullable=True, checked=False, **_METHOD
    ),
    Field("noise", "object", "the noise parameters by constructor name", nullable=True, **_METHOD),
    Field("noise_multiplier", "number", "the calibrated multiplier of the configured noise", nullable=True, **_METHOD),
    Field(
        "sampling_rate",
        "number",
        "DP-SGD: the Poisson sampling rate q = expected batch / private records",
        checked=False,
        **_METHOD,
    ),
    Field("steps", "integer", "DP-SGD: the noisy gradient steps", checked=False, **_METHOD),
    Field("seed", "integer", "the run's seed (the student; the noise only where noise_source says seeded)"),
    Field(
        "noise_source",
        "string",
        "where the noise the guarantee rests on came from: secure (the operating "
        "system's entropy, no seed recorded, not replayable) or seeded from the run's seed (replayable, so no "
        "guarantee: synthetic benchmarks only); privacy.noise, pate/pipeline/noise.py; absent from records "
        "written before it",
        checked=False,
    ),
    Field("queries", "integer", "public queries asked for"),
    Field("queries_asked", "integer", "queries shown to the aggregator within the budget", checked=False, **_METHOD),
    Field("answered", "integer", "queries answered"),
    Field("answered_fraction", "number", "answered / queries"),
    Field("mean_k", "number", "mean size of the released label sets", nullable=True),
    Field(
        "released_label_fraction",
        "number",
        "(query, label) pairs released: below answered_fraction where a confident selection leaves labels out",
        checked=False,
    ),
    Field("label_f1", "number", "micro F1 of the released labels on the answered queries", nullable=True),
    Field("label_accuracy", "number", "accuracy of the released labels on the answered queries", nullable=True),
    Field(
        "student_accuracy", "number", "the student's mean per-label accuracy on the evaluation images", nullable=True
    ),
    Field("student_f1", "number", "the student's macro F1 on the evaluation images", nullable=True),
    Field("student_train_size", "integer", "released label sets the student trained on", checked=False),
    Field(
        "training",
        "object",
        "DP-SGD: the settings the model trained with (inputs, lr, momentum, epochs), the "
        "from_epsilon of the probe recipe that chose them (null: the flat settings) and public_num_records (null: "
        "N is the count read)",
        checked=False,
        **_METHOD,
    ),
    Field(
        "settings",
        "object",
        "Private-kNN: the k and sampling_rate (gamma) it ran with and the from_epsilon of "
        "the recipe that chose them (null: the config's own)",
        checked=False,
        **_METHOD,
    ),
    Field(
        "released_model",
        "string",
        "DP-SGD: the student fields score the released model itself (no student)",
        checked=False,
        **_METHOD,
    ),
    Field("student_semi", "string", "supervised, pseudo_label or consistency", checked=False),
    Field("student_unlabeled_size", "integer", "unlabeled pool images the student used", checked=False),
    Field(
        "teacher_accuracy", "number", "PATE: mean teacher accuracy (a diagnostic, not covered by epsilon)", **_METHOD
    ),
    Field(
        "not_covered_by_epsilon",
        "object",
        "keys: the dotted paths of this record that its epsilon does not "
        "cover (NOT_COVERED_BY_EPSILON), why: a line; never publish them (pate-report --publishable leaves them out)",
        checked=False,
        required=False,
    ),
    Field("majority_class_accuracy", "number", "the best constant predictor on the evaluation images"),
    Field("num_teachers", "integer", "PATE: the number of teachers", **_METHOD),
    Field("num_labels", "integer", "labels per record, from the data"),
    Field("data", "string", "the dataset's name"),
    Field("reference", "object", "reference students (references=true): name -> their metrics", nullable=True),
    Field("versions", "object", "package, git commit, torch, python"),
    Field(
        "host",
        "object",
        "where and when the run ended: CPU model, logical CPUs, platform, CUDA device, UTC time",
        checked=False,
    ),
    Field("artifacts", "object", "stage -> cache key of every artifact the run read"),
)
_BY_NAME = {field.name: field for field in FIELDS}
# fields that are fractions: a value outside [0, 1] is a damaged or edited record
FRACTIONS = (
    "answered_fraction",
    "released_label_fraction",
    "label_f1",
    "label_accuracy",
    "student_accuracy",
    "student_f1",
    "majority_class_accuracy",
)


# The statistics a run records that its epsilon does not cover (dotted paths into the record) and why. They stay where
# the contract puts them (``teacher_accuracy``, ``reference.majority_vote.student_accuracy``), are listed per run under
# ``not_covered_by_epsilon``, are labelled so wherever they are printed, and the publishable form of a report leaves
# them out: publishing one is a release no ledger priced.
NOT_COVERED_BY_EPSILON = {
    "teacher_accuracy": "the private teachers' accuracy on the evaluation images, computed outside the release",
    "reference.majority_vote": "labels and a student from the teachers' non-private majority vote: no noise at all",
    "reference.true_labels": "a student on the public queries' true labels: a diagnostic the release did not produce",
    "reference.noise_free": "the method's privacy-free limit: the same training or votes on the private data with "
    "noise zero",
    "epsilon_data_dependent": "the raw data-dependent bound of PATE 2018 (its ledger: ledger_data_dependent.json): a "
    "function of the private votes",
    "privacy_data_dependent": "the line of epsilon_data_dependent, a function of the private votes",
    "data_dependent_test.not_itself_private": "the propose-test-release statistics k(D), U(D,0), U(D,1): functions of "
    "the private votes, released only through the noisy test",
    "student_train_size": "DP-SGD under add_remove or over people: the number of private records it trained on, in "
    "which the neighbours differ (its sampling rate and steps come from a public number)",
    "images_per_person": "the most images one private person holds: a statistic of the private data",
    "epsilon_largest_person": "the record-level release's epsilon for the largest person: a function of their image "
    "count, a statistic of the private data",
    "privacy_largest_person": "the line of epsilon_largest_person, which names that image count",
    "seed": "seeded noise: whoever holds the seed can replay the noise the guarantee rests on",
    "dataset_budget.dataset": "the id of the private split hashes every private record's labels and image",
    "artifacts": "the stage keys hash the data's content fingerprint, every private record included (and, with seeded "
    "noise, the seed, which a search over small seeds recovers)",
    "host.finished_utc": "the second the run ended: beside the other jobs' it gives their durations, which grow with "
    "the private data (DP-SGD's steps under add_remove: with its number of records; any method over people: with "
    "a person's number of images), a timing channel outside every epsilon",
}


def _holds(record: dict[str, Any], path: str) -> bool:
    for key in path.split("."):
        if not isinstance(record, dict) or key not in record:
            return False
        record = record[key]
    return True


def _secure_noise(record: dict[str, Any]) -> bool:
    """Whether the record says its noise came from the operating system's entropy (``noise_source``, written by
    ``pate.pipeline.noise.NoiseSource.describe``, begins with its mode): only then is its seed no secret."""
    return str(record.get("noise_source", "")).startswith("secure")


def _dp_sgd_add_remove(record: dict[str, Any]) -> bool:
    """Whether the record is DP-SGD's under add_remove, where its training size counts the private records."""
    return str(record.get("method", "")).startswith("dp_sgd") and record.get("neighbors") == "add_remove"


# the paths not covered only in some records: ``seed`` where the noise was seeded (a secure release's seed says nothing
# about its noise), ``student_train_size`` where it counts the private records and the neighbours differ in it
def _dp_sgd_person(record: dict[str, Any]) -> bool:
    """DP-SGD over people: its neighbours may differ in how many images one person holds, so the private image
    count it trained on is not covered."""
    return str(record.get("method", "")).startswith("dp_sgd") and bool(record.get("person_level"))


_ONLY_WHERE = {
    "seed": lambda record: not _secure_noise(record),
    "student_train_size": lambda record: _dp_sgd_add_remove(record) or _dp_sgd_person(record),
    "images_per_person": lambda record: record.get("images_per_person") is not None,
    "epsilon_largest_person": lambda record: "privacy_largest_person" in record,
}


def not_covered_by_epsilon(record: dict[str, Any]) -> list[str]:
    """The paths of ``NOT_COVERED_BY_EPSILON`` that ``record`` holds, in that order; ``seed`` unless its noise was
    secure (a record that does not say is taken as seeded), ``student_train_size`` only for DP-SGD under add_remove,
    ``images_per_person`` only where the data name people.
    Computed from the record itself, so a report finds them in records written before the runner listed them."""
    return [
        path
        for path in NOT_COVERED_BY_EPSILON
        if _holds(record, path) and _ONLY_WHERE.get(path, lambda _: True)(record)
    ]


def ordered(record: dict[str, Any]) -> dict[str, Any]:
    """``record`` with its fields in the run record's order (unknown keys last, in their own order)."""
    order = {field.name: index for index, field in enumerate(FIELDS)}
    return dict(sorted(record.items(), key=lambda item: order.get(item[0], len(order))))


def _is_number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)


_HOLDS = {
    "string": lambda v: isinstance(v, str),
    "bool": lambda v: isinstance(v, bool),
    "integer": lambda v: _is_number(v) and float(v).is_integer(),
    "number": _is_number,
    "object": lambda v: isinstance(v, dict),
}
_EXPECTED = {
    "string": "a string",
    "bool": "true or false",
    "integer": "an integer",
    "number": "a finite number",
    "object": "a JSON object",
}


def check_record(record: Any, path: Path | str) -> None:
    """``ValueError`` naming ``path`` and the key where ``record`` breaks the run record: a required checked field
    missing, a checked field of the wrong kind, or the rules that tie epsilon and target_epsilon to ``private``."""
    if not isinstance(record, dict):
        raise ValueError(f"{path}: expected a JSON object, got {type(record).__name__}")
    missing = [field.name for field in FIELDS if field.required and field.checked and field.name not in record]
    if missing:
        raise ValueError(f"{path}: missing keys {missing}")

    def bad(key: str, expected: str) -> ValueError:
        return ValueError(f"{path}: {key}={record[key]!r}, expected {expected}")

    for field in FIELDS:
        if not field.checked or field.name not in record:
            continue
        value = record[field.name]
        if not (value is None and field.nullable) and not _HOLDS[field.kind](value):
            raise bad(field.name, _EXPECTED[field.kind] + (" or null" if field.nullable else ""))
    if record["neighbors"] not in ("replace", "add_remove"):
        raise bad("neighbors", "one of ('replace', 'add_remove')")
    if not 0.0 < record["delta"] < 1.0:
        raise bad("delta", "a number in (0, 1)")
    target = record.get("target_epsilon")
    if record["private"] and record["epsilon"] is None:
        raise bad("epsilon", "a number for a private run")
    if not record["private"] and (record["epsilon"] is not None or target is not None):
        raise ValueError(
            f"{path}: private=false but epsilon={record['epsilon']!r}, target_epsilon={target!r}; expected both null"
        )
    if target is not None and target <= 0:
        raise bad("target_epsilon", "a positive number or null")
    for key in FRACTIONS:
        if record.get(key) is not None and not 0.0 <= record[key] <= 1.0:
            raise bad(key, "a fraction in [0, 1]")
    if not 0 <= record["answered"] <= record["queries"]:
        raise bad("answered", f"between 0 and queries={record['queries']!r}")
    for name, ref in (record["reference"] or {}).items():
        if not isinstance(ref, dict) or not all(_is_number(v) for v in ref.values()):
            raise ValueError(f"{path}: reference.{name}={ref!r}, expected an object of finite numbers")
