"""The model zoo of teachers and students: plain ``nn.Module``s mapping float images to logits.

Every model maps a normalised float batch ``[B, 3, S, S]`` (see :func:`teachers.data.to_float`) to logits
``[B, num_labels]``, ends in a global average pool so that it accepts any image size, and is built from
scratch: nothing is ever downloaded.
"""

from __future__ import annotations

import functools
import math
from itertools import pairwise

import torch
from torch import nn

from pate.features.extractors import imagenet_weights

_RESNETS = {18: "resnet18", 50: "resnet50"}  # torchvision's builders, imported where one is built (torchvision costs
# a second at start-up, which a run without a ResNet need not pay)
_STEMS = ("small", "imagenet")


_NORMS = ("batch", "group", "frozen")
# the stages frozen_stages counts, in order: the stem, then layer1 ... layer4 (fc always trains)
_RESNET_STAGES = (("conv1", "bn1"), ("layer1",), ("layer2",), ("layer3",), ("layer4",))


class FrozenStatsBatchNorm2d(nn.BatchNorm2d):
    """BatchNorm whose statistics never move: in training as in evaluation it normalises with its running
    mean and variance (the pretrained ones, loaded with the weights) and never updates them; the affine weight
    and bias still train. y = weight (x - running_mean) / sqrt(running_var + eps) + bias, i.e. BatchNorm in
    eval mode (Ioffe & Szegedy 2015, Alg. 2, step 11), as fine-tuning with "frozen BN" uses it.

    Per-sample and with constant buffers, so G copies stack (teachers/batched.py). Its state dict is
    BatchNorm2d's, so torchvision's weights load unchanged."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        scale = self.weight * torch.rsqrt(self.running_var + self.eps)
        shift = self.bias - self.running_mean * scale
        return x * scale[None, :, None, None] + shift[None, :, None, None]


def _norm(kind: str, channels: int, groups: int) -> nn.Module:
    """BatchNorm; GroupNorm with gcd(groups, channels) groups (per-sample statistics, no running buffers); or
    :class:`FrozenStatsBatchNorm2d`. The last two stack: G copies train as one model (teachers/batched.py)."""
    if kind == "group":
        return nn.GroupNorm(math.gcd(groups, channels), channels)
    return FrozenStatsBatchNorm2d(channels) if kind == "frozen" else nn.BatchNorm2d(channels)


def _conv_norm_relu(c_in: int, c_out: int, norm: str) -> nn.Sequential:
    return nn.Sequential(nn.Conv2d(c_in, c_out, 3, padding=1, bias=False), _norm(norm, c_out, 8), nn.ReLU(inplace=True))


class SmallCNN(nn.Module):
    """Four conv-norm-relu blocks (widths w, 2w, 4w, 8w), each followed by a 2x2 max-pool, then a global
    average pool and a linear layer. About 0.4 M parameters at w=32; tens of MFLOPs per 32 px image, so
    a teacher trains in seconds on a laptop CPU. ``norm``: "batch" (BatchNorm) or "group" (GroupNorm with
    gcd(8, channels) groups, which the batched teacher engine can stack). Not "frozen": a network trained
    from scratch has no statistics to freeze.
    """

    def __init__(self, num_labels: int = 40, width: int = 32, norm: str = "batch"):
        super().__init__()
        if not isinstance(num_labels, int) or num_labels < 1:
            raise ValueError(f"num_labels must be a positive integer, got {num_labels!r}")
        if not isinstance(width, int) or width < 1:
            raise ValueError(f"width must be a positive integer, got {width!r}")
        if norm not in ("batch", "group"):
            raise ValueError(
                f"norm must be 'batch' or 'group' for SmallCNN, got {norm!r} ('frozen' needs "
                f"pretrained statistics, which a SmallCNN trained from scratch does not have)"
            )
        widths = [3, width, 2 * width, 4 * width, 8 * width]
        blocks = [
            nn.Sequential(_conv_norm_relu(c_in, c_out, norm), nn.MaxPool2d(2)) for c_in, c_out in pairwise(widths)
        ]
        self.features = nn.Sequential(*blocks)
        self.pool = nn.AdaptiveAvgPool2d(1)
        self.head = nn.Linear(widths[-1], num_labels)

    def forward(self, x):
        return self.head(self.pool(self.features(x)).flatten(1))


@functools.lru_cache(maxsize=2)
def _read_weights(path: str, size: int, mtime_ns: int) -> dict[str, torch.Tensor]:
    """The state dict in ``path``, read once per process: every teacher's network starts from it (800 ResNet-50
    teachers would otherwise read the 100 MB file 800 times to train, and again to vote). Keyed by size and
    modification time too, so a replaced file is read again. ``load_state_dict`` copies, so sharing is safe."""
    return torch.load(path, map_location="cpu", weights_only=True)


def _check_resnet(depth, num_labels, width, stem, pretrained, norm, frozen_stages) -> None:
    """Every argument of :func:`resnet`, and the combinations it refuses, before a network is built."""
    if depth not in _RESNETS:
        raise ValueError(f"depth must be one of {sorted(_RESNETS)}, got {depth!r}")
    if width not in (None, 64):
        raise ValueError(f"width must be None (torchvision's base width 64) for a ResNet, got {width!r}")
    if stem not in _STEMS:
        raise ValueError(f"stem must be one of {_STEMS}, got {stem!r}")
    if not isinstance(num_labels, int) or num_labels < 1:
        raise ValueError(f"num_labels must be a positive integer, got {num_labels!r}")
    if pretrained not in (None, "imagenet"):
        raise ValueError(f"pretrained must be null or 'imagenet', got {pretrained!r}")
    if pretrained and stem != "imagenet":
        raise ValueError(
            f"pretrained={pretrained!r} needs stem='imagenet' (the small stem has no pretrained "
            f"weights), got stem={stem!r}"
        )
    if norm not in _NORMS:
        raise ValueError(f"norm must be one of {_NORMS}, got {norm!r}")
    if norm == "frozen" and pretrained is None:
        raise ValueError(
            "norm='frozen' keeps the pretrained BatchNorm statistics, so it needs "
            "pretrained='imagenet' (from scratch use norm='group' or 'batch')"
        )
    if norm == "group" and pretrained is not None:
        raise ValueError(
            f"norm='group' has no pretrained weights (ImageNet's are BatchNorm's), so it needs "
            f"pretrained=null, got {pretrained!r} (with pretrained weights use norm='frozen' or 'batch')"
        )
    if isinstance(frozen_stages, bool) or not isinstance(frozen_stages, int) or not 0 <= frozen_stages <= 5:
        raise ValueError(
            f"frozen_stages must be an integer in [0, 5] (stem, layer1, ..., layer4), got {frozen_stages!r}"
        )


def resnet(
    depth: int,
    num_labels: int = 40,
    width: int | None = None,
    stem: str = "small",
    pretrained: str | None = None,
    weights_path: str | None = None,
    norm: str = "batch",
    frozen_stages: int = 0,
) -> nn.Module:
    """torchvision ResNet-18 or ResNet-50, fc -> ``num_labels``: randomly initialised (``weights=None``), or with
    ``pretrained="imagenet"`` initialised from torchvision's ImageNet weights (every layer but fc, which is new;
    public weights from another domain), read from ``weights_path`` or torch's hub cache, never downloaded
    (:func:`pate.features.extractors.imagenet_weights` says how to fetch them). Pretrained weights need
    ``stem="imagenet"``: the small stem's 3x3 convolution has no pretrained counterpart.

    ``stem="small"`` (default) replaces ImageNet's 7x7 stride-2 convolution and 3x3 max-pool (4x downsampling,
    meant for 224 px) with a 3x3 stride-1 convolution and no pool, as is usual for 32-64 px inputs (CIFAR
    ResNets, He et al. 2016, section 4.2): with the ImageNet stem a 32 px image is 1x1 after layer4 and a
    64 px one 2x2. ``stem="imagenet"`` keeps torchvision's stem, for full-resolution images.

    ``norm``: "batch" (torchvision's BatchNorm); "group", GroupNorm with 32 groups (Wu & He 2018), for a network
    trained from scratch (BatchNorm's pretrained statistics have no GroupNorm counterpart); or "frozen",
    :class:`FrozenStatsBatchNorm2d` with the pretrained statistics, for a pretrained network. Only "group" and
    "frozen" stack in the batched teacher engine.

    ``frozen_stages`` = k keeps the first k of (stem, layer1, layer2, layer3, layer4) at their initial weights
    (``requires_grad`` off; no optimiser updates or decays them), the fine-tuning recipe's frozen layers; fc
    always trains. With ``norm="batch"`` a frozen stage's BatchNorm statistics still follow the batches in
    training; ``norm="frozen"`` fixes them too.

    ``width`` exists for config symmetry with :class:`SmallCNN`; torchvision fixes the stage widths (64, 128,
    256, 512), so only ``None`` or 64 is accepted.
    """
    _check_resnet(depth, num_labels, width, stem, pretrained, norm, frozen_stages)
    import torchvision

    build = getattr(torchvision.models, _RESNETS[depth])
    net = build(weights=None, num_classes=num_labels, norm_layer=lambda c: _norm(norm, c, 32))
    path = imagenet_weights(f"resnet{depth}", weights_path, "teacher.model") if pretrained else None
    # a skeleton built on the meta device (teachers.predict.load_teacher) gets all its tensors assigned later
    if path is not None and not net.fc.weight.is_meta:
        stat = path.stat()
        state = _read_weights(str(path.resolve()), stat.st_size, stat.st_mtime_ns)
        missing, unexpected = net.load_state_dict(
            {k: v for k, v in state.items() if not k.startswith("fc.")}, strict=False
        )
        if set(missing) != {"fc.weight", "fc.bias"} or unexpected:
            raise ValueError(
                f"the ImageNet weights do not fit resnet{depth}: missing {missing}, unexpected {unexpected}"
            )
    if stem == "small":
        net.conv1 = nn.Conv2d(3, net.conv1.out_channels, kernel_size=3, stride=1, padding=1, bias=False)
        # The same initialisation torchvision gives every other convolution of the network.
        nn.init.kaiming_normal_(net.conv1.weight, mode="fan_out", nonlinearity="relu")
        net.maxpool = nn.Identity()
    for stage in _RESNET_STAGES[:frozen_stages]:
        for name in stage:
            getattr(net, name).requires_grad_(False)
    return net
