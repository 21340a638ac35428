"""A folder's person column (``data.person_column``): which person each image shows, kept whole by the splits."""

from __future__ import annotations

import hashlib
import shutil
from pathlib import Path

import numpy as np
import pytest

from pate.data.celeba import content_fingerprint
from pate.data.labelled_images import SPLITS
from pate.data.multilabel_folder import MultilabelFolder, read_label_table, seeded_split
from pate.data.people import split_by_person
from pate.pipeline.checks import UserError
from pate.pipeline.runner import prepare
from tests.conftest import compose_config
from tests.data.folder_data import label_names, write_folder

NUM_IMAGES, NUM_LABELS = 100, 5


def _with_people(root: Path, person_of_row, column: str = "person") -> None:
    """Add a column ``column`` after the file column of ``root``'s labels.csv, row i showing ``person_of_row(i)``."""
    path = root / "labels.csv"
    header, *rows = path.read_text().splitlines()
    head = header.split(",")
    lines = [",".join([head[0], column, *head[1:]])]
    for i, row in enumerate(rows):
        cells = row.split(",")
        lines.append(",".join([cells[0], person_of_row(i), *cells[1:]]))
    path.write_text("\n".join(lines) + "\n")


@pytest.fixture(scope="module")
def images(tmp_path_factory) -> Path:
    """The image files, written once; each test copies its labels.csv in beside them."""
    root = tmp_path_factory.mktemp("people") / "shapes"
    write_folder(root, NUM_LABELS, num_images=NUM_IMAGES, split_column=True)  # 70 train, 10 val, 20 test rows
    return root


def _folder(images: Path, tmp_path: Path, person_of_row, split_column: bool = True) -> Path:
    """A folder of ``images``'s files with a fresh labels.csv: a person column, and the split column or none."""
    root = tmp_path / "shapes"
    root.mkdir(parents=True)
    shutil.copytree(images / "img", root / "img")  # a symlink leading out of data.root would be refused
    lines = (images / "labels.csv").read_text().splitlines()
    if not split_column:  # write_folder puts the split column third
        lines = [",".join(cell for i, cell in enumerate(line.split(",")) if i != 2) for line in lines]
    (root / "labels.csv").write_text("\n".join(lines) + "\n")
    _with_people(root, person_of_row)
    return root


def _reader(root: Path, **kwargs) -> MultilabelFolder:
    return MultilabelFolder(str(root), image_size=16, person_column="person", **kwargs)


def test_the_person_column_is_no_label_and_names_each_rows_person(images, tmp_path):
    root = _folder(images, tmp_path, lambda i: f"p{i // 10}")
    table = read_label_table(root / "labels.csv", "person")
    assert table.label_names == tuple(label_names(NUM_LABELS))  # the person column is not among them
    assert table.person.tolist() == [f"p{i // 10}" for i in range(NUM_IMAGES)]
    assert _reader(root).label_names() == tuple(label_names(NUM_LABELS))
    assert read_label_table(images / "labels.csv").person is None  # no person column asked: none read


def test_a_split_column_that_splits_a_person_is_refused_naming_the_person_and_the_lines(images, tmp_path):
    """Four images per person: rows 68 to 71 show p17, and the split column puts rows 0-69 in train and 70-79 in
    val, so p17 is in both; the header is line 1, so row r is line r + 2."""
    root = _folder(images, tmp_path, lambda i: f"p{i // 4}")
    with pytest.raises(
        ValueError, match=r"person 'p17' has images in two splits, train \(line 70\) and val \(line 72\)"
    ):
        _reader(root).load(tmp_path / "cache", progress=False)
    assert not (tmp_path / "cache").exists()  # refused before any image was decoded


def test_a_split_column_that_keeps_each_person_whole_is_read_as_it_is(images, tmp_path):
    root = _folder(images, tmp_path, lambda i: f"p{i // 10}")  # 10 images each: the 70/10/20 cuts fall between people
    data = _reader(root).load(tmp_path / "cache", progress=False)
    assert data.person.tolist() == [f"p{i // 10}" for i in range(NUM_IMAGES)]
    assert (data.split == read_label_table(images / "labels.csv").split).all()


def test_a_drawn_split_permutes_people_not_rows(images, tmp_path):
    """Without a split column the cut falls between people (3 to 7 images each) and the same seed draws the same
    split (each split's share: ``test_a_drawn_split_by_person_holds_its_share_and_moves_no_one_else``)."""
    counts = np.random.default_rng(1).integers(3, 8, NUM_IMAGES)
    person = np.repeat([f"p{j}" for j in range(NUM_IMAGES)], counts)[:NUM_IMAGES]
    root = _folder(images, tmp_path, lambda i: str(person[i]), split_column=False)
    data = _reader(root, split_fractions=(0.6, 0.2, 0.2), split_seed=3).load(tmp_path / "cache", progress=False)
    for who in np.unique(person):
        assert len(set(data.split[person == who].tolist())) == 1, who
    again = _reader(root, split_fractions=(0.6, 0.2, 0.2), split_seed=3).load(tmp_path / "cache", progress=False)
    assert (again.split == data.split).all()
    rows = seeded_split(NUM_IMAGES, (0.6, 0.2, 0.2), 3)  # the row permutation splits people
    assert any(len(set(rows[person == who].tolist())) > 1 for who in np.unique(person))


def test_a_drawn_split_by_person_holds_its_share_and_moves_no_one_else():
    """Each person's split is drawn for them alone: over 20,000 people each split holds its share of them within 4
    standard deviations, and one person removed or added leaves every other person in their split."""
    person = np.array([f"id{j}" for j in range(20_000)])
    split = split_by_person(person, (0.6, 0.3, 0.1), 5)
    for name, share in zip(("train", "val", "test"), (0.6, 0.3, 0.1)):
        sd = np.sqrt(len(person) * share * (1 - share))
        assert abs((split == SPLITS[name]).sum() - share * len(person)) < 4 * sd, name
    fewer = split_by_person(person[1:], (0.6, 0.3, 0.1), 5)
    more = split_by_person(np.concatenate([person, ["newcomer"] * 7]), (0.6, 0.3, 0.1), 5)
    assert (fewer == split[1:]).all() and (more[: len(person)] == split).all()
    assert (split_by_person(person, (0.6, 0.3, 0.1), 6) != split).any()


@pytest.mark.parametrize(
    "person_of_row,column,message",
    [
        (lambda i: "" if i == 5 else "p", "person", r"line 7, column 2 \(person\): ''; expected the person the image"),
        (lambda i: "p", "who", r"data.person_column='person' but .*labels.csv, line 1, has 0 columns of that name"),
    ],
    ids=["empty_person", "missing_column"],
)
def test_an_empty_person_or_a_missing_column_is_one_line(images, tmp_path, person_of_row, column, message):
    root = tmp_path / "shapes"
    root.mkdir()
    shutil.copytree(images / "img", root / "img")  # a symlink leading out of data.root would be refused
    (root / "labels.csv").write_text((images / "labels.csv").read_text())
    _with_people(root, person_of_row, column)
    with pytest.raises(ValueError, match=message):
        _reader(root).load(tmp_path / "cache", progress=False)


def test_people_enter_the_fingerprint_and_data_without_people_hash_as_before(images, tmp_path):
    """The fingerprint keys every stage: people are part of the content, and data without people hash by the
    formula of before people were read, so every existing cache key stays."""
    root = _folder(images, tmp_path, lambda i: f"p{i // 10}")
    plain = MultilabelFolder(str(images), image_size=16).load(tmp_path / "cache", progress=False)
    with_people = _reader(root).load(tmp_path / "cache", progress=False)
    other_people = _folder(images, tmp_path / "other", lambda i: f"q{i // 10}")
    assert plain.person is None and with_people.fingerprint != plain.fingerprint
    assert _reader(other_people).load(tmp_path / "cache", progress=False).fingerprint != with_people.fingerprint
    h = hashlib.sha256()  # the formula of then, on the same content
    for array in (plain.labels, plain.split):
        h.update(f"{array.dtype.str}{array.shape}".encode())
        h.update(np.ascontiguousarray(array).tobytes())
    h.update("\0".join(plain.filenames).encode())
    h.update(b"images")
    assert content_fingerprint(plain.labels, plain.split, plain.filenames, "images") == h.hexdigest()[:16]


@pytest.mark.slow  # composes the config and reads the data
def test_through_the_config_a_split_person_is_one_line_before_any_image_is_decoded(images, tmp_path):
    root = _folder(images, tmp_path, lambda i: f"p{i // 4}")
    cfg = compose_config(
        ["debug=tiny", "data=multilabel_folder", f"data.root={root}", "data.person_column=person"], tmp_path
    )
    with pytest.raises(UserError, match=r"person 'p17' has images in two splits") as caught:
        prepare(cfg)
    assert "\n" not in str(caught.value)
    assert not list((tmp_path / "cache").glob("tensors/*"))
