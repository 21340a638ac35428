"""A multi-label image folder as users bring one (``data=multilabel_folder``): coloured shapes under ``img/``, in
PNG, some grayscale and some RGBA, and ``labels.csv`` with any number of labels L. Label j is whether shape
``j % 5`` is present, negated for odd ``j // 5`` (so every label is learnable from the pixels, for any L)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
from PIL import Image, ImageDraw

from tests.data.toy_shapes import SHAPES, _draw

GRAYSCALE_EVERY, RGBA_EVERY = 7, 11  # image i is grayscale when i % 7 == 3, RGBA when i % 11 == 5 (and not gray)


def label_names(num_labels: int) -> list[str]:
    return [f"{SHAPES[j % 5]}{'' if (j // 5) % 2 == 0 else '_absent'}_{j:03d}" for j in range(num_labels)]


def write_folder(
    root: Path,
    num_labels: int,
    num_images: int = 400,
    minus_one: bool = False,
    split_column: bool = False,
    seed: int = 0,
) -> np.ndarray:
    """Write the folder at ``root``; return the true labels uint8 [num_images, num_labels] in the CSV's order.
    ``minus_one`` writes -1/1 instead of 0/1; ``split_column`` adds ``split`` (train 70%, val 10%, test 20%)."""
    rng = np.random.default_rng(seed)
    (root / "img").mkdir(parents=True, exist_ok=True)
    present = rng.random((num_images, len(SHAPES))) < 0.4
    labels = np.stack([present[:, j % 5] ^ bool((j // 5) % 2) for j in range(num_labels)], axis=1).astype(np.uint8)
    names = [f"img/{index:05d}.png" for index in range(num_images)]
    for index, (name, shown) in enumerate(zip(names, present)):
        image = Image.new("RGB", (24, 30), tuple(int(v) for v in rng.integers(0, 256, 3)))  # not square: cropped
        draw = ImageDraw.Draw(image)
        for shape, on in zip(SHAPES, shown):
            if on:
                x, y = rng.uniform(6, 18), rng.uniform(9, 21)
                _draw(draw, shape, x, y, 5, tuple(int(v) for v in rng.integers(0, 256, 3)))
        if index % GRAYSCALE_EVERY == 3:
            image = image.convert("L")
        elif index % RGBA_EVERY == 5:
            image = image.convert("RGBA")
        image.save(root / name)
    negative = "-1" if minus_one else "0"
    header = ["file", *label_names(num_labels)]
    codes = np.array(
        ["train"] * int(0.7 * num_images)
        + ["val"] * int(0.1 * num_images)
        + ["test"] * (num_images - int(0.7 * num_images) - int(0.1 * num_images))
    )
    if split_column:
        header.insert(2, "split")  # anywhere after the file column
    rows = []
    for name, row, code in zip(names, labels, codes):
        values = ["1" if v else negative for v in row]
        if split_column:
            values.insert(1, str(code))
        rows.append(",".join([name, *values]))
    (root / "labels.csv").write_text("\n".join([",".join(header), *rows]) + "\n")
    return labels


def expected_conversions(num_images: int) -> tuple[int, int]:
    """(grayscale, RGBA) images ``write_folder`` writes."""
    gray = sum(1 for i in range(num_images) if i % GRAYSCALE_EVERY == 3)
    rgba = sum(1 for i in range(num_images) if i % GRAYSCALE_EVERY != 3 and i % RGBA_EVERY == 5)
    return gray, rgba
