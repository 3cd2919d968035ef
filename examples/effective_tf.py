""""Effective TensorFlow" (seed 004), on ndflow.

The program is ndflow/examples/effective_tf.py: it ships inside the package, so that
`python -m ndflow.tour` finds it wherever ndflow is installed. This file runs it from a checkout
(and gives its names to `import effective_tf`):

    python examples/effective_tf.py [--out DIR] [--quick]
"""
from ndflow.examples.effective_tf import *  # noqa: F401,F403
from ndflow.examples.effective_tf import main
from ndflow.examples._run import run_as_script

if __name__ == "__main__":
    run_as_script(main, __doc__.split("\n\n")[0])
