"""The programs of the article "NumPy on GPU/TPU" (seed 002), on ndflow.

The program is ndflow/examples/tf_numpy_interop.py: it ships inside the package, so that
`python -m ndflow.tour` finds it wherever ndflow is installed. This file runs it from a checkout
(and gives its names to `import tf_numpy_interop`):

    python examples/tf_numpy_interop.py [--out DIR] [--quick]
"""
from ndflow.examples.tf_numpy_interop import *  # noqa: F401,F403
from ndflow.examples.tf_numpy_interop import main
from ndflow.examples._run import run_as_script

if __name__ == "__main__":
    run_as_script(main, __doc__.split("\n\n")[0])
