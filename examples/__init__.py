"""The examples, importable from the repository root (``examples.custom_aggregator.MajorityRandomizedResponse`` is
the ``_target_`` of tests/aggregators/conf/aggregator/majority_rr.yaml). This file makes the folder a regular package:
Opacus installs a top-level ``examples`` package of its own, which would otherwise win over a folder without one.
Not shipped: pyproject.toml lists the wheel's packages, and this is not one of them."""
