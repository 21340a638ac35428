"""The validation pass of a run: every config key a user sets is checked before any data is read, and every
mistake -- in the config or in the data -- reaches the console as one line (:class:`UserError`) that names the
key (or the file), the value and what was expected.

``check_config`` holds the checks of plain values; the groups that build objects (aggregator, models, trainer,
extractor) are checked by building them once in ``pate.pipeline.runner.prepare``, whose errors are translated here
(:func:`as_user_error`). Data errors (a split too small, an image that does not decode) are raised by the data
code with the file named, and arrive here the same way.
"""

from __future__ import annotations

import difflib
import math
import numbers
from collections.abc import Iterator
from contextlib import contextmanager

import hydra
import numpy as np
from hydra.errors import InstantiationException
from omegaconf import DictConfig, OmegaConf
from omegaconf.errors import OmegaConfBaseException

from pate.data.labelled_images import SPLITS
from pate.errors import EXIT_USER_ERROR, UserError  # re-exported: the pipeline's one-line error
from pate.locations import CONFIG_DIR
from pate.pipeline.noise import noise_source
from pate.privacy.ledger import ACCOUNTANTS
from pate.privacy.sensitivity import RELATIONS


def _smallest(*values):
    """The ``min`` resolver of the configs (``${min:10.0,${data.num_labels}}``): the smallest of numbers, or None
    while one of them is None (``data.num_labels`` before the run reads it from the data: ``--cfg job --resolve``
    prints null); anything else is an error naming the values."""
    if any(value is None for value in values):
        return None
    if not values or not all(_is_number(value) for value in values):
        raise UserError(f"${{min:...}} of {values!r}: expected numbers")
    return min(values)


OmegaConf.register_new_resolver("min", _smallest, replace=True)


def _is_number(value) -> bool:
    return isinstance(value, numbers.Real) and not isinstance(value, bool) and math.isfinite(value)


def _require(ok: bool, key: str, value, expected: str) -> None:
    if not ok:
        raise UserError(f"{key}={value!r}; expected {expected}")


def check_config(cfg: DictConfig) -> None:
    """The plain keys of a run (seeds, sizes, the privacy node); raises :class:`UserError` on the first bad one."""
    for key, low in (
        ("seed", 0),
        ("partition.seed", 0),
        ("data.query_seed", 0),
        ("data.num_queries", 1),
        ("partition.num_teachers", 1),
        ("data.image_size", 1),
        ("features.num_fit_images", 1),
        ("features.fit_seed", 0),
    ):
        value = OmegaConf.select(cfg, key)
        _require(
            isinstance(value, int) and not isinstance(value, bool) and value >= low, key, value, f"an integer >= {low}"
        )
    group = OmegaConf.select(cfg, "teacher.ensemble_size", default=1)
    _require(
        isinstance(group, int) and not isinstance(group, bool) and group >= 1,
        "teacher.ensemble_size",
        group,
        "an integer >= 1",
    )
    fraction = cfg.data.pool_fraction
    _require(
        _is_number(fraction) and 0 < fraction <= 1,
        "data.pool_fraction",
        fraction,
        "a number in (0, 1]: the share of the held-out split the student may train on",
    )
    privacy = cfg.privacy
    _require(privacy.neighbors in RELATIONS, "privacy.neighbors", privacy.neighbors, f"one of {RELATIONS}")
    accountant = privacy.get("accountant")
    _require(accountant in ACCOUNTANTS, "privacy.accountant", accountant, f"one of {ACCOUNTANTS}")
    _require(_is_number(privacy.delta) and 0 < privacy.delta < 1, "privacy.delta", privacy.delta, "a number in (0, 1)")
    for key in ("target_epsilon", "budget_epsilon", "dataset_budget"):
        value = privacy[key]
        _require(value is None or (_is_number(value) and value > 0), f"privacy.{key}", value, "a number > 0, or null")
    _require(
        isinstance(privacy.get("reuse_release", False), bool),
        "privacy.reuse_release",
        privacy.get("reuse_release"),
        "true or false",
    )
    with building(None):  # privacy.noise: its one reader names the key
        noise_source(cfg)
    _require(isinstance(cfg.get("verbose", False), bool), "verbose", cfg.get("verbose"), "true or false")
    check_appended_keys(cfg, _appended_overrides())


def check_fit_split(split: np.ndarray, fit_split) -> None:
    """The features stage fits its extractor on ``features.fit_split`` (``split``: the split code of every image,
    read before any image is decoded): a public split that holds images. An empty one would fail only after the
    decode and the partition; the private train split would be refused there too."""
    public = [name for name in SPLITS if name != "train"]
    _require(
        fit_split in public,
        "features.fit_split",
        fit_split,
        f"one of {public}: a public split (train is the teachers' private one)",
    )
    if not np.any(np.asarray(split) == SPLITS[fit_split]):
        raise UserError(
            f"features.fit_split={fit_split!r} but the {fit_split} split is empty: no image has split "
            f"code {SPLITS[fit_split]} (a folder's split column, data.split_fractions or CelebA's "
            f"list_eval_partition.txt); expected public images to fit the extractor on, or another "
            f"features.fit_split"
        )


def _appended_overrides() -> list[str]:
    """The command line's ``+key=value`` overrides (none outside a Hydra run)."""
    from hydra.core.hydra_config import HydraConfig

    if not HydraConfig.initialized():
        return []
    return [item for item in HydraConfig.get().overrides.task if item.startswith("+") and not item.startswith("++")]


def check_appended_keys(cfg: DictConfig, appended: list[str]) -> None:
    """Refuse a key added with ``+`` that nothing would read: Hydra accepts ``+privacy.target_epsilonn=3`` and the
    run would silently ignore it. A key added inside a node with a ``_target_`` is a constructor argument (its
    class refuses an unknown one when it is built), and ``+group=option`` picks a config group: both pass."""
    for item in appended:
        key = item[1:].split("=", 1)[0]
        parent, _, name = key.rpartition(".")
        node = OmegaConf.select(cfg, parent) if parent else cfg
        if "/" in key or (isinstance(node, DictConfig) and "_target_" in node) or _is_group(key):
            continue
        siblings = [k for k in (node.keys() if isinstance(node, DictConfig) else ()) if k != name]
        close = difflib.get_close_matches(name, [str(k) for k in siblings], n=3)
        prefix = f"{parent}." if parent else ""
        hint = f"; did you mean {', '.join(prefix + match for match in close)}?" if close else ""
        raise UserError(
            f"{item}: no part of the run reads {key!r}, so the value would be ignored; drop the '+' to "
            f"set a key that exists{hint}"
        )


def _is_group(key: str) -> bool:
    """Whether ``key`` names a config group (a directory of conf/)."""
    return (CONFIG_DIR / key).is_dir()


def as_user_error(err: Exception, group: str | None = None, node: DictConfig | None = None) -> UserError:
    """``err`` as a one-line :class:`UserError`. An error from building the config ``group`` (Hydra's
    instantiate, or the object's own check, which names its argument first, "sigma must be ...") is reported
    under the group's key: "aggregator.sigma must be ..."."""
    cause = err.__cause__ if isinstance(err, InstantiationException) and err.__cause__ is not None else err
    text = " ".join(str(cause).split()) or type(cause).__name__
    if isinstance(cause, KeyError):
        text = f"missing key {text}"
    if group is not None and not text.startswith(group):
        first = text.split(" ", 1)[0].rstrip(":=")
        text = f"{group}.{text}" if node is not None and first in node else f"{group}: {text}"
    return UserError(text)


@contextmanager
def building(group: str | None, node: DictConfig | None = None) -> Iterator[None]:
    """Translate an error raised while building ``group`` from ``node`` (:func:`as_user_error`); ``None``: an
    error whose message names its key or file itself."""
    try:
        yield
    except UserError:
        raise
    except (ValueError, TypeError, KeyError, FileNotFoundError, InstantiationException, OmegaConfBaseException) as err:
        raise as_user_error(err, group, node) from err


def component_class(node: DictConfig, key: str, base: type, only_target: bool = False) -> type:
    """The class that ``node._target_`` names, checked to subclass ``base`` (``key`` names the node in errors). With
    ``only_target`` the node holds nothing else: the component reads its settings beside it, through its
    ``from_config``, so another key there would be silently ignored and is refused."""
    with building(f"{key}._target_", node):
        kind = hydra.utils.get_class(str(node._target_))
    if not (isinstance(kind, type) and issubclass(kind, base)):
        raise UserError(
            f"{key}._target_={node._target_!r} is not a {base.__name__}: expected a subclass of "
            f"{base.__module__}.{base.__qualname__}"
        )
    extra = [str(name) for name in node if name != "_target_"] if only_target else []
    if extra:
        raise UserError(f"{key}.{extra[0]}: {key} holds only its _target_; the component's settings live beside it")
    return kind


def instantiate(node: DictConfig, group: str):
    """``hydra.utils.instantiate``; an error is a one-line :class:`UserError` under the key ``group``."""
    with building(group, node):
        return hydra.utils.instantiate(node)


__all__ = [
    "EXIT_USER_ERROR",
    "UserError",
    "as_user_error",
    "building",
    "check_config",
    "check_fit_split",
    "component_class",
    "instantiate",
]
