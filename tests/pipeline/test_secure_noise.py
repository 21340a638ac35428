"""privacy.noise: the noise a guarantee rests on is secret on real data (the operating system's entropy, no seed
recorded) and seeded, replayable, on the built-in synthetic data only (pate/pipeline/noise.py)."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from pate.aggregate import read_aggregate
from pate.aggregators import GaussianPATE
from pate.artifacts import ArtifactStore, Stage, read_artifact
from pate.pipeline.checks import UserError, check_config
from pate.pipeline.graph import aggregate_stage, plain
from pate.pipeline.noise import NoiseSource, noise_source
from pate.pipeline.runner import prepare
from tests.cli import run_cli
from tests.conftest import compose_config
from tests.data.folder_data import write_folder

FOLDER = ["debug=tiny", "data=multilabel_folder", "data.root=/nowhere", "data.num_labels=5"]
REPLAYABLE = "the noise can be replayed from the recorded seed"
REUSED = "no new noise drawn"


# ------------------------------------------------------------------------------------------ the mode
@pytest.mark.parametrize("overrides, mode", [
    (["debug=tiny"], "seeded"),  # the built-in synthetic data
    (["data=synthetic"], "seeded"),
    (FOLDER, "secure"),
    (["debug=tiny", "data=celeba", "data.root=/nowhere"], "secure"),  # CelebA's files, even a copy of synthetic ones
    (["debug=tiny", "privacy.noise=secure"], "secure"),
    ([*FOLDER, "privacy.noise=seeded"], "seeded"),
])
def test_auto_seeds_the_noise_on_the_synthetic_data_only(overrides, mode):
    noise = noise_source(compose_config([*overrides, "seed=7"]))
    assert noise.mode == mode
    assert noise.seed == (7 if mode == "seeded" else None)  # a secure source holds nothing that could replay it
    assert noise.describe().startswith(mode)
    assert (REPLAYABLE in noise.describe()) == (mode == "seeded")
    assert ("seed=" in noise.describe()) == (mode == "seeded")


def test_a_bad_mode_is_refused_before_any_data_is_read():
    with pytest.raises(UserError, match=r"privacy\.noise='random'; expected one of \('auto', 'seeded', 'secure'\)"):
        check_config(compose_config(["debug=tiny", "privacy.noise=random"]))


def test_secure_generators_differ_across_calls_and_seeded_ones_replay():
    secure, seeded = NoiseSource("secure", None, "secure"), NoiseSource("seeded", 3, "seeded")
    draws = [secure.generator().random(8) for _ in range(3)]
    assert not any(np.array_equal(a, b) for i, a in enumerate(draws) for b in draws[i + 1:])
    bits = [secure.torch_generator().initial_seed() for _ in range(3)]
    assert len(set(bits)) == 3
    assert np.array_equal(seeded.generator().random(8), np.random.default_rng(3).random(8))
    assert seeded.torch_generator(offset=1).initial_seed() == 4


def _aggregate_key(*overrides: str) -> tuple[str, dict]:
    cfg = compose_config([*FOLDER, *overrides])
    aggregator = GaussianPATE(num_labels=5, num_teachers=4, sigma=2.0, neighbors="replace")
    stage = aggregate_stage(aggregator, plain(cfg.aggregator), 40, Stage("votes", {"v": 1}, lambda work, up: None),
                            noise_source(cfg), 5)
    return stage.key, dict(stage.config)


def test_a_secure_release_key_holds_the_mode_and_no_seed():
    """A rerun of one config finds its release whatever `seed` says (no second draw); a seeded key is per seed."""
    key, config = _aggregate_key("seed=0")
    assert config["noise"] == "secure" and "seed" not in config
    assert _aggregate_key("seed=1")[0] == key
    seeded = [_aggregate_key("privacy.noise=seeded", f"seed={seed}") for seed in (0, 1)]
    assert seeded[0][1]["noise"] == "seeded" and seeded[0][1]["seed"] == 0
    assert len({key, seeded[0][0], seeded[1][0]}) == 3


def test_the_store_says_which_artifacts_it_found_built(tmp_path):
    stage = Stage("demo", {"a": 1}, lambda work, up: (work / "x.txt").write_text("x"))
    first = ArtifactStore(tmp_path)
    first.get(stage)
    assert not first.reused(stage)
    second = ArtifactStore(tmp_path)
    second.get(stage)
    assert second.reused(stage)


# ------------------------------------------------------------------------------------------ whole runs
@pytest.fixture(scope="module")
def folder(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("secure_noise") / "shapes"
    write_folder(root, 5, num_images=400)
    return root


def _train(args: list[str], root: Path, run_dir: str) -> tuple[dict, str]:
    """``python train.py <args>`` with its data and cache under ``root``: (its metrics.json, its console)."""
    root.mkdir(parents=True, exist_ok=True)
    done = run_cli("train.py", [*args, f"paths.root_dir={root}", f"hydra.run.dir={root / run_dir}"], cwd=root)
    console = done.stdout + done.stderr
    assert done.returncode == 0, console
    return json.loads((root / run_dir / "metrics.json").read_text()), console


def _released(root: Path, metrics: dict) -> np.ndarray:
    art = read_artifact(root / "cache", "aggregate", metrics["artifacts"]["aggregate"])
    return read_aggregate(art)["labels"]


@pytest.mark.slow
def test_a_folder_run_draws_secret_noise_once_per_cache(folder, tmp_path):
    """Real data: no noise seed in metrics.json; two fresh caches release different labels; a rerun in the same
    cache reuses its release (the same labels) and says that no new noise was drawn."""
    # epsilon 10 over 40 queries: sigma about 8 against 4 teachers' counts, so two independent draws of the 200
    # (query, label) decisions agree with negligible probability
    args = ["debug=tiny", "data=multilabel_folder", f"data.root={folder}", "data.split_fractions=[0.7,0.1,0.2]",
            "privacy.target_epsilon=10"]
    first, console = _train(args, tmp_path / "a", "run1")
    assert first["noise_source"].startswith("secure") and "no seed recorded" in first["noise_source"]
    assert "seed=" not in first["noise_source"] and REPLAYABLE not in console
    assert "seed" not in first["privacy"] + first["privacy_accounting"]  # `seed` is the student's alone here
    assert REUSED not in console
    other, _ = _train(args, tmp_path / "b", "run")
    assert other["artifacts"]["aggregate"] == first["artifacts"]["aggregate"]  # the same config, the same key
    assert not np.array_equal(_released(tmp_path / "a", first), _released(tmp_path / "b", other))
    again, console = _train(args, tmp_path / "a", "run2")
    assert np.array_equal(_released(tmp_path / "a", again), _released(tmp_path / "a", first))
    assert again["label_f1"] == first["label_f1"]
    assert REUSED in console and "release reused from the cache" in console


@pytest.mark.slow
@pytest.mark.parametrize("method", [["method=private_knn"], ["method=dp_sgd", "method.expected_batch_size=64"]])
def test_every_method_keys_its_release_by_the_noise_source(folder, tmp_path, method):
    """Private-kNN's and DP-SGD's release stages, like PATE's aggregate: no seed in a secure key, one per seed in a
    seeded key."""
    def release(*overrides: str) -> Stage:
        cfg = compose_config(["debug=tiny", "data=multilabel_folder", f"data.root={folder}",
                              "data.split_fractions=[0.7,0.1,0.2]", *method, *overrides], tmp_path)
        return prepare(cfg)[0].release.labels

    secure = [release(f"seed={seed}") for seed in (0, 1)]
    assert secure[0].config["noise"] == "secure" and "seed" not in secure[0].config
    assert secure[0].key == secure[1].key
    seeded = [release("privacy.noise=seeded", f"seed={seed}") for seed in (0, 1)]
    assert seeded[0].config["noise"] == "seeded" and seeded[0].config["seed"] == 0
    assert len({secure[0].key, seeded[0].key, seeded[1].key}) == 3


@pytest.mark.slow
def test_a_synthetic_run_says_its_noise_can_be_replayed(shared_root, tmp_path):
    metrics, console = _train(["debug=tiny", f"paths.data_dir={shared_root / 'data'}"], tmp_path, "run")
    assert metrics["noise_source"].startswith("seeded from seed=0")
    assert f"noise source      {metrics['noise_source']}" in console and REPLAYABLE in console
