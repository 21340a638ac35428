"""The typed schemas (pate/pipeline/schemas.py): each method option's YAML extends its schema with the same keys and
values, and Hydra refuses a key a method, the teachers or the student does not have, or a value of the wrong type,
while it composes."""

import re

import pytest
from hydra import compose, initialize_config_dir
from hydra.errors import ConfigCompositionException
from omegaconf import OmegaConf

from pate.locations import CONFIG_DIR
from pate.pipeline.schemas import METHOD_SCHEMAS, SCHEMAS, schema_defaults

# ${oc.select:shrink.<...>,4096}: the value a debug config may shrink, and its default
SHRINKABLE = re.compile(r"^\$\{oc\.select:shrink\.[\w.]+,(\d+)\}$")


def _shipped(name: str) -> dict:
    node = OmegaConf.load(CONFIG_DIR / "method" / f"{name}.yaml")
    values = OmegaConf.to_container(node, resolve=False)
    assert values.pop("defaults") == [f"/schema/method/{name}@_here_", "_self_"]
    values.pop("_target_")
    return values


@pytest.mark.parametrize("name", sorted(METHOD_SCHEMAS))
def test_every_method_option_extends_its_schema_with_its_keys_and_values(name):
    shipped, defaults = _shipped(name), schema_defaults(METHOD_SCHEMAS[name])
    assert set(shipped) == set(defaults), name
    for key, value in shipped.items():
        if isinstance(value, str) and SHRINKABLE.match(value):
            value = int(SHRINKABLE.match(value).group(1))
        if key.endswith("recipes"):  # the schema's default is no recipe; the shipped recipes are chosen per method
            assert isinstance(value, list)
            continue
        assert value == defaults[key], (name, key)
    assert sorted(p.stem for p in (CONFIG_DIR / "method").glob("*.yaml")) == sorted(METHOD_SCHEMAS)


def _schema_of(group: str, option: str) -> str:
    """The schema an option extends: its first default, or that of the option it extends."""
    first = str(OmegaConf.load(CONFIG_DIR / group / f"{option}.yaml")["defaults"][0])
    return first if first.startswith("/schema/") else _schema_of(group, first)


@pytest.mark.parametrize("group", ["method", "teacher", "student"])
def test_every_option_of_the_three_groups_extends_a_schema_hydra_knows(group):
    for path in (CONFIG_DIR / group).glob("*.yaml"):
        schema = _schema_of(group, path.stem).removeprefix("/schema/").removesuffix("@_here_")
        assert tuple(schema.split("/")) in SCHEMAS, (path, schema)


@pytest.mark.parametrize(
    "overrides, says",
    [
        (["method=dp_sgd", "method.epochs=abc"], "method.epochs=abc"),
        (["method=private_knn", "method.k=1.5"], "method.k=1.5"),
        (["method=dp_sgd", "method.clip_norm=[1]"], "method.clip_norm"),
        (["method=dp_sgd", "method.epochz=3"], "method.epochz"),
        (["method=pate", "method.sigma=3"], "method.sigma"),
        (["student.lambdas=0.1"], "student.lambdas=0.1"),  # a list, given a number
        (["teacher.batch_size=64"], "teacher.batch_size"),  # the ridge heads have no batches
        (["teacher=small_cnn", "teacher.augment=maybe"], "teacher.augment=maybe"),
        (["student=small_cnn", "student.semi.rounds=1.5"], "student.semi.rounds=1.5"),
    ],
)
def test_hydra_refuses_a_wrong_key_or_type_while_it_composes(overrides, says):
    with initialize_config_dir(config_dir=str(CONFIG_DIR), version_base="1.3"):
        with pytest.raises(ConfigCompositionException, match=re.escape(says)):
            compose(config_name="train", overrides=overrides)
