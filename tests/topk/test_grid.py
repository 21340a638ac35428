"""``python topk.py``: the real configs composed and shrunk, run end to end, and the runner's checks."""

import csv
import functools
from pathlib import Path

import numpy as np
import pytest
from hydra import compose, initialize_config_dir
from omegaconf import open_dict

import topk
from pate.experiments.topk import Setting, run_grid, settings_for
from pate.experiments.topk.grid import noise_mode
from pate.mechanisms.topk import EMPeeling
from tests.conftest import CONF_DIR

FAST_METHODS = "[em_cdp,em_cdp_rdp,stable_topk,pnf_peel,joint,top_stable,top_stable_fill,limited_domain]"


def compose_topk(overrides=()):
    with initialize_config_dir(config_dir=CONF_DIR, version_base="1.3"):
        cfg = compose(config_name="topk", overrides=list(overrides))
    with open_dict(cfg):
        cfg.progress = False
    return cfg


def read_rows(path: Path) -> list[dict]:
    with path.open() as handle:
        return list(csv.DictReader(handle))


@pytest.mark.parametrize("experiment", ["flat", "repeated", "checkin"])
def test_every_experiment_config_composes_with_every_mechanism(experiment):
    cfg = compose_topk([f"topk_experiment={experiment}"])
    assert set(cfg.topk_experiment.methods) <= set(cfg.mechanisms)
    assert cfg.neighbors == "add_remove" and cfg.topk_experiment.trials >= 50


@pytest.mark.slow
def test_flat_experiment_end_to_end_is_deterministic(tmp_path):
    overrides = [
        "topk_experiment=flat",
        "topk_experiment.data.num_bins=400",
        "topk_experiment.ks=[5,40]",
        "topk_experiment.trials=6",
        f"topk_experiment.methods={FAST_METHODS}",
    ]
    cfg = compose_topk([*overrides, f"report_dir={tmp_path / 'a'}"])
    first = topk.run(cfg, str(tmp_path))
    files = ("results.csv", "report.md", "recall.png")
    written = {name: (tmp_path / "a" / name).read_bytes() for name in files}
    topk.run(cfg, str(tmp_path))
    for name in files:
        assert (tmp_path / "a" / name).read_bytes() == written[name], name
    rows = read_rows(tmp_path / "a" / "results.csv")
    methods = FAST_METHODS.strip("[]").split(",")
    assert len(rows) == len(first) == 2 * len(methods)
    assert {row["mechanism"] for row in rows} == set(methods)
    for row in first:
        assert row["epsilon_spent"] <= 0.15 * (1 + 1e-6) and row["delta"] == 1e-6
        assert 0.0 <= row["recall_mean"] <= 1.0 and row["returned_mean"] <= row["k"]
        if row["mechanism"] in ("em_cdp", "em_cdp_rdp", "stable_topk", "pnf_peel", "joint", "top_stable_fill"):
            assert row["returned_mean"] == row["k"]  # these always return exactly k
    report = (tmp_path / "a" / "report.md").read_text()
    assert "add_remove" in report and "delta=1e-06" in report and "| k | em_cdp |" in report


def test_repeated_experiment_composes_queries_per_interval(tmp_path):
    cfg = compose_topk(
        [
            "topk_experiment=repeated",
            "topk_experiment.data.num_days=4",
            "topk_experiment.data.queries_per_interval=2",
            "topk_experiment.trials=3",
            "topk_experiment.methods=[em_cdp,stable_topk]",
            f"report_dir={tmp_path}",
        ]
    )
    rows = topk.run(cfg, str(tmp_path))
    assert [row["setting"] for row in rows] == ["days 1-2", "days 1-2", "days 3-4", "days 3-4"]
    assert all(row["queries"] == 2 and row["epsilon_spent"] <= 0.1 * (1 + 1e-6) for row in rows)
    em = [row for row in rows if row["mechanism"] == "em_cdp"][0]
    assert "pick_eps" in em["mechanism_detail"]


def test_checkin_experiment_reads_a_file_and_uses_delta_one_over_n(tmp_path):
    path = tmp_path / "checkins.txt"
    lines = [f"u{user} 0 0 0 v{venue}" for venue in range(30) for user in range(venue % 7 + 1)]
    path.write_text("\n".join(lines) + "\n")
    cfg = compose_topk(
        [
            "topk_experiment=checkin",
            "topk_experiment.ks=[2]",
            "topk_experiment.epsilons=[1.0]",
            "topk_experiment.trials=3",
            "topk_experiment.methods=[em_cdp,stable_topk]",
            f"+topk_experiment.data.datasets.brightkite.path={path}",
            "~topk_experiment.data.datasets.foursquare",
            f"report_dir={tmp_path}",
        ]
    )
    rows = topk.run(cfg, str(tmp_path))
    assert {row["setting"] for row in rows} == {"brightkite"}
    assert all(row["delta"] == pytest.approx(1 / 7) for row in rows)
    report = (tmp_path / "report.md").read_text()
    assert "file" in report and "delta = 1/n" in report
    # a user's file: the noise is secret by default, and the report says so
    assert {row["noise"] for row in rows} == {"secure"} and "Noise: secure" in report
    assert "Not a private release of the files' data" in report  # recall, n and the domain come from the file


def test_the_noise_is_seeded_only_on_generated_histograms_unless_asked():
    generated = Setting("flat", np.array([[3, 1, 0]]), 1e-6, (1,), "flat")
    read = Setting("file", np.array([[3, 1, 0]]), 1e-6, (1,), "a file", private=True)
    assert noise_mode("auto", [generated]) == "seeded"
    assert noise_mode("auto", [generated, read]) == "secure"
    assert noise_mode("seeded", [read]) == "seeded" and noise_mode("secure", [generated]) == "secure"
    with pytest.raises(ValueError, match=r"noise='random'"):
        noise_mode("random", [generated])
    factories = {"em_cdp": functools.partial(EMPeeling.for_budget, accountant="zcdp")}
    histograms = Setting("wide", np.arange(40)[None] % 7, 1e-6, (3,), "wide")

    def returned(noise, seed):
        return run_grid([histograms], [0.5], factories, 20, "add_remove", 1, seed, progress=False, noise=noise)[0][
            "recall_mean"
        ]

    assert returned("seeded", 0) == returned("seeded", 0)  # replayable
    secure = [returned("secure", 0) for _ in range(3)]
    assert len(set(secure)) > 1  # fresh entropy on every run, whatever the seed


def test_unknown_methods_and_bad_data_are_refused(tmp_path):
    with pytest.raises(ValueError, match="unknown mechanisms"):
        topk.run(compose_topk(["topk_experiment.methods=[em_cdp,magic]"]), str(tmp_path))
    with pytest.raises(ValueError, match="data.kind"):
        settings_for({"kind": "zipf"}, [1], 1e-6)
    with pytest.raises(ValueError, match="multiple of"):
        settings_for(
            {
                "kind": "repeated",
                "num_bins": 5,
                "num_days": 5,
                "queries_per_interval": 2,
                "start_total": 10,
                "growth": 0.1,
                "tail": 1.0,
                "seed": 0,
            },
            [1],
            1e-6,
        )
    with pytest.raises(ValueError, match="no path given"):
        settings_for({"kind": "checkin", "datasets": {"gowalla": {}}}, [1], None)


def test_a_mechanism_that_overspends_is_caught_before_running():
    def overspending(k, epsilon, delta, queries, neighbors):
        return EMPeeling.for_budget(k, 2 * epsilon, delta, queries, neighbors, accountant="rdp")

    setting = Setting("one", np.arange(20, dtype=np.int64)[None, :], 1e-6, (3,), "test")
    with pytest.raises(ValueError, match=r"k \(setting one\) must be < the number of bins d=20"):
        run_grid(
            [Setting("one", setting.histograms, 1e-6, (20,), "test")],
            [1.0],
            {"bad": overspending},
            trials=2,
            neighbors="add_remove",
            kbar_factor=1,
            seed=0,
            progress=False,
        )
    with pytest.raises(ValueError, match="calibration bug"):
        run_grid(
            [setting],
            [1.0],
            {"bad": overspending},
            trials=2,
            neighbors="add_remove",
            kbar_factor=1,
            seed=0,
            progress=False,
        )
    good = functools.partial(EMPeeling.for_budget, accountant="zcdp")
    rows = run_grid(
        [setting], [1.0], {"good": good}, trials=2, neighbors="add_remove", kbar_factor=1, seed=0, progress=False
    )
    assert rows[0]["recall_mean"] == pytest.approx(rows[0]["recall_mean"]) and rows[0]["kbar"] == 3


def test_every_mechanism_runs_and_meets_its_budget_under_replace(tmp_path):
    cfg = compose_topk(
        [
            "topk_experiment=repeated",
            "topk_experiment.data.num_days=4",
            "topk_experiment.data.queries_per_interval=2",
            "topk_experiment.trials=3",
            f"topk_experiment.methods={FAST_METHODS}",
            "neighbors=replace",
            f"report_dir={tmp_path}",
        ]
    )
    rows = topk.run(cfg, str(tmp_path))
    assert len(rows) == 2 * len(FAST_METHODS.strip("[]").split(","))
    assert all(row["neighbors"] == "replace" and row["epsilon_spent"] <= 0.1 * (1 + 1e-6) for row in rows)
    statements = {row["mechanism"]: row["privacy"] for row in rows}
    assert "group privacy" in statements["limited_domain"] and "group privacy" in statements["top_stable"]
