"""Every class that releases private outputs is found without a list, and every one found has an audit."""

import pytest

from pate.aggregators import BinaryVoting, DataDependentBinaryVoting, GaussianPATE, StableTopK, TauPATE
from pate.mechanisms import PrivateKNN
from pate.pipeline.methods import DPSGD, PATE, PrivateKNNMethod
from tests.audit.discover import aggregator_classes, configured_aggregators, method_classes, priced_classes
from tests.audit.recipes import COVERED_BY, MONTE_CARLO, RECIPES

DISCOVERED = priced_classes() + method_classes()


def test_discovery_finds_every_shipped_aggregator_mechanism_and_method():
    assert {BinaryVoting, DataDependentBinaryVoting, GaussianPATE, StableTopK, TauPATE} <= set(aggregator_classes())
    assert PrivateKNN in priced_classes()
    assert {DPSGD, PATE, PrivateKNNMethod} <= set(method_classes())
    assert configured_aggregators() <= {f"pate.aggregators.{cls.__name__}" for cls in aggregator_classes()}


@pytest.mark.parametrize("cls", DISCOVERED, ids=lambda cls: cls.__name__)
def test_every_discovered_class_has_an_audit_recipe(cls):
    """A new class fails here until ``recipes.py`` says how to audit it (or which audit covers it)."""
    assert cls in RECIPES or cls in COVERED_BY, (
        f"{cls.__module__}.{cls.__qualname__} has no audit recipe: add one to tests/audit/recipes.py"
    )
    if cls in COVERED_BY:
        assert COVERED_BY[cls] in RECIPES


def test_the_registries_name_only_discovered_classes():
    assert set(RECIPES) | set(COVERED_BY) | set(MONTE_CARLO) <= set(DISCOVERED)
