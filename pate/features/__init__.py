"""Public feature extractors, their cached feature stage, and batched ridge heads on top of them.

No Lightning here; torch for the convolutions and batched linear algebra (a GPU helps both)."""

from pate.features.extractors import (
    Extractor,
    PixelFeatures,
    RandomConvFeatures,
    RandomPatchFeatures,
    TorchvisionFeatures,
)
from pate.features.ridge import RidgeHead, RidgeHeads, fit_ridge_heads, head_scores, head_weights
from pate.features.ssl import SimCLRFeatures
from pate.features.stage import (
    FeatureTable,
    build_features,
    choose_fit_rows,
    fit_extractor,
    read_features,
    write_features,
)

__all__ = [
    "Extractor",
    "FeatureTable",
    "PixelFeatures",
    "RandomConvFeatures",
    "RandomPatchFeatures",
    "RidgeHead",
    "RidgeHeads",
    "SimCLRFeatures",
    "TorchvisionFeatures",
    "build_features",
    "choose_fit_rows",
    "fit_extractor",
    "fit_ridge_heads",
    "head_scores",
    "head_weights",
    "read_features",
    "write_features",
]
