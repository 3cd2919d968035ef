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


class experimental:  # noqa: N801  (TensorFlow's namespace)
    @staticmethod
    def set_memory_growth(device, enable):
        return None
