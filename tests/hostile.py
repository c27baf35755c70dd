"""Writing hostile or damaged copies of a prepared dataset, and measuring what a read costs.

Records are rewritten with protobuf's own parser and writer, and every checksum is recomputed
with google-crc32c (not the package's): each frame's `frame_crc32c` and the TFRecord's length
and data CRCs, so that only what the values are can tell the damage. A read's memory is its
process's peak resident set (VmHWM, reset through /proc/self/clear_refs): what C libraries
allocate counts, which tracemalloc would not see; its time, the process's CPU time.
"""

from __future__ import annotations

import json
import os
import shutil
import struct
import time

import google_crc32c
from tensorflow_datasets.proto import tf_example_pb2

Example = tf_example_pb2.Example


def masked_crc(data: bytes) -> int:
    crc = google_crc32c.value(data)
    return (((crc >> 15) | (crc << 17)) + 0xA282EAD8) & 0xFFFFFFFF


def framed(data: bytes) -> bytes:
    """One TFRecord record: its length, the length's masked CRC, the data, the data's."""
    length = struct.pack("<Q", len(data))
    checksum = struct.pack("<I", masked_crc(data))
    return length + struct.pack("<I", masked_crc(length)) + data + checksum


def records(path) -> list[bytes]:
    """The data of every record of a TFRecord file."""
    data, pos, found = open(path, "rb").read(), 0, []
    while pos < len(data):
        (size,) = struct.unpack_from("<Q", data, pos)
        found.append(data[pos + 12 : pos + 12 + size])
        pos += 16 + size
    return found


def shards(folder) -> list[str]:
    return sorted(os.path.join(folder, n) for n in os.listdir(folder) if ".tfrecord-" in n)


def with_frame_checksums(example: Example) -> Example:
    """`example` with what it stores of its frames recomputed (when it stores them): each
    frame's CRC32C, each frame's size, and the CRC32C of the frame list as protobuf
    serializes it (2.6.0's `frame_sizes`, `video_crc32c`)."""
    feature = example.features.feature
    frames = feature["video"].bytes_list
    recomputed = {
        "frame_crc32c": [google_crc32c.value(f) for f in frames.value],
        "video_crc32c": [google_crc32c.value(frames.SerializeToString())],
    }
    for name, values in recomputed.items():
        if name in feature:
            stored = feature[name].int64_list.value
            del stored[:]
            stored.extend(values)
    if "frame_sizes" in feature:  # one bytes value: the sizes as little-endian int32
        sizes = feature["frame_sizes"].bytes_list.value
        sizes[:] = [struct.pack(f"<{len(frames.value)}i", *map(len, frames.value))]
    return example


def copy_with(source_dir, target_dir, records_of_shard: dict[int, list[bytes]]) -> str:
    """A copy of a prepared dataset folder whose shard i holds `records_of_shard[i]` (framed
    with valid CRCs; dataset_info.json's shard lengths follow)."""
    shutil.rmtree(target_dir, ignore_errors=True)
    shutil.copytree(source_dir, target_dir)
    paths = shards(target_dir)
    for index, data in records_of_shard.items():
        with open(paths[index], "wb") as f:
            f.write(b"".join(framed(r) for r in data))
    info_path = os.path.join(target_dir, "dataset_info.json")
    info = json.load(open(info_path))
    for split in info["splits"]:
        lengths = split["shardLengths"]
        for index, data in records_of_shard.items():
            lengths[index] = str(len(data))
    json.dump(info, open(info_path, "w"))
    return target_dir


def _segment(data: bytes, markers: tuple[int, ...]) -> int | None:
    """Where the first segment with one of `markers` starts; None if the header ends (a frame
    cut short) before one."""
    pos = 2
    while pos + 3 < len(data):
        if data[pos + 1] in markers:
            return pos
        pos += 2 + (data[pos + 2] << 8 | data[pos + 3])
    return None


def set_size(frame: bytes, height: int, width: int) -> bytes:
    """A JPEG whose start-of-frame header claims height x width (the rest as it was; a frame
    cut before its header stays as it is)."""
    data, pos = bytearray(frame), _segment(frame, (0xC0, 0xC1, 0xC2))
    if pos is None or pos + 9 > len(data):
        return frame
    data[pos + 5 : pos + 9] = struct.pack(">HH", height, width)
    return bytes(data)


def bomb(frame: bytes, side: int) -> bytes:
    """The issue's frame: a real frame's header claiming side x side pixels, 16 bytes of scan
    data and the end-of-image marker (a few hundred bytes in all; a frame cut before its
    start of scan: only its size claimed)."""
    data = set_size(frame, side, side)
    pos = _segment(data, (0xDA,))  # start of scan
    if pos is None:
        return data
    end = pos + 2 + (data[pos + 2] << 8 | data[pos + 3])
    return data[:end] + bytes(16) + b"\xff\xd9"


def _high_water_mb() -> float:
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024
    raise RuntimeError("no VmHWM in /proc/self/status")


def reset_peak() -> float:
    """Resets this process's peak resident set to its current one (Linux 4.0 on); returns it
    in MB."""
    with open("/proc/self/clear_refs", "w") as f:
        f.write("5")
    return _high_water_mb()


WALL_LIMIT = 10.0  # s: a read that takes longer than this, however loaded the machine, hangs


def measured(read, wall_limit: float | None = WALL_LIMIT):
    """(result, error, seconds, MB of resident memory above the start) of `read()`. Seconds
    are the process's CPU time (every thread's): on a shared machine, waiting for a core is not
    the read's cost; a wall time past `wall_limit` fails anyway (None: a start-up, tracing)."""
    base = reset_peak()
    start, wall = time.process_time(), time.perf_counter()
    result, error = None, None
    try:
        result = read()
    except Exception as e:  # noqa: BLE001 - the caller asserts on its type
        error = e
    waited = time.perf_counter() - wall
    assert wall_limit is None or waited < wall_limit, f"a read took {waited:.1f} s of wall time"
    return result, error, time.process_time() - start, _high_water_mb() - base


def rewritten(data: bytes, edit) -> bytes:
    """Record `data` with `edit(feature_map)` applied and what it stores of its frames
    recomputed (`with_frame_checksums`): only the edited value is wrong."""
    example = Example.FromString(data)
    edit(example.features.feature)
    return with_frame_checksums(example).SerializeToString()
