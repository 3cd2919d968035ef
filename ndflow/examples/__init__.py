"""The example programs: TensorFlow guides and lessons run on ndflow with only their imports
changed, and one program that trains, checkpoints, saves and exports a model.

They ship with the package so that `python -m ndflow.tour` runs them wherever ndflow is
installed; each also runs alone (`python -m ndflow.examples.tf_numpy_guide`, or
`python examples/tf_numpy_guide.py` from a checkout):

==========================  ===============================================================
``tf_numpy_guide``          TensorFlow's NumPy guide, first half: the ND array, promotion,
                            broadcasting, indexing, mutation, NumPy interoperability
``tf_numpy_performance``    the guide's second half: gradients, ``nf.function``,
                            ``vectorized_map``, devices, the sigmoid benchmark and its figure
``tf_numpy_interop``        the "NumPy on GPU/TPU" article's programs
``tf_function_lesson``      a lesson on ``tf.function``: a digits classifier and timings
``effective_tf``            "Effective TensorFlow": shapes, broadcasting, Python ops
``train_export``            train with summaries, checkpoint, save, export to ONNX, reload
==========================  ===============================================================

Options of every program: ``--out DIR`` (where its files go; by default a new temporary
directory, printed at the end) and ``--quick`` (or ``NDFLOW_QUICK=1``: smaller sizes and fewer
repeats, for a run of seconds). Importing this package imports none of the programs.
"""
