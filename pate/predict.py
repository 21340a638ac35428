"""Label new images with the model a run kept: ``pate-predict RUN_DIR IMAGES...`` (also ``python -m pate.predict``).

A run keeps its trained model in ``<RUN_DIR>/model`` (``pate.model_files``): the student's weights and the public
extractor's learned state, or DP-SGD's model. This reads it back and labels images: image files, folders of them,
or a CSV file whose first column names them (relative to the CSV's folder unless absolute; ``evaluation.csv`` in a
run's directory lists its evaluation images so). It writes a CSV in the folder format of ``data=multilabel_folder``
(``file,<label>,...`` with 0/1 values, the files relative to the folder it names) and, where the input CSV has the
model's label columns, scores the predictions against them as the run scored its student (mean per-label accuracy,
macro F1).

An image must already be what the model reads: S x S pixels, 8-bit RGB. Another size or channel count is refused in
one line; ``--resize`` decodes it as the run's data were decoded (``pate.data.tensor_cache.decode_image``: central
square, Lanczos resize to S, RGB). The model sits above the student in the layering (it rebuilds the networks of
``teachers.training``), like the pipeline.
"""

from __future__ import annotations

import argparse
import csv
import json
import os
import sys
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import torch
from PIL import Image

from pate.data.tensor_cache import decode_image
from pate.dp_sgd import probe_inputs
from pate.errors import EXIT_USER_ERROR, UserError
from pate.evaluation import student_scores
from pate.features.extractors import Extractor, batches
from pate.io import atomic_write_text
from pate.model_files import EXTRACTOR_FILE, MODEL_FILE, SPEC_FILE
from pate.progress import progress_bar
from teachers.training.data import to_float

IMAGE_SUFFIXES = (".png", ".jpg", ".jpeg", ".bmp", ".webp", ".tif", ".tiff")


@dataclass
class KeptModel:
    """A run's kept model (module docstring): ``network`` maps its inputs to one logit per label; ``extractor``
    encodes the images first where ``spec["inputs"]`` is ``features``."""

    spec: dict
    network: torch.nn.Module
    extractor: Extractor | None

    @property
    def image_size(self) -> int:
        return int(self.spec["image_size"])

    @property
    def label_names(self) -> list[str]:
        return list(self.spec["label_names"])

    def inputs(self, images: np.ndarray, progress: bool = False) -> torch.Tensor:
        """What the network reads of uint8 ``images`` [N, 3, S, S], computed as the run computed it: the images made
        float, or the extractor's features stored as float16 (as the features stage stores them), then the
        model's input transform. ``progress``: a bar over the batches of features."""
        if self.extractor is None:
            return to_float(torch.from_numpy(np.ascontiguousarray(images)))
        rows = np.arange(len(images))
        parts = progress_bar(
            list(batches(len(images), 1024)), desc="pate-predict: features", unit="batch", disable=not progress
        )
        encoded = [self.extractor.encode_rows(images, rows[part]).numpy() for part in parts]
        features = torch.from_numpy(np.concatenate(encoded).astype(np.float16).astype(np.float32))
        return probe_inputs(features, "unit_norm") if self.spec["input_transform"] == "unit_norm" else features

    def probabilities(self, images: np.ndarray, progress: bool = False) -> torch.Tensor:
        """float32 [N, L]: sigmoid of the network's logits on :meth:`inputs`, in the batches the run scored it in (a
        float result can depend on the batch's size)."""
        inputs = self.inputs(images, progress)
        size = self.spec["batch_size"] or len(inputs)
        with torch.no_grad():
            return torch.cat([self.network(inputs[part]).float() for part in batches(len(inputs), size)]).sigmoid()


def _instantiate(node: dict, what: str):
    from hydra.utils import instantiate

    try:
        return instantiate(node)
    except Exception as err:  # the error of the node's own class: say which file asked for it
        raise UserError(f"{what}: cannot rebuild {node.get('_target_')!r}: {' '.join(str(err).split())}") from None


def load_model(run_dir: str | os.PathLike) -> KeptModel:
    """The model kept in ``run_dir`` (a run's directory, or its ``model`` folder); a :class:`UserError` naming the
    file when something is missing."""
    folder = Path(run_dir)
    if not (folder / SPEC_FILE).is_file() and (folder / "model" / SPEC_FILE).is_file():
        folder = folder / "model"
    spec_file = folder / SPEC_FILE
    if not spec_file.is_file():
        raise UserError(
            f"{run_dir}: no kept model ({Path(run_dir) / 'model' / SPEC_FILE} is missing); expected the directory of "
            f"a finished run (where its metrics.json is), whose model/ a run writes at its end"
        )
    spec = json.loads(spec_file.read_text())
    network = _instantiate(spec["network"], str(spec_file))
    network.load_state_dict(torch.load(folder / MODEL_FILE, map_location="cpu", weights_only=True))
    network.eval()
    extractor = None
    if spec["inputs"] == "features":
        if spec["extractor"] is None:
            raise UserError(
                f"{spec_file}: the model reads precomputed embeddings, looked up by the data's row, which cannot "
                f"encode a new image; expected a run whose features.extractor reads images"
            )
        extractor = _instantiate(spec["extractor"], str(spec_file))
        if extractor.identity() != spec["extractor_identity"]:
            raise UserError(
                f"{spec_file}: the extractor rebuilt here is {extractor.identity()}, the run's was "
                f"{spec['extractor_identity']}; expected the same (e.g. the same ImageNet weights file)"
            )
        extractor.load_state(torch.load(folder / EXTRACTOR_FILE, map_location="cpu", weights_only=True))
    return KeptModel(spec, network, extractor)


def read_image(path: str | os.PathLike, image_size: int, resize: bool) -> np.ndarray:
    """uint8 [3, S, S]: the image as the model reads it. Without ``resize`` it must be S x S, 8-bit RGB (else a
    :class:`UserError` naming it); with it, decoded as the run's data were (module docstring)."""
    if resize:
        try:
            return decode_image(path, image_size)[0]
        except ValueError as err:
            raise UserError(str(err)) from None
    try:
        with Image.open(path) as img:
            if img.mode != "RGB" or img.size != (image_size, image_size):
                raise UserError(
                    f"{path}: {img.size[0]} x {img.size[1]} pixels, mode {img.mode}; the model reads {image_size} x "
                    f"{image_size} 8-bit RGB images: pass --resize to decode it as the run's data were (central "
                    f"square, resized to {image_size}, RGB)"
                )
            return np.asarray(img, dtype=np.uint8).transpose(2, 0, 1)
    except OSError as err:
        raise UserError(f"{path}: cannot read this image ({' '.join(str(err).split())})") from None


def _csv_inputs(path: Path, label_names: list[str]) -> tuple[list[Path], np.ndarray | None]:
    """The images a CSV file names in its first column (relative to its folder unless absolute) and, where its
    other columns are the model's labels, their labels (0/1 or -1/1) to score against."""
    with path.open(newline="", encoding="utf-8") as handle:
        rows = list(csv.reader(handle))
    if not rows or len(rows) < 2:
        raise UserError(f"{path}: expected a header line and at least one image, got {len(rows)} line(s)")
    header, body = rows[0], rows[1:]
    files = [Path(row[0]) if Path(row[0]).is_absolute() else path.parent / row[0] for row in body]
    if header[1:] != label_names:
        return files, None
    try:
        truth = np.array([[int(value) for value in row[1:]] for row in body])
    except ValueError:
        raise UserError(f"{path}: its label columns must hold 0/1 or -1/1") from None
    return files, (truth == 1).astype(np.uint8)


def gather_inputs(inputs: list[str], label_names: list[str]) -> tuple[list[Path], np.ndarray | None]:
    """The image files of ``inputs`` (files, folders -- every image file under them, sorted -- or one CSV file) and
    the labels a CSV gives them, if any."""
    if len(inputs) == 1 and inputs[0].endswith(".csv"):
        return _csv_inputs(Path(inputs[0]), label_names)
    files: list[Path] = []
    for item in map(Path, inputs):
        if item.is_dir():
            found = sorted(p for p in item.rglob("*") if p.suffix.lower() in IMAGE_SUFFIXES and p.is_file())
            if not found:
                raise UserError(f"{item}: no image file ({', '.join(IMAGE_SUFFIXES)}) under this folder")
            files.extend(found)
        elif item.is_file():
            files.append(item)
        else:
            raise UserError(f"{item}: no such file or folder; expected image files, folders or one .csv file")
    return files, None


def write_predictions(out: Path, files: list[Path], label_names: list[str], predicted: np.ndarray) -> Path:
    """Write the folder-format CSV (``file,<label>,...``, 0/1) with the files relative to their common folder,
    which is returned (the ``data.root`` that reads it)."""
    resolved = [file.resolve() for file in files]
    root = Path(os.path.commonpath([file.parent for file in resolved]))
    lines = [",".join(["file", *label_names])]
    lines += [",".join([file.relative_to(root).as_posix(), *map(str, row)]) for file, row in zip(resolved, predicted)]
    atomic_write_text(out, "\n".join(lines) + "\n")
    return root


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="pate-predict", description=__doc__.split("\n\n")[0])
    parser.add_argument("run_dir", help="a finished run's directory (its model/ holds the kept model)")
    parser.add_argument("images", nargs="+", help="image files, folders of them, or one CSV naming them")
    parser.add_argument("-o", "--output", type=Path, default=Path("predictions.csv"), help="default: predictions.csv")
    parser.add_argument("--resize", action="store_true", help="decode images of another size as the run's data were")
    parser.add_argument("--no-progress", dest="progress", action="store_false", help="no progress bar")
    args = parser.parse_args(argv)
    try:
        model = load_model(args.run_dir)
        files, truth = gather_inputs(args.images, model.label_names)
        reading = progress_bar(files, desc="pate-predict: read images", unit="img", disable=not args.progress)
        images = np.stack([read_image(file, model.image_size, args.resize) for file in reading])
    except UserError as err:
        print(f"error: {err}", file=sys.stderr)
        return EXIT_USER_ERROR
    probabilities = model.probabilities(images, args.progress)
    predicted = (probabilities > 0.5).numpy().astype(np.uint8)
    root = write_predictions(args.output, files, model.label_names, predicted)
    print(f"labelled {len(files)} images: {args.output} (the folder format: data.root={root})")
    if truth is not None:
        scores = student_scores(probabilities, truth)
        print(
            f"against the labels of {args.images[0]}: accuracy {scores['student_accuracy']:.4f}, macro F1 "
            f"{scores['student_f1']:.4f} (the run's student_accuracy: {model.spec.get('student_accuracy')})"
        )
    return 0


def cli() -> None:
    sys.exit(main())


if __name__ == "__main__":
    cli()
