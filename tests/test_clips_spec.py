"""Tests of `ClipSpec`: every argument checked, with errors naming it; normal forms."""

from __future__ import annotations

import pickle

import numpy as np
import pytest

from video_tfrecords.clips.spec import ClipSpec


@pytest.mark.parametrize(
    "kwargs,argument",
    [
        ({"num_frames": 0}, "num_frames"),
        ({"num_frames": -2}, "num_frames"),
        ({"num_frames": 2.0}, "num_frames"),
        ({"num_frames": True}, "num_frames"),
        ({"num_frames": 4, "stride": 0}, "stride"),
        ({"num_frames": 4, "stride": -1}, "stride"),
        ({"num_frames": 4, "stride": 1.5}, "stride"),
        ({"num_frames": 4, "stride": (3, 2)}, "stride"),
        ({"num_frames": 4, "stride": (0, 2)}, "stride"),
        ({"num_frames": 4, "stride": (1, 2, 3)}, "stride"),
        ({"num_frames": 4, "stride": "2"}, "stride"),
        ({"num_frames": 4, "mode": "middle"}, "mode"),
        ({"num_frames": 4, "mode": "center", "num_clips": 2}, "mode='center'"),
        ({"num_frames": 4, "num_clips": 0}, "num_clips"),
        ({"num_frames": 4, "short_video": "wrap"}, "short_video"),
        ({"num_frames": 4, "crop": "top-left"}, "crop"),
        ({"num_frames": 4, "crop_size": 16}, "crop_size"),
        ({"num_frames": 4, "crop_size": (16,)}, "crop_size"),
        ({"num_frames": 4, "crop_size": (16, 0)}, "crop_size"),
        ({"num_frames": 4, "crop_size": (16, 8.5)}, "crop_size"),
        ({"num_frames": 4, "crop_size": (16, 8, 3)}, "crop_size"),
        ({"num_frames": 4, "flip": "yes"}, "flip"),
        ({"num_frames": 4, "seed": "7"}, "seed"),
        ({"num_frames": 4, "seed": 1.0}, "seed"),
        ({"num_frames": 4, "short_side": 0}, "short_side"),
        ({"num_frames": 4, "short_side": 112.0}, "short_side"),
    ],
)
def test_invalid_arguments_raise_naming_the_argument(kwargs, argument):
    with pytest.raises(ValueError, match=argument):
        ClipSpec(**kwargs)


def test_valid_argument_forms_are_normalised():
    assert ClipSpec(4, stride=(2, 2)).stride == 2
    assert ClipSpec(4, stride=[1, 3]).stride == (1, 3)
    assert ClipSpec(4, crop_size=[8, 8]).crop_size == (8, 8)
    spec = ClipSpec(np.int64(4), seed=np.int64(3), flip=np.bool_(True), short_side=np.int32(112))
    assert (spec.num_frames, spec.seed, spec.flip, spec.short_side) == (4, 3, True, 112)
    assert type(spec.seed) is int and type(spec.flip) is bool
    assert ClipSpec(4, stride=[1, 3]) == ClipSpec(4, stride=(1, 3))  # one value, one spec


def test_spec_properties_frozen_keyword_only_and_picklable():
    spec = ClipSpec(4, stride=(2, 5), mode="uniform")
    assert spec.multi_clip and spec.min_stride == 2 and spec.min_span == 7
    assert not ClipSpec(4).multi_clip and ClipSpec(4, num_clips=2).multi_clip
    with pytest.raises(AttributeError):
        spec.num_frames = 8
    with pytest.raises(TypeError):
        ClipSpec(4, 2)  # everything but num_frames is keyword-only
    assert pickle.loads(pickle.dumps(spec)) == spec
    assert "num_frames=4" in repr(spec)
