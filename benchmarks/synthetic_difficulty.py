"""Is the synthetic CelebA hard enough for teacher aggregation to matter?

PATE only helps if a teacher trained on 1/T of the private data is clearly worse than a model trained on all
of it, and a model that sees the images must clearly beat the majority-class baseline. This benchmark
generates (or reuses) the synthetic set, trains the same small plain-torch CNN on all of the training split
and on one teacher's part for T in ``--teachers``, every model for the same number of optimisation steps
(so the comparison is about data, not compute: the small parts are seen for many more epochs), and reports
the mean per-attribute accuracy on the test split, the per-attribute accuracies (easy and hard attributes)
and the majority-class baseline (each attribute's majority value on the training split).

    python benchmarks/synthetic_difficulty.py                      # 20k images at 64 px, models at 32 px
    python benchmarks/synthetic_difficulty.py --output results.json

Recorded results and findings: benchmarks/results/levers.md, "Is the synthetic data hard enough?".
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np
import torch
from torch import nn

# The repository's packages first: this folder's teachers.py would otherwise stand for the teachers package.
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from pate.data import (  # noqa: E402
    ATTRIBUTE_NAMES,
    MARKER,
    generate_synthetic_celeba,
    load_celeba,
    partition_teachers,
)
from record import header, write_json  # noqa: E402
from teachers.training import SmallCNN, to_float  # noqa: E402


def as_float(images: np.ndarray) -> torch.Tensor:
    """The project's own input normalisation (``teachers.training.data.to_float``) on a numpy uint8 batch."""
    return to_float(torch.from_numpy(np.ascontiguousarray(images)))


def train(images: np.ndarray, labels: np.ndarray, steps: int, batch: int, width: int, seed: int) -> nn.Module:
    """Adam (lr 2e-3, weight decay 1e-4), BCE over the 40 labels, random horizontal flips; ``steps`` batches
    drawn epoch by epoch without replacement."""
    gen = torch.Generator().manual_seed(seed)
    torch.manual_seed(seed)
    model = SmallCNN(num_labels=40, width=width)  # the default teacher's network
    opt = torch.optim.Adam(model.parameters(), lr=2e-3, weight_decay=1e-4)
    x_all, y_all = torch.from_numpy(np.ascontiguousarray(images)), torch.from_numpy(labels.astype(np.float32))
    order = torch.empty(0, dtype=torch.long)
    model.train()
    for _ in range(steps):
        if len(order) < batch:
            order = torch.cat([order, torch.randperm(len(x_all), generator=gen)])
        pick, order = order[:batch], order[batch:]
        x = to_float(x_all[pick])
        flip = torch.rand(len(pick), generator=gen) < 0.5
        x = torch.where(flip[:, None, None, None], x.flip(-1), x)
        loss = nn.functional.binary_cross_entropy_with_logits(model(x), y_all[pick])
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
    return model


@torch.no_grad()
def predict(model: nn.Module, images: np.ndarray) -> np.ndarray:
    model.eval()
    return np.concatenate([(model(as_float(images[i : i + 500])) > 0).numpy() for i in range(0, len(images), 500)])


def _arguments(argv):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--root", default="data/synthetic_celeba", help="synthetic CelebA directory (reused)")
    parser.add_argument("--cache-dir", default="cache/synthetic_difficulty")
    parser.add_argument("--num-images", type=int, default=20_000)
    parser.add_argument("--render-size", type=int, default=64, help="size of the generated JPEGs")
    parser.add_argument("--image-size", type=int, default=32, help="size the models see (the tensor cache)")
    parser.add_argument("--teachers", type=int, nargs="+", default=[20, 50])
    parser.add_argument("--steps", type=int, default=1500, help="optimisation steps, the same for every model")
    parser.add_argument("--batch", type=int, default=64)
    parser.add_argument("--width", type=int, default=16)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--num-workers", type=int, default=2)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--output", type=Path)
    return parser.parse_args(argv)


def main(argv=None) -> dict:
    args = _arguments(argv)
    record = header("benchmarks/synthetic_difficulty.py", time.time())
    torch.set_num_threads(args.threads)

    reused = (Path(args.root) / MARKER).exists()
    start = time.perf_counter()
    root = generate_synthetic_celeba(
        args.root, args.num_images, args.render_size, seed=args.seed, num_workers=args.num_workers
    )
    generate_s = time.perf_counter() - start
    start = time.perf_counter()
    data = load_celeba(root, args.image_size, args.cache_dir, num_workers=args.num_workers)
    decode_s = time.perf_counter() - start
    made = "reused" if reused else f"generated in {generate_s:.1f} s ({args.num_images / generate_s:.0f} img/s)"
    print(f"data: {len(data)} images {made}; tensor cache built or verified in {decode_s:.1f} s")

    train_idx, test_idx = data.indices("train"), data.indices("test")
    x_test, y_test = np.asarray(data.images[test_idx]), data.labels[test_idx].astype(bool)
    majority = data.labels[train_idx].mean(axis=0) > 0.5
    per_attr = {"majority": (y_test == majority).mean(axis=0)}
    sizes = {"majority": 0}
    runs = [("all", train_idx)] + [(f"1/{t}", partition_teachers(train_idx, t, args.seed)[0]) for t in args.teachers]
    for name, idx in runs:
        start = time.perf_counter()
        model = train(np.asarray(data.images[idx]), data.labels[idx], args.steps, args.batch, args.width, args.seed)
        per_attr[name] = (predict(model, x_test) == y_test).mean(axis=0)
        sizes[name] = len(idx)
        print(
            f"trained on {name:>5} ({len(idx):5d} images, {args.steps * args.batch / len(idx):6.1f} epochs): "
            f"mean test accuracy {per_attr[name].mean():.4f}  ({time.perf_counter() - start:.0f} s)"
        )

    cols = list(per_attr)
    print(f"\n{'attribute':20s} {'prev':>6s} " + " ".join(f"{c:>8s}" for c in cols) + "   gain(all-majority)")
    gain = per_attr["all"] - per_attr["majority"]
    for j in np.argsort(-gain):
        print(
            f"{ATTRIBUTE_NAMES[j]:20s} {y_test[:, j].mean():6.3f} "
            + " ".join(f"{per_attr[c][j]:8.4f}" for c in cols)
            + f"   {gain[j]:+.4f}"
        )
    print(f"{'MEAN':20s} {'':6s} " + " ".join(f"{per_attr[c].mean():8.4f}" for c in cols))

    result = {
        **record,
        "config": vars(args) | {"output": str(args.output) if args.output else None},
        "train_images": sizes,
        "test_images": len(test_idx),
        "mean_accuracy": {c: float(per_attr[c].mean()) for c in cols},
        "per_attribute_accuracy": {c: dict(zip(ATTRIBUTE_NAMES, per_attr[c].round(4).tolist())) for c in cols},
        "generated": not reused,
        "generate_seconds": generate_s,
        "decode_seconds": decode_s,
    }
    if args.output:
        write_json(args.output, result)
    return result


if __name__ == "__main__":
    main()
