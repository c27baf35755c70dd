"""video_tfrecords: your videos as JPEG frames in TFRecords, for fast clip sampling."""

from __future__ import annotations

import json
import logging
import sys

import numpy as np
import tensorflow_datasets as tfds
from etils import epath

from video_tfrecords import config as config_lib
from video_tfrecords.build import cache, encoding, manifest, parallel, provenance, summary
from video_tfrecords.build.encoding import VideoBuildError
from video_tfrecords.records.array_record_shard import note_array_record_use

__all__ = ["Builder", "VideoBuildError"]


class _TfdsVideoDtypeWarning(logging.Filter):
    """Drops the one deprecation warning that TFDS's own Video feature logs on every build.

    `tfds.features.Video.to_json_content` reads the deprecated
    `FeatureConnector.dtype` itself (TFDS 4.9.10); nothing a builder does avoids it.
    """

    def filter(self, record: logging.LogRecord) -> bool:
        return not record.getMessage().startswith("`FeatureConnector.dtype` is deprecated")


logging.getLogger("absl").addFilter(_TfdsVideoDtypeWarning())

MANUAL_INSTRUCTIONS = """\
Put into the manual dir (`--manual_dir=DIR`) one manifest per split you want:
  train.txt            -> split "train"
  val.txt              -> split "validation" (validation.txt is accepted too)
  test.txt             -> split "test"
Each line is `{video path} {label}`, e.g. `videos/54838.mp4 1951` or
`clips/rock climbing 01.mp4 abseiling`. The path is relative to the manual dir
or absolute and may contain spaces (the label is the last field). Labels are
class names or integer class ids. Blank lines and lines starting with # are
ignored. Optionally add labels.txt: one class name per line, line i = id i.
"""


def _scalar(dtype, doc: str) -> tfds.features.Scalar:
    return tfds.features.Scalar(dtype, doc=doc)


def _audio_features(config: config_lib.VideoConfig) -> dict:
    """The audio features of a config with `audio_rate` (none without: the features of
    datasets built before audio existed).

    A `Tensor` of int16, shape (samples, channels), stored as one bytes value
    (encoding="bytes"): 2 bytes a sample where an int64 list takes up to 10 (a negative
    varint), and a reader cuts a clip's window from a view of the record's bytes without
    parsing the rest; `tfds.load` gives it as an int16 tensor. Not `tfds.features.Audio`:
    in TFDS 4.9.10 it hands an array to the writer unencoded, so it can store int16 only
    as an int64 list.
    """
    if config.audio_rate is None:
        return {}
    return {
        "audio": tfds.features.Tensor(
            shape=(None, config.audio_channels),
            dtype=np.int16,
            encoding="bytes",
            doc="The video's default audio stream, int16 PCM; sample j plays at "
            "(round(timestamps[0] * audio_rate) + j) / audio_rate s (silence where it has none).",
        ),
        "has_audio": _scalar(np.bool_, "Whether the video has an audio stream FFmpeg decodes."),
        "audio_rate": _scalar(np.int32, "Samples per second of `audio`."),
    }


class Builder(tfds.core.GeneratorBasedBuilder):
    """Stores each video of your manifests as a sequence of JPEG frames."""

    VERSION = tfds.core.Version(config_lib.DATASET_VERSION)
    RELEASE_NOTES = {
        "1.0.0": "Initial release.",
        "2.0.0": "Decoded with FFmpeg (PyAV): display aspect, per-frame timestamps, colour "
        "matrices, damaged packets concealed; segments of 1000 frames by default.",
        "2.1.0": "frame_crc32c: each frame's CRC32C, so that a reader checks only the frames "
        "it decodes.",
        "2.2.0": "video_fingerprint: the content fingerprint seeded clips are keyed on, so that "
        "a reader without TensorFlow need not hash frames on a record's first read.",
        "2.3.0": "Frames timed by FFmpeg's best-effort rule (packed B-frame AVIs: UCF101, "
        "HMDB51), interlaced frames deinterlaced (bwdif; deinterlace=False keeps them as "
        "decoded); with audio_rate, each example's audio on the frames' clock (audio, "
        "has_audio, audio_rate).",
    }
    BUILDER_CONFIGS = [config_lib.DEFAULT, config_lib.NATIVE]
    MANUAL_DOWNLOAD_INSTRUCTIONS = MANUAL_INSTRUCTIONS

    def _info(self) -> tfds.core.DatasetInfo:
        size = self.builder_config.size
        frame_shape = (None, *size, 3) if size else (None, None, None, 3)
        return self.dataset_info_from_configs(
            features=tfds.features.FeaturesDict(
                {
                    **_audio_features(self.builder_config),
                    "video": tfds.features.Video(frame_shape, encoding_format="jpeg"),
                    "label": tfds.features.ClassLabel(),
                    "filename": tfds.features.Text(),
                    "frame_crc32c": tfds.features.Tensor(
                        shape=(None,),
                        dtype=np.uint32,
                        doc="CRC32C of each JPEG frame: a reader checks the frames it decodes.",
                    ),
                    "video_fingerprint": _scalar(
                        np.int64,
                        "The frames' content fingerprint (clips.keys.video_fingerprint), "
                        "which seeded clips are keyed on.",
                    ),
                    "timestamps": tfds.features.Tensor(
                        shape=(None,),
                        dtype=np.float32,
                        doc="Time of each stored frame, in seconds from the video's first frame.",
                    ),
                    "fps": _scalar(np.float32, "Frame rate of the stored frames."),
                    "codec": tfds.features.Text(doc="FFmpeg's name of the source's codec."),
                    "source_height": _scalar(np.int32, "Coded height of the source."),
                    "source_width": _scalar(np.int32, "Coded width of the source."),
                    "source_num_frames": _scalar(
                        np.int32, "Frames of the source video, counted by decoding."
                    ),
                    "display_height": _scalar(np.int32, "Height a player shows (SAR, rotation)."),
                    "display_width": _scalar(np.int32, "Width a player shows (SAR, rotation)."),
                    "sample_aspect_ratio": _scalar(np.float32, "Width of a source pixel / height."),
                    "rotation": _scalar(
                        np.int32, "Clockwise degrees the source was turned to be upright."
                    ),
                    "segment": _scalar(np.int32, "Which part of the video (see segment_frames)."),
                    "start_frame": _scalar(
                        np.int32, "Index of the first stored frame within the video."
                    ),
                }
            ),
            supervised_keys=("video", "label"),
            metadata=tfds.core.MetadataDict(),
        )

    @property
    def info(self) -> tfds.core.DatasetInfo:
        """TFDS's info, restored from the prepared dataset if there is one; after `start_over`,
        the rebuild's own."""
        rebuilt = getattr(self, "_rebuilt_info", None)
        return rebuilt if rebuilt is not None else super().info

    def start_over(self) -> None:
        """Before rebuilding a prepared dataset: an info of its own, not the one restored from
        the old dataset, whose class names TFDS would not let the rebuild change."""
        fresh = self._info()
        fresh.set_file_format(self.info.file_format)
        self._rebuilt_info = fresh

    def download_and_prepare(self, *, download_dir=None, download_config=None, **kwargs):
        """Builds, then removes the cache of encoded videos unless the config keeps it, and
        prints a summary; an interrupted build says how to resume."""
        config = download_config or tfds.download.DownloadConfig()
        self._use_beam = bool(config.beam_runner or config.beam_options)
        self._cache_dir = None
        self._outcomes = None  # the local build's worker pool, as a generator of outcomes
        self._manual_dir = config.manual_dir or self._default_manual_dir(download_dir)
        self._inputs = None
        prepared = (epath.Path(self.data_path) / "dataset_info.json").exists()
        if prepared and config.download_mode.overwrite_dataset:
            self.start_over()
        elif prepared:
            has_inputs = config.manual_dir or manifest.find_manifests(epath.Path(self._manual_dir))
            if has_inputs:  # tfds.load's call, without a manual dir, reads what is there
                self.check_prepared(self._manual_dir, tfds_command=summary.run_by_tfds_command())
                return
        try:
            super().download_and_prepare(
                download_dir=download_dir, download_config=config, **kwargs
            )
        except KeyboardInterrupt:
            if self._cache_dir is None:
                raise
            if self._outcomes is not None:  # the workers stop: no video is cached after the count
                self._outcomes.close()
            kept = cache.Cache(self._cache_dir).count()
            print(summary.interrupted_message(kept, str(self._cache_dir)), file=sys.stderr)
            if summary.run_by_tfds_command():
                raise SystemExit(130) from None  # the shell's status for Ctrl-C; no traceback
            raise
        if (
            self._cache_dir is not None
            and self.info.file_format == tfds.core.FileFormat.ARRAY_RECORD
        ):
            # TFDS's writer ran here: workers forked now would crash
            note_array_record_use()
        if self._use_beam:
            self._collect_beam_records()
        if self._cache_dir is None:
            return  # already prepared: nothing was built
        self.remove_cache()
        self.print_summary(self.data_dir, self.info.splits.values())

    def print_summary(self, dataset_dir: epath.PathLike, split_infos) -> None:
        """Prints the build's summary: per split, examples written, videos skipped or noted."""
        examples = {info.name: info.num_examples for info in split_infos}
        info_path = str(epath.Path(dataset_dir) / "metadata.json")
        text = summary.build_summary(
            self.info.full_name, self._videos_per_split, examples, self.info.metadata, info_path
        )
        print(text)

    def _default_manual_dir(self, download_dir) -> epath.Path:
        """Where TFDS looks for the manual dir when none is given: download_dir/manual."""
        downloads = download_dir or epath.Path(self.data_dir_root) / "downloads"
        return epath.Path(downloads) / "manual"

    def _no_manual_dir(self) -> FileNotFoundError:
        """Which folder the build wanted and what goes in it (TFDS's own message names no
        command)."""
        manual_dir = epath.Path(self._manual_dir)
        return FileNotFoundError(
            f"{self.info.full_name} is built from your own videos, and is not prepared in "
            f"{self.data_dir_root}. Its manual dir {manual_dir} "
            f"{'is empty' if manual_dir.is_dir() else 'does not exist'}. Build it with `tfds "
            f"build video_tfrecords --manual_dir=DIR --data_dir={self.data_dir_root} "
            f"--config={self.builder_config.name}` (or pass download_config=tfds.download."
            f"DownloadConfig(manual_dir=DIR)).\n\n{MANUAL_INSTRUCTIONS}"
        )

    def _split_generators(self, dl_manager: tfds.download.DownloadManager):
        try:
            manual_dir = dl_manager.manual_dir
        except AssertionError:  # TFDS's check: the manual dir is missing or empty
            raise self._no_manual_dir() from None
        threads = parallel.threads_per_worker(self._num_workers())
        tasks = self.plan(manual_dir, dl_manager.download_dir, threads)
        provenance.write(self.data_path, self.built_from)  # TFDS's incomplete folder, for now
        generate = self._generate_with_beam if self._use_beam else self._generate_examples
        return {split: generate(split_tasks) for split, split_tasks in tasks.items()}

    # -- the seam every engine builds through (local, Beam, spark_build) -----------

    def read_inputs(self, manual_dir: epath.PathLike) -> tuple[manifest.Dataset, dict]:
        """The manual dir's checked manifests, and the record of what a build of them under
        this config is made from (`provenance.collect`: one stat a video); read once."""
        manual_dir = epath.Path(manual_dir)
        if getattr(self, "_inputs", None) is None or self._inputs[0] != str(manual_dir):
            try:
                dataset = manifest.read_dataset(manual_dir)
            except FileNotFoundError as e:
                raise FileNotFoundError(f"{e}\n\n{MANUAL_INSTRUCTIONS}") from None
            record = provenance.collect(manual_dir, dataset, self.builder_config)
            self._inputs = (str(manual_dir), dataset, record)
        return self._inputs[1], self._inputs[2]

    def check_prepared(self, manual_dir: epath.PathLike, *, tfds_command=False, spark=False):
        """For a dataset already prepared here: prints that it is up to date with the inputs
        of `manual_dir` (or, for one built before records were kept, that it is unchecked);
        raises `provenance.StaleDatasetError` naming what changed, before decoding anything
        (the `tfds` command exits with its message instead)."""
        _, current = self.read_inputs(manual_dir)
        folder, name = str(self.data_path), self.info.full_name
        old = provenance.read(folder)
        ways = self._ways_on(tfds_command, spark)
        if old is None:
            print(provenance.unknown_line(name, folder, ways["overwrite"]), file=sys.stderr)
            return
        changes = provenance.differences(old, current)
        if changes:
            message = provenance.stale_message(name, folder, changes, ways)
            if tfds_command:
                raise SystemExit(message)
            raise provenance.StaleDatasetError(message)
        examples = sum(split.num_examples for split in self.info.splits.values())
        print(provenance.up_to_date_line(name, folder, examples))

    def _ways_on(self, tfds_command: bool, spark: bool) -> dict:
        """How a user of this engine rebuilds, or builds elsewhere (for the refusal)."""
        name = f"{self.builder_config.name}_2"
        if tfds_command or spark:
            overwrite = "--overwrite" + (" (build(..., overwrite=True))" if spark else "")
            config = f"""--config '{{"name": "{name}", ...}}'"""
            return {"overwrite": overwrite, "data_dir": "--data_dir", "config": config}
        return {
            "overwrite": "download_config=tfds.download.DownloadConfig(download_mode="
            "tfds.GenerateMode.FORCE_REDOWNLOAD)",
            "data_dir": "data_dir",
            "config": f"VideoConfig(name={name!r}, ...)",
        }

    def plan(
        self, manual_dir: epath.PathLike, download_dir: epath.PathLike, decoder_threads: int = 1
    ) -> dict[str, list[encoding.Task]]:
        """One `encoding.Task` per manifest line, by split, in manifest order.

        Reads and checks every manifest, sets the class names, empties the skip records
        and notes; the encoding cache goes under `download_dir` (TFDS's download dir).
        """
        manual_dir = epath.Path(manual_dir)
        dataset, self.built_from = self.read_inputs(manual_dir)
        self.info.features["label"].names = dataset.class_names
        self.info.metadata["skipped"] = []
        self.info.metadata["notes"] = []
        self._videos_per_split = {split: len(entries) for split, entries in dataset.splits.items()}
        config = self.builder_config
        self._cache_dir = epath.Path(download_dir) / "video_tfrecords_cache" / config.name
        self._tasks = {
            split: [
                encoding.Task(
                    split=split,
                    entry=entry,
                    label=dataset.label_id(entry),
                    video_path=str(manifest.resolve(manual_dir, entry.path)),
                    config=config,
                    cache_root=str(self._cache_dir),
                    decoder_threads=decoder_threads,
                )
                for entry in entries
            ]
            for split, entries in dataset.splits.items()
        }
        return self._tasks

    def record(self, outcome: encoding.Outcome) -> None:
        """Keeps the outcome's skip record and note for `info.metadata`."""
        if outcome.skipped:
            self.info.metadata["skipped"].append(outcome.skipped)
        if outcome.note:
            self.info.metadata["notes"].append(outcome.note)

    def check_records(self, splits) -> None:
        """Sorts the records by split and path (whatever order the videos were done in);
        fails a split where every video was bad (the skips were warned of one by one)."""
        for kind in ("skipped", "notes"):
            self.info.metadata[kind].sort(key=lambda r: (r["split"], r["path"]))
        for split in splits:
            skipped = [s for s in self.info.metadata["skipped"] if s["split"] == split]
            if len(skipped) == self._videos_per_split[split]:
                reasons = "; ".join(f"{s['path']}: {s['reason']}" for s in skipped)
                raise VideoBuildError(
                    f"none of the {len(skipped)} videos of split {split} could be read: {reasons}"
                )

    def remove_cache(self) -> None:
        """After a build, keeps in the cache of encoded videos only what this build read (what
        an --overwrite rebuild reads back), or removes it if the config does not keep it."""
        cache_dir = getattr(self, "_cache_dir", None)
        if cache_dir is not None and self.builder_config.keep_cache:
            tasks = [task for split_tasks in self._tasks.values() for task in split_tasks]
            cache.Cache(cache_dir).keep_only(provenance.in_threads(encoding.cache_key, tasks))
        elif cache_dir is not None:
            cache_dir.rmtree(missing_ok=True)
            if cache_dir.parent.exists() and not any(cache_dir.parent.iterdir()):
                cache_dir.parent.rmdir()

    def _num_workers(self) -> int:
        return parallel.worker_count(self.builder_config.num_workers)

    def _generate_examples(self, tasks: list[encoding.Task]):
        """Yields (key, example) for each video, encoded in worker processes.

        Videos go in manifest order, except that on a resumed build the ones
        already encoded are spread among the others (`encoding.resume_order`).
        """
        self._outcomes = outcomes = parallel.ordered_map(
            encoding.encode,
            encoding.resume_order(tasks),
            num_workers=self._num_workers(),
            on_death=encoding.on_worker_death,
            initializer=encoding.init_worker,
        )
        for outcome in outcomes:
            encoding.report(outcome, self.builder_config.strict)
            self.record(outcome)
            yield from encoding.examples_of(outcome)
        self.check_records([tasks[0].split])

    def _generate_with_beam(self, tasks: list[encoding.Task]):
        """The same examples, one video per Beam element; skip records go to files."""
        beam = tfds.core.lazy_imports.apache_beam
        split = tasks[0].split
        records_dir = self._beam_records_dir()

        def expand(pipeline):
            outcomes = (
                pipeline
                | f"Videos {split}" >> beam.Create(tasks)
                | f"Spread {split}" >> beam.Reshuffle()
                | f"Encode {split}" >> beam.Map(encoding.encode)
                | f"Report {split}" >> beam.Map(encoding.report, self.builder_config.strict)
            )
            _ = (
                outcomes
                | f"Records {split}" >> beam.FlatMap(encoding.records_of)
                | f"Write records {split}"
                >> beam.io.WriteToText(str(records_dir / split), file_name_suffix=".jsonl")
            )
            return outcomes | f"Examples {split}" >> beam.FlatMap(encoding.examples_of)

        return beam.ptransform_fn(expand)()

    def _beam_records_dir(self) -> epath.Path:
        return epath.Path(self.data_path) / "build_records"

    def _collect_beam_records(self) -> None:
        """Moves the skip records Beam workers wrote into info.metadata, and writes it."""
        records_dir = self._beam_records_dir()
        for path in sorted(records_dir.glob("*.jsonl*")):
            for line in path.read_text().splitlines():
                record = json.loads(line)
                self.info.metadata[record.pop("kind")].append(record)
        self.check_records(list(self._videos_per_split))
        if records_dir.exists():
            records_dir.rmtree()
        self.info.write_to_directory(self.data_path)

    def _should_cache_ds(self, split, shuffle_files, read_config) -> bool:
        """Never auto-cache: TFDS caches after decoding, which would freeze random clips."""
        return False
