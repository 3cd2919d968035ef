"""The core layer: the array class, dtypes, `Primitive` and `bind`, the eager door (where an
eager call chooses its route: `dispatch.py`), per-thread state, the memory/mutation model,
nested structures and error types. It imports nothing above it (docs/architecture.md,
"Layers")."""
