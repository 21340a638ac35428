"""Teachers at the paper's scale on one CPU: speed of the heads against the SmallCNN loop, and teacher accuracy
per public extractor and per number of teachers T, on the default synthetic data.

Everything goes through the pipeline's own code: the features stage (cached in the artifact cache, so a
second run extracts nothing), ``teachers.heads`` (fit, then score) and ``teachers.ensemble`` (the Lightning
loop of ``teacher=small_cnn``). Teacher accuracy is the mean per-attribute accuracy on the first 2,000
evaluation images of the test split; "vote" is the accuracy of the T teachers' plain (non-private) majority.

    python benchmarks/teachers.py                                # all of it (~10 min on 2 cores)
    python benchmarks/teachers.py --extractors random_patches --teachers 800 --cnn-teachers 0
    python benchmarks/teachers.py --extractors --cnn-teachers 0 --engine-teachers 32   # CNN engines only
    # the GPU target: 800 pretrained ResNet-18 teachers, 1 epoch at 64 px (the loop timed on 50 of them)
    python benchmarks/teachers.py --extractors --cnn-teachers 0 --engine-model resnet18_imagenet \
        --image-size 64 --engine-teachers 800 --loop-teachers 50 --group 100 --device gpu

The CNN engines: ``--engine-model`` in a form both engines can train -- ``small_cnn`` and ``resnet18`` (from
scratch) with GroupNorm, ``resnet18_imagenet`` (the paper's recipe; needs torchvision's weights in torch's hub
cache) with frozen BatchNorm statistics -- for 1 epoch, trained one teacher at a time (the Lightning loop) and
``--group`` at a time (the batched engine, teachers/batched.py) in the same run. The figure is teacher-epochs
per second and their ratio; ``--loop-teachers`` times the loop on the first N teachers only (the rates are per
teacher, so the ratio stands). ``--device gpu`` uses ``trainer=gpu`` (bf16-mixed) in both engines.

Recorded results and findings: benchmarks/results/levers.md, "Teachers by feature extractor" and
"Batched CNN teachers"; how to run it: benchmarks/README.md.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import torch

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # the repository's packages, run from anywhere
from pate.data import data_identity, partition_teachers  # noqa: E402
from pate.features import read_features  # noqa: E402
from pate.pipeline import (  # noqa: E402
    ArtifactStore,
    Dataset,
    features_stage,
    head_teacher_settings,
    instantiate,
    majority_class_accuracy,
    network_teacher_settings,
    trainer_settings,
)
from teachers import head_votes, train_head_teachers, train_teachers  # noqa: E402
from record import header, train_config, write_json  # noqa: E402

EVAL_IMAGES = 2000


def heads(cfg, data, features, num_teachers: int, eval_rows) -> dict:
    parts = partition_teachers(data.indices("train"), num_teachers, int(cfg.partition.seed))
    with tempfile.TemporaryDirectory() as work:
        start = time.perf_counter()
        settings = head_teacher_settings(cfg.teacher)
        train_head_teachers(settings, features, data.labels, parts, Path(work), progress=False)
        fit_seconds = time.perf_counter() - start
        votes, accuracy = head_votes(
            settings, Path(work), features, parts, eval_rows, eval_rows, data.labels[eval_rows], progress=False
        )
    majority = votes.sum(1) > num_teachers / 2
    return {
        "teachers": num_teachers,
        "records_per_teacher": float(np.mean([len(p) for p in parts])),
        "teacher_accuracy": float(accuracy.mean()),
        "teacher_accuracy_sd": float(accuracy.std()),
        "vote_accuracy": float((majority == data.labels[eval_rows].astype(bool)).mean()),
        "fit_seconds": fit_seconds,
        "teachers_per_second": num_teachers / fit_seconds,
    }


def cnn_loop(num_teachers: int) -> dict:
    """``teacher=small_cnn`` (its config as shipped) on the first parts of the 800-teacher partition."""
    cfg = train_config("teacher=small_cnn")
    data = instantiate(cfg.data.reader, "data.reader").load(Path(cfg.paths.cache_dir) / "tensors", progress=False)
    parts = partition_teachers(data.indices("train"), int(cfg.partition.num_teachers), int(cfg.partition.seed))
    with tempfile.TemporaryDirectory() as work:
        start = time.perf_counter()
        train_teachers(
            network_teacher_settings(cfg.teacher),
            trainer_settings(cfg),
            data.images,
            data.labels,
            parts,
            Path(work),
            teacher_ids=range(num_teachers),
            progress=False,
        )
        seconds = time.perf_counter() - start
    return {
        "teachers": num_teachers,
        "seconds": seconds,
        "teachers_per_second": num_teachers / seconds,
        "max_epochs": int(cfg.teacher.max_epochs),
    }


ENGINE_MODELS = {  # each in a form that both engines can train
    "small_cnn": ["teacher=small_cnn", "teacher.model.norm=group"],
    "resnet18": ["teacher=resnet18", "teacher.model.norm=group"],
    "resnet18_imagenet": ["teacher=resnet18_imagenet", "teacher.model.norm=frozen"],
}


def cnn_engines(
    model: str,
    num_teachers: int,
    loop_teachers: int,
    group: int,
    device: str,
    image_size: int | None,
    data_workers: int | None = None,
) -> dict:
    """Teacher-epochs per second of the per-teacher loop (on the first ``loop_teachers``) and of the batched
    engine (on all ``num_teachers``), 1 epoch each."""
    size = [] if image_size is None else [f"data.image_size={image_size}", f"data.synthetic.image_size={image_size}"]
    gpu = ["trainer=gpu"] if device == "gpu" else []
    workers = [] if data_workers is None else [f"data.num_workers={data_workers}"]
    # the private split cut into num_teachers parts: the teachers timed are those of a num_teachers ensemble
    cfg = train_config(
        *ENGINE_MODELS[model], "teacher.max_epochs=1", f"partition.num_teachers={num_teachers}", *gpu, *size, *workers
    )
    data = instantiate(cfg.data.reader, "data.reader").load(Path(cfg.paths.cache_dir) / "tensors", progress=False)
    parts = partition_teachers(data.indices("train"), int(cfg.partition.num_teachers), int(cfg.partition.seed))
    out = {
        "model": model,
        "teachers": num_teachers,
        "loop_teachers": loop_teachers,
        "group": group,
        "device": device,
        "device_name": torch.cuda.get_device_name() if device == "gpu" else "cpu",
        "precision": str(cfg.trainer.precision),
        "image_size": int(data.images.shape[-1]),
        "records_per_teacher": float(np.mean([len(p) for p in parts[:num_teachers]])),
    }
    for engine, ensemble_size, count in (("loop", 1, loop_teachers), ("batched", group, num_teachers)):
        cfg.teacher.ensemble_size = ensemble_size
        with tempfile.TemporaryDirectory() as work:
            start = time.perf_counter()
            train_teachers(
                network_teacher_settings(cfg.teacher),
                trainer_settings(cfg),
                data.images,
                data.labels,
                parts,
                Path(work),
                teacher_ids=range(count),
                progress=False,
            )
            seconds = time.perf_counter() - start
        out[engine] = {"teachers": count, "seconds": seconds, "teacher_epochs_per_second": count / seconds}
    out["batched_over_loop"] = out["batched"]["teacher_epochs_per_second"] / out["loop"]["teacher_epochs_per_second"]
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--extractors", nargs="*", default=["random_patches", "random_conv", "pixels"])
    parser.add_argument("--teachers", nargs="+", type=int, default=[100, 250, 800])
    parser.add_argument("--cnn-teachers", type=int, default=5, help="SmallCNN teachers to time (0: skip)")
    parser.add_argument(
        "--engine-teachers",
        type=int,
        default=0,
        help="CNN teachers to time with the batched engine, and the loop (0: skip)",
    )
    parser.add_argument(
        "--loop-teachers", type=int, default=None, help="time the loop on the first N of them only (default: all)"
    )
    parser.add_argument("--engine-model", choices=sorted(ENGINE_MODELS), default="small_cnn")
    parser.add_argument("--image-size", type=int, default=None, help="data.image_size (default: the config's)")
    parser.add_argument("--group", type=int, default=32, help="teachers per batched group (teacher.ensemble_size)")
    parser.add_argument("--device", choices=("cpu", "gpu"), default="cpu", help="for the CNN engines")
    parser.add_argument(
        "--data-workers",
        type=int,
        default=None,
        help="data.num_workers for the CNN engines' data (default: the config's)",
    )
    parser.add_argument("--output", type=Path, default=None)
    args = parser.parse_args()
    torch.set_num_threads(2)
    results: dict = {
        **header("benchmarks/teachers.py", time.time()),
        "extractors": {},
        "device": "cpu",
        "torch_threads": torch.get_num_threads(),
    }
    for name in args.extractors:
        cfg = train_config(f"features={name}")
        data = instantiate(cfg.data.reader, "data.reader").load(Path(cfg.paths.cache_dir) / "tensors", progress=False)
        extractor = instantiate(cfg.features.extractor, "feature extractor")
        stage = features_stage(cfg, Dataset(data, data_identity(cfg.data.name, cfg.data.image_size, data)), extractor)
        store = ArtifactStore(Path(cfg.paths.cache_dir))
        start = time.perf_counter()
        features = read_features(store.get(stage))
        seconds = time.perf_counter() - start
        eval_rows = np.sort(data.indices("test"))[:EVAL_IMAGES]
        rows = [heads(cfg, data, features, t, eval_rows) for t in args.teachers]
        results["extractors"][name] = {"dim": features.dim, "features_seconds": seconds, "by_teachers": rows}
        results["majority_class_accuracy"] = majority_class_accuracy(data.labels[eval_rows])
        for row in rows:
            print(
                f"{name:15s} D={features.dim:5d} T={row['teachers']:4d} (~{row['records_per_teacher']:.0f} each): "
                f"teacher {100 * row['teacher_accuracy']:.1f}% (sd {100 * row['teacher_accuracy_sd']:.1f}), "
                f"vote {100 * row['vote_accuracy']:.1f}%, {row['teachers_per_second']:.0f} teachers/s",
                flush=True,
            )
    if args.extractors:
        print(f"majority class {100 * results['majority_class_accuracy']:.1f}%")
    if args.cnn_teachers:
        results["small_cnn_loop"] = cnn_loop(args.cnn_teachers)
        print(f"SmallCNN loop: {results['small_cnn_loop']['teachers_per_second']:.3f} teachers/s")
        best = max(
            r["teachers_per_second"]
            for e in results["extractors"].values()
            for r in e["by_teachers"]
            if r["teachers"] == max(args.teachers)
        )
        results["heads_over_cnn"] = best / results["small_cnn_loop"]["teachers_per_second"]
        print(f"heads / SmallCNN loop, teachers per second: {results['heads_over_cnn']:.0f}x")
    if args.engine_teachers:
        results["cnn_engines"] = engines = cnn_engines(
            args.engine_model,
            args.engine_teachers,
            args.loop_teachers or args.engine_teachers,
            args.group,
            args.device,
            args.image_size,
            args.data_workers,
        )
        print(
            f"{args.engine_model} on {engines['device_name']} ({engines['precision']}, "
            f"{engines['image_size']} px), teachers of ~{engines['records_per_teacher']:.0f} images, 1 epoch: "
            f"loop {engines['loop']['teacher_epochs_per_second']:.2f} teacher-epochs/s "
            f"({engines['loop']['teachers']} teachers), batched (G={args.group}) "
            f"{engines['batched']['teacher_epochs_per_second']:.2f} ({engines['batched']['teachers']} teachers, "
            f"{engines['batched']['seconds']:.0f} s): {engines['batched_over_loop']:.2f}x"
        )
    if args.output:
        write_json(args.output, results)


if __name__ == "__main__":
    main()
