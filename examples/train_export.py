"""Train, checkpoint, save, export to ONNX and reload the digits classifier.

The program is ndflow/examples/train_export.py: it ships inside the package, so that
`python -m ndflow.tour` finds it wherever ndflow is installed. This file runs it from a checkout
(and gives its names to `import train_export`):

    python examples/train_export.py [--out DIR] [--quick]
"""
from ndflow.examples.train_export import *  # noqa: F401,F403
from ndflow.examples.train_export import main
from ndflow.examples._run import run_as_script

if __name__ == "__main__":
    run_as_script(main, __doc__.split("\n\n")[0])
