"""A method added from a test module through config alone (no edit under pate/pipeline/) runs end to end: the
pipeline builds its stage, trains the student on what it released, replays its epsilon from its cost events and
writes metrics.json with the keys every run has."""

import json
import math

import pytest

from pate.pipeline.checks import UserError
from pate.pipeline.methods import DPSGD, PATE, Method, PrivateKNNMethod
from pate.pipeline.runner import run
from pate.privacy import DEFAULT_ORDERS, epsilon_from_rdp, gaussian_rdp
from tests.pipeline.methods.noisy_prevalence import NoisyPrevalence

TOY = ["method._target_=tests.pipeline.methods.noisy_prevalence.NoisyPrevalence", "+method.sigma=5.0"]


@pytest.mark.parametrize("relation", ["replace", "add_remove"])
def test_a_toy_method_runs_end_to_end_through_config_alone(tiny_cfg, tmp_path, relation):
    cfg = tiny_cfg(*TOY, f"privacy.neighbors={relation}", "references=true")
    metrics = run(cfg, output_dir=tmp_path)
    assert json.loads((tmp_path / "metrics.json").read_text()) == json.loads(json.dumps(metrics))
    assert metrics["method"] == "noisy_prevalence" and metrics["noise"] == {"sigma": 5.0}
    # one Gaussian release of the L + 1 counts, L2 sensitivity sqrt(L + 1) under both relations
    curve = gaussian_rdp(DEFAULT_ORDERS, 5.0, math.sqrt(int(cfg.data.num_labels) + 1))
    assert math.isclose(metrics["epsilon"], epsilon_from_rdp(DEFAULT_ORDERS, curve, 1e-6)[0], rel_tol=1e-12)
    assert metrics["neighbors"] == relation and "NoisyPrevalence(sigma=5)" in metrics["privacy"]
    assert metrics["answered"] == metrics["queries"] == 40 and metrics["student_train_size"] == 40
    assert 0 <= metrics["student_accuracy"] <= 1
    assert "teacher_accuracy" not in metrics and "partition" not in metrics["artifacts"]
    assert set(metrics["reference"]) == {"majority_class", "true_labels"}  # no teachers: no majority vote


def test_every_method_of_the_library_and_the_toy_one_subclass_the_protocol():
    assert all(issubclass(kind, Method) for kind in (PATE, PrivateKNNMethod, DPSGD, NoisyPrevalence))


def test_a_method_missing_a_protocol_member_fails_when_defined_not_when_called():
    class Incomplete(Method):  # no release, no metrics
        contributor = "record"
        reads_features = False

        @classmethod
        def from_config(cls, cfg, run):
            return cls()

    with pytest.raises(TypeError, match="abstract"):
        Incomplete()


def test_a_target_that_is_no_method_and_an_unknown_method_key_are_refused_naming_them(tiny_cfg, tmp_path):
    with pytest.raises(UserError, match=r"method._target_='pate.aggregators.GaussianPATE' is not a Method"):
        run(tiny_cfg("method._target_=pate.aggregators.GaussianPATE"), output_dir=tmp_path)
    with pytest.raises(
        UserError,
        match=r"method.sigmaa=5.0: .*NoisyPrevalence has no such setting; its settings are "
        r"sigma",
    ):
        run(tiny_cfg(TOY[0], "+method.sigmaa=5.0"), output_dir=tmp_path)


def test_a_toy_methods_bad_setting_and_a_shard_are_refused_before_compute(tiny_cfg, tmp_path):
    with pytest.raises(UserError, match="sigma"):
        run(
            tiny_cfg("method._target_=tests.pipeline.methods.noisy_prevalence.NoisyPrevalence", "+method.sigma=-1"),
            output_dir=tmp_path,
        )
    with pytest.raises(UserError, match="NoisyPrevalence trains no teachers to shard"):
        run(tiny_cfg(*TOY, "teacher_shard=0/2"), output_dir=tmp_path)
