"""The student stage: a model trained on the aggregator's released labels of public queries only."""

from student.train import student_loader, train_student

__all__ = ["student_loader", "train_student"]
