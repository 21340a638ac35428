"""The kept model: an extractor's learned state round-trips, a run keeps its model in ``<run>/model``, and
``pate-predict`` gives back the run's own predictions on its evaluation images -- the same accuracy, exactly."""

import json

import numpy as np
import pytest
import torch
from PIL import Image

from pate.aggregate import read_aggregate
from pate.artifacts import ArtifactStore
from pate.data.partition import read_queries
from pate.dp_sgd import probe_inputs
from pate.errors import UserError
from pate.model_files import write_model
from pate.features import PixelFeatures, RandomConvFeatures, RandomPatchFeatures, RidgeHead, read_features
from pate.features.ssl import SimCLRFeatures
from pate.pipeline.keep import publishable
from pate.pipeline.runner import prepare, run
from pate.predict import gather_inputs, load_model, main, read_image


def _images(n=40, size=12, seed=0):
    return np.random.default_rng(seed).integers(0, 256, (n, 3, size, size), dtype=np.uint8)


@pytest.mark.parametrize(
    "make",
    [
        lambda: PixelFeatures(size=4),
        lambda: RandomConvFeatures(width=4, pool=2, seed=3),
        lambda: RandomPatchFeatures(num_filters=8, patch=3, pool=2, num_fit_patches=400, seed=1),
        lambda: SimCLRFeatures(width=4, pool=2, epochs=1, train_batch_size=16, projection_dim=8),
    ],
    ids=["pixels", "random_conv", "random_patches", "simclr"],
)
def test_an_extractor_rebuilt_from_its_state_encodes_as_the_fitted_one(make):
    fitted = make().fit(_images(), seed=5)
    rebuilt = make().load_state(fitted.state())
    new = torch.from_numpy(_images(8, seed=9))
    assert torch.equal(rebuilt.transform(new), fitted.transform(new))
    unfitted = make()  # what the fit learned is in the state, not in the settings
    if isinstance(unfitted, RandomPatchFeatures):
        assert unfitted._filters is None


def test_a_state_with_a_missing_or_foreign_entry_is_refused():
    state = RandomPatchFeatures(num_filters=4, patch=3, pool=1, num_fit_patches=200).fit(_images()).state()
    with pytest.raises(ValueError, match="_bias"):
        RandomPatchFeatures(num_filters=4, patch=3, pool=1).load_state({k: v for k, v in state.items() if k != "_bias"})
    with pytest.raises(ValueError, match="other"):
        RandomPatchFeatures(num_filters=4, patch=3, pool=1).load_state({**state, "other": torch.zeros(1)})
    with pytest.raises(RuntimeError, match="before fit"):
        PixelFeatures().state()


def _png(path, size, mode="RGB"):
    Image.new(mode, (size, size), color=128 if mode == "L" else (10, 200, 30)).save(path)
    return path


def test_an_image_of_another_size_or_channel_count_is_refused_in_one_line_unless_resized(tmp_path):
    big, gray = _png(tmp_path / "big.png", 16), _png(tmp_path / "gray.png", 8, "L")
    with pytest.raises(UserError, match=r"big.png: 16 x 16 pixels, mode RGB; the model reads 8 x 8 8-bit RGB") as err:
        read_image(big, 8, resize=False)
    assert "\n" not in str(err.value) and "--resize" in str(err.value)
    with pytest.raises(UserError, match="mode L"):
        read_image(gray, 8, resize=False)
    assert read_image(big, 8, resize=True).shape == (3, 8, 8)
    assert read_image(gray, 8, resize=True).tolist() == np.full((3, 8, 8), 128).tolist()  # replicated to RGB
    exact = read_image(_png(tmp_path / "ok.png", 8), 8, resize=False)
    assert exact[:, 0, 0].tolist() == [10, 200, 30]


def test_inputs_are_files_folders_or_a_csv_with_or_without_labels(tmp_path):
    (tmp_path / "sub").mkdir()
    files = [_png(tmp_path / "sub" / f"{i}.png", 4) for i in range(3)]
    assert gather_inputs([str(tmp_path / "sub")], ["a"]) == (files, None)
    (tmp_path / "labels.csv").write_text("file,a\nsub/0.png,1\nsub/2.png,-1\n")
    found, truth = gather_inputs([str(tmp_path / "labels.csv")], ["a"])
    assert found == [tmp_path / "sub/0.png", tmp_path / "sub/2.png"] and truth.tolist() == [[1], [0]]
    assert gather_inputs([str(tmp_path / "labels.csv")], ["b"])[1] is None  # other labels: nothing to score
    with pytest.raises(UserError, match="no such file or folder"):
        gather_inputs([str(tmp_path / "missing.png")], ["a"])


@pytest.mark.slow
def test_a_model_trained_with_secret_noise_is_publishable_and_a_reused_run_dir_keeps_the_earlier(tiny_cfg, tmp_path):
    out = tmp_path / "run"
    run(tiny_cfg("privacy.noise=secure"), out)
    spec = json.loads((out / "model" / "model.json").read_text())
    assert spec["publishable"].startswith("yes: trained on the released labels")
    assert "seeded" not in spec["covered_by"]["noise_source"] and spec["covered_by"]["secret_noise"] is True
    run(tiny_cfg("privacy.noise=secure"), out)  # the release is reused, the model kept again
    assert (out / "model.previous-0" / "model.pt").is_file() and (out / "model" / "model.pt").is_file()


def test_a_directory_without_a_kept_model_is_refused_in_one_line(tmp_path, capsys):
    assert main([str(tmp_path), str(tmp_path)]) == 2
    assert "no kept model" in capsys.readouterr().err


@pytest.mark.parametrize(
    "overrides",
    [(), ("method=dp_sgd",), ("student=small_cnn", "student.max_epochs=1")],
    ids=["head_student", "dp_sgd_probe", "cnn_student"],
)
def test_the_kept_model_predicts_the_runs_evaluation_images_with_its_accuracy_exactly(
    tiny_cfg, tmp_path, capsys, overrides
):
    out = tmp_path / "run"
    metrics = run(tiny_cfg(*overrides), out)
    spec = json.loads((out / "model" / "model.json").read_text())
    assert spec["covered_by"]["epsilon"] == metrics["epsilon"]
    assert spec["publishable"].startswith("no: the run's noise was seeded")  # the synthetic data's default
    assert spec["covered_by"]["secret_noise"] is False
    model = load_model(out)
    files, truth = gather_inputs([str(out / "evaluation.csv")], model.label_names)
    assert len(files) == len(truth) > 0
    assert main([str(out), str(out / "evaluation.csv"), "--resize", "-o", str(tmp_path / "p.csv")]) == 0
    printed = capsys.readouterr().out
    assert f"accuracy {metrics['student_accuracy']:.4f}" in printed, printed
    predicted = np.loadtxt(tmp_path / "p.csv", delimiter=",", skiprows=1, usecols=range(1, truth.shape[1] + 1))
    accuracy = float((predicted == truth).mean(0).mean())
    assert accuracy == pytest.approx(metrics["student_accuracy"], abs=1e-6)


def _the_runs_own(cfg, out):
    """The run's query and evaluation rows, their image files, its features stage and what it released."""
    graph, data, _ = prepare(cfg)
    store = ArtifactStore(cfg.paths.cache_dir)
    public = read_queries(store.get(graph.shared.queries))
    rows = np.concatenate([public.queries, public.evaluation])
    images = np.stack([read_image(data.arrays.paths[row], int(cfg.data.image_size), resize=True) for row in rows])
    return graph, store, public, rows, images


@pytest.mark.parametrize(
    "overrides", [(), ("method=dp_sgd", "method.probe_recipes=[]")], ids=["head_student", "dp_sgd_unit_norm_probe"]
)
def test_from_the_image_files_the_kept_model_gives_the_runs_own_predictions_bit_for_bit(tiny_cfg, tmp_path, overrides):
    """Against the run's own numbers, not its accuracy: the features it stored (float16) for the queries and the
    evaluation images, the head's predictions on them, and DP-SGD's released labels on the queries, which are its
    model's predictions."""
    cfg = tiny_cfg(*overrides)
    run(cfg, tmp_path / "run")
    model = load_model(tmp_path / "run")
    graph, store, public, rows, images = _the_runs_own(cfg, tmp_path / "run")
    stored = read_features(store.get(graph.shared.features)).take(rows)
    predicted = (model.probabilities(images) > 0.5).numpy()
    if overrides:
        assert model.spec["input_transform"] == "unit_norm"
        assert torch.equal(model.inputs(images), probe_inputs(stored, "unit_norm"))
        released = read_aggregate(store.get(graph.release.labels))["labels"]
        assert np.array_equal(predicted[: len(public.queries)], released)
    else:
        assert torch.equal(model.inputs(images), stored)
        with torch.no_grad():
            assert np.array_equal(predicted, (model.network(stored) > 0).numpy())


def test_a_model_on_precomputed_embeddings_cannot_label_new_images_and_says_so(tmp_path, capsys):
    folder = tmp_path / "run" / "model"
    folder.mkdir(parents=True)
    write_model(folder, RidgeHead(4, 2), {"_target_": "pate.features.RidgeHead", "dim": 4, "num_labels": 2}, "features")
    spec = json.loads((folder / "model.json").read_text())
    spec.update(extractor=None, extractor_identity=None, image_size=8, label_names=["a", "b"])  # as keep writes it
    (folder / "model.json").write_text(json.dumps(spec))
    assert main([str(tmp_path / "run"), str(_png(tmp_path / "x.png", 8))]) == 2
    assert "reads precomputed embeddings, looked up by the data's row" in capsys.readouterr().err


def test_the_publishable_verdict_follows_the_noise_the_inputs_and_names_the_unit():
    unit = "one teacher's vote replaced (record-level)"
    assert publishable(True, True, unit).startswith("yes:") and unit in publishable(True, True, unit)
    assert publishable(False, True, unit).startswith("no: the run's noise was seeded")
    assert publishable(False, False, unit).startswith("no:")
    assert publishable(True, False, unit).startswith("only if the precomputed embeddings are public")


@pytest.mark.slow
def test_a_reused_run_directory_never_shows_the_earlier_runs_model(tiny_cfg, tmp_path):
    out = tmp_path / "run"
    run(tiny_cfg(), out)
    # moved aside before anything runs: a run that then fails, or trains no student, cannot show the earlier model
    run(tiny_cfg("aggregator=gaussian_pate"), out)
    assert (out / "model.previous-0" / "model.pt").is_file() and (out / "evaluation.previous-0.csv").is_file()
