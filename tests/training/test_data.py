"""Datasets and loaders: the right rows, uint8 all the way, seeded order, clear errors."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from teachers.training.data import IndexedImages, make_loader, to_float


def test_indexed_images_holds_exactly_the_selected_rows(tiny_data):
    images, labels = tiny_data
    indices = np.array([5, 0, 17, 42])
    ds = IndexedImages(images, indices, labels[indices])
    assert np.array_equal(ds.indices, indices)
    assert len(ds) == 4
    image, target = ds[2]
    assert image.dtype == torch.uint8 and target.dtype == torch.float32
    assert np.array_equal(image.numpy(), images[17])
    assert np.array_equal(target.numpy(), labels[17].astype(np.float32))


def test_indexed_images_without_labels_returns_images_only(tiny_data):
    images, _ = tiny_data
    item = IndexedImages(images, np.arange(3))[1]
    assert isinstance(item, torch.Tensor) and np.array_equal(item.numpy(), images[1])


def test_indexed_images_reads_a_memmap(tiny_data, tmp_path):
    images, labels = tiny_data
    mm = np.lib.format.open_memmap(tmp_path / "x.npy", mode="w+", dtype=np.uint8, shape=images.shape)
    mm[:] = images
    ds = IndexedImages(np.load(tmp_path / "x.npy", mmap_mode="r"), np.array([3, 9]), labels[[3, 9]])
    assert np.array_equal(ds.images.numpy(), images[[3, 9]])


@pytest.mark.parametrize(
    ("make", "match"),
    [
        (lambda im, lb: IndexedImages(im, np.array([0, 60]), lb[:2]), r"indices must lie in \[0, 60\)"),
        (lambda im, lb: IndexedImages(im, np.array([-1]), lb[:1]), "indices must lie in"),
        (lambda im, lb: IndexedImages(im, np.array([0.0, 1.0]), lb[:2]), "1-D integer array"),
        (lambda im, lb: IndexedImages(im, np.array([0, 1]), lb[:3]), r"labels must have shape \[2, num_labels\]"),
        (lambda im, lb: IndexedImages(im, np.array([0]), lb[:1] * 2), "only 0 and 1"),
        (lambda im, lb: IndexedImages(im.astype(np.float32), np.array([0])), "uint8"),
    ],
)
def test_bad_input_is_rejected(tiny_data, make, match):
    images, labels = tiny_data
    with pytest.raises(ValueError, match=match):
        make(images, labels)


def test_loader_order_is_a_function_of_the_seed(tiny_data):
    images, labels = tiny_data
    ds = IndexedImages(images, np.arange(60), labels)

    def first_batch(seed):
        return next(iter(make_loader(ds, batch_size=10, shuffle=True, seed=seed, num_workers=0)))[0]

    assert torch.equal(first_batch(3), first_batch(3))
    assert not torch.equal(first_batch(3), first_batch(4))
    batches = list(make_loader(ds, batch_size=7, shuffle=True, seed=3, num_workers=0))
    assert sum(len(b[0]) for b in batches) == 60  # nothing dropped, the last batch is partial
    assert batches[0][0].dtype == torch.uint8


def test_to_float_maps_uint8_to_unit_interval_around_zero():
    x = torch.tensor([0, 255, 51], dtype=torch.uint8).view(1, 3, 1, 1)
    assert torch.allclose(to_float(x).flatten(), torch.tensor([-1.0, 1.0, 51 / 255 * 2 - 1]))
    with pytest.raises(ValueError, match="uint8"):
        to_float(x.float())
