"""privacy.noise: the noise a guarantee rests on is secret on real data (the operating system's entropy, no seed
recorded) and seeded, replayable, on the built-in synthetic data only (pate/pipeline/noise.py)."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
import torch

from pate.aggregate import read_aggregate
from pate.aggregators import GaussianPATE
from pate.artifacts import ArtifactStore, Stage, read_artifact
from pate.pipeline.checks import UserError, check_config
from pate.pipeline.graph import aggregate_stage, plain
from pate.pipeline.noise import NoiseSource, mt19937_generator, noise_source, secret_torch_generator
from pate.pipeline.runner import prepare
from tests.cli import run_cli
from tests.conftest import compose_config
from tests.data.folder_data import write_folder

FOLDER = ["debug=tiny", "data=multilabel_folder", "data.root=/nowhere", "data.num_labels=5"]
REPLAYABLE = "the noise can be replayed from the seed"
REUSED = "no new noise drawn"


# ------------------------------------------------------------------------------------------ the mode
@pytest.mark.parametrize(
    "overrides, mode",
    [
        (["debug=tiny"], "seeded"),  # the built-in synthetic data
        (["data=synthetic"], "seeded"),
        (FOLDER, "secure"),
        (
            ["debug=tiny", "data=celeba", "data.root=/nowhere"],
            "secure",
        ),  # CelebA's files, even a copy of synthetic ones
        (["debug=tiny", "privacy.noise=secure"], "secure"),
        ([*FOLDER, "privacy.noise=seeded"], "seeded"),
    ],
)
def test_auto_seeds_the_noise_on_the_synthetic_data_only(overrides, mode):
    noise = noise_source(compose_config([*overrides, "seed=7"]))
    assert noise.mode == mode
    assert noise.seed == (7 if mode == "seeded" else None)  # a secure source holds nothing that could replay it
    assert noise.describe().startswith(mode)
    assert (REPLAYABLE in noise.describe()) == (mode == "seeded")
    assert "seed=7" not in noise.describe()  # the seed is in `seed`, which a publishable report hides; never here


def test_a_bad_mode_is_refused_before_any_data_is_read():
    with pytest.raises(UserError, match=r"privacy\.noise='random'; expected one of \('auto', 'seeded', 'secure'\)"):
        check_config(compose_config(["debug=tiny", "privacy.noise=random"]))


def test_secure_generators_differ_across_calls_and_seeded_ones_replay():
    secure, seeded = NoiseSource("secure", None, "secure"), NoiseSource("seeded", 3, "seeded")
    draws = [secure.generator().random(8) for _ in range(3)]
    assert not any(np.array_equal(a, b) for i, a in enumerate(draws) for b in draws[i + 1 :])
    torch_draws = [torch.randint(0, 2**62, (4,), generator=secure.torch_generator()) for _ in range(3)]
    assert not any(torch.equal(a, b) for i, a in enumerate(torch_draws) for b in torch_draws[i + 1 :])
    assert np.array_equal(seeded.generator().random(8), np.random.default_rng(3).random(8))
    stream_1 = int(np.random.SeedSequence([3, 1]).generate_state(1, np.uint32)[0])
    assert seeded.torch_generator(stream=1).initial_seed() == stream_1
    assert torch.equal(
        torch.rand(5, generator=seeded.torch_generator(stream=1)),
        torch.rand(5, generator=torch.Generator().manual_seed(stream_1)),
    )


def test_seeded_streams_are_distinct_across_seeds_and_streams():
    """Seed s's stream 1 is not seed s + 1's stream 0 (as seed + stream made it): a sweep's seeds share no draws."""
    seeds = {
        (seed, stream): NoiseSource("seeded", seed, "seeded").torch_generator(stream=stream).initial_seed()
        for seed in range(4)
        for stream in range(3)
    }
    assert len(set(seeds.values())) == len(seeds)


def _mt19937_seeding(seed: int) -> list[int]:
    """The 624 state words MT19937 seeds from a 32-bit integer (Matsumoto & Nishimura 1998, init_genrand):
    w_0 = seed, w_j = 1812433253 (w_{j-1} xor (w_{j-1} >> 30)) + j mod 2^32."""
    words = [seed]
    for j in range(1, 624):
        words.append((1812433253 * (words[-1] ^ (words[-1] >> 30)) + j) % 2**32)
    return words


def _state_words(generator: torch.Generator) -> list[int]:
    return np.frombuffer(generator.get_state().numpy()[24 : 24 + 8 * 624].tobytes(), "<u8").tolist()


@pytest.mark.parametrize("seed", [0, 5489, 2**32 - 1])
def test_a_generator_built_from_state_words_draws_what_torchs_seeding_of_those_words_draws(seed):
    """The layout mt19937_generator writes is torch's: the words MT19937 seeds from ``seed`` give manual_seed's
    stream, uniform and normal draws alike (a wrong offset or word width would draw another stream)."""
    built, seeded = mt19937_generator(_mt19937_seeding(seed)), torch.Generator().manual_seed(seed)
    assert torch.equal(torch.rand(1000, generator=built), torch.rand(1000, generator=seeded))
    assert torch.equal(torch.randn(1000, generator=built), torch.randn(1000, generator=seeded))
    assert torch.equal(
        torch.randint(0, 2**53, (100,), generator=built), torch.randint(0, 2**53, (100,), generator=seeded)
    )


def test_torchs_cpu_generator_keeps_32_bits_of_a_seed_so_secure_ones_are_not_seeded():
    """Why secure torch generators get their whole state: manual_seed(s) and manual_seed(s mod 2^32) draw the same
    stream, so a secret 62-bit seed would be one of 2^32 replayable ones. A secure generator's state is no seeding's
    (its words do not follow the seeding recurrence from their first: chance 2^-32 per generator) and differs
    between generators."""
    wide = 12345 + (7 << 40)
    assert torch.equal(
        torch.rand(8, generator=torch.Generator().manual_seed(wide)),
        torch.rand(8, generator=torch.Generator().manual_seed(wide % 2**32)),
    )
    states = [_state_words(secret_torch_generator()) for _ in range(3)]
    for words in states:
        assert len(words) == 624 and max(words) < 2**32
        assert words != _mt19937_seeding(words[0])
    assert states[0] != states[1] != states[2]


@pytest.mark.parametrize(
    "words, message",
    [
        ([1] * 623, "got 623 words"),
        ([2**32] + [1] * 623, r"in \[1, 4294967296\]"),
        ([0] * 624, "not all zero"),
    ],
)
def test_bad_state_words_are_refused(words, message):
    with pytest.raises(ValueError, match=message):
        mt19937_generator(words)


def _aggregate_key(*overrides: str) -> tuple[str, dict]:
    cfg = compose_config([*FOLDER, *overrides])
    aggregator = GaussianPATE(num_labels=5, num_teachers=4, sigma=2.0, neighbors="replace")
    stage = aggregate_stage(
        aggregator, plain(cfg.aggregator), 40, Stage("votes", {"v": 1}, lambda work, up: None), noise_source(cfg), 5
    )
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
    args = [
        "debug=tiny",
        "data=multilabel_folder",
        f"data.root={folder}",
        "data.split_fractions=[0.7,0.1,0.2]",
        "privacy.target_epsilon=10",
    ]
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
        cfg = compose_config(
            [
                "debug=tiny",
                "data=multilabel_folder",
                f"data.root={folder}",
                "data.split_fractions=[0.7,0.1,0.2]",
                *method,
                *overrides,
            ],
            tmp_path,
        )
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
    assert metrics["noise_source"].startswith("seeded from the run's seed") and "seed=" not in metrics["noise_source"]
    # the console's short form (at most 100 characters a line); metrics.json has the whole sentence
    assert f"noise source      seeded: {REPLAYABLE}; the run carries no guarantee" in console
    assert f"epsilon = {metrics['epsilon']:.4g} (not a guarantee: seeded noise; replace, delta = 1e-06)" in console
