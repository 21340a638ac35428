"""CelebA's identity file (``identity_CelebA.txt``, the original and torchvision layouts): the person of every
image, kept in one split, in the content fingerprint; Kaggle's copy has none, and asking it for people says so."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from pate.data.celeba import load_celeba
from pate.data.readers import CelebAFormat
from pate.data.synthetic import generate_synthetic_celeba
from pate.pipeline.checks import UserError
from pate.pipeline.runner import prepare, run
from tests.conftest import compose_config
from tests.data.test_celeba_layouts import _to_kaggle, _to_torchvision

pytestmark = pytest.mark.slow  # generates and decodes images: not in the fast loop


def _people(root: Path, size: int = 3, across: bool = False) -> np.ndarray:
    """Write ``root/identity_CelebA.txt``: consecutive images of one split, ``size`` at a time, are one person (in
    reverse file order, as any order is allowed); ``across``: the last train image and the first after it share one."""
    rows = [line.split() for line in (root / "list_eval_partition.txt").read_text().splitlines()]
    person, current, count, last_split = [], 0, 0, None
    for name, split in rows:
        if split != last_split or count == size:
            current, count, last_split = current + 1, 0, split
        person.append(f"{current}")
        count += 1
    if across:
        first_after = next(i for i, (_, split) in enumerate(rows) if split != "0")
        person[first_after] = person[first_after - 1]
    lines = [f"{name} {who}" for (name, _), who in zip(rows, person)][::-1]
    (root / "identity_CelebA.txt").write_text("\n".join(lines) + "\n")
    return np.array(person)


@pytest.fixture(scope="module")
def original(tmp_path_factory) -> Path:
    return generate_synthetic_celeba(
        tmp_path_factory.mktemp("celeba") / "original", 400, image_size=32, split_fractions=(0.8, 0.05, 0.15), seed=0
    )


def test_the_identity_file_names_each_images_person_and_enters_the_fingerprint(original, tmp_path):
    plain = load_celeba(original, 16, tmp_path / "cache", progress=False)
    assert plain.person is None and not CelebAFormat(str(original), 16).has_people()
    root = _to_torchvision(original, tmp_path / "tv")
    person = _people(root / "celeba")
    assert CelebAFormat(str(root), 16).has_people()
    data = load_celeba(root, 16, tmp_path / "cache", progress=False)
    assert data.person.tolist() == person.tolist() and data.fingerprint != plain.fingerprint
    assert (data.labels == plain.labels).all() and (data.split == plain.split).all()


def test_a_person_in_two_splits_or_a_missing_image_is_one_line(original, tmp_path):
    root = _to_torchvision(original, tmp_path / "tv")
    _people(root / "celeba", across=True)
    with pytest.raises(ValueError, match=r"identity_CelebA.txt: person '\d+' has images in two splits, train \(line"):
        load_celeba(root, 16, tmp_path / "cache", progress=False)
    identity = root / "celeba" / "identity_CelebA.txt"
    identity.write_text("\n".join(identity.read_text().splitlines()[1:]) + "\n")
    with pytest.raises(ValueError, match=r"does not match the attribute file: 1 image\(s\) without a person"):
        load_celeba(root, 16, tmp_path / "cache", progress=False)


def test_kaggles_copy_has_no_people_and_asking_for_them_names_the_file(original, tmp_path):
    root = _to_kaggle(original, tmp_path / "kaggle")
    assert not CelebAFormat(str(root), 16).has_people()
    cfg = compose_config(["debug=tiny", "data=celeba", f"data.root={root}", "privacy.unit=person"], tmp_path)
    with pytest.raises(UserError, match=r"the data name no people; expected CelebA's identity_CelebA.txt under"):
        prepare(cfg)


def test_pate_on_celeba_with_people_is_person_level_by_default(original, tmp_path):
    root = _to_torchvision(original, tmp_path / "tv")
    _people(root / "celeba", size=4)
    cfg = compose_config(["debug=tiny", "data=celeba", f"data.root={root}"], tmp_path)
    metrics = run(cfg, output_dir=tmp_path / "run")
    assert metrics["person_level"] and metrics["images_per_person"] == 4
