"""`nf.autograph.experimental`: opting out of conversion."""
from .conversion import do_not_convert  # noqa: F401
