"""Tracing into a graph IR, passes, code generation, `function`."""
