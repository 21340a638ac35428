"""The CelebA reader and tensor cache, on a tiny fake CelebA written in CelebA's exact format."""

import json
import logging
import os

import numpy as np
import pytest
from PIL import Image

from pate.data import tensor_cache
from pate.data.labelled_images import SPLITS
from pate.data.celeba import (
    ATTRIBUTE_NAMES,
    check_celeba_root,
    load_celeba,
    read_attributes,
    read_label_names,
    read_splits,
)

# Non-square like CelebA's 178 x 218 (w x h): the central square is rows 4..23 of 28.
WIDTH, HEIGHT = 20, 28
COLORS = [(200, 30, 30), (30, 200, 30), (30, 30, 200), (220, 220, 40), (40, 220, 220), (120, 120, 120)]
CODES = [0, 0, 0, 1, 2, 2]


def labels_of(i: int) -> np.ndarray:
    """A distinct, known 0/1 pattern per image."""
    return np.array([(i + j) % 3 == 0 for j in range(40)], dtype=np.uint8)


def write_attr_file(root, rows, count=None, names=ATTRIBUTE_NAMES):
    """CelebA's layout: count, names, then '000001.jpg -1  1 ...' (each value right-aligned in 2 columns)."""
    lines = [str(len(rows) if count is None else count), " ".join(names) + " "]
    lines += [name + "".join(f" {v:>2}" for v in values) for name, values in rows]
    (root / "list_attr_celeba.txt").write_text("\n".join(lines) + "\n")


@pytest.fixture
def fake_celeba(tmp_path):
    root = tmp_path / "celeba"
    (root / "img_align_celeba").mkdir(parents=True)
    rows = []
    for i, color in enumerate(COLORS):
        # the central square in the image's colour, the bands above and below (cropped away) in black
        img = np.zeros((HEIGHT, WIDTH, 3), dtype=np.uint8)
        img[4:24] = color
        name = f"{i + 1:06d}.jpg"
        Image.fromarray(img).save(root / "img_align_celeba" / name, quality=95, subsampling=0)
        rows.append((name, [str(v) for v in 2 * labels_of(i).astype(int) - 1]))
    write_attr_file(root, rows)
    (root / "list_eval_partition.txt").write_text("".join(f"{n} {c}\n" for (n, _), c in zip(rows, CODES)))
    return root


@pytest.fixture
def count_decodes(monkeypatch):
    """Count calls to the decoder (in-process decoding: num_workers=0)."""
    calls = []
    real = tensor_cache.decode_image

    def counting(path, size):
        calls.append(path)
        return real(path, size)

    monkeypatch.setattr(tensor_cache, "decode_image", counting)
    return calls


def test_read_attributes_maps_plus_minus_one_to_one_zero(fake_celeba):
    names, labels = read_attributes(fake_celeba)
    assert names == [f"{i + 1:06d}.jpg" for i in range(6)]
    assert labels.dtype == np.uint8 and labels.shape == (6, 40)
    assert np.array_equal(labels, np.stack([labels_of(i) for i in range(6)]))


def test_read_partition_aligns_codes_to_filenames(fake_celeba):
    names, _ = read_attributes(fake_celeba)
    assert read_splits(fake_celeba, names).tolist() == CODES
    assert read_splits(fake_celeba, names[::-1]).tolist() == CODES[::-1]
    assert read_splits(fake_celeba, names).dtype == np.int8


def test_load_celeba_decodes_central_square(fake_celeba, tmp_path):
    data = load_celeba(fake_celeba, image_size=8, cache_dir=tmp_path / "cache", progress=False)
    assert isinstance(data.images, np.memmap)
    assert data.images.dtype == np.uint8 and data.images.shape == (6, 3, 8, 8)
    assert data.label_names == ATTRIBUTE_NAMES and len(data) == 6
    # The black bands lie outside the central square, so every pixel keeps the image's colour (JPEG error only).
    err = np.abs(data.images.astype(int) - np.array(COLORS)[:, :, None, None])
    assert err.max() < 25
    assert data.indices("train").tolist() == [0, 1, 2]
    assert data.indices("val").tolist() == [3] and data.indices("test").tolist() == [4, 5]
    assert np.array_equal(data.labels, read_attributes(fake_celeba)[1])
    with pytest.raises(ValueError, match="split_name='dev'"):
        data.indices("dev")


def test_cache_is_reused_without_decoding(fake_celeba, tmp_path, monkeypatch):
    first = load_celeba(fake_celeba, 8, tmp_path / "cache", progress=False)

    def fail(*_):
        raise AssertionError("the cache should have been reused")

    monkeypatch.setattr(tensor_cache, "decode_image", fail)
    second = load_celeba(fake_celeba, 8, tmp_path / "cache", progress=False)
    assert np.array_equal(first.images, second.images)
    with pytest.raises(AssertionError, match="reused"):  # a different size is a different cache
        load_celeba(fake_celeba, 6, tmp_path / "cache", progress=False)


def test_a_changed_attribute_file_rebuilds_the_cache_in_place(fake_celeba, tmp_path, count_decodes, caplog):
    load_celeba(fake_celeba, 8, tmp_path / "cache", progress=False)
    attr = fake_celeba / "list_attr_celeba.txt"
    stat = attr.stat()
    os.utime(attr, ns=(stat.st_atime_ns, stat.st_mtime_ns + 10**9))  # a regenerated dataset
    with caplog.at_level(logging.WARNING, logger="pate.data.tensor_cache"):
        load_celeba(fake_celeba, 8, tmp_path / "cache", progress=False)
    assert len(count_decodes) == 12 and "rebuilding" in caplog.text
    assert len(list((tmp_path / "cache").glob("*.npy"))) == 1


def _cut(path):
    path.write_bytes(path.read_bytes()[: path.stat().st_size // 2])


def _replace(path):
    Image.fromarray(np.full((HEIGHT, WIDTH, 3), 90, dtype=np.uint8)).save(path, quality=70)


def _touch(path):
    stat = path.stat()
    os.utime(path, ns=(stat.st_atime_ns, stat.st_mtime_ns + 10**9))


@pytest.mark.parametrize("edit", [_cut, _replace, _touch])
def test_an_image_edited_after_its_decode_is_never_served_stale(fake_celeba, tmp_path, count_decodes, caplog, edit):
    """Per-file size and modification time: the cache is rebuilt, with a line naming the file; a cut image then
    fails its decode by name."""
    first = load_celeba(fake_celeba, 8, tmp_path / "cache", progress=False)
    image = fake_celeba / "img_align_celeba" / "000004.jpg"
    edit(image)
    with caplog.at_level(logging.WARNING, logger="pate.data.tensor_cache"):
        if edit is _cut:
            with pytest.raises(ValueError, match=r"000004\.jpg: cannot decode this image"):
                load_celeba(fake_celeba, 8, tmp_path / "cache", progress=False)
        else:
            again = load_celeba(fake_celeba, 8, tmp_path / "cache", progress=False)
            assert len(count_decodes) == 12
            assert np.array_equal(np.asarray(again.images)[[0, 1, 2, 4, 5]], np.asarray(first.images)[[0, 1, 2, 4, 5]])
            assert (again.fingerprint != first.fingerprint) == (edit is _replace)
    assert "000004.jpg changed since it was decoded" in caplog.text and "rebuilding" in caplog.text


def test_a_missing_image_is_named_before_any_decode(fake_celeba, tmp_path, count_decodes):
    (fake_celeba / "img_align_celeba" / "000005.jpg").unlink()
    with pytest.raises(
        ValueError,
        match=r"000005\.jpg: no such image file, listed in .*list_attr_celeba\.txt on "
        r"line 7 \(1 of the 6 listed images are missing\)",
    ):
        load_celeba(fake_celeba, 8, tmp_path / "cache", progress=False)
    assert count_decodes == []


def _flip_last_byte(npy, sidecar):
    with open(npy, "r+b") as fh:
        fh.seek(-1, os.SEEK_END)
        last = fh.read(1)
        fh.seek(-1, os.SEEK_END)
        fh.write(bytes([last[0] ^ 0xFF]))


def _truncate(npy, sidecar):
    with open(npy, "r+b") as fh:
        fh.truncate(npy.stat().st_size - 10)


def _drop_sidecar(npy, sidecar):
    sidecar.unlink()


def _garble_sidecar(npy, sidecar):
    sidecar.write_text("{not json")


def _wrong_shape_in_sidecar(npy, sidecar):
    meta = json.loads(sidecar.read_text())
    meta["shape"][0] += 1
    sidecar.write_text(json.dumps(meta))


def _drop_data(npy, sidecar):
    npy.unlink()


@pytest.mark.parametrize(
    "damage", [_flip_last_byte, _truncate, _drop_sidecar, _garble_sidecar, _wrong_shape_in_sidecar, _drop_data]
)
def test_damaged_cache_is_detected_and_rebuilt(fake_celeba, tmp_path, count_decodes, caplog, damage):
    good = np.array(load_celeba(fake_celeba, 8, tmp_path / "cache", progress=False).images)
    (npy,) = (tmp_path / "cache").glob("*.npy")
    damage(npy, npy.with_suffix(".json"))
    with caplog.at_level(logging.WARNING, logger="pate.data.tensor_cache"):
        again = load_celeba(fake_celeba, 8, tmp_path / "cache", progress=False)
    assert len(count_decodes) == 12  # decoded twice: the damaged cache was not used
    assert "rebuilding" in caplog.text
    assert np.array_equal(again.images, good)
    assert load_celeba(fake_celeba, 8, tmp_path / "cache", progress=False) is not None
    assert len(count_decodes) == 12  # and the rebuilt cache is reused


def test_worker_processes_decode_the_same_bytes(fake_celeba, tmp_path):
    serial = load_celeba(fake_celeba, 8, tmp_path / "a", num_workers=0, progress=False)
    pooled = load_celeba(fake_celeba, 8, tmp_path / "b", num_workers=2, progress=False)
    assert np.array_equal(serial.images, pooled.images)


def test_missing_root_says_how_to_point_at_real_data(tmp_path):
    with pytest.raises(FileNotFoundError, match=r"nowhere.*data=celeba data\.root=/path/to/celeba"):
        check_celeba_root(tmp_path / "nowhere")


@pytest.mark.parametrize("member", ["img_align_celeba", "list_attr_celeba.txt", "list_eval_partition.txt"])
def test_missing_member_is_named(fake_celeba, member):
    target = fake_celeba / member
    if target.is_dir():
        for p in target.iterdir():
            p.unlink()
        target.rmdir()
    else:
        target.unlink()
    with pytest.raises(FileNotFoundError, match=rf"lacks .*{member}.*data\.root=/path/to/celeba"):
        load_celeba(fake_celeba, 8, fake_celeba.parent / "cache")


def _rows(root):
    lines = (root / "list_attr_celeba.txt").read_text().splitlines()
    return [(line.split()[0], line.split()[1:]) for line in lines[2:]]


def _count_too_high(root):
    write_attr_file(root, _rows(root), count=7)


def _wrong_names(root):
    names = list(ATTRIBUTE_NAMES)
    names[0], names[1] = names[1], names[0]
    write_attr_file(root, _rows(root), names=names)


def _value_zero(root):
    rows = _rows(root)
    rows[2][1][5] = "0"
    write_attr_file(root, rows)


def _short_row(root):
    rows = _rows(root)
    rows[1] = (rows[1][0], rows[1][1][:-1])
    write_attr_file(root, rows)


def _duplicate_name(root):
    rows = _rows(root)
    rows[3] = (rows[0][0], rows[3][1])
    write_attr_file(root, rows)


def _bad_count_line(root):
    write_attr_file(root, _rows(root), count="six")


@pytest.mark.parametrize(
    "corrupt, message",
    [
        (_count_too_high, r"list_attr_celeba\.txt: line 1 announces 7 images but the file holds 6 rows"),
        (_wrong_names, r"list_attr_celeba\.txt, line 2: expected the label names \('5_o_Clock_Shadow', "),
        (_value_zero, r"list_attr_celeba\.txt, line 5: value '0' for Bangs"),
        (_short_row, r"list_attr_celeba\.txt, line 4: expected a file name and 40 values, found 40 fields"),
        (_duplicate_name, r"list_attr_celeba\.txt, line 6: image '000001\.jpg' listed twice"),
        (_bad_count_line, r"list_attr_celeba\.txt, line 1: expected the number of images"),
    ],
)
def test_malformed_attribute_file_is_rejected_with_file_and_line(fake_celeba, corrupt, message):
    """Checked against CelebA's own 40 names, as a user who sets ``expected_labels`` asks."""
    corrupt(fake_celeba)
    with pytest.raises(ValueError, match=message):
        read_attributes(fake_celeba, expected=ATTRIBUTE_NAMES)


@pytest.mark.parametrize("num_labels", [1, 5, 100])
def test_the_label_names_come_from_the_data(fake_celeba, num_labels):
    """Any labels written in CelebA's format are read, their names and number taken from line 2."""
    names = [f"tag_{index:03d}" for index in range(num_labels)]
    rows = [
        (name, ["1" if (i + j) % 3 == 0 else "-1" for j in range(num_labels)])
        for i, (name, _) in enumerate(_rows(fake_celeba))
    ]
    write_attr_file(fake_celeba, rows, names=names)
    assert read_label_names(fake_celeba) == tuple(names)
    filenames, labels = read_attributes(fake_celeba)
    assert labels.shape == (len(filenames), num_labels)
    assert labels[0].tolist() == [1 if j % 3 == 0 else 0 for j in range(num_labels)]


def test_repeated_label_names_are_refused(fake_celeba):
    write_attr_file(fake_celeba, _rows(fake_celeba), names=["Smiling", *ATTRIBUTE_NAMES[1:-1], "Smiling"])
    with pytest.raises(ValueError, match=r"line 2: label names must be distinct, found \['Smiling'\]"):
        read_label_names(fake_celeba)


@pytest.mark.parametrize(
    "content, message",
    [
        ("000001.jpg 0\n000002.jpg 0\n", r"list_eval_partition\.txt does not match .* 4 image\(s\) without a split"),
        ("000001.jpg 3\n", r"list_eval_partition\.txt, line 1: expected '<file name> <code>'"),
        ("000001.jpg 0\n000001.jpg 1\n", r"list_eval_partition\.txt, line 2: image '000001\.jpg' listed twice"),
        ("".join(f"{i:06d}.jpg 0\n" for i in range(1, 8)), r"1 image\(s\) not in the attribute file .*000007\.jpg"),
    ],
)
def test_malformed_partition_file_is_rejected(fake_celeba, content, message):
    (fake_celeba / "list_eval_partition.txt").write_text(content)
    names, _ = read_attributes(fake_celeba)
    with pytest.raises(ValueError, match=message):
        read_splits(fake_celeba, names)


def test_splits_are_celebas_codes():
    assert SPLITS == {"train": 0, "val": 1, "test": 2}
    assert len(ATTRIBUTE_NAMES) == 40 and len(set(ATTRIBUTE_NAMES)) == 40
    assert ATTRIBUTE_NAMES[0] == "5_o_Clock_Shadow" and ATTRIBUTE_NAMES[20] == "Male" and ATTRIBUTE_NAMES[-1] == "Young"


@pytest.mark.parametrize(
    "kwargs, message",
    [
        ({"image_size": 0}, "image_size=0"),
        ({"num_workers": -1}, "num_workers=-1"),
    ],
)
def test_load_celeba_rejects_bad_arguments(fake_celeba, tmp_path, kwargs, message):
    args = {"image_size": 8, "cache_dir": tmp_path / "cache", **kwargs}
    with pytest.raises(ValueError, match=message):
        load_celeba(fake_celeba, **args)


def test_windows_line_endings_and_explicit_plus_signs_are_read(fake_celeba):
    attr = fake_celeba / "list_attr_celeba.txt"
    expected = read_attributes(fake_celeba)
    text = attr.read_text().replace(" 1", "+1").replace("\n", "\r\n") + "\r\n\r\n"
    attr.write_bytes(text.encode())
    names, labels = read_attributes(fake_celeba)
    assert names == expected[0] and np.array_equal(labels, expected[1])


def test_blank_line_inside_the_rows_is_rejected(fake_celeba):
    attr = fake_celeba / "list_attr_celeba.txt"
    lines = attr.read_text().splitlines()
    write = lines[:4] + [""] + lines[4:]
    attr.write_text("\n".join(write) + "\n")
    with pytest.raises(ValueError, match=r"line 1 announces 6 images but the file holds 7 rows"):
        read_attributes(fake_celeba)
    lines[0] = "7"
    attr.write_text("\n".join(lines[:4] + [""] + lines[4:]) + "\n")
    with pytest.raises(ValueError, match=r"line 5: expected a file name and 40 values, found 0 fields"):
        read_attributes(fake_celeba)
