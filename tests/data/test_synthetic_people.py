"""The built-in synthetic set with people (``data.synthetic.images_per_person``): a person's images share their
traits, each image alone keeps the model's distribution, the identity file names each image's person, the splits
cut between people, and one image per person is the set of before, byte for byte."""

from __future__ import annotations

import hashlib
from pathlib import Path

import numpy as np
import pytest

from pate.data.celeba import ATTRIBUTE_NAMES, load_celeba
from pate.data.synthetic import _people, check_synthetic_params, generate_synthetic_celeba
from pate.data.synthetic_attributes import (
    GRAPH,
    PERSON_LATENTS,
    PERSON_NODES,
    PREVALENCE,
    Choice,
    sample_attributes,
)
from pate.pipeline.runner import run
from tests.conftest import compose_config

PEOPLE = {"images_per_person": 20, "max_images_per_person": 35}


def _person_attributes() -> list[str]:
    """The published attributes a person's images share: every option of a shared choice."""
    names = []
    for node in GRAPH:
        if isinstance(node, Choice) and node.options[0] in PERSON_NODES:
            names += node.options
        elif not isinstance(node, Choice) and node.name in PERSON_NODES:
            names.append(node.name)
    return ["Male", *names]


def test_a_shared_nodes_inputs_are_all_shared():
    """A person node reads only shared latents, sex and other person nodes: otherwise it would vary per image."""
    shared = {"sex", *PERSON_LATENTS, *_person_attributes()}
    for node in GRAPH:
        name = node.options[0] if isinstance(node, Choice) else node.name
        if name not in PERSON_NODES:
            continue
        weights = node.weights.values() if isinstance(node, Choice) else [node.weights]
        inputs = {f for w in weights for f in w} | set(node.excludes)
        if not isinstance(node, Choice):
            inputs |= set(node.requires) | set(node.implied_by)
        assert inputs <= shared, (name, inputs - shared)


def test_a_persons_images_share_their_traits_and_vary_in_the_rest():
    person = _people(20_000, PEOPLE, 0)
    sample = sample_attributes(len(person), np.random.default_rng(1), person)
    columns = [ATTRIBUTE_NAMES.index(name) for name in _person_attributes()]
    order = np.argsort(person, kind="stable")
    starts = np.flatnonzero(np.diff(person[order], prepend=-1))
    for column in range(len(ATTRIBUTE_NAMES)):
        values = sample.true[order, column]
        constant = (np.maximum.reduceat(values, starts) == np.minimum.reduceat(values, starts)).all()
        assert constant == (column in columns), ATTRIBUTE_NAMES[column]


def test_each_image_alone_keeps_the_models_prevalences():
    """Over 60,000 faces of 20 each, every attribute's prevalence is within 2.5 points of CelebA's (3,000 people:
    a shared attribute's standard error is sqrt(p (1 - p) / 3000), at most 0.9 points)."""
    person = _people(60_000, PEOPLE, 1)
    true = sample_attributes(len(person), np.random.default_rng(2), person).true
    for j, name in enumerate(ATTRIBUTE_NAMES):
        assert abs(true[:, j].mean() - PREVALENCE[name]) < 0.025, name


def test_people_counts_have_celebas_mean_and_cap():
    counts = np.bincount(_people(202_599, PEOPLE, 0))
    assert counts.sum() == 202_599 and counts.max() <= 35 and abs(counts[:-1].mean() - 20) < 0.2


def _digest(root: Path, names) -> str:
    return hashlib.sha256(b"".join((root / name).read_bytes() for name in names)).hexdigest()


@pytest.mark.slow  # renders images
def test_one_image_per_person_is_the_set_every_report_was_made_from(tmp_path):
    """The tiny set's labels and splits, as the code before people wrote them (the SHA-256 of the two text files:
    numpy's draws, independent of the image codec), and no identity file: the default keeps every committed report's
    data. Its images come from the same streams (``render_face`` without ``person_rng`` spawns them as before)."""
    root = generate_synthetic_celeba(tmp_path / "s", 400, 32, (0.8, 0.05, 0.15), 0, progress=False)
    assert not (root / "identity_CelebA.txt").exists()
    assert _digest(root, ["list_attr_celeba.txt", "list_eval_partition.txt"]) == (
        "b95d4dfea33fe3c94a157ad7de12f5e6ccbfbc8c6d0b65b2968b33f74320065e"
    )
    assert "images_per_person" not in check_synthetic_params(400, 32, (0.8, 0.05, 0.15), 0, 0)


@pytest.mark.slow  # renders images
def test_a_set_with_people_names_them_and_keeps_each_in_one_split(tmp_path):
    root = generate_synthetic_celeba(tmp_path / "p", 600, 32, (0.7, 0.1, 0.2), 0, progress=False, images_per_person=20)
    data = load_celeba(root, 16, tmp_path / "cache", progress=False)  # refuses a person in two splits
    counts = np.unique(data.person, return_counts=True)[1]
    assert counts.max() <= 35 and len(counts) >= 600 // 35
    for code in range(3):
        assert (data.split == code).any()


@pytest.mark.parametrize(
    "kwargs,message",
    [
        ({"images_per_person": 0}, r"images_per_person=0; expected an integer >= 1"),
        ({"images_per_person": 20, "max_images_per_person": 10}, r"max_images_per_person=10; expected an integer >= "),
        ({"images_per_person": 35}, r"leaves the \['val', 'test'\] split\(s\) empty .* images_per_person=35"),
    ],
)
def test_bad_people_settings_are_one_line(kwargs, message):
    with pytest.raises(ValueError, match=message):
        check_synthetic_params(100, 32, (0.8, 0.05, 0.15), 0, 0, **kwargs)


@pytest.mark.slow  # generates, decodes and runs
def test_the_config_keys_give_a_person_level_run_in_a_directory_of_its_own(tmp_path):
    """``data.synthetic.images_per_person`` and ``max_images_per_person`` as the docs give them: the set lives beside
    the one-image set, not over it, and the run's epsilon is person-level by default."""
    cfg = compose_config(
        [
            "debug=tiny",
            "data.synthetic.num_images=1200",
            "data.synthetic.images_per_person=20",
            "data.synthetic.max_images_per_person=30",
        ],
        tmp_path,
    )
    assert cfg.data.root.endswith("synthetic_celeba_n1200_px32_seed0_people20")
    assert compose_config(["debug=tiny"], tmp_path).data.root.endswith("synthetic_celeba_n400_px32_seed0")
    metrics = run(cfg, output_dir=tmp_path / "run")
    assert metrics["person_level"] and metrics["images_per_person"] <= 30
