"""The unit of every epsilon, from one table: what one neighbour is for each kind of method and relation, and whether
it is a record-level guarantee (only PATE's add_remove is not)."""

import pytest

from pate.pipeline.methods import PATE
from pate.pipeline.methods.dp_sgd import DPSGD
from pate.pipeline.methods.private_knn import PrivateKNNMethod
from pate.privacy.unit import PrivacyUnit, privacy_unit
from tests.pipeline.methods.noisy_prevalence import NoisyPrevalence


@pytest.mark.parametrize(
    "method, relation, neighbour, record_level",
    [
        (PATE, "replace", "one teacher's vote replaced", True),
        (PATE, "add_remove", "one teacher added or removed", False),
        (DPSGD, "replace", "one record replaced", True),
        (DPSGD, "add_remove", "one record added or removed", True),
        (PrivateKNNMethod, "replace", "one record replaced", True),
        (PrivateKNNMethod, "add_remove", "one record added or removed", True),
        (NoisyPrevalence, "add_remove", "one record added or removed", True),
    ],
)
def test_every_method_and_relation_has_its_unit(method, relation, neighbour, record_level):
    assert privacy_unit(method.contributor, relation) == PrivacyUnit(neighbour, record_level)


def test_a_teacher_level_unit_says_it_is_not_record_level():
    assert (
        privacy_unit("teacher", "add_remove").text
        == "one teacher added or removed (teacher-level: NOT a record-level guarantee)"
    )
    assert privacy_unit("teacher", "replace").text == "one teacher's vote replaced (record-level)"


@pytest.mark.parametrize(
    "contributor, relation, match", [("student", "replace", "contributor"), ("teacher", "swap", "neighbors")]
)
def test_an_unknown_contributor_or_relation_is_refused(contributor, relation, match):
    with pytest.raises(ValueError, match=match):
        privacy_unit(contributor, relation)
