"""The PATE pipeline: the stage graph (``pate.pipeline.graph``) and one run of it (``pate.pipeline.runner``).

The one part of ``pate`` above the teachers and the student: it wires them into runs and holds the command lines
(``pate-train``, ``pate-topk``). Imports flow one way: ``pate.pipeline`` -> ``student`` -> ``teachers`` ->
the library (the rest of ``pate``, which imports neither them nor Lightning; pyproject.toml's import contracts).
See docs/architecture.md for the stage graph, the privacy unit and the public contract.
"""

from pate.pipeline.runner import run, summary

__all__ = ["run", "summary"]
