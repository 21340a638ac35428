"""Face attributes for the synthetic CelebA: a small latent-variable model with CelebA's prevalences.

Generative model (all of it in this file; ``synthetic_render`` only draws what is sampled here):

* latents per face: ``Male ~ Bernoulli(0.4168)``; ``sex = +1`` (male) / ``-1``; ``age ~ N(0.4 sex, 1)`` (CelebA's
  men are older on average); ``glam`` (grooming / fashion), ``build`` (body weight), ``mood`` and ``beauty``
  are independent ``N(0, 1)``.
* then, in the order of ``GRAPH``, each attribute is drawn given the latents and the attributes before it:
  a binary ``Node`` is present with probability ``implied + (1 - implied) * gate * sigmoid(b + w . x)``
  (``gate`` is 0 when a required attribute is absent or an excluded one present, ``implied`` is 1 when an
  implying attribute is present); a ``Choice`` draws at most one of its options from a softmax with an
  implicit "none of them" option of logit 0 (for example "none of the four hair colours": CelebA leaves hair
  colour unlabelled for about a third of its images).
* the intercepts ``b`` are not hand-set: ``calibrated_intercepts`` solves them on a fixed reference sample so
  that every attribute's marginal prevalence equals ``PREVALENCE`` (CelebA's). The weights ``w`` only shape
  the correlations; they are round numbers chosen for plausibility (signs from common sense and from CelebA's
  well-known co-occurrences), not fitted to anything, and in particular not tuned for any aggregator.
* finally ``annotate`` adds a small annotation noise to the published labels of the subjective attributes.

Hard constraints (hold on every row of both the true and the published labels; see ``HARD_CONSTRAINTS``):
the four hair colours and Bald are mutually exclusive; Bald excludes Bangs, Straight_Hair, Wavy_Hair,
Receding_Hairline and Wearing_Hat (a hat would hide it); Straight_Hair and Wavy_Hair exclude each other;
only men have facial hair, Goatee or Mustache imply No_Beard = 0, Sideburns and 5_o_Clock_Shadow only occur
on men and 5_o_Clock_Shadow (stubble) only without a beard; Heavy_Makeup implies Wearing_Lipstick.
Soft ones come from the weights: lipstick, make-up, earrings and necklaces are rare on men, neckties on
women, Gray_Hair on the young, and so on.
"""

from __future__ import annotations

import functools
from collections.abc import Mapping
from dataclasses import dataclass, field

import numpy as np

from pate.data.celeba import ATTRIBUTE_NAMES

# Fraction of images labelled +1 for each attribute, over all 202,599 images of CelebA's list_attr_celeba.txt
# (Liu et al., ICCV 2015), as commonly reported (e.g. in the class-imbalance literature on CelebA); rounded
# to four digits. This is the only source of the synthetic marginals.
PREVALENCE: Mapping[str, float] = {
    "5_o_Clock_Shadow": 0.1111,
    "Arched_Eyebrows": 0.2670,
    "Attractive": 0.5125,
    "Bags_Under_Eyes": 0.2046,
    "Bald": 0.0224,
    "Bangs": 0.1516,
    "Big_Lips": 0.2408,
    "Big_Nose": 0.2345,
    "Black_Hair": 0.2393,
    "Blond_Hair": 0.1480,
    "Blurry": 0.0509,
    "Brown_Hair": 0.2052,
    "Bushy_Eyebrows": 0.1422,
    "Chubby": 0.0576,
    "Double_Chin": 0.0467,
    "Eyeglasses": 0.0651,
    "Goatee": 0.0628,
    "Gray_Hair": 0.0419,
    "Heavy_Makeup": 0.3870,
    "High_Cheekbones": 0.4550,
    "Male": 0.4168,
    "Mouth_Slightly_Open": 0.4834,
    "Mustache": 0.0415,
    "Narrow_Eyes": 0.1152,
    "No_Beard": 0.8349,
    "Oval_Face": 0.2842,
    "Pale_Skin": 0.0429,
    "Pointy_Nose": 0.2772,
    "Receding_Hairline": 0.0798,
    "Rosy_Cheeks": 0.0657,
    "Sideburns": 0.0565,
    "Smiling": 0.4821,
    "Straight_Hair": 0.2084,
    "Wavy_Hair": 0.3196,
    "Wearing_Earrings": 0.1889,
    "Wearing_Hat": 0.0485,
    "Wearing_Lipstick": 0.4724,
    "Wearing_Necklace": 0.1230,
    "Wearing_Necktie": 0.0727,
    "Young": 0.7736,
}

LATENT_NAMES: tuple[str, ...] = ("age", "glam", "build", "mood", "beauty")
_AGE_SHIFT_PER_SEX = 0.4

# Where the set shows people with several images each (``sample_attributes(..., person=...)``), what one person's
# images share: the latents of who they are (sex, age, style, build, beauty; not ``mood``, the expression) and the
# attributes that are the person's own -- age, hair colour and texture, hairline, eyebrows, face shape, nose, skin
# (``PERSON_NODES``, whose inputs are all shared). Everything else varies from image to image: expression,
# make-up, facial hair, accessories, bangs, blur.
PERSON_LATENTS: tuple[str, ...] = ("age", "glam", "build", "beauty")
PERSON_NODES: tuple[str, ...] = (
    "Young",
    "Bald",  # the hair colour choice (Bald, Black, Blond, Brown, Gray), named by its first option
    "Straight_Hair",  # the hair texture choice (Straight, Wavy)
    "Receding_Hairline",
    "Bushy_Eyebrows",
    "Chubby",
    "Double_Chin",
    "Oval_Face",
    "Big_Nose",
    "Pointy_Nose",
    "Pale_Skin",
)


@dataclass(frozen=True)
class Node:
    """A binary attribute: ``P = implied + (1 - implied) * gate * sigmoid(b + sum_f weights[f] * x_f)``."""

    name: str
    weights: Mapping[str, float] = field(default_factory=dict)  # feature (latent or earlier attribute) -> weight
    requires: tuple[str, ...] = ()  # absent unless all of these are present
    excludes: tuple[str, ...] = ()  # absent if any of these is present
    implied_by: tuple[str, ...] = ()  # present if any of these is present


@dataclass(frozen=True)
class Choice:
    """Mutually exclusive attributes: at most one option, softmax over options plus "none" (logit 0)."""

    options: tuple[str, ...]
    weights: Mapping[str, Mapping[str, float]]  # option -> feature -> weight
    excludes: tuple[str, ...] = ()  # none of the options if any of these is present


# "Beard" is internal (any facial hair); the published No_Beard is its complement. Male is drawn first.
GRAPH: tuple[Node | Choice, ...] = (
    Node("Young", {"age": -2.0}),
    Choice(
        ("Bald", "Black_Hair", "Blond_Hair", "Brown_Hair", "Gray_Hair"),
        {
            "Bald": {"sex": 3.0, "age": 1.5},
            "Black_Hair": {"sex": 0.2},
            "Blond_Hair": {"sex": -1.2, "glam": 0.4},
            "Brown_Hair": {},
            "Gray_Hair": {"age": 2.0, "Young": -1.5},
        },
    ),
    Choice(
        ("Straight_Hair", "Wavy_Hair"),
        {"Straight_Hair": {"sex": 0.3}, "Wavy_Hair": {"sex": -1.0, "glam": 0.5}},
        excludes=("Bald",),
    ),
    Node("Bangs", {"sex": -0.6, "age": -0.4}, excludes=("Bald",)),
    Node("Receding_Hairline", {"sex": 0.8, "age": 1.2}, excludes=("Bald",)),
    Node("Wearing_Hat", {"sex": 0.2}, excludes=("Bald",)),
    Node("Beard", {"age": 0.5}, requires=("Male",)),
    Node("Goatee", {}, requires=("Beard",)),
    Node("Mustache", {"age": 0.6, "Goatee": 0.5}, requires=("Beard",)),
    Node("Sideburns", {"Beard": 2.5}, requires=("Male",)),
    Node("5_o_Clock_Shadow", {"age": -0.3}, requires=("Male",), excludes=("Beard",)),
    Node("Heavy_Makeup", {"sex": -3.5, "glam": 2.0, "age": -0.5}),
    Node("Wearing_Lipstick", {"sex": -3.5, "glam": 1.5}, implied_by=("Heavy_Makeup",)),
    Node("Arched_Eyebrows", {"sex": -1.0, "glam": 0.8, "Heavy_Makeup": 0.8}),
    Node("Bushy_Eyebrows", {"sex": 0.8, "age": -0.3}),
    Node("Chubby", {"build": 2.5, "sex": 0.5, "age": 0.5}),
    Node("Double_Chin", {"build": 1.5, "age": 1.0, "Chubby": 2.0}),
    Node("Oval_Face", {"beauty": 0.8, "build": -0.8, "sex": -0.3}),
    Node("Smiling", {"mood": 3.0}),
    Node("Mouth_Slightly_Open", {"Smiling": 1.8, "mood": 0.4}),
    Node("High_Cheekbones", {"Smiling": 2.5, "sex": -0.5, "build": -0.4}),
    Node("Narrow_Eyes", {"Smiling": 0.8, "age": 0.3}),
    Node("Bags_Under_Eyes", {"age": 1.2, "sex": 0.5}),
    Node("Big_Lips", {"sex": -0.3, "Heavy_Makeup": 0.3}),
    Node("Big_Nose", {"sex": 0.9, "age": 0.6, "build": 0.4}),
    Node("Pointy_Nose", {"sex": -0.6, "Big_Nose": -1.0}),
    Node("Pale_Skin", {"sex": -0.5}),
    Node("Rosy_Cheeks", {"sex": -1.8, "Heavy_Makeup": 1.0, "Young": 0.6}),
    Node("Eyeglasses", {"age": 0.8, "sex": 0.6, "glam": -0.4}),
    Node("Wearing_Earrings", {"sex": -2.5, "glam": 1.0, "Heavy_Makeup": 0.5}),
    Node("Wearing_Necklace", {"sex": -2.0, "glam": 0.8}),
    Node("Wearing_Necktie", {"sex": 2.5, "age": 0.8}),
    Node("Blurry", {}),
    Node(
        "Attractive",
        {
            "beauty": 1.5,
            "Young": 1.2,
            "sex": -0.6,
            "Heavy_Makeup": 0.6,
            "Chubby": -1.0,
            "Bags_Under_Eyes": -0.6,
            "Oval_Face": 0.5,
            "Eyeglasses": -0.4,
            "Blurry": -0.5,
        },
    ),
)

# Target prevalence of every graph variable: CelebA's, with the internal Beard = 1 - No_Beard.
_TARGET = {**PREVALENCE, "Beard": 1.0 - PREVALENCE["No_Beard"]}

# (kind, attributes): every published row satisfies these; the tests check them row by row.
#   at_most_one: no two of them present; excludes: not both present; implies: the first present -> the second
#   present; at_least_one: not all absent.
HARD_CONSTRAINTS: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("at_most_one", ("Bald", "Black_Hair", "Blond_Hair", "Brown_Hair", "Gray_Hair")),
    ("at_most_one", ("Straight_Hair", "Wavy_Hair")),
    ("excludes", ("Bald", "Bangs")),
    ("excludes", ("Bald", "Straight_Hair")),
    ("excludes", ("Bald", "Wavy_Hair")),
    ("excludes", ("Bald", "Receding_Hairline")),
    ("excludes", ("Bald", "Wearing_Hat")),
    ("at_least_one", ("Male", "No_Beard")),  # only men have facial hair
    ("excludes", ("Goatee", "No_Beard")),
    ("excludes", ("Mustache", "No_Beard")),
    ("implies", ("Sideburns", "Male")),
    ("implies", ("5_o_Clock_Shadow", "Male")),
    ("implies", ("5_o_Clock_Shadow", "No_Beard")),
    ("implies", ("Heavy_Makeup", "Wearing_Lipstick")),
)

# Annotation noise of the published labels (CelebA's labels are known to be noisy, most of all for
# subjective attributes). ``r`` is the probability that a label of the attribute's rarer value is flipped; the
# same expected number of labels of the commoner value is flipped the other way, so prevalences are kept.
# Only attributes outside HARD_CONSTRAINTS get noise, so that the published rows still satisfy them.
ANNOTATION_NOISE: Mapping[str, float] = {
    **{
        name: 0.05
        for name in (
            "Attractive",
            "Oval_Face",
            "Big_Lips",
            "Big_Nose",
            "Pointy_Nose",
            "Arched_Eyebrows",
            "Bushy_Eyebrows",
            "High_Cheekbones",
            "Narrow_Eyes",
            "Bags_Under_Eyes",
            "Young",
            "Chubby",
            "Double_Chin",
            "Rosy_Cheeks",
            "Pale_Skin",
            "Blurry",
            "Mouth_Slightly_Open",
        )
    },
    **{name: 0.01 for name in ("Smiling", "Eyeglasses", "Wearing_Earrings", "Wearing_Necklace", "Wearing_Necktie")},
}

_CALIBRATION_SIZE = 100_000
_CALIBRATION_SEED = 2015


@dataclass(frozen=True)
class AttributeSample:
    """``num`` sampled faces: what is drawn (``true``), what is published (``labels``), and the latents."""

    true: np.ndarray  # uint8 [num, 40] in ATTRIBUTE_NAMES order: what the renderer draws
    labels: np.ndarray  # uint8 [num, 40]: ``true`` with annotation noise, what list_attr_celeba.txt holds
    latents: np.ndarray  # float32 [num, len(LATENT_NAMES)]


def sample_attributes(num: int, rng: np.random.Generator, person: np.ndarray | None = None) -> AttributeSample:
    """Draw ``num`` faces from the latent model (vectorised; about a microsecond per face).

    ``person`` (int [num], each face's person, 0..P - 1), where faces show people: every face draws its latents
    and uniforms as one face alone would, then takes its person's first face's draws for ``PERSON_LATENTS``, sex
    and ``PERSON_NODES``. A person's images then share those traits, and each face, taken alone, keeps exactly the
    model's distribution (the shared draws are one face's own), so every prevalence is as calibrated. Without
    ``person`` the draws are those of before people existed, face for face."""
    if not isinstance(num, (int, np.integer)) or isinstance(num, bool) or num < 1:
        raise ValueError(f"num={num!r}; expected a positive integer")
    if person is not None and np.shape(person) != (num,):
        raise ValueError(f"person has shape {np.shape(person)}; expected one person per face, ({num},)")
    values, latents = _forward(int(num), rng, calibrated_intercepts(), person=person)
    true = np.stack([values[name] for name in ATTRIBUTE_NAMES], axis=1).astype(np.uint8)
    return AttributeSample(true=true, labels=annotate(true, rng), latents=latents)


def annotate(true: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """The published labels: ``true`` with the prevalence-preserving flips of ``ANNOTATION_NOISE``.

    For an attribute of prevalence p and rate r, with m = min(p, 1 - p): a present label is flipped with
    probability r m / p and an absent one with probability r m / (1 - p); the expected number of flips is
    the same both ways (r m per image), so the expected prevalence stays p.
    """
    p = np.array([PREVALENCE[name] for name in ATTRIBUTE_NAMES])
    r = np.array([ANNOTATION_NOISE.get(name, 0.0) for name in ATTRIBUTE_NAMES])
    m = np.minimum(p, 1.0 - p)
    flip_prob = np.where(true == 1, r * m / p, r * m / (1.0 - p))
    flips = rng.random(true.shape) < flip_prob
    return (true ^ flips).astype(np.uint8)


@functools.cache
def calibrated_intercepts() -> Mapping[str, float]:
    """The intercepts ``b`` that give every attribute its CelebA prevalence (``PREVALENCE``).

    Solved once per process, in graph order, on a fixed reference sample of 100,000 faces: for a ``Node``,
    Newton's method on the mean probability (monotone in b); for a ``Choice``, the fixed-point iteration
    ``b_k += log(target_k / mean_k)`` (Berry's contraction for multinomial-logit shares; Berry, RAND J. Econ.
    1994). Later nodes are calibrated on the earlier ones as sampled, so constraints and correlations are
    accounted for exactly up to the reference sample's Monte Carlo error (at most about 0.15 percentage point).
    """
    _, _, intercepts = _forward(_CALIBRATION_SIZE, np.random.default_rng(_CALIBRATION_SEED), None, solve=True)
    return intercepts


def _forward(
    num: int,
    rng: np.random.Generator,
    intercepts: Mapping[str, float] | None,
    solve: bool = False,
    person: np.ndarray | None = None,
):
    """Run the graph on ``num`` faces; with ``solve`` the intercepts are found on the way (calibration); with
    ``person``, the shared draws of :func:`sample_attributes`."""
    latent = rng.standard_normal((num, len(LATENT_NAMES)))
    uniforms = rng.random((num, len(GRAPH) + 1))
    if person is not None:
        _, first, codes = np.unique(np.asarray(person), return_index=True, return_inverse=True)
        shared_rows = first[codes]  # each face's person's first face
        columns = [LATENT_NAMES.index(name) for name in PERSON_LATENTS]
        latent[:, columns] = latent[shared_rows][:, columns]
        nodes = [0] + [1 + step for step, node in enumerate(GRAPH) if _node_name(node) in PERSON_NODES]
        uniforms[:, nodes] = uniforms[shared_rows][:, nodes]  # column 0: sex
    values: dict[str, np.ndarray] = {"Male": (uniforms[:, 0] < PREVALENCE["Male"]).astype(np.float64)}
    sex = 2.0 * values["Male"] - 1.0
    latent[:, 0] += _AGE_SHIFT_PER_SEX * sex
    features = {"sex": sex, **{name: latent[:, i] for i, name in enumerate(LATENT_NAMES)}}
    solved: dict[str, float] = {}
    for step, node in enumerate(GRAPH):
        u = uniforms[:, step + 1]
        lookup = {**features, **values}
        if isinstance(node, Node):
            score = _linear(node.weights, lookup, num)
            gate = np.ones(num)
            for name in node.requires:
                gate *= values[name]
            for name in node.excludes:
                gate *= 1.0 - values[name]
            implied = np.zeros(num)
            for name in node.implied_by:
                implied = np.maximum(implied, values[name])
            b = _solve_binary(score, gate, implied, _TARGET[node.name], node.name) if solve else intercepts[node.name]
            solved[node.name] = b
            prob = implied + (1.0 - implied) * gate * _sigmoid(b + score)
            values[node.name] = (u < prob).astype(np.float64)
        else:
            scores = np.stack([_linear(node.weights.get(o, {}), lookup, num) for o in node.options])  # [K, num]
            gate = np.ones(num)
            for name in node.excludes:
                gate *= 1.0 - values[name]
            if solve:
                b = _solve_choice(scores, gate, np.array([_TARGET[o] for o in node.options]), node.options)
            else:
                b = np.array([intercepts[o] for o in node.options])
            solved.update(zip(node.options, b.tolist()))
            probs = gate * _softmax_with_none(b[:, None] + scores)
            picked = np.sum(u >= np.cumsum(probs, axis=0), axis=0)  # == len(options): none of them
            for k, option in enumerate(node.options):
                values[option] = (picked == k).astype(np.float64)
    values["No_Beard"] = 1.0 - values.pop("Beard")
    latents = latent.astype(np.float32)
    return (values, latents, solved) if solve else (values, latents)


def _node_name(node: Node | Choice) -> str:
    return node.name if isinstance(node, Node) else node.options[0]


def _linear(weights: Mapping[str, float], lookup: Mapping[str, np.ndarray], num: int) -> np.ndarray:
    out = np.zeros(num)
    for feature, w in weights.items():
        out += w * lookup[feature]
    return out


def _sigmoid(x: np.ndarray) -> np.ndarray:
    return 0.5 * (1.0 + np.tanh(0.5 * x))  # overflow-free logistic


def _softmax_with_none(logits: np.ndarray) -> np.ndarray:
    """Softmax over the rows of ``logits`` [K, num] plus an implicit option of logit 0 ("none"); returns the
    K rows' probabilities. No max-subtraction: the logits are weighted sums of a few N(0, 1) latents and
    intercepts of a few units, far from exp's overflow at 709."""
    e = np.exp(logits)
    return e / (1.0 + e.sum(axis=0))


def _solve_binary(score, gate, implied, target: float, name: str) -> float:
    free = (1.0 - implied) * gate
    low, high = implied.mean(), implied.mean() + free.mean()
    if not low < target < high:
        raise ValueError(f"prevalence {target} of {name} is unreachable under its constraints: [{low:.4f}, {high:.4f}]")
    b = float(np.log(target / (1.0 - target)))
    for _ in range(100):
        s = _sigmoid(b + score)
        err = implied.mean() + np.mean(free * s) - target
        if abs(err) < 1e-8:
            return b
        b -= float(np.clip(err / max(np.mean(free * s * (1.0 - s)), 1e-12), -2.0, 2.0))
    raise RuntimeError(f"calibration of {name} did not converge (residual {err:.2e})")


def _solve_choice(scores, gate, targets: np.ndarray, options: tuple[str, ...]) -> np.ndarray:
    if targets.sum() >= gate.mean():
        raise ValueError(f"prevalences of {options} sum to {targets.sum():.4f} > the allowed {gate.mean():.4f}")
    b = np.log(targets / (1.0 - targets.sum()))
    e_scores = np.exp(scores)  # exp(b + s) = exp(b) exp(s): one exp for all iterations
    for _ in range(500):
        e = np.exp(b)[:, None] * e_scores
        shares = (e / (1.0 + e.sum(axis=0))) @ gate / gate.size
        if np.max(np.abs(shares - targets)) < 1e-8:
            return b
        b += np.log(targets / shares)
    raise RuntimeError(f"calibration of {options} did not converge (shares {shares}, targets {targets})")


__all__ = [
    "ANNOTATION_NOISE",
    "GRAPH",
    "HARD_CONSTRAINTS",
    "LATENT_NAMES",
    "PERSON_LATENTS",
    "PERSON_NODES",
    "PREVALENCE",
    "AttributeSample",
    "Choice",
    "Node",
    "annotate",
    "calibrated_intercepts",
    "sample_attributes",
]
