"""Shared fixtures: the real Hydra config, composed and shrunk (as in lightning-hydra-template)."""

from pathlib import Path

import pytest
from hydra import compose, initialize_config_dir
from hydra.utils import instantiate
from omegaconf import DictConfig, open_dict

from pipeline.runner import set_num_labels

CONF_DIR = str(Path(__file__).resolve().parent.parent / "conf")


def compose_config(overrides=(), root: Path | None = None) -> DictConfig:
    """``conf/train.yaml`` with ``overrides``; data, cache and logs under ``root``; ``data.num_labels`` set from the
    reader's label names as a run sets it, where they can be read without data (the synthetic set)."""
    with initialize_config_dir(config_dir=CONF_DIR, version_base="1.3"):
        cfg = compose(config_name="train", overrides=list(overrides))
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
