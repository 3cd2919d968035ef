"""A lesson on tf.function (seed 003), on ndflow.

The program is ndflow/examples/tf_function_lesson.py: it ships inside the package, so that
`python -m ndflow.tour` finds it wherever ndflow is installed. This file runs it from a checkout
(and gives its names to `import tf_function_lesson`):

    python examples/tf_function_lesson.py [--out DIR] [--quick]
"""
from ndflow.examples.tf_function_lesson import *  # noqa: F401,F403
from ndflow.examples.tf_function_lesson import main
from ndflow.examples._run import run_as_script

if __name__ == "__main__":
    run_as_script(main, __doc__.split("\n\n")[0])
