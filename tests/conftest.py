"""Shared fixtures: the real Hydra config, composed and shrunk (as in lightning-hydra-template)."""

import os

if os.environ.get("PYTEST_XDIST_WORKER"):
    # `make test` runs one pytest-xdist worker per core: each computes with one thread, and so does every
    # interpreter a test starts (torch's default of one thread per core in every worker would oversubscribe the
    # cores, which slows each process about tenfold). Set before torch is imported.
    os.environ["OMP_NUM_THREADS"] = os.environ["MKL_NUM_THREADS"] = "1"

import copy
import functools
from pathlib import Path

import numpy as np
import pytest
from hydra import compose, initialize_config_dir
from hydra.utils import instantiate
from omegaconf import DictConfig, open_dict

import pate.pipeline.schemas  # noqa: F401  (registers the typed schemas that conf/ extends, before any compose)

CONF_DIR = str(Path(__file__).resolve().parent.parent / "conf")

if os.environ.get("PYTEST_XDIST_WORKER"):
    import torch

    torch.set_num_threads(1)


def _parse_each_yaml_text_once() -> None:
    """Hydra parses every config file again on each compose (about 28 files, with PyYAML's pure-Python parser: a
    fifth of a compose's 0.12 s), and the suite composes about 700 times. In this test process OmegaConf's YAML
    parse is memoised by the text itself, so an edited or new file is parsed afresh; a text that fails to parse is
    not stored and raises as before. Callers get a deep copy of the parsed objects."""
    import io
    import types

    import yaml
    from omegaconf import omegaconf as omegaconf_module

    parsed = {}

    def load(stream, Loader):
        text = stream if isinstance(stream, str) else stream.read()
        key = (text, Loader.__qualname__)
        if key not in parsed:
            named = io.StringIO(text)
            named.name = getattr(stream, "name", "<file>")  # PyYAML's errors name the file
            parsed[key] = yaml.load(named, Loader=Loader)
        return copy.deepcopy(parsed[key])

    omegaconf_module.yaml = types.SimpleNamespace(**{**vars(yaml), "load": load})


_parse_each_yaml_text_once()


@functools.lru_cache(maxsize=None)
def _composed(overrides: tuple[str, ...]) -> DictConfig:
    """Hydra's composition of ``overrides`` (about 0.2 s each, and many tests share their overrides): callers get a
    deep copy, so no test sees another's edits. The config files do not change during a session."""
    with initialize_config_dir(config_dir=CONF_DIR, version_base="1.3"):
        return compose(config_name="train", overrides=list(overrides))


def compose_config(overrides=(), root: Path | None = None) -> DictConfig:
    """``conf/train.yaml`` with ``overrides``; data, cache and logs under ``root``; ``data.num_labels`` set from the
    reader's label names as a run sets it, where they can be read without data (the synthetic set)."""
    from pate.pipeline.runner import set_num_labels  # here, not at the top: xdist's controller never needs Lightning

    cfg = copy.deepcopy(_composed(tuple(overrides)))
    if cfg.data.get("synthetic") is not None:
        set_num_labels(cfg, instantiate(cfg.data.reader).label_names())
    if root is not None:
        with open_dict(cfg):
            cfg.paths.root_dir = str(root)
            cfg.paths.output_dir = str(root / "run")
    return cfg


@pytest.fixture(scope="session")
def shared_root(tmp_path_factory) -> Path:
    """One data + cache directory for the whole session, so the tiny synthetic set is generated once."""
    return tmp_path_factory.mktemp("pate_root")


@pytest.fixture
def tiny_cfg(shared_root):
    def make(*overrides: str) -> DictConfig:
        return compose_config(["debug=tiny", *overrides], shared_root)

    return make


@pytest.fixture
def tiny_cnn_cfg(shared_root):
    """debug=tiny with CNN teachers and student (the Lightning path)."""

    def make(*overrides: str) -> DictConfig:
        return compose_config(["debug=tiny_cnn", *overrides], shared_root)

    return make


# ---------------------------------------------------------------- the training, teacher and student tests
# Shrinks the real configs to seconds on a CPU. The aggregator group is not needed by these stages.
TINY = [
    "~aggregator",
    "teacher=small_cnn",
    "student=small_cnn",
    "teacher.max_epochs=1",
    "teacher.batch_size=8",
    "teacher.model.width=8",
    "student.max_epochs=1",
    "student.batch_size=8",
    "student.model.width=8",
]


@pytest.fixture(scope="session")
def cfg():
    return compose_config(TINY)


@pytest.fixture(scope="session")
def tiny_data():
    """60 random 16 px images with random labels: (images uint8 [60, 3, 16, 16], labels uint8 [60, 40])."""
    rng = np.random.default_rng(1234)
    images = rng.integers(0, 256, size=(60, 3, 16, 16), dtype=np.uint8)
    labels = rng.integers(0, 2, size=(60, 40), dtype=np.uint8)
    return images, labels


def brightness_task(num_images: int, size: int, seed: int):
    """An easy synthetic multi-label task: label l is on iff the mean brightness of channel l % 3 exceeds a
    per-label threshold spread over [0.2, 0.8], so most labels are imbalanced and the majority-class
    baseline is well above 1/2. Returns (images uint8 [n, 3, size, size], labels uint8 [n, 40])."""
    rng = np.random.default_rng(seed)
    brightness = rng.uniform(0.0, 1.0, size=(num_images, 3))
    noise = rng.normal(0.0, 20.0, size=(num_images, 3, size, size))
    images = np.clip(brightness[:, :, None, None] * 255.0 + noise, 0, 255).astype(np.uint8)
    thresholds = np.linspace(0.2, 0.8, 40)
    labels = (brightness[:, np.arange(40) % 3] > thresholds).astype(np.uint8)
    return images, labels


def majority_baseline(train_labels: np.ndarray, eval_labels: np.ndarray) -> float:
    """Mean per-label accuracy on ``eval_labels`` of predicting each label's majority value in ``train_labels``."""
    majority = train_labels.mean(axis=0) >= 0.5
    return float((eval_labels == majority).mean())


@pytest.fixture
def fake_imagenet_resnet18(tmp_path, monkeypatch):
    """A stand-in for torchvision's ImageNet ResNet-18 file in a private torch hub cache ($TORCH_HOME): seeded
    random weights whose BatchNorm statistics are not the defaults (means ~ N(0, 0.1), variances in [0.5, 2]),
    so that frozen statistics are visible. Returns its state dict."""
    import torch
    import torchvision

    monkeypatch.setenv("TORCH_HOME", str(tmp_path / "torch_home"))
    checkpoints = tmp_path / "torch_home" / "hub" / "checkpoints"
    checkpoints.mkdir(parents=True)
    gen = torch.Generator().manual_seed(0)
    torch.manual_seed(0)
    state = torchvision.models.resnet18(weights=None).state_dict()
    for name, value in state.items():
        if name.endswith("running_mean"):
            state[name] = 0.1 * torch.randn(value.shape, generator=gen)
        elif name.endswith("running_var"):
            state[name] = 0.5 + 1.5 * torch.rand(value.shape, generator=gen)
    torch.save(state, checkpoints / "resnet18-f37072fd.pth")
    return state


# ---------------------------------------------------------------- markers
# A test that runs the pipeline end to end asks for one of these fixtures: it is slow by definition. Tests that
# run a command line or a heavy computation carry @pytest.mark.slow (or their module's pytestmark) themselves.
END_TO_END_FIXTURES = frozenset({"shared_root", "tiny_cfg", "tiny_cnn_cfg"})


def pytest_addoption(parser):
    parser.addoption(
        "--audit",
        action="store_true",
        help="run the audit-marked tests (the Monte Carlo and exact privacy audits: `make audit`) and nothing else; "
        "without it they are left out",
    )


def pytest_collection_modifyitems(config, items):
    """Keep the audit-marked tests for ``--audit`` runs (``make audit``) and the others for the rest (``make
    test``); mark the end-to-end tests slow; skip the gpu-marked tests, with the reason, where torch sees no CUDA
    device."""
    audit = config.getoption("--audit")
    kept = [item for item in items if (item.get_closest_marker("audit") is not None) == audit]
    if len(kept) < len(items):
        config.hook.pytest_deselected(items=[item for item in items if item not in kept])
        items[:] = kept
    cuda = None
    for item in items:
        if END_TO_END_FIXTURES & set(getattr(item, "fixturenames", ())):
            item.add_marker(pytest.mark.slow)
        if item.get_closest_marker("gpu") is not None:
            if cuda is None:
                import torch

                cuda = torch.cuda.is_available()
            if not cuda:
                item.add_marker(pytest.mark.skip(reason="needs a CUDA device (gpu marker)"))


@pytest.fixture(autouse=True)
def _exact_float32_on_a_gpu(request):
    """A gpu-marked test compares a CUDA device with the CPU (or two kernels with each other) in float32, so it
    runs with TF32 off: cuDNN's convolutions use TF32 by default, whose 10-bit mantissa put 4 of 20,480 extractor
    features 0.06 from the CPU's and two engines' teachers 7e-3 apart on an H200 (700690e), errors of the size the
    tests look for. What the pipeline runs with is untouched."""
    if request.node.get_closest_marker("gpu") is None:
        yield
        return
    import torch

    saved = torch.backends.cudnn.allow_tf32, torch.backends.cuda.matmul.allow_tf32
    torch.backends.cudnn.allow_tf32 = torch.backends.cuda.matmul.allow_tf32 = False
    try:
        yield
    finally:
        torch.backends.cudnn.allow_tf32, torch.backends.cuda.matmul.allow_tf32 = saved


@pytest.fixture(scope="session", autouse=True)
def _budget_ledger_of_the_session(tmp_path_factory):
    """Runs with secret noise record their releases in the user's privacy budget ledger (pate/budget.py,
    $PATE_BUDGET_DIR): the tests keep theirs in the session's temporary directory, never the user's."""
    saved = os.environ.get("PATE_BUDGET_DIR")
    os.environ["PATE_BUDGET_DIR"] = str(tmp_path_factory.mktemp("budget"))
    yield
    if saved is None:
        os.environ.pop("PATE_BUDGET_DIR", None)
    else:
        os.environ["PATE_BUDGET_DIR"] = saved
