"""The overview's storage rows: bytes per video of each format, and what GZIP would save."""

from __future__ import annotations

import glob
import os
import zlib
from dataclasses import dataclass

Q90 = "JPEG q90 records (default config)"
RAW = "raw uint8 records"
GZIP_LEVEL = 6  # zlib's default, what TFRecordOptions(compression_type="GZIP") uses
CHUNK = 1 << 20


@dataclass(frozen=True)
class Footprint:
    """Bytes per video of one format, plain and gzipped (the latter measured on a sample)."""

    name: str
    bytes_per_video: float
    gzip_ratio: float  # compressed / plain, on up to `sample` bytes

    @property
    def gzip_bytes_per_video(self) -> float:
        """Bytes per video once gzipped (plain bytes times the sampled ratio)."""
        return self.bytes_per_video * self.gzip_ratio


def record_files(data_dir: str, config: str) -> list[str]:
    """The TFRecord shards of a built config."""
    pattern = os.path.join(data_dir, "video_tfrecords", config, "*", "*.tfrecord*")
    return sorted(glob.glob(pattern))


def gzip_ratio(paths: list[str], sample: int) -> float:
    """Compressed / plain size of the first `sample` bytes of the files, gzip at level 6."""
    plain = packed = 0
    for path in paths:
        compressor = zlib.compressobj(GZIP_LEVEL, zlib.DEFLATED, 31)  # 31: gzip framing
        with open(path, "rb") as f:
            while plain < sample and (chunk := f.read(min(CHUNK, sample - plain))):
                plain += len(chunk)
                packed += len(compressor.compress(chunk))
        packed += len(compressor.flush())
        if plain >= sample:
            break
    return packed / plain


def footprint(name: str, paths: list[str], videos: int, sample: int) -> Footprint:
    """The footprint of `videos` videos stored in `paths`."""
    total = sum(os.path.getsize(p) for p in paths)
    return Footprint(name, total / videos, gzip_ratio(paths, sample))
