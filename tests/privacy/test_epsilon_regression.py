"""Every epsilon the project prints is unchanged by a refactor of the accounting, to 1e-9 relative.

The reference table (``tests/privacy/data/epsilon_table.json``) was computed by ``tests/privacy/epsilon_table.py``
before the cost events were rewritten to describe the mathematics (issue 24): the per-query curves of every
aggregator and selection step, the ledger's epsilon for them, the calibrated noise and printed epsilon of every
committed experiment job and of every top-k mechanism in every top-k experiment, under both relations.
"""

import json
import math

import pytest

from hydra import compose, initialize_config_dir
from omegaconf import OmegaConf

from tests.privacy.epsilon_table import (
    CONF_DIR,
    GROUP_AXES,
    TABLE_FILE,
    _compose_job,
    _experiment_jobs,
    experiment_rows,
    mechanism_rows,
    topk_rows,
)

pytestmark = pytest.mark.slow  # command lines, end-to-end runs or heavy computations: not in the fast loop

REFERENCE = json.loads(TABLE_FILE.read_text())


def _compare(rows: dict[str, float]) -> None:
    part = {key for key in REFERENCE if key in rows}
    missing = sorted(set(rows) ^ part)
    assert not missing, f"rows computed now but not in the reference table: {missing[:5]}"
    assert len(rows) > 0
    mismatches = [
        (key, REFERENCE[key], rows[key])
        for key in sorted(rows)
        if not (rows[key] == REFERENCE[key] or math.isclose(rows[key], REFERENCE[key], rel_tol=1e-9))
    ]
    assert not mismatches, f"{len(mismatches)} of {len(rows)} numbers moved, e.g. {mismatches[:5]}"


@pytest.mark.parametrize("rows", [mechanism_rows, experiment_rows, topk_rows], ids=lambda f: f.__name__)
def test_every_printed_epsilon_is_unchanged(rows):
    _compare(rows())


def test_reference_table_covers_every_part():
    """The table is not empty in any part: a mechanism, an experiment job and a top-k mechanism of each kind."""
    assert sum(" | rdp(alpha=" in key for key in REFERENCE) > 1000
    assert sum(key.endswith(" | epsilon") and "experiment=" in key for key in REFERENCE) >= 100
    for name in (
        "em_cdp",
        "em_cdp_rdp",
        "pnf_peel",
        "joint",
        "limited_domain",
        "top_stable",
        "top_stable_fill",
        "stable_topk",
    ):
        assert any(key.endswith(f"| {name} | spent") for key in REFERENCE), name


def test_a_jobs_value_overrides_set_on_its_composed_group_choices_equal_composing_the_job():
    """The table composes each choice of config group once and sets the value axes on a copy: for the jobs of
    every experiment with a value axis, that config equals Hydra's composition of the job's own overrides."""
    jobs = {}
    for _, overrides in _experiment_jobs():
        if any(o.split("=", 1)[0] not in GROUP_AXES for o in overrides):
            jobs.setdefault(overrides[0], overrides)  # the first such job of each experiment
    assert len(jobs) >= 3
    # the table's compositions first: each initialises Hydra itself, which cannot nest in the context below
    by_table = {name: OmegaConf.to_yaml(_compose_job(tuple(overrides))) for name, overrides in jobs.items()}
    with initialize_config_dir(config_dir=CONF_DIR, version_base="1.3"):
        for name, overrides in jobs.items():
            composed = compose(config_name="train", overrides=list(overrides))
            assert by_table[name] == OmegaConf.to_yaml(composed), overrides
