"""A report verifies what it prints: every finished job's epsilon is replayed from the ledger of the release its
metrics.json names (``artifacts``), in the cache the job ran with, and a recorded figure that disagrees is refused
by job number. A report never copies a privacy number from metrics.json unchecked: a job whose release is no
longer in the cache is listed as unverified in the report and on the console.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

from omegaconf import OmegaConf

from pate.aggregate import LEDGER_FILE, replay_privacy
from pate.artifacts import read_artifact

__all__ = ["cache_dir_of", "verify_epsilon"]

RELEASE_STAGE = "aggregate"  # every method's release (labels and ledger.json) is an artifact of this stage
TOLERANCE = 1e-9


def cache_dir_of(config: dict[str, Any], base: Path) -> Path:
    """The job's ``paths.cache_dir``, resolved as the run resolved it (``PROJECT_ROOT`` or the working directory,
    here ``base``)."""
    paths = OmegaConf.create(
        {
            "paths": {
                key: value for key, value in (config.get("paths") or {}).items() if key in ("root_dir", "cache_dir")
            }
        }
    )
    cache = Path(str(OmegaConf.select(paths, "paths.cache_dir", default="cache")))
    return cache if cache.is_absolute() else base / cache


def verify_epsilon(job: str, metrics: dict[str, Any], cache_dir: Path) -> str | None:
    """Replay the job's epsilon from its release's ``ledger.json`` and compare it with metrics.json.

    Returns None when they agree, or why the job could not be verified (its release is not in ``cache_dir``).
    Raises ValueError naming the job when the recorded epsilon or relation disagrees with the replay
    (``pate.aggregate.replay_privacy``, as the run computed it): a report must not print it.
    """
    artifact = None
    for key in (metrics.get("artifacts") or {}).values():
        candidate = read_artifact(cache_dir, RELEASE_STAGE, str(key))
        if candidate is not None and candidate.has(LEDGER_FILE):
            artifact = candidate
            break
    if artifact is None:
        return f"job {job}: no intact release artifact of {sorted((metrics.get('artifacts') or {}))} in the cache"
    delta = float(metrics["delta"])
    # the run's own replay, with today's accountants; a record from before privacy.accountant was priced by RDP
    replayed = replay_privacy(artifact, delta, str(metrics.get("accountant", "rdp")))
    epsilon, relation = replayed["epsilon"], str(replayed["neighbors"])
    where = f"{RELEASE_STAGE}/{artifact.key}/{LEDGER_FILE}"
    if relation != metrics["neighbors"]:
        raise ValueError(
            f"job {job}: metrics.json says neighbors={metrics['neighbors']!r}, its ledger ({where}) "
            f"was composed under neighbors={relation!r}"
        )
    if not math.isclose(epsilon, float(metrics["epsilon"]), rel_tol=TOLERANCE, abs_tol=1e-12):
        raise ValueError(
            f"job {job}: metrics.json says epsilon={metrics['epsilon']!r}, its ledger ({where}) replays "
            f"to epsilon={epsilon!r} at delta={delta:g} (neighbors={metrics['neighbors']}); the report "
            f"prints no epsilon that its cost events do not give"
        )
    return None
