"""CelebA in its own on-disk format, read strictly, decoded once into a memory-mapped uint8 tensor cache.

The layout (Liu et al., "Deep Learning Face Attributes in the Wild", ICCV 2015; the "Align&Cropped" release)::

    root/img_align_celeba/000001.jpg ...     178 x 218 (w x h) aligned faces
    root/list_attr_celeba.txt                line 1: N; line 2: the 40 attribute names;
                                             then N rows "000001.jpg -1  1 ..." (values +1 / -1)
    root/list_eval_partition.txt             N rows "000001.jpg 0" (0 train, 1 val, 2 test)

The built-in synthetic set (``pate.data.synthetic``) is written in exactly this layout, so one reader serves
both. ``load_celeba`` decodes every image once into the tensor cache of ``pate.data.tensor_cache`` (uint8
``[N, 3, S, S]``, memory-mapped: worker processes and later runs share the pages).
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Callable, Sequence
from pathlib import Path

import numpy as np

from pate.data.celeba_layouts import (
    IMAGE_DIR,
    TEXT_FILES,
    check_label_names,
    check_unique,
    find_celeba_layout,
    read_csv_attributes,
    read_csv_label_names,
    read_csv_splits,
)
from pate.data.image_files import resolve_image_files
from pate.data.labelled_images import SPLITS, LabelledImages
from pate.data.people import check_one_split_per_person
from pate.data.tensor_cache import check_decode_args, decoded_images
from pate.io import decode_text, read_text

ATTRIBUTE_NAMES: tuple[str, ...] = (
    "5_o_Clock_Shadow",
    "Arched_Eyebrows",
    "Attractive",
    "Bags_Under_Eyes",
    "Bald",
    "Bangs",
    "Big_Lips",
    "Big_Nose",
    "Black_Hair",
    "Blond_Hair",
    "Blurry",
    "Brown_Hair",
    "Bushy_Eyebrows",
    "Chubby",
    "Double_Chin",
    "Eyeglasses",
    "Goatee",
    "Gray_Hair",
    "Heavy_Makeup",
    "High_Cheekbones",
    "Male",
    "Mouth_Slightly_Open",
    "Mustache",
    "Narrow_Eyes",
    "No_Beard",
    "Oval_Face",
    "Pale_Skin",
    "Pointy_Nose",
    "Receding_Hairline",
    "Rosy_Cheeks",
    "Sideburns",
    "Smiling",
    "Straight_Hair",
    "Wavy_Hair",
    "Wearing_Earrings",
    "Wearing_Hat",
    "Wearing_Lipstick",
    "Wearing_Necklace",
    "Wearing_Necktie",
    "Young",
)

ATTRIBUTE_FILE, PARTITION_FILE = TEXT_FILES  # the original archive's file names (the synthetic set writes these)


# ------------------------------------------------------------------------------------------ the files
def check_celeba_root(root: str | os.PathLike) -> Path:
    """The resolved directory that holds the CelebA copy under ``root``, in any layout of
    ``pate.data.celeba_layouts`` (the original archive's, torchvision's ``root/celeba/``, Kaggle's CSV files).

    Raises ``FileNotFoundError`` listing the layouts looked for and what ``root`` holds.
    """
    return find_celeba_layout(root).attributes.parent


def read_label_names(root: str | os.PathLike, expected: Sequence[str] | None = None) -> tuple[str, ...]:
    """The label names: line 2 of ``list_attr_celeba.txt`` (CelebA's 40 attributes, or any other labels in
    CelebA's format), or the header of Kaggle's ``list_attr_celeba.csv``, read without the rows: what a run needs
    before any image is decoded.

    The names must be non-empty and distinct; with ``expected``, they must equal it, in order. Anything else
    raises ``ValueError`` naming the file and the line.
    """
    layout = find_celeba_layout(root)
    if layout.csv:
        return read_csv_label_names(layout.attributes, expected)
    with open(layout.attributes, "rb") as handle:
        head = [handle.readline(), handle.readline()]
    return _label_names(layout.attributes, head, expected)


def _label_names(path: Path, head: list[bytes], expected: Sequence[str] | None) -> tuple[str, ...]:
    if len(head) < 2 or not head[1].strip():
        raise ValueError(f"{path}: expected a count line and a header line")
    return check_label_names(path, 2, tuple(head[1].decode(errors="replace").split()), expected)


def read_attributes(root: str | os.PathLike, expected: Sequence[str] | None = None) -> tuple[list[str], np.ndarray]:
    """(filenames, labels uint8 [N, L]) from ``list_attr_celeba.txt``, with +1 -> 1 and -1 -> 0; L is the number
    of label names on line 2 (``read_label_names``; with ``expected``, they must equal it).

    Strict: the count on line 1 must equal the number of rows, every row must hold a file name and L values each
    ``1``/``+1``/``-1``, and no file name may repeat. Anything else raises ``ValueError`` naming the file and the
    (1-based) line. Kaggle's ``list_attr_celeba.csv`` is read by ``read_csv_attributes`` to the same standard.
    """
    layout = find_celeba_layout(root)
    if layout.csv:
        return read_csv_attributes(layout.attributes, expected)
    path = layout.attributes
    raw = path.read_bytes()
    head = raw.split(b"\n", 2)
    names = _label_names(path, head, expected)
    try:
        count = int(head[0].strip())
    except ValueError:
        found = head[0].decode(errors="replace")
        raise ValueError(f"{path}, line 1: expected the number of images, found {found!r}") from None
    body = head[2] if len(head) == 3 else b""
    starts, ends, fields = _tokens(body)
    rows = fields.size
    if rows != count:
        raise ValueError(f"{path}: line 1 announces {count} images but the file holds {rows} rows")
    width = 1 + len(names)
    if np.any(fields != width):
        r = int(np.flatnonzero(fields != width)[0])
        raise ValueError(f"{path}, line {r + 3}: expected a file name and {width - 1} values, found {fields[r]} fields")
    starts, ends = starts.reshape(rows, width), ends.reshape(rows, width)
    decode_text(path, raw, "CelebA's attribute file (text)")  # a binary file: named, with its line
    filenames = [body[a:b].decode() for a, b in zip(starts[:, 0].tolist(), ends[:, 0].tolist())]
    # Each value token is "1", "+1" or "-1": check its length and characters without making 8 M strings.
    chars = np.frombuffer(body + b" ", dtype=np.uint8)
    first, second, length = chars[starts[:, 1:]], chars[starts[:, 1:] + 1], ends[:, 1:] - starts[:, 1:]
    one, plus, minus = ord("1"), ord("+"), ord("-")
    valid = ((length == 1) & (first == one)) | ((length == 2) & ((first == plus) | (first == minus)) & (second == one))
    if not valid.all():
        r, c = np.argwhere(~valid)[0]
        token = body[starts[r, c + 1] : ends[r, c + 1]].decode(errors="replace")
        raise ValueError(f"{path}, line {r + 3}: value {token!r} for {names[c]}; expected +1 (or 1) or -1")
    check_unique(filenames, path, first_line=3)
    return filenames, (first != minus).astype(np.uint8)


def _tokens(text: bytes) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(start, end) of every whitespace-separated token of ``text``, and the number of tokens on each line
    (trailing blank lines dropped)."""
    chars = np.frombuffer(text, dtype=np.uint8)
    blank = chars <= 32  # space, tab, CR, LF (and other control characters)
    edges = np.diff(np.concatenate(([True], blank, [True])).astype(np.int8))
    starts, ends = np.flatnonzero(edges == -1), np.flatnonzero(edges == 1)
    before_line_end = np.searchsorted(starts, np.flatnonzero(chars == ord("\n")))
    per_line = np.diff(np.concatenate(([0], before_line_end, [starts.size])))
    filled = np.flatnonzero(per_line)
    return starts, ends, per_line[: filled[-1] + 1 if filled.size else 0]


def read_splits(root: str | os.PathLike, filenames: Sequence[str]) -> np.ndarray:
    """int8 [N] split codes (``SPLITS``) from ``list_eval_partition.txt``, aligned to ``filenames``.

    The partition file (or Kaggle's ``list_eval_partition.csv``) must name exactly the images of ``filenames`` (any
    order), once each, with a code in {0, 1, 2}; otherwise ``ValueError`` naming the file and the offending line or
    image.
    """
    layout = find_celeba_layout(root)
    path = layout.partition
    codes = read_csv_splits(path) if layout.csv else _text_splits(path)
    missing = [name for name in filenames if name not in codes]
    if missing or len(codes) != len(filenames):
        extra = sorted(set(codes) - set(filenames))
        raise ValueError(
            f"{path} does not match {layout.attributes.name}: {len(missing)} image(s) without a split (first: "
            f"{missing[:3]}), {len(extra)} image(s) not in the attribute file (first: {extra[:3]})"
        )
    return np.array([codes[name] for name in filenames], dtype=np.int8)


def _text_splits(path: Path) -> dict[str, int]:
    """{file name: split code} from ``list_eval_partition.txt`` ('<file name> <code>' per line)."""
    codes: dict[str, int] = {}
    valid = {str(v) for v in SPLITS.values()}
    for i, line in enumerate(read_text(path, "CelebA's partition file ('<file name> <code>' per line)").splitlines()):
        fields = line.split()
        if not fields:
            continue
        if len(fields) != 2 or fields[1] not in valid:
            raise ValueError(
                f"{path}, line {i + 1}: expected '<file name> <code>' with code in {sorted(valid)}, found {line!r}"
            )
        if fields[0] in codes:
            raise ValueError(f"{path}, line {i + 1}: image {fields[0]!r} listed twice")
        codes[fields[0]] = int(fields[1])
    return codes


def read_identities(path: Path, filenames: Sequence[str]) -> tuple[np.ndarray, list[int]]:
    """(str [N], the line of each): the person of each of ``filenames`` from CelebA's identity file (``'<file name>
    <person>'`` per line, any order), which must name exactly those images, once each; ``ValueError`` naming the file
    and the line otherwise."""
    person: dict[str, tuple[str, int]] = {}
    for i, line in enumerate(read_text(path, "CelebA's identity file ('<file name> <person>' per line)").splitlines()):
        fields = line.split()
        if not fields:
            continue
        if len(fields) != 2:
            raise ValueError(f"{path}, line {i + 1}: expected '<file name> <person>', found {line!r}")
        if fields[0] in person:
            raise ValueError(f"{path}, line {i + 1}: image {fields[0]!r} listed twice")
        person[fields[0]] = (fields[1], i + 1)
    missing = [name for name in filenames if name not in person]
    if missing or len(person) != len(filenames):
        raise ValueError(
            f"{path} does not match the attribute file: {len(missing)} image(s) without a person (first: "
            f"{missing[:3]}), {len(person) - len(filenames) + len(missing)} image(s) not in the attribute file"
        )
    return np.array([person[name][0] for name in filenames]), [person[name][1] for name in filenames]


def load_celeba(
    root: str | os.PathLike,
    image_size: int,
    cache_dir: str | os.PathLike,
    num_workers: int = 0,
    progress: bool = True,
    check_splits: Callable[[np.ndarray], None] | None = None,
    expected_labels: Sequence[str] | None = None,
) -> LabelledImages:
    """Read CelebA (or the synthetic set, or any labels in CelebA's format) at ``root`` into ``LabelledImages``
    backed by the tensor cache (``pate.data.tensor_cache``: decoded once, reused while the attribute file and every
    image file keep their size and modification time); ``check_splits(split codes)``, when given, runs on the
    partition file's codes before any image is decoded, and ``expected_labels``, when given, must be the label
    names of the attribute file. ``num_workers > 0`` decodes in that many processes.

    Every image the attribute file names is resolved before any is decoded (``pate.data.image_files``): one that
    leads outside ``root`` (a name with ``..``, a symlink leading out) or two names that are one file (``a.jpg`` and
    ``./a.jpg``, a symlink, a hard link) raise ``ValueError`` naming the lines.
    """
    check_decode_args(image_size, num_workers)
    layout = find_celeba_layout(root)
    path = layout.attributes.parent
    filenames, labels = read_attributes(path, expected_labels)
    split = read_splits(path, filenames)
    if not filenames:
        raise ValueError(f"{layout.attributes} lists no images")
    person = None
    if layout.identity is not None:  # CelebA's own partition keeps each person in one split (8k / 1k / 1k people)
        person, lines = read_identities(layout.identity, filenames)
        check_one_split_per_person(person, split, layout.identity, lines)
    if check_splits is not None:
        check_splits(split)
    first_line = 2 if layout.csv else 3  # after Kaggle's header; after CelebA's count and names lines
    files = resolve_image_files(
        filenames, layout.images, Path(root), layout.attributes, range(first_line, first_line + len(filenames))
    )
    attr_stat = layout.attributes.stat()
    source = {
        "layout": layout.kind,
        "attribute_file_bytes": attr_stat.st_size,
        "attribute_file_mtime_ns": attr_stat.st_mtime_ns,
    }
    images, checksum = decoded_images(
        "celeba", str(path), files, int(image_size), cache_dir, source, num_workers, progress
    )
    return LabelledImages(
        images=images,
        labels=labels,
        split=split,
        filenames=tuple(filenames),
        label_names=read_label_names(path),
        fingerprint=content_fingerprint(labels, split, filenames, checksum, person),
        paths=files.paths,
        person=person,
    )


def content_fingerprint(
    labels: np.ndarray,
    split: np.ndarray,
    filenames: Sequence[str],
    images_checksum: str,
    person: np.ndarray | None = None,
) -> str:
    """SHA-256 (16 hex digits) of what a dataset holds: the label and split arrays (dtype, shape, bytes), the file
    names in row order, the checksum of the decoded images and, where the data name them, the rows' people. Cheap
    (the images' checksum is computed anyway when the tensor cache is verified) and sound: any edit to a label, a
    split, a person or an image changes it. Data without people hash as before people existed."""
    h = hashlib.sha256()
    for array in (np.ascontiguousarray(labels), np.ascontiguousarray(split)):
        h.update(f"{array.dtype.str}{array.shape}".encode())
        h.update(array.tobytes())
    h.update("\0".join(filenames).encode())
    h.update(images_checksum.encode())
    if person is not None:
        h.update(("\0person\0" + "\0".join(person.tolist())).encode())
    return h.hexdigest()[:16]


__all__ = [
    "ATTRIBUTE_FILE",
    "ATTRIBUTE_NAMES",
    "IMAGE_DIR",
    "PARTITION_FILE",
    "check_celeba_root",
    "load_celeba",
    "read_attributes",
    "read_label_names",
    "read_splits",
]
