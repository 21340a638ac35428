"""The student stage: a model trained on the aggregator's released labels of public queries only.

The names below are imported on first use (PEP 562): the ridge-head student needs no Lightning."""

from pate.lazy import lazy_names

__getattr__ = lazy_names(__name__, {"student_loader": "student.train", "train_student": "student.train"})

__all__ = ["student_loader", "train_student"]
