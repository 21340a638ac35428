"""pate-report (or python -m pate.report) <sweep dir> [--out DIR] [--kind NAME] [--cache-dir DIR] [--publishable]:
write the report of a finished Hydra multirun, of the kind its config names (``report``) unless --kind names another,
with every job's epsilon replayed from its ledger in the cache (the one each job's config names, unless --cache-dir
names another); --publishable leaves out every statistic the epsilons do not cover (docs/reports.md)."""

from __future__ import annotations

import argparse
import sys

from pate.locations import command_name
from pate.report.generate import REPORTS, write_report


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog=command_name("pate-report", "pate.report"), description=__doc__)
    parser.add_argument("sweep_dir", help="the sweep directory (hydra.sweep.dir) of a finished multirun")
    parser.add_argument("--out", default=None, help="write the report here instead of into the sweep directory")
    parser.add_argument(
        "--kind",
        default=None,
        help=f"the report kind, one of {sorted(REPORTS)} (default: the one the sweep's config names)",
    )
    parser.add_argument(
        "--cache-dir",
        default=None,
        help="the artifact cache the sweep ran with (default: each job's paths.cache_dir, from the working directory)",
    )
    parser.add_argument(
        "--publishable",
        action="store_true",
        help="leave out every statistic the epsilons do not cover (teacher accuracy, the reference "
        "students, the data-dependent statistics, a seeded run's seed): the form to publish",
    )
    args = parser.parse_args(argv)
    try:
        report = write_report(args.sweep_dir, args.out, args.kind, args.cache_dir, args.publishable)
    except ValueError as err:
        print(f"error: {err}", file=sys.stderr)
        return 2
    for path in report.files.values():
        print(f"wrote {path}")
    for notice in report.notices():
        print(f"warning: {notice}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
