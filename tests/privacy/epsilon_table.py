"""Every epsilon the project prints, as one table: the regression guard of the accounting.

``table()`` computes, with the code of the day, (a) the per-query RDP curve of every aggregator and selection
mechanism on the default orders, (b) the epsilon a ledger reports for them, (c) the noise each committed
experiment config calibrates to and the epsilon its run prints, and (d) the calibrated parameters and spent
epsilon of every top-k mechanism of ``conf/topk.yaml`` in every ``conf/topk_experiment`` -- under both
relations. ``tests/privacy/data/epsilon_table.json`` holds the table as computed before the cost-event
refactor (issue 24); ``test_epsilon_regression.py`` asks that today's code gives the same numbers to 1e-9.

Regenerate (only when a number is meant to change, and say why in the commit):

    python -m tests.privacy.epsilon_table > tests/privacy/data/epsilon_table.json

A new committed experiment adds rows without touching the others: ``--add-missing`` keeps every number of the
table as it is and adds only the keys it lacks (a number that moved still fails the test).
"""

from __future__ import annotations

import copy
import dataclasses
import functools
import json
import math
import sys
from pathlib import Path

from hydra import compose, initialize_config_dir
from hydra.core.override_parser.overrides_parser import OverridesParser
from hydra.utils import instantiate
from omegaconf import OmegaConf, open_dict

import pate.pipeline.schemas  # noqa: F401  (registers the typed schemas that conf/ extends)
from pate.aggregators import BinaryVoting, GaussianPATE, StableTopK, TauPATE
from pate.data.celeba import ATTRIBUTE_NAMES
from pate.mechanisms.gap_selection import GapSelection
from pate.mechanisms.ptr import GapTest
from pate.pipeline.sweep_checks import compare_selects
from pate.privacy import DEFAULT_ORDERS, Ledger

CONF_DIR = str(Path(__file__).resolve().parents[2] / "conf")
RELATIONS = ("replace", "add_remove")
GROUP_AXES = ("experiment", "aggregator")  # config groups: composed; every other axis is a value
TABLE_FILE = Path(__file__).resolve().parent / "data" / "epsilon_table.json"


def _mechanisms(relation: str) -> dict[str, object]:
    """Hand-built aggregators and selection steps, the defaults and every option that changes a curve."""
    inf = -math.inf
    return {
        "GaussianPATE(40,800,380)": GaussianPATE(40, 800, 380.0, relation),
        "GaussianPATE(5,50,12.5)": GaussianPATE(5, 50, 12.5, relation),
        "BinaryVoting(40,400,106.793)": BinaryVoting(40, 400, 106.793, relation),
        "TauPATE(40,800,190,10,l1)": TauPATE(40, 800, 190.0, 10.0, "l1", relation),
        "TauPATE(40,800,190,10,l2)": TauPATE(40, 800, 190.0, 10.0, "l2", relation),
        "TauPATE(100,250,80,3,l2)": TauPATE(100, 250, 80.0, 3.0, "l2", relation),
        "StableTopK(gumbel .0333, gaussian 60)": StableTopK(
            40, 800, "gumbel", eps_select=0.0333, sigma_test=60.0, delta_t=1e-9, neighbors=relation
        ),
        "StableTopK(gaussian 50, gaussian 60)": StableTopK(
            40, 800, "gaussian", sigma_select=50.0, sigma_test=60.0, delta_t=1e-9, neighbors=relation
        ),
        "StableTopK(laplace 20, laplace .1)": StableTopK(
            40, 800, "laplace", sigma_select=20.0, test="laplace", eps_test=0.1, delta_t=1e-7, neighbors=relation
        ),
        "StableTopK(gumbel .5, max_k 5)": StableTopK(
            40, 800, "gumbel", eps_select=0.5, sigma_test=30.0, delta_t=1e-8, max_k=5, neighbors=relation
        ),
        "StableTopK(gaussian 10, regularized)": StableTopK(
            4,
            20,
            "gaussian",
            sigma_select=10.0,
            sigma_test=12.0,
            delta_t=1e-6,
            regularizer=(0.0, 1.0, inf, 0.5, inf),
            neighbors=relation,
        ),
        "GapSelection(laplace 7)": GapSelection(40, 800, "laplace", sigma=7.0, neighbors=relation),
        "GapSelection(gaussian 3, max_k 10)": GapSelection(
            40, 800, "gaussian", sigma=3.0, max_k=10, neighbors=relation
        ),
        "GapTest(laplace .3)": GapTest("laplace", 1e-6, epsilon=0.3, neighbors=relation),
    }


def _ledger_epsilons(mechanism) -> dict[str, float]:
    out = {}
    for count, delta in ((1, 1e-5), (600, 1e-6), (10_000, 1e-3)):
        ledger = Ledger().compose(mechanism, count=count)
        if delta > ledger.delta_t:
            out[f"epsilon(count={count}, delta={delta:g})"] = ledger.get_epsilon(delta, "rdp").epsilon
    return out


def mechanism_rows() -> dict[str, float]:
    rows = {}
    for relation in RELATIONS:
        for label, mechanism in _mechanisms(relation).items():
            curve = mechanism.rdp(DEFAULT_ORDERS)
            for order, value in zip(DEFAULT_ORDERS, curve):
                rows[f"{relation} | {label} | rdp(alpha={order:g})"] = float(value)
            rows[f"{relation} | {label} | delta_per_query"] = float(mechanism.delta_per_query)
            for key, value in _ledger_epsilons(mechanism).items():
                rows[f"{relation} | {label} | {key}"] = value
    return rows


def _experiment_jobs() -> list[tuple[str, list[str]]]:
    """(label, overrides) of every job of every committed experiment config whose privacy settings differ,
    plus the default run; the sweep axes that do not touch privacy (seed, student) are left out."""
    privacy_axes = ("aggregator", "privacy.target_epsilon", "data.num_queries", "partition.num_teachers")
    jobs = [("default", [])]
    for path in sorted(Path(CONF_DIR, "experiment").glob("*.yaml")):
        name = path.stem
        params = dict((OmegaConf.load(path).get("hydra") or {}).get("sweeper", {}).get("params", {}))
        if "compare" in params:  # the method axis: its PATE members are the aggregator axis the table was made with
            # (DP-SGD and Private-kNN came later; tests/student/test_dp_sgd.py and test_private_knn.py price them)
            # (their entries select no aggregator)
            params["aggregator"] = ",".join(
                value for value in str(params.pop("compare")).split(",") if "aggregator" in compare_selects(value)
            )
        grid = [[]]
        for axis in privacy_axes:
            if axis in params:
                grid = [job + [f"{axis}={value}"] for job in grid for value in str(params[axis]).split(",")]
        jobs += [(f"experiment={name} {' '.join(job)}".strip(), [f"experiment={name}", *job]) for job in grid]
    return jobs


@functools.lru_cache(maxsize=None)
def _compose_group_choices(choices: tuple[str, ...]):
    with initialize_config_dir(config_dir=CONF_DIR, version_base="1.3"):
        return compose(config_name="train", overrides=list(choices))


def _compose_job(overrides: tuple[str, ...]):
    """The config a job's ``overrides`` compose to. Composing costs a tenth of a second and 108 jobs share 21
    choices of config group (``experiment=``, ``aggregator=``), so each choice is composed once and the job's value
    overrides (``privacy.target_epsilon=8``) are set on a copy as Hydra sets them: parsed by its override grammar.
    ``tests/privacy/test_epsilon_regression.py`` checks that this equals composing every job."""
    choices = tuple(o for o in overrides if o.split("=", 1)[0] in GROUP_AXES)
    cfg = copy.deepcopy(_compose_group_choices(choices))
    for override in OverridesParser.create().parse_overrides([o for o in overrides if o not in choices]):
        OmegaConf.update(cfg, override.key_or_group, override.value(), merge=False)
    return cfg


def experiment_rows() -> dict[str, float]:
    """The calibrated noise, the printed epsilon (by the run's accountant) and the RDP bound beside it of every
    committed experiment job, both relations."""
    from pate.aggregate import release_ledger  # the run's own ledger of a release
    from pate.pipeline.methods.pate import prepare_aggregator  # the run's own calibration path

    rows = {}
    for label, overrides in _experiment_jobs():
        composed = _compose_job(tuple(overrides))
        for relation in RELATIONS:
            cfg = copy.deepcopy(composed)
            with open_dict(cfg):
                cfg.hydra = None  # a compose() outside a run: no Hydra runtime
                cfg.data.num_labels = len(ATTRIBUTE_NAMES)  # every committed experiment reads CelebA's 40
                cfg.privacy.neighbors = relation  # as the override privacy.neighbors=<relation> sets it
            aggregator, _, asked = prepare_aggregator(cfg)
            delta = float(cfg.privacy.delta)
            prefix = f"{relation} | {label}"
            for key, value in aggregator.noise_parameters().items():
                rows[f"{prefix} | {key}"] = float(value)
            ledger = release_ledger(aggregator, asked)  # priced as the run prices it (privacy.accountant)
            rows[f"{prefix} | epsilon"] = ledger.get_epsilon(delta, str(cfg.privacy.accountant)).epsilon
            rows[f"{prefix} | epsilon_rdp"] = ledger.get_epsilon(delta, "rdp").epsilon
    return rows


def _numeric_fields(mechanism) -> dict[str, float]:
    """Every float constructor argument of a mechanism (its calibrated noise and budget split)."""
    return {
        f.name: float(getattr(mechanism, f.name))
        for f in dataclasses.fields(mechanism)
        if f.init and isinstance(getattr(mechanism, f.name), float)
    }


def topk_rows() -> dict[str, float]:
    """Calibrated parameters and spent epsilon of every top-k mechanism in every committed top-k experiment."""
    from pate.experiments.topk.grid import (
        _build,  # the grid's own calibration call
        settings_for,
    )

    rows = {}
    with initialize_config_dir(config_dir=CONF_DIR, version_base="1.3"):
        for experiment in sorted(p.stem for p in Path(CONF_DIR, "topk_experiment").glob("*.yaml")):
            for relation in RELATIONS:
                cfg = compose(config_name="topk", overrides=[f"topk_experiment={experiment}", f"neighbors={relation}"])
                spec = cfg.topk_experiment
                settings = settings_for(OmegaConf.to_container(spec.data, resolve=True), spec.ks, spec.delta)
                factories = {name: instantiate(cfg.mechanisms[name]) for name in sorted(cfg.mechanisms)}
                for setting in settings[:2]:  # repeated: the first two intervals stand for all (same shape)
                    for epsilon in spec.epsilons:
                        for k in setting.ks:
                            kbar = min(int(cfg.kbar_factor) * k, setting.histograms.shape[1] - 1)
                            for name, factory in factories.items():
                                mechanism = _build(
                                    factory, k, float(epsilon), setting.delta, setting.queries, relation, kbar
                                )
                                prefix = (
                                    f"topk={experiment} | {relation} | {setting.label} | eps={epsilon} | k={k} | {name}"
                                )
                                for key, value in _numeric_fields(mechanism).items():
                                    rows[f"{prefix} | {key}"] = value
                                rows[f"{prefix} | spent"] = mechanism.spent(setting.queries, setting.delta)
    return rows


def table() -> dict[str, float]:
    return {**mechanism_rows(), **experiment_rows(), **topk_rows()}


if __name__ == "__main__":
    rows = table()
    if sys.argv[1:] == ["--add-missing"]:
        rows = {**rows, **json.loads(TABLE_FILE.read_text())}
    elif sys.argv[1:]:
        sys.exit(f"usage: python -m tests.privacy.epsilon_table [--add-missing]; got {sys.argv[1:]}")
    json.dump(rows, sys.stdout, indent=0, sort_keys=True)
    sys.stdout.write("\n")
