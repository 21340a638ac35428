"""The self-supervised extractor: SimCLR's loss against its definition, the augmentations' invariants, and a
fit that learns, is deterministic and leaves the global RNG alone."""

import math

import numpy as np
import pytest
import torch

from pate.features import SimCLRFeatures
from pate.features.ssl import augment, nt_xent_loss


def _nt_xent_by_definition(z1, z2, tau):
    """Chen et al. 2020, Eq. 1, one anchor at a time, averaged over the 2N anchors."""
    z = torch.nn.functional.normalize(torch.cat([z1, z2]), dim=1).double()
    n = len(z1)
    total = 0.0
    for i in range(2 * n):
        j = (i + n) % (2 * n)
        sims = [math.exp(float(z[i] @ z[k]) / tau) for k in range(2 * n) if k != i]
        total += -math.log(math.exp(float(z[i] @ z[j]) / tau) / sum(sims))
    return total / (2 * n)


@pytest.mark.parametrize("tau", [0.1, 0.5, 1.0])
def test_nt_xent_equals_its_definition(tau):
    gen = torch.Generator().manual_seed(0)
    z1, z2 = torch.randn(6, 5, generator=gen), torch.randn(6, 5, generator=gen)
    assert nt_xent_loss(z1, z2, tau).item() == pytest.approx(_nt_xent_by_definition(z1, z2, tau), rel=1e-5)


def test_nt_xent_closed_form_for_identical_orthogonal_pairs():
    """Views equal, different images orthogonal: -log(e^(1/tau) / (e^(1/tau) + 2N - 2))."""
    n, tau = 4, 0.2
    z = torch.eye(n)
    expected = -math.log(math.exp(1 / tau) / (math.exp(1 / tau) + 2 * n - 2))
    assert nt_xent_loss(z, z, tau).item() == pytest.approx(expected, rel=1e-6)


def test_nt_xent_computes_on_the_device_of_its_inputs():
    """Every tensor the loss makes lives on its inputs' device: a CPU-made target beside CUDA logits failed the
    gpu-marked extractor test on an H200 (700690e). The meta device refuses a CPU tensor the same way, here."""
    z = torch.randn(4, 3, device="meta")
    loss = nt_xent_loss(z, z, 0.5)
    assert loss.device.type == "meta" and loss.shape == ()


def test_augment_without_crop_or_jitter_is_the_image_or_its_mirror():
    gen = torch.Generator().manual_seed(0)
    x = torch.rand(64, 3, 8, 8, generator=gen)
    view = augment(x, gen, min_scale=1.0, jitter=0.0)
    same = (view - x).abs().amax(dim=(1, 2, 3)) < 1e-5
    mirrored = (view - x.flip(-1)).abs().amax(dim=(1, 2, 3)) < 1e-5
    assert bool((same | mirrored).all())
    assert 16 < int(mirrored.sum()) < 48  # flips with probability 1/2: 32 +- 4 sd


def test_augment_stays_in_unit_range_and_varies():
    gen = torch.Generator().manual_seed(1)
    x = torch.rand(8, 3, 16, 16, generator=gen)
    a, b = augment(x, gen, 0.5, 0.3), augment(x, gen, 0.5, 0.3)
    assert a.min() >= 0 and a.max() <= 1 and a.shape == x.shape
    assert not torch.allclose(a, b)


def _prototype_images(n=256, size=16, seed=0):
    """Noisy copies of 8 random prototypes: structure that a contrastive encoder can learn to tell apart."""
    rng = np.random.default_rng(seed)
    protos = rng.integers(0, 256, (8, 3, size, size))
    noisy = protos[rng.integers(0, 8, n)] + rng.normal(0, 20, (n, 3, size, size))
    return noisy.clip(0, 255).astype(np.uint8)


def test_fit_learns_is_deterministic_and_leaves_the_global_rng_alone():
    images = _prototype_images()
    make = lambda: SimCLRFeatures(width=8, pool=2, epochs=6, train_batch_size=64, lr=3e-3)  # noqa: E731
    state = torch.get_rng_state()
    first = make().fit(images, seed=3)
    assert torch.equal(state, torch.get_rng_state())
    assert first.losses[-1] < first.losses[0] - 0.1, first.losses
    second = make().fit(images, seed=3)
    assert first.losses == second.losses
    x = torch.from_numpy(images[:10])
    torch.testing.assert_close(first.transform(x), second.transform(x))
    assert first.transform(x).shape == (10, 4 * 8 * 2 * 2)
    assert first.losses != make().fit(images, seed=4).losses


@pytest.mark.parametrize(
    "kwargs, match",
    [
        ({"width": 0}, "width"),
        ({"min_scale": 0.0}, "min_scale"),
        ({"min_scale": 1.5}, "min_scale"),
        ({"jitter": 1.0}, "jitter"),
        ({"temperature": -1.0}, "temperature"),
        ({"epochs": 2.5}, "epochs"),
    ],
)
def test_bad_settings_name_the_argument(kwargs, match):
    with pytest.raises(ValueError, match=match):
        SimCLRFeatures(**kwargs)


def test_fit_on_one_image_is_refused():
    with pytest.raises(ValueError, match="at least 2"):
        SimCLRFeatures(epochs=1).fit(_prototype_images(n=1))
