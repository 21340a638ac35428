"""Every script in examples/ runs as a user would run it, from the repository, and prints what its docstring says."""

import os
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow  # command lines: not in the fast loop

ROOT = Path(__file__).resolve().parent.parent
# what each example must print: a property of its result, not a snapshot of it
EXPECTED = {
    "aggregate_votes.py": [
        "200/200 queries answered",
        "epsilon = 4 at delta = 1e-06 (neighbours: replace",
        "one neighbour: one teacher's vote replaced",
    ],
    "custom_aggregator.py": [
        "MajorityRR(eps=",
        "200/200 queries answered",
        "the accuracy is as randomized response predicts",
        "a pate.aggregators.Aggregator: True; one query costs SelfComposedDpEvent(event=PureDpEvent(epsilon=",
        ", count=40)",
        "epsilon = 4 at delta = 1e-06 (neighbours: replace",
        "one neighbour: one teacher's vote replaced",
    ],
    "label_images.py": [
        "with pate.features.RidgeHead: accuracy",
        "this equals the run's student_accuracy",
        "covered by: epsilon = 200 at delta = 1e-06",
        "NOT a guarantee here: the noise was seeded",
        "publishable: no: the run's noise was seeded",
    ],
}


def test_every_example_is_run_here():
    scripts = [path.name for path in (ROOT / "examples").glob("*.py") if path.name != "__init__.py"]
    assert sorted(scripts) == sorted(EXPECTED)


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_the_example_runs_and_prints_its_result(name):
    done = subprocess.run(
        [sys.executable, f"examples/{name}"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
    )
    assert done.returncode == 0, done.stderr[-3000:]
    for expected in EXPECTED[name]:
        assert expected in done.stdout, (expected, done.stdout)
