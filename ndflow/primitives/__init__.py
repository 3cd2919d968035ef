"""Primitive families: one file each; importing this package registers them all."""
from . import elementwise, reduction, shape, indexing, linalg, random, fft, misc, host  # noqa: F401
