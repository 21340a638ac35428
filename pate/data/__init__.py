"""Data layer: the labelled images every dataset loads into, CelebA's on-disk format (reader and memory-mapped tensor cache), the built-in synthetic CelebA
generated in that format, and who-sees-what (teacher partition, public-query split)."""

from pate.data.celeba import (
    ATTRIBUTE_NAMES,
    check_celeba_root,
    load_celeba,
    read_attributes,
    read_splits,
)
from pate.data.labelled_images import SPLITS, LabelledImages
from pate.data.partition import PublicSplit, partition_teachers, pool_size, split_public
from pate.data.synthetic import generate_synthetic_celeba
from pate.data.synthetic_attributes import PREVALENCE, sample_attributes

__all__ = [
    "ATTRIBUTE_NAMES",
    "PREVALENCE",
    "SPLITS",
    "LabelledImages",
    "check_celeba_root",
    "generate_synthetic_celeba",
    "load_celeba",
    "partition_teachers",
    "read_attributes",
    "read_splits",
    "sample_attributes",
    "split_public",
    "PublicSplit",
    "pool_size",
]
