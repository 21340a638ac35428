"""Data layer: the labelled images every dataset loads into, CelebA's on-disk format (reader and memory-mapped tensor cache), the built-in synthetic CelebA
generated in that format, and who-sees-what (teacher partition, public-query split).

Beside the loaders: ``data_identity(name, image_size, images)``, what identifies loaded images in stage keys;
``read_queries(artifact)``, the public pool, queries and evaluation records of a queries stage; ``MARKER``, the
file that marks a root where ``generate_synthetic_celeba`` has written its data (and which it then reuses).
"""

from pate.data.celeba import (
    ATTRIBUTE_NAMES,
    check_celeba_root,
    load_celeba,
    read_attributes,
    read_splits,
)
from pate.data.labelled_images import SPLITS, LabelledImages
from pate.data.partition import PublicSplit, partition_teachers, pool_size, read_queries, split_public
from pate.data.readers import data_identity
from pate.data.synthetic import MARKER, generate_synthetic_celeba
from pate.data.synthetic_attributes import PREVALENCE, sample_attributes

__all__ = [
    "ATTRIBUTE_NAMES",
    "MARKER",
    "PREVALENCE",
    "SPLITS",
    "LabelledImages",
    "check_celeba_root",
    "data_identity",
    "generate_synthetic_celeba",
    "load_celeba",
    "partition_teachers",
    "read_attributes",
    "read_queries",
    "read_splits",
    "sample_attributes",
    "split_public",
    "PublicSplit",
    "pool_size",
]
