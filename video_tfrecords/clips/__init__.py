"""Clips: what to take from a video of JPEG frames (spec), planned (plan), decoded (decode_*).

spec (ClipSpec: the arguments, checked), keys (seeds, fingerprints, random draws), sampling
(which frames), boxes (crop boxes and flips), geometry (sizes, DCT scale), plan (the checked
plan both decoders run), backends (NumPy and TensorFlow ops the plan is written over), jpeg
(headers, NumPy decode), resize (OpenCV), audio (a clip's audio window), buffers (reused
output arrays), decode_np (no TensorFlow), decode_tf (a TF graph), epoch_sampler (indices
that carry their epoch).
"""
