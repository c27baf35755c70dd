"""Rebuilding a changed dataset: the CPU of an --overwrite rebuild against a clean build of it.

The changes, in turn: the manifest grown 10%, one video file replaced, every video copied elsewhere
without its times; each rebuild against a clean build of the same videos. CPU: the build process's
and its workers' user + system seconds, imports excluded. Then what knowing a video file costs.
"""

from __future__ import annotations

import os
import pathlib
import shutil
import time

import builds
import timing
import video_sets

FILE_BYTES = 256 * 1024  # each file of the identity measure (a fingerprint reads 48 KiB of it)

CONFIG = {"name": "rebuild", "num_workers": 0}
CLEAN = {**CONFIG, "keep_cache": False}


def write_manifest(manual_dir: str, videos: list[str]) -> None:
    os.makedirs(manual_dir, exist_ok=True)
    lines = "".join(f"{path} class{i % 4}\n" for i, path in enumerate(videos))
    pathlib.Path(manual_dir, "train.txt").write_text(lines)


def cpu(result: dict) -> float:
    return result["build_process_cpu"] + result["workers_cpu"]


def folder_bytes(folder: pathlib.Path) -> int:
    return sum(p.stat().st_size for p in folder.rglob("*") if p.is_file())


def clean_build(manual_dir: str, out: str) -> dict:
    """A build of `manual_dir` into a fresh data dir, removed after."""
    data_dir = os.path.join(out, "clean")
    shutil.rmtree(data_dir, ignore_errors=True)
    result = builds.build_dataset(manual_dir, data_dir, CLEAN)
    shutil.rmtree(data_dir, ignore_errors=True)
    return result


def check_at_scale(out: str, lines: int) -> tuple[float, float, float]:
    """CPU s, s and MiB of the record of the check a build makes over a prepared dataset, for
    `lines` manifest lines of empty files (Kinetics 700: 650k; each recorded with its stat and
    fingerprint): manifests read and checked, a stat each (the record vouching for every
    file), the record written (by the first build) and read back, the two compared."""
    from video_tfrecords import VideoConfig
    from video_tfrecords.ingest import changes, manifest, provenance

    manual_dir = pathlib.Path(out, "scale")
    manual_dir.mkdir(parents=True, exist_ok=True)
    paths = [f"k700/c{i % 700}/{i:07d}_000010_000020.mp4" for i in range(lines)]
    for folder in {os.path.dirname(path) for path in paths}:
        os.makedirs(manual_dir / folder, exist_ok=True)
    for path in paths:
        open(manual_dir / path, "wb").close()
    (manual_dir / "train.txt").write_text("".join(f"{p} c{i % 700}\n" for i, p in enumerate(paths)))
    config = VideoConfig(name="default")
    dataset = manifest.read_dataset(manual_dir)
    provenance.write(manual_dir, provenance.collect(manual_dir, dataset, config))

    def check():
        old = provenance.read(manual_dir)
        current = provenance.collect(manual_dir, manifest.read_dataset(manual_dir), config, old)
        if changes.differences(old, current):
            raise RuntimeError("the same inputs differ")

    start = time.perf_counter()
    used = timing.cpu_time(check)
    seconds = time.perf_counter() - start
    size = (manual_dir / provenance.FILE).stat().st_size / 2**20
    shutil.rmtree(manual_dir)
    return used, seconds, size


def identity_table(out: str, quick: bool) -> None:
    """What knowing a video file costs (`file_identity`), per 10,000 files of FILE_BYTES and at
    650k (x65), median of interleaved rounds: a stat each (the check before videos were known by
    content), the check of files the record vouches for, each file read (a first build; files
    moved or copied without times) with the page cache warm and dropped. Then the whole check of
    650k unchanged lines, and two records of 650k moved lines compared."""
    from video_tfrecords.ingest import file_identity

    count, rounds = (1000, 1) if quick else (10_000, 3)
    timing.log(f"what knowing {count:,} files costs, {rounds} rounds")
    folder = pathlib.Path(out, "identity")
    paths = [str(folder / f"c{i % 100}" / f"{i:07d}.mp4") for i in range(count)]
    for path in paths:
        os.makedirs(os.path.dirname(path), exist_ok=True)
        pathlib.Path(path).write_bytes(os.urandom(FILE_BYTES))
    identities = file_identity.identities
    known = {found[0]: found[1:] for found in identities(paths)}

    def drop_page_cache():  # posix_fadvise: no root needed
        for path in paths:
            descriptor = os.open(path, os.O_RDONLY)
            os.posix_fadvise(descriptor, 0, 0, os.POSIX_FADV_DONTNEED)
            os.close(descriptor)

    def timed(function, before=lambda: None):
        def measure():
            before()
            start, cpu = time.perf_counter(), time.process_time()
            function()
            return time.perf_counter() - start, time.process_time() - cpu

        return measure

    results = timing.interleave({
        "a stat each (before: path, size, mtime)": timed(lambda: [os.stat(p) for p in paths]),
        "unchanged: a stat each, vouched by the record": timed(lambda: identities(paths, known)),
        "each file read (new, moved, copied), page cache warm": timed(lambda: identities(paths)),
        "each file read, page cache dropped": timed(lambda: identities(paths), drop_page_cache),
    }, rounds)  # fmt: skip
    shutil.rmtree(folder)
    rows = []
    for name, runs in results.items():
        wall, cpu = (timing.median([r[k] for r in runs]) * 10_000 / count for k in (0, 1))
        at_scale = f"{wall * 65:.0f} s, {cpu * 65:.0f} CPU s"
        rows.append([name, f"{wall:.2f} s, {cpu:.2f} CPU s", at_scale])
    lines = 10_000 if quick else 650_000
    timing.log(f"the whole check of {lines:,} lines")
    used, seconds, size = check_at_scale(out, lines)
    what = f"the whole check of {lines:,} unchanged lines (empty files): manifests, stats, "
    rows.append([f"{what}record ({size:.0f} MiB) read and compared", "",
                 f"{seconds:.1f} s, {used:.1f} CPU s"])  # fmt: skip
    rows.append(["650,000 lines all moved: the two records compared", "", compare_moved(650_000)])
    header = [f"Knowing {count:,} video files ({FILE_BYTES // 1024} KiB each)", "per 10k files",
              "at 650k (x65)"]  # fmt: skip
    print("\n".join(timing.table(header, rows)))


def compare_moved(lines: int) -> str:
    """CPU s of `changes.differences` of two records of `lines` lines naming the same videos
    (the same content) under another folder, which it tells in one line."""
    from video_tfrecords.ingest import changes

    def record(folder: str) -> dict:
        videos = [[i + 1, f"{folder}/c{i % 700}/{i:07d}.mp4", f"c{i % 700}", None,
                   f"{folder}/c{i % 700}/{i:07d}.mp4", 1_000_000 + i, 1, 1, f"{i:032x}"]
                  for i in range(lines)]  # fmt: skip
        split = {"file": "/m/train.txt", "sha256": "", "lines": lines, "videos": videos}
        return {"format": 2, "encoding_format": 5, "manual_dir": "/m", "config": {},
                "class_names": [], "splits": {"train": split}}  # fmt: skip

    old, new, found = record("/disk1"), record("/disk2"), []
    used = timing.cpu_time(lambda: found.extend(changes.differences(old, new)))
    if len(found) != 1 or "by another path: /disk1 -> /disk2" not in found[0]:
        raise RuntimeError(f"unexpected: {found}")
    return f"{used:.1f} CPU s, one line"


def main() -> None:
    parser = timing.arguments(__doc__, "rebuild")
    parser.add_argument("--videos", type=int, default=100,
                        help="videos before the growth (see performance.md)")
    parser.add_argument("--identity-only", action="store_true",
                        help="only what knowing a video file costs")  # fmt: skip
    args = parser.parse_args()
    out = os.path.abspath(args.out)
    if args.identity_only:
        identity_table(out, args.quick)
        return
    quick = (10, 96, 128, 50)
    count, height, width, frames = quick if args.quick else (args.videos, 720, 1280, 300)
    grown = count + max(1, count // 10)
    sources = video_sets.synthetic_videos(os.path.join(out, f"videos_{height}p"), grown + 1,
                                          frames, height, width)  # fmt: skip
    videos = [os.path.join(out, "set", os.path.basename(p)) for p in sources[:-1]]
    spare = sources[-1]
    os.makedirs(os.path.join(out, "set"), exist_ok=True)
    for source, path in zip(sources, videos):
        shutil.copyfile(source, path)  # a copy: one of them gets replaced
    manual_dir, data_dir = os.path.join(out, "manual"), os.path.join(out, "data")
    shutil.rmtree(data_dir, ignore_errors=True)

    timing.log(f"building {count} videos")
    write_manifest(manual_dir, videos[:count])
    first = builds.build_dataset(manual_dir, data_dir, CONFIG)
    timing.log(f"the manifest grown to {grown}: rebuild, then a clean build")
    write_manifest(manual_dir, videos[:grown])
    grown_rebuild = builds.build_dataset(manual_dir, data_dir, CONFIG, overwrite=True)
    grown_clean = clean_build(manual_dir, out)
    dataset = pathlib.Path(data_dir, "video_tfrecords", "rebuild")
    cache = pathlib.Path(data_dir, "downloads", "video_tfrecords_cache", "rebuild")
    dataset_size, cache_size = folder_bytes(dataset), folder_bytes(cache)
    timing.log("unchanged: the check alone")
    unchanged = builds.build_dataset(manual_dir, data_dir, CONFIG)
    timing.log("one video replaced: rebuild, then a clean build")
    shutil.copyfile(spare, videos[0])
    replaced_rebuild = builds.build_dataset(manual_dir, data_dir, CONFIG, overwrite=True)
    replaced_clean = clean_build(manual_dir, out)
    timing.log("the videos copied elsewhere without their times, the manifest written again")
    moved = [os.path.join(out, "moved", os.path.basename(path)) for path in videos[:grown]]
    shutil.rmtree(os.path.join(out, "moved"), ignore_errors=True)
    os.makedirs(os.path.join(out, "moved"))
    for source, path in zip(videos, moved):
        shutil.copyfile(source, path)  # new times
    write_manifest(manual_dir, moved)
    moved_rebuild = builds.build_dataset(manual_dir, data_dir, CONFIG, overwrite=True)
    shutil.rmtree(data_dir, ignore_errors=True)
    shutil.rmtree(os.path.join(out, "moved"))

    size = f"{width}x{height}, {frames} frames"
    line = lambda r: f"{cpu(r):.2f} CPU s ({r['seconds']:.1f} s)"
    over = lambda a, b: f"{cpu(a) / cpu(b):.3f}"
    again = f"--overwrite, {grown} videos"
    rows = [
        ["first build", f"{count} videos ({size})", line(first), "", ""],
        ["manifest grown by 10%", again, line(grown_rebuild), "", ""],
        ["", "clean build of them", line(grown_clean), "", ""],
        ["", "", "", over(grown_rebuild, grown_clean), "<= 0.2"],
        ["one video file replaced", again, line(replaced_rebuild), "", ""],
        ["", "clean build of them", line(replaced_clean), "", ""],
        ["", "", "", over(replaced_rebuild, replaced_clean), "<= 0.1"],
        ["videos copied elsewhere, no times kept", again, line(moved_rebuild),
         over(moved_rebuild, replaced_clean), "<= 0.1"],
        ["unchanged", "the check, nothing built", line(unchanged), "", ""],
        ["kept cache", f"{cache_size / 2**20:.1f} MiB for a {dataset_size / 2**20:.1f} MiB "
         "dataset", "", f"{cache_size / dataset_size:.3f}", ""],
    ]  # fmt: skip
    header = ["Rebuild", "Variant", "Result", "Ratio", "Target"]
    print("\n".join(timing.table(header, rows)))
    print()
    identity_table(out, args.quick)


if __name__ == "__main__":
    main()
