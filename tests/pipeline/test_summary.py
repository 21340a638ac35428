"""The console summary a run prints at its end (``pate.pipeline.runner.summary``): lines of at most 100 characters
for every kind of run, every epsilon with its relation and delta in its own line and, where it is no guarantee
(seeded noise, a raw data-dependent bound), saying so in that line; names wrapped, never cut. The metrics below
are those of real runs (the default run, ``debug=tiny`` runs of each aggregator and method), without training."""

from __future__ import annotations

from typing import Any

import pytest

from pate.pipeline.runner import SUMMARY_WIDTH, summary

SEEDED_SOURCE = (
    "seeded from the run's seed (privacy.noise=auto on the built-in synthetic data): the noise can be replayed "
    "from the seed, so the run carries no guarantee; its epsilon is what the same release guarantees with secret "
    "noise (privacy.noise=secure), for reproducible benchmarks where nothing is private"
)
SECURE_SOURCE = (
    "secure (privacy.noise=auto on data other than the built-in synthetic set): drawn from the operating system's "
    "entropy, no seed recorded; the release cannot be replayed"
)
KEYS = ["teacher_accuracy", "seed", "artifacts", "host.finished_utc"]

# the default run's metrics.json (benchmarks/results/default_run.json), the keys the summary reads
DEFAULT: dict[str, Any] = {
    "aggregator": "TauPATE(sigma=71.5287, tau=10, norm=l1, neighbors=replace)",
    "method": "tau_pate",
    "private": True,
    "neighbors": "replace",
    "delta": 1e-06,
    "epsilon": 7.999654661074341,
    "accountant": "tightest",
    "epsilon_accountant": "gdp",
    "epsilon_rdp": 8.522,
    "epsilon_order": 4.2,
    "privacy_unit": "one teacher's vote replaced",
    "record_level": True,
    "dataset_epsilon": None,
    "dataset_budget": None,
    "noise_source": SEEDED_SOURCE,
    "queries": 600,
    "answered": 600,
    "answered_fraction": 1.0,
    "mean_k": 5.76,
    "released_label_fraction": 1.0,
    "label_f1": 0.625,
    "label_accuracy": 0.862,
    "student_accuracy": 0.8525,
    "student_f1": 0.241,
    "student_train_size": 600,
    "student_semi": "supervised",
    "student_unlabeled_size": 0,
    "majority_class_accuracy": 0.805,
    "teacher_accuracy": 0.854,
    "num_teachers": 400,
    "not_covered_by_epsilon": {"keys": KEYS},
}
DD_KEYS = ["teacher_accuracy", "epsilon_data_dependent", "privacy_data_dependent"]
DD_TEST_KEYS = [*DD_KEYS, "data_dependent_test.not_itself_private", "seed", "artifacts", "host.finished_utc"]
NOT_ANSWERED = {"answered": 0, "answered_fraction": 0.0, "mean_k": None, "released_label_fraction": 0.0}
NOT_ANSWERED |= {"label_f1": None, "label_accuracy": None, "student_accuracy": None, "student_f1": None}
RECORD_LEVEL = {
    "privacy_unit": "one record replaced",
    "record_level": True,
    "not_covered_by_epsilon": {"keys": KEYS[1:]},
}
TEACHER_LEVEL = {"neighbors": "add_remove", "privacy_unit": "one teacher added or removed", "record_level": False}
RDP = {
    "epsilon_accountant": "rdp",
    "epsilon_rdp": 199.9883666841058,
    "epsilon": 199.9883666841058,
    "epsilon_order": 1.33,
}

KINDS: dict[str, dict[str, Any]] = {
    "tau_pate": DEFAULT,
    "gaussian_pate": {**DEFAULT, **RDP, "aggregator": "GaussianPATE(sigma=2.57569, neighbors=replace)"},
    "binary_voting": {
        **DEFAULT,
        "aggregator": "BinaryVoting(sigma=3.6425, neighbors=replace)",
        "epsilon_data_dependent": 199.9,
        "epsilon_data_independent": 199.99581506852354,
        "not_covered_by_epsilon": {"keys": [*DD_KEYS, *KEYS[1:]]},
    },
    # docs/data-dependent.md's run: the test passed
    "binary_voting_dd": {
        **DEFAULT,
        "aggregator": "DataDependentBinaryVoting(sigma=75.5158, proposal 4.205 at order 4.4, neighbors=replace)",
        "epsilon": 8.0,
        "epsilon_accountant": "rdp",
        "epsilon_rdp": 8.0,
        "epsilon_order": 4.4,
        "epsilon_data_dependent": 6.104,
        "epsilon_data_independent": 18.44,
        "data_dependent_test": {"passed": True, "rdp_budget": 4.205, "order": 4.4},
        "not_covered_by_epsilon": {"keys": DD_TEST_KEYS},
    },
    # debug=tiny: the test failed, nothing released
    "binary_voting_dd failed": {
        **DEFAULT,
        **RDP,
        **NOT_ANSWERED,
        "aggregator": "DataDependentBinaryVoting(sigma=1.82125, proposal 144.2 at order 1.33, neighbors=replace)",
        "epsilon_data_dependent": 642.8,
        "epsilon_data_independent": 642.8,
        "data_dependent_test": {"passed": False, "rdp_budget": 144.2435782717007, "order": 1.33},
        "not_covered_by_epsilon": {"keys": DD_TEST_KEYS},
    },
    "confident_binary_voting": {
        **DEFAULT,
        **RDP,
        "aggregator": (
            "DataDependentBinaryVoting(sigma=1.82129, screen_sigma=6.82982 at 0.8T, proposal 144.2 at order 1.33, "
            "neighbors=replace)"
        ),
        "answered": 372,
        "answered_fraction": 0.62,
        "released_label_fraction": 0.31,
        "epsilon_data_dependent": 407.9,
        "epsilon_data_independent": 662.8,
        "data_dependent_test": {"passed": True, "rdp_budget": 144.2435782717007, "order": 1.33},
        "not_covered_by_epsilon": {"keys": DD_TEST_KEYS},
    },
    "stable_topk_paper": {
        **DEFAULT,
        **RDP,
        **NOT_ANSWERED,
        "aggregator": (
            "StableTopK(selection=gaussian, sigma_select=3.06737, test=gaussian, sigma_test=3.68084, delta_t=1e-09, "
            "neighbors=replace)"
        ),
    },
    "dp_sgd": {
        **{key: value for key, value in DEFAULT.items() if key not in ("aggregator", "teacher_accuracy")},
        **RDP,
        **RECORD_LEVEL,
        "method": "dp_sgd",
        "mechanism": (
            "DP-SGD(linear probe on the standardized features, q=0.2, noise_multiplier=0.3639, steps=150, "
            "clip_norm=1, neighbors=replace)"
        ),
        "released_model": (
            "the DP-SGD linear probe on the standardized features itself, trained on the 150 Poisson batches of "
            "the private split; no student"
        ),
    },
    "private_knn": {
        **{key: value for key, value in DEFAULT.items() if key not in ("aggregator", "teacher_accuracy")},
        **RDP,
        **RECORD_LEVEL,
        "method": "private_knn",
        "mechanism": "PrivateKNN(k=20, sampling_rate=0.3, sigma=1.73641, neighbors=replace)",
    },
    # privacy.noise=secure: the data's budget, priced (and shared by several private splits, with a cap) ...
    "dataset budget": {
        **DEFAULT,
        "noise_source": SECURE_SOURCE,
        "dataset_epsilon": 15.19,
        "dataset_budget": {"releases": 2, "datasets": 3, "other_relations": 0, "cap": 20.0, "this_release": "drawn"},
        "not_covered_by_epsilon": {"keys": ["teacher_accuracy", "dataset_budget.dataset", *KEYS[2:]]},
    },
    # ... or not priced: releases under another relation
    "dataset budget not priced": {
        **DEFAULT,
        **TEACHER_LEVEL,
        "noise_source": SECURE_SOURCE,
        "dataset_epsilon": None,
        "dataset_budget": {
            "releases": 1,
            "datasets": 1,
            "other_relations": 2,
            "cap": None,
            "this_release": "reused_earlier",
        },
    },
    "references": {
        **DEFAULT,
        **TEACHER_LEVEL,
        "not_covered_by_epsilon": {
            "keys": ["teacher_accuracy", "reference.majority_vote", "reference.true_labels", *KEYS[1:]]
        },
    },
    "semi-supervised": {**DEFAULT, "student_semi": "consistency", "student_unlabeled_size": 23_000},
    # the longest numbers an epsilon line takes: a huge epsilon, a three-digit delta, add_remove, the PLD
    "extreme": {
        **DEFAULT,
        **TEACHER_LEVEL,
        "epsilon": 123456.7,
        "epsilon_accountant": "pld",
        "epsilon_rdp": 234567.8,
        "epsilon_order": 1.25,
        "delta": 1.23456e-07,
        "epsilon_data_dependent": 98765.4,
        "epsilon_data_independent": 345678.9,
    },
}


def entries(text: str) -> dict[str, list[str]]:
    """The summary's entries: label -> its lines' text (a continuation line has no label), the indent left out."""
    lines = text.splitlines()
    assert lines[0] == "results"
    found: dict[str, list[str]] = {}
    for line in lines[1:]:
        assert line.startswith("  ") and len(line) > 20, line
        label, rest = line[2:20].strip(), line[20:]
        if label:
            assert label not in found, label
            found[label] = [rest]
        else:
            found[list(found)[-1]].append(rest)
    return found


def check_summary(m: dict[str, Any]) -> dict[str, list[str]]:
    """What every run's summary must say (docs/run-record.md, the project's rules for an epsilon); its entries."""
    text = summary(m)
    assert max(len(line) for line in text.splitlines()) <= SUMMARY_WIDTH, text
    found = entries(text)
    seeded = not m["noise_source"].startswith("secure")
    relation = f"{m['neighbors']}, delta = {m['delta']:.3g})"
    # the run's epsilon, its relation and delta, and where the noise is seeded the caveat right after it
    caveat = " (not a guarantee: seeded noise; " if seeded else " ("
    assert found["privacy"][0].startswith("epsilon = ") and f"{caveat}{relation}" in found["privacy"][0], text
    for line in text.splitlines():
        if "epsilon = " in line:  # every epsilon printed: its relation and delta, and what it is not
            assert relation in line or "NOT PRICED" in line, line
            if seeded:
                assert "not a guarantee: seeded noise" in line or "NOT ITSELF PRIVATE" in line, line
        if "RDP bound" in line and seeded:
            assert "(seeded: no guarantee)" in line, line
    if "epsilon_data_dependent" in m:
        assert "NOT ITSELF PRIVATE" in found["data-dependent"][0]
    if m.get("dataset_budget"):
        assert ("NOT PRICED" in found["privacy budget"][0]) == (m["dataset_epsilon"] is None)
    level = "record-level" if m["record_level"] else "teacher-level: NOT a record-level guarantee"
    assert found["privacy unit"] == [f"{m['privacy_unit']} ({level})"]
    # names and the released model are wrapped, never cut
    name = m.get("aggregator") or m.get("mechanism") or m["method"]
    assert " ".join(found["aggregator" if m.get("aggregator") else "method"]) == name
    if m.get("released_model"):
        assert m["released_model"] in " ".join(found["student"])
    if "teacher_accuracy" in m:
        assert "a diagnostic, not covered by epsilon" in found["teachers"][0]
    not_covered = " ".join(found["not covered"])
    assert f"by epsilon: {', '.join(m['not_covered_by_epsilon']['keys'])} " in not_covered
    assert "never publish them" in not_covered
    assert "metrics.json" in found["details"][0]
    return found


@pytest.mark.parametrize("kind", list(KINDS))
def test_every_kind_of_run_prints_a_short_summary_that_says_what_each_epsilon_is(kind):
    check_summary(KINDS[kind])


def test_the_default_runs_summary():
    assert summary(DEFAULT).splitlines()[:3] == [
        "results",
        "  aggregator        TauPATE(sigma=71.5287, tau=10, norm=l1, neighbors=replace)",
        "  privacy           epsilon = 8 (not a guarantee: seeded noise; replace, delta = 1e-06)",
    ]
    found = entries(summary(DEFAULT))
    assert found["privacy"][1] == "Gaussian-DP accountant; RDP bound 8.522 at order 4.2 (seeded: no guarantee)"
    assert found["noise source"][0].startswith("seeded: the noise can be replayed from the seed")
    secure = entries(summary(KINDS["dataset budget"]))
    assert secure["privacy"] == [
        "epsilon = 8 (replace, delta = 1e-06)",
        "Gaussian-DP accountant; RDP bound 8.522 at order 4.2",
    ]
    assert secure["privacy budget"] == [
        "total epsilon = 15.19 (replace, delta = 1e-06)",
        "over 2 release(s) on this data or data sharing its records (3 private splits)",
        "by the tightest accountant; this run's release: drawn",
    ]
    assert secure["noise source"] == ["secure: OS entropy, no seed recorded; the release cannot be replayed"]


def test_a_long_name_is_wrapped_onto_continuation_lines():
    found = check_summary(KINDS["dp_sgd"])
    assert len(found["method"]) == 2 and len(found["student"]) == 3
