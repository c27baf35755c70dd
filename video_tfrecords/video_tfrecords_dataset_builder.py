"""video_tfrecords: your videos as JPEG frames in TFRecords, for fast clip sampling."""

from __future__ import annotations

import json

import numpy as np
import tensorflow_datasets as tfds
from absl import logging
from etils import epath
from tensorflow_datasets.core.utils import tqdm_utils  # honours tfds.disable_progress_bar()

from video_tfrecords import config as config_lib
from video_tfrecords import generate, manifest, split_writer
from video_tfrecords.generate import VideoBuildError

__all__ = ["Builder", "VideoBuildError"]

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


class Builder(tfds.core.GeneratorBasedBuilder):
    """Stores each video of your manifests as a sequence of JPEG frames."""

    VERSION = tfds.core.Version("1.0.0")
    RELEASE_NOTES = {"1.0.0": "Initial release."}
    BUILDER_CONFIGS = [config_lib.DEFAULT, config_lib.NATIVE]
    MANUAL_DOWNLOAD_INSTRUCTIONS = MANUAL_INSTRUCTIONS

    def _info(self) -> tfds.core.DatasetInfo:
        size = self.builder_config.size
        frame_shape = (None, *size, 3) if size else (None, None, None, 3)
        return self.dataset_info_from_configs(
            features=tfds.features.FeaturesDict(
                {
                    "video": tfds.features.Video(frame_shape, encoding_format="jpeg"),
                    "label": tfds.features.ClassLabel(),
                    "filename": tfds.features.Text(),
                    "fps": tfds.features.Scalar(np.float32, doc="Frame rate of the stored frames."),
                    "source_height": tfds.features.Scalar(np.int32),
                    "source_width": tfds.features.Scalar(np.int32),
                    "source_num_frames": tfds.features.Scalar(
                        np.int32, doc="Frames of the source video, counted by decoding."
                    ),
                    "segment": tfds.features.Scalar(
                        np.int32, doc="Which part of the video (0 unless segment_frames)."
                    ),
                    "start_frame": tfds.features.Scalar(
                        np.int32, doc="Index of the first stored frame within the video."
                    ),
                }
            ),
            supervised_keys=("video", "label"),
            metadata=tfds.core.MetadataDict(),
        )

    def _download_and_prepare(self, dl_manager, download_config):
        self._use_beam = bool(download_config.beam_options or download_config.beam_runner)
        with generate.Workers(self.builder_config.num_workers) as self._workers:
            result = super()._download_and_prepare(dl_manager, download_config)
        if self._use_beam:
            self._collect_beam_records()
        return result

    def _generate_splits(self, dl_manager, download_config):
        """Without Beam, examples come serialized: they go to TFDS's writer as they are."""
        if self._use_beam:
            return super()._generate_splits(dl_manager, download_config)
        return [
            split_writer.write_split(self, split, examples, download_config)
            for split, examples in self._split_generators(dl_manager).items()
        ]

    def _split_generators(self, dl_manager: tfds.download.DownloadManager):
        manual_dir = epath.Path(dl_manager.manual_dir)
        try:
            dataset = manifest.read_dataset(manual_dir)
        except FileNotFoundError as e:
            raise FileNotFoundError(f"{e}\n\n{MANUAL_INSTRUCTIONS}") from None
        self.info.features["label"].names = dataset.class_names
        self.info.metadata["skipped"] = []
        self.info.metadata["notes"] = []
        self._videos_per_split = {split: len(entries) for split, entries in dataset.splits.items()}
        generate_split = self._generate_with_beam if self._use_beam else self._generate_examples
        return {
            split: generate_split(self._tasks(split, manual_dir, dataset))
            for split in dataset.splits
        }

    def _tasks(self, split: str, manual_dir: epath.Path, dataset: manifest.Dataset):
        config = self.builder_config
        return [
            generate.Task(
                split=split,
                entry=entry,
                label=dataset.label_id(entry),
                video_path=str(manifest.resolve(manual_dir, entry.path)),
                options=config.encode_options(),
                segment_frames=config.segment_frames,
            )
            for entry in dataset.splits[split]
        ]

    def _generate_examples(self, tasks: list[generate.Task]):
        """Yields (key, serialized tf.train.Example) for each video, in manifest order."""
        split, skipped = tasks[0].split, 0
        progress = tqdm_utils.tqdm(
            total=len(tasks), desc=f"Encoding {split} videos", unit=" videos", leave=False
        )
        with progress:
            for outcome in self._workers.run_all(tasks):
                generate.report(outcome, self.builder_config.strict)
                progress.update(1)
                if outcome.skipped:
                    self.info.metadata["skipped"].append(outcome.skipped)
                    skipped += 1
                    progress.set_postfix(skipped=skipped)
                    continue
                if outcome.note:
                    self.info.metadata["notes"].append(outcome.note)
                yield from outcome.examples
        self._summarize(split)

    def _generate_with_beam(self, tasks: list[generate.Task]):
        """The same examples, one video per Beam element; skip records go to files."""
        beam = tfds.core.lazy_imports.apache_beam
        split = tasks[0].split
        records_dir = self._beam_records_dir()

        def expand(pipeline):
            outcomes = (
                pipeline
                | f"Videos {split}" >> beam.Create(tasks)
                | f"Spread {split}" >> beam.Reshuffle()
                | f"Encode {split}" >> beam.Map(generate.run, serialized=False)
                | f"Report {split}" >> beam.Map(generate.report, self.builder_config.strict)
            )
            _ = (
                outcomes
                | f"Records {split}" >> beam.FlatMap(generate.records_of)
                | f"Write records {split}"
                >> beam.io.WriteToText(str(records_dir / split), file_name_suffix=".jsonl")
            )
            return outcomes | f"Examples {split}" >> beam.FlatMap(generate.examples_of)

        return beam.ptransform_fn(expand)()

    def _beam_records_dir(self) -> epath.Path:
        return epath.Path(self.data_path) / "build_records"

    def _collect_beam_records(self) -> None:
        """Moves the skip records Beam workers wrote into info.metadata."""
        records_dir = self._beam_records_dir()
        for path in sorted(records_dir.glob("*.jsonl*")):
            for line in path.read_text().splitlines():
                record = json.loads(line)
                self.info.metadata[record.pop("kind")].append(record)
        for kind in ("skipped", "notes"):
            self.info.metadata[kind].sort(key=lambda r: (r["split"], r["path"]))
        for split in self._videos_per_split:
            self._summarize(split)
        if records_dir.exists():
            records_dir.rmtree()

    def _summarize(self, split: str) -> None:
        """Logs N written, M skipped; fails a split where every video was bad."""
        skipped = [s for s in self.info.metadata["skipped"] if s["split"] == split]
        written = self._videos_per_split[split] - len(skipped)
        if not written:
            reasons = "; ".join(f"{s['path']}: {s['reason']}" for s in skipped)
            raise VideoBuildError(
                f"none of the {len(skipped)} videos of split {split} could be read: {reasons}"
            )
        logging.warning(
            "Split %s: %d videos written, %d skipped (listed in info.metadata['skipped']).",
            split,
            written,
            len(skipped),
        )

    def _should_cache_ds(self, split, shuffle_files, read_config) -> bool:
        """Never auto-cache: it would freeze random clips to the first epoch's."""
        return False
