"""The typed schemas of the ``method`` group (Hydra structured configs): each option's YAML file extends its schema
(``defaults: [/schema/method/<name>@_here_, _self_]``), so Hydra refuses a key the method does not have and a value
of the wrong type while it composes the config, naming the key, before anything is read. The schemas' defaults are
the methods' own (``conf/method/*.yaml`` states the same values; a test holds them equal).

Light by design (dataclasses and Hydra's ConfigStore): importing it registers the schemas, and ``pate.pipeline``
imports it, so whatever composes ``train`` through the package (``pate-train``, the benchmarks, the tests) has them.
"""

from __future__ import annotations

from dataclasses import MISSING, dataclass, field, fields
from typing import Any, Optional

from hydra.core.config_store import ConfigStore

__all__ = ["DPSGDConfig", "METHOD_SCHEMAS", "PATEConfig", "PrivateKNNConfig", "schema_defaults"]


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


def schema_defaults(schema: type) -> dict[str, Any]:
    """A schema's settings and their defaults (``_target_`` left out)."""
    return {
        item.name: item.default_factory() if item.default_factory is not MISSING else item.default
        for item in fields(schema)
        if item.name != "_target_"
    }


for _name, _schema in METHOD_SCHEMAS.items():
    ConfigStore.instance().store(group="schema/method", name=_name, node=_schema)
