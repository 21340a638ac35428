"""``DPSGD.from_config`` on the shipped conf/method/dp_sgd.yaml with changes, for a target and relation, on the
built-in synthetic data or another reader's."""

from omegaconf import OmegaConf

from pate.locations import CONFIG_DIR
from pate.pipeline.methods.base import RunSettings
from pate.pipeline.methods.dp_sgd import DPSGD
from pate.pipeline.noise import NoiseSource
from pate.pipeline.schemas import METHOD_SCHEMAS


def shipped(name: str):
    """conf/method/<name>.yaml's node as Hydra composes it: its typed schema (pate/pipeline/schemas.py) with the
    file's values."""
    values = OmegaConf.load(CONFIG_DIR / "method" / f"{name}.yaml")
    values.pop("defaults")
    return OmegaConf.merge(OmegaConf.structured(METHOD_SCHEMAS[name]), values)


SHIPPED = shipped("dp_sgd")
SYNTHETIC, FOLDER = "pate.data.readers.SyntheticCelebA", "pate.data.multilabel_folder.MultilabelFolder"


def run_settings(target, neighbors="replace", **more) -> RunSettings:
    """A run's shared settings for a method built from its node alone: ``target`` under ``neighbors``, delta 1e-6,
    10 queries of 3 labels, seeded noise."""
    return RunSettings(
        neighbors=neighbors,
        delta=1e-6,
        target_epsilon=target,
        budget_epsilon=None,
        num_queries=10,
        num_labels=3,
        seed=0,
        noise=NoiseSource("seeded", 0, "seeded"),
        **more,
    )


def dp_sgd_method(target, neighbors="replace", reader=SYNTHETIC, **changes) -> DPSGD:
    node = OmegaConf.merge(SHIPPED, changes)
    run = run_settings(target, neighbors)
    cfg = {"method": node, "privacy": {"budget_epsilon": None}, "data": {"reader": {"_target_": reader}}}
    return DPSGD.from_config(OmegaConf.create(cfg), run)
