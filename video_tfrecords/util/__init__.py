"""The bottom layer: small helpers every other folder may use, importing nothing of the package.

text (counts and sizes in words), paths (local or remote), fork_safe (a lock a forked
worker gets unheld), errors (the error for refused stored data), numbers (which values are
ints and finite numbers).
"""
