"""Settings that follow the noise (``pate.pipeline.methods.recipes``): the recipe with the largest start at or below
the target applies, under the run's relation where a start names each relation, a malformed list is refused
whatever the target, and a setting the user changed is refused rather than replaced; Private-kNN's shipped recipe."""

import pytest
from omegaconf import OmegaConf

from pate.pipeline.checks import UserError
from pate.pipeline.methods.private_knn import RECIPE_DEFAULTS, PrivateKNNMethod
from pate.pipeline.methods.recipes import apply_recipe, recipe_for
from tests.pipeline.methods.dp_sgd_config import run_settings, shipped

KEYS = ("k", "sampling_rate")
RECIPES = [{"from_epsilon": 0.5, "k": 50}, {"from_epsilon": 8, "k": 200, "sampling_rate": 0.3}]
DEFAULTS = {"k": 800, "sampling_rate": 0.1}


@pytest.mark.parametrize(
    "target,expected",
    [
        (None, (None, {})),
        (0.25, (None, {})),
        (0.5, (0.5, {"k": 50})),
        (7.99, (0.5, {"k": 50})),
        (8, (8.0, {"k": 200, "sampling_rate": 0.3})),
        (64, (8.0, {"k": 200, "sampling_rate": 0.3})),
    ],
)
def test_the_recipe_with_the_largest_start_at_or_below_the_target_applies(target, expected):
    for relation in ("replace", "add_remove"):  # one number is every relation's start
        assert recipe_for(RECIPES, target, relation, KEYS, "method.recipes") == expected


PER_RELATION = [
    {"from_epsilon": {"replace": 1, "add_remove": 0.5}, "k": 50},
    {"from_epsilon": {"replace": 8, "add_remove": 4}, "sampling_rate": 0.3},
]


@pytest.mark.parametrize(
    "relation,target,expected",
    [
        ("replace", 0.5, (None, {})),
        ("add_remove", 0.5, (0.5, {"k": 50})),
        ("replace", 4, (1.0, {"k": 50})),
        ("add_remove", 4, (4.0, {"sampling_rate": 0.3})),
        ("replace", 7.99, (1.0, {"k": 50})),
        ("add_remove", 3.99, (0.5, {"k": 50})),
        ("replace", 8, (8.0, {"sampling_rate": 0.3})),
        ("add_remove", 64, (4.0, {"sampling_rate": 0.3})),
    ],
)
def test_a_start_per_relation_applies_under_the_runs_relation(relation, target, expected):
    assert recipe_for(PER_RELATION, target, relation, KEYS, "method.recipes") == expected


@pytest.mark.parametrize(
    "recipes,match",
    [
        ([{"k": 50}], r"method.recipes\[0\]=.*expected a mapping with from_epsilon"),
        (["k=50"], r"method.recipes\[0\]='k=50'; expected a mapping"),
        ([{"from_epsilon": 1, "sigma": 2}], r"method.recipes\[0\] sets \['sigma'\]; a recipe may set only \('k', "),
        ([{"from_epsilon": -1}], r"method.recipes\[0\].from_epsilon=-1; expected a number >= 0"),
        ([{"from_epsilon": float("nan")}], r"from_epsilon=nan; expected a number >= 0"),
        ([{"from_epsilon": 4}, {"from_epsilon": 4}], r"method.recipes\[1\].from_epsilon=4; .*larger than the previous"),
        ([{"from_epsilon": 8}, {"from_epsilon": 4}], r"method.recipes\[1\].from_epsilon=4; .*previous recipe's \(8\)"),
        ([{"from_epsilon": True}], r"from_epsilon=True"),
        ([{"from_epsilon": "8"}], r"from_epsilon='8'"),
        (
            [{"from_epsilon": {"replace": 8}}],
            r"from_epsilon=\{'replace': 8\}; expected a number >= 0, or a mapping from "
            r"each relation \('replace', 'add_remove'\)",
        ),
        ([{"from_epsilon": {"replace": 8, "add_remove": 4, "swap": 2}}], r"from_epsilon=.*'swap'"),
        ([{"from_epsilon": {"replace": 8, "add_remove": -1}}], r"from_epsilon=.*'add_remove': -1"),
        (
            [{"from_epsilon": {"replace": 1, "add_remove": 4}}, {"from_epsilon": {"replace": 8, "add_remove": 4}}],
            r"method.recipes\[1\].from_epsilon=.*larger than the previous recipe's \(4\) under add_remove",
        ),
        (
            [{"from_epsilon": 2}, {"from_epsilon": {"replace": 8, "add_remove": 1}}],
            r"method.recipes\[1\].from_epsilon=.*previous recipe's \(2\) under add_remove",
        ),
    ],
)
def test_a_malformed_recipe_list_is_refused_whatever_the_target(recipes, match):
    for relation in ("replace", "add_remove"):
        with pytest.raises(UserError, match=match):
            recipe_for(recipes, None, relation, KEYS, "method.recipes")


def test_an_unknown_relation_is_refused():
    with pytest.raises(UserError, match=r"privacy.neighbors='swap'; expected one of \('replace', 'add_remove'\)"):
        recipe_for(RECIPES, 8, "swap", KEYS, "method.recipes")


def _apply(target, neighbors="replace", **changes):
    return apply_recipe(
        {**DEFAULTS, "sigma": 20.0, "recipes": RECIPES, **changes}, DEFAULTS, "recipes", target, neighbors
    )


def test_the_chosen_recipe_replaces_the_settings_it_names_and_the_list_leaves_the_settings():
    assert _apply(None) == (None, {"k": 800, "sampling_rate": 0.1, "sigma": 20.0})
    assert _apply(1) == (0.5, {"k": 50, "sampling_rate": 0.1, "sigma": 20.0})
    assert _apply(16) == (8.0, {"k": 200, "sampling_rate": 0.3, "sigma": 20.0})


def test_a_setting_the_user_changed_is_refused_rather_than_replaced():
    with pytest.raises(
        UserError,
        match=r"method.k=10: method.recipes sets k=200 from epsilon 8 under add_remove, "
        r"which covers privacy.target_epsilon=16; set method.recipes=\[\] to run "
        r"with your settings",
    ):
        _apply(16, "add_remove", k=10)
    assert _apply(16, k=10, recipes=[]) == (None, {"k": 10, "sampling_rate": 0.1, "sigma": 20.0})
    assert _apply(0.25, k=10)[1]["k"] == 10  # no recipe covers epsilon 0.25
    assert _apply(1, sampling_rate=0.5) == (0.5, {"k": 50, "sampling_rate": 0.5, "sigma": 20.0})  # k only at 0.5
    assert _apply(16, k=200)[1]["k"] == 200  # the same value as the recipe's


KNN_SHIPPED = shipped("private_knn")


def test_private_knn_recipe_defaults_are_the_shipped_config():
    assert {key: KNN_SHIPPED[key] for key in RECIPE_DEFAULTS} == RECIPE_DEFAULTS


def _knn(target, neighbors="replace", **changes):
    # the rule does not depend on the accountant; the PLD's calibration is slower
    run = run_settings(target, neighbors, accountant="rdp")
    cfg = OmegaConf.create({"method": OmegaConf.merge(KNN_SHIPPED, changes)})
    return PrivateKNNMethod.from_config(cfg, run)


@pytest.mark.slow  # a heavy computation
@pytest.mark.parametrize("neighbors,switch", [("replace", 8.0), ("add_remove", 4.0)])
@pytest.mark.parametrize("target", [None, 2, 3.9, 4, 7.9, 8, 64])
def test_private_knn_follows_the_measured_rule(neighbors, switch, target):
    """The shipped rule (levers.md, "Private-kNN's settings"): k 800, gamma 0.1 below the switch and 0.3 from it
    up, the switch at epsilon 8 under replace and 4 under add_remove; the mechanism, its name and the run record
    carry the settings the recipe chose."""
    method = _knn(target, neighbors)
    switched = target is not None and target >= switch
    rate = 0.3 if switched else 0.1
    assert (method.mechanism.k, method.mechanism.sampling_rate) == (800, rate)
    assert method.recipe_from == (switch if switched else None)
    assert f"k=800, sampling_rate={rate:g}" in method.mechanism.name


def test_private_knn_refuses_a_gamma_its_recipe_would_replace():
    with pytest.raises(
        UserError,
        match=r"method.sampling_rate=0.5: method.recipes sets sampling_rate=0.3 from "
        r"epsilon 8 under replace",
    ):
        _knn(8, sampling_rate=0.5)
    with pytest.raises(UserError, match=r"from epsilon 4 under add_remove"):
        _knn(4, "add_remove", sampling_rate=0.5)
    assert _knn(8, sampling_rate=0.5, recipes=[]).mechanism.sampling_rate == 0.5
    assert _knn(8, k=200).mechanism.k == 200  # the recipe sets gamma only
