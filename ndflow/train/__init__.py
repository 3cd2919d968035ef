"""Training state: Variables, Modules, optimizers and checkpoints (`nf.train.Checkpoint`,
`nf.train.CheckpointManager`, `nf.train.latest_checkpoint`)."""

_CHECKPOINT = ("Checkpoint", "CheckpointManager", "latest_checkpoint")


def __getattr__(name):
    # checkpoints (and their file format, json) load on first use: not part of `import ndflow`
    if name in _CHECKPOINT:
        from . import checkpoint
        return getattr(checkpoint, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def __dir__():
    return sorted(set(globals()) | set(_CHECKPOINT))
