"""Private selection on vote histograms, vectorised over a batch of Q queries with one numpy Generator.

* ``gaps``: sorted counts padded with the public constants T and 0, their gaps, the top-k set;
* ``GapSelection``: report-noisy-max over the gaps (Gumbel / Gaussian / Laplace noise) -> k;
* ``GapTest``: propose-test-release on the chosen gap (Gaussian / Laplace) -> answer or not;
* ``noisy_threshold``: the Gaussian noisy threshold of multi-label PATE;
* ``binary_gnmax``, ``screen_labels``: binary voting (PATE 2018's GNMax per label) and its confident screen;
* ``DistanceTest`` and the box bounds of ``dd_release``: releasing under a tested data-dependent bound;
* ``PrivateKNN``: Private-kNN's subsampled nearest-neighbour votes and their noisy threshold;
* ``poisson_subsample``: Poisson sampling at exactly the rate priced (Private-kNN's subsamples, DP-SGD's batches).

Every mechanism object is immutable and carries its per-query cost (``rdp``, ``delta_per_query``,
``neighbors``, ``name``), so ``pate.privacy.Ledger`` composes it directly.
"""

from pate.lazy import lazy_names
from pate.mechanisms.binary_voting import binary_gnmax, screen_labels
from pate.mechanisms.dd_release import DistanceTest
from pate.mechanisms.gap_selection import SELECTIONS, GapSelection
from pate.mechanisms.gaps import count_gaps, sorted_padded_counts, top_k_labels
from pate.mechanisms.noise import sample_noise
from pate.mechanisms.noisy_threshold import noisy_threshold
from pate.mechanisms.ptr import TESTS, GapTest

# Private-kNN and the Poisson sampler compute with torch: imported on first use, so that the aggregators, the
# ledger and a run of ridge heads stay numpy-only (``import torch`` takes about 1.5 s).
__getattr__ = lazy_names(
    __name__,
    {
        **dict.fromkeys(["poisson_subsample", "realised_sampling_rate"], "pate.mechanisms.poisson"),
        **dict.fromkeys(["PrivateKNN", "subsampled_knn_votes"], "pate.mechanisms.private_knn"),
    },
)

__all__ = [
    "SELECTIONS",
    "TESTS",
    "DistanceTest",
    "GapSelection",
    "GapTest",
    "PrivateKNN",
    "binary_gnmax",
    "count_gaps",
    "noisy_threshold",
    "poisson_subsample",
    "realised_sampling_rate",
    "sample_noise",
    "screen_labels",
    "sorted_padded_counts",
    "subsampled_knn_votes",
    "top_k_labels",
]
