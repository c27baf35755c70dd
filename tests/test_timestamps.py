"""build/timestamps.py on pts/dts sequences: FFmpeg's guess_correct_pts, and the times made of it.

The expected stamps are worked out by hand from libavcodec's rule (decode.c): count the pts
and the dts that are not above the last one seen, trust the pts unless it has more faults.
"""

import itertools

import pytest
from hypothesis import example, given
from hypothesis import strategies as st

from video_tfrecords.ingest import timestamps

# XviD's packed B-frames as FFmpeg 8 decodes them (UCF101, HMDB51): pts swapped in pairs.
PACKED_PTS = [1, 2, 4, 3, 5, 7, 6, 8, 10, 9, 11]
PACKED_DTS = list(range(1, 12))


def ffmpeg(pts, dts):
    """FFmpeg's best_effort_timestamp of each frame, as the decoder hands them out."""
    rule = timestamps.PtsCorrection()
    return [rule(p, d) for p, d in zip(pts, dts, strict=True)]


def hindsight(pts, dts, frames=timestamps.HINDSIGHT):
    return [stamp for stamp, _ in timestamps.best_effort(zip(pts, dts, pts), frames)]


def test_in_order_pts_are_trusted_over_any_dts():
    assert ffmpeg([0, 1, 2, 3], [-2, -1, 0, 1]) == [0, 1, 2, 3]  # an mp4 with B-frames
    assert ffmpeg([0, 1, 2, 3], [5, 5, 5, 5]) == [0, 1, 2, 3]  # repeated dts: faults of its own


def test_packed_b_frames_switch_to_the_dts_once_the_pts_go_backwards():
    # Frame 2's pts (4) is trusted: no fault yet. Frame 3's pts (3) is the first fault, and from
    # then on the dts, which never go back. FFmpeg 8's own AVFrame.best_effort_timestamp for
    # such a file is this sequence (read by hand from the frames PyAV decodes).
    assert ffmpeg(PACKED_PTS, PACKED_DTS) == [1, 2, 4, 4, 5, 6, 7, 8, 9, 10, 11]


def test_hindsight_of_one_frame_times_the_first_swapped_pair_too():
    assert hindsight(PACKED_PTS, PACKED_DTS) == PACKED_DTS
    assert hindsight(PACKED_PTS, PACKED_DTS, frames=0) == ffmpeg(PACKED_PTS, PACKED_DTS)


def test_a_missing_stamp_gives_way_to_the_other():
    assert ffmpeg([None, None, None], [0, 1, 2]) == [0, 1, 2]  # AVI, raw streams
    assert ffmpeg([0, 3, 1, 2], [None] * 4) == [0, 3, 1, 2]  # Matroska: no dts, pts as given
    assert ffmpeg([None, 5], [None, None]) == [None, 5]


def test_the_stamp_that_errs_less_wins_and_can_win_back():
    pts = [0, 2, 1, 3, 4, 5, 6, 7]  # one fault, at frame 2
    dts = [0, 1, 2, 2, 2, 5, 6, 7]  # two faults, at frames 3 and 4
    assert ffmpeg(pts, dts) == [0, 2, 2, 3, 4, 5, 6, 7]  # dts from frame 2, pts from frame 3


def test_items_come_out_in_order_with_their_stamps():
    items = list(timestamps.best_effort([(3, None, "a"), (4, None, "b"), (None, 9, "c")]))
    assert items == [(3, "a"), (4, "b"), (9, "c")]
    assert list(timestamps.best_effort([])) == []


def times(stamps, tick=1 / 25, period=1 / 25):
    """(times in frames of 1/25 s, the timing) of (pts, dts) pairs."""
    timing = timestamps.Timing(tick, period)
    return [t * 25 for t, _ in timing.times((p, d, None) for p, d in stamps)], timing


def test_seconds_count_from_the_first_frame_and_gaps_stay():
    got, timing = times([(12, 12), (13, 13), (15, 15), (16, 16)])  # frame 14 really absent
    assert got == pytest.approx([0, 1, 3, 4])
    assert not timing.missing and timing.misordered == 0


def test_packed_b_frames_are_timed_k_over_25():
    got, timing = times(list(zip(PACKED_PTS, PACKED_DTS, strict=True)))
    assert got == pytest.approx(range(11))
    assert not timing.missing and timing.misordered == 0


def test_no_stamp_at_all_falls_back_to_frame_order_and_says_so():
    got, timing = times([(None, None)] * 4)
    assert got == pytest.approx([0, 1, 2, 3]) and timing.missing
    got, timing = times([(0, 0), (1, 1), (None, None), (3, 3)])
    assert got == pytest.approx([0, 1, 2, 3]) and timing.missing
    got, timing = times([(0, 0), (1, 1)], tick=0.0)  # a stream without a time base
    assert got == pytest.approx([0, 1]) and timing.missing


def test_a_repeated_stamp_goes_halfway_to_the_next_and_the_rest_keep_theirs():
    got, timing = times([(None, 0), (None, 1), (None, 1), (None, 2), (None, 3)])
    assert got == pytest.approx([0, 1, 1.5, 2, 3])
    assert timing.misordered == 1 and not timing.missing


def test_a_repeated_last_stamp_goes_one_period_on():
    got, timing = times([(0, 0), (1, 1), (2, 2), (2, None)])
    assert got == pytest.approx([0, 1, 2, 3]) and timing.misordered == 1


stamp = st.one_of(st.none(), st.integers(-1000, 1000))


@given(st.lists(st.tuples(stamp, stamp), min_size=1, max_size=40))
@example([(None, 1), (None, 369), *[(None, None)] * 7, (None, 0), (None, 376)])
def test_times_always_strictly_increase(stamps):
    # In seconds: after frames timed a period apart by frame order, one halfway to the next
    # stamp can be a few units in the last place on, which frames (x 25) would round away.
    timing = timestamps.Timing(1 / 25, 1 / 25)
    got = [t for t, _ in timing.times((p, d, None) for p, d in stamps)]
    assert got[0] == 0
    assert all(b > a for a, b in itertools.pairwise(got))


@given(
    st.lists(st.integers(1, 50), min_size=1, max_size=40),
    st.lists(st.one_of(st.none(), st.integers(-1000, 1000)), min_size=40, max_size=40),
)
def test_increasing_pts_are_the_times_whatever_the_dts(steps, dts):
    pts = [sum(steps[: i + 1]) for i in range(len(steps))]
    got, timing = times(list(zip(pts, dts, strict=False)), tick=1 / 1000)
    expected = [(p - pts[0]) / 1000 * 25 for p in pts]
    assert got == pytest.approx(expected) and timing.misordered == 0 and not timing.missing


def test_the_rule_starts_from_nothing_seen():
    rule = timestamps.PtsCorrection()
    assert rule(-(2**62), -(2**62)) == -(2**62)  # anything is above FFmpeg's INT64_MIN start
    assert rule.faulty_pts == rule.faulty_dts == 0


# The packed-B AVI of tests/videos.py decoded by PyAV from its second I-frame on, after a seek
# (frames 12 to 18): the I-frame's pts is a frame early and the swap shows three frames later.
SEEKED_PTS = [12, 14, 16, 15, 17, 19, 18]
SEEKED_DTS = [13, 14, 15, 16, 17, 18, 19]


def settled(pts, dts, settle=timestamps.SETTLE):
    return [stamp for stamp, _ in timestamps.best_effort(zip(pts, dts, pts), settle=settle)]


def test_after_a_seek_the_rule_counts_before_it_chooses():
    assert settled(SEEKED_PTS, SEEKED_DTS, settle=0)[:2] == [12, 14]  # no fault seen yet: pts
    assert settled(SEEKED_PTS, SEEKED_DTS) == SEEKED_DTS  # as the whole-file decode chooses


def test_settling_keeps_the_pts_that_never_go_back_and_every_frame():
    pts, dts = [0, 1, 2, 3, 4, 5, 6, 7, 8], [-2, -1, 0, 1, 2, 3, 4, 5, 6]  # an mp4's B-frames
    assert settled(pts, dts) == pts
    assert settled(pts[:3], dts[:3]) == pts[:3]  # a stream shorter than the wait


def test_frames_timed_after_a_seek_keep_the_whole_videos_clock():
    timing = timestamps.Timing(1 / 25, 1 / 25, origin_stamp=1)  # the video's first frame: 1
    got = [t * 25 for t, _ in timing.times(zip(SEEKED_PTS, SEEKED_DTS, SEEKED_PTS))]
    assert got == pytest.approx(range(12, 19))  # frame k at k / 25 s
    assert timing.origin == pytest.approx(1 / 25) and timing.misordered == 0
