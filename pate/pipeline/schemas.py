"""The typed schemas of the ``method``, ``teacher`` and ``student`` groups (Hydra structured configs): each option's
YAML file extends its schema (``defaults: [/schema/<group>/<name>@_here_, _self_]``), so Hydra refuses a key the
component does not have and a value of the wrong type while it composes the config, naming the key, before anything
is read. The methods' schemas hold their defaults (``conf/method/*.yaml`` states the same values; a test holds them
equal); the teachers' and students' hold types only.

Light by design (dataclasses and Hydra's ConfigStore): importing it registers the schemas, and ``pate.pipeline``
imports it, so whatever composes ``train`` through the package (``pate-train``, the benchmarks, the tests) has them.
"""

from __future__ import annotations

from dataclasses import MISSING, dataclass, field, fields
from typing import Any, Optional

from hydra.core.config_store import ConfigStore

__all__ = [
    "DPSGDConfig",
    "HeadStudentConfig",
    "HeadTeachersConfig",
    "METHOD_SCHEMAS",
    "NetworkStudentConfig",
    "NetworkTeachersConfig",
    "PATEConfig",
    "PrivateKNNConfig",
    "SCHEMAS",
    "schema_defaults",
]


@dataclass
class PATEConfig:
    """``method=pate``: no keys of its own; its settings are its groups (teacher, aggregator, partition, student)."""

    _target_: str = "pate.pipeline.methods.pate.PATE"


@dataclass
class DPSGDConfig:
    """``method=dp_sgd`` (``pate.pipeline.methods.dp_sgd.DPSGD``; conf/method/dp_sgd.yaml says what each is)."""

    _target_: str = "pate.pipeline.methods.dp_sgd.DPSGD"
    model: str = "linear"
    inputs: str = "unit_norm"
    width: int = 32
    expected_batch_size: int = 4096
    public_num_records: Optional[int] = None
    epochs: int = 20
    clip_norm: float = 1.0
    lr: float = 2.0
    momentum: float = 0.9
    noise_multiplier: float = 1.0
    group_size: Optional[int] = None
    probe_recipes: list[Any] = field(default_factory=list)


@dataclass
class PrivateKNNConfig:
    """``method=private_knn`` (``pate.pipeline.methods.private_knn.PrivateKNNMethod``)."""

    _target_: str = "pate.pipeline.methods.private_knn.PrivateKNNMethod"
    k: int = 800
    sampling_rate: float = 0.1
    sigma: float = 20.0
    recipes: list[Any] = field(default_factory=list)


# option name in conf/method -> its schema, stored by Hydra as schema/method/<name>
METHOD_SCHEMAS = {"pate": PATEConfig, "dp_sgd": DPSGDConfig, "private_knn": PrivateKNNConfig}


# The teachers' and students' schemas hold the types only: their values live in their YAML files (??? is OmegaConf's
# "a value must be given"), and the classes that read them check the values (pate/pipeline/settings.py).
@dataclass
class ComponentConfig:
    """``teacher.component`` / ``student.component``: the class that builds the teachers or the student; their
    settings live beside this node, which holds nothing else."""

    _target_: str = MISSING


@dataclass
class SemiConfig:
    """``student.semi``: the student's semi-supervised method and its settings (``student.semi``)."""

    method: str = MISSING
    keep_fraction: float = MISSING
    rounds: int = MISSING
    unlabeled_weight: float = MISSING
    unlabeled_ratio: int = MISSING
    min_scale: float = MISSING
    jitter: float = MISSING


@dataclass
class _HeadConfig:
    """What the ridge-head teachers and student share: the component and the L2 strengths tried."""

    component: ComponentConfig = MISSING
    lambdas: list[float] = MISSING


@dataclass
class _NetworkConfig:
    """What the network teachers and student share; ``model`` and ``optimizer`` are ``_target_`` nodes whose keys
    are their classes' arguments (checked when they are built)."""

    component: ComponentConfig = MISSING
    model: dict[str, Any] = MISSING
    optimizer: dict[str, Any] = MISSING
    batch_size: int = MISSING
    max_epochs: int = MISSING
    augment: bool = MISSING


@dataclass
class HeadTeachersConfig(_HeadConfig):
    """``teacher=heads``: ridge heads on the public features."""

    chunk_size: int = MISSING
    accuracy_images: int = MISSING


@dataclass
class NetworkTeachersConfig(_NetworkConfig):
    """``teacher=small_cnn`` and the ResNets: a network per teacher."""

    seed: int = MISSING
    ensemble_size: int = MISSING


@dataclass
class HeadStudentConfig(_HeadConfig):
    """``student=head``: a ridge head on the public features."""

    semi: SemiConfig = MISSING


@dataclass
class NetworkStudentConfig(_NetworkConfig):
    """``student=small_cnn`` and ``resnet18``: a network trained on the released labels."""

    semi: SemiConfig = MISSING


# (group, schema name) -> schema, stored by Hydra as schema/<group>/<name>; conf/<group>/*.yaml extend them
SCHEMAS = {
    **{("method", name): schema for name, schema in METHOD_SCHEMAS.items()},
    ("teacher", "heads"): HeadTeachersConfig,
    ("teacher", "network"): NetworkTeachersConfig,
    ("student", "head"): HeadStudentConfig,
    ("student", "network"): NetworkStudentConfig,
}


def schema_defaults(schema: type) -> dict[str, Any]:
    """A schema's settings and their defaults (``_target_`` left out)."""
    return {
        item.name: item.default_factory() if item.default_factory is not MISSING else item.default
        for item in fields(schema)
        if item.name != "_target_"
    }


for (_group, _name), _schema in SCHEMAS.items():
    ConfigStore.instance().store(group=f"schema/{_group}", name=_name, node=_schema)
