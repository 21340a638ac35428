"""Methods: how a run turns the private data into released labels (``base.Method``), one module and one config
file (``conf/method/<name>.yaml``) each."""

from pate.pipeline.methods.base import Method, Release, RunSettings, SharedStages, method_settings
from pate.pipeline.methods.dp_sgd import DPSGD
from pate.pipeline.methods.pate import PATE
from pate.pipeline.methods.private_knn import PrivateKNNMethod

__all__ = ["DPSGD", "PATE", "Method", "PrivateKNNMethod", "Release", "RunSettings", "SharedStages", "method_settings"]
