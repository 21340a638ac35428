"""Settings that follow the noise (issue 39): a method's config lists recipes, each ``{from_epsilon, <settings>}``,
and a run with a target epsilon takes the settings of the recipe with the largest ``from_epsilon`` at or below its
target. The recipes are chosen on the built-in synthetic data, public for a user's own data (the config that ships
them says where they were measured), never on the data a run reads.

Private-kNN's ``method.recipes`` use it. DP-SGD's ``method.probe_recipes`` has the same rule in
``pate.pipeline.methods.dp_sgd.probe_recipe``, to be moved here in the next change of DP-SGD's code (its cache
keys hash that code: moving it now would rerun every committed DP-SGD training).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

from pate.pipeline.checks import UserError

__all__ = ["apply_recipe", "recipe_for"]


def recipe_for(recipes: Sequence[Mapping[str, Any]] | None, target_epsilon: float | None, keys: Sequence[str],
               where: str) -> tuple[float | None, dict[str, Any]]:
    """Of ``recipes`` (the config list ``where``, e.g. ``method.recipes``), the one with the largest
    ``from_epsilon`` at or below ``target_epsilon``: (its from_epsilon, the settings it sets), or (None, {})
    without a target or when no recipe reaches down to it. The list is checked whatever the target: each entry a
    mapping, ``from_epsilon`` a number >= 0 and strictly increasing, no key outside ``keys``."""
    chosen: tuple[float | None, dict[str, Any]] = (None, {})
    last = -math.inf
    for i, recipe in enumerate(recipes or ()):
        entry = f"{where}[{i}]"
        if not isinstance(recipe, Mapping) or "from_epsilon" not in recipe:
            raise UserError(f"{entry}={recipe!r}; expected a mapping with from_epsilon and some of {tuple(keys)}")
        unknown = sorted(set(recipe) - {"from_epsilon", *keys})
        if unknown:
            raise UserError(f"{entry} sets {unknown}; a recipe may set only {tuple(keys)} (and from_epsilon)")
        start = recipe["from_epsilon"]
        if isinstance(start, bool) or not isinstance(start, (int, float)) or not start >= 0 or start <= last:
            raise UserError(f"{entry}.from_epsilon={start!r}; expected a number >= 0, larger than the previous "
                            f"recipe's ({last:g})")
        last = start
        if target_epsilon is not None and start <= target_epsilon:
            chosen = (float(start), {key: value for key, value in recipe.items() if key != "from_epsilon"})
    return chosen


def apply_recipe(settings: Mapping[str, Any], defaults: Mapping[str, Any], recipes_key: str,
                 target_epsilon: float | None, where: str = "method") -> tuple[float | None, dict[str, Any]]:
    """(the chosen recipe's from_epsilon, ``settings`` with its values): ``settings[recipes_key]`` is the recipe
    list (:func:`recipe_for`; a recipe may set any key of ``defaults``), removed from the result. A setting the user
    changed from ``defaults`` is never replaced behind their back: where the chosen recipe sets it to another
    value, a UserError says so and how to keep it (``recipes_key=[]``)."""
    settings = dict(settings)
    recipes = settings.pop(recipes_key)
    start, recipe = recipe_for(recipes, target_epsilon, sorted(defaults), f"{where}.{recipes_key}")
    changed = [key for key in recipe if settings[key] not in (defaults[key], recipe[key])]
    if changed:
        key = changed[0]
        raise UserError(f"{where}.{key}={settings[key]!r}: {where}.{recipes_key} sets {key}={recipe[key]!r} from "
                        f"epsilon {start:g}, which covers privacy.target_epsilon={target_epsilon:g}; set "
                        f"{where}.{recipes_key}=[] to run with your settings at every epsilon")
    settings.update(recipe)
    return start, settings
