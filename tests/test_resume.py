"""A killed `tfds build` resumes: what it had encoded is not decoded again, and the
dataset it finishes is the one an uninterrupted build writes, record for record."""

import dataclasses
import itertools
import json
import pathlib
import signal
import subprocess
import sys
import time

import pytest
import tensorflow as tf
import tensorflow_datasets as tfds

import synthetic
from video_tfrecords import VideoConfig
from video_tfrecords.records.schema import DATASET_VERSION

TFDS = str(pathlib.Path(sys.executable).parent / "tfds")
CONFIG = {"name": "resume", "num_workers": 1, "short_side": None, "keep_cache": True}
NUM_VIDEOS = 12


@pytest.fixture(scope="module")
def manual_dir(tmp_path_factory):
    folder = tmp_path_factory.mktemp("manual")
    for i in range(NUM_VIDEOS):
        frames = synthetic.moving_frames(100, 240, 320, seed=i)
        synthetic.write_video(str(folder / f"v{i}.mp4"), frames)
    (folder / "train.txt").write_text("".join(f"v{i}.mp4 c{i % 3}\n" for i in range(9)))
    (folder / "test.txt").write_text("".join(f"v{i}.mp4 c{i % 3}\n" for i in range(9, 12)))
    return folder


def command(manual_dir, data_dir, config=CONFIG):
    return [
        TFDS,
        "build",
        "video_tfrecords",
        f"--manual_dir={manual_dir}",
        f"--data_dir={data_dir}",
        f"--config={json.dumps(config)}",
    ]


def cache_entries(data_dir) -> dict[str, int]:
    """done.json of every finished cache entry -> its modification time (ns)."""
    root = pathlib.Path(data_dir) / "downloads" / "video_tfrecords_cache"
    return {str(p.relative_to(root)): p.stat().st_mtime_ns for p in root.rglob("done.json")}


def dataset_files(data_dir) -> dict[str, list[tf.train.Example]]:
    """Every shard file's records, parsed, in file order.

    (Parsed, because protobuf does not promise one byte order for a map's
    entries: two builds of the same examples need not be equal byte for byte.)
    """
    folder = pathlib.Path(data_dir) / "video_tfrecords" / "resume" / DATASET_VERSION
    return {
        p.name: [tf.train.Example.FromString(r.numpy()) for r in tf.data.TFRecordDataset(str(p))]
        for p in folder.iterdir()
        if "-of-" in p.name
    }


def split_lengths(data_dir):
    builder = tfds.builder("video_tfrecords/resume", data_dir=str(data_dir))
    return {name: split.shard_lengths for name, split in builder.info.splits.items()}


@pytest.fixture(scope="module")
def whole_build(manual_dir, tmp_path_factory):
    data_dir = tmp_path_factory.mktemp("whole")
    subprocess.run(command(manual_dir, data_dir), check=True, capture_output=True, timeout=600)
    return data_dir


def test_killed_build_resumes_without_decoding_again(manual_dir, whole_build, tmp_path):
    data_dir = tmp_path / "data"
    process = subprocess.Popen(
        command(manual_dir, data_dir), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
    )
    deadline = time.time() + 300
    while len(cache_entries(data_dir)) < NUM_VIDEOS // 2:
        assert process.poll() is None, "the build finished before it could be killed"
        assert time.time() < deadline
        time.sleep(0.01)
    process.send_signal(signal.SIGKILL)
    process.wait()
    done_before = cache_entries(data_dir)
    assert NUM_VIDEOS // 2 <= len(done_before) < NUM_VIDEOS
    with pytest.raises(Exception, match="(?i)not found|no such|does not exist|incomplete"):
        tfds.load("video_tfrecords/resume", split="train", data_dir=str(data_dir))

    subprocess.run(command(manual_dir, data_dir), check=True, capture_output=True, timeout=600)
    done_after = cache_entries(data_dir)
    assert len(done_after) == NUM_VIDEOS
    assert {k: done_after[k] for k in done_before} == done_before  # not encoded again
    assert split_lengths(data_dir) == split_lengths(whole_build)
    assert dataset_files(data_dir) == dataset_files(whole_build)


def test_damaged_cache_entries_are_encoded_again(manual_dir, whole_build, tmp_path):
    download_dir = tmp_path / "downloads"
    config = VideoConfig(**CONFIG)

    def build(data_dir):
        builder = tfds.builder("video_tfrecords", config=config, data_dir=str(data_dir))
        builder.download_and_prepare(
            download_dir=str(download_dir),
            download_config=tfds.download.DownloadConfig(manual_dir=str(manual_dir)),
        )

    build(tmp_path / "first")
    entries = sorted((download_dir / "video_tfrecords_cache").rglob("done.json"))
    assert len(entries) == NUM_VIDEOS
    damaged = entries[0].parent / "00000.pickle"
    data = bytearray(damaged.read_bytes())
    data[len(data) // 2] ^= 0xFF  # a flipped bit in the frames
    damaged.write_bytes(bytes(data))
    entries[1].unlink()  # an entry whose writer was killed before it finished
    build(tmp_path / "second")
    assert dataset_files(tmp_path / "second") == dataset_files(whole_build)
    assert len(list((download_dir / "video_tfrecords_cache").rglob("done.json"))) == NUM_VIDEOS


def test_a_successful_build_removes_its_cache(manual_dir, tmp_path):
    config = {**CONFIG, "keep_cache": False}
    subprocess.run(command(manual_dir, tmp_path, config), check=True, capture_output=True)
    assert not (tmp_path / "downloads" / "video_tfrecords_cache").exists()
    assert (
        sum(
            split.num_examples
            for split in tfds.builder(
                "video_tfrecords/resume", data_dir=str(tmp_path)
            ).info.splits.values()
        )
        == NUM_VIDEOS
    )


def test_a_resumed_build_spreads_its_cached_videos_among_the_rest(tmp_path):
    """The schedule that lets the build process read cached videos while workers encode."""
    from video_tfrecords.ingest import cache, encoding, manifest

    config = VideoConfig(**CONFIG)
    tasks = []
    for i in range(10):
        path = tmp_path / f"v{i}.mp4"
        path.write_bytes(b"not decoded here, video %d" % i)  # 10 contents
        entry = manifest.Entry("train.txt", i + 1, path.name, "c")
        tasks.append(encoding.Task("train", entry, 0, str(path), config, str(tmp_path / "cache")))
    assert encoding.resume_order(tasks) == tasks  # a fresh build: manifest order

    store = cache.Cache(tmp_path / "cache")
    for task in tasks[:4]:  # a build killed after its first 4 videos
        store.writer(encoding.cache_key(task)).finish({"fields": {}, "damage": None})
    order = [int(t.entry.path[1]) for t in encoding.resume_order(tasks)]
    assert sorted(order) == list(range(10))
    assert [i for i in order if i < 4] == [0, 1, 2, 3]  # each group keeps its order
    assert [i for i in order if i >= 4] == [4, 5, 6, 7, 8, 9]
    cached_positions = [p for p, i in enumerate(order) if i < 4]
    assert max(b - a for a, b in itertools.pairwise(cached_positions)) <= 3
    assert cached_positions[0] <= 2 and cached_positions[-1] >= 7  # spread over the whole run

    for task in tasks[4:]:
        store.writer(encoding.cache_key(task)).finish({"fields": {}, "damage": None})
    assert encoding.resume_order(tasks) == tasks  # all cached: nothing to overlap


def encode_tasks(tmp_path, video, *named, strict=False):
    """Tasks for `video` under (split, manifest path, label) triples, sharing one cache."""
    from video_tfrecords.ingest import encoding, manifest

    config = VideoConfig(name="tasks", num_workers=1, strict=strict)
    return [
        encoding.Task(
            split,
            manifest.Entry(f"{split}.txt", 1, path, str(label)),
            label,
            str(video),
            config,
            str(tmp_path / "cache"),
        )
        for split, path, label in named
    ]


def test_a_cached_video_takes_its_label_and_name_from_the_manifest_of_the_rerun(tmp_path):
    from video_tfrecords.ingest import encoding

    video = tmp_path / "a.mp4"
    synthetic.write_video(str(video), synthetic.moving_frames(6, 48, 64, seed=1))
    before, after, respelled = encode_tasks(
        tmp_path, video, ("train", "a.mp4", 3), ("train", "a.mp4", 7), ("train", "./a.mp4", 7)
    )
    encoding.encode(before)  # the killed build; then the manifest's label is fixed
    (cached,) = encoding.examples_of(encoding.encode(after))
    assert cached[0] == "a.mp4#0" and cached[1]["label"] == 7 and cached[1]["filename"] == "a.mp4"
    (other,) = encoding.examples_of(encoding.encode(respelled))
    assert other[0] == "./a.mp4#0" and other[1]["filename"] == "./a.mp4"
    folders = {p.parent for p in (tmp_path / "cache").rglob("done.json")}
    assert len(folders) == 1  # the entry is the file's content's, whatever the line calls it
    copy = dataclasses.replace(respelled, copy=1)  # a plan's second line naming the same file
    assert encoding.cache_key(copy) != encoding.cache_key(respelled)


def test_a_cache_that_cannot_be_written_fails_the_build_instead_of_skipping_videos(tmp_path):
    from video_tfrecords.ingest import encoding

    video = tmp_path / "a.mp4"
    synthetic.write_video(str(video), synthetic.moving_frames(6, 48, 64, seed=1))
    (tmp_path / "cache").write_text("a file where the cache folder should be")
    (task,) = encode_tasks(tmp_path, video, ("train", "a.mp4", 0))
    with pytest.raises(OSError):
        encoding.encode(task)


def test_a_damaged_video_cached_by_a_lenient_build_fails_a_strict_one(tmp_path):
    import videos
    from video_tfrecords.ingest import encoding

    whole = videos.make(tmp_path / "whole.mp4", num_frames=20)
    damaged = videos.damage_packet(whole, tmp_path / "damaged.mp4", 5)
    (lenient,) = encode_tasks(tmp_path, damaged, ("train", "damaged.mp4", 0))
    (strict,) = encode_tasks(tmp_path, damaged, ("train", "damaged.mp4", 0), strict=True)
    kept = encoding.encode(lenient)
    assert kept.entry is not None and kept.note["split"] == "train"
    refused = encoding.encode(strict)  # same cache entry: strict is not a frame field
    assert refused.entry is None and refused.skipped["reason"].endswith("(strict build)")
    assert refused.skipped["reason"].startswith(kept.note["reason"])
