"""The core layer: the array class, dtypes, `Primitive` and `bind`, per-thread state, the
memory/mutation model, nested structures and error types. It imports nothing above it
(docs/architecture.md, "Layers")."""
