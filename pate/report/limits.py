"""Each method's privacy-free limit beside its least private result: what the method reaches with its
noise set to zero, all else equal, so that a report tells the cost of privacy from under-training.

The limit is a reference run of each job (``references=true``): ``noise_free`` for a method that declares one (DP-SGD:
the same batches, clipping and steps; Private-kNN: the same subsampled votes), and for PATE the teachers' plain
majority vote (``majority_vote``: its aggregators with zero noise, up to TauPATE's clipping and StableTopK's
selection rule). A method whose student at its largest target epsilon sits more than ``LIMIT_GAP`` below its limit
there is flagged: its noise is not what holds it back there, or its settings underfit. So is a method that trains no
student there (it answered no query): its row says so rather than leaving the method out.
"""

from __future__ import annotations

from dataclasses import dataclass

from pate.report.summary import TARGET, Stat, Summary

__all__ = ["LIMIT_GAP", "Limit", "limits_section", "privacy_free_limits"]

LIMIT_GAP = 0.005  # half a point of student accuracy
LIMIT_SOURCES = ("noise_free", "majority_vote")  # a method's own limit first; PATE's noise-free vote otherwise


@dataclass(frozen=True)
class Limit:
    """``method``'s student accuracy at its largest target ``epsilon`` and its limit's (``source``), over the same
    runs; ``accuracy`` is None where no run of that cell trained a student (no query answered)."""

    method: str
    source: str
    epsilon: float
    accuracy: Stat | None
    limit: Stat

    @property
    def gap(self) -> float | None:
        return None if self.accuracy is None else self.limit.mean - self.accuracy.mean

    @property
    def flagged(self) -> bool:
        return self.gap is None or self.gap > LIMIT_GAP


def cell_limit(cell, source: str, metric: str = "student_accuracy") -> Stat | None:
    """The limit ``source`` (a reference name) of ``metric`` over the runs of ``cell`` that recorded it; None where
    none did."""
    values = [
        run.metrics["reference"][source][metric]
        for run in cell.runs
        if (run.metrics.get("reference") or {}).get(source, {}).get(metric) is not None
    ]
    return Stat.of(values) if values else None


def privacy_free_limits(summary: Summary) -> tuple[Limit, ...]:
    """One :class:`Limit` per method with target-epsilon cells whose runs recorded a limit."""
    limits = []
    for method in summary.methods:
        cells = [cell for cell in summary.cells if cell.method == method and cell.axis == TARGET]
        if not cells:
            continue
        cell = max(cells, key=lambda c: c.epsilon)
        accuracy = cell.stats.get("student_accuracy")
        for source in LIMIT_SOURCES:
            limit = cell_limit(cell, source)
            if limit is not None:
                limits.append(Limit(method, source, cell.epsilon, accuracy, limit))
                break
    return tuple(limits)


def limits_section(summary: Summary) -> list[str]:
    """The report's section: one row per method, flagged where the gap exceeds ``LIMIT_GAP``; nothing when no run
    recorded a limit."""
    limits = privacy_free_limits(summary)
    if not limits:
        return []
    names = {"noise_free": "its own release, noise zero", "majority_vote": "the teachers' plain majority vote"}
    rows = [
        "| method | limit | largest target ε | student accuracy there | limit (noise zero) | gap | |",
        "|---|---|---:|---:|---:|---:|---|",
    ]
    for limit in limits:
        if limit.accuracy is None:
            accuracy, gap, flag = "no student", "", "**answers no query at its largest ε**"
        else:
            accuracy, gap = f"{limit.accuracy.mean:.4f}", f"{limit.gap:+.4f}"
            flag = f"**more than {LIMIT_GAP * 100:g} point below its limit**" if limit.flagged else ""
        rows.append(
            f"| `{limit.method}` | {names[limit.source]} | {limit.epsilon:g} | {accuracy} | "
            f"{limit.limit.mean:.4f} | {gap} | {flag} |"
        )
    return [
        "## Privacy-free limits (not covered by ε)",
        "",
        "What each method's student reaches with the noise set to zero, all else equal, in the same jobs as its "
        "largest target ε (a diagnostic beside the release, like the reference lines). A method flagged here "
        f"sits more than {LIMIT_GAP * 100:g} point below its limit at its least private setting (there its "
        "settings, not its noise, hold it back), or answers no query there.",
        "",
        *rows,
        "",
    ]
