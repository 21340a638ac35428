"""Report of a private top-k experiment: ``results.csv``, ``report.md`` and one recall figure.

The rows come from ``pate.experiments.topk.grid.run_grid``. Panels (one table block and one subplot each) are
the distinct values of the config's ``panel_by`` keys; within a panel the x-axis is ``x_axis`` (k or
the setting) and there is one series per mechanism, with +- one standard deviation over trials.
Output is deterministic for a given commit (named in the report's Versions line): no timestamps, no timings (speed
lives in ``benchmarks/``), rows in grid order.
"""

from __future__ import annotations

import csv
import io
import math
from collections import defaultdict
from pathlib import Path
from typing import Any, Sequence

import yaml
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure

from pate.artifacts import code_version
from pate.io import atomic_write_bytes

__all__ = ["CSV_COLUMNS", "write_topk_report"]

CSV_COLUMNS = (
    "setting",
    "mechanism",
    "k",
    "kbar",
    "epsilon",
    "delta",
    "neighbors",
    "queries",
    "trials",
    "recall_mean",
    "recall_std",
    "returned_mean",
    "epsilon_spent",
    "privacy",
    "mechanism_detail",
    "noise",
)
FIGURE = "recall.png"
# the papers' neighbours on a histogram of users' contributions (DESIGN.md: one user may move every count by one)
USER_NEIGHBOUR = {"add_remove": "one user added or removed", "replace": "one user's contributions replaced"}
_MARKERS = ("o", "s", "^", "D", "v", "P", "X", "<", ">", "*")


def _noise_line(rows: list[dict], config: dict) -> str:
    """Where the noise came from (``pate.experiments.topk.grid.noise_mode``): seeded runs carry no guarantee."""
    modes = _ordered(row.get("noise", "seeded") for row in rows)
    if modes == ["secure"]:
        return "Noise: secure (the operating system's entropy, never recorded): the runs cannot be replayed."
    return (
        f"Noise: seeded from seed {config.get('seed')} (`noise={config.get('noise', 'auto')}`), reproducible: "
        f"whoever holds the seed replays the noise, so these runs carry no guarantee themselves; each ε is what "
        f"the same mechanism guarantees with secret noise (`noise=secure`, the default where a file is read)."
    )


def _not_a_release(rows: list[dict]) -> list[str]:
    """Where a setting read a user's file: what this report computes from it without noise (a benchmark of the
    mechanisms on that data, not a private release of it), and the domain its ε assume."""
    if not any(row.get("from_file") for row in rows):
        return []
    return [
        "**Not a private release of the files' data**: the recall (against the true top-k), the data's "
        "statistics above (users, venues, the largest count) and δ = 1/n are computed from the files without "
        "noise, covered by no ε. Each ε holds between histograms over one fixed domain of venues, here the "
        "venues the file holds (a function of the data): a user who adds venues no one else visited changes the "
        "domain, which no ε here covers (for a guarantee, take the domain and δ from public knowledge).",
        "",
    ]


def _ordered(values) -> list:
    """Distinct values in first-seen order."""
    return list(dict.fromkeys(values))


def _panel(row: dict, panel_by: Sequence[str]) -> tuple:
    return tuple(row[key] for key in panel_by)


def _panel_title(panel: tuple, panel_by: Sequence[str], rows: list[dict]) -> str:
    parts = [
        f"{key}={value:g}" if isinstance(value, float) else f"{key}={value}" for key, value in zip(panel_by, panel)
    ]
    first = rows[0]
    queries = f"{first['queries']} quer{'y' if first['queries'] == 1 else 'ies'}"
    parts.append(f"delta={first['delta']:.3g}, {first['neighbors']}, {queries}")
    return ", ".join(parts)


def _csv(rows: list[dict]) -> bytes:
    buffer = io.StringIO()
    writer = csv.DictWriter(buffer, fieldnames=CSV_COLUMNS, extrasaction="ignore", lineterminator="\n")
    writer.writeheader()
    for row in rows:
        writer.writerow({key: (f"{row[key]:.6g}" if isinstance(row[key], float) else row[key]) for key in CSV_COLUMNS})
    return buffer.getvalue().encode()


def _figure(rows: list[dict], panel_by: Sequence[str], x_axis: str) -> bytes:
    panels = _ordered(_panel(row, panel_by) for row in rows)
    columns = min(3, len(panels))
    lines = math.ceil(len(panels) / columns)
    figure = Figure(figsize=(5.2 * columns, 3.8 * lines), constrained_layout=True)
    mechanisms = _ordered(row["mechanism"] for row in rows)
    for index, panel in enumerate(panels):
        axes = figure.add_subplot(lines, columns, index + 1)
        panel_rows = [row for row in rows if _panel(row, panel_by) == panel]
        xs = _ordered(row[x_axis] for row in panel_rows)
        numeric = all(isinstance(x, (int, float)) for x in xs)
        for number, mechanism in enumerate(mechanisms):
            series = {row[x_axis]: row for row in panel_rows if row["mechanism"] == mechanism}
            points = [x for x in xs if x in series]
            if not points:
                continue
            position = points if numeric else [xs.index(x) for x in points]
            mean = [series[x]["recall_mean"] for x in points]
            std = [series[x]["recall_std"] for x in points]
            axes.plot(position, mean, marker=_MARKERS[number % len(_MARKERS)], label=mechanism)
            axes.fill_between(
                position, [m - s for m, s in zip(mean, std)], [m + s for m, s in zip(mean, std)], alpha=0.15
            )
        if numeric:
            axes.set_xscale("log")
            axes.minorticks_off()  # label the grid's own values only (log minor labels collide)
            axes.set_xticks(xs, [f"{x:g}" for x in xs])
        else:
            axes.set_xticks(range(len(xs)), [str(x) for x in xs])
        axes.set_ylim(-0.02, 1.02)
        axes.set_xlabel(x_axis)
        axes.set_ylabel("recall of the true top-k")
        axes.set_title(_panel_title(panel, panel_by, panel_rows), fontsize=8)
        axes.grid(alpha=0.3)
        if index == 0:
            axes.legend(fontsize=7)
    canvas = FigureCanvasAgg(figure)
    buffer = io.BytesIO()
    canvas.print_png(buffer, metadata={"Software": None})
    return buffer.getvalue()


def _table(rows: list[dict], panel_by: Sequence[str], x_axis: str) -> list[str]:
    mechanisms = _ordered(row["mechanism"] for row in rows)
    lines = []
    for panel in _ordered(_panel(row, panel_by) for row in rows):
        panel_rows = [row for row in rows if _panel(row, panel_by) == panel]
        lines += [
            f"### {_panel_title(panel, panel_by, panel_rows)}",
            "",
            f"| {x_axis} | " + " | ".join(mechanisms) + " |",
            "|---" * (len(mechanisms) + 1) + "|",
        ]
        cells = {(row[x_axis], row["mechanism"]): row for row in panel_rows}
        for x in _ordered(row[x_axis] for row in panel_rows):
            best = max(cells[(x, m)]["recall_mean"] for m in mechanisms if (x, m) in cells)
            entries = []
            for mechanism in mechanisms:
                row = cells.get((x, mechanism))
                if row is None:
                    entries.append("")
                    continue
                text = f"{row['recall_mean']:.3f} ± {row['recall_std']:.3f} ({row['returned_mean']:.1f})"
                entries.append(f"**{text}**" if row["recall_mean"] == best else text)
            lines.append(f"| {x} | " + " | ".join(entries) + " |")
        lines.append("")
    return lines


def _wins(rows: list[dict], panel_by: Sequence[str], x_axis: str) -> list[str]:
    """Which mechanism has the best mean recall in how many cells (ties within 0.005 shared)."""
    groups = defaultdict(list)
    for row in rows:
        groups[_panel(row, panel_by) + (row[x_axis],)].append(row)
    wins = defaultdict(int)
    for group in groups.values():
        best = max(row["recall_mean"] for row in group)
        for row in group:
            if row["recall_mean"] >= best - 0.005:
                wins[row["mechanism"]] += 1
    ranking = sorted(wins.items(), key=lambda item: (-item[1], item[0]))
    return [f"- {mechanism}: best (within 0.005) in {count} of {len(groups)} cells" for mechanism, count in ranking]


def _privacy(rows: list[dict]) -> list[str]:
    lines = ["| mechanism | accountant | largest epsilon spent / target |", "|---|---|---|"]
    for mechanism in _ordered(row["mechanism"] for row in rows):
        own = [row for row in rows if row["mechanism"] == mechanism]
        worst = max(own, key=lambda row: row["epsilon_spent"] / row["epsilon"])
        ratio = worst["epsilon_spent"] / worst["epsilon"]
        where = f"at epsilon={worst['epsilon']:g}, k={worst['k']}"
        lines.append(f"| {mechanism} | {worst['privacy']} | {ratio:.4f} ({where}) |")
    return lines


def write_topk_report(rows: list[dict], config: dict[str, Any], out_dir) -> dict[str, Path]:
    """Write ``results.csv``, ``report.md`` and ``recall.png`` into ``out_dir``; returns their paths."""
    if not rows:
        raise ValueError("rows is empty: nothing to report")
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    experiment = config["topk_experiment"]
    panel_by, x_axis = list(experiment["panel_by"]), experiment["x_axis"]
    sources = _ordered(row["source"] for row in rows if "source" in row)
    mechanisms = _ordered(row["mechanism"] for row in rows)
    lines = [
        f"# {experiment['title']}",
        "",
        f"Relation: **{rows[0]['neighbors']}** on histograms of users' contributions (one neighbour: "
        f"{USER_NEIGHBOUR[rows[0]['neighbors']]}: a user-level guarantee, as in the papers; one user may move every "
        f"count by one); {rows[0]['trials']} trials per cell; recall = "
        "fraction of the true "
        "top-k returned (a bin tied with the k-th count counts as a true top-k bin), averaged over the queries of a "
        "trial. Entries: mean ± std over trials (mean number of indices returned). Best mean in bold.",
        "",
        "Data: " + "; ".join(sources) + ".",
        "",
        _noise_line(rows, config),
        "",
        *_not_a_release(rows),
        f"Mechanisms: {', '.join(mechanisms)}. Unknown-domain cut-off kbar = {config['kbar_factor']} x k "
        "(LD, TS, StableTopK).",
        "",
        "Versions: " + "; ".join(f"{key} {value}" for key, value in sorted(code_version().items())) + ".",
        "",
        f"![recall]({FIGURE})",
        "",
        "## Recall",
        "",
        *_table(rows, panel_by, x_axis),
        "## Who wins",
        "",
        *_wins(rows, panel_by, x_axis),
        "",
        "## Privacy",
        "",
        "Every mechanism is calibrated to each cell's (epsilon, delta) over the cell's queries by its own "
        "accountant, and the epsilon it spends is recomputed from the calibrated mechanism:",
        "",
        *_privacy(rows),
        "",
        "A ratio below 1 means the paper's own calibration of that mechanism (EM-CDP: zCDP in closed form; "
        "PNF-peel and JOINT: basic composition of pure DP) is more conservative than the accountant that "
        "recomputes its cost; the `_rdp` variants are calibrated by the RDP ledger itself.",
        "",
        "## Configuration",
        "",
        "```yaml",
        yaml.safe_dump(config, sort_keys=False).rstrip(),
        "```",
        "",
    ]
    paths = {"csv": out_dir / "results.csv", "report": out_dir / "report.md", "figure": out_dir / FIGURE}
    atomic_write_bytes(paths["csv"], _csv(rows))
    atomic_write_bytes(paths["figure"], _figure(rows, panel_by, x_axis))
    atomic_write_bytes(paths["report"], "\n".join(lines).encode())
    return paths
