"""Settings that follow the noise (``pate.pipeline.methods.recipes``): the recipe with the largest start at or below
the target applies, a malformed list is refused whatever the target, and a setting the user changed is refused
rather than replaced; Private-kNN's shipped recipe."""

import pytest
from omegaconf import OmegaConf

from pate.locations import CONFIG_DIR
from pate.pipeline.checks import UserError
from pate.pipeline.methods.base import RunSettings
from pate.pipeline.methods.private_knn import RECIPE_DEFAULTS, PrivateKNNMethod
from pate.pipeline.methods.recipes import apply_recipe, recipe_for
from pate.pipeline.noise import NoiseSource

KEYS = ("k", "sampling_rate")
RECIPES = [{"from_epsilon": 0.5, "k": 50}, {"from_epsilon": 8, "k": 200, "sampling_rate": 0.3}]
DEFAULTS = {"k": 800, "sampling_rate": 0.1}


@pytest.mark.parametrize("target,expected", [
    (None, (None, {})), (0.25, (None, {})), (0.5, (0.5, {"k": 50})), (7.99, (0.5, {"k": 50})),
    (8, (8.0, {"k": 200, "sampling_rate": 0.3})), (64, (8.0, {"k": 200, "sampling_rate": 0.3})),
])
def test_the_recipe_with_the_largest_start_at_or_below_the_target_applies(target, expected):
    assert recipe_for(RECIPES, target, KEYS, "method.recipes") == expected


@pytest.mark.parametrize("recipes,match", [
    ([{"k": 50}], r"method.recipes\[0\]=.*expected a mapping with from_epsilon"),
    (["k=50"], r"method.recipes\[0\]='k=50'; expected a mapping"),
    ([{"from_epsilon": 1, "sigma": 2}], r"method.recipes\[0\] sets \['sigma'\]; a recipe may set only \('k', "),
    ([{"from_epsilon": -1}], r"method.recipes\[0\].from_epsilon=-1; expected a number >= 0"),
    ([{"from_epsilon": float("nan")}], r"from_epsilon=nan; expected a number >= 0"),
    ([{"from_epsilon": 4}, {"from_epsilon": 4}], r"method.recipes\[1\].from_epsilon=4; .*larger than the previous"),
    ([{"from_epsilon": 8}, {"from_epsilon": 4}], r"method.recipes\[1\].from_epsilon=4; .*previous recipe's \(8\)"),
    ([{"from_epsilon": True}], r"from_epsilon=True"),
    ([{"from_epsilon": "8"}], r"from_epsilon='8'"),
])
def test_a_malformed_recipe_list_is_refused_whatever_the_target(recipes, match):
    with pytest.raises(UserError, match=match):
        recipe_for(recipes, None, KEYS, "method.recipes")


def _apply(target, **changes):
    return apply_recipe({**DEFAULTS, "sigma": 20.0, "recipes": RECIPES, **changes}, DEFAULTS, "recipes", target)


def test_the_chosen_recipe_replaces_the_settings_it_names_and_the_list_leaves_the_settings():
    assert _apply(None) == (None, {"k": 800, "sampling_rate": 0.1, "sigma": 20.0})
    assert _apply(1) == (0.5, {"k": 50, "sampling_rate": 0.1, "sigma": 20.0})
    assert _apply(16) == (8.0, {"k": 200, "sampling_rate": 0.3, "sigma": 20.0})


def test_a_setting_the_user_changed_is_refused_rather_than_replaced():
    with pytest.raises(UserError, match=r"method.k=10: method.recipes sets k=200 from epsilon 8, which covers "
                                        r"privacy.target_epsilon=16; set method.recipes=\[\] to run with your "
                                        r"settings"):
        _apply(16, k=10)
    assert _apply(16, k=10, recipes=[]) == (None, {"k": 10, "sampling_rate": 0.1, "sigma": 20.0})
    assert _apply(0.25, k=10)[1]["k"] == 10  # no recipe covers epsilon 0.25
    assert _apply(1, sampling_rate=0.5) == (0.5, {"k": 50, "sampling_rate": 0.5, "sigma": 20.0})  # k only at 0.5
    assert _apply(16, k=200)[1]["k"] == 200  # the same value as the recipe's


KNN_SHIPPED = OmegaConf.load(CONFIG_DIR / "method" / "private_knn.yaml")


def test_private_knn_recipe_defaults_are_the_shipped_config():
    assert {key: KNN_SHIPPED[key] for key in RECIPE_DEFAULTS} == RECIPE_DEFAULTS


def _knn(target, **changes):
    run = RunSettings(neighbors="replace", delta=1e-6, target_epsilon=target, budget_epsilon=None, num_queries=10,
                      num_labels=3, seed=0, noise=NoiseSource("seeded", 0, "seeded"),
                      accountant="rdp")  # the rule does not depend on the accountant; the PLD's calibration is slower
    cfg = OmegaConf.create({"method": OmegaConf.merge(KNN_SHIPPED, changes)})
    return PrivateKNNMethod.from_config(cfg, run)


@pytest.mark.parametrize("target,k,rate", [(None, 800, 0.1), (4, 800, 0.1), (7.9, 800, 0.1), (8, 800, 0.3),
                                           (64, 800, 0.3)])
def test_private_knn_follows_the_measured_rule(target, k, rate):
    """The shipped rule (levers.md, "Private-kNN's settings"): gamma 0.1 below epsilon 8, 0.3 from 8 up, k 800;
    the mechanism, its name and the run record carry the settings the recipe chose."""
    method = _knn(target)
    assert (method.mechanism.k, method.mechanism.sampling_rate) == (k, rate)
    assert method.recipe_from == (None if target is None or target < 8 else 8.0)
    assert f"k={k}, sampling_rate={rate:g}" in method.mechanism.name


def test_private_knn_refuses_a_gamma_its_recipe_would_replace():
    with pytest.raises(UserError, match=r"method.sampling_rate=0.5: method.recipes sets sampling_rate=0.3 from "
                                        r"epsilon 8"):
        _knn(8, sampling_rate=0.5)
    assert _knn(8, sampling_rate=0.5, recipes=[]).mechanism.sampling_rate == 0.5
    assert _knn(8, k=200).mechanism.k == 200  # the recipe sets gamma only
