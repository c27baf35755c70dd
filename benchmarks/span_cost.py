"""Building a 10 s span of a 5-minute video against building a pre-trimmed copy of the same 10 s.

Each variant is the build's whole per-video work (`encoding.encode_video`, `default`) on one pinned
core, in interleaved rounds; the span must store the trimmed copy's frames (same indices, PSNR),
and the ratio is what seeking to the keyframe before the span costs. Decoding the long video from
its start to the span's end (a build that could not seek) is timed for scale.
"""

from __future__ import annotations

import json
import os

import cv2
import numpy as np

import builds
import timing
import video_sets  # puts tests/ on the path; video_sets.synthetic is tests/synthetic.py
from timing import arguments, cpu_time, interleave, log, median, ratio, rounds_note, table
from video_tfrecords import VideoConfig
from video_tfrecords.ingest import encoding, manifest, spans, video_io

FPS = 25
HEIGHT, WIDTH = video_sets.HEIGHT, video_sets.WIDTH


def scene_frames(first: int, count: int):
    """Frames `first` to `first + count` of the long video, a scene (10 s) in memory at a time."""
    scene = video_sets.SCENE_FRAMES
    for start in range(first - first % scene, first + count, scene):
        frames = video_sets.synthetic.moving_frames(scene, HEIGHT, WIDTH, start // scene)
        low, high = max(first, start) - start, min(first + count, start + scene) - start
        yield from frames[low:high]


def make(path: str, first: int, count: int) -> str:
    """The frames `first` to `first + count` as an mp4 (made once, kept in --out)."""
    if not os.path.exists(path):
        log(f"writing {path}")
        video_sets.write_h264(path, scene_frames(first, count), crf=18, preset="veryfast")
    return path


def span_task(path: str, start: float, end: float, config: VideoConfig) -> encoding.Task:
    """The build's task for one JSON Lines line naming the span (as `BuildRun.encoding_tasks`
    makes it)."""
    line = json.dumps({"path": path, "label": "x", "start": start, "end": end})
    folder = os.path.join(os.path.dirname(path), "manifest")
    os.makedirs(folder, exist_ok=True)
    with open(os.path.join(folder, "train.jsonl"), "w") as f:
        f.write(line + "\n")
    dataset = manifest.read_dataset(folder)
    (entry,) = dataset.splits["train"]
    part = spans.part_of(entry, dataset.ids, spans.feature_kinds([entry]))
    return encoding.Task("train", entry, part.label, path, config, "", 1, (part,))


def stored(task: encoding.Task) -> list[bytes]:
    """The build's work on the task: its JPEG frames."""
    return [jpeg for example in builds.encoded(task)[0] for jpeg in example["video"]]


def check(span: list[bytes], trimmed: list[bytes]) -> float:
    """The span stores the trimmed copy's frames: as many, each close (PSNR, dB; min)."""
    if len(span) != len(trimmed):
        raise RuntimeError(f"the span stored {len(span)} frames, the trimmed copy {len(trimmed)}")
    decode = lambda jpeg: cv2.imdecode(np.frombuffer(jpeg, np.uint8), cv2.IMREAD_COLOR)
    worst = np.inf
    for a, b in zip(span, trimmed):
        mse = np.mean((decode(a).astype(np.float64) - decode(b)) ** 2)
        worst = min(worst, np.inf if mse == 0 else 10 * np.log10(255**2 / mse))
    if worst < 35:
        raise RuntimeError(f"the span's frames differ from the trimmed copy's ({worst:.1f} dB)")
    return worst


def keyframe_before(path: str, start: float) -> float:
    """When the last keyframe at or before `start` shows (the container's packets)."""
    import av

    with av.open(path) as container:
        stream = container.streams.video[0]
        keys = [float(p.pts * stream.time_base) for p in container.demux(stream)
                if p.is_keyframe and p.pts is not None]  # fmt: skip
    return max(t for t in keys if t <= start + 1e-6)


def main() -> None:
    """Makes the videos, checks the span against the trimmed copy, times both; prints a table."""
    args = arguments(__doc__, "span", rounds=7).parse_args()
    minutes, start = (1, 30.3) if args.quick else (5, 152.3)
    end = start + 10
    first = int(np.ceil(start * FPS - 1e-6))  # the first frame at or after `start`
    count = int(np.ceil(end * FPS - 1e-6)) - first
    timing.one_core(args.cpu)
    os.makedirs(args.out, exist_ok=True)
    long_path = make(os.path.join(args.out, f"long_{minutes}min.mp4"), 0, minutes * 60 * FPS)
    trimmed_path = make(os.path.join(args.out, f"trimmed_{minutes}min_{first}.mp4"), first, count)
    config = VideoConfig(name="default", segment_frames=None)
    span = span_task(long_path, start, end, config)
    trimmed = builds.whole_video(trimmed_path, config)
    worst = check(stored(span), stored(trimmed))  # also the warm-up
    count_to_end = lambda: video_io.count_frames(long_path, start=0.0, end=end)
    times = interleave({"span": lambda: cpu_time(lambda: stored(span)),
                        "trimmed": lambda: cpu_time(lambda: stored(trimmed)),
                        "decode from 0": lambda: cpu_time(count_to_end)}, args.rounds)  # fmt: skip
    keyframe = keyframe_before(long_path, start)
    print(f"Building a 10 s span [{start} s, {end} s) of a {minutes}-minute 340x256 H.264 video "
          f"(keyframe before it at {keyframe:.2f} s) against a pre-trimmed copy of its {count} "
          f"frames: CPU s on one core, {rounds_note(args.rounds)}. The span's frames match the "
          f"copy's (min PSNR {worst:.1f} dB; both are decodes of the same frames, encoded "
          "apart).\n")  # fmt: skip
    names = {"span": "span of the long video", "trimmed": "pre-trimmed copy",
             "decode from 0": "decode only, from 0 s to the span's end (no seek)"}
    rows = [[what, f"{median(times[key]):.3f}",
             "1" if key == "trimmed" else ratio(times[key], times["trimmed"])]
            for key, what in names.items()]  # fmt: skip
    print("\n".join(table(["variant", "CPU s", "/ trimmed"], rows)))


if __name__ == "__main__":
    timing.main(main)
