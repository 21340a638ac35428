"""A toy dataset added from outside the pipeline, through config alone (docs: "add a dataset"): coloured shapes,
five labels (one per kind of shape present), written on first use in CelebA's format at ``root`` and read back by
the CelebA-format reader. Its label names and their number come from the data, as for any reader.

    python train.py debug=tiny hydra.searchpath=[file://tests/data/conf] data=toy_shapes
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from PIL import Image, ImageDraw

from pate.data.celeba import ATTRIBUTE_FILE, IMAGE_DIR, PARTITION_FILE
from pate.data.labelled_images import LabelledImages
from pate.data.readers import CelebAFormat

SHAPES = ("circle", "square", "triangle", "cross", "ring")


@dataclass(frozen=True)
class ToyShapes(CelebAFormat):
    """``num_images`` 32-pixel images, each shape present with probability 0.4, split 80 / 5 / 15."""

    num_images: int = 400
    seed: int = 0

    def check(self) -> None:
        if self.num_images < 20:
            raise ValueError(f"data.reader.num_images={self.num_images!r}; expected at least 20")

    def label_names(self) -> tuple[str, ...]:
        return SHAPES

    def load(
        self, cache_dir: Path, progress: bool = True, check_splits: Callable[[np.ndarray], None] | None = None
    ) -> LabelledImages:
        root = Path(self.root)
        if not (root / PARTITION_FILE).exists():
            _write(root, self.num_images, self.seed)
        return super().load(cache_dir, progress, check_splits)


def _draw(draw: ImageDraw.ImageDraw, shape: str, x: float, y: float, r: float, color) -> None:
    box = [x - r, y - r, x + r, y + r]
    if shape == "circle":
        draw.ellipse(box, fill=color)
    elif shape == "square":
        draw.rectangle(box, fill=color)
    elif shape == "triangle":
        draw.polygon([(x, y - r), (x + r, y + r), (x - r, y + r)], fill=color)
    elif shape == "cross":
        draw.line([(x - r, y), (x + r, y)], fill=color, width=3)
        draw.line([(x, y - r), (x, y + r)], fill=color, width=3)
    else:
        draw.ellipse(box, outline=color, width=2)


def _write(root: Path, num_images: int, seed: int) -> None:
    rng = np.random.default_rng(seed)
    (root / IMAGE_DIR).mkdir(parents=True, exist_ok=True)
    labels = rng.random((num_images, len(SHAPES))) < 0.4
    names = [f"{index:06d}.png" for index in range(1, num_images + 1)]
    for name, present in zip(names, labels):
        image = Image.new("RGB", (32, 32), tuple(int(v) for v in rng.integers(0, 256, 3)))
        draw = ImageDraw.Draw(image)
        for shape, on in zip(SHAPES, present):
            if on:
                x, y = rng.uniform(8, 24, 2)
                _draw(draw, shape, x, y, 5, tuple(int(v) for v in rng.integers(0, 256, 3)))
        image.save(root / IMAGE_DIR / name)
    rows = [name + "".join(" 1" if on else " -1" for on in present) for name, present in zip(names, labels)]
    (root / ATTRIBUTE_FILE).write_text("\n".join([str(num_images), " ".join(SHAPES), *rows]) + "\n")
    codes = np.repeat(
        [0, 1, 2],
        [int(0.8 * num_images), int(0.05 * num_images), num_images - int(0.8 * num_images) - int(0.05 * num_images)],
    )
    (root / PARTITION_FILE).write_text("".join(f"{name} {code}\n" for name, code in zip(names, codes)))
