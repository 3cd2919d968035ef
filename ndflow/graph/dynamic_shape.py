"""`nf.shape`: an array's shape as an array, computed at run time inside `nf.function`."""
import numpy as np

from ..core.ndarray import ndarray
from .. import numpy as tnp
from .static import shape_of


def shape(x, out_type=np.int32):
    """The shape of `x` as an int32 array (`out_type` otherwise), as `tf.shape`; inside
    `nf.function` it is computed at run time, so sizes unknown while tracing (None) are
    available. (`x.shape` gives the static shape, a tuple.)

    Examples
    --------
    >>> import ndflow as nf
    >>> nf.shape(nf.zeros([2, 3]))
    array([2, 3], dtype=int32)
    """
    return shape_of(x if isinstance(x, ndarray) else tnp.asarray(x), out_type)
