"""TensorFlow's NumPy guide, second half (seed 000), on ndflow: gradients, nf.function,
vectorized_map, devices and the sigmoid benchmark.

The program is ndflow/examples/tf_numpy_performance.py: it ships inside the package, so that
`python -m ndflow.tour` finds it wherever ndflow is installed. This file runs it from a checkout
(and gives its names to `import tf_numpy_performance`):

    python examples/tf_numpy_performance.py [--out DIR] [--quick]
"""
from ndflow.examples.tf_numpy_performance import *  # noqa: F401,F403
from ndflow.examples.tf_numpy_performance import main
from ndflow.examples._run import run_as_script

if __name__ == "__main__":
    run_as_script(main, __doc__.split("\n\n")[0])
