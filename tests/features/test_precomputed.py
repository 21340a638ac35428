"""features=precomputed: a user's own embeddings, one row per image in the data's order. Checked for shape,
finiteness, variance and what float16 can store before compute, fingerprinted into the features stage's key,
standardised on public rows only and in float64, so that an offset float32 cannot hold changes nothing."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import numpy as np
import pytest
import torch

from pate.artifacts import ArtifactStore
from pate.data.labelled_images import SPLITS
from pate.data.partition import read_teacher_parts
from pate.data.multilabel_folder import seeded_split
from pate.features.precomputed import PrecomputedFeatures
from pate.pipeline.runner import prepare, run
from tests.cli import run_cli
from tests.conftest import compose_config
from tests.data.folder_data import write_folder

NUM_IMAGES = 400


@pytest.fixture(scope="module")
def folder(tmp_path_factory) -> tuple[Path, np.ndarray]:
    root = tmp_path_factory.mktemp("precomputed") / "shapes"
    return root, write_folder(root, 5, num_images=NUM_IMAGES)


def _embeddings(labels: np.ndarray, seed: int = 0) -> np.ndarray:
    """What a good public encoder would give: the labels, mixed and noisy, in 16 float32 dims."""
    rng = np.random.default_rng(seed)
    return (labels @ rng.normal(size=(labels.shape[1], 16)) + 0.3 * rng.normal(size=(len(labels), 16))).astype(
        np.float32
    )


def _args(folder: Path, path: Path, root: Path) -> list[str]:
    # privacy.noise=seeded: a folder's noise is secure by default, fresh in each run, and these tests compare runs
    # GaussianPATE: the folder has fewer labels than TauPATE's tau
    return [
        "debug=tiny",
        "aggregator=gaussian_pate",
        "data=multilabel_folder",
        f"data.root={folder}",
        "data.split_fractions=[0.7,0.1,0.2]",
        "privacy.noise=seeded",
        "features=precomputed",
        f"features.extractor.path={path}",
        "features.num_fit_images=40",
        f"paths.root_dir={root}",
        f"hydra.run.dir={root / 'run'}",
    ]


@pytest.mark.slow
def test_a_run_on_precomputed_embeddings_learns_from_them(folder, tmp_path):
    root, labels = folder
    path = tmp_path / "embeddings.npy"
    np.save(path, _embeddings(labels))
    metrics = run(compose_config(_args(root, path, tmp_path)), output_dir=tmp_path / "run")
    assert metrics["num_labels"] == 5 and metrics["answered"] == 40
    # the embeddings carry the labels: teachers (70 rows each) and the student far above the majority class
    assert metrics["teacher_accuracy"] > 0.9 and metrics["student_accuracy"] > 0.85
    extractor = json.loads(next((tmp_path / "cache" / "features").glob("*/extractor.json")).read_text())
    assert extractor["extractor"] == "PrecomputedFeatures" and extractor["dim"] == 16
    assert extractor["shape"] == [NUM_IMAGES, 16] and len(extractor["sha256"]) == 64
    # the kept model names no hash nor count of the embeddings file, which holds the private rows too
    kept = (tmp_path / "run" / "model" / "model.json").read_text()
    assert extractor["sha256"] not in kept and str(NUM_IMAGES) not in kept.replace(" ", "")
    spec = json.loads(kept)
    assert spec["extractor"] is None and spec["extractor_identity"] is None
    assert spec["publishable"].startswith("only if the precomputed embeddings are public") or spec[
        "publishable"
    ].startswith("no:")
    assert not (tmp_path / "run" / "model" / "extractor.pt").exists()


@pytest.mark.slow
def test_other_embeddings_are_another_features_stage_and_an_npz_key_selects_one(folder, tmp_path):
    root, labels = folder
    np.save(tmp_path / "a.npy", _embeddings(labels))
    np.savez(tmp_path / "b.npz", other=np.zeros((3, 2)), mine=_embeddings(labels))
    keys = []
    for path, extra in ((tmp_path / "a.npy", []), (tmp_path / "b.npz", ["features.extractor.key=mine"])):
        graph, _, _ = prepare(compose_config([*_args(root, path, tmp_path), *extra]))
        keys.append(graph.shared.features.key)
    assert keys[0] != keys[1]  # same values, other file: the key hashes the file's bytes, never its path
    edited = _embeddings(labels)
    edited[7, 3] += 1
    np.save(tmp_path / "a.npy", edited)
    assert prepare(compose_config(_args(root, tmp_path / "a.npy", tmp_path)))[0].shared.features.key != keys[0]


def test_the_standardisation_uses_the_public_fit_rows_only(tmp_path):
    table = np.random.default_rng(1).normal(3.0, 2.0, size=(50, 4)).astype(np.float32)
    table[:10] = 1e3  # rows the fit does not see (private ones, in a run) must not move the statistics
    np.save(tmp_path / "t.npy", table)
    extractor = PrecomputedFeatures(str(tmp_path / "t.npy"))
    extractor.check_rows(50)
    fit_rows = np.arange(10, 50)
    extractor.fit_rows(None, fit_rows)
    encoded = extractor.encode_rows(None, fit_rows).numpy()
    np.testing.assert_allclose(encoded.mean(0), 0, atol=1e-5)
    np.testing.assert_allclose(encoded.std(0), 1, atol=1e-4)
    expected = (table[3] - table[fit_rows].mean(0)) / table[fit_rows].std(0)
    np.testing.assert_allclose(extractor.encode_rows(None, np.array([3])).numpy()[0], expected, rtol=1e-4)
    with pytest.raises(ValueError, match="no features of augmented views"):
        extractor.encode_rows(None, fit_rows, view=lambda images: images)
    with pytest.raises(TypeError, match="looked up by image row"):
        extractor._raw(torch.zeros(1, 3, 4, 4, dtype=torch.uint8))


def test_an_offset_float32_cannot_hold_standardises_as_without_it(tmp_path):
    """float32's spacing at 1e9 is 64: cast first, every column of ``table + 1e9`` would be constant. Standardised
    in float64 first, the features are those of the table without the offset."""
    table = np.random.default_rng(2).normal(size=(60, 5))
    encoded = []
    for name, values in (("plain", table), ("offset", table + 1e9)):
        np.save(tmp_path / f"{name}.npy", values)
        extractor = PrecomputedFeatures(str(tmp_path / f"{name}.npy"))
        extractor.check_encoding(np.arange(20, 60), np.arange(60))
        encoded.append(extractor.encode_rows(None, np.arange(60)).numpy())
    assert encoded[0].dtype == np.float32 and encoded[0].std(0).min() > 0.5
    np.testing.assert_allclose(encoded[1], encoded[0], atol=1e-5)


def test_a_constant_column_maps_to_zero_and_constant_fit_rows_are_refused(tmp_path):
    table = np.random.default_rng(3).normal(size=(30, 3))
    table[:, 1] = 0.1  # constant everywhere: its features are exactly 0
    np.save(tmp_path / "t.npy", table)
    extractor = PrecomputedFeatures(str(tmp_path / "t.npy"))
    extractor.check_encoding(np.arange(10, 30), np.arange(30))
    assert not extractor.encode_rows(None, np.arange(30)).numpy()[:, 1].any()
    table[10:] = 7.0  # the fit rows, all alike: every feature would be 0
    np.save(tmp_path / "t.npy", table)
    with pytest.raises(ValueError, match="every column is constant over the 20 public fit rows"):
        PrecomputedFeatures(str(tmp_path / "t.npy")).check_encoding(np.arange(10, 30), np.arange(30))


def test_a_row_beyond_float16_after_standardisation_is_refused_naming_row_and_column(tmp_path):
    table = np.random.default_rng(4).normal(size=(30, 3))
    table[4, 2] = 1e39  # finite in float64, not in float32; not a fit row, so the fit's scale cannot absorb it
    np.save(tmp_path / "t.npy", table)
    with pytest.raises(
        ValueError,
        match=r"row 4, column 2 standardises to 1.*e\+39 in magnitude with the "
        r"public fit rows' mean and standard deviation, beyond float16's largest "
        r"value 65504",
    ):
        PrecomputedFeatures(str(tmp_path / "t.npy")).check_encoding(np.arange(10, 30), np.arange(30))


@pytest.mark.parametrize("suffix", [".npy", ".npz"])
def test_a_file_that_is_not_numpys_is_said_to_be_so_never_to_be_unpickled(tmp_path, suffix):
    (tmp_path / f"e{suffix}").write_bytes(b"hello")
    with pytest.raises(ValueError, match=f"is not a NumPy \\{suffix} file") as caught:
        PrecomputedFeatures(str(tmp_path / f"e{suffix}"))
    assert "pickle" not in str(caught.value)


def test_offset_embeddings_give_the_student_of_the_embeddings_without_the_offset(folder, tmp_path):
    """The issue's case: float64 embeddings + 1e9 trained a student at chance, silently; now the same student."""
    root, labels = folder
    scores = {}
    for name, offset in (("plain", 0.0), ("offset", 1e9)):
        np.save(tmp_path / f"{name}.npy", _embeddings(labels).astype(np.float64) + offset)
        run_root = tmp_path / name
        metrics = run(compose_config(_args(root, tmp_path / f"{name}.npy", run_root)), output_dir=run_root / "run")
        scores[name] = (metrics["student_accuracy"], metrics["teacher_accuracy"])
    assert scores["offset"] == scores["plain"] and scores["plain"][0] > 0.85, scores


def _wrong_rows(tmp_path, labels):
    np.save(tmp_path / "e.npy", _embeddings(labels)[:-1])
    return tmp_path / "e.npy", f"holds {NUM_IMAGES - 1} rows, the data {NUM_IMAGES} images; expected one row per image"


def _non_finite(tmp_path, labels):
    table = _embeddings(labels)
    table[123, 4] = np.nan
    np.save(tmp_path / "e.npy", table)
    return tmp_path / "e.npy", "row 123 holds a non-finite value (nan or inf)"


def _one_dimensional(tmp_path, labels):
    np.save(tmp_path / "e.npy", np.zeros(NUM_IMAGES))
    return tmp_path / "e.npy", f"expected a 2-D array [images, dims], found shape ({NUM_IMAGES},)"


def _strings(tmp_path, labels):
    np.save(tmp_path / "e.npy", np.array([["a"]] * NUM_IMAGES))
    return tmp_path / "e.npy", "expected float or integer values, found dtype <U1"


def _several_arrays(tmp_path, labels):
    np.savez(tmp_path / "e.npz", a=_embeddings(labels), b=_embeddings(labels))
    return tmp_path / "e.npz", "holds 2 arrays ['a', 'b']; name one with features.extractor.key"


def _csv_file(tmp_path, labels):
    (tmp_path / "e.csv").write_text("1,2\n")
    return tmp_path / "e.csv", "expected a .npy or .npz file"


def _missing(tmp_path, labels):
    return tmp_path / "nowhere.npy", "nowhere.npy': no such file"


def _not_numpy(tmp_path, labels):
    (tmp_path / "e.npy").write_bytes(b"12345")
    return tmp_path / "e.npy", "is not a NumPy .npy file (it starts with b'12345', not b'\\x93NUMPY')"


def _all_zero(tmp_path, labels):
    np.save(tmp_path / "e.npy", np.zeros((NUM_IMAGES, 16)))
    return tmp_path / "e.npy", f"every column is constant over all {NUM_IMAGES} rows (in float64)"


def _offset_beyond_float64(tmp_path, labels):
    np.save(tmp_path / "e.npy", _embeddings(labels).astype(np.float64) + 1e39)  # float64's spacing there: 1e23
    return tmp_path / "e.npy", f"every column is constant over all {NUM_IMAGES} rows (in float64)"


def _beyond_float16(tmp_path, labels):
    table = _embeddings(labels).astype(np.float64)
    row = int(np.flatnonzero(seeded_split(NUM_IMAGES, (0.7, 0.1, 0.2), 0) == SPLITS["train"])[0])
    table[row, 5] = 1e39  # a training row: the fit rows (val) never see its scale
    np.save(tmp_path / "e.npy", table)
    return tmp_path / "e.npy", f"row {row}, column 5 standardises to "


@pytest.mark.slow
@pytest.mark.parametrize(
    "bad",
    [
        _wrong_rows,
        _non_finite,
        _one_dimensional,
        _strings,
        _several_arrays,
        _csv_file,
        _missing,
        _not_numpy,
        _all_zero,
        _offset_beyond_float64,
        _beyond_float16,
    ],
    ids=lambda f: f.__name__.strip("_"),
)
def test_bad_embeddings_are_one_line_through_the_command_line(folder, tmp_path, bad):
    root, labels = folder
    path, message = bad(tmp_path, labels)
    done = run_cli("train.py", _args(root, path, tmp_path))
    lines = [line for line in done.stderr.splitlines() if line.strip()]
    assert done.returncode == 2, done.stdout + done.stderr
    assert len(lines) == 1 and lines[0].startswith("error: ") and message in lines[0], lines
    assert "features.extractor" in lines[0]
    for stage in ("partition", "features", "teachers", "votes", "aggregate", "student"):
        assert not list((tmp_path / "cache").glob(f"{stage}/*")), f"the {stage} stage was built before the error"


@pytest.mark.slow
def test_views_of_augmented_images_are_refused_before_compute(folder, tmp_path):
    root, labels = folder
    np.save(tmp_path / "e.npy", _embeddings(labels))
    done = run_cli("train.py", [*_args(root, tmp_path / "e.npy", tmp_path), "student.semi.method=consistency"])
    assert done.returncode == 2
    assert "student.semi.method=consistency needs features of augmented images" in done.stderr
    assert not (tmp_path / "cache" / "tensors").exists()


@pytest.mark.slow
def test_precomputed_embeddings_get_their_people_through_the_folders_csv(folder, tmp_path):
    """The embeddings share the CSV's row order, so data.person_column names their people too: PATE on them is
    person-level and each person's rows go to one teacher."""
    root, labels = folder
    people = tmp_path / "shapes"
    shutil.copytree(root, people)
    header, *rows = (people / "labels.csv").read_text().splitlines()
    (people / "labels.csv").write_text(
        "\n".join([header + ",person", *(f"{row},p{i // 5}" for i, row in enumerate(rows))]) + "\n"
    )
    path = tmp_path / "embeddings.npy"
    np.save(path, _embeddings(labels))
    cfg = compose_config([*_args(people, path, tmp_path), "data.person_column=person"])
    metrics = run(cfg, output_dir=tmp_path / "run")
    assert metrics["person_level"] and metrics["images_per_person"] == 5
    graph, data, _ = prepare(cfg)
    parts = read_teacher_parts(ArtifactStore(Path(cfg.paths.cache_dir)).get(graph.release.stages["partition"]))
    assert all(len({row // 5 for row in part.tolist()}) * 5 == len(part) for part in parts)  # whole people
