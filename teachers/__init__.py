"""Teachers: ensemble training with resume, the ridge heads on public features, and the vote stage's
predictions, each taking its settings (``teachers.settings``; ``pate.pipeline`` builds them from the config).
Shared training pieces (models, module, Trainer) live in ``teachers.training``, which the student reuses."""

from teachers.ensemble import train_teachers
from teachers.heads import head_votes, train_head_teachers
from teachers.predict import load_teacher, predict_votes
from teachers.settings import HeadTeacherSettings, NetworkTeacherSettings

__all__ = [
    "HeadTeacherSettings",
    "NetworkTeacherSettings",
    "head_votes",
    "load_teacher",
    "predict_votes",
    "train_head_teachers",
    "train_teachers",
]
