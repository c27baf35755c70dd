"""Build cost per frame with deinterlacing on and off, on progressive and interlaced input.

`bikes.mp4` as shipped (progressive), and woven into interlaced MPEG-2 (PS) and H.264 MBAFF (TS) as
tests/test_deinterlace.py makes it. The build's whole per-video work (`encoding.encode_video`) on
one pinned core, CPU ms per frame, interleaved rounds; progressive input must cost and store the
same.
"""

from __future__ import annotations

import dataclasses
import os

import builds
import timing
import video_sets  # puts tests/ on the path
import videos  # tests/videos.py: the interlaced writer
from timing import arguments, cpu_time, interleave, log, median, ratio, rounds_note, table
from video_tfrecords import VideoConfig

INTERLACED = {  # name: (codec, extension, options), as tests/test_deinterlace.py
    "interlaced MPEG-2 (.mpg)": ("mpeg2video", "mpg", {"b": "12M", "qmax": "4"}),
    "interlaced H.264 MBAFF (.ts)": ("libx264", "ts", {"crf": "12", "preset": "veryfast"}),
}


def inputs(out: str, source_frames: int | None) -> dict[str, str]:
    """{name: path}: bikes.mp4 as shipped, and its interlaced versions (made once, kept)."""
    bikes = video_sets.fetch_clip(out)
    frames = video_sets.read_rgb(bikes)[:source_frames]
    found = {"progressive H.264 (bikes.mp4)": bikes}
    for name, (codec, ext, options) in INTERLACED.items():
        path = os.path.join(out, f"bikes_interlaced_{len(frames)}.{ext}")
        if not os.path.exists(path):
            log(f"writing {path}")
            videos.write(path + ".partial." + ext, videos.woven(frames), codec, options=options,
                         interlaced=True)  # fmt: skip
            os.replace(path + ".partial." + ext, path)
        found[name] = path
    return found


def build_work(path: str, config: VideoConfig) -> tuple[list[bytes], int]:
    """The build's work on one video: (its JPEG frames, frames decoded)."""
    examples, result = builds.encoded(builds.whole_video(path, config))
    (whole,) = result["parts"]
    return [jpeg for example in examples for jpeg in example["video"]], whole["source_num_frames"]


def main() -> None:
    """Checks what each variant stores, then times them in interleaved rounds; prints a table."""
    args = arguments(__doc__, "real", rounds=9).parse_args()
    timing.one_core(args.cpu)
    on = VideoConfig(name="default", segment_frames=None)
    configs = {"on": on, "off": dataclasses.replace(on, deinterlace=False)}
    paths = inputs(args.out, 48 if args.quick else None)
    counts = {}
    for name, path in paths.items():  # also the warm-up
        stored = {key: build_work(path, config) for key, config in configs.items()}
        (jpegs_on, counts[name]), (jpegs_off, _) = stored["on"], stored["off"]
        same = jpegs_on == jpegs_off
        if same != name.startswith("progressive"):
            raise RuntimeError(f"{name}: deinterlacing {'changed' if same else 'kept'} the frames")
    times = interleave({(name, key): (lambda p=path, c=config: cpu_time(lambda: build_work(p, c)))
                        for name, path in paths.items() for key, config in configs.items()},
                       args.rounds)  # fmt: skip
    rows = []
    for name in paths:
        per_frame = {key: [t / counts[name] for t in times[(name, key)]] for key in configs}
        ms = [f"{median(per_frame[key]) * 1e3:.3f}" for key in ("off", "on")]
        rows.append([name, counts[name], *ms, ratio(per_frame["on"], per_frame["off"])])
    header = ["input", "frames", "deinterlace=False", 'deinterlace="auto"', "auto / False"]
    print(f"Build work per frame (decode, deinterlace, resize to 256p, JPEG q90), CPU ms on one "
          f"core, {rounds_note(args.rounds)}. Progressive frames stored byte-identical either "
          "way; interlaced ones differ:\n")  # fmt: skip
    print("\n".join(table(header, rows)))


if __name__ == "__main__":
    main()
