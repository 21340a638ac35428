"""Feature extractors: the encoder's closed form, public-only fitting, standardisation, offline weights."""

from pathlib import Path

import numpy as np
import pytest
import torch
import torchvision
from hydra.utils import instantiate

from pate.data.labelled_images import SPLITS
from pate.features import Extractor, PixelFeatures, RandomConvFeatures, RandomPatchFeatures, TorchvisionFeatures
from pate.features.ssl import SimCLRFeatures
from pate.features.stage import build_features
from pate.pipeline import run


def _images(n=40, size=12, seed=0):
    return np.random.default_rng(seed).integers(0, 256, (n, 3, size, size), dtype=np.uint8)


def test_random_patch_encoder_equals_its_definition_at_every_position():
    """With pool = number of positions, each feature is one position's soft-thresholded response; recompute it
    from the definition (contrast-normalise the patch, then the folded D W, minus D W m)."""
    ex = RandomPatchFeatures(num_filters=8, patch=5, pool=4, alpha=0.25, num_fit_patches=500).fit(_images())
    img = _images(1, size=8, seed=1)  # 4 x 4 positions
    got = ex._raw(torch.from_numpy(img)).reshape(2, 8, 4, 4).numpy()
    folded = ex._filters.double().numpy().reshape(8, -1)
    for r in range(4):
        for c in range(4):
            p = img[0, :, r : r + 5, c : c + 5].astype(np.float64).reshape(-1) / 255
            p = (p - p.mean()) / np.sqrt(p.var() + 10 / 255**2)
            resp = folded @ p - ex._bias.double().numpy()
            np.testing.assert_allclose(got[0, :, r, c], np.maximum(resp - 0.25, 0), atol=2e-4)
            np.testing.assert_allclose(got[1, :, r, c], np.maximum(-resp - 0.25, 0), atol=2e-4)


@pytest.mark.parametrize(
    "make",
    [
        lambda: PixelFeatures(size=4),
        lambda: RandomConvFeatures(width=4, pool=2),
        lambda: RandomPatchFeatures(num_filters=8, num_fit_patches=500),
    ],
)
def test_features_are_standardised_on_the_fit_images_and_deterministic(make):
    images = _images()
    first, second = make().fit(images, seed=3), make().fit(images, seed=3)
    feats = first.transform(torch.from_numpy(images))
    varying = feats.std(0) > 0
    np.testing.assert_allclose(feats.mean(0).numpy(), 0, atol=1e-4)
    np.testing.assert_allclose(feats[:, varying].std(0, unbiased=False).numpy(), 1, atol=1e-3)
    torch.testing.assert_close(feats, second.transform(torch.from_numpy(images)))


def test_transform_before_fit_is_refused():
    with pytest.raises(RuntimeError, match="before fit"):
        PixelFeatures().transform(torch.zeros(1, 3, 8, 8, dtype=torch.uint8))


@pytest.mark.parametrize(
    "kwargs, match",
    [
        ({"num_filters": 0}, "num_filters"),
        ({"alpha": -1.0}, "alpha"),
        ({"zca_eps": 0.0}, "zca_eps"),
        ({"stride": 0}, "stride"),
    ],
)
def test_bad_settings_name_the_argument(kwargs, match):
    with pytest.raises(ValueError, match=match):
        RandomPatchFeatures(**kwargs)


def test_build_features_refuses_private_fit_rows(tmp_path):
    images = _images()
    with pytest.raises(ValueError, match="private training rows"):
        build_features(
            tmp_path,
            PixelFeatures(size=2),
            images,
            fit_rows=np.arange(10),
            rows=np.arange(40),
            private_rows=np.arange(5, 20),
            fit_seed=0,
            progress=False,
        )


@pytest.mark.parametrize(
    "features",
    [
        "features=random_patches",
        "features=ssl features.extractor.width=4 features.extractor.epochs=1 features.extractor.train_batch_size=16",
    ],
)
def test_the_feature_stage_fits_on_public_images_only(features, tiny_cfg, tmp_path, monkeypatch):
    """Spy on the extractor's fit (the only way images reach an extractor's fitting, SimCLR training
    included): every image it receives is a validation-split image (public), none is a training (private) or
    test (query / evaluation) image, and its signature has no place for labels."""
    seen = []
    real = Extractor.fit

    def spy(self, public_images, seed=0, progress=None):
        seen.append(np.array(public_images))
        return real(self, public_images, seed=seed, progress=progress)

    monkeypatch.setattr(Extractor, "fit", spy)
    cfg = tiny_cfg(*features.split(), f"paths.cache_dir={tmp_path / 'cache'}")
    run(cfg, output_dir=tmp_path / "run")
    data = instantiate(cfg.data.reader).load(Path(cfg.paths.cache_dir) / "tensors", progress=False)
    assert len(seen) == 1, "the features stage did not fit exactly once"
    by_split = {name: {img.tobytes() for img in data.images[data.indices(name)]} for name in SPLITS}
    received = {img.tobytes() for img in seen[0]}
    assert received <= by_split["val"]
    assert not received & (by_split["train"] | by_split["test"])
    assert "labels" not in real.__code__.co_varnames


def test_torchvision_weights_missing_offline_say_how_to_get_them(tmp_path, monkeypatch):
    monkeypatch.setenv("TORCH_HOME", str(tmp_path))
    with pytest.raises(FileNotFoundError, match="weights_path"):
        TorchvisionFeatures(arch="resnet18")


def test_torchvision_weights_checksum_is_the_identity(tmp_path):
    weights = tmp_path / "resnet18.pth"
    torch.manual_seed(0)
    torch.save(torchvision.models.resnet18(weights=None).state_dict(), weights)
    ex = TorchvisionFeatures(arch="resnet18", weights_path=str(weights), input_size=32)
    assert len(ex.identity()["weights_sha256"]) == 64 and "weights_path" not in ex.identity()
    ex.fit(_images(n=4, size=16))
    assert ex.transform(torch.from_numpy(_images(n=2, size=16))).shape == (2, 512)
    torch.manual_seed(1)
    torch.save(torchvision.models.resnet18(weights=None).state_dict(), weights)
    assert TorchvisionFeatures(arch="resnet18", weights_path=str(weights)).identity() != ex.identity()


EXTRACTORS = ("pixels", "random_conv", "random_patches", "ssl", "torchvision")


def _extractor(name: str, tmp_path):
    """A small, unfitted instance of the extractor class ``name`` (torchvision: seeded stand-in weights)."""
    if name == "torchvision":
        weights = tmp_path / "resnet18.pth"
        if not weights.exists():
            torch.manual_seed(0)
            torch.save(torchvision.models.resnet18(weights=None).state_dict(), weights)
        return TorchvisionFeatures(arch="resnet18", weights_path=str(weights), input_size=32)
    return {
        "pixels": lambda: PixelFeatures(size=4),
        "random_conv": lambda: RandomConvFeatures(width=4, pool=2),
        "random_patches": lambda: RandomPatchFeatures(num_filters=8, num_fit_patches=500),
        "ssl": lambda: SimCLRFeatures(width=4, epochs=1, train_batch_size=16),
    }[name]()


def _tensors(value):
    """Every tensor in an attribute value: a tensor, a network's parameters and buffers, or inside a list,
    tuple or dict."""
    if isinstance(value, torch.Tensor):
        yield value
    elif isinstance(value, torch.nn.Module):
        yield from value.parameters()
        yield from value.buffers()
    elif isinstance(value, (list, tuple)):
        for item in value:
            yield from _tensors(item)
    elif isinstance(value, dict):
        for item in value.values():
            yield from _tensors(item)


@pytest.mark.parametrize("name", EXTRACTORS)
def test_an_extractor_moved_to_a_device_fits_and_encodes_there(name, tmp_path):
    """``to(device)`` before ``fit``: what the fit learns (whitening, filters, a trained encoder, the
    standardisation) ends up on the device with everything else, and encoding creates no CPU tensor to mix in.
    PyTorch's "meta" device (shapes without data) stands in for a GPU: elementwise ops that mix a CPU tensor
    into meta ones raise. SimCLR's training reads its loss's value, which a meta tensor has not: it is fitted
    on the CPU, then moved. The same on a real GPU, with values: test_extractors_on_a_gpu_match_the_cpu."""
    extractor = _extractor(name, tmp_path)
    if isinstance(extractor, SimCLRFeatures):
        extractor = extractor.fit(_images(n=40, size=16)).to("meta")
    else:
        extractor = extractor.to("meta").fit(_images(n=40, size=16))
    held = [t for value in vars(extractor).values() for t in _tensors(value)]
    assert held and all(t.is_meta for t in held)
    out = extractor._raw(torch.zeros(2, 3, 16, 16, dtype=torch.uint8, device="meta"))
    assert out.is_meta and out.shape[0] == 2
    assert extractor.dim(16) == out.shape[1]


@pytest.mark.gpu
@pytest.mark.parametrize("name", EXTRACTORS)
def test_extractors_on_a_gpu_match_the_cpu(name, tmp_path):
    """Every extractor fitted and applied on a CUDA device gives the CPU's standardised (unit-scale) features
    to 2e-2 (in float32: tests/conftest.py turns TF32 off; SimCLR's training still rounds differently); a
    feature computed from the wrong statistics or weights is off by O(1). They come back on the CPU."""
    images = _images(n=40, size=16)
    cpu = _extractor(name, tmp_path).fit(images, seed=1)
    gpu = _extractor(name, tmp_path).to("cuda").fit(images, seed=1)
    expected, got = cpu.transform(torch.from_numpy(images)), gpu.transform(torch.from_numpy(images))
    assert got.device.type == "cpu"
    torch.testing.assert_close(got, expected, atol=2e-2, rtol=2e-2)


@pytest.mark.parametrize(
    "make", [lambda: RandomConvFeatures(), lambda: RandomPatchFeatures(num_fit_patches=5000), lambda: PixelFeatures()]
)
@pytest.mark.parametrize("num_rows", [33, 64, 65])
def test_a_records_features_do_not_depend_on_the_number_of_rows_encoded(make, num_rows):
    """add_remove's neighbour, built by its definition: the rows with one record inserted first (every later row
    moves one place) or appended. Each shared row's features are the same to the bit. At 32 px RandomConvFeatures
    computes an image alone in a batch differently from one in a batch of two or more (checked here too), so
    encode_rows pads every batch to its full size: without it, 65 rows leave the last alone and 66 do not."""
    images = _images(num_rows + 2, size=32, seed=num_rows)
    extractor = make().fit(_images(64, size=32, seed=99))
    rows = np.arange(1, num_rows + 1)
    encoded = extractor.encode_rows(images, rows)
    assert torch.equal(extractor.encode_rows(images, np.arange(0, num_rows + 1))[1:], encoded)  # one inserted first
    assert torch.equal(extractor.encode_rows(images, np.arange(1, num_rows + 2))[:-1], encoded)  # one appended
    assert torch.equal(
        torch.cat([extractor.encode_rows(images, rows[i : i + 1]) for i in (0, num_rows - 1)]), encoded[[0, -1]]
    )  # each alone (padded), as in a batch of 32


def test_random_conv_features_depend_on_the_batch_size_without_padding():
    """Why the padding: RandomConvFeatures at 32 px gives another float result for an image alone than in a batch
    of two on this CPU (if a future torch stops doing so, this test says the padding is no longer needed there)."""
    images = torch.from_numpy(_images(2, size=32, seed=5))
    extractor = RandomConvFeatures().fit(_images(64, size=32, seed=99))
    assert not torch.equal(extractor.transform(images[:1]), extractor.transform(images)[:1])
