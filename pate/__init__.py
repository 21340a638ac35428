"""Multi-label PATE with private top-k selection, Renyi-DP accounting and staged, cached pipelines."""

__version__ = "0.1.0"
