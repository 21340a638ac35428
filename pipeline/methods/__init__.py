"""Methods: how a run turns the private data into released labels (``base.Method``), one module and one config
file (``conf/method/<name>.yaml``) each."""

from pipeline.methods.base import Method, Release, SharedStages
from pipeline.methods.pate import PATE

__all__ = ["PATE", "Method", "Release", "SharedStages"]
