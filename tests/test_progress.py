"""Progress bars redraw at tqdm's pace on a terminal and at most every LOG_INTERVAL seconds in a log file."""

from __future__ import annotations

import io
import sys

from pate.progress import LOG_INTERVAL, progress_bar


class _Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_a_log_file_gets_few_redraws(monkeypatch):
    monkeypatch.setattr(sys, "stderr", io.StringIO())
    with progress_bar(total=10_000, desc="x") as bar:
        for _ in range(10_000):
            bar.update()
        assert bar.mininterval == LOG_INTERVAL
    assert sys.stderr.getvalue().count("\r") <= 3  # the first draw, the last one and the close


def test_a_terminal_keeps_tqdms_pace(monkeypatch):
    monkeypatch.setattr(sys, "stderr", _Terminal())
    with progress_bar(range(3), desc="x") as bar:
        assert bar.mininterval == 0.1
