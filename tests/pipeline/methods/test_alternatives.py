"""DP-SGD and Private-kNN as methods, through the real config shrunk to the tiny data: each runs end to end under
both relations, its epsilon is replayed from its cost events and meets the target, and what a method cannot do
is refused by name before compute."""

import json

import pytest
import torch

from pate.pipeline.checks import UserError
from pate.dp_sgd import probe_inputs
from pate.pipeline.runner import run
from pate.privacy import Ledger, sampled_gaussian_steps

pytestmark = pytest.mark.slow  # end-to-end runs: not in the fast loop (-m 'not slow')

DP_SGD = ["method=dp_sgd", "method.expected_batch_size=64", "method.epochs=2", "method.probe_recipes=[]"]
KNN = ["method=private_knn", "method.k=10", "method.sampling_rate=0.5", "method.recipes=[]"]


@pytest.mark.parametrize("relation", ["replace", "add_remove"])
def test_dp_sgd_runs_end_to_end_and_releases_its_model(tiny_cfg, tmp_path, relation):
    cfg = tiny_cfg(
        *DP_SGD,
        f"privacy.neighbors={relation}",
        "privacy.target_epsilon=4",
        "references=true",
        "privacy.accountant=tightest",
    )
    metrics = run(cfg, output_dir=tmp_path)
    assert json.loads((tmp_path / "metrics.json").read_text()) == json.loads(json.dumps(metrics))
    assert metrics["method"] == "dp_sgd" and metrics["neighbors"] == relation
    assert 4 * (1 - 1e-3) <= metrics["epsilon"] <= 4
    event = sampled_gaussian_steps(metrics["sampling_rate"], metrics["noise_multiplier"], metrics["steps"], relation)
    ledger = Ledger(neighbors=relation).compose_event(event)
    priced = ledger.get_epsilon(1e-6)
    assert (metrics["epsilon"], metrics["epsilon_accountant"]) == (priced.epsilon, priced.accountant)
    assert (
        metrics["epsilon_accountant"] == "pld" and metrics["epsilon_rdp"] == ledger.get_epsilon(1e-6, "rdp").epsilon > 4
    )
    num_private = metrics["student_train_size"]
    assert metrics["sampling_rate"] == pytest.approx(64 / num_private)
    assert metrics["steps"] == -(-2 * num_private // 64)  # ceil(epochs / q)
    assert metrics["answered"] == metrics["queries"] == 40 and 0 <= metrics["student_accuracy"] <= 1
    assert "DP-SGD(linear probe" in metrics["privacy"] and "teacher_accuracy" not in metrics
    # the privacy-free limit: the same batches, clipping and steps with noise zero, in its own cached stage
    assert set(metrics["reference"]) == {"majority_class", "true_labels", "noise_free"}
    assert 0 <= metrics["reference"]["noise_free"]["student_accuracy"] <= 1


def test_dp_sgd_trains_a_cnn_from_scratch_on_the_images(tiny_cfg, tmp_path):
    metrics = run(tiny_cfg(*DP_SGD, "method.model=small_cnn", "method.width=4", "method.lr=0.5"), output_dir=tmp_path)
    assert "DP-SGD(small_cnn, width 4" in metrics["privacy"] and metrics["method"] == "dp_sgd+small_cnn"
    assert 0 <= metrics["student_accuracy"] <= 1 and metrics["answered"] == 40


def test_dp_sgd_can_train_its_probe_on_the_standardized_features_as_they_are(tiny_cfg, tmp_path):
    unit = run(tiny_cfg(*DP_SGD), output_dir=tmp_path / "unit")
    standardized = run(tiny_cfg(*DP_SGD, "method.inputs=standardized"), output_dir=tmp_path / "standardized")
    assert standardized["method"] == "dp_sgd+standardized"
    assert "DP-SGD(linear probe on the standardized features" in standardized["privacy"]
    assert standardized["epsilon"] == unit["epsilon"]  # the inputs change the model, not the cost
    assert standardized["artifacts"]["dp_sgd"] != unit["artifacts"]["dp_sgd"]


def test_the_probe_inputs_are_unit_norm_or_the_features_as_they_are():
    features = torch.tensor([[3.0, 4.0], [0.0, -2.0]])
    assert torch.allclose(probe_inputs(features), torch.tensor([[0.6, 0.8], [0.0, -1.0]]))
    assert probe_inputs(features, "standardized") is features


@pytest.mark.parametrize("relation", ["replace", "add_remove"])
def test_private_knn_runs_end_to_end_calibrated_to_the_target(tiny_cfg, tmp_path, relation):
    metrics = run(
        tiny_cfg(
            *KNN,
            f"privacy.neighbors={relation}",
            "privacy.target_epsilon=8",
            "references=true",
            "privacy.accountant=tightest",
        ),
        output_dir=tmp_path,
    )
    assert metrics["method"] == "private_knn" and metrics["neighbors"] == relation
    assert 8 * (1 - 1e-3) <= metrics["epsilon"] <= 8 < metrics["epsilon_rdp"]
    assert metrics["epsilon_accountant"] == "pld" and metrics["accountant"] == "tightest"
    assert set(metrics["reference"]) == {"majority_class", "true_labels", "noise_free"}
    assert metrics["answered"] == metrics["queries_asked"] == 40 and metrics["student_train_size"] == 40
    assert "PrivateKNN(k=10, sampling_rate=0.5" in metrics["privacy"]


def test_private_knn_stops_answering_at_the_budget(tiny_cfg, tmp_path):
    metrics = run(
        tiny_cfg(*KNN, "privacy.target_epsilon=null", "method.sigma=40", "privacy.budget_epsilon=3"),
        output_dir=tmp_path,
    )
    assert 0 < metrics["queries_asked"] == metrics["answered"] < 40 and metrics["epsilon"] <= 3


@pytest.mark.parametrize(
    "overrides,match",
    [
        ([*DP_SGD, "privacy.budget_epsilon=3"], "privacy.budget_epsilon=3: method=dp_sgd"),
        ([*DP_SGD, "method.expected_batch_size=100000"], "method.expected_batch_size=100000 exceeds"),
        ([*DP_SGD, "method.lr=-1"], "lr"),
        ([*DP_SGD, "method.momentum=1.5"], "momentum=1.5"),
        ([*DP_SGD, "method.model=resnet"], "method.model='resnet'; expected one of"),
        ([*DP_SGD, "method.inputs=raw"], "method.inputs='raw'; expected one of"),
        ([*KNN, "method.k=0"], "k"),
        ([*KNN, "method.sampling_rate=2"], "sampling_rate"),
        ([*DP_SGD, "teacher_shard=0/2"], "teacher_shard=0/2: DPSGD trains no teachers to shard"),
        ([*KNN, "teacher_shard=0/2"], "teacher_shard=0/2: PrivateKNNMethod trains no teachers to shard"),
    ],
)
def test_bad_settings_are_refused_before_compute(tiny_cfg, tmp_path, overrides, match):
    with pytest.raises(UserError, match=match):
        run(tiny_cfg(*overrides), output_dir=tmp_path)


def _documented_commands() -> list[list[str]]:
    """The `python train.py ...` lines of docs/methods.md, as override lists (without -m)."""
    from pathlib import Path

    text = (Path(__file__).resolve().parents[3] / "docs" / "methods.md").read_text()
    lines = [line.split("#")[0].split() for line in text.splitlines() if line.startswith("python train.py")]
    return [[word for word in line[2:] if word != "-m"] for line in lines]


def test_every_command_in_the_methods_page_composes():
    """Each command of docs/methods.md composes against the real config (real CelebA and GPUs are not here)."""
    from tests.conftest import compose_config

    commands = _documented_commands()
    assert len(commands) >= 5
    for overrides in commands:
        cfg = compose_config(overrides)
        assert cfg.method._target_.rsplit(".", 1)[-1] in ("DPSGD", "PrivateKNNMethod", "PATE")


def test_the_gpu_and_timing_commands_of_the_benchmarks_compose():
    """benchmarks/README.md's DP-SGD CNN sweep (one value per axis: no GPU here) and benchmarks/methods.py's runs."""
    from tests.conftest import compose_config

    cnn = compose_config(
        [
            "trainer=gpu",
            "method=dp_sgd",
            "method.model=small_cnn",
            "privacy.target_epsilon=1",
            "privacy.neighbors=replace",
        ]
    )
    assert cnn.method.model == "small_cnn" and cnn.trainer.accelerator == "gpu"
    for method in ("pate", "private_knn", "dp_sgd"):
        assert compose_config([f"method={method}", "seed=1000", "progress=false"]).seed == 1000
