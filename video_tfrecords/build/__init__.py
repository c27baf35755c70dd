"""The build side: from manifest lines to the examples TFDS writes. Imports no TensorFlow
(but `shards.write`, through TFDS's serializer).

manifest (the manual dir's manifests, checked), video_io (FFmpeg decode through
PyAV), timestamps, deinterlace, file_structure (its helpers), audio_io (the
audio on the frames' clock), frame_choice (which frames, what size), encoding (one video's examples
or skip record), cache (encoded videos kept for resuming), parallel (the
worker pool of a local build), summary (what a build tells its user);
distributed (a build on any engine's parallel map), spread (videos in groups of
even size), shards (a split's shards, written whole or not at all).
"""
