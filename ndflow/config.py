"""`nf.config`: devices and soft placement (TensorFlow's names); running functions eagerly;
compiler debug output and trace-cache size; `settings`, the compiler's and the kernel tiers'
tuning (`ndflow/core/settings.py`)."""
from .backends.device import (list_logical_devices, list_physical_devices,  # noqa: F401
                              set_logical_device_configuration, get_logical_device_configuration,
                              LogicalDeviceConfiguration, LogicalDevice, PhysicalDevice,
                              set_soft_device_placement, get_soft_device_placement)
from .core.settings import settings  # noqa: F401
from .graph.debug import set_debug, get_debug  # noqa: F401
from .graph.function import (set_function_cache_size, get_function_cache_size,  # noqa: F401
                             run_functions_eagerly, functions_run_eagerly)
from .graph.kernels.planner import explain as _explain


def explain(fn):
    """Which route each fused region of a compiled function takes, and why (ndflow's own; no
    TensorFlow counterpart): `fn` an `nf.function` (every graph it has traced so far), a
    concrete function or a graph. Regions are planned as they run, so call the function
    first. Each region also says its contract: NumPy's bits, or the fast math of
    `nf.function(..., jit_compile=True)` (docs/guides/performance.md). The same decisions are
    logged as they are made with NDFLOW_DEBUG=plan.

    >>> import ndflow as nf, ndflow.numpy as tnp
    >>> f = nf.function(lambda y: 1 / (1 + tnp.exp(-y)))
    >>> _ = f(tnp.ones(4))
    >>> print(nf.config.explain(f))            # doctest: +ELLIPSIS
    region 1: fused{t0=negative(x0); t1=exp(t0); t2=add(x1, t1); t3=true_divide(x1, t2)} ...
      contract: NumPy's bits (the default)
      tier 0, written into the step: 4 elements < settings.large_min (4096); tier 1 never: ...
    """
    return _explain(fn)


class experimental:  # noqa: N801  (TensorFlow's namespace)
    """TensorFlow's `tf.config.experimental` names that programs call: `set_memory_growth` is
    accepted and does nothing (ndflow allocates as NumPy and CuPy do, as needed).
    """
    @staticmethod
    def set_memory_growth(device, enable):
        return None
