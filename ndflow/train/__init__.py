"""Training state: Variables, Modules, optimizers and checkpoints (`nf.train.Checkpoint`,
`nf.train.CheckpointManager`, `nf.train.latest_checkpoint`)."""

from .checkpoint import Checkpoint, CheckpointManager, latest_checkpoint  # noqa: F401
