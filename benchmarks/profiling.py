"""Where the time goes: (a) vs (d) and read+parse with perf, the one-core build with py-spy.

    python benchmarks/profiling.py          # after benchmarks/run.py (reuses its data)

Loading: each pipeline runs in its own process; once warm, `perf record`
samples it (native code: libjpeg, memcpy, CRC, TensorFlow), and the samples
are grouped into categories, reported as core-milliseconds per clip.
Building: py-spy samples a one-core `download_and_prepare` (Python frames).
"""

from __future__ import annotations

import argparse
import collections
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time

import building

PERF_HZ = 999
CATEGORIES = [  # (category, regex on the symbol); the first match wins
    ("JPEG Huffman decoding", r"decode_mcu|fill_bit_buffer|jpeg_huff|process_restart"),
    (
        "JPEG IDCT, colour, rest",
        r"jsimd_|idct|upsample|ycc_rgb|decompress|jpeg_|Uncompress|DecodeImage",
    ),
    ("memcpy, memset (user and kernel)", r"memmove|memcpy|memset|_copy_to_iter|copy_user"),
    ("TFRecord CRC32", r"crc|CRC"),
    ("Example proto parsing", r"Parse|parse|tstring|protobuf"),
    ("malloc and page faults", r"malloc|_int_free|free_|page|mmap|munmap|fault|folio|clear_"),
    ("threads, executor, tf.data", r"Eigen|Executor|Propagator|futex|schedule|task_switch|clock"),
    ("Python", r"_PyEval|Py[A-Z_]|gc_|visit_"),
]


def drain(variant: str, seconds: float, out: str) -> None:
    """Runs one loading pipeline: prints READY once warm, then its clips/s over `seconds`."""
    import loading

    data_dir = os.path.join(out, "data")
    pipelines = {
        "a": lambda: loading.clip_decoder(data_dir, "default", 64),
        "d": lambda: loading.jpeg_bound(loading.stored_frames(data_dir, "default", 8), 64),
        "skip": lambda: loading.read_parse(data_dir, "default"),
    }
    iterator = iter(pipelines[variant]())
    for _ in range(4):
        next(iterator)
    print("READY", flush=True)
    count, start = 0, time.perf_counter()
    while time.perf_counter() - start < seconds:
        next(iterator)
        count += 1
    print(count / (time.perf_counter() - start), flush=True)


def perf_profile(variant: str, seconds: float, out: str) -> dict[str, float]:
    """{category: core-ms per clip} of one pipeline, sampled by perf once warm."""
    data = os.path.join(tempfile.mkdtemp(), "perf.data")
    command = [sys.executable, __file__, "--drain", variant, f"--seconds={seconds + 2}"]
    command.append(f"--out={out}")
    child = subprocess.Popen(command, env=building.child_env(), stdout=subprocess.PIPE, text=True)
    if child.stdout.readline().strip() != "READY":
        raise RuntimeError(f"{variant} did not start")
    perf = ["perf", "record", "-F", str(PERF_HZ), "-g", "-p", str(child.pid), "-o", data]
    subprocess.run([*perf, "--", "sleep", str(seconds)], capture_output=True, check=True)
    rate = float(child.stdout.readline())
    child.wait()
    report = subprocess.run(
        [
            "perf",
            "report",
            "-i",
            data,
            "-n",
            "--no-children",
            "--sort",
            "sym",
            "-g",
            "none",
            "--stdio",
        ],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    shutil.rmtree(os.path.dirname(data))
    clips = rate * seconds
    return {c: samples / PERF_HZ * 1e3 / clips for c, samples in categorize(report).items()}


def categorize(report: str) -> collections.Counter:
    """perf samples per category, from `perf report -n --sort sym` text."""
    samples = collections.Counter()
    for line in report.splitlines():
        match = re.match(r"\s*[\d.]+%\s+(\d+)\s+\[.\]\s+(.*)", line)
        if match:
            count, symbol = int(match.group(1)), match.group(2)
            category = next((c for c, pattern in CATEGORIES if re.search(pattern, symbol)), "other")
            samples[category] += count
            samples["total"] += count
    return samples


def loading_table(seconds: float, out: str) -> str:
    """Core-ms per clip of each category, for (a), (d) and read+parse alone."""
    names = {"a": "(a) ClipDecoder(64)", "d": "(d) bound", "skip": "read+parse (per record)"}
    results = [perf_profile(v, seconds, out) for v in names]
    lines = [
        "| core-ms per clip (perf samples) | " + " | ".join(names.values()) + " |",
        "| --- |" + " --- |" * len(names),
    ]
    for category in [c for c, _ in CATEGORIES] + ["other", "total"]:
        cells = [f"{ms.get(category, 0.0):.1f}" for ms in results]
        lines.append(f"| {category} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def build_profile(out: str) -> str:
    """Shares of the one-core build's samples in its main Python functions (py-spy)."""
    py_spy = shutil.which("py-spy") or os.path.join(os.path.dirname(sys.executable), "py-spy")
    folder = tempfile.mkdtemp()
    raw = os.path.join(folder, "spy.txt")
    build = building.child_command(
        "build",
        f"--manual_dir={os.path.join(out, 'manual', 'build')}",
        f"--data_dir={os.path.join(folder, 'data')}",
        '--config={"name": "profile", "num_workers": 1}',
        f"--cpu={building.one_cpu()}",
        "--cv_threads=1",
    )
    command = [py_spy, "record", "-r", "200", "--format", "raw", "-o", raw, "--", *build]
    subprocess.run(command, env=building.child_env(), capture_output=True, check=True)
    shares = build_shares(raw)
    shutil.rmtree(folder)
    lines = ["| share of download_and_prepare | % |", "| --- | --- |"]
    lines += [f"| {name} | {share * 100:.1f} |" for name, share in shares.items()]
    return "\n".join(lines)


BUILD_PARTS = {  # part -> frame substring, first match from the leaf up
    "OpenCV decode (capture.read)": "iter_frames",
    "resize": "resize (video_tfrecords",
    "JPEG encode (imencode)": "encode_jpeg",
    "TFDS serialize": "serialize_example",
    "TFDS write + shuffle": "tensorflow_datasets/core/writer.py",
}


def build_shares(raw: str) -> dict[str, float]:
    """Shares of py-spy samples under download_and_prepare, by part of the build."""
    counts, total = collections.Counter(), 0
    with open(raw) as f:
        for line in f:
            stack, _, count = line.rstrip().rpartition(" ")
            if "download_and_prepare" not in stack:
                continue
            total += int(count)
            frames = stack.split(";")[::-1]
            part = next(
                (p for frame in frames for p, key in BUILD_PARTS.items() if key in frame), "other"
            )
            counts[part] += int(count)
    return {part: counts[part] / total for part in [*BUILD_PARTS, "other"]}


def main() -> None:
    """Profiles loading (perf) and building (py-spy); prints two markdown tables."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", default=os.path.join(os.path.dirname(__file__), "out"))
    parser.add_argument("--seconds", type=float, default=8.0)
    parser.add_argument("--drain", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.drain:
        drain(args.drain, args.seconds, args.out)
        return
    if shutil.which("perf"):
        print(loading_table(args.seconds, args.out), end="\n\n")
    else:
        print("perf not found: loading profile skipped\n")
    print(build_profile(args.out))


if __name__ == "__main__":
    main()
