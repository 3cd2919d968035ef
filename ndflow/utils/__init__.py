"""Small helpers for programs built on ndflow (examples, benchmarks): progress bars and loss-curve
pictures. Not imported by `import ndflow`; each imports its optional package (tqdm, matplotlib)
only when used."""
