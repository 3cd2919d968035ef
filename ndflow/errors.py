"""`nf.errors`: TensorFlow's error types (`tf.errors`) that ndflow raises."""
from .core.errors import OpError, InvalidArgumentError, DataLossError  # noqa: F401
