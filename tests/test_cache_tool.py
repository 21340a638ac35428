"""``python -m pate.cache``: the listing, and a prune that removes leftovers and (with --logs) what no run uses,
never a build in progress or what a run's artifacts build on."""

import json
import threading

from pathlib import Path

from pate.artifacts import ArtifactStore, Stage
from pate.cache import _human, describe, main, prune, scan
from pate.io import exclusive_lock


def _cache(root: Path) -> tuple[Path, dict[str, str]]:
    store = ArtifactStore(root / "cache")
    base = Stage("votes", {"v": 1}, lambda work, _: (work / "votes.npy").write_bytes(b"x" * 100))
    used = Stage("aggregate", {"v": 1}, lambda work, up: (work / "a.npz").write_bytes(b"y" * 10), {"votes": base})
    unused = Stage("aggregate", {"v": 2}, lambda work, _: (work / "a.npz").write_bytes(b"z" * 10))
    keys = {name: store.get(stage).key for name, stage in (("base", base), ("used", used), ("unused", unused))}
    (root / "cache" / "votes" / "deadbeef.partial").mkdir()
    (root / "cache" / "votes" / "deadbeef.partial" / "half.npy").write_bytes(b"h" * 50)
    (root / "cache" / "aggregate" / f"{keys['unused']}.damaged-0").mkdir()
    (root / "logs" / "run").mkdir(parents=True)
    (root / "logs" / "run" / "metrics.json").write_text(json.dumps({"artifacts": {"aggregate": keys["used"]}}))
    return root / "cache", keys


def test_the_listing_counts_artifacts_per_stage_and_names_every_leftover(tmp_path):
    cache, _ = _cache(tmp_path)
    kinds = sorted((entry.stage, entry.kind) for entry in scan(cache))
    assert kinds == [
        ("aggregate", "artifact"),
        ("aggregate", "artifact"),
        ("aggregate", "damaged"),
        ("votes", "artifact"),
        ("votes", "partial"),
    ]
    text = describe(scan(cache))
    assert "aggregate          2" in text and "votes              1" in text
    assert "2 leftover(s)" in text and "deadbeef.partial  partial  50 B" in text


def test_prune_removes_leftovers_and_with_logs_what_no_run_uses(tmp_path, capsys):
    cache, keys = _cache(tmp_path)
    assert main(["prune", "--cache-dir", str(cache), "--logs", str(tmp_path / "logs"), "--dry-run"]) == 0
    assert "would remove 3 directories" in capsys.readouterr().out
    assert len(scan(cache)) == 5  # a dry run removes nothing
    removed = prune(cache)
    assert sorted(entry.kind for entry in removed) == ["damaged", "partial"]
    removed = prune(cache, tmp_path / "logs")
    assert [entry.key for entry in removed] == [keys["unused"]]
    left = {entry.key for entry in scan(cache)}
    assert left == {keys["base"], keys["used"]}  # the run's release, and the votes it was built from


def test_a_partial_whose_build_holds_the_lock_is_kept(tmp_path):
    cache, _ = _cache(tmp_path)
    held, done = threading.Event(), threading.Event()

    def build() -> None:
        with exclusive_lock(cache / "votes" / "deadbeef.lock"):
            held.set()
            done.wait(5)

    builder = threading.Thread(target=build)
    builder.start()
    held.wait()
    try:
        assert [entry.kind for entry in prune(cache)] == ["damaged"]
        assert "(a build is using it now)" in describe(scan(cache))
    finally:
        done.set()
        builder.join()
    assert [entry.kind for entry in prune(cache)] == ["partial"]


def test_a_missing_cache_is_one_line(tmp_path, capsys):
    assert main(["list", "--cache-dir", str(tmp_path / "nowhere")]) == 2
    assert capsys.readouterr().err.startswith("error: ")


def test_the_listing_counts_every_top_level_directory_the_decoded_images_too(tmp_path, capsys):
    cache, _ = _cache(tmp_path)
    tensors = cache / "tensors"
    tensors.mkdir()
    for suffix, size in ((".npy", 3000), (".json", 100), (".stats", 16), (".lock", 0)):
        (tensors / f"synthetic-32px-0123456789abcdef{suffix}").write_bytes(b"t" * size)
    (cache / "teachers" / "abc.partial").mkdir(parents=True)  # a directory holding only a leftover is listed too
    entries = scan(cache)
    decoded = [entry for entry in entries if entry.stage == "tensors"]
    assert [(entry.kind, entry.bytes) for entry in decoded] == [("files", 3116)]
    assert main(["list", "--cache-dir", str(cache)]) == 0
    text = capsys.readouterr().out
    assert "tensors            1     3.0 KB" in text and "teachers           0        0 B" in text
    assert f"total {_human(sum(entry.bytes for entry in entries))}" in text
    assert "files" not in {entry.kind for entry in prune(cache, tmp_path / "logs")}  # decoded images are kept
    assert (tensors / "synthetic-32px-0123456789abcdef.npy").is_file()


def test_the_budget_command_lists_each_dataset_its_total_and_its_releases(tmp_path, capsys):
    """`pate-cache budget`: per private split, the total of the releases sharing a record with it (relation, level,
    delta and accountant named), one line per release; a damaged ledger is one line and exit 2."""
    import numpy as np

    from pate.budget import BudgetEntry, BudgetLedger
    from pate.privacy import Ledger, gaussian_event

    ledger = BudgetLedger(tmp_path / "budget")
    records = np.array([3, 5, 8], dtype=np.uint64)
    dataset = ledger.add_records(records)
    cost = Ledger().compose_event(gaussian_event(10.0, 1.0), name="G(sigma=10)", neighbors="replace")
    for key in ("k1", "k2"):
        ledger.append(
            BudgetEntry.new(dataset, "aggregate", key, "d", cost, True, {"method": "x.PATE", "target_epsilon": 1.0})
        )
    both = Ledger.replay(cost.history * 2, neighbors="replace").get_epsilon(1e-5, "rdp").epsilon
    assert main(["budget", "--budget-dir", str(tmp_path / "budget"), "--delta", "1e-5", "--accountant", "rdp"]) == 0
    out = capsys.readouterr().out
    assert f"dataset {dataset}: 2 release(s) on it" in out
    assert (
        f"total: epsilon = {both:.4g} at delta = 1e-05 (neighbours: replace, record-level) over 2 release(s) on "
        f"this private data by the rdp accountant"
    ) in out
    assert "aggregate/k1  replace  PATE  target_epsilon=1.0  G(sigma=10)" in out
    next((tmp_path / "budget" / "entries").glob("*.json")).write_text("{")
    assert main(["budget", "--budget-dir", str(tmp_path / "budget")]) == 2
    assert capsys.readouterr().err.startswith("error: the privacy budget ledger's file ")
