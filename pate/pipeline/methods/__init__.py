"""Methods: how a run turns the private data into released labels (``base.Method``), one module and one config
file (``conf/method/<name>.yaml``) each."""

from pate.pipeline.methods.base import Method, Release, SharedStages, with_semi
from pate.pipeline.methods.dp_sgd import DPSGD
from pate.pipeline.methods.pate import PATE
from pate.pipeline.methods.private_knn import PrivateKNNMethod

__all__ = ["DPSGD", "PATE", "Method", "PrivateKNNMethod", "Release", "SharedStages", "with_semi"]
