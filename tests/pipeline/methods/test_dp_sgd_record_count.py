"""DP-SGD's mechanism must not depend on the number of private records where the neighbours differ in it
(add_remove): its sampling rate, steps and divisor come from a public N (``method.public_num_records``), and a
run on data whose size is not public is refused without it. The neighbours are built as add_remove defines them:
the private training split with one record added."""

import math
from types import SimpleNamespace

import numpy as np
import pytest

from pate.pipeline.checks import UserError
from pate.pipeline.graph import Dataset
from tests.pipeline.methods.dp_sgd_config import FOLDER, dp_sgd_method

SHARED = SimpleNamespace(queries=None, features=None)  # the stage's upstream, never built here


def _data(num_train: int) -> Dataset:
    """A dataset whose private training split has ``num_train`` records (what release reads of it)."""
    rows = np.arange(num_train)
    return Dataset(SimpleNamespace(indices=lambda split: rows if split == "train" else rows[:0]), {"rows": num_train})


def _released(method, num_train: int) -> tuple:
    """(the event the release is priced at, the training stage's config without the data's identity)."""
    release = method.release(_data(num_train), SHARED)
    config = {key: value for key, value in release.labels.config.items() if key != "data"}
    return release.facts["event"], config


@pytest.mark.slow  # a heavy computation
@pytest.mark.parametrize("target", [None, 2.0])
def test_under_add_remove_a_record_added_changes_nothing_in_the_mechanism(target):
    """With a public N, D and D plus one record run the same Poisson-sampled Gaussian (rate, steps, noise) with the
    same divisor and settings: the stage's config differs in the data alone."""
    method = dp_sgd_method(target, "add_remove", reader=FOLDER, public_num_records=120_000)
    (event, config), (added_event, added_config) = _released(method, 120_510), _released(method, 120_511)
    assert event == added_event and config == added_config
    assert event.sampling_rate == pytest.approx(4096 / 120_000, rel=1e-15)
    assert event.steps == math.ceil(method.epochs * 120_000 / 4096)  # 586 for 20 epochs, 879 for the recipe's 30
    assert config["settings"]["expected_batch_size"] == 4096


def test_without_a_public_n_the_count_read_would_change_the_mechanism():
    """Why the public N is required: the count read, used as N, gives D and D plus one record different rates
    (and at 122,880 records different step counts: 600 against 601), all of them published."""
    method = dp_sgd_method(None, "replace")
    assert _released(method, 120_510)[0].sampling_rate != _released(method, 120_511)[0].sampling_rate
    assert (_released(method, 122_880)[0].steps, _released(method, 122_881)[0].steps) == (600, 601)


def test_add_remove_on_data_whose_size_is_not_public_needs_a_public_n():
    with pytest.raises(
        UserError,
        match=r"method.public_num_records=null under privacy.neighbors=add_remove on data "
        r"read by pate.data.multilabel_folder.MultilabelFolder",
    ):
        dp_sgd_method(8, "add_remove", reader=FOLDER)
    assert dp_sgd_method(8, "replace", reader=FOLDER).public_num_records is None  # replace: N is the same for all
    assert dp_sgd_method(8, "add_remove").public_num_records is None  # the built-in synthetic data: size public


@pytest.mark.parametrize(
    "value, message",
    [
        (0, r"public_num_records must be a positive integer|public_num_records.*0"),
        (4095, r"public_num_records=4095 is below expected_batch_size=4096"),
        (1.5, r"public_num_records"),
    ],
)
def test_a_bad_public_n_is_refused_by_name(value, message):
    with pytest.raises((UserError, ValueError), match=message):
        dp_sgd_method(8, "add_remove", reader=FOLDER, public_num_records=value)
