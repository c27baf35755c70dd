"""Builds on a real Spark (local[2]) write what the plain local build writes: the same parsed
examples, split sizes, shard lengths, skip records, notes and class names, in TFRecord and
array_record; a worker killed mid-video and a job killed mid-way change nothing but the time."""

from __future__ import annotations

import contextlib
import functools
import json
import os
import pickle
import shutil
import signal
import subprocess
import sys
import threading
import time

import numpy as np
import psutil
import pytest
import tensorflow_datasets as tfds
from etils import epath

import synthetic
from video_tfrecords import ClipSource, VideoConfig, clip_dataset, spark_build
from video_tfrecords.engines import even_groups, grouped
from video_tfrecords.engines import spark as spark_engine
from video_tfrecords.ingest import cache, encoding, provenance, shards
from video_tfrecords.ingest.run import BuildRun
from video_tfrecords.records.schema import DATASET_VERSION

NAME = "spark_test"
CONFIG = {"name": NAME, "short_side": 32, "segment_frames": 8, "num_workers": 1}
BIG = "big one.mp4"  # 400 frames, 50 segments (the others: at most 3)
SPLITS = ("train", "validation")


@pytest.fixture(scope="module")
def manual(tmp_path_factory):
    """Ten real videos (some of several segments, one in a folder with a space in its name),
    one that is not a video, one missing, one cut short (kept with a note)."""
    folder = tmp_path_factory.mktemp("manual")
    lengths = [4, 9, 17, 6, 12, 3, 20, 5]
    for i, length in enumerate(lengths):
        synthetic.write_video(
            str(folder / f"v{i}.mp4"), synthetic.moving_frames(length, 48, 64, seed=i)
        )
    synthetic.write_video(str(folder / BIG), synthetic.moving_frames(400, 240, 320, seed=9))
    synthetic.write_video(str(folder / "sub dir" / "v 9.mp4"), synthetic.moving_frames(7, 40, 56))
    synthetic.write_video(
        str(folder / "whole.avi"), synthetic.moving_frames(24, 48, 64, seed=3), codec="MJPG"
    )
    data = (folder / "whole.avi").read_bytes()
    (folder / "half.avi").write_bytes(data[: len(data) // 2])
    (folder / "bad.mp4").write_bytes(b"not a video at all" * 10)
    train = [f"v{i}.mp4 c{i % 3}" for i in range(6)] + [
        f"{BIG} c1",
        "bad.mp4 c0",
        "missing.mp4 c2",
        "half.avi c1",
        "sub dir/v 9.mp4 c0",
    ]
    (folder / "train.txt").write_text("\n".join(train) + "\n")
    (folder / "val.txt").write_text("v6.mp4 c2\nv7.mp4 c0\n")  # 3 + 1 examples
    return folder


def download_config(**kwargs):
    """Four shards a split: TFDS's rule (ShardConfig) cuts into a power of two between
    size / 1 GiB and size / 64 MiB (its class defaults: TFDS 4.9.10 ignores the
    DownloadConfig's sizes there), so these tiny splits would get one shard."""
    return tfds.download.DownloadConfig(num_shards=4, **kwargs)


def plain_build(manual, data_dir, file_format=None):
    """The reference: TFDS's own build (`download_and_prepare`), in this process."""
    builder = tfds.builder(
        "video_tfrecords",
        data_dir=str(data_dir),
        config=VideoConfig(**CONFIG),
        file_format=file_format,
    )
    config = download_config(manual_dir=str(manual))
    if file_format:  # TFDS's size rule: one shard a split
        config = tfds.download.DownloadConfig(manual_dir=str(manual))
    builder.download_and_prepare(download_config=config)
    return builder


@pytest.fixture(scope="module")
def plain(manual, tmp_path_factory):
    """The reference: the plain local build of the same manual dir, same config and shard rule."""
    data_dir = tmp_path_factory.mktemp("plain")
    plain_build(manual, data_dir)
    return data_dir


@pytest.fixture(scope="module")
def plain_array_record(manual, tmp_path_factory):
    data_dir = tmp_path_factory.mktemp("plain_ar")
    plain_build(manual, data_dir, file_format="array_record")
    return data_dir


@pytest.fixture(scope="module")
def spark():
    session = spark_build.session("local[2,3]")  # 3 attempts a task, as on a cluster
    session.sparkContext.setLogLevel("ERROR")
    yield session
    session.stop()


def dataset_dir(data_dir):
    return data_dir / "video_tfrecords" / NAME / DATASET_VERSION


def parsed(data_dir, split):
    """Every example as TFDS reads it, by (filename, segment): TFRecord through tf.data (frames
    left as JPEG bytes), array_record through `as_data_source` (frames decoded)."""
    builder = tfds.builder(f"video_tfrecords/{NAME}", data_dir=str(data_dir))
    if builder.info.file_format == tfds.core.FileFormat.ARRAY_RECORD:
        examples = builder.as_data_source(split)
    else:
        decoders = {"video": tfds.decode.SkipDecoding()}
        examples = tfds.as_numpy(builder.as_dataset(split, decoders=decoders))
    by_key = {}
    for example in examples:
        key = (example["filename"], int(example["segment"]))
        assert key not in by_key, f"{key} written twice"
        by_key[key] = example
    return by_key


def assert_same_examples(data_dir, reference_dir):
    for split in SPLITS:
        got, want = parsed(data_dir, split), parsed(reference_dir, split)
        assert sorted(got) == sorted(want) and want
        for key, example in want.items():
            assert sorted(got[key]) == sorted(example), key
            for feature, value in example.items():
                assert np.array_equal(got[key][feature], value), (key, feature)


def assert_same_dataset(data_dir, reference_dir):
    """Same examples, split sizes, shard lengths, records and class names; the same files."""
    assert_same_examples(data_dir, reference_dir)
    got = tfds.builder(f"video_tfrecords/{NAME}", data_dir=str(data_dir)).info
    want = tfds.builder(f"video_tfrecords/{NAME}", data_dir=str(reference_dir)).info
    for split in SPLITS:
        assert got.splits[split].shard_lengths == want.splits[split].shard_lengths
        assert got.splits[split].num_bytes == want.splits[split].num_bytes
    assert got.features["label"].names == want.features["label"].names == ["c0", "c1", "c2"]
    assert got.metadata["skipped"] == want.metadata["skipped"]
    assert got.metadata["notes"] == want.metadata["notes"]
    assert {r["path"] for r in want.metadata["skipped"]} == {"bad.mp4", "missing.mp4"}
    assert [r["path"] for r in want.metadata["notes"]] == ["half.avi"]
    files = lambda d: sorted(p.name for p in dataset_dir(d).iterdir())
    assert files(data_dir) == files(reference_dir)
    parent = lambda d: sorted(p.name for p in dataset_dir(d).parent.iterdir())
    assert parent(data_dir) == [DATASET_VERSION]  # nothing left beside it
    assert (data_dir / "video_tfrecords" / ".config" / "metadata.json").read_text() == (
        reference_dir / "video_tfrecords" / ".config" / "metadata.json"
    ).read_text()


def test_spark_build_writes_the_plain_builds_dataset(manual, plain, spark, tmp_path):
    data_dir = tmp_path / "spark"
    folder = spark_build.build(
        spark,
        str(manual),
        str(data_dir),
        VideoConfig(**CONFIG),
        download_config=download_config(),
    )
    assert folder == str(dataset_dir(data_dir))
    assert_same_dataset(data_dir, plain)
    info = tfds.builder(f"video_tfrecords/{NAME}", data_dir=str(data_dir)).info
    assert info.splits["train"].num_shards == info.splits["validation"].num_shards == 4
    # The encoding cache is kept (for a rebuild), one entry a video that gave examples.
    assert len(cache_entries(data_dir)) == 13 - len(info.metadata["skipped"])
    # tfds.load and clip_dataset read it with no flag; ClipSource draws the plain build's
    # seeded clips.
    loaded = tfds.load(f"video_tfrecords/{NAME}", split="validation", data_dir=str(data_dir))
    assert sorted(e["filename"].numpy() for e in loaded) == [b"v6.mp4"] * 3 + [b"v7.mp4"]
    (batch, labels), *_ = clip_dataset(
        "validation",
        builder_kwargs={"config": NAME},
        data_dir=str(data_dir),
        num_frames=2,
        batch_size=4,
        training=False,
        crop_size=(16, 16),
    )
    assert batch.shape == (4, 2, 16, 16, 3) and sorted(labels.numpy()) == [0, 2, 2, 2]
    clips = {}
    for source_dir in (data_dir, plain):
        source = ClipSource(
            "train", num_frames=2, data_dir=str(source_dir), config=NAME, seed=1, crop_size=(16, 16)
        )
        clips[source_dir] = {
            (e["filename"], int(e["segment"])): e["video"]
            for e in (source[i] for i in range(len(source)))
        }
    assert sorted(clips[data_dir]) == sorted(clips[plain])
    for key, clip in clips[plain].items():
        assert np.array_equal(clips[data_dir][key], clip), key


def test_array_record_build_has_the_same_examples(manual, plain_array_record, spark, tmp_path):
    data_dir = tmp_path / "spark_ar"
    spark_build.build(
        spark, str(manual), str(data_dir), json.dumps(CONFIG), file_format="array_record"
    )
    assert_same_examples(data_dir, plain_array_record)
    files = lambda d: sorted(p.name for p in dataset_dir(d).iterdir())
    assert files(data_dir) == files(plain_array_record)
    assert "video_tfrecords-train.array_record-00000-of-00001" in files(data_dir)
    source = ClipSource("validation", num_frames=2, data_dir=str(data_dir), config=NAME)
    assert source[0]["video"].shape[0] == 2


def has_open(process: psutil.Process, path: str) -> bool:
    try:
        return any(f.path == path for f in process.open_files())
    except psutil.Error:
        return False


def big_video_entry(manual, data_dir) -> epath.Path:
    """The folder the build's encoding cache gives the big video, known before the build."""
    builder = tfds.builder("video_tfrecords", data_dir=str(data_dir), config=VideoConfig(**CONFIG))
    tasks = BuildRun(builder.info, builder.builder_config).encoding_tasks(
        manual, data_dir / "downloads"
    )
    (task,) = [t for t in tasks["train"] if t.entry.path == BIG]
    return cache.Cache(task.cache_root).folder(encoding.cache_key(task))


PAUSE_AT = 2  # segments of the big video written when its first attempt's worker is killed


def encode_group_pausing(items, attempt, *, big_key: str, pause_file: str):
    """`grouped.encode_group` as a Spark worker runs it, but a first attempt's worker stops
    for good once the big video's entry holds PAUSE_AT segments: it writes its pid to
    `pause_file` and sleeps until the test kills it. The kill then comes mid-video at a known
    point however loaded the machine is (watching the cache from outside missed the whole
    encoding in CI runs under the full suite). Runs in the worker (pickled by value), so the
    patch of `EntryWriter.add` is the worker's own."""
    write = cache.EntryWriter.add

    def add(writer, part):
        write(writer, part)
        if attempt == 0 and writer.folder.name == big_key and len(writer.files) == PAUSE_AT:
            partial = epath.Path(pause_file + ".partial")
            partial.write_text(str(os.getpid()))
            partial.rename(pause_file)
            time.sleep(300)  # killed here; the test fails on the timeout if not

    cache.EntryWriter.add = add
    try:
        return grouped.encode_group(items, attempt)
    finally:
        cache.EntryWriter.add = write


def test_a_worker_killed_mid_video_leaves_each_video_once(
    manual, plain, spark, tmp_path, monkeypatch
):
    """SIGKILL the Python worker encoding the big video, mid-video: Spark retries its task,
    which reads back what its group had finished and encodes the rest."""
    data_dir = tmp_path / "spark"
    big = big_video_entry(manual, data_dir)
    pause_file = tmp_path / "paused"
    monkeypatch.setattr(
        grouped,
        "encode_group",
        functools.partial(encode_group_pausing, big_key=big.name, pause_file=str(pause_file)),
    )
    killed, errors, finished = [], [], threading.Event()

    def kill_the_paused_worker():
        try:
            while not finished.is_set() and not pause_file.exists():
                time.sleep(0.01)
            if pause_file.exists():
                worker = psutil.Process(int(pause_file.read_text()))
                killed.append(
                    (len(list(big.glob("*.pickle"))), cache_entries(data_dir),
                     has_open(worker, str(manual / BIG)))
                )  # fmt: skip
                worker.send_signal(signal.SIGKILL)
        except (OSError, ValueError, psutil.Error) as error:  # the test fails on it
            errors.append(error)

    watcher = threading.Thread(target=kill_the_paused_worker, daemon=True)
    watcher.start()
    try:
        with pickled_by_value(sys.modules[__name__]):
            spark_build.build(
                spark, str(manual), str(data_dir), VideoConfig(**CONFIG),
                download_config=download_config(),
            )  # fmt: skip
    finally:
        finished.set()
        watcher.join(timeout=10)
    assert not errors, errors
    assert len(killed) == 1, "the big video's worker never paused"
    (segments, finished_then, had_it_open) = killed[0]
    assert segments == PAUSE_AT and had_it_open  # killed mid-video, the worker encoding it
    assert_same_dataset(data_dir, plain)
    after = cache_entries(data_dir)
    # No entry finished before the kill was encoded again (the retry read back its group's);
    # the big video's was finished by the retry, whole.
    assert {k: after[k] for k in finished_then} == finished_then
    assert big.name in after and big.name not in finished_then
    assert len(list(big.glob("*.pickle"))) == 50


@contextlib.contextmanager
def pickled_by_value(module):
    """Spark pickles the functions of `module` whole meanwhile: its workers cannot import it."""
    from pyspark import cloudpickle

    cloudpickle.register_pickle_by_value(module)
    try:
        yield
    finally:
        cloudpickle.unregister_pickle_by_value(module)


def cache_entries(data_dir) -> dict[str, int]:
    """Finished cache entries (folder name) -> their done.json's mtime (ns)."""
    root = data_dir / "downloads" / "video_tfrecords_cache" / NAME
    return {p.parent.name: p.stat().st_mtime_ns for p in root.rglob("done.json")}


def test_a_killed_job_reruns_from_the_cache(manual, plain, tmp_path):
    """SIGKILL the whole job (driver, JVM, workers) once a few videos are encoded; the same
    command again encodes only the others and writes the plain build's dataset."""
    data_dir = tmp_path / "spark"
    config = json.dumps({**CONFIG, "keep_cache": True})  # kept, to count what was re-encoded
    command = [
        sys.executable,
        "-m",
        "video_tfrecords.spark_build",
        "--manual_dir",
        str(manual),
        "--data_dir",
        str(data_dir),
        "--config",
        config,
        "--master",
        "local[2]",
    ]
    # Spark's scratch in tmp_path: a JVM killed with SIGKILL cannot remove its own.
    env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="3", SPARK_LOCAL_DIRS=str(tmp_path / "local"))
    process = subprocess.Popen(
        command,
        env=env,
        start_new_session=True,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    try:
        while len(cache_entries(data_dir)) < 2:
            assert process.poll() is None, process.stderr.read().decode()[-3000:]
            time.sleep(0.01)
    finally:
        os.killpg(process.pid, signal.SIGKILL)
        process.wait()
        process.stderr.close()
    before = cache_entries(data_dir)
    skipped = json.loads((dataset_dir(plain) / "metadata.json").read_text())["skipped"]
    videos = 13 - len(skipped)  # the manifest lines that make a cache entry
    assert 2 <= len(before) < videos, "the job was not killed part-way"
    assert not dataset_dir(data_dir).exists()

    done = subprocess.run(
        command, env=env, capture_output=True, text=True, timeout=600, check=False
    )
    assert done.returncode == 0, done.stderr[-3000:]
    after = cache_entries(data_dir)
    assert len(after) == videos
    read_back = {key for key, mtime in after.items() if before.get(key) == mtime}
    assert read_back == set(before)  # each finished entry read back, not encoded again
    assert len(after) - len(read_back) < videos  # the rerun encoded fewer videos
    # The plain build's examples; its shard lengths too with its shard rule.
    assert_same_examples(data_dir, plain)


def test_a_spark_rebuild_refuses_changed_inputs_then_encodes_only_them(
    manual, spark, tmp_path, capsys
):
    """Over a Spark build, the same inputs are up to date, and each kind of change is refused
    before any task runs, saying what changed; --overwrite then encodes only the new and
    changed videos and writes what a plain build of the new inputs writes."""
    small = tmp_path / "manual"
    small.mkdir()
    for name in [f"v{i}.mp4" for i in range(8)] + ["bad.mp4", "half.avi"]:
        shutil.copy2(manual / name, small / name)
    train, val = small / "train.txt", small / "val.txt"
    train.write_text(
        "".join(f"v{i}.mp4 c{i % 3}\n" for i in range(5)) + "bad.mp4 c0\nhalf.avi c1\n"
    )
    val.write_text("v6.mp4 c2\nv7.mp4 c0\n")
    data_dir, config = tmp_path / "spark", VideoConfig(**CONFIG)

    def build(manual_dir=small, video_config=config, **kwargs):
        return spark_build.build(
            spark, str(manual_dir), str(data_dir), video_config,
            download_config=download_config(), **kwargs,
        )  # fmt: skip

    def refused(**kwargs) -> str:
        with pytest.raises(provenance.StaleDatasetError) as error:
            build(**kwargs)
        assert cache_entries(data_dir) == before  # nothing decoded
        return str(error.value)

    build()
    before = cache_entries(data_dir)
    assert len(before) == 8  # bad.mp4 skipped
    capsys.readouterr()
    build()
    info = tfds.builder(f"video_tfrecords/{NAME}", data_dir=str(data_dir)).info
    examples = sum(split.num_examples for split in info.splits.values())
    assert capsys.readouterr().out.startswith(
        f"video_tfrecords/{NAME}/{DATASET_VERSION} is up to date ({examples} examples), nothing"
    )
    with open(train, "a") as f:
        f.write("v5.mp4 c2\n")
    assert f"  - train.txt: 1 line added: {train}:8: v5.mp4\n" in refused()
    train.write_text(train.read_text().replace("v1.mp4 c1\n", ""))
    assert (
        f"  - train.txt: 1 line removed (as the build had them): {train}:2: v1.mp4\n" in refused()
    )
    train.write_text(train.read_text().replace("v2.mp4 c2", "v2.mp4 c0"))
    assert f"  - train.txt: 1 line changed: {train}:2: v2.mp4: label c2 -> c0\n" in (refused())
    synthetic.write_video(str(small / "v3.mp4"), synthetic.moving_frames(5, 48, 64, seed=42))
    os.utime(small / "v3.mp4", ns=(0, os.stat(small / "v3.mp4").st_mtime_ns + 1_000_000_000))
    message = refused()
    assert f"  - train.txt: 1 video file changed: {train}:3: v3.mp4: " in message
    assert "--overwrite (build(..., overwrite=True))" in message and "--data_dir" in message
    at_q70 = VideoConfig(**{**CONFIG, "jpeg_quality": 70})
    assert f"  - config '{NAME}': jpeg_quality 90 -> 70\n" in refused(video_config=at_q70)
    assert f"  - another manual dir: {small} -> {manual}\n" in refused(manual_dir=manual)

    build(overwrite=True)
    assert sum(before.get(k) != t for k, t in cache_entries(data_dir).items()) == 2  # v5, v3
    assert len(cache_entries(data_dir)) == 8  # v1's entry went with its line
    plain_dir = tmp_path / "plain"
    plain_build(small, plain_dir)
    assert_same_examples(data_dir, plain_dir)
    got = tfds.builder(f"video_tfrecords/{NAME}", data_dir=str(data_dir)).info
    want = tfds.builder(f"video_tfrecords/{NAME}", data_dir=str(plain_dir)).info
    for split in SPLITS:
        assert got.splits[split].shard_lengths == want.splits[split].shard_lengths
    assert got.metadata["skipped"] == want.metadata["skipped"] and want.metadata["skipped"]
    assert got.metadata["notes"] == want.metadata["notes"] and want.metadata["notes"]
    assert got.features["label"].names == want.features["label"].names


def test_videos_moved_to_another_disk_are_rebuilt_on_spark_without_encoding(
    manual, spark, tmp_path
):
    """The videos copied to another disk without their times and the manifests (absolute
    paths) written again: refused in one line a split, then rebuilt without encoding a
    video, into the plain build's examples of the new manifests."""
    disk1, disk2, manual_dir = tmp_path / "disk1", tmp_path / "disk2", tmp_path / "manual"
    names = ["v0.mp4", "v1.mp4", "v2.mp4", "half.avi", "sub dir/v 9.mp4", "v6.mp4", "v7.mp4"]
    for name in names:
        (disk1 / name).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(manual / name, disk1 / name)
    manual_dir.mkdir()

    def write_manifests(folder):
        lines = [f"{folder / name} c{i % 3}\n" for i, name in enumerate(names)]
        (manual_dir / "train.txt").write_text("".join(lines[:5]))
        (manual_dir / "val.txt").write_text("".join(lines[5:]))  # 3 + 1 examples

    write_manifests(disk1)
    data_dir, config = tmp_path / "spark", VideoConfig(**CONFIG)
    build = lambda **kwargs: spark_build.build(
        spark, str(manual_dir), str(data_dir), config, download_config=download_config(),
        **kwargs,
    )  # fmt: skip
    build()
    before = cache_entries(data_dir)
    shutil.copytree(disk1, disk2, copy_function=shutil.copyfile)  # times not kept
    shutil.rmtree(disk1)
    write_manifests(disk2)
    with pytest.raises(provenance.StaleDatasetError) as error:
        build()
    told = [line for line in str(error.value).splitlines() if line.startswith("  - ")]
    same = "the same video (the same content) by another path"
    assert told == [
        f"  - train.txt: 5 lines name {same}: {disk1} -> {disk2}",
        f"  - val.txt: 2 lines name {same}: {disk1} -> {disk2}",
    ]
    build(overwrite=True)
    assert cache_entries(data_dir) == before  # no video encoded
    plain_dir = tmp_path / "plain"
    plain_build(manual_dir, plain_dir)
    assert_same_examples(data_dir, plain_dir)


# -- the engine-neutral parts, without Spark -----------------------------------------


def test_spread_makes_groups_of_even_size():
    sizes = [100, 1, 50, 50, 30, 20, 99, 1, 1, 48]
    groups = even_groups.spread(list(range(len(sizes))), sizes, 3)
    loads = sorted(sum(sizes[i] for i in group) for group in groups)
    assert sorted(i for g in groups for i in g) == list(range(len(sizes)))
    # Greedy, largest first: no group is more than one video (here 48) past another, nor
    # more than 4/3 of the best split's largest group (at least 400 / 3).
    assert loads == [123, 130, 147]
    assert loads[-1] - loads[0] <= 48 and loads[-1] <= 4 / 3 * 400 / 3
    assert even_groups.spread(["a", "b", "c", "d"], [0] * 4, 2) == [["a", "c"], ["b", "d"]]
    assert even_groups.group_count(32, 2) == 32 and even_groups.group_count(650_000, 800) == 12_800
    assert even_groups.group_count(650_000, 2) == 650_000 // even_groups.MAX_GROUP + 1


def test_a_failed_shard_attempt_leaves_nothing_and_a_retry_commits(manual, tmp_path, monkeypatch):
    """An attempt that dies mid-shard leaves no file in the dataset folder; the next attempt
    writes the shard whole."""
    builder = tfds.builder("video_tfrecords", data_dir=str(tmp_path), config=VideoConfig(**CONFIG))
    tasks = BuildRun(builder.info, builder.builder_config).encoding_tasks(manual, tmp_path / "downloads")[
        "validation"
    ]
    videos = [(t, encoding.encode(t).entry) for t in tasks]
    folder, attempts = tmp_path / "staging", tmp_path / "attempts"
    folder.mkdir(), attempts.mkdir()
    (job,) = shards.assign(
        "validation",
        videos,
        download_config=tfds.download.DownloadConfig(),
        file_format=tfds.core.FileFormat.TFRECORD,
        dataset_name="video_tfrecords",
        dataset_dir=folder,
        attempts_dir=attempts,
        features=builder.info.features,
    )
    calls = []

    def dying_examples_of(outcome, *segments):
        for n, example in enumerate(encoding_examples_of(outcome, *segments)):
            if not calls:
                calls.append(n)
                raise MemoryError("the attempt dies here")
            yield example

    encoding_examples_of = encoding.examples_of
    monkeypatch.setattr(encoding, "examples_of", dying_examples_of)
    with pytest.raises(MemoryError):
        shards.write(job)
    assert list(folder.iterdir()) == [] and list(attempts.iterdir()) == []
    result = shards.write(job)
    assert result.num_examples == 4 and [p.name for p in folder.iterdir()] == [
        "video_tfrecords-validation.tfrecord-00000-of-00001"
    ]
    assert list(attempts.iterdir()) == []


def test_a_video_whose_task_died_twice_is_skipped_with_a_record(manual, tmp_path):
    """A retried task marks each video it starts; a later attempt skips a video still marked,
    as a local build skips a video that killed its worker twice."""
    builder = tfds.builder("video_tfrecords", data_dir=str(tmp_path), config=VideoConfig(**CONFIG))
    first, second = BuildRun(builder.info, builder.builder_config).encoding_tasks(
        manual, tmp_path / "downloads"
    )["validation"]
    grouped._mark(first).parent.mkdir(parents=True)
    grouped._mark(first).write_text("started")  # a retry died on it
    items = [("validation", 0, first), ("validation", 1, second)]
    results = grouped.encode_group(items, attempt=2)
    assert results[0].skipped == {
        "split": "validation",
        "path": "v6.mp4",
        "reason": "worker died (its task died twice while encoding it)",
        "where": first.entry.where,
    }
    assert first.entry.where.endswith("val.txt:1")
    assert results[1].entry is not None and results[1].skipped is None
    assert not grouped._mark(second).exists()  # finished: unmarked
    assert (
        grouped.encode_group(items, attempt=0)[0].entry is not None
    )  # first attempts: no marks


def test_an_error_in_a_retried_task_is_not_a_death(manual, tmp_path, monkeypatch):
    """An exception while a retried task encodes a video (a full disk, say) leaves no mark:
    only a task that dies does, so the next attempt encodes the video again."""
    builder = tfds.builder("video_tfrecords", data_dir=str(tmp_path), config=VideoConfig(**CONFIG))
    first, _ = BuildRun(builder.info, builder.builder_config).encoding_tasks(manual, tmp_path / "downloads")[
        "validation"
    ]

    def full_disk(task):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(grouped.encoding, "encode", full_disk)
    with pytest.raises(OSError, match="No space left"):
        grouped.encode_group([("validation", 0, first)], attempt=1)
    assert not grouped._mark(first).exists()
    monkeypatch.undo()
    (result,) = grouped.encode_group([("validation", 0, first)], attempt=2)
    assert result.entry is not None and result.skipped is None


@pytest.mark.parametrize(
    "master,expected",
    [("local[2]", "local[2,4]"), ("local[*]", "local[*,4]"), ("local[2,3]", "local[2,3]"),
     ("local", "local"), ("spark://host:7077", "spark://host:7077")],
)  # fmt: skip
def test_a_local_master_retries_tasks(master, expected):
    assert spark_engine.with_retries(master) == expected


TASK_IN_A_FRESH_PROCESS = """
import pickle, sys
fn, groups = pickle.load(sys.stdin.buffer)
results = [result for group in groups for result in fn(group, 0)]
sys.stdout.buffer.write(pickle.dumps((results, "tensorflow" in sys.modules)))
"""


def run_tasks_fresh(fn, groups):
    """`fn` over `groups` in a new Python process, as an executor's worker runs them (from
    their pickles); the results, and whether the process imported TensorFlow."""
    done = subprocess.run(
        [sys.executable, "-c", TASK_IN_A_FRESH_PROCESS],
        input=pickle.dumps((fn, groups)),
        capture_output=True,
        check=False,
    )
    assert done.returncode == 0, done.stderr.decode()[-3000:]
    return pickle.loads(done.stdout)


@pytest.mark.parametrize("file_format", ["tfrecord", "array_record"])
def test_tasks_never_import_tensorflow(manual, tmp_path, file_format):
    """An executor's Python workers encode and write shards without TensorFlow (its import
    costs each worker ~2 CPU-s and ~570 MB); TFDS reads the shard they wrote."""
    builder = tfds.builder(
        "video_tfrecords",
        data_dir=str(tmp_path),
        config=VideoConfig(**CONFIG),
        file_format=file_format,
    )
    tasks = BuildRun(builder.info, builder.builder_config).encoding_tasks(manual, tmp_path / "downloads")[
        "validation"
    ]
    items = [("validation", i, task) for i, task in enumerate(tasks)]
    encoded, imported = run_tasks_fresh(grouped.encode_group, [items])
    assert not imported and [e.index for e in encoded] == [0, 1]
    folder = tmp_path / "video_tfrecords" / NAME / DATASET_VERSION
    folder.mkdir(parents=True)
    (job,) = shards.assign(
        "validation",
        [(task, e.entry) for task, e in zip(tasks, encoded)],
        download_config=tfds.download.DownloadConfig(),
        file_format=tfds.core.FileFormat(file_format),
        dataset_name="video_tfrecords",
        dataset_dir=folder,
        attempts_dir=tmp_path,
        features=builder.info.features,
    )
    (result,), imported = run_tasks_fresh(grouped.write_group, [[job]])
    assert not imported and result.num_examples == 4
    builder.info.set_splits(
        tfds.core.SplitDict(
            [shards.split_info("validation", [job], [result], shards.file_template(
                "validation", tfds.core.FileFormat(file_format), "video_tfrecords", folder))]
        )
    )  # fmt: skip
    builder.info.write_to_directory(folder)
    reread = tfds.builder_from_directory(str(folder))
    examples = (
        list(reread.as_data_source("validation"))
        if file_format == "array_record"
        else list(tfds.as_numpy(reread.as_dataset("validation")))
    )
    assert sorted((e["filename"], int(e["segment"])) for e in examples) == [
        (b"v6.mp4", 0), (b"v6.mp4", 1), (b"v6.mp4", 2), (b"v7.mp4", 0)
    ]  # fmt: skip
