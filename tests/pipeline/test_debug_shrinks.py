"""debug=tiny only shrinks (conf/debug/tiny.yaml): the method and the aggregator are the ones asked for, every
method fits the tiny split, and the README's sweep runs one job per method, each the method its label names."""

import csv
import json
from pathlib import Path

import pytest

from tests.cli import run_cli
from tests.conftest import compose_config

REPO = Path(__file__).resolve().parents[2]
SWEEP_METHODS = ("stable_topk_gumbel", "stable_topk_paper", "gaussian_pate", "tau_pate", "dp_sgd", "private_knn")


@pytest.mark.parametrize(
    "overrides, target",
    [
        ([], "pate.aggregators.TauPATE"),  # the default aggregator
        (["aggregator=stable_topk_gumbel"], "pate.aggregators.StableTopK"),
        (["compare=gaussian_pate"], "pate.aggregators.GaussianPATE"),
    ],
)
def test_debug_keeps_the_aggregator(overrides, target):
    assert compose_config([*overrides, "debug=tiny"]).aggregator._target_ == target


def test_debug_shrinks_each_method_to_the_tiny_split_and_nothing_else():
    for method, key, full, tiny in (("dp_sgd", "expected_batch_size", 4096, 64), ("private_knn", "k", 800, 20)):
        assert compose_config([f"method={method}"]).method[key] == full
        shrunk = compose_config([f"method={method}", "debug=tiny"])
        assert shrunk.method[key] == tiny
        assert shrunk.method._target_ == compose_config([f"method={method}"]).method._target_
        assert compose_config([f"method={method}", "debug=tiny", f"method.{key}=7"]).method[key] == 7


def _tiny_sweep(experiment: str, root: Path, out: Path, methods, *overrides: str) -> None:
    """``python train.py -m experiment=<experiment> debug=tiny [overrides]``: every job finished, one per method of
    ``methods``."""
    done = run_cli(
        "train.py",
        [
            "-m",
            f"experiment={experiment}",
            "debug=tiny",
            *overrides,
            f"paths.root_dir={root}",
            f"hydra.sweep.dir={out}",
        ],
        cwd=REPO,
    )
    assert done.returncode == 0, done.stderr[-4000:]
    with open(out / "results.csv") as fh:
        rows = list(csv.DictReader(fh))
    assert sorted(row["method"] for row in rows) == sorted(methods)
    assert all(row["status"] == "finished" for row in rows)


@pytest.mark.slow
def test_the_readme_sweep_runs_under_debug_one_job_per_method(shared_root, tmp_path):
    out = tmp_path / "sweep"
    _tiny_sweep("eps_sweep", shared_root, out, SWEEP_METHODS)
    report = (out / "report.md").read_text()
    assert all(f"`{method}`" in report for method in SWEEP_METHODS)
    kinds = {
        "stable_topk": "StableTopK(",
        "gaussian_pate": "GaussianPATE(",
        "tau_pate": "TauPATE(",
        "dp_sgd": "DP-SGD(",
        "private_knn": "PrivateKNN(",
    }
    for metrics in out.glob("*/metrics.json"):
        record = json.loads(metrics.read_text())
        name = record.get("aggregator") or record["mechanism"]
        assert name.startswith(next(kind for label, kind in kinds.items() if record["method"].startswith(label)))


@pytest.mark.slow
def test_a_job_that_would_run_another_method_than_its_label_is_refused_up_front(shared_root, tmp_path):
    out = tmp_path / "sweep"
    done = run_cli(
        "train.py",
        [
            "-m",
            "debug=tiny",
            "compare=tau_pate,gaussian_pate",
            "aggregator=stable_topk_gumbel",
            f"paths.root_dir={shared_root}",
            f"hydra.sweep.dir={out}",
        ],
        cwd=REPO,
    )
    assert done.returncode == 2
    errors = [line for line in done.stderr.splitlines() if line.startswith("error:")]
    assert len(errors) == 1 and errors[0].startswith("error: job 0 (") and "no job was started" in errors[0]
    assert (
        "compare=tau_pate selects aggregator=tau_pate, but the job's config runs aggregator=stable_topk_gumbel"
        in errors[0]
    )
    assert not list(out.glob("*/metrics.json"))


@pytest.mark.slow
def test_the_person_sweep_runs_under_debug_one_person_level_job_per_method(shared_root, tmp_path):
    """experiment=person_sweep on the tiny set's people (2 images each under debug, 20 in the sweep): every job
    runs its method at person level, user-level DP-SGD and Private-kNN over people with their own settings."""
    full = compose_config(["experiment=person_sweep", "compare=dp_sgd_by_person"])
    assert full.data.synthetic.images_per_person == 20 and full.privacy.unit == "person"
    assert full.method.expected_batch_size == 1024
    assert [(r.from_epsilon, r.epochs) for r in full.method.probe_recipes] == [(0, 3), (2, 10), (8, 20)]
    group = compose_config(["experiment=person_sweep", "compare=dp_sgd_by_group"])
    assert group.method.group_size == 35 == group.data.synthetic.max_images_per_person
    assert [(r.from_epsilon, r.epochs) for r in group.method.probe_recipes] == [(0, 1), (8, 3)]
    knn = compose_config(["experiment=person_sweep", "compare=private_knn_by_person"]).method
    assert (knn.k, knn.sampling_rate, knn.recipes) == (400, 0.3, [])
    out = tmp_path / "sweep"
    # the references (a second training of each method without noise) are the README sweep's test's to run
    _tiny_sweep(
        "person_sweep",
        shared_root,
        out,
        ("dp_sgd", "dp_sgd+group", "gaussian_pate", "private_knn", "tau_pate"),
        "references=false",
    )
    for metrics in out.glob("*/metrics.json"):
        record = json.loads(metrics.read_text())
        assert record["person_level"] and "one person of the private split" in record["privacy_unit"], record
    report = (out / "report.md").read_text()
    assert "person-level" in report and "record-level" not in report  # no line of it claims another unit
