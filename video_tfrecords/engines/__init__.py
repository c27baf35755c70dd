"""The engines that run a build: each encodes the tasks' videos its own way, through the same
seam (`ingest.run.BuildRun`: tasks, encode, findings, summary, cache clean-up).

prepare (the steps of every build, around the engine's write: the builder's and grouped's),
local (a pool of worker processes, under TFDS's writer; process_pool: its ordered process map),
beam (inside TFDS's Beam writer), grouped (any engine that maps over groups: the driver's steps;
even_groups: groups of even size), spark (Spark's map and session for grouped).
"""
