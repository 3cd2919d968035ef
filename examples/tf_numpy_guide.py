"""TensorFlow's NumPy guide, first half (seed 001), on ndflow.

The program is ndflow/examples/tf_numpy_guide.py: it ships inside the package, so that
`python -m ndflow.tour` finds it wherever ndflow is installed. This file runs it from a checkout
(and gives its names to `import tf_numpy_guide`):

    python examples/tf_numpy_guide.py [--out DIR] [--quick]
"""
from ndflow.examples.tf_numpy_guide import *  # noqa: F401,F403
from ndflow.examples.tf_numpy_guide import main
from ndflow.examples._run import run_as_script

if __name__ == "__main__":
    run_as_script(main, __doc__.split("\n\n")[0])
