"""DP-SGD's linear probe follows the noise (issue 39): ``method.probe_recipes`` picks its settings by the run's
target epsilon under the run's relation (the rule itself: test_recipes.py), refuses a malformed list for every
model, and never replaces a setting the user changed."""

import pytest

from pate.pipeline.checks import UserError
from pate.pipeline.methods.dp_sgd import FLAT_SETTINGS
from tests.pipeline.methods.dp_sgd_config import SHIPPED, dp_sgd_method as _method


def test_the_flat_settings_are_the_shipped_configs():
    assert {key: SHIPPED[key] for key in FLAT_SETTINGS} == FLAT_SETTINGS


FLAT, STANDARDIZED = ("unit_norm", 0.9, 20), ("standardized", 0.0, 30)


@pytest.mark.parametrize(
    "neighbors,target,settings,start",
    [
        ("replace", None, FLAT, None),
        ("replace", 2, FLAT, None),
        ("replace", 3.99, FLAT, None),
        ("replace", 4, STANDARDIZED, 4.0),
        ("replace", 64, STANDARDIZED, 4.0),
        ("add_remove", None, FLAT, None),
        ("add_remove", 1, FLAT, None),
        ("add_remove", 1.99, FLAT, None),
        ("add_remove", 2, STANDARDIZED, 2.0),
        ("add_remove", 8, STANDARDIZED, 2.0),
    ],
)
def test_the_shipped_probe_follows_the_measured_rule_under_each_relation(neighbors, target, settings, start):
    """The shipped rule (levers.md, "DP-SGD's probe inputs"): unit-norm inputs with momentum below the switch, the
    standardized features with plain SGD for 30 epochs from it up; the switch at epsilon 4 under replace and 2
    under add_remove (one record added or removed moves the clipped sum half as far); one method name throughout."""
    method = _method(target, neighbors)
    assert (method.inputs, method.momentum, method.epochs) == settings
    assert method.recipe_from == start


def test_the_cnn_keeps_its_flat_settings_and_its_list_is_still_checked():
    method = _method(8, model="small_cnn")
    assert (method.inputs, method.momentum, method.epochs, method.recipe_from) == ("unit_norm", 0.9, 20, None)
    with pytest.raises(UserError, match=r"method.probe_recipes\[0\] sets \['clip_norm'\]"):
        _method(8, model="small_cnn", probe_recipes=[{"from_epsilon": 1, "clip_norm": 2}])


@pytest.mark.parametrize(
    "recipes,match",
    [
        ([{"inputs": "standardized"}], r"probe_recipes\[0\]=.*expected a mapping with from_epsilon"),
        ([{"from_epsilon": 1, "width": 64}], r"probe_recipes\[0\] sets \['width'\]; a recipe may set only"),
        ([{"from_epsilon": {"replace": 4}}], r"probe_recipes\[0\].from_epsilon=\{'replace': 4\}; expected"),
    ],
)
def test_a_malformed_probe_recipe_list_is_refused_whatever_the_target(recipes, match):
    with pytest.raises(UserError, match=match):
        _method(None, probe_recipes=recipes)


def test_a_setting_the_user_changed_is_refused_rather_than_replaced():
    with pytest.raises(
        UserError,
        match=r"method.epochs=2: method.probe_recipes sets epochs=30 from epsilon 2 under "
        r"add_remove, which covers privacy.target_epsilon=2",
    ):
        _method(2, "add_remove", epochs=2)
    assert _method(8, epochs=2, probe_recipes=[]).epochs == 2  # without recipes, the user's settings stand
    assert _method(2, epochs=2).epochs == 2  # under replace no recipe covers epsilon 2
    assert _method(8, inputs="standardized").inputs == "standardized"  # the same value as the recipe's


def test_momentum_0_and_0_0_are_one_setting_so_one_cache_key():
    """The stage key holds the settings as the method stores them: 0 from a command line and the recipe's 0.0 are
    one float, so the standardized grid of pate_reports.sh shares eps_sweep's trainings."""
    spelled = [_method(None, inputs="standardized", momentum=value, epochs=30, probe_recipes=[]) for value in (0, 0.0)]
    assert spelled[0] == spelled[1] and type(spelled[0].momentum) is float
    assert _method(8, "replace").momentum == spelled[0].momentum  # the recipe's
