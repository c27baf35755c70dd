"""The engines that run a build: each encodes the planned videos its own way, through the same
seam (`ingest.run.BuildRun`: tasks, encode, findings, summary, cache clean-up).

prepare (the steps of every build, around the engine's write: the builder's and distributed's),
local (a pool of worker processes, under TFDS's writer; parallel: its ordered process map), beam
(inside TFDS's Beam writer), distributed (any engine that maps over groups: the driver's steps;
spread: groups of even size), spark (Spark's map and session for distributed).
"""
