"""Privacy accounting for PATE: RDP curves, sensitivities, conversions, cost events, the accountant that prices
them, the ledger, noise calibration, the exact profile of composed Gaussians (``gdp``) and privacy loss
distributions (``pld``).

numpy, scipy (the normal tails of the data-dependent bounds and of GDP, root finding) and dp-accounting (its
``DpEvent`` s describe every release; the privacy loss distributions of ``pld``); imports nothing else of the
project.
Every sensitivity derives from the neighbouring relation in ``pate.privacy.sensitivity``; every curve and
conversion documents its formula and source.
"""

from pate.privacy.calibration import calibrate, calibrate_noise
from pate.privacy.composition import (
    advanced_composition,
    basic_composition,
    bounded_range_composition,
    replace_from_add_remove,
    solve_per_query,
    zcdp_epsilon,
    zcdp_rho_for,
)
from pate.privacy.conversion import delta_from_rdp, epsilon_from_rdp, epsilon_from_rdp_classic
from pate.privacy.curves import (
    exponential_mechanism_rdp,
    gaussian_rdp,
    laplace_rdp,
    poisson_sampled_gaussian_rdp,
    poisson_sampled_gaussian_replace_rdp,
    pure_dp_rdp,
    report_noisy_max_rdp,
)
from pate.privacy.accountant import Price, PricedByEvent, price
from pate.privacy.events import (
    ApproximateEvent,
    BoundedRangeEvent,
    CostEvent,
    DpEvent,
    PureDpEvent,
    RdpAtOrderEvent,
    RdpCurveEvent,
    ReplaceSampledGaussianEvent,
    ReportNoisyMaxEvent,
    TightestOfEvent,
    check_event,
    children,
    data_dependent,
    event_from_dict,
    event_to_dict,
    gaussian_event,
    laplace_event,
    owned_copy,
    sampled_gaussian_steps,
)
from pate.privacy.gdp import gaussian_mu, gdp_delta, gdp_epsilon
from pate.privacy.ledger import ACCOUNTANT_TEXT, ACCOUNTANTS, Ledger, check_accountant
from pate.privacy.pld import pld_epsilon, privacy_loss_distribution
from pate.privacy.unit import PrivacyUnit, privacy_unit
from pate.privacy.orders import DEFAULT_ORDERS
from pate.privacy.sensitivity import (
    RELATIONS,
    NeighboringRelation,
    binary_vote_l2_sensitivity,
    check_relation,
    clipped_gradient_sum_sensitivity,
    clipped_threshold_l2_sensitivity,
    clipped_vote_l1_sensitivity,
    clipped_vote_l2_sensitivity,
    count_l2_sensitivity,
    count_selection_range,
    gap_sensitivity,
    knn_vote_l2_sensitivity,
)

__all__ = [
    "ApproximateEvent",
    "BoundedRangeEvent",
    "CostEvent",
    "DpEvent",
    "Price",
    "PricedByEvent",
    "PureDpEvent",
    "RdpAtOrderEvent",
    "RdpCurveEvent",
    "ReportNoisyMaxEvent",
    "TightestOfEvent",
    "event_from_dict",
    "sampled_gaussian_steps",
    "owned_copy",
    "laplace_event",
    "gaussian_event",
    "event_to_dict",
    "data_dependent",
    "children",
    "check_event",
    "ReplaceSampledGaussianEvent",
    "poisson_sampled_gaussian_rdp",
    "poisson_sampled_gaussian_replace_rdp",
    "price",
    "ACCOUNTANTS",
    "ACCOUNTANT_TEXT",
    "DEFAULT_ORDERS",
    "Ledger",
    "PrivacyUnit",
    "NeighboringRelation",
    "RELATIONS",
    "advanced_composition",
    "basic_composition",
    "bounded_range_composition",
    "binary_vote_l2_sensitivity",
    "calibrate",
    "calibrate_noise",
    "check_accountant",
    "check_relation",
    "clipped_gradient_sum_sensitivity",
    "clipped_threshold_l2_sensitivity",
    "clipped_vote_l1_sensitivity",
    "clipped_vote_l2_sensitivity",
    "count_l2_sensitivity",
    "count_selection_range",
    "delta_from_rdp",
    "epsilon_from_rdp",
    "epsilon_from_rdp_classic",
    "exponential_mechanism_rdp",
    "gap_sensitivity",
    "knn_vote_l2_sensitivity",
    "gaussian_mu",
    "gaussian_rdp",
    "gdp_delta",
    "gdp_epsilon",
    "laplace_rdp",
    "pld_epsilon",
    "privacy_unit",
    "privacy_loss_distribution",
    "pure_dp_rdp",
    "replace_from_add_remove",
    "report_noisy_max_rdp",
    "solve_per_query",
    "zcdp_epsilon",
    "zcdp_rho_for",
]
