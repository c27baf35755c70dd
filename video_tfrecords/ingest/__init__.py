"""Ingest: from the manual dir's manifests to encoded videos and shards, one video at a time.
Imports no TensorFlow (`shards.write` serializes with TFDS's feature objects, which load none).

manifest (the manifests, checked), video_io (FFmpeg decode through PyAV), file_structure (a
file's own stated length), timestamps, deinterlace, audio_io (the audio on the frames' clock),
frame_choice (which frames, what size), encoding (one video's examples or skip), cache
(encoded videos kept for resuming), shards (a split's shards, written whole or not at all), run
(one build's tasks and findings: the seam every engine calls), summary (what a build tells its
user), tfds_command (the `tfds build` command's hooks), progress (a bar of videos a split),
provenance and changes (what a build is made from, and two compared), file_identity (a video
file by its content).
"""
