"""The run record is defined once (pate/run_record.py): the docs' table is that definition, the runner writes its
fields in its order, and the report's check refuses what breaks it."""

import re
from pathlib import Path

import pytest

from pate.run_record import FIELDS, KINDS, NOT_COVERED_BY_EPSILON, check_record, not_covered_by_epsilon, ordered

DOC = Path(__file__).resolve().parent.parent / "docs" / "run-record.md"


def test_the_docs_table_is_the_definition():
    rows = re.findall(r"^\| `(\w+)` \| (\w+) \| (yes|no) \| (yes|no) \| (yes|no) \| (.+) \|$", DOC.read_text(), re.M)
    documented = [
        (name, kind, null == "yes", required == "yes", checked == "yes", doc)
        for name, kind, null, required, checked, doc in rows
    ]
    assert documented == [(f.name, f.kind, f.nullable, f.required, f.checked, f.doc) for f in FIELDS]


def test_every_field_has_a_known_kind_and_a_unique_name():
    assert all(field.kind in KINDS for field in FIELDS)
    assert len({field.name for field in FIELDS}) == len(FIELDS)


def _record(**changes):
    record = {f.name: None for f in FIELDS if f.nullable}
    record.update(
        method="m",
        private=True,
        neighbors="replace",
        delta=1e-6,
        epsilon=2.0,
        seed=0,
        queries=3,
        answered=3,
        answered_fraction=1.0,
        majority_class_accuracy=0.8,
        num_labels=5,
        data="d",
        versions={},
        artifacts={},
        privacy="p",
        privacy_accounting="a",
        student_train_size=3,
        student_semi="supervised",
        student_unlabeled_size=0,
    )
    record.update(changes)
    return record


def test_a_method_without_teachers_passes_and_the_order_is_the_records():
    check_record(_record(), "metrics.json")  # no aggregator, teacher_accuracy, num_teachers: a method's own
    names = list(ordered({"artifacts": {}, "zzz": 1, "method": "m", "epsilon": 1.0}))
    assert names == ["method", "epsilon", "artifacts", "zzz"]


@pytest.mark.parametrize(
    "changes, message",
    [
        ({"epsilon": None}, r"epsilon=None, expected a number for a private run"),
        ({"neighbors": "swap"}, r"neighbors='swap', expected one of"),
        ({"delta": 1.5}, r"delta=1.5, expected a number in \(0, 1\)"),
        ({"num_labels": 2.5}, r"num_labels=2.5, expected an integer"),
        ({"aggregator": None}, r"aggregator=None, expected a string$"),
        ({"teacher_accuracy": "high"}, r"teacher_accuracy='high', expected a finite number"),
        ({"private": False}, r"private=false but epsilon=2.0"),
        ({"target_epsilon": -1.0}, r"target_epsilon=-1.0, expected a positive number or null"),
        ({"student_accuracy": 1.7}, r"student_accuracy=1.7, expected a fraction in \[0, 1\]"),
        ({"label_f1": -0.1}, r"label_f1=-0.1, expected a fraction in \[0, 1\]"),
        ({"answered": 4}, r"answered=4, expected between 0 and queries=3"),
    ],
)
def test_a_record_that_breaks_the_definition_is_named(changes, message):
    with pytest.raises(ValueError, match=message):
        check_record(_record(**changes), "job/metrics.json")


def test_a_missing_required_field_is_named():
    record = _record()
    del record["student_accuracy"]
    with pytest.raises(ValueError, match=r"job/metrics.json: missing keys \['student_accuracy'\]"):
        check_record(record, "job/metrics.json")


def test_what_epsilon_does_not_cover_is_listed_from_the_record_itself():
    record = _record(
        teacher_accuracy=0.8,
        epsilon_data_dependent=0.5,
        privacy_data_dependent="raw",
        data_dependent_test={"passed": True, "not_itself_private": {"distance": 3}},
        reference={"majority_class": {"student_accuracy": 0.8}, "majority_vote": {"student_accuracy": 0.85}},
    )
    assert not_covered_by_epsilon(record) == [
        "teacher_accuracy",
        "reference.majority_vote",
        "epsilon_data_dependent",
        "privacy_data_dependent",
        "data_dependent_test.not_itself_private",
        "seed",
        "artifacts",
    ]  # a record that does not say: seeded
    assert set(not_covered_by_epsilon(record)) <= set(NOT_COVERED_BY_EPSILON)
    secure = _record(noise_source="secure: drawn from the operating system's entropy, no seed recorded")
    # its seed replays nothing the guarantee rests on; its stage keys still hash every private record's content
    assert not_covered_by_epsilon(secure) == ["artifacts"]
    assert not_covered_by_epsilon(_record(noise_source="seeded from seed=0")) == ["seed", "artifacts"]


@pytest.mark.parametrize(
    "method, neighbors, listed",
    [
        ("dp_sgd", "add_remove", True),  # the count of private records, in which add_remove's neighbours differ
        ("dp_sgd+small_cnn", "add_remove", True),
        ("dp_sgd", "replace", False),  # every replace neighbour has as many records
        ("tau_pate", "add_remove", False),  # PATE's student trains on the public queries it labelled
        ("private_knn", "add_remove", False),
    ],
)
def test_dp_sgds_training_size_is_not_covered_under_add_remove(method, neighbors, listed):
    record = _record(method=method, neighbors=neighbors, noise_source="secure: no seed recorded")
    assert ("student_train_size" in not_covered_by_epsilon(record)) == listed


def test_the_docs_list_what_epsilon_does_not_cover():
    listed = re.findall(r"^- `([\w.]+)`: (.+)\.$", DOC.read_text().partition("## Not covered by epsilon")[2], re.M)
    assert listed == list(NOT_COVERED_BY_EPSILON.items())
