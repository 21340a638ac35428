"""Black-box privacy audits: every shipped mechanism, aggregator and method is run (or its output law computed
from its code) on neighbouring inputs built by applying the relation's definition to the input the code takes,
and the measured divergence, or a Monte Carlo lower bound on epsilon, is compared with what its ledger claims."""
