"""DP-SGD's linear probe follows the noise (issue 39): ``method.probe_recipes`` picks its settings by the run's
target epsilon, refuses a malformed list, and never replaces a setting the user changed."""

import pytest
from omegaconf import OmegaConf

from pate.locations import CONFIG_DIR
from pate.pipeline.checks import UserError
from pate.pipeline.methods.base import RunSettings
from pate.pipeline.methods.dp_sgd import DPSGD, FLAT_SETTINGS, probe_recipe
from pate.pipeline.noise import NoiseSource

SHIPPED = OmegaConf.load(CONFIG_DIR / "method" / "dp_sgd.yaml")
RECIPES = [{"from_epsilon": 0.5, "lr": 1.0}, {"from_epsilon": 4, "inputs": "standardized", "epochs": 30}]


@pytest.mark.parametrize("target,expected", [
    (None, (None, {})), (0.25, (None, {})), (0.5, (0.5, {"lr": 1.0})), (3.99, (0.5, {"lr": 1.0})),
    (4, (4.0, {"inputs": "standardized", "epochs": 30})), (64, (4.0, {"inputs": "standardized", "epochs": 30})),
])
def test_the_recipe_with_the_largest_start_at_or_below_the_target_applies(target, expected):
    assert probe_recipe(RECIPES, target) == expected


@pytest.mark.parametrize("recipes,match", [
    ([{"inputs": "standardized"}], r"probe_recipes\[0\]=.*expected a mapping with from_epsilon"),
    ([{"from_epsilon": 1, "clip_norm": 2}], r"probe_recipes\[0\] sets \['clip_norm'\]"),
    ([{"from_epsilon": -1}], r"probe_recipes\[0\].from_epsilon=-1; expected a number >= 0"),
    ([{"from_epsilon": 4}, {"from_epsilon": 4}], r"probe_recipes\[1\].from_epsilon=4; .*larger than the previous"),
    ([{"from_epsilon": True}], r"from_epsilon=True"),
])
def test_a_malformed_recipe_list_is_refused_whatever_the_target(recipes, match):
    with pytest.raises(UserError, match=match):
        probe_recipe(recipes, None)


def test_the_flat_settings_are_the_shipped_configs():
    assert {key: SHIPPED[key] for key in FLAT_SETTINGS} == FLAT_SETTINGS


def _method(target, **changes):
    node = OmegaConf.merge(SHIPPED, changes)
    run = RunSettings(neighbors="replace", delta=1e-6, target_epsilon=target, budget_epsilon=None, num_queries=10,
                      num_labels=3, seed=0, noise=NoiseSource("seeded", 0, "seeded"))
    return DPSGD.from_config(OmegaConf.create({"method": node, "privacy": {"budget_epsilon": None}}), run)


@pytest.mark.parametrize("target,inputs,momentum,epochs", [
    (None, "unit_norm", 0.9, 20), (2, "unit_norm", 0.9, 20), (4, "standardized", 0.0, 30), (8, "standardized", 0.0, 30),
])
def test_the_shipped_probe_follows_the_measured_rule(target, inputs, momentum, epochs):
    """The shipped rule (levers.md, "DP-SGD's probe inputs"): unit-norm inputs with momentum below epsilon 4, the
    standardized features with plain SGD for 30 epochs from 4 up; one method name across the epsilons."""
    method = _method(target)
    assert (method.inputs, method.momentum, method.epochs) == (inputs, momentum, epochs)
    assert method.recipe_from == (None if target is None or target < 4 else 4.0)


def test_the_cnn_keeps_its_flat_settings():
    method = _method(8, model="small_cnn")
    assert (method.inputs, method.momentum, method.epochs, method.recipe_from) == ("unit_norm", 0.9, 20, None)


def test_a_setting_the_user_changed_is_refused_rather_than_replaced():
    with pytest.raises(UserError, match=r"method.epochs=2: method.probe_recipes sets epochs=30 from epsilon 4"):
        _method(8, epochs=2)
    assert _method(8, epochs=2, probe_recipes=[]).epochs == 2  # without recipes, the user's settings stand
    assert _method(2, epochs=2).epochs == 2  # no recipe covers epsilon 2
    assert _method(8, inputs="standardized").inputs == "standardized"  # the same value as the recipe's
