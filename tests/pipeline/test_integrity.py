"""Results that cannot go stale and runs that cannot overwrite each other: a changed accountant, data edited in
place, a damaged teacher, two runs started together, and the ledger's replay under both relations."""

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import pate.pipeline.graph
import pate.pipeline.teachers
import teachers.ensemble
from pate.data.celeba import ATTRIBUTE_FILE
from pate.pipeline import run
from pate.pipeline.checks import instantiate
from pate.privacy import Ledger
from tests.conftest import compose_config

pytestmark = pytest.mark.slow  # command lines, end-to-end runs or heavy computations: not in the fast loop

REPO = Path(__file__).resolve().parents[2]
# GaussianPATE: the test patches its sensitivity
FIXED_NOISE = ("privacy.target_epsilon=null", "aggregator.sigma=3.0", "aggregator=gaussian_pate")


def _spy(monkeypatch, module, name) -> list:
    calls = []
    real = getattr(module, name)

    def spy(*args, **kwargs):
        calls.append(args)
        return real(*args, **kwargs)

    monkeypatch.setattr(module, name, spy)
    return calls


def test_a_changed_sensitivity_rebuilds_the_aggregate_and_reports_the_new_epsilon(tiny_cfg, tmp_path, monkeypatch):
    cfg = tiny_cfg(*FIXED_NOISE)
    first = run(cfg, output_dir=tmp_path / "a")
    import pate.aggregators.gaussian_pate as gaussian

    real = gaussian.count_l2_sensitivity
    monkeypatch.setattr(gaussian, "count_l2_sensitivity", lambda *a: 2 * real(*a))
    builds = _spy(monkeypatch, pate.pipeline.graph, "build_aggregate")
    second = run(cfg, output_dir=tmp_path / "b")
    assert len(builds) == 1, "the aggregate was served from the cache after its cost changed"
    assert second["artifacts"]["aggregate"] != first["artifacts"]["aggregate"]
    assert second["artifacts"]["votes"] == first["artifacts"]["votes"]
    aggregator = instantiate(cfg.aggregator, "aggregator")
    expected = Ledger().compose(aggregator, count=cfg.data.num_queries).get_epsilon(cfg.privacy.delta, "rdp").epsilon
    assert second["epsilon"] == pytest.approx(expected, rel=1e-12) and second["epsilon"] > 1.5 * first["epsilon"]


@pytest.mark.parametrize("neighbors", ["replace", "add_remove"])
def test_the_reported_epsilon_is_the_replay_of_the_ledger(neighbors, tiny_cfg, tmp_path):
    metrics = run(tiny_cfg(f"privacy.neighbors={neighbors}"), output_dir=tmp_path)
    cache = Path(tiny_cfg().paths.cache_dir)
    recorded = Ledger.load(cache / "aggregate" / metrics["artifacts"]["aggregate"] / "ledger.json")
    replayed = Ledger.replay(recorded.history)
    assert replayed.neighbors == neighbors == metrics["neighbors"]
    assert (
        metrics["epsilon"]
        == replayed.get_epsilon(metrics["delta"], "rdp").epsilon
        == recorded.get_epsilon(metrics["delta"], "rdp").epsilon
    )
    assert "replayed from 1 cost event" in metrics["privacy_accounting"]


def _flip_private_labels(root: Path, rows: int) -> None:
    """Negate every attribute of the first ``rows`` images of the training split in list_attr_celeba.txt."""
    path = root / ATTRIBUTE_FILE
    lines = path.read_text().splitlines()
    train = {
        line.split()[0]
        for line in (root / "list_eval_partition.txt").read_text().splitlines()
        if line.split()[1] == "0"
    }
    flipped = 0
    for n, line in enumerate(lines[2:], start=2):
        name, *values = line.split()
        if name in train and flipped < rows:
            lines[n] = " ".join([name, *("-1" if v == "1" else "1" for v in values)])
            flipped += 1
    path.write_text("\n".join(lines) + "\n")


def test_labels_edited_in_place_retrain_the_teachers(tmp_path, monkeypatch):
    """Real CelebA files edited in place (the synthetic set would repair itself: it is regenerated when its
    files change), here a copy of the tiny synthetic set read as CelebA."""
    synthetic = compose_config(["debug=tiny"], tmp_path)
    run(synthetic, output_dir=tmp_path / "generate")
    celeba = tmp_path / "celeba"
    shutil.copytree(synthetic.data.root, celeba, ignore=shutil.ignore_patterns(".*"))
    cfg = compose_config(["debug=tiny", "data=celeba", f"data.root={celeba}"], tmp_path)
    first = run(cfg, output_dir=tmp_path / "a")
    _flip_private_labels(celeba, rows=50)
    fits = _spy(monkeypatch, pate.pipeline.teachers, "build_head_teachers")
    second = run(cfg, output_dir=tmp_path / "b")
    assert len(fits) == 1, "the teachers were served from the cache after their labels changed"
    assert second["artifacts"]["teachers"] != first["artifacts"]["teachers"]
    assert second["artifacts"]["partition"] != first["artifacts"]["partition"]  # the data key changed


def test_one_flipped_byte_in_one_teacher_retrains_exactly_that_teacher(tiny_cnn_cfg, tmp_path, monkeypatch):
    cfg = tiny_cnn_cfg(f"paths.cache_dir={tmp_path / 'cache'}")
    uninterrupted = run(cfg, output_dir=tmp_path / "a")
    cache = tmp_path / "cache"
    teacher = cache / "teachers" / uninterrupted["artifacts"]["teachers"] / "teacher_0002.pt"
    blob = bytearray(teacher.read_bytes())
    blob[len(blob) // 2] ^= 0xFF
    teacher.write_bytes(bytes(blob))
    for stage in ("votes", "aggregate", "student"):  # so that the next run needs the teachers again
        for path in (cache / stage).iterdir():
            path.rename(path.with_name(path.name + ".old"))
    trained = _spy(monkeypatch, teachers.ensemble, "_train_one")
    again = run(cfg, output_dir=tmp_path / "b")
    assert [args[5]["teacher"] for args in trained] == [2]
    assert (cache / "teachers" / f"{uninterrupted['artifacts']['teachers']}.damaged-0" / "teacher_0002.pt").exists()
    drop = ("versions", "host")
    assert {k: v for k, v in again.items() if k not in drop} == {
        k: v for k, v in uninterrupted.items() if k not in drop
    }


def test_two_runs_started_together_keep_their_own_metrics(tmp_path):
    env = {**os.environ, "PROJECT_ROOT": str(tmp_path), "OMP_NUM_THREADS": "1"}
    commands = [
        [sys.executable, str(REPO / "train.py"), "debug=tiny", f"aggregator={name}", "trainer.num_workers=0"]
        for name in ("gaussian_pate", "tau_pate")
    ]
    processes = [
        subprocess.Popen(c, cwd=REPO, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        for c in commands
    ]
    outputs = [p.communicate(timeout=600)[0] for p in processes]
    assert [p.returncode for p in processes] == [0, 0], outputs
    found = sorted((tmp_path / "logs" / "debug" / "runs").glob("*/metrics.json"))
    assert len(found) == 2, found
    assert sorted(json.loads(f.read_text())["method"] for f in found) == ["gaussian_pate", "tau_pate"]
    assert not np.any([f.parent == found[0].parent for f in found[1:]])


def test_an_artifact_copied_over_another_configs_key_is_detected_and_rebuilt(tmp_path, caplog):
    """A group member copies one config's release over another's key: the rerun moves it aside, rebuilds, and its
    metrics are those of a clean run."""
    one, two = (
        compose_config(["debug=tiny", *FIXED_NOISE[:1], f"aggregator.sigma={sigma}"], tmp_path) for sigma in (3.0, 4.0)
    )
    first, clean = run(one, output_dir=tmp_path / "one"), run(two, output_dir=tmp_path / "two")
    aggregate = tmp_path / "cache" / "aggregate"
    target = aggregate / clean["artifacts"]["aggregate"]
    shutil.rmtree(target)
    shutil.copytree(aggregate / first["artifacts"]["aggregate"], target)  # a group member's slip in a shared cache
    again = run(two, output_dir=tmp_path / "again")
    # the metrics of a clean run, not a mix of two releases; "host" says when each run finished (to the second), so
    # it differs whenever the two runs end in different seconds (a slow machine)
    assert {**again, "host": None} == {**clean, "host": None}
    assert (aggregate / f"{target.name}.damaged-0").is_dir()
    assert "it was copied or moved from another artifact" in caplog.text
