"""Audio with the frames (issue 35): stored aligned to the frames' clock, each clip's window cut
on every reader path.

The test video is made here (`videos.flashes_and_tones`): H.264 frames that flash white at
known frames and carry their own index in pixels, and an AAC stream at 48 kHz that starts 0.5 s
after the video (as mp4 writers lay it out, with AAC's 1,024 priming samples) holding a tone
burst that starts exactly at each flash frame's time. Every check is against that
construction: a clip's first frame says its index (so its time, index / 25 s), and each tone
must start in the clip's window where its flash frame's time says, within 3 ms.
"""

import dataclasses
import os
import pathlib
import subprocess
import sys
import textwrap

import av
import numpy as np
import pytest
import tensorflow as tf
import tensorflow_datasets as tfds

import videos
from video_tfrecords import ClipDecoder, ClipSource, ClipSpec, VideoConfig, clip_dataset, config
from video_tfrecords.ingest import audio_io, encoding, manifest, span_writer, video_io

FPS = 25
# Frames that flash (after the audio starts at 0.5 s = frame 12.5), 6 to 13 frames apart.
FLASHES = [15, 27, 40, 52, 58, 70, 83, 96, 110, 120, 131, 143]
NUM_FRAMES = 150  # 6 s
RATE = 16000
TOLERANCE = 0.003  # s
QUIET = 0.005  # s of silence before a tone's onset, for it to count as one


def onsets(signal: np.ndarray, rate: int = RATE) -> list[float]:
    """Seconds from the start of `signal` (one channel) at which a tone burst begins: a sample
    above a quarter of the tone's amplitude after at least QUIET s below it, in the signal, and
    QUIET s before its end (a tone starting right at the end may show a sample early)."""
    loud = np.flatnonzero(np.abs(signal) > videos.TONE_AMPLITUDE / 4)
    quiet = round(QUIET * rate)
    found, last = [], None
    for i in loud.tolist():
        if quiet <= i < len(signal) - quiet and (last is None or i - last > quiet):
            found.append(i / rate)
        last = i
    return found


def expected_onsets(first_frame: int, length: int, end: float = NUM_FRAMES / FPS) -> list[float]:
    """Where the tones of FLASHES start in a window of `length` samples that starts at frame
    `first_frame`'s time, within the stored audio (it ends at `end` s of the video)."""
    start = first_frame / FPS
    times = [f / FPS - start for f in FLASHES if f / FPS < end - QUIET]
    return [t for t in times if QUIET + 0.0005 <= t < length / RATE - QUIET - 0.0005]


def assert_aligned(
    clip: np.ndarray, audio: np.ndarray, stride: int, fps: float = FPS, end=None
) -> int:
    """One view: its tones start where the construction says, relative to its first frame, and
    where each white frame of the clip sits (position p: p * stride / fps s in). Returns the
    number of tones checked."""
    assert audio.dtype == np.float32 and audio.ndim == 2
    assert audio.shape[0] == round(len(clip) * stride * RATE / fps)
    first = videos.frame_index(clip[0])
    found = onsets(audio[:, 0])
    if end is not None:  # the example's audio ends there: a tone right at it may show early
        found = [t for t in found if first / FPS + t < end - QUIET]
    wanted = expected_onsets(first, len(audio), *(() if end is None else (end,)))
    assert len(found) == len(wanted), (first, found, wanted)
    np.testing.assert_allclose(found, wanted, atol=TOLERANCE)
    for position, frame in enumerate(clip):
        if videos.is_flash(frame) and position > 0:
            assert min(abs(t - position * stride / fps) for t in found) <= TOLERANCE
    return len(wanted)


def all_views(clip, audio, spec):
    """(clip, audio) of each view."""
    return zip(clip, audio) if spec.multi_clip else [(clip, audio)]


# -- the videos and their builds ---------------------------------------------------------------


@pytest.fixture(scope="module")
def manual_dir(tmp_path_factory):
    folder = tmp_path_factory.mktemp("av_manual")
    videos.flashes_and_tones(folder / "tones.mp4", num_frames=NUM_FRAMES, flashes=FLASHES)
    videos.flashes_and_tones(folder / "silent.mp4", num_frames=60, flashes=[20], audio_start=None)
    (folder / "train.txt").write_text("tones.mp4 a\nsilent.mp4 b\n")
    return folder


def build(manual, data_dir, name, **fields):
    builder = tfds.builder(
        "video_tfrecords",
        data_dir=str(data_dir),
        config=VideoConfig(name=name, audio_rate=RATE, num_workers=1, **fields),
    )
    builder.download_and_prepare(
        download_config=tfds.download.DownloadConfig(manual_dir=str(manual))
    )
    return builder


@pytest.fixture(scope="module")
def whole(manual_dir, tmp_path_factory):
    return build(manual_dir, tmp_path_factory.mktemp("av_data"), "av")


@pytest.fixture(scope="module")
def segmented(manual_dir, tmp_path_factory):
    return build(manual_dir, tmp_path_factory.mktemp("av_seg"), "av_seg", segment_frames=40)


def stored(builder) -> dict[tuple[str, int], dict]:
    """(filename, segment) -> the example, as tfds.load gives it."""
    return {
        (e["filename"].decode(), int(e["segment"])): e
        for e in tfds.as_numpy(builder.as_dataset("train"))
    }


def source(builder, **clip) -> ClipSource:
    return ClipSource("train", data_dir=builder.data_dir_root, config=builder.builder_config.name,
                      **clip)  # fmt: skip


# -- build ------------------------------------------------------------------------------------


def test_the_stored_audio_plays_each_tone_at_its_flash_frames_time(whole):
    example = stored(whole)[("tones.mp4", 0)]
    audio = example["audio"]
    assert audio.dtype == np.int16 and audio.shape == (NUM_FRAMES * RATE // FPS, 1)
    assert example["has_audio"] and example["audio_rate"] == RATE
    np.testing.assert_allclose(
        onsets(audio[:, 0] / 32768), [f / FPS for f in FLASHES], atol=TOLERANCE
    )
    assert np.abs(audio[: int(0.47 * RATE)]).max() <= 3  # before the audio starts: silence
    assert whole.info.metadata["notes"] == []


def test_a_video_without_audio_stores_silence_of_its_length(whole):
    example = stored(whole)[("silent.mp4", 0)]
    assert not example["has_audio"]
    assert example["audio"].shape == (60 * RATE // FPS, 1) and not example["audio"].any()
    clip = source(whole, num_frames=4, stride=2, audio=True, seed=0)
    silent = next(e for e in clip if e["filename"] == "silent.mp4")
    assert silent["audio"].shape == (4 * 2 * RATE // FPS, 1) and not silent["audio"].any()
    assert not silent["has_audio"]


def test_segments_carry_their_own_part_of_the_audio(whole, segmented):
    parts = sorted((k[1], e) for k, e in stored(segmented).items() if k[0] == "tones.mp4")
    lengths = [len(e["video"]) for _, e in parts]
    assert lengths == [40, 40, 40, 30]
    for (_, example), frames in zip(parts, lengths):  # from its first frame to the next's
        assert example["audio"].shape == (frames * RATE // FPS, 1)
        start = example["timestamps"][0]
        found = [start + t for t in onsets(example["audio"][:, 0] / 32768)]
        inside = [
            f / FPS for f in FLASHES if start + QUIET < f / FPS < start + frames / FPS - QUIET
        ]
        np.testing.assert_allclose(found, inside, atol=TOLERANCE)
    joined = np.concatenate([e["audio"] for _, e in parts])
    np.testing.assert_array_equal(joined, stored(whole)[("tones.mp4", 0)]["audio"])


def encoded(path, **fields) -> tuple[list[dict], dict]:
    """The examples and summary the build makes of one video (no TFDS)."""
    entry = manifest.Entry("train.txt", 1, os.path.basename(path), "a")
    config = VideoConfig(name="x", audio_rate=RATE, **fields)
    examples = []
    summary = encoding.encode_video(
        encoding.Task("train", entry, 0, str(path), config, ""), examples.append
    )
    return examples, summary


def test_an_examples_audio_counts_toward_its_size_limit(manual_dir, monkeypatch):
    # Ten small frames and 6 s of audio (192 KB at 16 kHz): under a 100 KB limit only the
    # audio can push the example over it.
    (example,), _ = encoded(manual_dir / "tones.mp4", num_frames=10)
    jpeg_bytes = sum(len(frame) for frame in example["video"])
    assert jpeg_bytes < 100_000 < jpeg_bytes + example["audio"].nbytes
    monkeypatch.setattr(span_writer, "MAX_EXAMPLE_BYTES", 100_000)
    with pytest.raises(video_io.VideoError, match="frames and audio would go over"):
        encoded(manual_dir / "tones.mp4", num_frames=10)


@pytest.mark.parametrize(
    ("fields", "span"),
    [
        ({"fps": 12.5}, 6.0),  # ticks of 0.08 s: source frames 0, 2, 4, ... 148
        ({"max_frames": 50}, 2.0),
        ({"num_frames": 10}, 6.0),  # frames 0, 17, ..., 149: to one frame period past 149
        ({"fps": 10, "max_frames": 32}, 3.2),
    ],
)
def test_frame_choices_keep_the_audio_of_the_kept_span(manual_dir, fields, span):
    (example,), summary = encoded(manual_dir / "tones.mp4", **fields)
    audio = example["audio"]
    assert audio.shape == (round(span * RATE), 1), fields
    kept = [f / FPS for f in FLASHES if f / FPS < span]
    np.testing.assert_allclose(onsets(audio[:, 0] / 32768), kept, atol=TOLERANCE)
    assert summary["fields"]["has_audio"] and summary["damage"] is None


@pytest.mark.parametrize(("name", "codec"), [("flac.mkv", "flac"), ("pcm.mov", "pcm_s16le")])
def test_lossless_audio_lands_on_its_sample(tmp_path, name, codec):
    # A tone's first sample above the threshold is 0.04 ms after its onset: the next sample.
    path = videos.flashes_and_tones(tmp_path / name, num_frames=100, flashes=[20, 60], codec=codec)
    (example,), _ = encoded(path)
    found = onsets(example["audio"][:, 0] / 32768)
    np.testing.assert_allclose(found, [20 / FPS + 1 / RATE, 60 / FPS + 1 / RATE], atol=1e-6)


def test_stereo_keeps_both_channels(tmp_path):
    path = videos.flashes_and_tones(
        tmp_path / "stereo.mkv", num_frames=50, flashes=[20], channels=2
    )
    (example,), _ = encoded(path, audio_channels=2)
    audio = example["audio"] / 32768
    assert audio.shape == (2 * RATE, 2)
    for channel in range(2):
        np.testing.assert_allclose(onsets(audio[:, channel]), [20 / FPS], atol=TOLERANCE)


def test_audio_that_ends_early_is_padded_with_silence(tmp_path):
    path = videos.flashes_and_tones(tmp_path / "early.mp4", num_frames=100, flashes=[20, 60],
                                    audio_start=0.0, audio_end=2.0)  # fmt: skip
    (example,), summary = encoded(path)
    audio = example["audio"]
    assert audio.shape == (4 * RATE, 1) and summary["damage"] is None
    np.testing.assert_allclose(onsets(audio[:, 0] / 32768), [20 / FPS], atol=TOLERANCE)
    assert not audio[int(2.05 * RATE) :].any()


def test_a_damaged_audio_stream_keeps_the_video_notes_it_and_silences_the_loss(
    manual_dir, tmp_path
):
    # Packets 52 and 53 hold [1.587, 1.630) s: the whole tone of the flash at frame 40 (1.6 s).
    path = videos.damaged_audio(manual_dir / "tones.mp4", tmp_path / "damaged.mp4", [52, 53])
    (example,), summary = encoded(path)
    assert len(example["video"]) == NUM_FRAMES and summary["fields"]["has_audio"]
    assert "2 audio packets with decode errors" in summary["damage"]
    assert "ms of audio lost, stored silent" in summary["damage"]
    audio = example["audio"][:, 0] / 32768
    assert np.abs(audio[int(1.59 * RATE) : int(1.628 * RATE)]).max() < 0.01
    kept = [f / FPS for f in FLASHES if f != 40]
    np.testing.assert_allclose(onsets(audio), kept, atol=TOLERANCE)


# -- read -------------------------------------------------------------------------------------

CLIPS = [
    {"num_frames": 8, "stride": 3},
    {"num_frames": 16, "stride": 4, "fps": FPS},  # the README's recipe: 2.56 s of audio
    {"num_frames": 6, "stride": 2, "mode": "uniform", "num_clips": 4},
    {"num_frames": 8, "stride": 2, "fps": 12.5},  # ticks of the time grid: even frames
    # Three test crops: boxes of the frames' full width (the index's bits), each view its audio.
    {
        "num_frames": 8,
        "stride": 2,
        "crop_size": (32, 96),
        "num_crops": 3,
        "mode": "uniform",
        "num_clips": 3,
    },
]


def clip_fps(clip: dict) -> float:
    return clip.get("fps", FPS)


@pytest.mark.parametrize("clip", CLIPS)
def test_each_clips_tones_start_at_its_flash_frames_on_clip_source(whole, clip):
    reader = source(whole, audio=True, seed=11, **clip)
    checked = 0
    for epoch in range(6):
        reader.set_epoch(epoch)
        example = next(e for e in reader if e["filename"] == "tones.mp4")
        for view, sound in all_views(example["video"], example["audio"], reader.spec):
            assert sound.shape[-1] == 1
            checked += assert_aligned(view, sound, clip["stride"], clip_fps(clip))
    assert checked >= 3


@pytest.mark.parametrize("clip", CLIPS[:4])
def test_the_tf_path_cuts_the_same_audio(whole, clip):
    decoder = ClipDecoder(audio=True, seed=11, **clip)
    dataset = whole.as_dataset("train", decoders={"video": tfds.decode.SkipDecoding()})
    reader = source(whole, audio=True, seed=11, **clip)
    checked = 0
    for epoch in range(4):
        reader.set_epoch(epoch)
        expected = {e["filename"]: e for e in reader}
        seed = reader.seed  # epoch e's: fold_in(11, e)
        mapped = dataset.map(lambda example, seed=seed: decoder.decode_features(example, seed))
        for example in tfds.as_numpy(mapped):
            name = example["filename"].decode()
            np.testing.assert_array_equal(example["video"], expected[name]["video"])
            np.testing.assert_array_equal(example["audio"], expected[name]["audio"])
            if name == "tones.mp4":
                for view, sound in all_views(example["video"], example["audio"], decoder.spec):
                    checked += assert_aligned(view, sound, clip["stride"], clip_fps(clip))
    assert checked >= 2


def test_clip_dataset_batches_video_and_audio(whole):
    clip = {"num_frames": 16, "stride": 4, "fps": FPS, "crop_size": (64, 96)}
    dataset = clip_dataset("train", data_dir=whole.data_dir_root, builder_kwargs={"config": "av"},
                           batch_size=2, seed=3, audio=True, dtype=tf.uint8, **clip)  # fmt: skip
    inputs, labels = dataset.element_spec
    assert inputs["video"].shape == (2, 16, 64, 96, 3) and labels.shape == (2,)
    assert (
        inputs["audio"].shape == (2, 16 * 4 * RATE // FPS, 1)
        and inputs["audio"].dtype == tf.float32
    )
    tones = checked = 0
    for batch, label in dataset.take(6):
        for clip_frames, sound, which in zip(batch["video"].numpy(), batch["audio"].numpy(), label):
            if which == 0:  # tones.mp4 ("a")
                checked += assert_aligned(clip_frames, sound, 4)
                tones += 1
            else:
                assert not sound.any()
    assert tones >= 3 and checked >= 3


def test_clip_dataset_with_audio_and_no_fps_says_to_pass_it(whole):
    with pytest.raises(ValueError, match="without fps= its length follows each video"):
        clip_dataset("train", data_dir=whole.data_dir_root, builder_kwargs={"config": "av"},
                     batch_size=2, num_frames=4, audio=True, crop_size=(64, 96))  # fmt: skip


def test_a_window_that_does_not_fit_the_batch_names_the_record(whole):
    """Windows are cut straight into the batch (their length is fixed by fps=): one of another
    length is an error naming its record, not a silently cut window."""
    from video_tfrecords import input_pipeline

    clip = {"num_frames": 4, "stride": 1, "fps": FPS, "crop_size": (64, 96)}
    reader = source(whole, audio=True, seed=1, **clip)
    length = 4 * RATE // FPS
    batch = input_pipeline.BatchReader(reader, [4, 64, 96, 3], seeded=True,
                                       audio_shape=[length, 1])  # fmt: skip
    clips, sounds, labels = batch.read(np.array([0, 1]), np.array([7, 7]))
    assert sounds.shape == (2, length, 1) and clips.shape == (2, 4, 64, 96, 3)
    assert labels.tolist() == [reader[0]["label"], reader[1]["label"]]
    np.testing.assert_array_equal(sounds[0], reader.get(0, seed=7)["audio"])
    wrong = input_pipeline.BatchReader(reader, [4, 64, 96, 3], seeded=True,
                                       audio_shape=[length + 20, 1])  # fmt: skip
    where = r"record 0 of \S+tfrecord\S+, split 'train'"
    with pytest.raises(ValueError, match=rf"audio_out= must be .*{where}"):
        wrong.read(np.array([0]), np.array([7]))


def test_segments_and_read_time_fps_keep_clips_aligned(segmented):
    checked = 0
    for clip in (CLIPS[0], CLIPS[3]):
        reader = source(segmented, audio=True, seed=5, **clip)
        for epoch in range(4):
            reader.set_epoch(epoch)
            for example in reader:
                if example["filename"] != "tones.mp4":
                    continue
                frames = example["video"]
                first = videos.frame_index(frames[0])
                segment_end = min(NUM_FRAMES, (first // 40 + 1) * 40) / FPS  # its audio's end
                checked += assert_aligned(frames, example["audio"], clip["stride"],
                                          clip_fps(clip), end=segment_end)  # fmt: skip
    assert checked >= 3


def test_a_short_video_loops_its_frames_and_its_window_runs_on_into_silence(tmp_path):
    manual = tmp_path / "manual"
    manual.mkdir()
    videos.flashes_and_tones(manual / "short.mp4", num_frames=20, flashes=[5], audio_start=0.0)
    (manual / "train.txt").write_text("short.mp4 a\n")
    builder = build(manual, tmp_path / "data", "short")
    (example,) = source(builder, num_frames=16, stride=2, audio=True, seed=0)  # 32 frames' time
    assert [videos.frame_index(f) for f in example["video"]][:11] == list(range(0, 20, 2)) + [0]
    sound = example["audio"][:, 0]
    assert sound.shape == (32 * RATE // FPS,)
    np.testing.assert_allclose(onsets(sound), [5 / FPS], atol=TOLERANCE)  # the loop is silent
    assert not sound[int(20 / FPS * RATE) :].any()


README_RUNNER = textwrap.dedent(
    """
    import re, sys
    import numpy as np
    import tensorflow_datasets as tfds

    readme = open(sys.argv[1], encoding="utf-8").read()
    (block,) = [b for b in re.findall(r"```python\\n(.*?)```", readme, re.S) if "audio=True" in b]
    names = {"tfds": tfds}
    exec(block, names)
    inputs, labels = next(iter(names["train"]))
    print("train", inputs["video"].shape, inputs["audio"].shape, labels.shape)
    example = next(iter(tfds.as_numpy(names["ds"])))
    np.testing.assert_array_equal(example["audio"], names["clip"]["audio"])
    np.testing.assert_array_equal(example["video"], names["clip"]["video"])
    print("clip", names["clip"]["audio"].shape, names["clip"]["audio"].dtype)
    """
)


def test_the_readme_audio_recipe_runs_as_written(whole):
    readme = pathlib.Path(__file__).resolve().parent.parent / "README.md"
    env = {**os.environ, "TFDS_DATA_DIR": whole.data_dir_root, "TF_CPP_MIN_LOG_LEVEL": "2"}
    done = subprocess.run([sys.executable, "-c", README_RUNNER, str(readme)], env=env,
                          capture_output=True, text=True, timeout=600, check=False)  # fmt: skip
    assert done.returncode == 0, done.stderr[-3000:]
    assert "train (8, 16, 224, 224, 3) (8, 40960, 1) (8,)" in done.stdout
    assert "clip (40960, 1) float32" in done.stdout


# -- what is refused, and what stays as it was ------------------------------------------------


@pytest.mark.parametrize(
    ("args", "message"),
    [
        ({"mode": "segments"}, "audio=True needs a contiguous clip"),
        ({"mode": "segment_centers"}, "audio=True needs a contiguous clip"),
        ({"stride": (1, 3)}, "audio=True needs one stride"),
    ],
)
def test_clips_that_are_not_one_stretch_of_time_are_refused(args, message):
    with pytest.raises(ValueError, match=message):
        ClipSpec(8, audio=True, **args)
    with pytest.raises(ValueError, match="audio must be a bool"):
        ClipSpec(8, audio="yes")


def test_a_feature_decoder_with_audio_says_to_map_decode_features(whole):
    decoder = ClipDecoder(4, audio=True)
    with pytest.raises(ValueError, match="decode_features"):
        whole.as_dataset("train", decoders={"video": decoder})


def test_a_dataset_without_audio_says_how_to_build_one(whole, tmp_path):
    with pytest.raises(ValueError, match=r"stores no audio: build it with VideoConfig\(audio_rate"):
        ClipSource("train", data_dir=tmp_path, num_frames=4, audio=True,
                   dataset_dir=_without_audio(whole, tmp_path))  # fmt: skip


def _without_audio(builder, tmp_path) -> str:
    """A copy of the dataset folder whose features.json names no audio."""
    import json
    import shutil

    folder = tmp_path / "plain"
    shutil.copytree(builder.data_dir, folder)
    features = json.loads((folder / "features.json").read_text())
    del features["featuresDict"]["features"]["audio"]
    (folder / "features.json").write_text(json.dumps(features))
    return str(folder)


@pytest.mark.parametrize(
    ("fields", "message"),
    [
        ({"audio_rate": 0}, "audio_rate must be a positive int"),
        ({"audio_rate": 16000.5}, "audio_rate must be a positive int"),
        ({"audio_rate": 16000, "audio_channels": 6}, "audio_channels must be 1 .mono. or 2"),
        ({"audio_channels": 2}, "audio_channels needs audio_rate"),
    ],
)
def test_audio_config_fields_are_checked(fields, message):
    with pytest.raises(ValueError, match=message):
        VideoConfig(name="x", **fields)


def test_without_audio_rate_the_features_are_those_of_before():
    builder = tfds.builder("video_tfrecords", config="default")
    assert not {"audio", "has_audio", "audio_rate"} & set(builder.info.features)
    assert config.DEFAULT.frame_fields()["audio_rate"] is None
    with_audio = dataclasses.replace(config.DEFAULT, name="a", audio_rate=RATE)
    assert with_audio.frame_fields()["audio_rate"] == RATE
    assert set(config.FRAME_FIELDS) >= {"audio_rate", "audio_channels"}


def test_seeks_in_a_program_stream_take_the_audio_from_their_own_sample(tmp_path):
    """An MPEG program stream (DVD, broadcast) has no index: FFmpeg's seek in its audio lands on
    a packet near the time asked for, after it as often as not (up to an MP2 frame, 24 ms, here;
    over 150 ms in files ffmpeg writes). A span's audio, taken from a seek 8 ms before a tone,
    must hold that tone where the construction puts it, not silence."""
    path = videos.flashes_and_tones(
        tmp_path / "v.mpg", num_frames=NUM_FRAMES, flashes=FLASHES, audio_start=0.0,
        video_codec="mpeg2video", codec="mp2",
    )  # fmt: skip
    with av.open(path) as container:  # time 0 of the audio: the first frame's, on the file's clock
        stream = container.streams.video[0]
        origin = float(next(container.decode(stream)).pts * stream.time_base)
    for flash in FLASHES[:-2]:
        start = audio_io.sample_at(flash / FPS - 0.008, RATE)
        with audio_io.AudioTrack(path, RATE, 1, origin) as track:
            track.start_at(start)
            window = track.take(start + RATE)[:, 0].astype(np.float32) / 32768
            track.read_to_end()
            assert track.damage.note() is None  # a seek's cut first frame is not damage
        times = [f / FPS - start / RATE for f in FLASHES]
        wanted = [t for t in times if QUIET + 0.0005 <= t < 1 - QUIET - 0.0005]
        np.testing.assert_allclose(onsets(window), wanted, atol=TOLERANCE, err_msg=f"{flash=}")
