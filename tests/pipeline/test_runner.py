"""End-to-end runs of the pipeline (what train.py runs) on tiny synthetic data, cache reuse, privacy
boundaries, and configuration errors."""

import json
import logging
from pathlib import Path

import numpy as np
import pytest
import torch
from hydra.errors import MissingConfigException
from hydra.utils import instantiate

import pate.pipeline.graph
import pate.pipeline.students
import teachers.stages
from pate.artifacts import Artifact
from pate.features import read_features
from pate.pipeline import run
from student.stages import read_student_scores
from tests.conftest import compose_config

pytestmark = pytest.mark.slow  # end-to-end runs: not in the fast loop (-m 'not slow')


def _fail(*args, **kwargs):
    raise AssertionError("this stage should have been served from the cache")


def test_default_config_composes_with_every_group():
    cfg = compose_config()
    assert cfg.aggregator._target_ == "pate.aggregators.TauPATE"
    assert 0 < cfg.privacy.target_epsilon <= 8 and cfg.privacy.delta == 1e-6
    assert cfg.privacy.neighbors == "replace"
    # issue 21's default: 400 teachers of ~300 of 150,000 synthetic faces, 4 x 4 grid (benchmarks/results/levers.md)
    assert (cfg.partition.num_teachers, cfg.data.num_queries) == (400, 600)
    assert (cfg.data.synthetic.num_images, cfg.features.extractor.pool) == (150000, 4)
    assert (cfg.teacher.component._target_, cfg.student.component._target_) == (
        "pate.pipeline.teachers.HeadTeachers",
        "pate.pipeline.students.HeadStudent",
    )
    assert cfg.features.extractor._target_ == "pate.features.RandomPatchFeatures"
    assert cfg.features.fit_split == "val"  # public images: never the private training split
    for experiment in ("paper_celeba", "paper_synthetic"):
        cfg = compose_config([f"experiment={experiment}"])
        assert cfg.privacy.target_epsilon is None and cfg.aggregator.selection == "gaussian"
    paper = compose_config(["experiment=paper_celeba"])
    assert (paper.partition.num_teachers, paper.data.num_queries) == (800, 600)
    assert (paper.aggregator.sigma_select, paper.aggregator.sigma_test, paper.aggregator.delta_t) == (50, 60, 1e-9)
    assert paper.privacy.delta == 1e-6 and paper.teacher.model.depth == 50
    assert (paper.teacher.model.pretrained, paper.teacher.max_epochs) == ("imagenet", 1)  # the authors' recipe
    sweep = compose_config(["experiment=eps_sweep"])
    assert sweep.references


def test_end_to_end_metrics(tiny_cfg, tmp_path):
    metrics = run(tiny_cfg(), output_dir=tmp_path)
    on_disk = json.loads((tmp_path / "metrics.json").read_text())
    assert on_disk == json.loads(json.dumps(metrics))
    for key in (
        "epsilon",
        "delta",
        "neighbors",
        "aggregator",
        "queries",
        "answered_fraction",
        "label_f1",
        "student_accuracy",
        "student_f1",
        "teacher_accuracy",
    ):
        assert key in metrics, key
    assert metrics["neighbors"] == "replace" and metrics["delta"] == 1e-6
    assert metrics["queries"] == 40 and 0 <= metrics["answered_fraction"] <= 1
    assert 0 < metrics["epsilon"] < np.inf
    assert 0 <= metrics["student_accuracy"] <= 1 and 0 <= metrics["teacher_accuracy"] <= 1
    assert "replace" in metrics["privacy"] and "1e-06" in metrics["privacy"]


def test_changing_only_the_aggregator_reuses_teachers_and_votes(tiny_cfg, tmp_path, monkeypatch):
    first = run(tiny_cfg(), output_dir=tmp_path / "a")
    monkeypatch.setattr(teachers.stages, "train_head_teachers", _fail)
    monkeypatch.setattr(teachers.stages, "head_votes", _fail)
    monkeypatch.setattr(pate.pipeline.graph, "build_features", _fail)
    second = run(tiny_cfg("aggregator=stable_topk_paper"), output_dir=tmp_path / "b")
    assert second["artifacts"]["votes"] == first["artifacts"]["votes"]
    assert second["artifacts"]["features"] == first["artifacts"]["features"]
    assert second["artifacts"]["aggregate"] != first["artifacts"]["aggregate"]
    # a new seed reuses them too, and a calibrated target epsilon is met
    third = run(tiny_cfg("seed=1", "privacy.target_epsilon=20"), output_dir=tmp_path / "c")
    assert third["epsilon"] == pytest.approx(20, rel=0.01) and third["epsilon"] <= 20


def test_changing_the_teacher_retrains(tiny_cnn_cfg, tmp_path):
    first = run(tiny_cnn_cfg(), output_dir=tmp_path / "a")
    other = run(tiny_cnn_cfg("teacher.optimizer.lr=0.01"), output_dir=tmp_path / "b")
    assert other["artifacts"]["teachers"] != first["artifacts"]["teachers"]
    assert other["artifacts"]["partition"] == first["artifacts"]["partition"]


@pytest.mark.parametrize(
    "override",
    ["features=random_conv", "features.extractor.seed=1", "features.fit_seed=1", "teacher.lambdas=[0.1,1.0]"],
)
def test_changing_the_extractor_or_the_heads_retrains_the_teachers(tiny_cfg, tmp_path, override):
    first = run(tiny_cfg(), output_dir=tmp_path / "a")
    other = run(tiny_cfg(override), output_dir=tmp_path / "b")
    assert other["artifacts"]["teachers"] != first["artifacts"]["teachers"]
    assert other["artifacts"]["votes"] != first["artifacts"]["votes"]
    assert other["artifacts"]["partition"] == first["artifacts"]["partition"]
    assert (other["artifacts"]["features"] == first["artifacts"]["features"]) == override.startswith("teacher.")


def _spy_on_student(monkeypatch, name: str) -> list:
    """Record every argument the student stage function ``pate.pipeline.students.<name>`` is called with."""
    calls = []
    real = getattr(pate.pipeline.students, name)

    def spy(*args, **kwargs):
        calls.append((args, kwargs))
        return real(*args, **kwargs)

    monkeypatch.setattr(pate.pipeline.students, name, spy)
    return calls


def _rows(value) -> list[bytes]:
    return [np.asarray(row).tobytes() for row in np.asarray(value)]


@pytest.mark.parametrize("kind", ["network", "head"])
def test_the_student_stage_is_sealed_off_from_private_data(kind, tiny_cfg, tiny_cnn_cfg, tmp_path, monkeypatch):
    """Spy on the student stage function itself: it receives arrays only (never the dataset), its images are
    public test-split images, its labels are the released labels and the evaluation labels, and no array holds
    a private training image; the head student's features are those of public rows."""
    make = tiny_cnn_cfg if kind == "network" else tiny_cfg
    calls = _spy_on_student(monkeypatch, "build_student" if kind == "network" else "build_head_student")
    metrics = run(make("seed=321"), output_dir=tmp_path)  # a seed no other test uses: the student is built
    assert len(calls) == 1, "the student stage did not run exactly once"
    args, kwargs = calls[0]
    cfg = make()
    data = instantiate(cfg.data.reader).load(Path(cfg.paths.cache_dir) / "tensors", progress=False)
    arrays = [a for a in (*args, *kwargs.values()) if isinstance(a, (np.ndarray, torch.Tensor))]
    assert not any(type(a).__name__ == "LabelledImages" for a in (*args, *kwargs.values()))
    assert all(len(a) < len(data.indices("train")) for a in arrays), "an array as large as the private split"
    private_images = set(_rows(data.images[data.indices("train")]))
    public_images = set(_rows(data.images[data.indices("test")]))
    released = np.load(Path(cfg.paths.cache_dir) / "aggregate" / metrics["artifacts"]["aggregate"] / "aggregate.npz")
    queries = np.load(Path(cfg.paths.cache_dir) / "queries" / metrics["artifacts"]["queries"] / "queries.npz")
    eval_labels = data.labels[queries["eval_indices"]]
    for a in arrays:
        a = np.asarray(a)
        if a.ndim == 4:  # images
            rows = set(_rows(a))
            assert rows <= public_images and not rows & private_images
        elif a.dtype == bool and a.ndim == 2:  # the released labels, or which of them were released
            mask = np.repeat(released["answered"][:, None], a.shape[1], axis=1)
            assert np.array_equal(a, released["labels"]) or np.array_equal(a, mask)
        elif a.ndim == 2 and a.dtype == np.uint8:
            np.testing.assert_array_equal(a, eval_labels)
    unlabeled = np.setdiff1d(queries["pool_indices"], queries["query_indices"][released["answered"]])
    if kind == "head":
        key = metrics["artifacts"]["features"]
        table = read_features(Artifact("features", key, Path(cfg.paths.cache_dir) / "features" / key))
        torch.testing.assert_close(args[2], table.take(queries["query_indices"]))
        torch.testing.assert_close(args[5], table.take(unlabeled))
        torch.testing.assert_close(args[6], table.take(queries["eval_indices"]))
    else:
        # the training inputs (queries, unlabeled pool) hold no evaluation image, the unlabeled ones are the pool's
        training = set(_rows(args[3])) | set(_rows(args[6]))
        assert not training & set(_rows(data.images[queries["eval_indices"]]))
        assert set(_rows(args[6])) == set(_rows(data.images[unlabeled]))


def test_unknown_aggregator_is_refused_with_the_choices():
    with pytest.raises(MissingConfigException, match="gaussian_pate"):
        compose_config(["aggregator=no_such_method"])


def test_missing_celeba_root_says_how_to_point_to_it(tmp_path, monkeypatch):
    monkeypatch.setattr(teachers.stages, "train_head_teachers", _fail)
    monkeypatch.setattr("teachers.ensemble.train_teachers", _fail)  # where build_teachers finds it when it trains
    cfg = compose_config(["data=celeba", f"data.root={tmp_path / 'nowhere'}"], tmp_path)
    with pytest.raises((ValueError, FileNotFoundError), match="data.root"):
        run(cfg, output_dir=tmp_path / "run")


def test_same_config_and_seed_give_identical_metrics(tiny_cfg, tmp_path):
    """Two independent runs (separate caches: teachers, votes and student all rebuilt) agree exactly, which
    is what makes two sweeps with the same configs and seeds give identical report tables."""
    runs = [
        run(tiny_cfg(f"paths.cache_dir={tmp_path / name}"), output_dir=tmp_path / name / "run") for name in ("a", "b")
    ]
    drop = ("versions", "host")
    a, b = ({k: v for k, v in m.items() if k not in drop} for m in runs)
    assert a == b


def test_budget_stops_answering_queries(tiny_cfg, tmp_path):
    """With a budget below what all queries cost, only the affordable prefix of queries is asked; the
    ledger's epsilon stays within the budget and the rest stay unanswered."""
    metrics = run(tiny_cfg("privacy.budget_epsilon=80"), output_dir=tmp_path)  # all 40 cost 200
    assert 0 < metrics["queries_asked"] < metrics["queries"]
    assert metrics["answered"] <= metrics["queries_asked"]
    assert metrics["epsilon"] <= 80
    released = np.load(
        Path(tiny_cfg().paths.cache_dir) / "aggregate" / metrics["artifacts"]["aggregate"] / "aggregate.npz"
    )
    assert not released["answered"][metrics["queries_asked"] :].any()


def test_teacher_shards_fill_the_cache_for_the_next_run(tiny_cnn_cfg, tmp_path):
    """Cluster array jobs train disjoint shards into the shared cache; the ordinary run that follows
    trains nothing again and seals the artifact with the shards' files."""

    def cfg(*overrides):
        return tiny_cnn_cfg(f"paths.cache_dir={tmp_path / 'cache'}", *overrides)

    shards = [run(cfg(f"teacher_shard={i}/2"), output_dir=tmp_path / f"shard{i}") for i in range(2)]
    assert [s["trained"] for s in shards] == [2, 2]
    partial = tmp_path / "cache" / "teachers" / f"{shards[0]['teachers']}.partial"
    mtimes = {f.name: f.stat().st_mtime_ns for f in partial.glob("teacher_*.pt")}
    assert len(mtimes) == 4
    metrics = run(cfg(), output_dir=tmp_path / "final")
    final = tmp_path / "cache" / "teachers" / metrics["artifacts"]["teachers"]
    assert {f.name: f.stat().st_mtime_ns for f in final.glob("teacher_*.pt")} == mtimes


def test_bad_shard_is_refused(tiny_cnn_cfg, tmp_path):
    with pytest.raises(ValueError, match="teacher_shard"):
        run(tiny_cnn_cfg("teacher_shard=2/2"), output_dir=tmp_path)


def test_shards_are_refused_for_heads(tiny_cfg, tmp_path):
    with pytest.raises(ValueError, match="teacher_shard is for CNN teachers"):
        run(tiny_cfg("teacher_shard=0/2"), output_dir=tmp_path)


def test_unanswered_queries_join_the_unlabeled_pool(tiny_cfg, tmp_path, monkeypatch):
    """A budget that answers only some queries: the unanswered ones reach the student as unlabeled images
    (their features), never as label sets of zeros, and the answered ones only with their released labels."""
    calls = _spy_on_student(monkeypatch, "build_head_student")
    cfg = tiny_cfg("privacy.budget_epsilon=80", "student.semi.method=pseudo_label", "seed=77")
    metrics = run(cfg, output_dir=tmp_path)
    assert 0 < metrics["answered"] < metrics["queries"]
    (_, _, _, released, answered, unlabeled, _, _), _ = calls[0]
    cache = Path(cfg.paths.cache_dir)
    queries = np.load(cache / "queries" / metrics["artifacts"]["queries"] / "queries.npz")
    key = metrics["artifacts"]["features"]
    table = read_features(Artifact("features", key, cache / "features" / key))
    unanswered = queries["query_indices"][~answered]
    expected = np.setdiff1d(queries["pool_indices"], queries["query_indices"][answered])
    assert np.isin(unanswered, expected).all() and len(expected) == len(queries["pool_indices"]) - answered.sum()
    torch.testing.assert_close(unlabeled, table.take(expected))
    assert not released[~answered].any()  # what an unanswered query holds; build_head_student drops it
    student_key = metrics["artifacts"]["student"]
    student = read_student_scores(Artifact("student", student_key, cache / "student" / student_key))
    assert student["student_train_size"] == answered.sum() and student["student_unlabeled_size"] == len(expected)


@pytest.mark.parametrize("method", ["pseudo_label", "consistency"])
@pytest.mark.parametrize("make_name", ["tiny_cfg", "tiny_cnn_cfg"])
def test_a_tiny_semi_supervised_run_is_deterministic(make_name, method, request, tmp_path):
    make = request.getfixturevalue(make_name)
    runs = [
        run(
            make(f"student.semi.method={method}", f"paths.cache_dir={tmp_path / name}"),
            output_dir=tmp_path / name / "run",
        )
        for name in ("a", "b")
    ]
    drop = ("versions", "host")
    assert [{k: v for k, v in r.items() if k not in drop} for r in runs][0] == {
        k: v for k, v in runs[1].items() if k not in drop
    }
    assert runs[0]["student_accuracy"] is not None and runs[0]["method"].endswith(f"+{method}")
    assert runs[0]["student_unlabeled_size"] > 0


def test_strong_views_are_of_pool_images_only(tiny_cfg, tmp_path):
    """The head student's consistency method reads strong views of the pool (queries and unlabeled images),
    never of an evaluation image."""
    cfg = tiny_cfg("student.semi.method=consistency", "seed=78")
    metrics = run(cfg, output_dir=tmp_path)
    cache = Path(cfg.paths.cache_dir)
    queries = np.load(cache / "queries" / metrics["artifacts"]["queries"] / "queries.npz")
    views = np.load(cache / "views" / metrics["artifacts"]["views"] / "rows.npy")
    assert views.tolist() == sorted(queries["pool_indices"].tolist())
    assert not np.isin(queries["eval_indices"], views).any()


def test_a_cnn_run_prints_no_accelerator_banner_or_library_tip(tiny_cnn_cfg, tmp_path, capfd, caplog):
    caplog.set_level(logging.INFO)
    run(tiny_cnn_cfg("seed=4242"), output_dir=tmp_path)  # a seed no other test uses: the student trains
    printed = capfd.readouterr()
    text = printed.out + printed.err + caplog.text
    assert "student: building" in caplog.text, "the student stage did not run"
    for noise in ("GPU available", "TPU available", "Tip:", "litlogger"):
        assert noise not in text, noise


@pytest.mark.parametrize("codes, split", [([0, 0, 0, 0], "test"), ([2, 2, 1, 2], "train")])
def test_an_empty_split_is_named(codes, split):
    from pate.data import LabelledImages
    from pate.data.partition import check_partition_config

    data = LabelledImages(
        images=np.zeros((4, 3, 2, 2), np.uint8),
        labels=np.zeros((4, 40), np.uint8),
        split=np.array(codes, np.int8),
        filenames=tuple("abcd"),
        label_names=(),
    )
    with pytest.raises(ValueError, match=f"the {split} split is empty"):
        check_partition_config(data.split, num_teachers=1, num_queries=1, pool_fraction=0.5)
