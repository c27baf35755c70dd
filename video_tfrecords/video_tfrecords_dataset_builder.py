"""video_tfrecords: your videos as JPEG frames in TFRecords, for fast clip sampling.

The TFDS builder only: its features (`records.schema`), configs (`config`) and splits. The
build's steps are `engines.prepare`'s (as on Spark: `engines.grouped`); the work is the
engines': `engines.local` (a pool of worker processes) or `engines.beam`, under TFDS's writer.
"""

from __future__ import annotations

import dataclasses
import functools
import json
import sys

import tensorflow_datasets as tfds
from etils import epath

from video_tfrecords import config as config_lib
from video_tfrecords.engines.beam import BeamEngine
from video_tfrecords.engines.local import LocalEngine
from video_tfrecords.engines.prepare import prepare
from video_tfrecords.ingest import manifest, provenance, tfds_command
from video_tfrecords.ingest.encoding import VideoBuildError
from video_tfrecords.ingest.run import (
    MANUAL_INSTRUCTIONS,
    BuildRun,
    ManualDirError,
    manifest_kinds,
)
from video_tfrecords.records import schema
from video_tfrecords.records.array_record_shard import note_array_record_use

__all__ = ["Builder", "VideoBuildError"]


class Builder(tfds.core.GeneratorBasedBuilder):
    """Stores each video of your manifests as a sequence of JPEG frames."""

    VERSION = tfds.core.Version(schema.DATASET_VERSION)
    RELEASE_NOTES = schema.RELEASE_NOTES
    BUILDER_CONFIGS = [config_lib.DEFAULT, config_lib.NATIVE]
    MANUAL_DOWNLOAD_INSTRUCTIONS = MANUAL_INSTRUCTIONS

    def __init__(self, *, config=None, **kwargs):
        """TFDS's builder; `config` may also be a built-in config's name with its own build
        settings (`config.with_build_settings`: `{"name": "default", "num_workers": 2}`)."""
        tfds_command.drop_tfds_noise()  # TFDS's warnings about these features, on every build
        config, self._build_settings = config_lib.with_build_settings(config, self.BUILDER_CONFIGS)
        super().__init__(config=config, **kwargs)

    @property
    def build_config(self) -> config_lib.VideoConfig:
        """The config a build runs with: `builder_config` with the build settings it was given."""
        if not self._build_settings:
            return self.builder_config
        return dataclasses.replace(self.builder_config, **self._build_settings)

    def _info(self) -> tfds.core.DatasetInfo:
        return self.dataset_info_from_configs(
            features=schema.features(self.builder_config, self._annotation_kinds()),
            supervised_keys=(schema.VIDEO, schema.LABEL),
            metadata=tfds.core.MetadataDict(),
        )

    @property
    def info(self) -> tfds.core.DatasetInfo:
        """TFDS's info; once `use_manifests` has found annotations (JSON Lines spans, labels,
        captions), or `start_over` a rebuild, one whose features store them and whose class
        names are the build's (TFDS makes its info once, before the manual dir is known, and
        restores a prepared dataset's, whose class names it would not let a rebuild change)."""
        if not (self.__dict__.get("_manifest_kinds") or self.__dict__.get("_rebuilding")):
            info = super().info
        else:
            if "_annotated_info" not in self.__dict__:
                info = self._info()
                info.set_file_format(super().info.file_format)  # what TFDS set on its own
                self._annotated_info = info
            info = self._annotated_info
        if self.__dict__.get("_done_under_command"):
            return tfds_command.PreparedInfo(info)  # the tfds command prints where it is, not it
        return info

    def use_manifests(self, manual_dir: epath.PathLike) -> None:
        """Makes the features store what the manifests of `manual_dir` annotate (none for text
        manifests: the features of 2.3.0). Before a build only, as TFDS uses the info."""
        if not (epath.Path(self.data_path) / "dataset_info.json").exists():
            self._manifest_kinds = manifest_kinds(manual_dir)

    def start_over(self, manual_dir: epath.PathLike) -> None:
        """Before rebuilding a prepared dataset (`--overwrite`): an info made for the rebuild
        from the manifests of `manual_dir`, not the old dataset's."""
        self._manifest_kinds = manifest_kinds(manual_dir)
        self._rebuilding = True

    def _annotation_kinds(self) -> frozenset[str]:
        """What the stored features annotate: as the manifests give (`use_manifests`), else as
        the prepared dataset's features.json says (reading it back), else nothing."""
        kinds = self.__dict__.get("_manifest_kinds")
        if kinds is not None:
            return kinds
        stored = epath.Path(self.data_path) / "features.json"
        if not stored.exists():
            return frozenset()
        names = json.loads(stored.read_text())["featuresDict"]["features"]
        return schema.annotation_kinds(names)

    def download_and_prepare(self, *, download_dir=None, download_config=None, **kwargs):
        """Builds (`engines.prepare`: over a prepared dataset, reused if it was built from the
        same inputs, else refused before anything is decoded, saying what changed;
        `--overwrite`, FORCE_REDOWNLOAD, rebuild it), then keeps in the cache of encoded videos
        what the next rebuild reads back (or removes it, if the config does not keep it), and
        prints a summary; an interrupted build says how to resume."""
        config = download_config or tfds.download.DownloadConfig()
        self._manual_dir = config.manual_dir or self._default_manual_dir(download_dir)
        self._use_beam = bool(config.beam_runner or config.beam_options)
        prepared = (epath.Path(self.data_path) / "dataset_info.json").exists()
        overwrite = config.download_mode.overwrite_dataset
        inputs = config.manual_dir or manifest.find_manifests(epath.Path(self._manual_dir))[0]
        if prepared and not overwrite and not inputs:  # tfds.load's call: TFDS reuses it
            return super().download_and_prepare(
                download_dir=download_dir, download_config=config, **kwargs
            )
        command = tfds_command.run_by_tfds_command()
        ways = provenance.ways_on("tfds" if command else "python", self.builder_config.name)
        write = functools.partial(self._write, download_dir=download_dir, config=config, **kwargs)
        try:
            text = prepare(self, self._manual_dir, write, overwrite=overwrite, ways=ways)
        except provenance.StaleDatasetError as e:
            if command:  # the tfds command exits with its message, not a traceback
                raise SystemExit(str(e)) from None
            raise
        if text is not None:
            tfds_command.print_last(text)
        self._done_under_command = command

    def _write(self, run: BuildRun, *, download_dir, config, **kwargs) -> dict[str, int] | None:
        """TFDS's build of `run`, through the engine `_split_generators` picks: the examples
        written per split, or None if TFDS built nothing."""
        self._run, self._engine = run, None  # the engine: chosen when TFDS asks for the splits
        try:
            with tfds_command.without_tfds_chatter():
                super().download_and_prepare(
                    download_dir=download_dir, download_config=config, **kwargs
                )
        except KeyboardInterrupt:
            if self._engine is None:
                raise
            self._engine.close()  # the workers stop: no video is cached after the count
            print(self._run.interrupted(), file=sys.stderr)
            if tfds_command.run_by_tfds_command():
                raise SystemExit(130) from None  # the shell's status for Ctrl-C; no traceback
            raise
        if self._engine is None:
            return None  # already prepared: nothing was built
        if self.info.file_format == tfds.core.FileFormat.ARRAY_RECORD:
            note_array_record_use()  # TFDS's writer ran here: workers forked now would crash
        self._engine.finish(self.info, self.data_path)
        return {name: split.num_examples for name, split in self.info.splits.items()}

    def _default_manual_dir(self, download_dir) -> epath.Path:
        """Where TFDS looks for the manual dir when none is given: download_dir/manual."""
        downloads = download_dir or epath.Path(self.data_dir_root) / "downloads"
        return epath.Path(downloads) / "manual"

    def _no_manual_dir(self) -> ManualDirError:
        """Which folder the build wanted and what goes in it (TFDS's own message names no
        command)."""
        manual_dir = epath.Path(self._manual_dir)
        return ManualDirError(
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
        if self._use_beam:
            engine, threads = BeamEngine(self._run, self.data_path), 1
        else:
            engine = LocalEngine(self._run, self.build_config.num_workers)
            threads = engine.decoder_threads
            if tfds_command.run_by_tfds_command():
                tfds.disable_progress_bar()  # the engine's bar of videos is the one to watch
        tasks = self._run.encoding_tasks(manual_dir, dl_manager.download_dir, threads)
        provenance.write(self.data_path, self._run.built_from)  # TFDS's incomplete folder
        self._engine = engine
        return {split: self._generate_examples(split_tasks) for split, split_tasks in tasks.items()}

    def _generate_examples(self, tasks):
        """A split's examples, as the engine makes them: (key, example) pairs locally, a Beam
        PTransform on Beam."""
        return self._engine.generate(tasks)

    def _should_cache_ds(self, split, shuffle_files, read_config) -> bool:
        """Never auto-cache: TFDS caches after decoding, which would freeze random clips."""
        return False
