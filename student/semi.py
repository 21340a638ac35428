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
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
from omegaconf import DictConfig

METHODS = ("supervised", "pseudo_label")


@dataclass(frozen=True)
class SemiSupervision:
    """A checked ``student.semi`` node."""

    method: str = "supervised"
    keep_fraction: float = 0.5
    rounds: int = 1

    def __post_init__(self):
        if self.method not in METHODS:
            raise ValueError(f"student.semi.method={self.method!r}; expected one of {METHODS}")
        if isinstance(self.keep_fraction, bool) or not isinstance(self.keep_fraction, (int, float)) \
                or not 0 < self.keep_fraction <= 1:
            raise ValueError(f"student.semi.keep_fraction={self.keep_fraction!r}; expected a number in (0, 1]: the "
                             f"share of unlabeled entries per attribute that get a pseudo-label")
        if isinstance(self.rounds, bool) or not isinstance(self.rounds, int) or self.rounds < 1:
            raise ValueError(f"student.semi.rounds={self.rounds!r}; expected an integer >= 1")

    @classmethod
    def from_config(cls, student_cfg: DictConfig) -> SemiSupervision:
        node = student_cfg.get("semi")
        if node is None:
            return cls()
        return cls(method=str(node.method), keep_fraction=node.keep_fraction, rounds=node.rounds)

    @property
    def uses_unlabeled(self) -> bool:
        return self.method != "supervised"


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
