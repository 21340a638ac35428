"""A run says the unit of its epsilon (metrics.json, the privacy line, the console) and lists every statistic its
epsilon does not cover: PATE under add_remove is teacher-level, a record-level method is record-level under both."""

import json

import pytest

from pate.pipeline.runner import run, summary
from tests.pipeline.test_summary import check_summary, entries

TOY = ["method._target_=tests.pipeline.methods.noisy_prevalence.NoisyPrevalence", "+method.sigma=5.0"]


def test_a_pate_run_under_add_remove_is_teacher_level_and_lists_what_epsilon_does_not_cover(tiny_cfg, tmp_path):
    metrics = run(tiny_cfg("privacy.neighbors=add_remove", "references=true"), output_dir=tmp_path)
    on_disk = json.loads((tmp_path / "metrics.json").read_text())
    assert on_disk["privacy_unit"] == "one teacher added or removed" and on_disk["record_level"] is False
    assert (
        "one neighbour: one teacher added or removed (teacher-level: NOT a record-level guarantee)"
        in metrics["privacy"]
    )
    assert on_disk["not_covered_by_epsilon"]["keys"] == [  # synthetic data: seeded noise, so the seed and the keys
        "teacher_accuracy",
        "reference.majority_vote",
        "reference.true_labels",
        "seed",
        "artifacts",
        "host.finished_utc",
    ]
    assert "teacher_accuracy" in on_disk and "student_accuracy" in on_disk["reference"]["majority_vote"]  # contract
    found = check_summary(metrics)  # at most 100 characters a line, every epsilon saying what it is
    assert found["privacy unit"] == ["one teacher added or removed (teacher-level: NOT a record-level guarantee)"]
    assert found["not covered"][:2] == [
        "by epsilon: teacher_accuracy, reference.majority_vote, reference.true_labels,",
        "seed, artifacts, host.finished_utc",
    ]
    assert "no privacy cost" not in summary(metrics)


@pytest.mark.parametrize(
    "relation, neighbour", [("replace", "one record replaced"), ("add_remove", "one record added or removed")]
)
def test_a_record_level_method_is_record_level_under_both_relations(tiny_cfg, tmp_path, relation, neighbour):
    metrics = run(tiny_cfg(*TOY, f"privacy.neighbors={relation}"), output_dir=tmp_path)
    assert (metrics["privacy_unit"], metrics["record_level"]) == (neighbour, True)
    assert check_summary(metrics)["privacy unit"] == [f"{neighbour} (record-level)"]
    assert metrics["not_covered_by_epsilon"]["keys"] == ["seed", "artifacts", "host.finished_utc"]


def test_a_data_dependent_release_lists_its_raw_statistics_as_not_covered(tiny_cfg, tmp_path):
    metrics = run(tiny_cfg("aggregator=binary_voting_dd"), output_dir=tmp_path)
    assert metrics["not_covered_by_epsilon"]["keys"] == [
        "teacher_accuracy",
        "epsilon_data_dependent",
        "privacy_data_dependent",
        "data_dependent_test.not_itself_private",
        "seed",
        "artifacts",
        "host.finished_utc",
    ]
    found = check_summary(metrics)
    assert found["data-dependent"][0] == (
        f"epsilon = {metrics['epsilon_data_dependent']:.4g} (NOT ITSELF PRIVATE; replace, delta = 1e-06)"
    )
    assert "not covered by epsilon" in found["data-dependent"][1]
    unit = "one neighbour: one teacher's vote replaced (record-level)"
    assert all(unit in metrics[key] for key in ("privacy", "privacy_data_dependent", "privacy_data_independent"))
    # the console says the unit once, for the guarantee, the raw bound and the data-independent price alike
    assert found["privacy unit"] == ["one teacher's vote replaced (record-level)"]
    assert "one neighbour" not in summary(metrics) and entries(summary(metrics)) == found
