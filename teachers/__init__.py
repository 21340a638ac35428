"""Teachers: ensemble training with resume, the ridge heads on public features, and the vote stage's
predictions, each taking its settings (``teachers.settings``; ``pate.pipeline`` builds them from the config).
Shared training pieces (models, module, Trainer) live in ``teachers.training``, which the student reuses.

The names below are imported on first use (PEP 562): a run whose teachers are ridge heads never imports Lightning,
which the network teachers' training needs and which costs seconds at every start."""

from pate.lazy import lazy_names

_HOMES = {
    "HeadTeacherSettings": "teachers.settings",
    "NetworkTeacherSettings": "teachers.settings",
    "head_votes": "teachers.heads",
    "load_teacher": "teachers.predict",
    "predict_votes": "teachers.predict",
    "train_head_teachers": "teachers.heads",
    "train_teachers": "teachers.ensemble",
}


__getattr__ = lazy_names(__name__, _HOMES)


__all__ = [
    "HeadTeacherSettings",
    "NetworkTeacherSettings",
    "head_votes",
    "load_teacher",
    "predict_votes",
    "train_head_teachers",
    "train_teachers",
]
