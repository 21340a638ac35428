"""Experiment runners that are not the PATE pipeline: the private top-k experiments of the papers (``topk``)."""
