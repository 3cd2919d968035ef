"""`nf.config`: devices (TensorFlow's names)."""
from .backends.device import (list_logical_devices, list_physical_devices,  # noqa: F401
                              set_logical_device_configuration, get_logical_device_configuration,
                              LogicalDeviceConfiguration, LogicalDevice, PhysicalDevice)


class experimental:  # noqa: N801  (TensorFlow's namespace)
    @staticmethod
    def set_memory_growth(device, enable):
        return None
