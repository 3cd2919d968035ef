"""Op-table records for the Array API additions of `ndflow.numpy.array_api`."""
from optable import (record, Sample, values, noncontig, NON_COMPUTING, F32, F64, I32, BOOL)


def _dlpack_samples(rng, dt):
    return [Sample((values(rng, (2, 3), dt),), desc="matrix"),
            Sample((values(rng, (), dt),), desc="scalar"),
            Sample((noncontig(rng, (3, 4), dt),), desc="noncontig"),
            Sample((values(rng, (0, 2), dt),), desc="empty"),
            Sample((values(rng, (4,), dt),), {"copy": True}, desc="copy")]


# an ndflow array in, the same values out (zero-copy); other producers are in test_array_api
record("from_dlpack", _dlpack_samples, dtypes=(F32, F64, I32, BOOL))

# dtype queries
NON_COMPUTING.update({"isdtype"})
