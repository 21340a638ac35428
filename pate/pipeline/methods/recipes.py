"""Settings that follow the noise: a method's config lists recipes, each ``{from_epsilon, <settings>}``,
and a run with a target epsilon takes the settings of the recipe with the largest ``from_epsilon`` at or below its
target. ``from_epsilon`` is one number for every relation, or a mapping that gives each relation its own
(``{replace: 8, add_remove: 4}``): the same epsilon buys different noise under each relation (one record added or
removed moves a vote count or a clipped gradient sum about half as far as one replaced), and a recipe belongs to
the noise, not to the number. The recipes are chosen on the built-in synthetic data, public for a user's own data
(the config that ships them says where they were measured), never on the data a run reads.

Private-kNN's ``method.recipes`` and DP-SGD's ``method.probe_recipes`` use it.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

from pate.pipeline.checks import UserError
from pate.privacy.sensitivity import RELATIONS

__all__ = ["apply_recipe", "recipe_for"]


def _start(value: Any, entry: str) -> dict[str, float]:
    """``from_epsilon`` of the recipe ``entry`` per relation: a number >= 0 for every relation, or a mapping from
    each relation of :data:`~pate.privacy.sensitivity.RELATIONS` (all of them, no other) to a number >= 0."""

    def number(x: Any) -> bool:
        return not isinstance(x, bool) and isinstance(x, (int, float)) and x >= 0

    if isinstance(value, Mapping) and set(value) == set(RELATIONS) and all(number(v) for v in value.values()):
        return {relation: float(value[relation]) for relation in RELATIONS}
    if number(value):
        return dict.fromkeys(RELATIONS, float(value))
    raise UserError(
        f"{entry}.from_epsilon={value!r}; expected a number >= 0, or a mapping from each relation {RELATIONS} to one"
    )


def recipe_for(
    recipes: Sequence[Mapping[str, Any]] | None,
    target_epsilon: float | None,
    neighbors: str,
    keys: Sequence[str],
    where: str,
) -> tuple[float | None, dict[str, Any]]:
    """Of ``recipes`` (the config list ``where``, e.g. ``method.recipes``), the one with the largest
    ``from_epsilon`` under ``neighbors`` at or below ``target_epsilon``: (that from_epsilon, the settings it sets),
    or (None, {}) without a target or when no recipe reaches down to it. The list is checked whatever the target
    and the relation: each entry a mapping, ``from_epsilon`` as :func:`_start` takes it and strictly increasing
    under every relation, no key outside ``keys``."""
    if neighbors not in RELATIONS:
        raise UserError(f"privacy.neighbors={neighbors!r}; expected one of {RELATIONS}")
    chosen: tuple[float | None, dict[str, Any]] = (None, {})
    last = dict.fromkeys(RELATIONS, -math.inf)
    for i, recipe in enumerate(recipes or ()):
        entry = f"{where}[{i}]"
        if not isinstance(recipe, Mapping) or "from_epsilon" not in recipe:
            raise UserError(f"{entry}={recipe!r}; expected a mapping with from_epsilon and some of {tuple(keys)}")
        unknown = sorted(set(recipe) - {"from_epsilon", *keys})
        if unknown:
            raise UserError(f"{entry} sets {unknown}; a recipe may set only {tuple(keys)} (and from_epsilon)")
        start = _start(recipe["from_epsilon"], entry)
        for relation in RELATIONS:
            if start[relation] <= last[relation]:
                raise UserError(
                    f"{entry}.from_epsilon={recipe['from_epsilon']!r}; expected it larger than the "
                    f"previous recipe's ({last[relation]:g}) under {relation}"
                )
        last = start
        if target_epsilon is not None and start[neighbors] <= target_epsilon:
            chosen = (start[neighbors], {key: value for key, value in recipe.items() if key != "from_epsilon"})
    return chosen


def apply_recipe(
    settings: Mapping[str, Any],
    defaults: Mapping[str, Any],
    recipes_key: str,
    target_epsilon: float | None,
    neighbors: str,
    where: str = "method",
) -> tuple[float | None, dict[str, Any]]:
    """(the chosen recipe's from_epsilon, ``settings`` with its values): ``settings[recipes_key]`` is the recipe
    list (:func:`recipe_for` under ``neighbors``; a recipe may set any key of ``defaults``), removed from the
    result. A setting the user changed from ``defaults`` is never replaced behind their back: where the chosen
    recipe sets it to another value, a UserError says so and how to keep it (``recipes_key=[]``)."""
    settings = dict(settings)
    recipes = settings.pop(recipes_key)
    start, recipe = recipe_for(recipes, target_epsilon, neighbors, sorted(defaults), f"{where}.{recipes_key}")
    changed = [key for key in recipe if settings[key] not in (defaults[key], recipe[key])]
    if changed:
        key = changed[0]
        raise UserError(
            f"{where}.{key}={settings[key]!r}: {where}.{recipes_key} sets {key}={recipe[key]!r} from "
            f"epsilon {start:g} under {neighbors}, which covers privacy.target_epsilon="
            f"{target_epsilon:g}; set {where}.{recipes_key}=[] to run with your settings at every epsilon"
        )
    settings.update(recipe)
    return start, settings
