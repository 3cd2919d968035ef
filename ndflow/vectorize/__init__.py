"""Vectorization as an interpreter: `vectorized_map`, `vmap`, and the `map_fn` loop."""
