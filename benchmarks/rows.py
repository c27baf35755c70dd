"""The results of each section as rows of the table, with the targets checked."""

from __future__ import annotations

import os

import storage
import timing
from report import Row, Target
from sections import (
    A0,
    A2,
    BATCH,
    BOUND_1,
    BOUND_N,
    BUILD_1,
    BUILD_N,
    C_LARGE,
    D_CROP,
    FLIP,
    FUSED,
    NUM_FRAMES,
    SKIP,
    SKIP_TFDS,
    TRAIN,
    TRAIN_U8,
    UNFUSED,
    A,
    B,
    C,
    D,
    E,
)

LOAD = "Load 64-frame clips"
CROP = "Fused crop 224"
TRAINING = "Training input"
BUILD = "Build"
STORAGE = "Storage per video"
MEMORY = "Build memory, 1 long video"


def mb(size: float) -> str:
    """Bytes in MB (10^6)."""
    return f"{size / 1e6:.1f} MB"


def ratio_row(benchmark: str, label: str, value: timing.Ratio, threshold=None) -> Row:
    """A row holding one ratio, checked against a >= threshold when given."""
    target = None if threshold is None else Target(label, value.median, threshold)
    return Row(benchmark, "", "", f"{label} = {value}", target)


def load_rows(rates: dict[str, list[float]], frames_per_video: float) -> list[Row]:
    """Loading: every variant's rate, (a) against the others, and the read + parse cost."""
    med = {name: timing.median(r) for name, r in rates.items()}
    rows = [
        Row(LOAD, name, f"{med[name]:.1f} clips/s = {med[name] * NUM_FRAMES:.0f} frames/s")
        for name in (A, A2, A0, B, C, C_LARGE, D, E)
        if name in rates
    ]
    if A in rates:
        for label, other, threshold in [("a/d", D, 0.9), ("a/b", B, 3), ("a/c", C, 3)]:
            rows.append(ratio_row(LOAD, label, timing.ratio(rates[A], rates[other]), threshold))
        if C_LARGE in rates:
            rows.append(ratio_row(LOAD, "a/c2", timing.ratio(rates[A], rates[C_LARGE])))
        if E in rates:
            rows.append(ratio_row(LOAD, "a/e", timing.ratio(rates[A], rates[E])))
        rows.append(ratio_row(LOAD, "a2/d", timing.ratio(rates[A2], rates[D])))
        rows.append(ratio_row(LOAD, "a0/d", timing.ratio(rates[A0], rates[D])))
    return rows + parse_rows(rates, med, frames_per_video)


def parse_rows(rates, med, frames_per_video: float) -> list[Row]:
    """Read + parse cost, its share of (a), and the a/b ceiling it leaves."""
    per_record = 1e3 / med[SKIP]
    rows = [Row(LOAD, SKIP, f"{med[SKIP]:.0f} records/s = {per_record:.1f} ms/record")]
    skip_ms = 1e3 / med[SKIP_TFDS]
    rows.append(Row(LOAD, SKIP_TFDS, f"{med[SKIP_TFDS]:.0f} records/s = {skip_ms:.1f} ms/record"))
    skip_cost = timing.ratio(rates[SKIP], rates[SKIP_TFDS])
    rows.append(Row(LOAD, "", "", f"SkipDecoding time / EncodedFrames time = {skip_cost}"))
    if A in rates:
        share = timing.ratio(rates[A], rates[SKIP])
        rows.append(Row(LOAD, "", "", f"read+parse time / (a) time = {share}"))
    frame_ms = 1e3 / (med[D] * NUM_FRAMES)  # per frame at full parallelism, from the bound
    ceiling = (per_record + frames_per_video * frame_ms) / (per_record + NUM_FRAMES * frame_ms)
    frames = f"{frames_per_video:.0f}/{NUM_FRAMES}"
    result = f"{frames} = {frames_per_video / NUM_FRAMES:.2f}; {ceiling:.2f} after read+parse"
    rows.append(Row(LOAD, "a/b ceiling: frames per record / per clip", result))
    return rows


def crop_rows(rates: dict[str, list[float]]) -> list[Row]:
    """Fused vs unfused crop, and the training input."""
    if FUSED not in rates:
        return []
    med = {name: timing.median(r) for name, r in rates.items()}
    rows = [Row(CROP, name, f"{med[name]:.1f} clips/s") for name in (FUSED, UNFUSED)]
    rows.append(ratio_row(CROP, "fused/unfused", timing.ratio(rates[FUSED], rates[UNFUSED]), 1.4))
    rows.append(Row(CROP, D_CROP, f"{med[D_CROP]:.1f} clips/s; (d), whole frames: {med[D]:.1f}"))
    rows.append(
        ratio_row(CROP, "decode alone: box/whole frame", timing.ratio(rates[D_CROP], rates[D]))
    )
    rows.append(Row(CROP, FLIP, f"{med[FLIP]:.1f} clips/s"))
    rows.append(ratio_row(CROP, "random flip/no flip", timing.ratio(rates[FLIP], rates[FUSED])))
    for name in (TRAIN, TRAIN_U8):
        result = f"{med[name]:.1f} clips/s = {med[name] / BATCH:.1f} batches/s"
        rows.append(Row(TRAINING, name, result))
    rows.append(ratio_row(TRAINING, "float32/uint8", timing.ratio(rates[TRAIN], rates[TRAIN_U8])))
    rows.append(
        ratio_row(TRAINING, "uint8/fused crop", timing.ratio(rates[TRAIN_U8], rates[FUSED]))
    )
    rows.append(ratio_row(TRAINING, "float32/fused crop", timing.ratio(rates[TRAIN], rates[FUSED])))
    return rows


def build_rows(rates: dict, count: int, pool: float, cli: float | None) -> list[Row]:
    """Building: rates, the two targets, start-up costs."""
    total = {name: [r.total for r in results] for name, results in rates.items()}
    steady = {name: [r.steady for r in results] for name, results in rates.items()}
    rows = []
    for name in (BOUND_1, BUILD_1, BOUND_N, BUILD_N):
        result = f"{timing.median(total[name]):.2f} videos/s"
        if name in (BUILD_1, BUILD_N):
            result += f"; steady state {timing.median(steady[name]):.2f}"
        rows.append(Row(BUILD, name, result))
    rows += [
        ratio_row(
            BUILD, "single/bound (1 core)", timing.ratio(total[BUILD_1], total[BOUND_1]), 0.8
        ),
        ratio_row(BUILD, "parallel/single", timing.ratio(total[BUILD_N], total[BUILD_1]), 1.7),
        ratio_row(BUILD, "parallel/single, steady", timing.ratio(steady[BUILD_N], steady[BUILD_1])),
        ratio_row(
            BUILD, "parallel/bound (all cores)", timing.ratio(total[BUILD_N], total[BOUND_N])
        ),
        ratio_row(
            BUILD,
            "bound, all cores/1 core (what the cores give the bound itself)",
            timing.ratio(total[BOUND_N], total[BOUND_1]),
        ),
        Row(BUILD, f"start-up of the {os.cpu_count()} build workers", f"{pool:.2f} s per build"),
    ]
    if cli is not None:
        variant = "`tfds build` CLI, num_workers=0: wall incl. imports"
        rows.append(Row(BUILD, variant, f"{cli:.1f} s for {count} videos = {count / cli:.2f}/s"))
    return rows


def storage_rows(footprints: list[storage.Footprint], sample: int) -> list[Row]:
    """Storage: bytes per video plain and gzipped; q90 against raw."""
    rows = [
        Row(
            STORAGE,
            f.name,
            f"{mb(f.bytes_per_video)}; gzip {mb(f.gzip_bytes_per_video)}",
            f"gzip/plain = {f.gzip_ratio:.3f}",
        )
        for f in footprints
    ]
    by_name = {f.name: f for f in footprints}
    if storage.RAW in by_name:
        q90 = by_name[storage.Q90].bytes_per_video / by_name[storage.RAW].bytes_per_video
        target = Target("q90/raw", q90, 0.1, at_most=True)
        rows.append(Row(STORAGE, "", "", f"q90/raw = {q90:.3f}", target))
    note = f"(gzip level 6, ratio measured on up to {sample >> 20} MB of each format)"
    rows.append(Row(STORAGE, note, ""))
    return rows


def memory_rows(rss: dict) -> list[Row]:
    """Build memory: peak RSS growth over the JPEG bytes of the video, for information.

    The build now leaves serializing and buffering to TFDS's writer (which holds
    up to ~1 GB of a split before spilling to disk); the bound that matters, all
    of `tfds build`'s processes on a 20-minute video, is benchmarks/build_memory.py.
    """
    growth = rss["peak"] - rss["baseline"]
    video = f"{rss['frames']} frames: JPEG {mb(rss['jpeg_bytes'])}, raw {mb(rss['raw_bytes'])}"
    return [
        Row(MEMORY, "the video", video),
        Row(MEMORY, "RSS after a warm-up build (baseline)", mb(rss["baseline"])),
        Row(MEMORY, "peak RSS (VmHWM) building it, num_workers=1", mb(rss["peak"])),
        Row(MEMORY, "", "", f"(peak - baseline)/JPEG bytes = {growth / rss['jpeg_bytes']:.3f}"),
        Row(MEMORY, "", "", f"(peak - baseline)/raw bytes = {growth / rss['raw_bytes']:.2f}"),
    ]
