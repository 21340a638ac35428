"""Each method's privacy-free limit beside its largest-epsilon result, flagged more than half a point below it
(pate/report/limits.py), on the fixture sweep: majority-vote student 0.875 in every job; at target epsilon 4 the
students reach 0.870 / 0.872 (stable_topk_paper) and 0.850 / 0.852 (gaussian_pate) over seeds 0 / 1."""

import json

import pytest

from pate.report import collect_sweep, summarize
from pate.report.collect import publishable_form
from pate.report.limits import LIMIT_GAP, limits_section, privacy_free_limits


def test_each_method_is_set_beside_its_limit_at_its_largest_target(sweep_dir):
    limits = {limit.method: limit for limit in privacy_free_limits(summarize(collect_sweep(sweep_dir)))}
    assert set(limits) == {"stable_topk_paper", "gaussian_pate"}
    top_k, gaussian = limits["stable_topk_paper"], limits["gaussian_pate"]
    assert (top_k.source, top_k.epsilon, top_k.limit.mean) == ("majority_vote", 4.0, 0.875)
    assert top_k.accuracy.mean == pytest.approx(0.871) and top_k.gap == pytest.approx(0.004)
    assert not top_k.flagged  # 0.4 point below: within half a point
    assert gaussian.gap == pytest.approx(0.024) and gaussian.flagged and LIMIT_GAP == 0.005


def test_a_method_s_own_noise_free_limit_comes_before_the_majority_vote(sweep_factory, tmp_path):
    sweep = sweep_factory(tmp_path / "sweep", failed=False)
    for job_dir in sweep.iterdir():
        if (job_dir / "metrics.json").exists():
            metrics = json.loads((job_dir / "metrics.json").read_text())
            metrics["reference"]["noise_free"] = {
                "label_f1": 0.7,
                "label_accuracy": 0.9,
                "student_accuracy": 0.8705,
                "student_f1": 0.5,
            }
            (job_dir / "metrics.json").write_text(json.dumps(metrics))
    limits = {limit.method: limit for limit in privacy_free_limits(summarize(collect_sweep(sweep)))}
    assert limits["stable_topk_paper"].source == "noise_free"
    assert limits["stable_topk_paper"].gap == pytest.approx(-0.0005)  # above its limit: no flag
    summary = summarize(collect_sweep(sweep))
    assert "noise_free" not in summary.references  # one method's own, not a shared reference line


def test_the_report_prints_the_section_and_the_publishable_form_leaves_it_out(sweep_dir):
    section = "\n".join(limits_section(summarize(collect_sweep(sweep_dir))))
    assert "## Privacy-free limits (not covered by ε)" in section
    gaussian_row = next(line for line in section.splitlines() if line.startswith("| `gaussian_pate`"))
    assert "| 4 | 0.8510 | 0.8750 | +0.0240 | **more than 0.5 point below its limit** |" in gaussian_row
    top_k_row = next(line for line in section.splitlines() if line.startswith("| `stable_topk_paper`"))
    assert top_k_row.endswith("| +0.0040 |  |")
    assert limits_section(summarize(publishable_form(collect_sweep(sweep_dir)))) == []


def test_a_method_that_answers_nothing_at_its_largest_target_is_flagged_not_left_out(sweep_factory, tmp_path):
    """StableTopK with the paper's selection answered no query at epsilon 64 in the committed eps_sweep: no student,
    and until 2026-11-27 no row either. Here stable_topk_paper's jobs at its largest target release nothing."""
    sweep = sweep_factory(tmp_path / "sweep", failed=False)
    for job_dir in sweep.iterdir():
        path = job_dir / "metrics.json"
        if path.exists():
            metrics = json.loads(path.read_text())
            if metrics["method"] == "stable_topk_paper":
                metrics["student_accuracy"] = metrics["student_f1"] = None
                path.write_text(json.dumps(metrics))
    limit = {limit.method: limit for limit in privacy_free_limits(summarize(collect_sweep(sweep)))}["stable_topk_paper"]
    assert limit.accuracy is None and limit.gap is None and limit.flagged
    section = "\n".join(limits_section(summarize(collect_sweep(sweep))))
    row = next(line for line in section.splitlines() if line.startswith("| `stable_topk_paper`"))
    assert row == (
        "| `stable_topk_paper` | the teachers' plain majority vote | 4 | no student | 0.8750 |  | "
        "**answers no query at its largest ε** |"
    )
