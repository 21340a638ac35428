"""The budget ledger of a private dataset (pate/budget.py) under a crash, concurrent runs and damage: nothing is
lost, nothing is counted twice, and a damaged entry is refused, never read as zero."""

from __future__ import annotations

import dataclasses
import json
import multiprocessing
import os
import shutil

import numpy as np
import pytest

from pate.artifacts import Stage
from pate.budget import BudgetDamaged, BudgetEntry, BudgetLedger, _checksum, private_data_id, private_records
from pate.data.labelled_images import LabelledImages
from pate.errors import UserError
from pate.pipeline.budget import BudgetGuard
from pate.privacy import Ledger, gaussian_event

DELTA = 1e-6
RECORDS = np.arange(1, 11, dtype=np.uint64) * 7919
DATASET = private_data_id(RECORDS)


def _cost(sigma: float = 10.0) -> Ledger:
    return Ledger().compose_event(gaussian_event(sigma, 1.0), count=1, name="G", neighbors="replace")


def _entry(key: str = "k", sigma: float = 10.0, dataset: str = DATASET) -> BudgetEntry:
    return BudgetEntry.new(dataset, "aggregate", key, "d", _cost(sigma), True, {"method": "test"})


def _ledger(root) -> BudgetLedger:
    ledger = BudgetLedger(root)
    ledger.add_records(RECORDS)
    return ledger


def _guard(root, cap: float | None, key: str = "k") -> BudgetGuard:
    stage = Stage("aggregate", {"noise": "secure", "key": key}, lambda work, up: None)
    return BudgetGuard(BudgetLedger(root), RECORDS, stage, _cost(), cap, DELTA, "rdp", "replace", True, {})


def test_the_total_composes_every_release_on_data_sharing_a_record(tmp_path):
    """Two Gaussian releases of sensitivity 1 and sigma 10 compose to one of sigma 10 / sqrt(2) (RDP adds). A
    release on a split that shares one record with this one counts; one on disjoint records does not."""
    ledger = _ledger(tmp_path)
    overlapping = ledger.add_records(np.array([5, 7919], dtype=np.uint64))
    disjoint = ledger.add_records(np.array([3, 5], dtype=np.uint64))
    entries = [_entry("a"), _entry("b", dataset=overlapping), _entry("c", dataset=disjoint)]
    total = ledger.total(RECORDS, DELTA, "replace", True, "rdp", entries)
    single = Ledger().compose_event(gaussian_event(10 / np.sqrt(2), 1.0), neighbors="replace")
    assert total.releases == 2 and total.datasets == 2
    assert total.epsilon == pytest.approx(single.get_epsilon(DELTA, "rdp").epsilon, rel=1e-12)
    other = BudgetEntry.new(
        DATASET,
        "aggregate",
        "c",
        "d",
        Ledger().compose_event(gaussian_event(1.0, 1.0), neighbors="add_remove"),
        True,
        {},
    )
    mixed = ledger.total(RECORDS, DELTA, "replace", True, "rdp", [*entries, other])
    assert mixed.epsilon is None and mixed.other_relations == 1 and mixed.describe().startswith("NOT PRICED")


def test_an_entry_round_trips_and_its_checksum_catches_an_edit(tmp_path):
    budget = _ledger(tmp_path)
    path = budget.append(_entry())
    assert [e.body() for e in budget.entries()] == [BudgetEntry.from_body(e.body()).body() for e in budget.entries()]
    path.write_text(path.read_text().replace('"noise_multiplier": 10.0', '"noise_multiplier": 100.0'))
    with pytest.raises(BudgetDamaged, match=rf"file {path} is damaged or missing \(its checksum does not match"):
        budget.entries()


def test_a_truncated_entry_or_records_file_is_refused_naming_it(tmp_path):
    budget = _ledger(tmp_path)
    budget.append(_entry("a"))
    path = budget.append(_entry("b"))
    for size in (0, path.stat().st_size // 2, path.stat().st_size - 2):
        path.write_bytes(path.read_bytes()[:size] if size else b"")
        with pytest.raises(UserError, match=rf"file {path} is damaged or missing .* no release on this data is drawn"):
            budget.entries()
    other = _ledger(tmp_path / "other")
    other.append(_entry("a"))
    records = tmp_path / "other" / "records" / f"{DATASET}.npy"
    records.write_bytes(records.read_bytes()[:-8])
    with pytest.raises(BudgetDamaged, match=rf"file {records} is damaged"):
        BudgetLedger(tmp_path / "other").total(RECORDS, DELTA, "replace", True, "rdp")


def _die_while_writing(root) -> None:
    """Append an entry and die (SIGKILL-like: os._exit) after the temporary file is written, before its rename."""

    def fsync(fd):
        os._exit(9)

    os.fsync = fsync
    BudgetLedger(root).append(_entry("killed"))


def test_a_kill_while_writing_loses_nothing_and_counts_nothing(tmp_path):
    budget = _ledger(tmp_path)
    budget.append(_entry("before"))
    process = multiprocessing.get_context("fork").Process(target=_die_while_writing, args=(tmp_path,))
    process.start()
    process.join(30)
    assert process.exitcode == 9
    assert [entry.key for entry in budget.entries()] == ["before"]  # the earlier entry kept, the cut one not read
    assert len(budget.leftovers()) == 1  # the temporary file of the cut write, listed, never an entry
    budget.append(_entry("after"))
    assert [entry.key for entry in budget.entries()] == ["before", "after"]


def _append_until_refused(root, key: str, cap: float, results) -> None:
    guard = _guard(root, cap, key)
    for _ in range(4):
        try:
            guard.before_draw(guard.release)
            results.put("appended")
        except UserError:
            results.put("refused")


def test_runs_appending_at_once_never_pass_the_cap_together(tmp_path):
    """Four processes race to append four releases each under a cap that fits exactly five: the check and the
    append are one step under the ledger's lock, so exactly five are recorded, each once."""
    one = _cost().get_epsilon(DELTA, "rdp").epsilon
    five = Ledger.replay(_cost().history * 5, neighbors="replace").get_epsilon(DELTA, "rdp").epsilon
    six = Ledger.replay(_cost().history * 6, neighbors="replace").get_epsilon(DELTA, "rdp").epsilon
    cap = (five + six) / 2
    assert one < cap < six
    context = multiprocessing.get_context("fork")
    results = context.Queue()
    processes = [
        context.Process(target=_append_until_refused, args=(tmp_path, f"k{i}", cap, results)) for i in range(4)
    ]
    for process in processes:
        process.start()
    for process in processes:
        process.join(60)
    outcomes = [results.get(timeout=5) for _ in range(16)]
    entries = BudgetLedger(tmp_path).entries()
    assert outcomes.count("appended") == 5 == len(entries) == len({entry.id for entry in entries})
    assert BudgetLedger(tmp_path).total(RECORDS, DELTA, "replace", True, "rdp").epsilon == pytest.approx(five)


def test_a_private_record_is_its_file():
    """Invariant to the decoded pixels, the row order, the labels, the path's spelling and the public splits;
    another file name, or another split membership, is another set of records."""
    rng = np.random.default_rng(0)
    images = rng.integers(0, 256, (10, 3, 4, 4), dtype=np.uint8)
    labels = rng.integers(0, 2, (10, 3), dtype=np.uint8)
    split = np.array([0] * 6 + [1, 2, 2, 2], dtype=np.int8)
    files = tuple(f"img/{i}.png" for i in range(10))

    def identity(images=images, labels=labels, split=split, names=("a", "b", "c"), files=files) -> str:
        return private_data_id(private_records(LabelledImages(images, labels, split, files, names)))

    base = identity()
    order = np.array([5, 3, 1, 0, 2, 4, 9, 8, 7, 6])
    assert base == identity(images=images[:, :, :2, :2]) == identity(images=images ^ 1)  # another decoding
    assert base == identity(
        images=images[order], labels=labels[order], split=split[order], files=tuple(files[i] for i in order)
    )  # another row order
    assert base == identity(labels=1 - labels) == identity(names=("x", "y", "z"))  # relabelled
    assert (
        base
        == identity(files=tuple(f"./{f}" for f in files))
        == identity(files=tuple(f.replace("/", "//") for f in files))
    )
    assert base == identity(files=tuple(f.split("/")[1] for f in files))  # data.root one folder lower
    moved = split.copy()
    moved[0] = 2
    renamed = ("img/other.png", *files[1:])
    assert len({base, identity(split=moved), identity(files=renamed)}) == 3


def test_a_lost_entry_a_lost_head_or_a_foreign_file_is_refused(tmp_path):
    """Each entry knows its place and head.json counts them: a whole entry deleted (first, middle or last) is
    found, never read as less spending; a crash between an entry and its head leaves one entry past the head, which
    counts."""
    budget = _ledger(tmp_path)
    paths = [budget.append(_entry(key)) for key in "abc"]
    assert [entry.sequence for entry in budget.entries()] == [0, 1, 2]
    for lost in paths:
        saved = lost.read_bytes()
        lost.unlink()
        with pytest.raises(BudgetDamaged, match="is missing|counts 3 entries, 2 are there"):
            budget.entries()
        lost.write_bytes(saved)
    head = tmp_path / "head.json"
    saved = head.read_bytes()
    head.write_text(saved.decode().replace('"count": 3', '"count": 2'))
    with pytest.raises(BudgetDamaged, match=rf"file {head} is damaged .*checksum"):
        budget.entries()
    head.unlink()
    with pytest.raises(BudgetDamaged, match=rf"file {head} is damaged or missing"):
        budget.entries()
    head.write_bytes(saved)
    (tmp_path / "entries" / "copy of an entry.json").write_bytes(paths[0].read_bytes())
    with pytest.raises(BudgetDamaged, match="copy of an entry.json is damaged or missing .*it is no entry"):
        budget.entries()
    (tmp_path / "entries" / "copy of an entry.json").unlink()
    # a crash after the entry, before its head: the entry is in place, so it counts; the next append repairs the head
    entry = dataclasses.replace(_entry("d"), sequence=3)
    body = entry.body()
    (tmp_path / "entries" / f"{entry.id}.json").write_text(json.dumps({**body, "sha256": _checksum(body)}))
    assert [e.key for e in budget.entries()] == ["a", "b", "c", "d"]
    budget.append(_entry("e"))
    assert [e.sequence for e in budget.entries()] == [0, 1, 2, 3, 4]


def test_a_ledger_whose_entries_are_all_gone_is_refused_not_read_as_new(tmp_path):
    budget = _ledger(tmp_path)
    for key in "ab":
        budget.append(_entry(key))
    shutil.rmtree(tmp_path / "entries")
    with pytest.raises(BudgetDamaged, match="head.json is damaged or missing .*counts 2 entries, 0 are there"):
        BudgetLedger(tmp_path).total(RECORDS, DELTA, "replace", True, "rdp")
    (tmp_path / "head.json").unlink()
    with pytest.raises(BudgetDamaged, match="head.json is damaged or missing"):
        BudgetLedger(tmp_path).entries()


def test_two_crashes_between_an_entry_and_its_head_leave_a_readable_ledger(tmp_path):
    """Each append first brings a head that a crash left one behind up to date."""
    budget = _ledger(tmp_path)
    budget.append(_entry("a"))
    for key in "bc":
        entry = dataclasses.replace(_entry(key), sequence=len(budget.entries()))
        body = entry.body()
        (tmp_path / "entries" / f"{entry.id}.json").write_text(json.dumps({**body, "sha256": _checksum(body)}))
        assert [e.key for e in budget.entries()][-1] == key  # one past the head: counted
        budget.append(_entry(key + "'"))
    assert [e.key for e in budget.entries()] == ["a", "b", "b'", "c", "c'"]


def test_the_same_file_differently_spelt_or_cased_is_one_record():
    images = np.zeros((3, 3, 2, 2), np.uint8)
    labels = np.zeros((3, 1), np.uint8)
    split = np.array([0, 0, 2], np.int8)

    def records(names) -> np.ndarray:
        return private_records(LabelledImages(images, labels, split, (*names, "t.png"), ("a",)))

    nfc, nfd = "caf\u00e9.png", "cafe\u0301.png"
    assert np.array_equal(records((nfc, "IMG_1.PNG")), records((f"x\\{nfd}", "img/img_1.png")))
