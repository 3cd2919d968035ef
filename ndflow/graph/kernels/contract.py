"""The two contracts a fused region runs under (`FusedKernel.fast_math`, fixed when the region
is built), and the accuracy bound of the fast one."""

EXACT = "NumPy's bits (the default)"
FAST = "fast math (jit_compile=True): within the accuracy contract's bounds"
