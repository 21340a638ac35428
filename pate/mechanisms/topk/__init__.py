"""Private top-k selection on plain histograms, under one batch protocol (``base``).

* ``EMPeeling`` (EM-CDP) and ``PNFPeeling``: peeling with the exponential mechanism / permute-and-flip;
* ``Joint``: the exponential mechanism over length-k sequences (Gillenwater et al. 2022);
* ``StableTopKFixed``: report-noisy-max over the gaps, PTR, peeling fill (Zhu & Wang 2022, Algorithm 3);
* ``LimitedDomain`` (Durfee & Rogers 2019) and ``TopStable`` (Carvalho et al. 2020): (epsilon, delta)
  statements, composed by their own theorems.
"""

from pate.mechanisms.topk.base import (
    DPStatement,
    PureEpsilonCost,
    TopKResult,
    check_histograms,
    sorted_order,
    top_k_recall,
)
from pate.mechanisms.topk.joint import Joint
from pate.mechanisms.topk.limited_domain import LimitedDomain, PayWhatYouGet
from pate.mechanisms.topk.peeling import EMPeeling, PNFPeeling, em_cdp_pick_epsilon, gumbel_peel
from pate.mechanisms.topk.stable_topk_fixed import StableTopKFixed
from pate.mechanisms.topk.top_stable import TopStable

__all__ = [
    "DPStatement",
    "EMPeeling",
    "Joint",
    "LimitedDomain",
    "PNFPeeling",
    "PayWhatYouGet",
    "PureEpsilonCost",
    "StableTopKFixed",
    "TopKResult",
    "TopStable",
    "check_histograms",
    "em_cdp_pick_epsilon",
    "gumbel_peel",
    "sorted_order",
    "top_k_recall",
]
