"""Frozen feature extractors that are public by construction.

An extractor maps uint8 images ``[B, 3, S, S]`` to float32 feature vectors ``[B, D]``. What it knows comes
from one of three places, never from a private image or a private label:

* nothing at all (``PixelFeatures``, ``RandomConvFeatures``: a seeded network that is never trained);
* public images without labels, handed to :meth:`fit` (``RandomPatchFeatures``: whitening and filters;
  ``pate.features.ssl.SimCLRFeatures``: a CNN trained self-supervised; every extractor's feature
  standardisation);
* public weights from another domain (``TorchvisionFeatures``: ImageNet-pretrained torchvision networks).

Every extractor standardises its outputs per dimension with the mean and standard deviation of the public
fit images' features, so downstream heads see unit-scale inputs without any statistic of private data.
``identity()`` is what the feature artifact's key hashes: the class, its settings and, for loaded weights,
the checksum of the weights file.
"""

from __future__ import annotations

import os
from abc import ABC, abstractmethod
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import Any

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

from pate.io import sha256_file
from pate.privacy.checks import non_negative, positive, positive_int


def check_uint8_images(images, name: str = "images") -> None:
    """``images`` must be a uint8 numpy array [N, 3, S, S] with N >= 1."""
    shape = getattr(images, "shape", None)
    if not isinstance(images, np.ndarray) or images.dtype != np.uint8 or images.ndim != 4 or images.shape[1] != 3:
        raise ValueError(
            f"{name} must be a uint8 numpy array [N, 3, S, S], got {type(images).__name__} "
            f"with dtype {getattr(images, 'dtype', None)} and shape {shape}"
        )
    if images.shape[0] < 1:
        raise ValueError(f"{name} must hold at least one image, got shape {shape}")


def batches(num: int, batch_size: int) -> Iterator[slice]:
    """Consecutive slices of ``range(num)`` of ``batch_size`` rows (the last one shorter)."""
    for start in range(0, num, batch_size):
        yield slice(start, min(start + batch_size, num))


class Extractor(ABC):
    """Fit once on public images, then transform any images. Subclasses implement :meth:`_raw` (uint8 batch
    -> float32 features before standardisation) and may override :meth:`_fit_raw` to learn from the public
    images first."""

    batch_size: int = 32  # small batches keep the [B, K, H, W] response maps in cache on a CPU
    device: torch.device = torch.device("cpu")

    def __init__(self) -> None:
        self._mean: torch.Tensor | None = None
        self._std: torch.Tensor | None = None

    def to(self, device: torch.device | str) -> Extractor:
        """Compute features on ``device`` from now on: every tensor and network the extractor holds moves there,
        and so does what a later :meth:`fit` learns. What it learns and computes is the same function on any
        device (up to float rounding), so the device is not part of :meth:`identity`."""
        self.device = torch.device(device)
        for name, value in vars(self).items():
            if isinstance(value, (torch.Tensor, nn.Module)):
                setattr(self, name, value.to(self.device))
        return self

    # -- what subclasses provide
    @abstractmethod
    def _raw(self, images: torch.Tensor) -> torch.Tensor:
        """uint8 [B, 3, S, S] -> float32 [B, D], before standardisation."""

    def _fit_raw(self, images: np.ndarray, rng: np.random.Generator) -> None:
        """Learn from the public images (default: nothing)."""

    def check_image_size(self, image_size: int) -> None:
        """``ValueError`` naming ``data.image_size`` when images of that size cannot be encoded (default: any size),
        checked before any data is read."""

    @abstractmethod
    def settings(self) -> dict[str, Any]:
        """The constructor's settings, for the artifact key."""

    # -- the protocol
    def identity(self) -> dict[str, Any]:
        """What identifies the extractor in the features stage's key: its class and its settings."""
        return {"extractor": type(self).__name__, **self.settings()}

    @property
    def fitted(self) -> bool:
        """Whether ``fit`` has set the standardisation (the views stage refits an extractor that has not)."""
        return self._mean is not None

    def fit(self, public_images: np.ndarray, seed: int = 0, progress: Callable[[int], None] | None = None) -> Extractor:
        """Fit on public images only (no labels exist in this signature), then the standardisation
        (:meth:`_standardise_on`) on their features."""
        check_uint8_images(public_images, "public_images")
        self._fit_raw(public_images, np.random.default_rng(seed))
        self._mean = self._std = None
        self.to(self.device)  # what _fit_raw learned (on the CPU) moves to the extractor's device
        parts = list(batches(len(public_images), self.batch_size))
        raw = (self._raw(torch.from_numpy(np.ascontiguousarray(public_images[part])).to(self.device)) for part in parts)
        return self._standardise_on(raw, progress)

    def _standardise_on(self, raw_batches: Iterable[torch.Tensor], progress: Callable[[int], None] | None) -> Extractor:
        """The standardisation: the mean and standard deviation of every feature over the public fit images'
        ``raw_batches`` (a dimension that never varies there gets standard deviation 1, so it maps to 0 rather
        than to inf)."""
        total = total_sq = None
        n = 0
        for raw in raw_batches:
            raw = raw.double()
            total = raw.sum(0) if total is None else total + raw.sum(0)
            total_sq = (raw**2).sum(0) if total_sq is None else total_sq + (raw**2).sum(0)
            n += len(raw)
            if progress is not None:
                progress(len(raw))
        mean = total / n
        std = (total_sq / n - mean**2).clamp_min(0).sqrt()
        std = torch.where(std > 1e-6 * std.max().clamp_min(1e-12), std, torch.ones_like(std))
        self._mean, self._std = mean.float(), std.float()
        return self

    # -- what fit learned, kept with a trained model (``pate.predict``)
    learned: tuple[str, ...] = ("_mean", "_std")  # the attributes fit sets; a subclass adds its own

    def state(self) -> dict[str, torch.Tensor]:
        """What :meth:`fit` learned, on the CPU: each attribute of ``learned``, a module's tensors as
        ``<attribute>.<key>``. With :meth:`settings` it is all that is needed to encode new images the same way
        (:meth:`load_state`); like the fit, it comes from public images only."""
        if not self.fitted:
            raise RuntimeError(f"{type(self).__name__}.state() called before fit(public_images)")
        state = {}
        for name in self.learned:
            value = getattr(self, name)
            if isinstance(value, nn.Module):
                state.update({f"{name}.{key}": tensor.detach().cpu() for key, tensor in value.state_dict().items()})
            else:
                state[name] = value.detach().cpu()
        return state

    def load_state(self, state: dict[str, torch.Tensor]) -> Extractor:
        """Set what :meth:`fit` learned from a :meth:`state` of an extractor with the same settings; a missing or
        unexpected entry is a ``ValueError`` naming it."""
        expected = {name for name in self.learned if not isinstance(getattr(self, name, None), nn.Module)}
        modules = {name: getattr(self, name) for name in self.learned if name not in expected}
        prefixed = {key for key in state if key.split(".", 1)[0] in modules}
        if set(state) - prefixed != expected:
            raise ValueError(
                f"the saved state of {type(self).__name__} holds {sorted(set(state) - prefixed)}; expected "
                f"{sorted(expected)} (and the tensors of {sorted(modules)})"
            )
        for name in expected:
            setattr(self, name, state[name])
        for name, module in modules.items():
            module.load_state_dict({key[len(name) + 1 :]: state[key] for key in prefixed if key.startswith(name + ".")})
        return self.to(self.device)

    # -- the features stage's view: image rows of the dataset
    reads_images: bool = True  # False for features that are looked up by row (PrecomputedFeatures)

    def check_rows(self, num_rows: int) -> None:
        """``ValueError`` when the extractor cannot encode a dataset of ``num_rows`` images (default: any)."""

    def check_encoding(self, fit_rows: np.ndarray, rows: np.ndarray) -> None:
        """``ValueError`` when the features of image ``rows``, standardised on ``fit_rows``, would lose what they
        hold in the stored float16 -- checked before any stage is built, where the extractor can tell without
        computing the features (default: nothing to check; precomputed embeddings are checked)."""

    def fit_rows(
        self, images: np.ndarray, rows: np.ndarray, seed: int = 0, progress: Callable[[int], None] | None = None
    ) -> Extractor:
        """:meth:`fit` on ``images[rows]`` (public rows; the caller checks that)."""
        return self.fit(np.asarray(images[rows]), seed=seed, progress=progress)

    def encode_rows(
        self, images: np.ndarray, rows: np.ndarray, view: Callable[[torch.Tensor], torch.Tensor] | None = None
    ) -> torch.Tensor:
        """Standardised float32 features [len(rows), D] of ``images[rows]`` (of ``view(images[rows])``, a uint8 ->
        uint8 map, when given), on the CPU.

        Every batch is computed at the full ``batch_size``, the last one padded with black images whose features
        are dropped: a network's float result for an image can depend on the batch's size (the convolution routine
        chosen for it; RandomConvFeatures at 32 px on a CPU gives another result for an image alone than for one in
        a batch), and the number of rows is not public under add_remove: one record added would change the last
        batch's size and with it other records' features, beyond what any mechanism prices. At a fixed size the
        result does not depend on an image's place in its batch or its batch-mates (tests/features)."""
        chunk = torch.from_numpy(np.asarray(images[rows]))
        if view is not None:
            chunk = view(chunk)
        encoded = []
        for part in batches(len(chunk), self.batch_size):
            batch = chunk[part]
            padding = self.batch_size - len(batch)
            if padding:
                batch = torch.cat([batch, batch.new_zeros((padding, *batch.shape[1:]))])
            encoded.append(self.transform(batch)[: part.stop - part.start])
        return torch.cat(encoded)

    @torch.inference_mode()
    def transform(self, images: torch.Tensor) -> torch.Tensor:
        """Standardised float32 features [B, D] of a uint8 batch [B, 3, S, S], computed on the extractor's
        device and returned on the CPU."""
        if not self.fitted:
            raise RuntimeError(f"{type(self).__name__}.transform called before fit(public_images)")
        return ((self._raw(images.to(self.device)) - self._mean) / self._std).cpu()

    def dim(self, image_size: int) -> int:
        """Feature dimension for ``image_size`` px inputs."""
        blank = torch.zeros(1, 3, image_size, image_size, dtype=torch.uint8, device=self.device)
        return int(self._raw(blank).shape[1])


def to_unit_interval(images: torch.Tensor) -> torch.Tensor:
    """uint8 -> float32 in [0, 1]."""
    if images.dtype != torch.uint8:
        raise ValueError(f"images must be a uint8 tensor, got dtype {images.dtype}")
    return images.float() / 255.0


class PixelFeatures(Extractor):
    """The pixels themselves, average-pooled to ``size`` x ``size`` (3 * size^2 dims). Knows nothing."""

    def __init__(self, size: int = 16):
        super().__init__()
        self.size = positive_int("size", size)

    def settings(self) -> dict[str, Any]:
        return {"size": self.size}

    def _raw(self, images: torch.Tensor) -> torch.Tensor:
        return F.adaptive_avg_pool2d(to_unit_interval(images), self.size).flatten(1)


class RandomConvFeatures(Extractor):
    """A seeded two-layer convolutional network that is never trained (Kaiming-normal weights): conv 5x5 ->
    ReLU -> 2x2 max-pool -> conv 3x3 -> ReLU -> adaptive average pool to ``pool`` x ``pool``. Knows nothing."""

    def __init__(self, width: int = 64, pool: int = 4, seed: int = 0):
        super().__init__()
        self.width, self.pool, self.seed = positive_int("width", width), positive_int("pool", pool), int(seed)
        gen = torch.Generator().manual_seed(self.seed)
        self.conv1 = torch.empty(self.width, 3, 5, 5)
        self.conv2 = torch.empty(2 * self.width, self.width, 3, 3)
        for w in (self.conv1, self.conv2):
            nn.init.kaiming_normal_(w, nonlinearity="relu", generator=gen)

    def settings(self) -> dict[str, Any]:
        return {"width": self.width, "pool": self.pool, "seed": self.seed}

    def _raw(self, images: torch.Tensor) -> torch.Tensor:
        x = to_unit_interval(images) * 2 - 1
        x = F.max_pool2d(F.relu(F.conv2d(x, self.conv1, padding=2)), 2)
        x = F.relu(F.conv2d(x, self.conv2, padding=1))
        return F.adaptive_avg_pool2d(x, self.pool).flatten(1)


class RandomPatchFeatures(Extractor):
    """Single-layer features from whitened random patches (Coates, Lee & Ng, "An Analysis of Single-Layer
    Networks in Unsupervised Feature Learning", AISTATS 2011, Sections 3-4), fitted on public images only.

    Fit: draw ``num_fit_patches`` ``patch`` x ``patch`` x 3 patches from the public images; normalise each
    patch's contrast, p -> (p - mean(p)) / sqrt(var(p) + 10/255^2) (pixels in [0, 1]; Coates et al.'s +10 on the
    0..255 scale); fit ZCA whitening W = U diag(1 / sqrt(s + ``zca_eps``)) U^T on them; take
    ``num_filters`` of the whitened patches, each scaled to unit norm, as the dictionary D ("random patches",
    Section 4.2).

    Transform: at every patch position (stride 1) r = D W (p_norm - m); the features are the two one-sided
    soft thresholds max(0, r - ``alpha``) and max(0, -r - ``alpha``) ("triangle"/soft-threshold encoder with
    the sign split, Section 3.2), pooled over a ``pool`` x ``pool`` grid of regions (Coates et al. sum-pool
    quadrants; we average, which the standardisation makes the same up to a constant per region):
    2 * num_filters * pool^2 dims. The whole encoder is one convolution (D W folded into the filter bank),
    with the contrast normalisation computed by box filters.
    """

    def __init__(
        self,
        num_filters: int = 256,
        patch: int = 5,
        stride: int = 1,
        pool: int = 3,
        alpha: float = 0.25,
        zca_eps: float = 0.1,
        num_fit_patches: int = 100_000,
        seed: int = 0,
    ):
        super().__init__()
        self.stride = positive_int("stride", stride)
        self.num_filters = positive_int("num_filters", num_filters)
        self.patch = positive_int("patch", patch)
        self.pool = positive_int("pool", pool)
        self.num_fit_patches = positive_int("num_fit_patches", num_fit_patches)
        self.alpha, self.zca_eps = non_negative("alpha", alpha), positive("zca_eps", zca_eps)
        self.seed = int(seed)
        self._filters: torch.Tensor | None = None  # [K, 3, p, p], D W folded
        self._filter_sums: torch.Tensor | None = None  # [K]: sum of each filter's weights
        self._bias: torch.Tensor | None = None  # [K]: D W m

    learned = ("_mean", "_std", "_filters", "_filter_sums", "_bias")

    def settings(self) -> dict[str, Any]:
        return {
            "num_filters": self.num_filters,
            "patch": self.patch,
            "stride": self.stride,
            "pool": self.pool,
            "alpha": self.alpha,
            "zca_eps": self.zca_eps,
            "num_fit_patches": self.num_fit_patches,
            "seed": self.seed,
        }

    _CONTRAST = 10.0 / 255.0**2

    def check_image_size(self, image_size: int) -> None:
        if image_size < self.patch:
            raise ValueError(
                f"data.image_size={image_size} is smaller than the extractor's patch="
                f"{self.patch} (features.extractor.patch): no patch fits in an image"
            )

    def _fit_raw(self, images: np.ndarray, rng: np.random.Generator) -> None:
        n, _, size, _ = images.shape
        p = self.patch
        self.check_image_size(size)
        img = rng.integers(0, n, self.num_fit_patches)
        row = rng.integers(0, size - p + 1, self.num_fit_patches)[:, None, None, None]
        col = rng.integers(0, size - p + 1, self.num_fit_patches)[:, None, None, None]
        offsets = np.arange(p)
        pixels = np.asarray(images[np.unique(img)])  # each sampled public image read once
        patches = pixels[
            np.searchsorted(np.unique(img), img)[:, None, None, None],
            np.arange(3)[None, :, None, None],
            row + offsets[None, None, :, None],
            col + offsets[None, None, None, :],
        ]
        x = patches.reshape(self.num_fit_patches, -1).astype(np.float64) / 255.0
        x = (x - x.mean(1, keepdims=True)) / np.sqrt(x.var(1, keepdims=True) + self._CONTRAST)
        m = x.mean(0)
        s, u = np.linalg.eigh(np.cov(x, rowvar=False))
        whiten = (u / np.sqrt(np.clip(s, 0, None) + self.zca_eps)) @ u.T
        chosen = (x[rng.choice(self.num_fit_patches, self.num_filters, replace=False)] - m) @ whiten.T
        dictionary = chosen / np.linalg.norm(chosen, axis=1, keepdims=True).clip(1e-8)
        folded = dictionary @ whiten  # r = D W (p_norm - m) = folded p_norm - folded m
        self._filters = torch.from_numpy(folded.reshape(self.num_filters, 3, p, p)).float()
        self._filter_sums = self._filters.sum(dim=(1, 2, 3))
        self._bias = torch.from_numpy(folded @ m).float()

    def _raw(self, images: torch.Tensor) -> torch.Tensor:
        if self._filters is None:
            raise RuntimeError("RandomPatchFeatures needs fit(public_images) before it can encode")
        x = to_unit_interval(images)
        p = self.patch
        # contrast normalisation of every patch: its mean and variance over all p*p*3 values
        box = F.avg_pool2d(x.sum(1, keepdim=True), p, stride=self.stride) / 3
        box_sq = F.avg_pool2d((x * x).sum(1, keepdim=True), p, stride=self.stride) / 3
        scale = torch.rsqrt((box_sq - box * box).clamp_min(0) + self._CONTRAST)
        # folded . p_norm = (folded . p - mean * sum(folded)) * scale
        # channels-last convolution: ~2x faster than the default layout on CPU
        r = F.conv2d(x.contiguous(memory_format=torch.channels_last), self._filters, stride=self.stride)
        # in place from here: the [B, K, H, W] maps are the whole cost, so allocate as few as possible
        r.addcmul_(box, self._filter_sums[None, :, None, None], value=-1).mul_(scale)
        r.sub_(self._bias[None, :, None, None])
        pos = (r - self.alpha).clamp_min_(0)
        neg = r.neg_().sub_(self.alpha).clamp_min_(0)
        return torch.cat([F.adaptive_avg_pool2d(pos, self.pool), F.adaptive_avg_pool2d(neg, self.pool)], 1).flatten(1)


IMAGENET_WEIGHTS = {"resnet18": "IMAGENET1K_V1", "resnet50": "IMAGENET1K_V2"}


def imagenet_weights(arch: str, weights_path: str | None, key: str) -> Path:
    """The file of torchvision's ImageNet weights for ``arch``: ``weights_path`` or torch's hub cache
    ($TORCH_HOME/hub/checkpoints/). Runs never download: a missing file raises FileNotFoundError saying how to
    fetch it, with ``key`` (the config node, e.g. "teacher.model") naming where to point ``weights_path``."""
    import torchvision

    if arch not in IMAGENET_WEIGHTS:
        raise ValueError(f"arch={arch!r} has no ImageNet weights here; expected one of {sorted(IMAGENET_WEIGHTS)}")
    url = torchvision.models.get_model_weights(arch)[IMAGENET_WEIGHTS[arch]].url
    cached = Path(torch.hub.get_dir()) / "checkpoints" / os.path.basename(url)
    path = Path(weights_path).expanduser() if weights_path else cached
    if not path.is_file():
        raise FileNotFoundError(
            f"ImageNet weights for {arch} not found at {str(path)!r}, and runs never download. On a machine with "
            f'network access run: python -c "import torchvision; torchvision.models.{arch}('
            f"weights='{IMAGENET_WEIGHTS[arch]}')\", then copy {cached.name} into {cached.parent} here, or pass "
            f"{key}.weights_path=/path/to/{cached.name}"
        )
    return path


class TorchvisionFeatures(Extractor):
    """The global-average-pooled penultimate layer of an ImageNet-pretrained torchvision network (public
    weights from another domain; ImageNet's labels are not CelebA's). Images are resized to ``input_size`` and
    normalised with ImageNet's published channel statistics.

    Weights are read from ``weights_path`` or from torch's hub cache (``$TORCH_HOME/hub/checkpoints``), never
    downloaded at run time; when absent the error says how to fetch them. The weights file's SHA-256 is part of
    :meth:`identity`, so other weights give other features and other teachers.
    """

    _IMAGENET_MEAN = (0.485, 0.456, 0.406)
    _IMAGENET_STD = (0.229, 0.224, 0.225)

    def __init__(
        self, arch: str = "resnet50", weights_path: str | None = None, input_size: int = 224, batch_size: int = 64
    ):
        super().__init__()
        import torchvision

        self.arch, self.input_size = arch, positive_int("input_size", input_size)
        self.batch_size = positive_int("batch_size", batch_size)
        path = imagenet_weights(arch, weights_path, "features")  # refuses an arch without ImageNet weights
        self.weights_path, self.weights_sha256 = str(path), sha256_file(path)
        net = getattr(torchvision.models, arch)(weights=None)
        net.load_state_dict(torch.load(path, map_location="cpu", weights_only=True))
        net.fc = nn.Identity()
        self.net = net.eval()

    def settings(self) -> dict[str, Any]:
        # the checksum, not the path, identifies the weights
        return {"arch": self.arch, "input_size": self.input_size, "weights_sha256": self.weights_sha256}

    def _raw(self, images: torch.Tensor) -> torch.Tensor:
        x = F.interpolate(
            to_unit_interval(images), size=self.input_size, mode="bilinear", align_corners=False, antialias=True
        )
        mean = torch.tensor(self._IMAGENET_MEAN, device=x.device)[None, :, None, None]
        std = torch.tensor(self._IMAGENET_STD, device=x.device)[None, :, None, None]
        with torch.inference_mode():
            return self.net((x - mean) / std).float()


__all__ = [
    "IMAGENET_WEIGHTS",
    "Extractor",
    "PixelFeatures",
    "RandomConvFeatures",
    "RandomPatchFeatures",
    "TorchvisionFeatures",
    "batches",
    "check_uint8_images",
    "imagenet_weights",
    "to_unit_interval",
]
