"""Semi-supervised learning from the public pool: what ``student.semi`` configures, and the pseudo-labels.

Every image of the public pool is free; only labels cost privacy. Besides the answered queries with their
released labels, the student may use the pool's other images (unanswered queries included) without labels.
Using them is post-processing of released data plus public images, so it costs no privacy budget.

``method``:
* ``supervised``: the released labels only;
* ``pseudo_label``: self-training (Lee 2013, "Pseudo-Label"; Scudder 1965): fit on the released labels,
  predict the unlabeled images, keep a hard pseudo-label wherever the prediction is confident, refit on both;
  ``rounds`` times. Confidence is per attribute: for attribute l, the unlabeled entries whose distance from the
  decision value 1/2 is among the top ``keep_fraction`` of that attribute's (:func:`confident_pseudo_labels`),
  so a rare attribute is judged against its own scores, not against a common one's.
* ``consistency``: FixMatch (Sohn et al. 2020, "FixMatch: Simplifying Semi-Supervised Learning with Consistency
  and Confidence", Alg. 1), adapted to multi-label: the prediction on a weakly augmented view of an unlabeled
  image gives hard pseudo-labels; where confident (the per-attribute threshold above, in place of FixMatch's
  single softmax threshold, which has no meaning for 40 independent Bernoullis) they are the targets of the
  prediction on a *strongly* augmented view of the same image, with weight ``unlabeled_weight`` (FixMatch's
  lambda_u). Strong views are :func:`pate.features.ssl.augment` (random-resized crop down to ``min_scale`` of
  the area, flip, brightness and contrast in [1 - jitter, 1 + jitter]).
  - CNN student: each step adds a batch of ``unlabeled_ratio`` x ``batch_size`` unlabeled images (FixMatch's
    mu); weak view = a random flip; thresholds per attribute within that batch.
  - head student: the features of one strong view per unlabeled image (the ``views`` stage) join the refit,
    with the pseudo-labels of the image's own features (the weak view) where confident and the head's current
    score on the strong view elsewhere (a neutral target, as in ``pseudo_label``); ``rounds`` times.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

METHODS = ("supervised", "pseudo_label", "consistency")


@dataclass(frozen=True)
class SemiSupervision:
    """How the student learns from the unlabeled pool (module docstring): ``student.semi``, checked here (the pipeline
    builds it from the config: ``pate.pipeline.settings.semi_supervision``)."""

    method: str = "supervised"
    keep_fraction: float = 0.5
    rounds: int = 1
    unlabeled_weight: float = 1.0
    unlabeled_ratio: int = 1
    min_scale: float = 0.5
    jitter: float = 0.3

    def __post_init__(self):
        if self.method not in METHODS:
            raise ValueError(f"student.semi.method={self.method!r}; expected one of {METHODS}")
        _number_in(
            "keep_fraction",
            self.keep_fraction,
            0,
            1,
            "the share of unlabeled entries per attribute that get a pseudo-label",
        )
        _number_in("min_scale", self.min_scale, 0, 1, "the smallest share of the image a strong view keeps")
        _number_in("jitter", self.jitter, 0, 1, "the brightness and contrast range of a strong view", low_open=False)
        _number_in("unlabeled_weight", self.unlabeled_weight, 0, float("inf"), "the weight of the unlabeled loss")
        for key in ("rounds", "unlabeled_ratio"):
            value = getattr(self, key)
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise ValueError(f"student.semi.{key}={value!r}; expected an integer >= 1")

    @property
    def uses_unlabeled(self) -> bool:
        return self.method != "supervised"


def _number_in(key: str, value, low: float, high: float, what: str, low_open: bool = True) -> None:
    """Refuse ``student.semi.<key>`` unless it is a number in (low, high] (or [low, high] with low_open=False)."""
    number = not isinstance(value, bool) and isinstance(value, (int, float))
    if not number or not (low < value if low_open else low <= value) or not value <= high:
        interval = f"{'(' if low_open else '['}{low:g}, {high:g}{']' if high != float('inf') else ')'}"
        raise ValueError(f"student.semi.{key}={value!r}; expected a number in {interval}: {what}")


def confident_pseudo_labels(scores: torch.Tensor, keep_fraction: float) -> tuple[torch.Tensor, torch.Tensor]:
    """(hard pseudo-labels, confident mask), both [U, L], from scores [U, L] whose decision value is 1/2
    (probabilities, or a ridge head's regression scores). Entry (u, l) is confident iff |s_ul - 1/2| is at least
    the (1 - keep_fraction) quantile of attribute l's |s - 1/2| over the U images: a per-attribute threshold."""
    if scores.ndim != 2 or scores.shape[0] < 1:
        raise ValueError(f"scores must be [U >= 1, L], got shape {tuple(scores.shape)}")
    confidence = (scores.double() - 0.5).abs()
    threshold = torch.quantile(confidence, 1 - float(keep_fraction), dim=0, keepdim=True)
    return (scores > 0.5).float(), confidence >= threshold


__all__ = ["METHODS", "SemiSupervision", "confident_pseudo_labels"]
