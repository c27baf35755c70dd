"""A build on any engine that maps a function over groups in parallel: the driver's steps.

The engine gives `map_groups(fn, groups)`: `fn(group, attempt)` for every group, in
tasks that may run anywhere and be retried (`attempt` counts the retries of a
task: 0 when the engine cannot tell), all results back in one list. Spark's is
in `engines/spark.py`; Ray's or Dask's would be a few lines too. Everything else is
here, in `engines.prepare` (the steps every build takes, the builder's too) and in
`ingest.run.BuildRun`, the seam the local and Beam engines build through too:

1. `BuildRun.encoding_tasks` reads the manifests into one `encoding.Task` per video (as the
   local and Beam builds do), `even_groups` groups them by file size.
2. Tasks run `encode_group`: `encoding.encode` for each video, through the
   encoding cache in the data dir (shared by every worker: a killed job's rerun
   reads back what it had encoded). Each video's cache entry, skip or
   note comes back to the driver, which checks that every video came back
   exactly once and keeps the findings in `info.metadata` (`BuildRun.take`).
3. `shards.assign` cuts each split into shards; tasks run `write_group`, each
   shard written whole under a name of its own and then renamed into the
   dataset folder being built (`incomplete.spark_VERSION`, which TFDS's readers
   skip).
4. The driver writes the dataset info through TFDS (`info.set_splits`,
   `info.write_to_directory`) and renames the folder to `VERSION`: the
   dataset appears whole, as TFDS's own build leaves it.

A video whose task dies twice while encoding it (a codec crash, the OOM killer)
is recorded as skipped, as in a local build: a retried task (`attempt` > 0)
marks each video as it starts it, and a video still marked when a later attempt
comes to it is not tried again.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import logging
from collections.abc import Callable, Sequence

import tensorflow_datasets as tfds
from etils import epath

from video_tfrecords.engines import even_groups
from video_tfrecords.engines.prepare import prepare
from video_tfrecords.ingest import cache, encoding, provenance, shards
from video_tfrecords.ingest.run import BuildRun

log = logging.getLogger(__name__)

MapGroups = Callable[[Callable[[list, int], list], list[list]], list]
Item = tuple[str, int, encoding.Task]  # split, index in the split, task
STAGING = "incomplete.spark_"  # TFDS's readers skip folders named incomplete.*
ATTEMPTS = "incomplete.spark_attempts_"
MARKS = "attempts"  # under the cache root: videos a retried task has started


@dataclasses.dataclass(frozen=True)
class Encoded:
    """One video's outcome as it comes back to the driver (its task stays there)."""

    split: str
    index: int
    entry: cache.Entry | None
    skipped: dict | None
    note: dict | None


def encode_group(items: Sequence[Item], attempt: int = 0) -> list[Encoded]:
    """Runs `encoding.encode` on each video of a group (a task's work)."""
    encoding.init_worker()
    encoded = []
    for split, index, task in items:
        outcome = _encode_marked(task) if attempt else encoding.encode(task)
        encoded.append(Encoded(split, index, outcome.entry, outcome.skipped, outcome.note))
    return encoded


def _mark(task: encoding.Task) -> epath.Path:
    name = hashlib.sha256(f"{task.split}/{task.entry.path}".encode()).hexdigest()[:32]
    return epath.Path(task.cache_root) / MARKS / name


def _encode_marked(task: encoding.Task) -> encoding.Outcome:
    """`encoding.encode` in a retried task: a video whose mark an earlier retry left (its
    task died during it) is skipped, as a local build skips a video that kills its worker
    twice."""
    mark = _mark(task)
    if mark.exists():
        return encoding.Outcome(
            task, skipped=task.finding("worker died (its task died twice while encoding it)")
        )
    mark.parent.mkdir(parents=True, exist_ok=True)
    mark.write_text("started")
    try:
        return encoding.encode(task)
    finally:  # an exception is not a death: only a task that dies leaves its mark
        mark.unlink(missing_ok=True)


def write_group(jobs: Sequence[shards.ShardJob], attempt: int = 0) -> list[shards.ShardResult]:
    """Writes each shard of a group (a task's work)."""
    del attempt  # an attempt writes under a name of its own whatever its number
    return [shards.write(job) for job in jobs]


def build(
    builder: tfds.core.DatasetBuilder,
    manual_dir: epath.PathLike,
    data_dir: epath.PathLike,
    map_groups: MapGroups,
    *,
    cores: int,
    download_config: tfds.download.DownloadConfig | None = None,
    overwrite: bool = False,
) -> epath.Path:
    """Builds `builder`'s dataset (a video_tfrecords Builder: `prepare.Target`) with the
    engine's `map_groups` on `cores` cores; returns the dataset folder. A dataset already built
    is left as it is if built from the same inputs, else refused
    (`provenance.StaleDatasetError`), before anything is decoded; `overwrite` rebuilds it (the
    old one readable until the new one replaces it)."""
    manual_dir, data_dir = provenance.absolute(manual_dir), provenance.absolute(data_dir)
    download_config = download_config or tfds.download.DownloadConfig()

    def write(run: BuildRun) -> dict[str, int]:
        return _write(builder, run, manual_dir, data_dir, map_groups, cores, download_config)

    ways = provenance.ways_on("spark", builder.builder_config.name)
    text = prepare(builder, manual_dir, write, overwrite=overwrite, ways=ways)
    if text is not None:
        print(text)
    return epath.Path(builder.data_path)


def _write(builder, run, manual_dir, data_dir, map_groups, cores, download_config):
    """The engine's build: every video encoded, each split's shards written, the dataset
    folder renamed into place whole; the examples written per split."""
    final = epath.Path(builder.data_path)
    tasks, groups = tasks_in_groups(run, manual_dir, data_dir, cores)
    encoded = _encode(tasks, groups, map_groups)
    outcomes = {split: [None] * len(split_tasks) for split, split_tasks in tasks.items()}
    for result in encoded:
        task = tasks[result.split][result.index]
        outcome = encoding.Outcome(task, result.entry, result.skipped, result.note)
        outcomes[result.split][result.index] = outcome
    for split_outcomes in outcomes.values():
        for outcome in split_outcomes:  # in manifest order, as a local build reports them
            encoding.report(outcome, builder.build_config.strict)
            run.take(outcome)
    run.check_findings(list(tasks))
    staging = final.parent / f"{STAGING}{final.name}"
    attempts = final.parent / f"{ATTEMPTS}{final.name}"
    for folder in (staging, attempts):
        folder.rmtree(missing_ok=True)
        folder.mkdir(parents=True)
    file_format = tfds.core.FileFormat(builder.info.file_format or "tfrecord")
    jobs = {
        split: shards.assign(
            split,
            [(o.task, o.entry) for o in split_outcomes if o.entry is not None],
            download_config=download_config,
            file_format=file_format,
            dataset_name=builder.name,
            dataset_dir=staging,
            attempts_dir=attempts,
            features=builder.info.features,
        )
        for split, split_outcomes in outcomes.items()
    }
    every_job = [job for split_jobs in jobs.values() for job in split_jobs]
    log.info("Writing %d shards", len(every_job))
    results = map_groups(write_group, [[job] for job in every_job])
    infos = [
        shards.split_info(
            split,
            split_jobs,
            results,
            shards.file_template(split, file_format, builder.name, final),
        )
        for split, split_jobs in jobs.items()
    ]
    builder.info.set_splits(tfds.core.SplitDict(infos))
    builder.info.write_to_directory(staging)
    provenance.write(staging, run.built_from)
    attempts.rmtree(missing_ok=True)
    _save_default_config(builder, final.parent.parent)
    final.rmtree(missing_ok=True)  # an --overwrite rebuild's old dataset
    staging.rename(final)
    return {info.name: info.num_examples for info in infos}


def tasks_in_groups(
    run: BuildRun,
    manual_dir: epath.PathLike,
    data_dir: epath.PathLike,
    cores: int,
) -> tuple[dict[str, list[encoding.Task]], list[list[Item]]]:
    """The driver's tasks: one per video, by split (`run.encoding_tasks`, its cache in
    TFDS's download dir as a local build's), and the groups of `(split, index, task)` the
    engine runs, of even total size."""
    tasks = run.encoding_tasks(manual_dir, epath.Path(data_dir) / "downloads", decoder_threads=1)
    items = [(split, i, task) for split, group in tasks.items() for i, task in enumerate(group)]
    # Each video's size as `built_from` found it (0: missing).
    videos = {name: provenance.video_lines(s) for name, s in run.built_from["splits"].items()}
    sizes = [videos[split][i].size or 0 for split, i, _ in items]
    return tasks, even_groups.spread(items, sizes, even_groups.group_count(len(items), cores))


def _encode(tasks: dict[str, list[encoding.Task]], groups: list[list[Item]], map_groups: MapGroups):
    """Every video's `Encoded`, each exactly once (an engine's duplicate is dropped)."""
    items = [item for group in groups for item in group]
    if items:
        epath.Path(items[0][2].cache_root, MARKS).rmtree(missing_ok=True)  # a new job
    log.info("Encoding %d videos in %d tasks", len(items), len(groups))
    encoded = {}
    for result in map_groups(encode_group, groups):
        encoded.setdefault((result.split, result.index), result)
    missing = [f"{s}/{tasks[s][i].entry.path}" for s, i, _ in items if (s, i) not in encoded]
    if missing:
        raise RuntimeError(f"{len(missing)} videos never came back from the engine: {missing[:5]}")
    return list(encoded.values())


def _save_default_config(builder: tfds.core.DatasetBuilder, dataset_root: epath.Path) -> None:
    """`NAME/.config/metadata.json`, the default config's name, as TFDS's build writes it."""
    default = builder.get_default_builder_config()
    if default is None:
        return
    path = dataset_root / ".config" / "metadata.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    temporary = path.parent / f"{path.name}.{builder.builder_config.name}.partial"
    temporary.write_text(json.dumps({"default_config_name": default.name}))
    temporary.replace(path)  # another config's build may have written it
