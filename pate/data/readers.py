"""Datasets as components: a reader turns a configured source into labelled images (``LabelledImages``) whose label
names come from the data, any number of them. ``conf/data/<name>.yaml`` builds one by ``data.reader._target_``.

The protocol (``DatasetReader``): ``check()`` fails fast on a missing or malformed source; ``label_names()``
reads the names without decoding an image (a run sets ``data.num_labels`` from it before anything is built);
``load(cache_dir, progress, check_splits)`` decodes into the memory-mapped tensor cache, running
``check_splits(split codes)`` before any image is decoded. Two implementations: ``CelebAFormat`` (CelebA's files,
or any labels written in CelebA's format) and ``SyntheticCelebA`` (the built-in generator, then the same reader).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol, runtime_checkable

import numpy as np

from pate.data.celeba import ATTRIBUTE_NAMES, check_celeba_root, load_celeba, read_label_names
from pate.data.celeba_layouts import IDENTITY_FILE, find_celeba_layout
from pate.data.labelled_images import LabelledImages
from pate.data.synthetic import check_synthetic_params, generate_synthetic_celeba

__all__ = ["CelebAFormat", "DatasetReader", "SyntheticCelebA", "data_identity"]


@runtime_checkable
class DatasetReader(Protocol):
    """Structural type of the dataset readers (module docstring)."""

    def check(self) -> None: ...

    def label_names(self) -> tuple[str, ...]: ...

    def load(
        self, cache_dir: Path, progress: bool = True, check_splits: Callable[[np.ndarray], None] | None = None
    ) -> LabelledImages: ...


@dataclass(frozen=True)
class CelebAFormat:
    """CelebA's on-disk format at ``root``: ``img_align_celeba/``, ``list_attr_celeba.txt`` (its header names the
    labels: CelebA's 40 attributes, or any others) and ``list_eval_partition.txt``. ``expected_labels``, when set,
    must be the header's names, in order. Images are cropped to their central square and resized to
    ``image_size``; ``num_workers`` processes decode them."""

    root: str
    image_size: int
    num_workers: int = 0
    expected_labels: Sequence[str] | None = None

    def check(self) -> None:
        check_celeba_root(self.root)

    def has_people(self) -> bool:
        """Whether the copy has CelebA's identity file (the original and torchvision layouts; Kaggle's has none).
        A copy not written yet (a reader that generates its files when it loads them) names no people."""
        try:
            return find_celeba_layout(Path(self.root).expanduser()).identity is not None
        except FileNotFoundError:
            return False

    def people_hint(self) -> str:
        return f"CelebA's {IDENTITY_FILE} under data.root={self.root!r} (Kaggle's copy has none)"

    def label_names(self) -> tuple[str, ...]:
        return read_label_names(Path(self.root).expanduser(), self.expected_labels)

    def load(
        self, cache_dir: Path, progress: bool = True, check_splits: Callable[[np.ndarray], None] | None = None
    ) -> LabelledImages:
        return load_celeba(
            Path(self.root).expanduser(),
            image_size=int(self.image_size),
            cache_dir=cache_dir,
            num_workers=int(self.num_workers),
            progress=progress,
            check_splits=check_splits,
            expected_labels=self.expected_labels,
        )


@dataclass(frozen=True)
class SyntheticCelebA(CelebAFormat):
    """The built-in synthetic CelebA (``pate.data.synthetic``): generated at ``root`` on first use (``num_images``
    faces of ``synthetic_image_size`` pixels, split by ``split_fractions``, from ``seed``; ``images_per_person`` > 1
    shows people, up to ``max_images_per_person`` images each), then read as CelebA."""

    num_images: int = 100_000
    synthetic_image_size: int = 64
    split_fractions: Sequence[float] = field(default=(0.8034, 0.0981, 0.0985))
    seed: int = 0
    images_per_person: int = 1
    max_images_per_person: int = 35

    def check(self) -> None:
        check_synthetic_params(
            self.num_images,
            self.synthetic_image_size,
            tuple(self.split_fractions),
            self.seed,
            self.num_workers,
            self.images_per_person,
            self.max_images_per_person,
        )

    def label_names(self) -> tuple[str, ...]:
        """The generator draws CelebA's 40 attributes."""
        return ATTRIBUTE_NAMES

    def has_people(self) -> bool:
        """Whether the set shows people: ``images_per_person`` > 1 writes CelebA's identity file."""
        return self.images_per_person > 1

    def people_hint(self) -> str:
        return "people in the synthetic set: data.synthetic.images_per_person=20 (it draws one image per person)"

    def load(
        self, cache_dir: Path, progress: bool = True, check_splits: Callable[[np.ndarray], None] | None = None
    ) -> LabelledImages:
        generate_synthetic_celeba(
            Path(self.root).expanduser(),
            num_images=int(self.num_images),
            image_size=int(self.synthetic_image_size),
            split_fractions=tuple(self.split_fractions),
            seed=int(self.seed),
            num_workers=int(self.num_workers),
            progress=progress,
            images_per_person=int(self.images_per_person),
            max_images_per_person=int(self.max_images_per_person),
        )
        return super().load(cache_dir, progress, check_splits)


def data_identity(name: str, image_size: int, data: LabelledImages) -> dict[str, Any]:
    """What identifies the decoded dataset in stage keys: its name (``data.name``), resolution (``data.image_size``)
    and content fingerprint
    (``LabelledImages.fingerprint``: labels, splits, file names and images) -- never its location on disk, so
    moving a dataset keeps the cache and editing it in place does not."""
    if not data.fingerprint:
        raise ValueError("the dataset has no content fingerprint; read it with a reader (pate.data.readers)")
    return {"name": str(name), "image_size": int(image_size), "content": data.fingerprint}
