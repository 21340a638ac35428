"""Where and when a run ran: recorded in its metrics.json (``host``), so that a report's figures, and the docs that
quote them, can say on what machine and on which day they were measured."""

from __future__ import annotations

import os
import platform
import time
from typing import Any

__all__ = ["cpu_model", "host"]


def cpu_model() -> str:
    """The CPU's model name from /proc/cpuinfo, else ``platform.processor()``, else "unknown"."""
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as cpuinfo:
            for line in cpuinfo:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown"


def host() -> dict[str, Any]:
    """``{"cpu", "logical_cpus", "platform", "accelerator", "finished_utc"}`` of this process now; ``accelerator``
    is the first CUDA device's name where torch sees one (whether or not the run used it), else None."""
    import torch

    return {
        "cpu": cpu_model(),
        "logical_cpus": os.cpu_count(),
        "platform": platform.platform(),
        "accelerator": torch.cuda.get_device_name(0) if torch.cuda.is_available() else None,
        "finished_utc": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
    }
