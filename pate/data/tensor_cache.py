"""Image files decoded once into a memory-mapped uint8 tensor ``[N, 3, S, S]``, shared by every reader.

Decoding a JPEG per sample per epoch would dominate CPU training, so a reader hands ``decoded_images`` its image
files in row order, resolved and stat'ed (``pate.data.image_files``); the first call decodes each once
(``decode_image``: 8 bits per channel, RGB, central square, antialiased resize) into
``cache_dir/<name>-<S>px-<key>.npy``, where the key hashes the cache format, the data's location and ``S``. Later
calls reuse it only while it still describes the files on disk:

* the JSON sidecar (written last, atomically) records what was decoded: the reader's ``source`` (e.g. the label
  file's size and modification time) and a digest of every image file's name, size and modification time
  (nanoseconds), plus the tensor's shape, byte size and BLAKE2b checksum;
* every call stats every image file again (about 1 s for CelebA's 202,599 on a local disk) and re-verifies the
  sidecar, the size and the checksum. An image replaced, truncated or edited since it was decoded changes its size
  or modification time: the cache is rebuilt, with a warning naming the first such file. What this does not
  notice: an edit that keeps both the byte size and the modification time (a tool that restores mtimes, a clock
  set back); delete the cache (``python -m pate.cache``) after such an edit.

Any other problem (a missing or garbled sidecar, a damaged tensor) is logged and rebuilt, never used.
"""

from __future__ import annotations

import hashlib
import io
import json
import logging
import os
from collections import Counter
from collections.abc import Sequence
from pathlib import Path

import numpy as np
from PIL import Image

from pate.data.image_files import ImageFiles
from pate.data.pool import process_pool
from pate.io import atomic_write_bytes, atomic_write_json, exclusive_lock, open_npy_for_writing
from pate.progress import progress_bar

log = logging.getLogger(__name__)

# Bump when the decoding (bit depth, crop, resize) or the sidecar changes: it is part of every cache key.
CACHE_FORMAT = 3
_CHUNK = 256  # images per worker task


def decode_image(path: str | os.PathLike, image_size: int) -> tuple[np.ndarray, str, str]:
    """One image as (uint8 [3, image_size, image_size], its PIL mode before conversion to RGB, how its bit depth
    was brought to 8 bits: "" when it had 8 bits, else a note for the console, ``_eight_bits``).

    Crop: the central square of side min(w, h) (for CelebA's 178 x 218 aligned faces: all 178 columns and rows
    20..197, so the aligned face stays centred and only forehead/neck margins are lost), then an antialiased
    (Lanczos) resize to ``image_size``. For JPEGs the decoder is first asked for a DCT-downscaled draft no
    smaller than ``image_size`` on the short side, which is both faster and itself an antialiasing step.
    Grayscale images are replicated to three channels; an alpha channel is dropped (PIL's ``convert("RGB")``).
    A mode without a fixed range (32-bit integers or floats) raises ``UnscalableImage`` naming the file and the mode.
    """
    try:
        with Image.open(path) as img:
            mode, stored = img.mode, _stored_as(img)
            img.draft("RGB", (image_size, image_size))
            img, depth = _eight_bits(img, stored, path)
            img = img.convert("RGB")
            w, h = img.size
            side = min(w, h)
            left, top = (w - side) // 2, (h - side) // 2
            # crop, then resize: resize(box=...) would let the filter reach outside the square
            img = img.crop((left, top, left + side, top + side)).resize(
                (image_size, image_size), Image.Resampling.LANCZOS
            )
            return np.asarray(img, dtype=np.uint8).transpose(2, 0, 1), mode, depth
    except UnscalableImage:
        raise
    except (OSError, ValueError, Image.DecompressionBombError) as err:  # truncated, corrupt, not an image
        raise ValueError(
            f"{path}: cannot decode this image ({' '.join(str(err).split())}); replace it with a "
            f"readable copy of the original file"
        ) from None


class UnscalableImage(ValueError):
    """An image whose mode has no fixed range to scale to 8 bits: refused by its mode, not called damaged."""


_SIXTEEN_BITS = ("I;16", "I;16B", "I;16L", "I;16N")  # unsigned 16-bit grayscale, as PIL names its byte orders


def _stored_as(img: Image.Image) -> str:
    """The raw mode the file stores its pixels in (e.g. "I;16B" for a 16-bit PNG), read from the decoder's tile
    before decoding replaces it; "" when the plugin does not say."""
    args = img.tile[0][3] if img.tile else None  # (codec, extents, offset, args); a plain tuple in older Pillow
    raw = args[0] if isinstance(args, tuple) and args else args
    return raw if isinstance(raw, str) else ""


def _eight_bits(img: Image.Image, stored: str, path: str | os.PathLike) -> tuple[Image.Image, str]:
    """``img`` with 8 bits per channel, and a note on how ("" when it had 8 bits already). PIL's own conversion
    of a 16-bit image to 8 bits clips at 255 -- nearly every pixel of an X-ray would be white -- so 16-bit
    grayscale is scaled by its range instead: v * 255 / 65535, rounded. 16-bit RGB(A) PNGs are reduced by PIL's
    decoder itself to each value's high byte, v // 256 (within 1 of that scale; never clipped). Modes without a
    fixed range (32-bit integers, floats) are refused rather than guessed."""
    if img.mode in _SIXTEEN_BITS or (img.mode == "I" and stored in _SIXTEEN_BITS):
        values = np.asarray(img).astype(np.uint32)
        # round(v * 255 / 65535) = round(v / 257); v / 257 is never a half (257 is odd), so this is exact
        scaled = ((values + 128) // 257).astype(np.uint8)
        return Image.fromarray(scaled), f"16-bit grayscale ({img.mode}): scaled to 8 bits by 255/65535"
    if img.mode in ("I", "F") or img.mode.startswith("I;"):
        kind = "a floating-point" if img.mode == "F" else "an integer"
        stored_as = f", stored as {stored}" if stored else ""
        raise UnscalableImage(
            f"{path}: {kind} image (PIL mode {img.mode}{stored_as}) has no fixed range to scale "
            f"to 8 bits; expected 1, 8 or 16 bits per channel: convert it first (e.g. window it "
            f"into 16-bit or 8-bit integers)"
        )
    if ";16" in stored:
        return img, f"16-bit {img.mode} ({stored}): PIL's decoder kept each value's high byte (v // 256)"
    return img, ""


def _decode_chunk(args: tuple[list[str], int]) -> tuple[np.ndarray, Counter, Counter]:
    paths, image_size = args
    decoded = [decode_image(p, image_size) for p in paths]
    return (
        np.stack([pixels for pixels, _, _ in decoded]),
        Counter(mode for _, mode, _ in decoded),
        Counter(depth for _, _, depth in decoded if depth),
    )


def check_decode_args(image_size, num_workers) -> None:
    """``ValueError`` naming the argument unless ``image_size`` >= 1 and ``num_workers`` >= 0 are integers."""
    if not isinstance(image_size, (int, np.integer)) or isinstance(image_size, bool) or image_size < 1:
        raise ValueError(f"image_size={image_size!r}; expected a positive integer (pixels per side)")
    if not isinstance(num_workers, (int, np.integer)) or isinstance(num_workers, bool) or num_workers < 0:
        raise ValueError(f"num_workers={num_workers!r}; expected an integer >= 0")


def _stats_digest(names: Sequence[str], stats: np.ndarray) -> str:
    h = hashlib.sha256("\0".join(names).encode())
    h.update(np.ascontiguousarray(stats).tobytes())
    return h.hexdigest()[:32]


def decoded_images(
    name: str,
    location: str,
    files: ImageFiles,
    image_size: int,
    cache_dir: str | os.PathLike,
    source: dict,
    num_workers: int = 0,
    progress: bool = True,
) -> tuple[np.memmap, str]:
    """(read-only uint8 memmap [len(files.paths), 3, S, S] of the files in order, its BLAKE2b checksum), from the
    cache (module docstring) or decoded now. ``location`` (the data's resolved directory) and ``image_size`` key
    the file; ``source`` (what else identifies the data: the label file's size and time) and the image files'
    stats (``files.stats``) must match the sidecar for it to be reused."""
    check_decode_args(image_size, num_workers)
    names = list(files.paths)
    stats = files.stats
    shape = (len(names), 3, int(image_size), int(image_size))
    keyed = {"format": CACHE_FORMAT, "location": location, "image_size": int(image_size)}
    key = hashlib.sha256(json.dumps(keyed, sort_keys=True).encode()).hexdigest()[:16]
    identity = {**keyed, "source": source, "files": _stats_digest(names, stats)}
    cache_dir = Path(cache_dir).expanduser()
    cache_dir.mkdir(parents=True, exist_ok=True)
    data_file = cache_dir / f"{name}-{image_size}px-{key}.npy"
    sidecar = data_file.with_suffix(".json")
    stats_file = data_file.with_suffix(".stats")  # int64 [N, 2] (npy format), to name a changed file

    with exclusive_lock(data_file.with_suffix(".lock")):
        problem = _cache_problem(data_file, sidecar, stats_file, identity, shape, names, stats)
        if problem is not None:
            if problem != "absent":
                log.warning("tensor cache %s is not usable (%s); rebuilding it", data_file, problem)
            _build(data_file, sidecar, stats_file, identity, names, stats, shape, num_workers, progress)
        checksum = json.loads(sidecar.read_text())["blake2b"]  # verified just above
    return np.load(data_file, mmap_mode="r"), checksum


def _say_conversions(modes: Counter, depths: Counter) -> None:
    """Say once, when the images are decoded (later runs read the cache), what was converted: each bit depth
    brought to 8 bits, and each mode converted to RGB."""
    for note, count in sorted(depths.items()):
        log.warning("%d image(s) were %s", count, note)
    converted = {mode: count for mode, count in sorted(modes.items()) if mode != "RGB"}
    if converted:
        log.warning(
            "converted %s to RGB (grayscale replicated to 3 channels, alpha dropped)",
            ", ".join(f"{count} {mode} image(s)" for mode, count in converted.items()),
        )


def _checksum(path: Path, chunk: int = 1 << 24) -> str:
    h = hashlib.blake2b(digest_size=16)
    with open(path, "rb") as fh:
        while block := fh.read(chunk):
            h.update(block)
    return h.hexdigest()


def _changed_file(stats_file: Path, names: Sequence[str], stats: np.ndarray) -> str:
    """Which image changed since the decode, from the stats saved beside the cache (when they are readable)."""
    try:
        old = np.load(stats_file)
    except (OSError, ValueError):
        return "the image files' sizes or modification times changed since they were decoded"
    if old.shape != stats.shape:
        return f"the data lists {len(stats)} images, {len(old)} were decoded"
    changed = np.flatnonzero((old != stats).any(axis=1))
    if not changed.size:
        return "the image files were renamed or reordered since they were decoded"
    i = int(changed[0])
    what = f"size {old[i, 0]} -> {stats[i, 0]} bytes" if old[i, 0] != stats[i, 0] else "modification time changed"
    more = f" and {changed.size - 1} other image(s)" if changed.size > 1 else ""
    return f"{names[i]} changed since it was decoded ({what}){more}"


def _cache_problem(
    data_file: Path,
    sidecar: Path,
    stats_file: Path,
    identity: dict,
    shape: tuple[int, ...],
    names: Sequence[str],
    stats: np.ndarray,
) -> str | None:
    """None when the cache is complete, intact and describes the files on disk, else a short reason ('absent' when
    never built)."""
    if not data_file.exists() and not sidecar.exists():
        return "absent"
    try:
        meta = json.loads(sidecar.read_text())
    except (OSError, ValueError) as err:
        return f"unreadable sidecar {sidecar.name}: {err}"
    recorded = meta.get("identity", {})
    if (
        isinstance(recorded, dict)
        and {**recorded, "files": identity["files"]} == identity
        and recorded.get("files") != identity["files"]
    ):
        return _changed_file(stats_file, names, stats)
    if recorded != identity or tuple(meta.get("shape", ())) != shape or meta.get("dtype") != "uint8":
        return f"sidecar describes {meta.get('shape')} {meta.get('dtype')} for {recorded}"
    if not data_file.exists():
        return "data file missing"
    if data_file.stat().st_size != meta.get("bytes"):
        return f"size {data_file.stat().st_size} bytes, sidecar says {meta.get('bytes')}"
    if _checksum(data_file) != meta.get("blake2b"):
        return "checksum mismatch"
    return None


def _build(
    data_file: Path,
    sidecar: Path,
    stats_file: Path,
    identity: dict,
    names: Sequence[str],
    stats: np.ndarray,
    shape: tuple[int, ...],
    num_workers: int,
    progress: bool,
) -> None:
    sidecar.unlink(missing_ok=True)  # from here on, a crash leaves a cache that is detected as damaged
    # A killed decode leaves its full-size temporary file (GBs for real CelebA). The caller holds the cache's
    # lock, so no other process is writing one now: every temporary file here is such a leftover.
    for stale in data_file.parent.glob(f".{data_file.name}.tmp-*"):
        log.warning("removing %s, left by an interrupted decode", stale)
        stale.unlink(missing_ok=True)
    tmp = data_file.with_name(f".{data_file.name}.tmp-{os.getpid()}")
    modes: Counter = Counter()
    depths: Counter = Counter()
    try:
        out = open_npy_for_writing(tmp, np.uint8, shape)  # a full disk: an error here, not SIGBUS later
        size = shape[-1]
        jobs = [(list(names[i : i + _CHUNK]), size) for i in range(0, len(names), _CHUNK)]
        bar = progress_bar(total=len(names), desc=f"decoding images to {size}px", unit="img", disable=not progress)
        with bar, process_pool(num_workers) as pool:
            start = 0
            for block, block_modes, block_depths in (
                pool.imap(_decode_chunk, jobs) if pool is not None else map(_decode_chunk, jobs)
            ):
                out[start : start + len(block)] = block
                start += len(block)
                modes.update(block_modes)
                depths.update(block_depths)
                bar.update(len(block))
        out.flush()
        del out
        os.replace(tmp, data_file)
    finally:
        tmp.unlink(missing_ok=True)
    _say_conversions(modes, depths)
    buffer = io.BytesIO()
    np.save(buffer, stats)
    atomic_write_bytes(stats_file, buffer.getvalue())
    meta = {
        "identity": identity,
        "shape": list(shape),
        "dtype": "uint8",
        "bytes": data_file.stat().st_size,
        "blake2b": _checksum(data_file),
    }
    atomic_write_json(sidecar, meta)


__all__ = ["CACHE_FORMAT", "UnscalableImage", "check_decode_args", "decode_image", "decoded_images"]
