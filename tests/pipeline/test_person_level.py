"""Person-level PATE on data that name people (``data.person_column``): each person's images with one teacher,
so one person's change, all of their images, moves at most one teacher's vote; the epsilon of the same noise is
then person-level. The neighbours are built as the relation defines them, on the input the run takes: every row of
one person changed in the label file."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pytest

from pate.artifacts import ArtifactStore
from pate.data.partition import read_teacher_parts
from pate.pipeline.checks import UserError
from pate.aggregate import LEDGER_FILE
from pate.pipeline.runner import largest_person_metrics, prepare, run
from pate.aggregators import TauPATE
from pate.privacy import Ledger, sampled_gaussian_steps
from pate.privacy.group import chained_group_epsilon
from pate.privacy.unit import PrivacyUnit
from pate.votes import read_votes
from tests.conftest import compose_config
from tests.data.folder_data import write_folder
from tests.privacy.test_group import approximate_release

pytestmark = pytest.mark.slow  # end-to-end runs: not in the fast loop

NUM_IMAGES = 400  # write_folder's split column: rows 0-279 train, 280-319 val, 320-399 test
BIG = "p_big"  # the person the neighbours change: 24 training images


def _people() -> list[str]:
    """One person per row, none across two splits: 1 to 12 images each, and rows 0-23 are one person of 24."""
    rng = np.random.default_rng(0)
    person = [BIG] * 24
    for start, end in ((24, 280), (280, 320), (320, 400)):
        row = start
        while row < end:
            size = min(int(rng.integers(1, 13)), end - row)
            person += [f"p{row}"] * size
            row += size
    return person


def _write(root: Path, flip_big: bool = False) -> Path:
    """The folder with a person column; with ``flip_big``, every label of every image of ``BIG`` flipped: one
    person's change, all of their rows."""
    write_folder(root, 5, num_images=NUM_IMAGES, split_column=True)
    header, *rows = (root / "labels.csv").read_text().splitlines()
    head = header.split(",")
    lines = [",".join([head[0], "person", *head[1:]])]
    for person, row in zip(_people(), rows):
        cells = row.split(",")  # file, label, split, labels...
        if flip_big and person == BIG:
            cells = [cells[0], *("1" if c == "0" else "0" if c == "1" else c for c in cells[1:])]
        lines.append(",".join([cells[0], person, *cells[1:]]))
    (root / "labels.csv").write_text("\n".join(lines) + "\n")
    return root


@pytest.fixture(scope="module")
def folders(tmp_path_factory) -> dict[str, Path]:
    base = tmp_path_factory.mktemp("people")
    return {"data": _write(base / "data"), "neighbour": _write(base / "neighbour", flip_big=True)}


PATE = ["aggregator=tau_pate", "aggregator.tau=2"]


def _cfg(root: Path, folder: Path, *overrides: str):
    return compose_config(
        ["debug=tiny", "data=multilabel_folder", f"data.root={folder}", "data.person_column=person", *PATE, *overrides],
        root,
    )


def test_pate_on_people_is_person_level_with_the_epsilon_of_the_same_noise(folders, tmp_path, caplog):
    cfg = _cfg(tmp_path / "person", folders["data"])
    with caplog.at_level("INFO"):
        metrics = run(cfg, output_dir=tmp_path / "person" / "run")
    (calibrated,) = [r.getMessage() for r in caplog.records if r.getMessage().startswith("calibrated TauPATE")]
    assert "one neighbour: one person of the private split changed" in calibrated, calibrated  # the run's own unit
    record = run(_cfg(tmp_path / "record", folders["data"], "privacy.unit=record"), output_dir=tmp_path / "r" / "run")
    assert metrics["person_level"] and metrics["record_level"] and metrics["images_per_person"] == 24
    assert metrics["privacy_unit"] == (
        "one person of the private split changed, all of their images: one teacher's vote replaced"
    )
    assert "24" not in metrics["privacy"]  # the largest person's count is private: not in the epsilon's line
    assert "images_per_person" in metrics["not_covered_by_epsilon"]["keys"]
    assert metrics["epsilon"] == record["epsilon"] and metrics["noise"] == record["noise"]
    assert not record["person_level"] and record["images_per_person"] == 24
    assert "record-level: NOT a person-level guarantee, and a person has several images" in record["privacy"]
    # what the record-level epsilon implies for the largest person: TauPATE at a 24th of its noise (group privacy)
    sigma = record["noise"]["sigma"]
    grouped = Ledger().compose(TauPATE(5, 4, sigma / 24, 2, "l1", "replace"), count=record["queries_asked"])
    assert record["epsilon_largest_person"] == pytest.approx(grouped.get_epsilon(1e-6, "rdp").epsilon, rel=1e-9)
    assert record["epsilon_largest_person"] > 100 * record["epsilon"] and "epsilon_largest_person" not in metrics
    assert {"epsilon_largest_person", "privacy_largest_person"} <= set(record["not_covered_by_epsilon"]["keys"])
    graph, data, _ = prepare(cfg)
    parts = read_teacher_parts(ArtifactStore(Path(cfg.paths.cache_dir)).get(graph.release.stages["partition"]))
    person = data.arrays.person
    owners = {}
    for teacher, part in enumerate(parts):
        for who in set(person[part].tolist()):
            owners.setdefault(who, []).append(teacher)
    assert all(len(teachers) == 1 for teachers in owners.values())  # each person in exactly one teacher
    assert sorted(np.concatenate(parts).tolist()) == data.arrays.indices("train").tolist()


def test_private_knn_on_people_samples_people_at_the_same_price(folders, tmp_path):
    knn = ["method=private_knn", "method.k=5", "method.sampling_rate=0.5", "method.recipes=[]"]
    person = run(_cfg(tmp_path / "person", folders["data"], *knn), output_dir=tmp_path / "p" / "run")
    record = run(_cfg(tmp_path / "record", folders["data"], *knn, "privacy.unit=record"), output_dir=tmp_path / "r")
    assert person["person_level"] and not record["person_level"]
    assert person["privacy_unit"] == "one person of the private split replaced, all of their images"
    assert person["epsilon"] == record["epsilon"]  # the same rate and noise: now over people
    # a sampled Gaussian has no exact group conversion: the per-record profile chained over the person's images
    assert record["epsilon_largest_person"] > 2 * record["epsilon"]
    assert "an upper bound, loose" in record["privacy_largest_person"]
    assert person["artifacts"]["aggregate"] != record["artifacts"]["aggregate"]


def test_dp_sgd_on_people_is_user_level_with_q_over_people(folders, tmp_path):
    dp_sgd = ["method=dp_sgd", "method.expected_batch_size=8", "method.epochs=2", "method.probe_recipes=[]"]
    person = run(_cfg(tmp_path / "person", folders["data"], *dp_sgd), output_dir=tmp_path / "p" / "run")
    record = run(_cfg(tmp_path / "record", folders["data"], *dp_sgd, "privacy.unit=record"), output_dir=tmp_path / "r")
    _, data, _ = prepare(_cfg(tmp_path / "person", folders["data"], *dp_sgd))
    people = len(np.unique(data.arrays.person[data.arrays.indices("train")]))
    assert person["person_level"] and not record["person_level"]
    assert person["privacy_unit"] == "one person of the private split replaced, all of their images"
    assert person["sampling_rate"] == pytest.approx(8 / people) and record["sampling_rate"] == pytest.approx(8 / 280)
    assert person["steps"] == -(-2 * people // 8)
    assert 0 <= person["student_accuracy"] <= 1 and person["artifacts"]["dp_sgd"] != record["artifacts"]["dp_sgd"]


def test_dp_sgd_priced_per_person_by_group_privacy_trains_on_records_and_covers_the_cap(folders, tmp_path):
    """method.group_size: the batches sample records (q over the 280 records), and the run's epsilon is the
    chain of the record-level release over the cap's records, person-level, calibrated to the target."""
    dp_sgd = ["method=dp_sgd", "method.expected_batch_size=8", "method.epochs=2", "method.probe_recipes=[]"]
    group = run(_cfg(tmp_path / "g", folders["data"], *dp_sgd, "method.group_size=30"), output_dir=tmp_path / "g" / "r")
    assert group["person_level"] and group["method"] == "dp_sgd+group"
    assert group["privacy_unit"] == (
        "one person of the private split replaced, all of their images, up to 30 (group privacy: 30 one-record "
        "steps at once)"
    )
    assert group["sampling_rate"] == pytest.approx(8 / 280) and group["steps"] == 70
    assert group["epsilon_accountant"] == "chain" and group["epsilon_order"] is None
    per_step = Ledger(neighbors="replace").compose_event(
        sampled_gaussian_steps(group["sampling_rate"], group["noise_multiplier"], 70, "replace")
    )
    assert group["epsilon"] == chained_group_epsilon(per_step, 30, 1e-6, "rdp").epsilon  # debug prices by RDP
    assert 0.99 * group["target_epsilon"] <= group["epsilon"] <= group["target_epsilon"]


def _changed_teachers(tmp_path: Path, folders, *overrides: str) -> int:
    """The number of teachers whose votes differ between the data and its neighbour (``BIG`` changed)."""
    votes = []
    for name in ("data", "neighbour"):
        cfg = _cfg(tmp_path / name, folders[name], *overrides)
        graph, _, _ = prepare(cfg)
        votes.append(read_votes(ArtifactStore(Path(cfg.paths.cache_dir)).get(graph.release.stages["votes"]))["bits"])
    return int((votes[0] != votes[1]).any(axis=(0, 2)).sum())


def test_one_persons_change_moves_one_teachers_vote_and_a_record_partition_moves_several(folders, tmp_path):
    """The planted weakening (one person's images over several teachers, the record partition) fails the
    property the person-level epsilon rests on; the partition by person keeps it."""
    assert _changed_teachers(tmp_path / "person", folders) == 1
    assert _changed_teachers(tmp_path / "record", folders, "privacy.unit=record") >= 2


@pytest.mark.parametrize(
    "overrides,folder,message",
    [
        (
            ["privacy.unit=person", "data.person_column=null"],
            "data",
            r"privacy.unit=person but the data name no people",
        ),
        (
            ["method=dp_sgd", "method.expected_batch_size=64"],
            "data",
            r"method.expected_batch_size=64 exceeds the 41 people of the private training split",
        ),
        (["privacy.unit=persons"], "data", r"privacy.unit='persons'; expected one of \('record', 'person'\)"),
        (
            ["method=private_knn", "privacy.neighbors=add_remove", "privacy.unit=person"],
            "data",
            r"privacy.unit=person with privacy.neighbors=add_remove and a method that samples people",
        ),
        (["partition.num_teachers=13"], "data", r"person 'p_big' has 24 of the 280 private training records"),
        (
            ["method=dp_sgd", "method.group_size=23"],
            "data",
            r"method.group_size=23: a person of the private split holds more images than that",
        ),
        (
            ["method=dp_sgd", "method.group_size=24", "privacy.unit=record"],
            "data",
            r"method.group_size=24 prices one person's images at once, but the run's unit is 'record'",
        ),
    ],
    ids=[
        "no_people",
        "dp_sgd_batch_over_the_people",
        "unknown_unit",
        "sampler_add_remove",
        "a_person_over_a_teachers_share",
        "a_person_over_the_group_cap",
        "a_group_on_a_record_run",
    ],
)
def test_a_person_level_run_that_cannot_hold_is_one_line(folders, tmp_path, overrides, folder, message):
    with pytest.raises(UserError, match=message) as caught:
        prepare(_cfg(tmp_path, folders[folder], *overrides))
    assert "\n" not in str(caught.value)


def test_a_record_level_release_no_chain_prices_says_why_not_data_dependent(tmp_path):
    """n delta_t >= delta leaves no group epsilon; the line says so (an audit found every None called
    data-dependent)."""
    approximate_release().save(tmp_path / LEDGER_FILE)
    unit = PrivacyUnit("one record", record_level=True, images_per_person=20)
    stored = SimpleNamespace(file=lambda name: tmp_path / name)
    line = largest_person_metrics(stored, 1e-5, "tightest", unit, "replace")["privacy_largest_person"]
    assert line.startswith("not computed: no per-record epsilon chained over 20 steps meets delta = 1e-05")
