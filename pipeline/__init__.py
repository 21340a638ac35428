"""The PATE pipeline: the stage graph (``pipeline.graph``) and one run of it (``pipeline.runner``).

Imports flow one way: ``train.py`` -> ``pipeline`` -> ``teachers``, ``student`` -> ``training`` -> ``pate``.
See docs/architecture.md for the stage graph, the privacy unit and the public contract.
"""

from pipeline.runner import run, summary

__all__ = ["run", "summary"]
