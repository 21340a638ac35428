"""The student stage: a model trained on the aggregator's released labels of public queries only.

The names below are imported on first use (PEP 562): the ridge-head student needs no Lightning."""

import importlib


def __getattr__(name: str):
    if name not in ("student_loader", "train_student"):
        raise AttributeError(f"module 'student' has no attribute {name!r}")
    return getattr(importlib.import_module("student.train"), name)


__all__ = ["student_loader", "train_student"]
