"""The figures the docs quote, rendered from the files the benchmarks write, never typed by hand.

    python benchmarks/figures.py           # rewrite every marked block of the pages from its file
    python benchmarks/figures.py --check   # exit 1 naming each block that differs from its file

A page marks a block with two lines::

    <!-- figures: benchmarks/results/mechanisms.json -->
    ... what benchmarks/figures.py renders from that file ...
    <!-- end figures -->

The file's ``benchmark`` field picks the renderer; every file carries its date, commit and machine
(benchmarks/record.py). A block is a bold title, the table and one source line (the file and its commit); the date
and the machine stay in the file. tests/test_docs_figures.py runs the check.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import re
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

from pate.report import Stat

ROOT = Path(__file__).resolve().parents[1]
PAGES = (
    ROOT / "README.md",
    *sorted((ROOT / "docs").glob("*.md")),
    ROOT / "benchmarks" / "README.md",
    *sorted((ROOT / "benchmarks" / "results").glob("*.md")),
)
# report_figures.py sits beside this file; loaded by path, not through sys.path, where this folder's teachers.py
# would shadow the package of that name for whoever imports this module (the tests do)
_spec = importlib.util.spec_from_file_location(
    "benchmarks_report_figures", Path(__file__).resolve().parent / "report_figures.py"
)
report_figures = sys.modules.setdefault(_spec.name, importlib.util.module_from_spec(_spec))
_spec.loader.exec_module(report_figures)
BLOCK = re.compile(r"^<!-- figures: (?P<file>\S+) -->\n(?P<body>.*?)^<!-- end figures -->$", re.MULTILINE | re.DOTALL)


def _check_markers(page: Path, text: str) -> None:
    """Every ``<!-- figures: ... -->`` line of ``page`` is closed by an ``<!-- end figures -->`` line before the next
    block opens: a missing or misspelt end marker would let :data:`BLOCK` run on to the next block's end and
    rewrite the prose between them."""
    opened = None  # the line of the block open at this point, if one is
    for number, line in enumerate(text.splitlines(), 1):
        opener = line.startswith("<!-- figures: ")
        if not opener and line != "<!-- end figures -->":
            continue
        if opener == (opened is not None):  # an opener inside an open block, or an end marker outside one
            where = f"line {opened}" if opened is not None else "no open block"
            raise ValueError(
                f"{page}:{number}: {line!r} follows {where}; each '<!-- figures: FILE -->' line needs "
                f"its own '<!-- end figures -->' line before the next block"
            )
        opened = number if opener else None
    if opened is not None:
        raise ValueError(f"{page}:{opened}: a figures block with no '<!-- end figures -->' line after it")


def _source(record: dict[str, Any], file: str, *details: str) -> str:
    return report_figures.source(file, [record["commit"]], *details)


def _minutes(seconds: float) -> str:
    minutes, rest = divmod(round(seconds), 60)
    return f"{minutes} min {rest:02d} s" if minutes else f"{rest} s"


def mechanisms(record: dict[str, Any], file: str) -> list[str]:
    targets = record["targets"]
    scaled = f", queries scaled by {record['scale']}" if record["scale"] != 1 else ""
    lines = [
        "**Aggregator throughput: vectorised against a per-query loop**",
        "",
        "| aggregator | L | vectorised q/s | per-query loop q/s | speedup |",
        "|---|---:|---:|---:|---:|",
    ]
    lines += [
        f"| {r['aggregator']} | {r['num_labels']} | {r['vectorised_qps']:,.0f} | {r['loop_qps']:,.0f} | "
        f"{r['speedup']:.1f}x |"
        for r in record["results"]
    ]
    lines += [
        "",
        _source(record, file, f"best of {record['repeats']} timed calls{scaled}"),
        "",
        f"Target (StableTopK at L = 40: >= {targets['stable_topk_L40_qps']:,.0f} q/s and >= "
        f"{targets['stable_topk_L40_speedup']:.0f}x its loop, for each selection): "
        f"{'met' if targets['met'] else 'NOT met'} in this run.",
    ]
    return lines


def topk_speed(record: dict[str, Any], file: str) -> list[str]:
    by_k: dict[str, dict[int, dict[str, Any]]] = {}
    for row in record["rows"]:
        by_k.setdefault(row["mechanism"], {})[row["k"]] = row
    ks = sorted({row["k"] for row in record["rows"]})
    header = " | ".join(f"k = {k}: batch s | histograms/s | loop s | ratio" for k in ks)
    lines = [
        "**Top-k selection: one batch against a per-histogram loop**",
        "",
        f"| mechanism | {header} |",
        "|---|" + "---:|" * (4 * len(ks)),
    ]
    for name, rows in by_k.items():
        cells = " | ".join(
            f"{rows[k]['batch_seconds']:.2f} | {rows[k]['histograms_per_second']:.0f} | "
            f"{rows[k]['loop_seconds']:.2f} | {rows[k]['ratio']:.1f}"
            for k in ks
        )
        lines.append(f"| {name} | {cells} |")
    return [*lines, "", _source(record, file, f"one batch of {record['batch']} histograms of {record['bins']} bins")]


def methods(record: dict[str, Any], file: str) -> list[str]:
    lines = [
        "**Each method's wall time, epsilon and accuracy**",
        "",
        "| method | whole run | its own stage | epsilon (replace, record-level, delta 1e-6) | accuracy |",
        "|---|---:|---:|---:|---:|",
    ]
    for row in record["rows"]:
        model = "the model" if row["method"].startswith("dp_sgd") else "student"
        lines.append(
            f"| {row['method']} | {row['wall_s']:.1f} s | {row['method_stage_s']:.1f} s | "
            f"{row['epsilon']:.3f} | {row['student_accuracy']:.4f} ({model}) |"
        )
    return [*lines, "", _source(record, file, f"seed {record['seed']}")]


def test_suite(record: dict[str, Any], file: str) -> list[str]:
    lines = [
        "**The test suite's wall time**",
        "",
        "| command | tests passed | skipped | wall time |",
        "|---|---:|---:|---:|",
    ]
    lines += [
        f"| `{run['command']}` | {run['passed']:,} | {run['skipped']} | {_minutes(run['wall_s'])} |"
        for run in record["runs"]
    ]
    return [*lines, "", _source(record, file)]


def _gigabytes(count: int) -> str:
    return f"{count / 1e9:.2f} GB"


def default_run(record: dict[str, Any], file: str) -> list[str]:
    stages = record["stages_s"]
    return [
        "**The default run, `python train.py`, by stage**",
        "",
        "| stage | " + " | ".join(stages) + " |",
        "|---|" + "---:|" * len(stages),
        "| seconds | " + " | ".join(f"{seconds:.1f}" for seconds in stages.values()) + " |",
        "",
        _source(record, file),
        "",
        f"`python train.py` from an empty data and cache directory: {_minutes(record['wall_s'])} in all; peak "
        f"memory {_gigabytes(record['peak_memory_bytes'])} resident; student accuracy "
        f"{record['student_accuracy']:.4f} at epsilon {record['epsilon']:.3f} ({record['neighbors']}, delta "
        f"{report_figures.delta(str(record['delta']))}). It leaves {_gigabytes(record['data_bytes'])} in data/ "
        f"and {_gigabytes(record['cache_bytes'])} in cache/; the environment it ran in (.venv) holds "
        f"{_gigabytes(record['environment_bytes'])}.",
    ]


def topk_runs(record: dict[str, Any], file: str) -> list[str]:
    return [
        "**Top-k experiments' wall time**",
        "",
        "| command | wall time |",
        "|---|---:|",
        *(f"| `{row['command']}` | {_minutes(row['wall_s'])} |" for row in record["rows"]),
        "",
        _source(record, file),
    ]


def teachers(record: dict[str, Any], file: str) -> list[str]:
    ts = sorted({row["teachers"] for extractor in record["extractors"].values() for row in extractor["by_teachers"]})
    most = ts[-1]
    columns = " | ".join(f"T = {t}" for t in ts)
    lines = [
        "**Teachers by feature extractor and number of teachers T**",
        "",
        f"| extractor (dims) | teacher accuracy, {columns} | vote at T = {most} | heads fit at T = {most} | "
        f"features stage |",
        "|---|" + "---:|" * (len(ts) + 3),
    ]
    for name, extractor in record["extractors"].items():
        rows = {row["teachers"]: row for row in extractor["by_teachers"]}
        accuracy = " | ".join(
            f"{100 * rows[t]['teacher_accuracy']:.1f}% (~{rows[t]['records_per_teacher']:.0f} faces)"
            if t in rows
            else "not measured"
            for t in ts
        )
        lines.append(
            f"| {name} ({extractor['dim']:,}) | {accuracy} | {100 * rows[most]['vote_accuracy']:.1f}% | "
            f"{rows[most]['teachers_per_second']:.0f} teachers/s | {extractor['features_seconds']:.1f} s |"
        )
    lines += [
        "",
        _source(record, file, f"{record['device']}, {record['torch_threads']} torch threads"),
        "",
        f"Majority class: {100 * record['majority_class_accuracy']:.1f}%.",
    ]
    if "small_cnn_loop" in record:
        loop = record["small_cnn_loop"]
        lines[-1] += (
            f" SmallCNN Lightning loop ({loop['teachers']} teachers, {loop['max_epochs']} epochs): "
            f"{loop['teachers_per_second']:.2f} teachers/s; the fastest heads above fit "
            f"{record['heads_over_cnn']:.0f}x as many teachers per second."
        )
    return lines


def synthetic_difficulty(record: dict[str, Any], file: str) -> list[str]:
    config = record["config"]
    lines = [
        "**Synthetic faces: test accuracy by training images**",
        "",
        "| trained on | images | mean test accuracy |",
        "|---|---:|---:|",
    ]
    names = {"majority": "majority class (no model)", "all": "all of the training split"}
    for name, accuracy in record["mean_accuracy"].items():
        label = names.get(name, f"one teacher of {name.removeprefix('1/')}")
        lines.append(f"| {label} | {record['train_images'][name]:,} | {accuracy:.3f} |")
    return [
        *lines,
        "",
        _source(
            record,
            file,
            f"{config['num_images']:,} faces ({config['render_size']} px rendered, {config['image_size']} px seen)",
            f"{config['steps']:,} steps of {config['batch']} per model",
        ),
    ]


def _over_seeds(values: list[float]) -> str:
    stat = Stat.of(values)
    return f"{stat.mean:.4f}" if stat.std is None else f"{stat.mean:.4f} ± {stat.std:.4f} ({stat.n} seeds)"


def _percent(fraction: float | None, digits: int = 2) -> str:
    return "-" if fraction is None else f"{100 * fraction:.{digits}f}%"


def teacher_levers(record: dict[str, Any], file: str) -> list[str]:
    low, high = (str(e) for e in record["epsilons"])
    lines: list[str] = []
    titles = {
        "filters": "**The random-patch filter bank (3 x 3 grid)**",
        "pool": "**The pooling grid (256 filters)** (the 3 x 3 default is the first row above)",
        "teachers": "**The number of teachers** (labels: TauPATE's released labels on the queries)",
        "faces": "**More faces per teacher: CelebA's scale** (labels: TauPATE's released labels; data stage: "
        "a new data set made, or read from a row above; first run: every stage not in the cache)",
    }

    def seconds(value: float | None) -> str:
        return "from the cache" if value is None else f"{value:.0f} s"

    for lever, title in titles.items():
        rows = [row for row in record["rows"] if row["lever"] == lever]
        if not rows:
            continue
        labelled, timed = lever in ("teachers", "faces"), lever == "faces"
        header = (
            f"| variant | teacher | vote |{' labels, epsilon ' + f'{low} / {high} |' if labelled else ''} "
            f"student, epsilon {low} | student, epsilon {high} | student on the vote | "
            f"{'data stage | ' if timed else ''}features stage | features on disk |"
            f"{' first run |' if timed else ''}"
        )
        lines += [*([""] if lines else []), title, "", header, "|---|" + "---:|" * header.count(" | ")]
        for row in rows:
            lines.append(
                f"| {row['label']} | {_percent(row['teacher'])} | {_percent(row['vote'])} |"
                + (
                    f" {_percent(row['labels'][low][0], 1)} / {_percent(row['labels'][high][0], 1)} |"
                    if labelled
                    else ""
                )
                + f" {_over_seeds(row['students'][low])} | {_over_seeds(row['students'][high])} | "
                f"{'-' if row['student_on_vote'] is None else format(row['student_on_vote'], '.4f')} | "
                f"{seconds(row['data_seconds']) + ' | ' if timed else ''}"
                f"{seconds(row['features_seconds'])} | {_gigabytes(row['features_bytes'])} |"
                f"{' ' + _minutes(row['first_run_s']) + ' |' if timed else ''}"
            )
    lines += ["", _source(record, file, record["neighbors"], f"delta {report_figures.delta(str(record['delta']))}")]
    if any(row.get("method", "").startswith("dp_sgd") for row in record["rows"]):
        lines += [
            "",
            'A DP-SGD row has no teachers, vote or released labels ("-"); its students are the released '
            "linear probe itself, trained on every private record (docs/methods.md).",
        ]
    return lines


def soft_votes(record: dict[str, Any], file: str) -> list[str]:
    lines = [
        "**Hard, soft and threshold votes by number of teachers**",
        "",
        "| teachers | faces per teacher | teacher | hard vote | soft vote | soft - hard | teacher, thresholds "
        "| vote, thresholds | thresholds - hard |",
        "|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    lines += [
        f"| {row['teachers']} | ~{row['faces_per_teacher']:.0f} | {_percent(row['teacher_accuracy'])} | "
        f"{_percent(row['hard_vote'])} | {_percent(row['soft_vote'])} | "
        f"{100 * (row['soft_vote'] - row['hard_vote']):+.2f} points | "
        f"{_percent(row['threshold_teacher_accuracy'])} | {_percent(row['threshold_vote'])} | "
        f"{100 * (row['threshold_vote'] - row['hard_vote']):+.2f} points |"
        for row in record["rows"]
    ]
    return [
        *lines,
        "",
        _source(
            record,
            file,
            f"{record['images']:,} images, the {record['pool']} x {record['pool']} "
            f"grid, the non-private vote on {record['queries']} queries",
        ),
    ]


def teacher_engines(record: dict[str, Any], file: str) -> list[str]:
    engines = record["cnn_engines"]
    loop, batched = engines["loop"], engines["batched"]
    return [
        "**Teacher training: a loop of teachers against batched teachers**",
        "",
        "| device | model | teachers of | loop | batched | batched / loop |",
        "|---|---|---:|---:|---:|---:|",
        f"| {engines['device_name']} ({engines['precision']}) | {engines['model']}, {engines['image_size']} px | "
        f"~{engines['records_per_teacher']:.0f} faces, 1 epoch | {loop['teacher_epochs_per_second']:.2f} "
        f"teacher-epochs/s ({loop['teachers']} teachers) | {batched['teacher_epochs_per_second']:.2f} "
        f"teacher-epochs/s ({batched['teachers']} teachers, G = {engines['group']}, "
        f"{_minutes(batched['seconds'])}) | "
        f"**{engines['batched_over_loop']:.2f}x** |",
        "",
        _source(record, file, f"{record['torch_threads']} torch threads"),
    ]


def private_knn_settings(record: dict[str, Any], file: str) -> list[str]:
    runs = record["runs"]
    epsilons = sorted({run["target_epsilon"] for run in runs})
    by = {(run["k"], run["sampling_rate"], run["target_epsilon"]): run for run in runs}
    limit = "noise_free_student_accuracy" in runs[0]  # each setting's privacy-free limit, one per (k, gamma)
    head = "".join(f" labels, ε {e:g} | student, ε {e:g} |" for e in epsilons) + (" student, noise zero |" * limit)
    lines = [
        "**Private-kNN by k and sampling rate gamma**",
        "",
        f"| k | gamma |{head}",
        "|---:|---:|" + "---:|---:|" * len(epsilons) + "---:|" * limit,
    ]
    for k, rate in sorted({(run["k"], run["sampling_rate"]) for run in runs}):
        cells = "".join(
            f" {by[k, rate, e]['label_accuracy']:.4f} | {by[k, rate, e]['student_accuracy']:.4f} |" for e in epsilons
        )
        cells += f" {by[k, rate, epsilons[0]]['noise_free_student_accuracy']:.4f} |" if limit else ""
        lines.append(f"| {k} | {rate:g} |{cells}")
    first = runs[0]
    return [
        *lines,
        "",
        _source(
            record,
            file,
            f"seed {record['seed']}, {first['neighbors']} (record-level), "
            f"delta {first['delta']:g}, priced by the tightest accountant",
        ),
    ]


def accountants(record: dict[str, Any], file: str) -> list[str]:
    targets = sorted({row["target_epsilon"] for row in record["rows"]})
    lines = [
        "**Noise calibrated by the RDP bound -> by the tightest valid epsilon**",
        "",
        f"| method (its noise) | one neighbour | {' | '.join(f'epsilon {t:g}' for t in targets)} | tightest by | "
        f"noise of epsilon {targets[-1]:g} by RDP, priced by RDP / GDP / PLD |",
        f"|---|---|{'---:|' * len(targets)}---|---|",
    ]
    cells: dict[tuple[str, str], dict[float, dict[str, Any]]] = {}
    for row in record["rows"]:
        cells.setdefault((row["method"], row["unit"]), {})[row["target_epsilon"]] = row
    for (method, unit), by_target in cells.items():
        noise = " | ".join(
            f"{by_target[t]['rdp_noise']:.4g} -> {by_target[t]['tightest_noise']:.4g}"
            + (f" ({by_target[t]['noise_saved']:.1%} less)" if by_target[t]["accountant"] != "rdp" else "")
            for t in targets
        )
        priced = by_target[targets[-1]]["at_rdp_noise"]
        epsilons = " / ".join(
            "none" if priced[name] is None else f"{priced[name]:.3f}" for name in ("rdp", "gdp", "pld")
        )
        name = by_target[targets[-1]]["noise"]
        lines.append(f"| {method} ({name}) | {unit} | {noise} | {by_target[targets[-1]]['accountant']} | {epsilons} |")
    return [
        *lines,
        "",
        _source(
            record,
            file,
            f"{record['queries']} queries (DP-SGD: its steps), delta "
            f"{record['delta']:g}, each calibrated to within {record['rtol']:g} "
            f"relative below its target",
        ),
    ]


def default_run_console(record: dict[str, Any], file: str) -> list[str]:
    return ["```", *record["console"], "```"]


def default_run_predict(record: dict[str, Any], file: str) -> list[str]:
    predict = record["predict"]
    return ["```", f"$ {predict['command']}", *predict["output"], "```"]


# (benchmark, part) -> renderer; a block names a part after its file: ``<!-- figures: path.json#console -->``.
RENDERERS: dict[tuple[str, str], Callable[[dict[str, Any], str], list[str]]] = {
    ("benchmarks/mechanisms.py", ""): mechanisms,
    ("benchmarks/topk_speed.py", ""): topk_speed,
    ("benchmarks/methods.py", ""): methods,
    ("benchmarks/test_suite.py", ""): test_suite,
    ("benchmarks/default_run.py", ""): default_run,
    ("benchmarks/default_run.py", "console"): default_run_console,
    ("benchmarks/default_run.py", "predict"): default_run_predict,
    ("benchmarks/topk_runs.py", ""): topk_runs,
    ("benchmarks/teachers.py", ""): teachers,
    ("benchmarks/synthetic_difficulty.py", ""): synthetic_difficulty,
    ("benchmarks/teacher_levers.py", ""): teacher_levers,
    ("benchmarks/teachers.py", "engines"): teacher_engines,
    ("benchmarks/soft_votes.py", ""): soft_votes,
    ("benchmarks/accountants.py", ""): accountants,
    ("benchmarks/private_knn_settings.py", ""): private_knn_settings,
}


def render(spec: str) -> str:
    """The block of ``spec`` (a file's path relative to the repository root, ``#part`` optional), as a page holds
    it."""
    file, _, part = spec.partition("#")
    if file.endswith(".csv"):  # a committed sweep report's rows
        return "\n".join(report_figures.render(ROOT / file, file, part)) + "\n"
    record = json.loads((ROOT / file).read_text())
    missing = [key for key in ("benchmark", "date_utc", "commit", "machine") if key not in record]
    if missing:
        raise ValueError(
            f"{file}: no {', '.join(missing)}: a quoted figure says when, at which commit and on what "
            f"machine it was measured (benchmarks/record.py)"
        )
    if (record["benchmark"], part) not in RENDERERS:
        raise ValueError(
            f"{spec}: benchmark {record['benchmark']!r} has no renderer of part {part!r}; known: {sorted(RENDERERS)}"
        )
    return "\n".join(RENDERERS[record["benchmark"], part](record, file)) + "\n"


def stale_blocks(page: Path) -> list[str]:
    """``page:line: file`` of each block of ``page`` that differs from what its file renders."""
    text, name = page.read_text(), page.relative_to(ROOT) if page.is_relative_to(ROOT) else page
    _check_markers(name, text)
    return [
        f"{name}:{text[: match.start()].count(chr(10)) + 1}: {match['file']}"
        for match in BLOCK.finditer(text)
        if match["body"] != render(match["file"])
    ]


def rewrite(page: Path) -> bool:
    """Render every block of ``page`` from its file (atomically); whether anything changed."""
    text = page.read_text()
    _check_markers(page, text)
    new = BLOCK.sub(lambda m: f"<!-- figures: {m['file']} -->\n{render(m['file'])}<!-- end figures -->", text)
    if new == text:
        return False
    with tempfile.NamedTemporaryFile("w", dir=page.parent, prefix=f".{page.name}-", delete=False) as handle:
        handle.write(new)
    os.chmod(handle.name, page.stat().st_mode)
    os.replace(handle.name, page)
    return True


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--check", action="store_true", help="only report the blocks that differ from their files")
    args = parser.parse_args(argv)
    if args.check:
        stale = [block for page in PAGES for block in stale_blocks(page)]
        for block in stale:
            print(f"stale: {block}", file=sys.stderr)
        return 1 if stale else 0
    for page in PAGES:
        if rewrite(page):
            print(f"rewrote {page.relative_to(ROOT)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
