"""A privacy budget per private dataset (pate/budget.py, pate/pipeline/budget.py): every release drawn with secret
noise on the data is counted before its noise is drawn, a second release of the same quantity is announced before
it is drawn, a cap refuses before any compute, and a run never draws again what it has shown."""

from __future__ import annotations

import json
import logging
import shutil
from pathlib import Path

import numpy as np
import pytest
from omegaconf import open_dict

import pate.artifacts as artifacts
from pate.aggregate import LEDGER_FILE, read_aggregate
from pate.artifacts import ArtifactStore, read_artifact
from pate.budget import BudgetLedger
from pate.cache import prune
from pate.errors import UserError
from pate.pipeline.runner import prepare, run
from pate.privacy import Ledger
from tests.conftest import compose_config

SECOND = "this run draws a SECOND release of the same private data and settings"


def _entries(tmp_path: Path) -> list:
    return BudgetLedger(tmp_path / "budget").entries()


def _cfg(shared_root: Path, tmp_path: Path, *overrides: str):
    """debug=tiny with secret noise, its data shared by the session, its cache, budget and run directory its own."""
    cfg = compose_config(["debug=tiny", "privacy.noise=secure", "privacy.target_epsilon=10", *overrides], shared_root)
    with open_dict(cfg):
        cfg.paths.cache_dir = str(tmp_path / "cache")
        cfg.paths.budget_dir = str(tmp_path / "budget")
    return cfg


def _labels(tmp_path: Path, metrics: dict) -> np.ndarray:
    return read_aggregate(read_artifact(tmp_path / "cache", "aggregate", metrics["artifacts"]["aggregate"]))["labels"]


def _events(tmp_path: Path, key: str) -> list:
    return list(Ledger.load(tmp_path / "cache" / "aggregate" / key / LEDGER_FILE).history)


@pytest.fixture
def code_change(monkeypatch):
    """Edit the aggregate's code as `echo '_X = 1' >> pate/aggregate.py` would: every stage whose code closure holds
    pate.aggregate gets another fingerprint, hence another key; what it computes (its definition) is unchanged."""
    original = artifacts.code_fingerprint
    edits = []

    def edit() -> None:
        edits.append(len(edits))
        monkeypatch.setattr(
            artifacts,
            "code_fingerprint",
            lambda modules: original(modules) + ("-edit%d" % len(edits) if "pate.aggregate" in modules else ""),
        )

    return edit


def test_a_code_change_announces_a_second_release_and_the_total_composes_both(
    shared_root, tmp_path, code_change, caplog
):
    caplog.set_level(logging.INFO)
    first = run(_cfg(shared_root, tmp_path), tmp_path / "run1")
    assert first["dataset_budget"]["this_release"] == "drawn" and first["dataset_budget"]["releases"] == 1
    assert first["dataset_epsilon"] == pytest.approx(first["epsilon"], rel=1e-9)
    assert "dataset_budget.dataset" in first["not_covered_by_epsilon"]["keys"]

    again = run(_cfg(shared_root, tmp_path), tmp_path / "rerun")  # the same release, reused: nothing added
    assert again["dataset_budget"]["this_release"] == "reused" and again["dataset_budget"]["releases"] == 1

    code_change()
    caplog.clear()
    second = run(_cfg(shared_root, tmp_path), tmp_path / "run2")
    assert second["artifacts"]["aggregate"] != first["artifacts"]["aggregate"]
    messages = [record.getMessage() for record in caplog.records]
    announced = next(i for i, m in enumerate(messages) if SECOND in m)
    drawn = next(i for i, m in enumerate(messages) if m.startswith("aggregate: building"))
    assert announced < drawn, "the second release must be announced before its noise is drawn"
    both = _events(tmp_path, first["artifacts"]["aggregate"]) + _events(tmp_path, second["artifacts"]["aggregate"])
    expected = Ledger.replay(both, neighbors="replace").get_epsilon(1e-6, second["accountant"]).epsilon
    assert second["dataset_budget"]["releases"] == 2
    assert second["dataset_epsilon"] == pytest.approx(expected, rel=1e-9)
    assert second["dataset_epsilon"] > second["epsilon"] * 1.2
    assert "over 2 release(s) on this private data" in second["dataset_privacy"]

    # a cap at what one release costs refuses a third one before any compute: no stage is built
    code_change()
    built = sorted(p.name for p in (tmp_path / "cache").rglob("*"))
    with pytest.raises(
        UserError,
        match=r"privacy.dataset_budget=.*would take the total spent on this private data to "
        r"epsilon .*spent so far: epsilon = ",
    ):
        prepare(_cfg(shared_root, tmp_path, f"privacy.dataset_budget={first['epsilon'] * 1.01}"))
    assert sorted(p.name for p in (tmp_path / "cache").rglob("*")) == built
    assert len(_entries(tmp_path)) == 2

    # reuse_release: the last release of the same quantity is reused, nothing drawn, nothing added
    reused = run(_cfg(shared_root, tmp_path, "privacy.reuse_release=true"), tmp_path / "run3")
    assert reused["dataset_budget"]["this_release"] == "reused_earlier"
    assert reused["artifacts"]["aggregate"] == second["artifacts"]["aggregate"]
    assert np.array_equal(_labels(tmp_path, reused), _labels(tmp_path, second))
    assert reused["dataset_budget"]["releases"] == 2 and reused["epsilon"] == pytest.approx(second["epsilon"])


def test_a_seeded_run_spends_no_budget(shared_root, tmp_path):
    metrics = run(_cfg(shared_root, tmp_path, "privacy.noise=seeded"), tmp_path / "run")
    assert metrics["dataset_epsilon"] is None and metrics["dataset_budget"] is None
    assert not (tmp_path / "budget").exists()


def _during_the_student(monkeypatch, action) -> None:
    """Run ``action`` once, when the run first asks for its student: after its release was read and shown."""
    original = ArtifactStore.get
    done = []

    def get(self, stage):
        if stage.name == "student" and not done:
            done.append(True)
            action()
        return original(self, stage)

    monkeypatch.setattr(ArtifactStore, "get", get)


def test_prune_during_a_run_keeps_what_the_run_holds(shared_root, tmp_path, monkeypatch):
    """`pate-cache prune --logs` with no metrics.json naming the run's artifacts, run while the run trains its
    student: the run's release and everything it reads is held, so nothing of it is removed and nothing redrawn."""
    (tmp_path / "no_logs").mkdir()
    removed = []
    _during_the_student(monkeypatch, lambda: removed.extend(prune(tmp_path / "cache", tmp_path / "no_logs")))
    metrics = run(_cfg(shared_root, tmp_path), tmp_path / "run")
    assert removed == []
    assert read_artifact(tmp_path / "cache", "aggregate", metrics["artifacts"]["aggregate"]) is not None
    assert len(_entries(tmp_path)) == 1
    # once the run has ended nothing holds them: the same prune removes them
    assert any(entry.stage == "aggregate" for entry in prune(tmp_path / "cache", tmp_path / "no_logs"))


def test_a_release_deleted_during_the_run_stops_it_without_a_second_draw(shared_root, tmp_path, monkeypatch):
    cfg = _cfg(shared_root, tmp_path)
    release = prepare(cfg)[0].release.labels
    _during_the_student(monkeypatch, lambda: shutil.rmtree(tmp_path / "cache" / "aggregate" / release.key))
    with pytest.raises(
        UserError,
        match=r"was deleted while the run went on .* this run stops rather than draw a "
        r"second release of the same data",
    ):
        run(cfg, tmp_path / "run")
    assert len(_entries(tmp_path)) == 1  # drawn once, counted once
    assert not (tmp_path / "cache" / "aggregate" / release.key).exists()


def test_a_damaged_budget_entry_refuses_the_run_in_one_line(shared_root, tmp_path):
    run(_cfg(shared_root, tmp_path), tmp_path / "run")
    (entry,) = list((tmp_path / "budget" / "entries").glob("*.json"))
    entry.write_bytes(entry.read_bytes()[: entry.stat().st_size // 2])  # truncated
    shutil.rmtree(tmp_path / "cache" / "aggregate")
    with pytest.raises(
        UserError,
        match=rf"file {entry} is damaged or missing .* no release on this data is drawn "
        r"until it is restored",
    ):
        prepare(_cfg(shared_root, tmp_path))


def test_a_damaged_secret_release_is_one_line_and_exit_2(shared_root, tmp_path):
    """The CLI: a secure release whose manifest lost an entry (or whose file was edited) is refused in one line on
    stderr, exit 2, naming the directory; no traceback."""
    from tests.cli import run_cli

    args = [
        "debug=tiny",
        "privacy.noise=secure",
        "privacy.target_epsilon=10",
        f"paths.root_dir={tmp_path}",
        f"paths.data_dir={shared_root / 'data'}",
        f"hydra.run.dir={tmp_path / 'run'}",
    ]
    done = run_cli("train.py", args, cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    metrics = json.loads((tmp_path / "run" / "metrics.json").read_text())
    path = tmp_path / "cache" / "aggregate" / metrics["artifacts"]["aggregate"]
    manifest = json.loads((path / "manifest.json").read_text())
    del manifest["files"]["aggregate.npz"]
    (path / "manifest.json").write_text(json.dumps(manifest))
    done = run_cli("train.py", args, cwd=tmp_path)
    assert done.returncode == 2
    errors = [line for line in done.stderr.splitlines() if line.startswith("error:")]
    assert len(errors) == 1 and str(path) in errors[0] and "aggregate.npz (not in the manifest)" in errors[0]
    assert "Traceback" not in done.stderr


def test_another_decoding_of_the_same_records_draws_on_the_same_budget(shared_root, tmp_path):
    """A record is its file and its labels, not its decoded pixels: the same private records decoded at another
    size give another release (other keys, another definition) counted in the same total."""
    first = run(_cfg(shared_root, tmp_path), tmp_path / "run1")
    other = run(_cfg(shared_root, tmp_path, "data.image_size=8"), tmp_path / "run2")
    assert other["artifacts"]["aggregate"] != first["artifacts"]["aggregate"]
    assert other["dataset_budget"]["dataset"] == first["dataset_budget"]["dataset"]
    assert other["dataset_budget"]["releases"] == 2 and other["dataset_epsilon"] > other["epsilon"] * 1.2


def test_releases_under_another_relation_leave_the_total_unpriced(shared_root, tmp_path):
    run(_cfg(shared_root, tmp_path), tmp_path / "run1")
    other = run(_cfg(shared_root, tmp_path, "privacy.neighbors=add_remove"), tmp_path / "run2")
    assert other["dataset_epsilon"] is None and other["dataset_budget"]["other_relations"] == 1
    assert other["dataset_privacy"].startswith("NOT PRICED: 1 of the 2 release(s) on this private data")
    with pytest.raises(UserError, match="would take the total spent on this private data to an unpriced total"):
        prepare(_cfg(shared_root, tmp_path, "privacy.dataset_budget=1000", "privacy.target_epsilon=3"))


def test_a_secret_release_that_declares_no_cost_is_refused(shared_root, tmp_path, monkeypatch):
    import dataclasses

    from pate.pipeline.methods.pate import PATE

    release = PATE.release
    monkeypatch.setattr(
        PATE, "release", lambda self, data, shared: dataclasses.replace(release(self, data, shared), cost=None)
    )
    with pytest.raises(UserError, match=r"its release draws secret noise but declares no cost \(Release.cost\)"):
        prepare(_cfg(shared_root, tmp_path))


def test_a_pinned_release_that_disappears_is_refused_before_anything_is_recorded(shared_root, tmp_path, code_change):
    first = run(_cfg(shared_root, tmp_path), tmp_path / "run1")
    code_change()
    graph = prepare(_cfg(shared_root, tmp_path, "privacy.reuse_release=true"))[0]
    assert graph.release.labels.key == first["artifacts"]["aggregate"]
    shutil.rmtree(tmp_path / "cache" / "aggregate" / first["artifacts"]["aggregate"])
    with pytest.raises(UserError, match="privacy.reuse_release=true: the earlier release .* disappeared"):
        ArtifactStore(tmp_path / "cache", guard=graph.budget).get(graph.release.labels)
    assert len(_entries(tmp_path)) == 1
