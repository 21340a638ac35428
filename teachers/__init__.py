"""Teachers: the model zoo, the LightningModule, ensemble training with resume and the vote stage's predictions."""

from teachers.data import IndexedImages, make_loader
from teachers.ensemble import build_trainer, train_teachers
from teachers.models import SmallCNN, resnet
from teachers.module import MultiLabelModule
from teachers.votes import load_teacher, predict_votes

__all__ = [
    "IndexedImages",
    "MultiLabelModule",
    "SmallCNN",
    "build_trainer",
    "load_teacher",
    "make_loader",
    "predict_votes",
    "resnet",
    "train_teachers",
]
