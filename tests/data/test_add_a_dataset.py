"""A dataset added from a test module through config alone (a reader class and a config file found by
hydra.searchpath; no edit under pate/pipeline/ or conf/) runs end to end, with its own number of labels: every stage,
the aggregator, the student and the metrics take L = 5 from the data."""

from pathlib import Path

import pytest
from hydra.utils import instantiate

from pate.data.readers import DatasetReader
from pate.pipeline.checks import UserError
from pate.pipeline.runner import run
from tests.conftest import compose_config
from tests.data.toy_shapes import SHAPES

SEARCHPATH = f"hydra.searchpath=[file://{Path(__file__).resolve().parent / 'conf'}]"


def _toy_cfg(root, *overrides):
    return compose_config(["debug=tiny", SEARCHPATH, "data=toy_shapes", *overrides], root)


def test_tau_beyond_the_datas_labels_is_refused_by_name(shared_root, tmp_path):
    """A tau of 10 suits CelebA's 40 labels, not five: the run says so before any compute (the default tau is
    min(10, num_labels): 5 here)."""
    with pytest.raises(UserError, match=r"aggregator.tau must be a number in \[1, num_labels=5\], got 10.0"):
        run(_toy_cfg(shared_root, "aggregator=tau_pate", "aggregator.tau=10.0"), output_dir=tmp_path)


@pytest.mark.parametrize(
    "aggregator",
    [
        "aggregator=gaussian_pate",
        "aggregator=tau_pate aggregator.tau=2",
        "aggregator=tau_pate",
        "aggregator=stable_topk_paper",
    ],
)
def test_a_toy_dataset_with_five_labels_runs_end_to_end(shared_root, tmp_path, aggregator):
    cfg = _toy_cfg(shared_root, *aggregator.split())
    assert isinstance(instantiate(cfg.data.reader), DatasetReader)
    metrics = run(cfg, output_dir=tmp_path)
    assert metrics["num_labels"] == len(SHAPES) == 5 and metrics["data"] == "toy_shapes"
    assert metrics["answered"] <= metrics["queries"] == 40
    assert metrics["epsilon"] > 0 and metrics["neighbors"] == "replace"
    if metrics["answered"]:  # StableTopK's test cannot pass with the tiny run's 4 teachers: nothing to learn from
        assert 0 <= metrics["student_accuracy"] <= 1


def test_a_configured_label_count_that_the_data_contradicts_is_one_line(shared_root, tmp_path):
    with pytest.raises(UserError, match=r"data.num_labels=40 but the data has 5 labels \(circle, square, triangle"):
        run(_toy_cfg(shared_root, "data.num_labels=40"), output_dir=tmp_path)
