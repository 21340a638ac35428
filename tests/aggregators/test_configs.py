"""conf/aggregator/*.yaml: keys are exactly the constructor keywords, and the composed config instantiates."""

import inspect
from pathlib import Path

import pytest
from hydra.utils import instantiate
from omegaconf import OmegaConf

from pate.aggregators import Aggregator, BinaryVoting, DataDependentBinaryVoting, GaussianPATE, StableTopK, TauPATE
from tests.conftest import compose_config

CONF = Path(__file__).resolve().parents[2] / "conf" / "aggregator"
CLASSES = {
    "stable_topk_paper": StableTopK,
    "stable_topk_gumbel": StableTopK,
    "gaussian_pate": GaussianPATE,
    "tau_pate": TauPATE,
    "binary_voting": BinaryVoting,
    "binary_voting_dd": DataDependentBinaryVoting,
    "confident_binary_voting": DataDependentBinaryVoting,
}


@pytest.mark.parametrize("name, cls", CLASSES.items())
def test_keys_are_the_constructor_keywords(name, cls):
    raw = OmegaConf.to_container(OmegaConf.load(CONF / f"{name}.yaml"), resolve=False)
    assert list(raw) == ["_target_", *inspect.signature(cls).parameters]
    assert raw["_target_"] == f"pate.aggregators.{cls.__name__}"
    assert raw["num_labels"] == "${data.num_labels}"
    assert raw["num_teachers"] == "${partition.num_teachers}"
    assert raw["neighbors"] == "${privacy.neighbors}"


@pytest.mark.parametrize("name, cls", CLASSES.items())
@pytest.mark.parametrize("relation", ["replace", "add_remove"])
def test_composed_config_instantiates(name, cls, relation):
    cfg = compose_config([f"aggregator={name}", "partition.num_teachers=37", f"privacy.neighbors={relation}"])
    aggregator = instantiate(cfg.aggregator)
    assert isinstance(aggregator, cls) and isinstance(aggregator, Aggregator)
    assert aggregator.requires_teacher_votes == (cls is TauPATE)
    assert (aggregator.num_labels, aggregator.num_teachers, aggregator.neighbors) == (cfg.data.num_labels, 37, relation)


def test_paper_config_is_the_papers_celeba_setting():
    cfg = compose_config(["aggregator=stable_topk_paper"])
    agg = instantiate(cfg.aggregator)
    settings = (agg.selection, agg.sigma_select, agg.test, agg.sigma_test, agg.delta_t)
    assert settings == ("gaussian", 50.0, "gaussian", 60.0, 1e-9)
    assert agg.regularizer is None and agg.max_k is None
