"""Decoding a clip without TensorFlow: check the video, plan the clip, decode only its frames.

`sample_np` (JPEG through simplejpeg, resizes and flips through OpenCV) takes
the `ClipSpec` and runs the checked plan (`plan`) that `decode_tf.sample_tf`
runs in a TF graph, and returns the same pixels: both decode with libjpeg-turbo's
accurate integer IDCT (TF's `dct_method="INTEGER_ACCURATE"`, simplejpeg's default).

With `short_side`, frames are decoded at 1/2, 1/4 or 1/8 size by the JPEG
decoder's DCT scaling when that still covers the short side (see
`geometry.reduction`). A box (after `short_side`, or drawn by
crop="resized") is then resized on its own (`resize_box`, OpenCV on both
paths: equal pixels); whole frames are resized by area, where OpenCV's and
TF's resizes differ by at most one grey level.
"""

from __future__ import annotations

import math

import numpy as np

from video_tfrecords.clips import audio as clip_audio
from video_tfrecords.clips import backends, buffers, jpeg
from video_tfrecords.clips.plan import checked_plan, stored_boxes, video_label
from video_tfrecords.clips.resize import area_resize, resize_box
from video_tfrecords.clips.spec import ClipSpec

__all__ = ["plan_np", "sample_np"]


def plan_np(
    spec: ClipSpec, frames, seed=None, *, name=None, fingerprint=None, timestamps=None,
    source_fps=None, boxes: bool = False, frame_shape=None,
) -> dict[str, np.ndarray]:
    """The plan of `sample_np(spec, frames, seed)`, without decoding pixels.

    A dict with "indices" (int64 [num_views, T], -1 = padded frame),
    "crop_offsets" (int64 [num_views, 2], (y, x) of each box in the frame after
    `short_side`; zeros without crop) and "flip" (bool [num_views]); views are
    clips times crops, clip-major. With `boxes`, also "boxes" (int64 [num_views, 4]:
    y, x, height, width of each view's box in the stored frame's pixels) and
    "frame_size" (the stored frame's height and width: `frame_shape` when given).
    """
    layout = _layout(
        spec, frames, seed, name, need_size=boxes, fingerprint=fingerprint,
        timestamps=timestamps, source_fps=source_fps, frame_shape=frame_shape,
    )
    plan = {k: np.asarray(v) for k, v in layout.plan.items()}
    if boxes:
        ops = backends.NP_OPS
        plan["boxes"] = np.stack([np.asarray(b) for b in stored_boxes(ops, spec, layout)], axis=1)
        plan["frame_size"] = np.asarray(layout.frame_size, np.int64)
    return plan


def _layout(spec, frames, seed, name, **plan_args):
    """The checked plan on NumPy; planned again, frames enlarged, if they do not hold the box."""
    with backends.NP_OPS.wrapping():
        layout = checked_plan(backends.NP_OPS, spec, frames, seed, name, **plan_args)
        if layout.covers is False:
            layout = checked_plan(
                backends.NP_OPS, spec, frames, seed, name, enlarge=True, **plan_args
            )
    return layout


def sample_np(
    spec: ClipSpec, frames, seed=None, *, name=None, fingerprint=None, out=None,
    timestamps=None, source_fps=None, audio=None, audio_rate=None, audio_out=None,
    frame_shape=None, deferred: list | None = None,
):
    """Samples and decodes clip(s) without TensorFlow: uint8 [T, H, W, 3] or [V, T, H, W, 3].

    V = num_clips * num_crops views, clip-major. With `spec.audio`, a pair (clip(s), audio):
    float32 [S, C] or [V, S, C], each view's window of `audio` (`clips.audio`).

    Args:
        spec: the clip specification.
        frames: a sequence of encoded JPEG frames (bytes, memoryview, NumPy
            object array of bytes...), in video order.
        seed: an int, or None for `spec.seed` (fresh randomness on every call
            if that is None too). The clip is a function of (seed, video content).
        name: optional name of the video (e.g. its filename) for error messages;
            defaults to its content fingerprint.
        fingerprint: the video's `keys.video_fingerprint(frames)` if known
            (e.g. cached by a reader that reads the video again): saves hashing
            it. It must be that value; the clip is then the same.
        timestamps, source_fps: each frame's time in seconds, else the stored
            frame rate: needed with `spec.fps` or `spec.audio` only.
        audio, audio_rate, audio_out: with `spec.audio`, the example's int16 samples
            [N, C], their rate, and optionally a float32 array to cut the windows into.
        frame_shape: the (height, width) every frame has (the dataset's, or the example's
            stored size); else the first planned frame's header says it.
        deferred: with `out`, a list to append the clip's frames' reads, checks and decodes
            to (one callable) instead of running them: the clip is planned and returned, its
            pixels are there once the caller has run it. A batch reader so decodes a batch's
            frames back to back, after all its records and plans (a few percent faster: each
            kind of work keeps its caches).

    Each distinct frame is decoded once, straight from its bytes: into the
    output itself when it fills its place whole (no crop, flip or resize), else
    into one reused frame, copied on into place cropped, flipped or resized.
    Its header is checked first (`jpeg.frame_problem`): a frame of another size or
    encoding, or one claiming too many pixels, raises CorruptRecordError before any of
    its pixels is allocated.
    """
    ops = backends.NP_OPS
    layout = _layout(
        spec, frames, seed, name, need_size=True, fingerprint=fingerprint,
        timestamps=timestamps, source_fps=source_fps, frame_shape=frame_shape,
    )
    plan = layout.plan
    label = lambda: ops.message(video_label(ops, frames, name))
    # Boxes resized on their own: (y, x, h, w) of each view's box in the decoded frame.
    boxes = None if layout.boxes is None else np.stack(layout.boxes, axis=1).tolist()
    # (h, w) of whole frames after short_side (one size: no scale jitter without boxes)
    size = spec.crop_size if boxes else tuple(int(s) for s in layout.out_size)
    box_h, box_w = spec.crop_size or size
    shape = (spec.num_views, spec.num_frames, box_h, box_w, 3)
    clips = buffers.empty(shape) if out is None else _output_view(out, shape)
    if spec.short_video == "pad":
        clips[...] = 0
    slots = {}  # frame index -> [(clip, position)]
    for c, row in enumerate(plan["indices"].tolist()):
        for t, i in enumerate(row):
            if i >= 0:
                slots.setdefault(i, []).append((c, t))
    offsets = plan["crop_offsets"].tolist()
    flips = plan["flip"].tolist()
    ratio = int(layout.ratio)
    # The size every frame has (the stored one, else the first planned frame's), and decodes to.
    headers = jpeg.Headers.for_size(layout.frame_size)
    decoded_size = headers.decoded_size(ratio)
    resized = size != decoded_size and boxes is None  # whole frames are resized
    whole = not resized and boxes is None and (box_h, box_w) == size  # a frame fills its slot

    def decode():
        scratch = None  # one decoded frame when it cannot go straight to its slot
        for i, positions in slots.items():
            in_place = whole and not flips[positions[0][0]]
            if in_place:
                target = clips[positions[0]]  # decoded into the clip: no copy at all
            else:
                scratch = np.empty((*decoded_size, 3), np.uint8) if scratch is None else scratch
                target = scratch
            where = lambda i=i: f"Frame {i} of video {label()}"
            image = jpeg.decode_rgb(frames[i], ratio, target, where, headers)
            if resized:
                image = area_resize(image, *size)
            for c, t in positions[1:] if in_place else positions:
                # A box resized on its own, else a fixed box (resize_box only flips or copies).
                y, x, h, w = boxes[c] if boxes is not None else (*offsets[c], box_h, box_w)
                resize_box(image[y : y + h, x : x + w], box_h, box_w, clips[c, t], flips[c])

    if deferred is None or out is None:
        decode()
    else:
        deferred.append(decode)
    video = clips if spec.multi_clip else clips[0]  # (`clips` itself stays: `decode` fills it)
    if not spec.audio:
        return video
    windows = clip_audio.window_np(
        spec, plan["indices"], audio, audio_rate, timestamps, source_fps, out=audio_out
    )
    return video, windows


def _output_view(out: np.ndarray, shape: tuple[int, ...]) -> np.ndarray:
    """`out` seen as `shape`; a ValueError unless it is C-contiguous uint8 of that size.

    (A reshape of a strided array would quietly copy, and the clip would be lost.)
    """
    if (
        not isinstance(out, np.ndarray) or out.dtype != np.uint8
        or not out.flags.c_contiguous or not out.flags.writeable or out.size != math.prod(shape)
    ):
        found = f"{getattr(out, 'dtype', type(out).__name__)} {getattr(out, 'shape', '')}"
        raise ValueError(
            f"out= must be a writable C-contiguous uint8 array of shape {shape}; got {found}."
        )
    return out.reshape(shape)
