"""The synthetic CelebA: layout, readability, constraints, prevalences, idempotence, determinism."""

import json
import re

import numpy as np
import pytest

from pate.data import synthetic
from pate.data.celeba import (
    ATTRIBUTE_NAMES,
    load_celeba,
    read_attributes,
    read_splits,
)
from pate.data.synthetic import IN_PROGRESS, MARKER, generate_synthetic_celeba
from pate.data.synthetic_attributes import (
    ANNOTATION_NOISE,
    HARD_CONSTRAINTS,
    LATENT_NAMES,
    PREVALENCE,
    sample_attributes,
)
from pate.data.synthetic_render import render_face

COL = {name: j for j, name in enumerate(ATTRIBUTE_NAMES)}


@pytest.fixture(scope="module")
def tiny(tmp_path_factory):
    root = tmp_path_factory.mktemp("synthetic") / "celeba"
    return generate_synthetic_celeba(root, num_images=200, image_size=32, seed=7, progress=False)


@pytest.fixture(scope="module")
def large_sample():
    """Attributes only (no rendering): cheap, so large enough for tight prevalence checks."""
    return sample_attributes(100_000, np.random.default_rng(123))


def constraint_violations(labels: np.ndarray) -> dict[str, int]:
    """Rows breaking each of HARD_CONSTRAINTS."""
    out = {}
    for kind, names in HARD_CONSTRAINTS:
        cols = labels[:, [COL[n] for n in names]].astype(int)
        if kind == "at_most_one":
            bad = cols.sum(axis=1) > 1
        elif kind == "excludes":
            bad = (cols[:, 0] == 1) & (cols[:, 1] == 1)
        elif kind == "implies":
            bad = (cols[:, 0] == 1) & (cols[:, 1] == 0)
        elif kind == "at_least_one":
            bad = cols.sum(axis=1) == 0
        else:
            raise AssertionError(f"unknown constraint kind {kind}")
        out[f"{kind}{names}"] = int(bad.sum())
    return out


def test_layout_is_celebas(tiny):
    images = sorted(p.name for p in (tiny / "img_align_celeba").iterdir())
    assert images == [f"{i:06d}.jpg" for i in range(1, 201)]
    lines = (tiny / "list_attr_celeba.txt").read_text().splitlines()
    assert lines[0] == "200" and lines[1] == " ".join(ATTRIBUTE_NAMES) and len(lines) == 202
    row = re.compile(r"^\d{6}\.jpg( (-1| 1)){40}$")  # values right-aligned in two columns, as in CelebA
    assert all(row.match(line) for line in lines[2:])
    assert lines[2].startswith("000001.jpg ")
    partition = (tiny / "list_eval_partition.txt").read_text().splitlines()
    assert partition[0] == "000001.jpg 0" and partition[-1] == "000200.jpg 2"
    assert json.loads((tiny / MARKER).read_text())["params"]["num_images"] == 200
    assert not (tiny / IN_PROGRESS).exists()


def test_reader_reads_it(tiny, tmp_path):
    data = load_celeba(tiny, image_size=16, cache_dir=tmp_path, progress=False)
    assert data.images.shape == (200, 3, 16, 16) and data.images.dtype == np.uint8
    assert [len(data.indices(s)) for s in ("train", "val", "test")] == [160, 10, 30]
    assert data.images.std() > 20  # faces, not blank images
    assert constraint_violations(data.labels) == {k: 0 for k in constraint_violations(data.labels)}


def test_hard_constraints_hold_on_every_row(large_sample):
    for labels in (large_sample.true, large_sample.labels):
        violations = constraint_violations(labels)
        assert all(v == 0 for v in violations.values()), violations


def test_constraints_are_not_vacuous(large_sample):
    """Each constrained attribute actually occurs, so the row checks above test something."""
    present = large_sample.labels.mean(axis=0)
    for _, names in HARD_CONSTRAINTS:
        assert all(present[COL[n]] > 0.01 for n in names)


def test_prevalences_match_celeba(large_sample):
    """Binomial sd at n = 100,000 is at most 0.0016, the calibration's own Monte Carlo error about as much;
    0.008 is over 3.5 combined sd."""
    observed = large_sample.labels.mean(axis=0)
    target = np.array([PREVALENCE[n] for n in ATTRIBUTE_NAMES])
    worst = int(np.argmax(np.abs(observed - target)))
    assert np.abs(observed - target).max() < 0.008, (ATTRIBUTE_NAMES[worst], observed[worst], target[worst])


def test_prevalence_table_is_celebas():
    assert set(PREVALENCE) == set(ATTRIBUTE_NAMES)
    for name, value in {
        "Male": 0.42,
        "Young": 0.77,
        "Smiling": 0.48,
        "No_Beard": 0.83,
        "Wearing_Lipstick": 0.47,
        "Eyeglasses": 0.065,
        "Wearing_Hat": 0.05,
        "Black_Hair": 0.24,
        "Blond_Hair": 0.15,
        "Brown_Hair": 0.2,
        "Gray_Hair": 0.04,
        "Bald": 0.02,
        "Attractive": 0.51,
    }.items():
        assert abs(PREVALENCE[name] - value) < 0.01, name


def test_correlations_go_the_celeba_way(large_sample):
    a = {n: large_sample.labels[:, COL[n]].astype(bool) for n in ATTRIBUTE_NAMES}
    male, young = a["Male"], a["Young"]
    assert a["Wearing_Lipstick"][male].mean() < 0.05
    assert a["Wearing_Lipstick"][~male].mean() > 0.6
    assert a["Heavy_Makeup"][male].mean() < 0.05
    assert a["Wearing_Necktie"][~male].mean() < 0.01
    assert a["Gray_Hair"][young].mean() * 5 < a["Gray_Hair"][~young].mean()
    assert a["Young"][male].mean() < a["Young"][~male].mean()
    assert a["Mouth_Slightly_Open"][a["Smiling"]].mean() > a["Mouth_Slightly_Open"][~a["Smiling"]].mean() + 0.2


def test_annotation_noise_is_small_and_only_on_free_attributes(large_sample):
    flipped = (large_sample.true != large_sample.labels).mean(axis=0)
    constrained = {n for _, names in HARD_CONSTRAINTS for n in names}
    assert not constrained & set(ANNOTATION_NOISE)
    for name, j in COL.items():
        if name not in ANNOTATION_NOISE:
            assert flipped[j] == 0, name
        else:  # expected fraction of flipped labels: 2 r min(p, 1 - p); sd < 0.0008 at n = 100,000
            p = PREVALENCE[name]
            assert abs(flipped[j] - 2 * ANNOTATION_NOISE[name] * min(p, 1 - p)) < 0.003, name
            assert flipped[j] < 0.05


def test_sampler_is_deterministic_per_seed():
    a = sample_attributes(500, np.random.default_rng(1))
    b = sample_attributes(500, np.random.default_rng(1))
    c = sample_attributes(500, np.random.default_rng(2))
    assert np.array_equal(a.labels, b.labels) and np.array_equal(a.latents, b.latents)
    assert not np.array_equal(a.labels, c.labels)
    assert a.latents.shape == (500, len(LATENT_NAMES)) and a.labels.dtype == np.uint8


def _base_face():
    """A consistent face where every attribute can be toggled without breaking a constraint."""
    face = {n: False for n in ATTRIBUTE_NAMES}
    face.update(Male=True, No_Beard=True, Brown_Hair=True, Young=True)
    return face


TOGGLES = {  # attribute -> the changes that turn it on (constraint partners included)
    **{n: {n: True} for n in ATTRIBUTE_NAMES if n not in ("Male", "No_Beard", "Brown_Hair", "Young")},
    "Bald": {"Bald": True, "Brown_Hair": False},
    "Black_Hair": {"Black_Hair": True, "Brown_Hair": False},
    "Blond_Hair": {"Blond_Hair": True, "Brown_Hair": False},
    "Gray_Hair": {"Gray_Hair": True, "Brown_Hair": False},
    "Goatee": {"Goatee": True, "No_Beard": False},
    "Mustache": {"Mustache": True, "No_Beard": False},
    "No_Beard": {"No_Beard": False},
    "Male": {"Male": False},
    "Young": {"Young": False},
    "Wearing_Lipstick": {"Wearing_Lipstick": True},
    "Heavy_Makeup": {"Heavy_Makeup": True, "Wearing_Lipstick": True},
}
NOT_DRAWN = {"Attractive", "Young"}  # visible only through correlated attributes


@pytest.mark.parametrize("name", sorted(set(ATTRIBUTE_NAMES) - {"Brown_Hair"}))
def test_every_drawn_attribute_changes_the_image(name):
    """Same seed, one attribute toggled: a drawn attribute changes some pixel by more than 8 of 255 (pose,
    background and colours come from streams the toggle does not touch); Attractive and Young change nothing."""
    latents = {"age": 0.0, "build": 0.0, "glam": 0.0, "mood": 0.0, "beauty": 0.0}
    face = _base_face()
    toggled = {**face, **TOGGLES[name]}
    base = np.asarray(render_face(face, latents, 64, np.random.default_rng(0)), dtype=int)
    other = np.asarray(render_face(toggled, latents, 64, np.random.default_rng(0)), dtype=int)
    diff = np.abs(base - other).max()
    if name in NOT_DRAWN:
        assert diff == 0
    else:
        assert diff > 8, name


def test_generation_is_idempotent(tiny):
    files = (tiny / "list_attr_celeba.txt", tiny / "img_align_celeba" / "000001.jpg")
    stamps = {p: p.stat().st_mtime_ns for p in files}
    assert generate_synthetic_celeba(tiny, num_images=200, image_size=32, seed=7, progress=False) == tiny
    assert {p: p.stat().st_mtime_ns for p in stamps} == stamps


def test_parameter_mismatch_names_root_and_both_parameter_sets(tiny):
    with pytest.raises(ValueError, match=r"(?s)celeba.*'seed': 7.*'seed': 8"):
        generate_synthetic_celeba(tiny, num_images=200, image_size=32, seed=8, progress=False)


def test_interrupted_generation_is_regenerated(tmp_path):
    root = tmp_path / "celeba"
    (root / "img_align_celeba").mkdir(parents=True)
    (root / IN_PROGRESS).write_text("{}")
    (root / "img_align_celeba" / "999999.jpg").write_bytes(b"half a jpeg")
    generate_synthetic_celeba(root, num_images=20, image_size=16, seed=1, progress=False)
    assert max(p.name for p in (root / "img_align_celeba").iterdir()) == "000020.jpg"
    assert (root / MARKER).exists() and not (root / IN_PROGRESS).exists()
    assert len(read_attributes(root)[0]) == 20


def test_foreign_non_empty_directory_is_refused(tmp_path):
    (tmp_path / "list_attr_celeba.txt").write_text("real data?")
    with pytest.raises(ValueError, match="refusing"):
        generate_synthetic_celeba(tmp_path, num_images=20, image_size=16, progress=False)
    assert (tmp_path / "list_attr_celeba.txt").read_text() == "real data?"


def test_generation_is_deterministic_per_seed_whatever_the_workers(tmp_path):
    def files(root):
        paths = sorted(p for p in root.rglob("*") if p.is_file() and "lock" not in p.name)
        return {p.relative_to(root): p.read_bytes() for p in paths}

    a = files(generate_synthetic_celeba(tmp_path / "a", 30, 16, seed=3, num_workers=0, progress=False))
    b = files(generate_synthetic_celeba(tmp_path / "b", 30, 16, seed=3, num_workers=2, progress=False))
    c = files(generate_synthetic_celeba(tmp_path / "c", 30, 16, seed=4, num_workers=0, progress=False))
    assert a == b
    assert a.keys() == c.keys() and a != c


def test_split_codes_are_contiguous_blocks(tiny):
    names, _ = read_attributes(tiny)
    assert read_splits(tiny, names).tolist() == [0] * 160 + [1] * 10 + [2] * 30


@pytest.mark.parametrize(
    "kwargs, message",
    [
        ({"num_images": 0}, "num_images=0"),
        ({"image_size": 8}, "image_size=8"),
        ({"split_fractions": (0.8, 0.1, 0.2)}, "split_fractions"),
        ({"split_fractions": (0.8, 0.2)}, "split_fractions"),
        ({"num_images": 5, "split_fractions": (0.8, 0.05, 0.15)}, r"leaves the \['val'\] split"),
        ({"seed": -1}, "seed=-1"),
    ],
)
def test_bad_parameters_are_rejected_before_any_work(tmp_path, kwargs, message):
    args = {"num_images": 20, "image_size": 16, **kwargs}
    with pytest.raises(ValueError, match=message):
        generate_synthetic_celeba(tmp_path / "x", progress=False, **args)
    assert not (tmp_path / "x").exists()


def test_generator_version_is_recorded(tiny):
    assert json.loads((tiny / MARKER).read_text())["params"]["generator_version"] == synthetic.GENERATOR_VERSION


@pytest.mark.parametrize("damage", ["delete_attributes", "delete_image", "truncate_image", "edit_partition"])
def test_a_damaged_set_regenerates_itself_identically(tmp_path, damage, caplog):
    root = generate_synthetic_celeba(tmp_path / "celeba", num_images=40, image_size=32, seed=3, progress=False)
    files = sorted(p for p in root.rglob("*") if p.is_file() and not p.name.startswith("."))
    before = {p: p.read_bytes() for p in files}
    image = root / "img_align_celeba" / "000007.jpg"
    if damage == "delete_attributes":
        (root / "list_attr_celeba.txt").unlink()
    elif damage == "delete_image":
        image.unlink()
    elif damage == "truncate_image":
        image.write_bytes(image.read_bytes()[:100])
    else:
        (root / "list_eval_partition.txt").write_text((root / "list_eval_partition.txt").read_text()[:-3] + "1\n")
    caplog.set_level("WARNING")
    generate_synthetic_celeba(root, num_images=40, image_size=32, seed=3, progress=False)
    assert "is damaged" in caplog.text and "regenerating" in caplog.text
    assert {p: p.read_bytes() for p in files} == before


# SHA-256 of 12 faces (sizes 16, 32, 64) rendered by the code of commit 20854fa, before render_face was split into
# named parts: the split must not move a pixel (the data's content fingerprint keys every cached stage). PIL's
# drawing may differ between releases, so the hash is checked with the Pillow it was recorded with.
_GOLDEN_FACES = ("13.0.0", "52cca9f4e3e7e78097c9e6ab370425f4404e7eebac3f9e38d400349cc8bd7525")


def test_the_renderer_draws_the_recorded_faces():
    import hashlib

    import PIL

    version, expected = _GOLDEN_FACES
    if PIL.__version__ != version:
        pytest.skip(f"golden faces recorded with Pillow {version}, this is {PIL.__version__}")
    sample = sample_attributes(12, np.random.default_rng(11))
    digest = hashlib.sha256()
    for i in range(12):
        attributes = {name: bool(value) for name, value in zip(ATTRIBUTE_NAMES, sample.true[i])}
        face = render_face(
            attributes, dict(zip(LATENT_NAMES, sample.latents[i])), (16, 32, 64)[i % 3], np.random.default_rng(i)
        )
        digest.update(np.asarray(face).tobytes())
    assert digest.hexdigest() == expected
