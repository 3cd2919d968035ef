"""`nf.config`: devices and soft placement (TensorFlow's names); running functions eagerly;
compiler debug output and trace-cache size."""
from .backends.device import (list_logical_devices, list_physical_devices,  # noqa: F401
                              set_logical_device_configuration, get_logical_device_configuration,
                              LogicalDeviceConfiguration, LogicalDevice, PhysicalDevice,
                              set_soft_device_placement, get_soft_device_placement)
from .graph.debug import set_debug, get_debug  # noqa: F401
from .graph.function import (set_function_cache_size, get_function_cache_size,  # noqa: F401
                             run_functions_eagerly, functions_run_eagerly)


class experimental:  # noqa: N801  (TensorFlow's namespace)
    """TensorFlow's `tf.config.experimental` names that programs call: `set_memory_growth` is
    accepted and does nothing (ndflow allocates as NumPy and CuPy do, as needed).
    """
    @staticmethod
    def set_memory_growth(device, enable):
        return None
