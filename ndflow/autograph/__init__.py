"""AutoGraph: Python control flow inside `nf.function`, as `tf.autograph`.

`nf.function` (autograph=True, the default) runs a converted twin of your function: `if`,
`while`, `for`, `break`, `continue`, `return`, `and`/`or`/`not`, conditional expressions,
assignment expressions and `assert` keep Python's meaning on Python values and become
`nf.cond` / `nf.while_loop` on traced ones; `range`, `enumerate`, `zip`, `min`, `max`, `any`,
`all`, `sum` and `len` of traced values give Python's answer as arrays. Functions it calls are
converted too (recursion unrolls while tracing), library code is not.

    nf.autograph.to_code(f)                        the converted source
    nf.autograph.experimental.do_not_convert(f)    run f as written
"""
from .conversion import convert, to_code, do_not_convert  # noqa: F401
from . import experimental  # noqa: F401
