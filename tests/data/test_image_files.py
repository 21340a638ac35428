"""One record is one file, and every bit depth reaches 8 bits by its range.

* Every path a label file lists is resolved before anything is read: no spelling or link of one file can sit in
  two rows (a private training image among the public queries), and no path leads outside ``data.root``.
* 16-bit images are scaled to 8 bits (v * 255 / 65535, rounded), never clipped; modes without a fixed range are
  refused by name; the console says once what was converted.
"""

from __future__ import annotations

import logging
import os
import struct
import zlib
from pathlib import Path

import numpy as np
import pytest
from PIL import Image

from pate.data.image_files import resolve_image_files
from pate.data.multilabel_folder import MultilabelFolder
from pate.data.tensor_cache import UnscalableImage, _eight_bits, decode_image


def _folder(root: Path, rows: list[tuple[str, str]], images: int = 6) -> Path:
    """``images`` small RGB PNGs ``img/0000i.png`` under ``root`` and ``labels.csv`` listing ``rows`` (file,
    split), one label each."""
    (root / "img").mkdir(parents=True, exist_ok=True)
    for i in range(images):
        Image.new("RGB", (6, 6), (40 * i, 10, 200 - 30 * i)).save(root / "img" / f"{i:05d}.png")
    lines = ["file,cat,split", *(f"{name},{i % 2},{split}" for i, (name, split) in enumerate(rows))]
    (root / "labels.csv").write_text("\n".join(lines) + "\n")
    return root


BASE_ROWS = [(f"img/{i:05d}.png", "train" if i < 4 else "test") for i in range(6)]


def _load(root: Path, cache: Path):
    return MultilabelFolder(str(root), image_size=4).load(cache, progress=False)


# ------------------------------------------------------------------------------------ one record, one file
def _same_file(root: Path, spelling: str) -> str:
    """Make ``spelling`` (a spelling kind) name ``img/00000.png``, the first training image; return the name."""
    if spelling == "symlink":
        os.symlink("00000.png", root / "img" / "link.png")
        return "img/link.png"
    if spelling == "symlinked_dir":
        os.symlink("img", root / "again")
        return "again/00000.png"
    if spelling == "hard_link":
        os.link(root / "img" / "00000.png", root / "img" / "hard.png")
        return "img/hard.png"
    if spelling == "up_and_back":
        (root / "d").mkdir()
        return "d/../img/00000.png"
    return {
        "same": "img/00000.png",
        "dot": "./img/00000.png",
        "double_slash": "img//00000.png",
        "dot_inside": "img/./00000.png",
        "trailing_slashes": "img/00000.png//",
    }[spelling]


SPELLINGS = [
    "same",
    "dot",
    "double_slash",
    "dot_inside",
    "trailing_slashes",
    "up_and_back",
    "symlink",
    "symlinked_dir",
    "hard_link",
]


@pytest.mark.parametrize("spelling", SPELLINGS)
def test_no_spelling_or_link_puts_one_image_in_two_splits(tmp_path, spelling):
    """img/00000.png is a training image; listed again under any other name as a test image, the reader refuses
    the folder in one line naming both rows (their CSV lines) and both spellings, before any image is decoded."""
    root = _folder(tmp_path / "data", BASE_ROWS)
    name = _same_file(root, spelling)
    _folder(root, [*BASE_ROWS, (name, "test")])
    same = "hard links to one file" if spelling == "hard_link" else "one file"
    with pytest.raises(ValueError) as caught:
        _load(root, tmp_path / "cache")
    message = str(caught.value)
    assert "\n" not in message
    assert message.startswith(
        f"{root / 'labels.csv'}, lines 2 and 8, column 1 (file): 'img/00000.png' and {name!r} are {same}"
    ), message
    assert message.endswith(
        "expected each image listed once (one image is one record: listed twice, it could be "
        "private and public at once)"
    )
    assert not (tmp_path / "cache").exists()  # nothing decoded


def test_a_symlink_to_another_file_inside_the_root_is_read(tmp_path):
    root = _folder(tmp_path / "data", BASE_ROWS)
    os.symlink("00005.png", root / "img" / "link.png")
    _folder(root, [*BASE_ROWS[:5], ("img/link.png", "test")])
    data = _load(root, tmp_path / "cache")
    assert data.filenames[5] == "img/link.png" and data.images.shape == (6, 3, 4, 4)


def _outside(root: Path, how: str) -> str:
    """Make a name that leads outside ``root`` to an existing image; return it."""
    outside = root.parent / "outside"
    outside.mkdir()
    Image.new("RGB", (6, 6)).save(outside / "secret.png")
    if how == "symlink":
        os.symlink(outside / "secret.png", root / "img" / "secret.png")
        return "img/secret.png"
    if how == "symlinked_dir":
        os.symlink(outside, root / "elsewhere")
        return "elsewhere/secret.png"
    return "../outside/secret.png"


@pytest.mark.parametrize("how", ["symlink", "symlinked_dir", "dot_dot"])
def test_a_path_leading_outside_the_root_is_refused_even_if_the_file_exists(tmp_path, how):
    root = _folder(tmp_path / "data", BASE_ROWS)
    name = _outside(root, how)
    _folder(root, [*BASE_ROWS[:5], (name, "test")])
    with pytest.raises(ValueError) as caught:
        _load(root, tmp_path / "cache")
    assert str(caught.value) == (
        f"{root / 'labels.csv'}, line 7, column 1 (file): {name!r} leads to {tmp_path / 'outside' / 'secret.png'}, "
        f"outside data.root={str(root)!r}; expected a file inside it (a '..' or a symlink that leaves it is refused; "
        f"data.root may itself be a symlink)"
    )
    assert not (tmp_path / "cache").exists()


def test_a_data_root_that_is_itself_a_symlink_is_followed(tmp_path):
    """The remedy the refusal names: images kept elsewhere are reached by linking data.root itself."""
    _folder(tmp_path / "elsewhere", BASE_ROWS)
    os.symlink(tmp_path / "elsewhere", tmp_path / "data")
    assert len(_load(tmp_path / "data", tmp_path / "cache")) == 6


def test_a_directory_a_loop_and_a_missing_file_are_named_by_their_row(tmp_path):
    root = _folder(tmp_path / "data", BASE_ROWS)
    os.symlink("loop.png", root / "img" / "loop.png")
    lines = list(range(2, 8))
    names = [name for name, _ in BASE_ROWS]
    for bad, message in [
        ("img", r"line 7: 'img' is \S+/img, not a file; expected an image file"),
        (
            "img/loop.png",
            r"line 7: 'img/loop.png': cannot read \S+/img/loop\.png \(Too many "
            r"levels of symbolic links\)",
        ),
        (
            "img/gone.png",
            r"img/gone\.png: no such image file, listed in labels\.csv on line 7 "
            r"\(1 of the 6 listed images are missing\)",
        ),
    ]:
        with pytest.raises(ValueError, match=message):
            resolve_image_files([*names[:5], bad], root, root, "labels.csv", lines)


def test_the_resolved_paths_and_stats_are_what_the_cache_reads(tmp_path):
    root = _folder(tmp_path / "data", BASE_ROWS)
    files = resolve_image_files(["./img/00001.png", "img//00002.png"], root, root, "labels.csv", [2, 3])
    assert files.paths == (str((root / "img" / "00001.png").resolve()), str((root / "img" / "00002.png").resolve()))
    stat = (root / "img" / "00002.png").stat()
    assert files.stats.tolist()[1] == [stat.st_size, stat.st_mtime_ns]


# ------------------------------------------------------------------------------------ bit depths
def _png16(path: Path, values: np.ndarray) -> Path:
    """A 16-bit PNG written byte by byte (PIL cannot write 16-bit RGB): grayscale for [H, W], RGB for [H, W, 3]."""
    height, width = values.shape[:2]
    color_type = 2 if values.ndim == 3 else 0
    raw = b"".join(b"\0" + values[y].astype(">u2").tobytes() for y in range(height))

    def chunk(kind: bytes, data: bytes) -> bytes:
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))

    header = struct.pack(">IIBBBBB", width, height, 16, color_type, 0, 0, 0)
    path.write_bytes(
        b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", header) + chunk(b"IDAT", zlib.compress(raw)) + chunk(b"IEND", b"")
    )
    return path


EVERY_16_BIT_VALUE = np.arange(65536, dtype=np.uint16).reshape(256, 256)


def test_a_16_bit_grayscale_png_is_scaled_not_clipped(tmp_path):
    """All 65,536 values: each decodes to round(v * 255 / 65535) (the 256 px square is not resized)."""
    path = _png16(tmp_path / "xray.png", EVERY_16_BIT_VALUE)
    pixels, mode, note = decode_image(path, 256)
    expected = np.round(EVERY_16_BIT_VALUE.astype(np.float64) * 255 / 65535).astype(np.uint8)
    assert mode == "I;16" and note == "16-bit grayscale (I;16): scaled to 8 bits by 255/65535"
    assert all(np.array_equal(channel, expected) for channel in pixels)
    assert (pixels[0] == 255).sum() == 129  # v >= 65407 only; PIL's own convert would make 65,280 values 255


@pytest.mark.parametrize("dtype, mode", [("<u2", "I;16"), (">u2", "I;16B")])
def test_16_bit_tiffs_in_either_byte_order_are_scaled(tmp_path, dtype, mode):
    values = EVERY_16_BIT_VALUE[::4, ::4].astype(dtype)
    Image.fromarray(values).save(tmp_path / "x.tif")
    pixels, _, note = decode_image(tmp_path / "x.tif", 64)
    assert np.array_equal(pixels[1], ((values.astype(np.uint32) + 128) // 257).astype(np.uint8))
    assert note.startswith("16-bit grayscale")


def test_16_bit_data_in_pils_32_bit_mode_is_scaled_by_its_stored_depth():
    """Older Pillow opens 16-bit PNGs as mode I (32-bit) with the raw mode I;16B: still scaled by 16 bits."""
    image = Image.fromarray(EVERY_16_BIT_VALUE.astype(np.int32))
    assert image.mode == "I"
    scaled, note = _eight_bits(image, "I;16B", "x.png")
    assert np.array_equal(np.asarray(scaled), np.round(EVERY_16_BIT_VALUE / 257).astype(np.uint8))
    assert note == "16-bit grayscale (I): scaled to 8 bits by 255/65535"


def test_a_16_bit_rgb_png_keeps_the_high_byte_and_says_so(tmp_path):
    corner = EVERY_16_BIT_VALUE[:64, :64]
    values = np.stack([corner, EVERY_16_BIT_VALUE[64:128, :64], 65535 - corner], axis=2)
    pixels, mode, note = decode_image(_png16(tmp_path / "rgb.png", values), 64)
    assert mode == "RGB" and note == "16-bit RGB (RGB;16B): PIL's decoder kept each value's high byte (v // 256)"
    assert np.array_equal(pixels, (values >> 8).astype(np.uint8).transpose(2, 0, 1))


@pytest.mark.parametrize(
    "values, message",
    [
        (np.full((4, 4), 0.5, dtype=np.float32), r"a floating-point image \(PIL mode F, stored as F;32F\)"),
        (np.full((4, 4), 70_000, dtype=np.int32), r"an integer image \(PIL mode I, stored as I;32S\)"),
    ],
)
def test_a_mode_without_a_fixed_range_is_refused_by_name(tmp_path, values, message):
    path = tmp_path / "odd.tif"
    Image.fromarray(values).save(path)
    with pytest.raises(
        UnscalableImage,
        match=rf"^{path}: {message} has no fixed range to scale to 8 bits; expected 1, "
        r"8 or 16 bits per channel",
    ):
        decode_image(path, 4)


@pytest.mark.parametrize("mode", ["1", "L", "LA", "P", "RGB", "RGBA", "CMYK"])
def test_every_8_bit_mode_is_converted_by_pil_unchanged(tmp_path, mode):
    source = Image.fromarray(np.random.default_rng(0).integers(0, 256, (8, 8, 3), dtype=np.uint8)).convert(mode)
    path = tmp_path / ("x.tif" if mode == "CMYK" else "x.png")
    source.save(path)
    pixels, decoded_mode, note = decode_image(path, 8)
    assert decoded_mode == mode and note == ""
    assert np.array_equal(pixels, np.asarray(Image.open(path).convert("RGB")).transpose(2, 0, 1))


def test_the_console_says_once_what_was_scaled(tmp_path, caplog):
    root = _folder(tmp_path / "data", BASE_ROWS)
    for i in (1, 2, 3):
        _png16(root / "img" / f"{i:05d}.png", np.arange(64, dtype=np.uint16).reshape(8, 8) * 1000)  # up to 63,000
    with caplog.at_level(logging.WARNING, logger="pate.data.tensor_cache"):
        first = _load(root, tmp_path / "cache")
        again = _load(root, tmp_path / "cache")
    scaled = [r.message for r in caplog.records if "16-bit" in r.message]
    assert scaled == ["3 image(s) were 16-bit grayscale (I;16): scaled to 8 bits by 255/65535"]
    assert "converted 3 I;16 image(s) to RGB" in caplog.text
    assert np.array_equal(first.images, again.images)
    assert 200 < first.images[1:4].max() < 255  # clipped, every value >= 255 (nearly all) would be 255
