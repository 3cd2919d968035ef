"""The systems the benchmark knows, in table order.  Importing this imports no framework."""

from __future__ import annotations

import importlib
import importlib.util
import subprocess

# system name -> (implementation module, top-level package that must be importable)
SYSTEMS = {
    "numpy": ("benchmarks.impl_numpy", "numpy"),
    "ndflow": ("benchmarks.impl_ndflow", "ndflow"),
    "tf": ("benchmarks.impl_tf", "tensorflow"),
    "jax": ("benchmarks.impl_jax", "jax"),
    "torch": ("benchmarks.impl_torch", "torch"),
}
ALIASES = {"tensorflow": "tf", "np": "numpy", "nf": "ndflow", "pytorch": "torch"}
# Peers that only appear in the table when installed.
OPTIONAL = ("tf", "jax", "torch")


def impl(system: str):
    return importlib.import_module(SYSTEMS[system][0])


def columns(system: str) -> dict[str, str]:
    """column key -> table header, for one system."""
    return impl(system).COLUMNS


def installed(system: str, python: str | None = None) -> bool:
    """Whether the system's package can be found (without importing it), here or by the
    interpreter `python`."""
    if python:
        code = f"import importlib.util, sys; sys.exit(importlib.util.find_spec({SYSTEMS[system][1]!r}) is None)"
        try:
            return subprocess.run([python, "-c", code], capture_output=True, timeout=60).returncode == 0
        except (OSError, subprocess.TimeoutExpired):
            return False
    try:
        return importlib.util.find_spec(SYSTEMS[system][1]) is not None
    except (ImportError, ValueError):
        return False


def canonical(name: str) -> str:
    name = name.strip().lower()
    name = ALIASES.get(name, name)
    if name not in SYSTEMS:
        raise ValueError(f"unknown system {name!r}; choose from {', '.join(SYSTEMS)}")
    return name
