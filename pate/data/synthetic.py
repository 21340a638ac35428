"""The built-in synthetic CelebA: rendered faces written in CelebA's own on-disk layout.

``generate_synthetic_celeba`` samples the attributes (``synthetic_attributes``), renders one JPEG per face
(``synthetic_render``) and writes ``img_align_celeba/``, ``list_attr_celeba.txt`` and
``list_eval_partition.txt`` exactly as CelebA ships them, so the one reader in ``pate.data.celeba`` (and any
CelebA tool) reads it. Like CelebA's official partition, the splits are contiguous blocks: train first, then
val, then test (the rows are i.i.d., so this is a random split).

Life cycle of the directory, so that a killed or repeated run is safe:

1. under an exclusive lock (parallel jobs generate once; the others wait, then reuse),
2. an existing completion marker ``.synthetic_celeba.json`` with the same parameters -> reuse untouched;
   with other parameters -> ``ValueError`` (never overwrite a dataset other runs may rely on);
3. otherwise the directory must be empty or carry the in-progress marker of an interrupted generation
   (then it is cleared and regenerated); a non-empty directory without either marker is refused, since it
   may hold real CelebA or other data;
4. write the in-progress marker, the images, the two list files (atomically), then the completion marker
   last, and drop the in-progress marker.
"""

from __future__ import annotations

import hashlib
import json
import logging
import math
import os
import shutil
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from pate.data.celeba_layouts import IDENTITY_FILE
from pate.data.celeba import (
    ATTRIBUTE_FILE,
    ATTRIBUTE_NAMES,
    IMAGE_DIR,
    PARTITION_FILE,
)
from pate.data.labelled_images import SPLITS
from pate.data.pool import process_pool
from pate.data.synthetic_attributes import LATENT_NAMES, sample_attributes
from pate.data.synthetic_render import render_face
from pate.io import atomic_write_json, atomic_write_text, exclusive_lock
from pate.progress import progress_bar

log = logging.getLogger(__name__)

MARKER = ".synthetic_celeba.json"
IN_PROGRESS = ".synthetic_celeba.in_progress.json"
_LOCK = ".synthetic_celeba.lock"
# Bump when the attribute model or the renderer changes what a given (parameters, seed) produces; it is
# recorded with the parameters, so a dataset made by other code is reported as a parameter mismatch.
GENERATOR_VERSION = 1
_CHUNK = 250  # images per worker task


def generate_synthetic_celeba(
    root: str | os.PathLike,
    num_images: int,
    image_size: int = 64,
    split_fractions: Sequence[float] = (0.8, 0.05, 0.15),
    seed: int = 0,
    num_workers: int = 0,
    progress: bool = True,
    images_per_person: int = 1,
    max_images_per_person: int = 35,
) -> Path:
    """Generate (or reuse) a synthetic CelebA of ``num_images`` faces of ``image_size`` px under ``root``.

    ``split_fractions`` are the (train, val, test) shares; every split with a positive share gets at least
    one image. Deterministic per ``seed``: the same parameters give byte-identical files, whatever
    ``num_workers``. Returns the resolved root.

    ``images_per_person`` > 1 shows people, as CelebA does (10,177 people, about 20 images each, up to 35): each
    person has 1 + Binomial(max - 1, (mean - 1) / (max - 1)) images, mean ``images_per_person`` and at most
    ``max_images_per_person`` (the last person takes what is left of ``num_images``); a person's images share
    their traits and face (``sample_attributes``, ``render_face``), ``identity_CelebA.txt`` names each image's
    person, and the splits cut between people. With 1, the set is the one of before people existed, byte for
    byte, and so are its parameters.
    """
    params = check_synthetic_params(
        num_images, image_size, split_fractions, seed, num_workers, images_per_person, max_images_per_person
    )
    root = Path(root).expanduser().resolve()
    root.mkdir(parents=True, exist_ok=True)
    with exclusive_lock(root / _LOCK):
        marker = root / MARKER
        if marker.exists():
            recorded = json.loads(marker.read_text())
            found = recorded.get("params")
            if found != params:
                raise ValueError(
                    f"{root} already holds a synthetic CelebA generated with {found}, but {params} was requested; "
                    f"point data.root at another directory or delete {root}"
                )
            damage = _damage(root, recorded.get("files"), params["num_images"])
            if damage is None:
                log.info("reusing the synthetic CelebA in %s", root)
                return root
            log.warning(
                "the synthetic CelebA in %s is damaged (%s); regenerating it (deterministic: the same files as before)",
                root,
                damage,
            )
            marker.unlink()
        elif not (root / IN_PROGRESS).exists():
            strangers = sorted(p.name for p in root.iterdir() if p.name != _LOCK)
            if strangers:
                raise ValueError(
                    f"{root} is not empty ({strangers[:5]}) and holds no synthetic-CelebA marker; refusing to "
                    f"generate into it (it may hold real CelebA or other data). Use an empty or new directory."
                )
        else:
            log.warning("%s holds an interrupted generation; regenerating it", root)
        atomic_write_json(root / IN_PROGRESS, {"params": params})
        _clear(root)
        _generate(root, params, num_workers, progress)
        atomic_write_json(marker, {"params": params, "files": _fingerprint(root)})
        (root / IN_PROGRESS).unlink()
    return root


def _fingerprint(root: Path) -> dict:
    """What a complete set holds: the SHA-256 of the text files (the identity file where the set shows people),
    the image names and their total size."""
    images = sorted(os.scandir(root / IMAGE_DIR), key=lambda entry: entry.name)
    texts = [name for name in (ATTRIBUTE_FILE, PARTITION_FILE, IDENTITY_FILE) if (root / name).is_file()]
    return {
        **{name: hashlib.sha256((root / name).read_bytes()).hexdigest() for name in texts},
        "images": len(images),
        "image_bytes": sum(entry.stat().st_size for entry in images),
    }


def _damage(root: Path, recorded: dict | None, num_images: int) -> str | None:
    """None when ``root`` still holds the set the marker describes, else what is wrong with it: a missing or
    changed text file, or missing, extra or resized images (their bytes are not hashed: 100k files a run)."""
    for name in (ATTRIBUTE_FILE, PARTITION_FILE):
        if not (root / name).is_file():
            return f"{name} is missing"
    if not (root / IMAGE_DIR).is_dir():
        return f"{IMAGE_DIR}/ is missing"
    current = _fingerprint(root)
    if recorded is None:  # a set from before fingerprints were recorded: check the count only
        return (
            None
            if current["images"] == num_images
            else f"{IMAGE_DIR}/ holds {current['images']} of {num_images} images"
        )
    changed = [key for key in recorded if recorded[key] != current.get(key)]
    return None if not changed else "changed: " + ", ".join(changed)


def check_synthetic_params(
    num_images, image_size, split_fractions, seed, num_workers, images_per_person=1, max_images_per_person=35
) -> dict:
    def is_int(v) -> bool:
        return isinstance(v, (int, np.integer)) and not isinstance(v, bool)

    if not is_int(images_per_person) or images_per_person < 1:
        raise ValueError(f"images_per_person={images_per_person!r}; expected an integer >= 1 (1: one per person)")
    if not is_int(max_images_per_person) or max_images_per_person < images_per_person:
        raise ValueError(
            f"max_images_per_person={max_images_per_person!r}; expected an integer >= images_per_person="
            f"{images_per_person}"
        )

    if not is_int(num_images) or num_images < 1:
        raise ValueError(f"num_images={num_images!r}; expected a positive integer")
    if not is_int(image_size) or image_size < 16:
        raise ValueError(f"image_size={image_size!r}; expected an integer >= 16 (pixels per side)")
    if not is_int(seed) or seed < 0:
        raise ValueError(f"seed={seed!r}; expected a non-negative integer")
    if not is_int(num_workers) or num_workers < 0:
        raise ValueError(f"num_workers={num_workers!r}; expected an integer >= 0")
    fractions = [float(f) for f in split_fractions]
    if len(fractions) != 3 or min(fractions) < 0 or not math.isclose(sum(fractions), 1.0, abs_tol=1e-6):
        raise ValueError(
            f"split_fractions={tuple(split_fractions)}; expected three shares (train, val, test) >= 0 summing to 1"
        )
    people = {}
    if images_per_person > 1:  # only then: a set of one image per person keeps the parameters of before
        people = {"images_per_person": int(images_per_person), "max_images_per_person": int(max_images_per_person)}
    counts = np.bincount(_split_codes(int(num_images), fractions, people, int(seed)), minlength=3)
    empty = [name for name, f, n in zip(SPLITS, fractions, counts) if f > 0 and n == 0]
    if empty:
        raise ValueError(
            f"num_images={num_images} leaves the {empty} split(s) empty with split_fractions={fractions}"
            + (f" and images_per_person={images_per_person} (the splits cut between people)" if people else "")
        )
    return {
        "num_images": int(num_images),
        "image_size": int(image_size),
        "split_fractions": fractions,
        "seed": int(seed),
        "generator_version": GENERATOR_VERSION,
        **people,
    }


def _people(num_images: int, people: dict, seed: int) -> np.ndarray | None:
    """int64 [num_images]: each image's person, 0..P - 1 in image order (a person's images are consecutive), or
    None for one image per person. Counts 1 + Binomial(max - 1, (mean - 1) / (max - 1)), from the seed's own
    stream; the last person takes what is left."""
    if not people:
        return None
    mean, most = people["images_per_person"], people["max_images_per_person"]
    rng = np.random.default_rng([seed, 2])
    p = (mean - 1) / (most - 1) if most > 1 else 0.0
    counts = 1 + rng.binomial(most - 1, p, size=num_images // mean + 1)
    while counts.sum() < num_images:  # a draw far below the mean: draw more people
        counts = np.concatenate([counts, 1 + rng.binomial(most - 1, p, size=len(counts))])
    last = int(np.searchsorted(np.cumsum(counts), num_images))
    counts = counts[: last + 1]
    counts[-1] -= counts.sum() - num_images
    return np.repeat(np.arange(len(counts)), counts)


def _split_codes(num_images: int, fractions: Sequence[float], people: dict, seed: int) -> np.ndarray:
    """int8 [num_images] split codes: contiguous blocks (train, val, test) of ``_split_counts`` images; where the
    set shows people, each person's images take the split of their first image, so the cuts fall between people."""
    split = np.repeat(np.array(list(SPLITS.values()), dtype=np.int8), _split_counts(num_images, fractions))
    person = _people(num_images, people, seed)
    if person is None:
        return split
    _, first = np.unique(person, return_index=True)
    return split[first][person]


def _split_counts(num_images: int, fractions: Sequence[float]) -> list[int]:
    val, test = round(fractions[1] * num_images), round(fractions[2] * num_images)
    return [num_images - val - test, val, test]


def _clear(root: Path) -> None:
    shutil.rmtree(root / IMAGE_DIR, ignore_errors=True)
    for name in (ATTRIBUTE_FILE, PARTITION_FILE, IDENTITY_FILE):
        (root / name).unlink(missing_ok=True)


def _file_names(num_images: int) -> list[str]:
    width = max(6, len(str(num_images)))  # CelebA: 000001.jpg ... 202599.jpg
    return [f"{i + 1:0{width}d}.jpg" for i in range(num_images)]


def _generate(root: Path, params: dict, num_workers: int, progress: bool) -> None:
    n, size, seed = params["num_images"], params["image_size"], params["seed"]
    people = {key: params[key] for key in ("images_per_person", "max_images_per_person") if key in params}
    person = _people(n, people, seed)
    sample = sample_attributes(n, np.random.default_rng([seed, 0]), person)
    names = _file_names(n)
    image_dir = root / IMAGE_DIR
    image_dir.mkdir()
    jobs = [
        (
            str(image_dir),
            names[i : i + _CHUNK],
            i,
            sample.true[i : i + _CHUNK],
            sample.latents[i : i + _CHUNK],
            size,
            seed,
            None if person is None else person[i : i + _CHUNK],
        )
        for i in range(0, n, _CHUNK)
    ]
    with (
        progress_bar(total=n, desc=f"rendering synthetic CelebA ({size}px)", unit="img", disable=not progress) as bar,
        process_pool(num_workers) as pool,
    ):
        for done in pool.imap_unordered(_render_chunk, jobs) if pool is not None else map(_render_chunk, jobs):
            bar.update(done)

    split = _split_codes(n, params["split_fractions"], people, seed)
    attr_lines = [str(n), " ".join(ATTRIBUTE_NAMES)]
    plus_minus = 2 * sample.labels.astype(int) - 1
    attr_lines += [name + "".join(f" {v:2d}" for v in row) for name, row in zip(names, plus_minus)]
    atomic_write_text(root / ATTRIBUTE_FILE, "\n".join(attr_lines) + "\n")
    atomic_write_text(root / PARTITION_FILE, "".join(f"{name} {code}\n" for name, code in zip(names, split)))
    if person is not None:  # CelebA's identity file: '<file name> <person>', people numbered from 1 as CelebA's
        atomic_write_text(root / IDENTITY_FILE, "".join(f"{name} {who + 1}\n" for name, who in zip(names, person)))


def _render_chunk(job) -> int:
    """Render and save one block of images (runs in a worker process)."""
    image_dir, names, start, true, latents, size, seed, person = job
    for k, name in enumerate(names):
        rng = np.random.default_rng([seed, 1, start + k])  # per image, so any chunking gives the same file
        person_rng = None if person is None else np.random.default_rng([seed, 3, int(person[k])])  # their face
        attributes = dict(zip(ATTRIBUTE_NAMES, true[k].astype(bool)))
        img = render_face(attributes, dict(zip(LATENT_NAMES, latents[k])), size, rng, person_rng)
        img.save(os.path.join(image_dir, name), "JPEG", quality=int(rng.integers(80, 96)))
    return len(names)


__all__ = ["GENERATOR_VERSION", "IN_PROGRESS", "MARKER", "check_synthetic_params", "generate_synthetic_celeba"]
