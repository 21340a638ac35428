"""The opening of every report: what each epsilon it prints guarantees, by which accountant, and what it does not.

Each epsilon covers one run's release alone. A report shows many runs of the same private data; publishing several
releases spends their composition, and picking the best among them is a choice no ledger priced (with secret noise,
runs that differ only in their seed share one release). Where a run's noise was
seeded (``privacy.noise``, ``pate.pipeline.noise``), whoever holds the seed replays the noise: that run carries no
guarantee, and its epsilon is what the same release guarantees with secret noise.
"""

from __future__ import annotations

from typing import Any, Iterable

from pate.report.units import units_line

__all__ = ["ACCOUNTANT_NAMES", "accountants_line", "opening", "seeded"]

ACCOUNTANT_NAMES = {"rdp": "RDP", "gdp": "GDP (exact)", "pld": "PLD", "chain": "group privacy, chained"}


def seeded(runs: Iterable[Any]) -> bool:
    """Whether any run's noise was seeded (its ``noise_source`` says so; a record that does not say is taken as
    seeded, as ``pate.run_record.not_covered_by_epsilon`` takes it)."""
    return any(not str(run.metrics.get("noise_source", "")).startswith("secure") for run in runs)


def accountants_line(runs: Iterable[Any]) -> str:
    """One sentence: which accountant gave each method's epsilons (``epsilon_accountant``; runs recorded before it
    said none are 'not recorded')."""
    by_method: dict[str, set[str]] = {}
    for run in runs:
        name = run.metrics.get("epsilon_accountant")
        by_method.setdefault(run.metrics["method"], set()).add(
            ACCOUNTANT_NAMES.get(name, name) if name else "not recorded"
        )
    return (
        'Accountant of each ε (docs/concepts.md, "The accountants"): '
        + "; ".join(f"`{method}` {', '.join(sorted(names))}" for method, names in sorted(by_method.items()))
        + "."
    )


def opening(runs: Iterable[Any], relation: str, delta: float, how: str) -> list[str]:
    """The report's first paragraph and, where noise was seeded, the warning under it. ``how``: the sentence on how
    the noise was set (after the guarantee's own)."""
    runs = list(runs)
    lines = [
        f"Every ε in this report is the (ε, δ)-DP guarantee of one run's release under `neighbors={relation}` "
        f"with δ = {delta:g}{how} {accountants_line(runs)} {units_line(runs)} Each covers its own release "
        f"alone: publishing several releases of the same private data spends their composition (up to the sum "
        f"of their ε), not one row's ε, and a choice among them (the best setting at an ε) is itself unpriced. "
        f"(With secret noise, runs of one config that differ only in their seed share one release: "
        f'docs/concepts.md, "Secret noise".)',
        "",
    ]
    if seeded(runs):
        lines += [
            "**The noise of these runs was seeded** (`privacy.noise=seeded`, which `auto` chooses only on the "
            "built-in synthetic data, for reproducible benchmarks): whoever holds a run's seed replays its "
            "noise, so these runs carry no guarantee themselves; each ε is what the same release guarantees "
            "with secret noise (`privacy.noise=secure`).",
            "",
        ]
    return lines
