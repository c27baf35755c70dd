"""Which frames a build keeps, and at what size: pure functions of build/frame_choice.py."""

import dataclasses
import fractions

import numpy as np
import pytest

from video_tfrecords import VideoConfig
from video_tfrecords.ingest import frame_choice, video_io


@dataclasses.dataclass
class FakeFrame:
    index: int
    time: float


def info(height, width, *, sar=fractions.Fraction(1), rotation=0, display=None):
    display_height, display_width = display or (height, width)
    return video_io.VideoInfo(
        codec="h264",
        coded_height=height,
        coded_width=width,
        sample_aspect_ratio=sar,
        rotation=rotation,
        display_height=display_height,
        display_width=display_width,
        average_fps=25.0,
        reported_num_frames=0,
        pixel_format="yuv420p",
    )


@pytest.mark.parametrize(
    ("source", "short_side", "expected"),
    [
        (info(480, 640), 256, (256, 341)),
        (info(640, 480), 256, (341, 256)),
        (info(200, 300), 256, (200, 300)),  # smaller: kept
        (info(480, 720, sar=fractions.Fraction(32, 27), display=(480, 853)), 256, (256, 455)),
        (info(256, 340, sar=fractions.Fraction(64, 51), display=(256, 427)), 256, (256, 427)),
        (info(1080, 1920, rotation=90, display=(1920, 1080)), 256, (455, 256)),
        (info(480, 640), None, (480, 640)),
    ],
)
def test_stored_size_follows_the_display_shape(source, short_side, expected):
    assert frame_choice.stored_size(source, VideoConfig(name="t", short_side=short_side)) == expected


def test_coded_aspect_keeps_the_pixel_grid_but_still_rotates():
    source = info(480, 720, sar=fractions.Fraction(32, 27), rotation=90, display=(853, 480))
    config = VideoConfig(name="t", short_side=240, coded_aspect=True)
    assert frame_choice.stored_size(source, config) == (360, 240)


def test_upscale_and_fixed_size():
    small = info(100, 200)
    assert frame_choice.stored_size(small, VideoConfig(name="t", upscale=True)) == (256, 512)
    assert frame_choice.stored_size(small, VideoConfig(name="t", size=(32, 48))) == (32, 48)


def test_evenly_spaced_includes_first_and_last():
    assert frame_choice.evenly_spaced(10, 4).tolist() == [0, 3, 6, 9]
    assert frame_choice.evenly_spaced(3, 8).tolist() == [0, 1, 2]


def frames_at(times):
    return [FakeFrame(i, t) for i, t in enumerate(times)]


def test_resample_picks_the_frame_on_screen_at_each_tick():
    # 30 fps for 1 s, then 10 fps for 1 s, then 60 fps for 0.5 s: a phone's variable rate.
    times = [i / 30 for i in range(30)] + [1 + i / 10 for i in range(10)]
    times += [2 + i / 60 for i in range(30)]
    frames = frames_at(times)
    picked = list(frame_choice.resample(iter(frames), 10.0))
    ticks = [t for t, _ in picked]
    np.testing.assert_allclose(ticks, np.arange(25) / 10)  # 2.5 s at 10 fps
    for tick, frame in picked:  # on screen: the last frame that started at or before the tick
        on_screen = max((f for f in frames if f.time <= tick + 1e-6), key=lambda f: f.time)
        assert frame is on_screen


def test_resample_repeats_frames_of_a_slower_source():
    picked = list(frame_choice.resample(iter(frames_at([0.0, 0.5, 1.0])), 4.0))
    assert [f.index for _, f in picked] == [0, 0, 1, 1, 2, 2]  # 1.5 s at 4 fps


def test_resample_of_one_frame_keeps_it():
    assert [(t, f.index) for t, f in frame_choice.resample(iter(frames_at([0.0])), 30.0)] == [(0.0, 0)]


def test_frame_rate_from_times():
    assert frame_choice.frame_rate([0.0, 0.04, 0.08], fallback=1.0) == pytest.approx(25.0)
    assert frame_choice.frame_rate([0.0], fallback=30.0) == 30.0
