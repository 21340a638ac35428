"""Label a batch of vote histograms with a PATE aggregator and price what it released (run from the repository:
``python examples/aggregate_votes.py``).

The teachers' votes are each teacher's label set per query, bool [queries, teachers, labels] (TauPATE caps each
teacher's vote vector, so it needs them; count-based aggregators such as GaussianPATE take their sums [queries,
labels]). Here they are simulated; in a run they come from the votes stage. The aggregator is calibrated to a target epsilon over the
queries, releases a label set per query, and the ledger composes one cost event per query and answers one
question: the epsilon at a delta, by the tightest valid accountant.
"""

import numpy as np

from pate.aggregators import TauPATE
from pate.privacy import Ledger

rng = np.random.default_rng(0)
num_queries, num_labels, num_teachers = 200, 40, 400
truth = rng.random((num_queries, num_labels)) < 0.25  # the labels the teachers mostly agree on
votes = rng.random((num_queries, num_teachers, num_labels)) < np.where(truth, 0.8, 0.1)[:, None, :]  # [Q, T, L]

aggregator = TauPATE(num_labels, num_teachers, sigma=50.0, tau=10, norm="l1", neighbors="replace")
aggregator, multiplier = aggregator.calibrated(target_epsilon=4.0, delta=1e-6, num_queries=num_queries)
released = aggregator(votes, rng=np.random.default_rng())  # secret noise: fresh entropy, nothing recorded

ledger = Ledger().compose(aggregator, count=num_queries)
priced = ledger.get_epsilon(delta=1e-6)
accuracy = (released.labels == truth)[released.answered].mean()
print(f"{aggregator.name}: {released.answered.sum()}/{num_queries} queries answered, label accuracy {accuracy:.3f}")
print(f"privacy: {priced.description}; one neighbour: one teacher's vote replaced")
