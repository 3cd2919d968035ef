"""Save and load times and file sizes of a 10-million-parameter model in the candidate tensor
formats (the measurement behind the choice in ndflow/train/_tensorfile.py):

    python -m benchmarks.checkpoint_formats [--params N] [--repeat R]

  ndflow writer      our safetensors-layout writer/reader (what checkpoints and saved models use)
  safetensors pkg    the `safetensors` package's NumPy API (skipped when it is not installed)
  npz + JSON         `np.savez` (uncompressed) with a JSON index, loaded with allow_pickle=False
  nf.train.Checkpoint  end to end: walk a Module, write; restore into a fresh Module
  nf.saved_model     end to end: a forward function over the same Variables, save and load

Each save is fsynced (ours also renames atomically and fsyncs the directory); the best and the
median of R runs are reported. Loads read
from the page cache right after the save, so they measure parsing and copying, not the disk.
"""
import argparse
import json
import os
import shutil
import tempfile
import time

import numpy as np


def _shapes(n):
    """An MLP-like set of tensors with `n` parameters in all."""
    shapes, left, width = [], n, 2048
    while left > width * width + width:
        shapes += [(width, width), (width,)]
        left -= width * width + width
    shapes.append((left,))
    return shapes


def _best(f, repeat):
    times = []
    for _ in range(repeat):
        t = time.perf_counter()
        f()
        times.append(time.perf_counter() - t)
    return min(times), float(np.median(times))


def _size(path):
    if os.path.isdir(path):
        return sum(os.path.getsize(os.path.join(path, f)) for f in os.listdir(path))
    return os.path.getsize(path)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--params", type=int, default=10_000_000)
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args(argv)
    import ndflow as nf
    import ndflow.numpy as tnp
    from ndflow.train import _tensorfile

    rng = np.random.default_rng(0)
    arrays = {"layer%d/w" % i: rng.standard_normal(s).astype(np.float32)
              for i, s in enumerate(_shapes(args.params))}
    total = sum(a.size for a in arrays.values())
    d = tempfile.mkdtemp(prefix="ndflow-formats-")
    rows = []
    try:
        p = os.path.join(d, "a.safetensors")
        rows.append(("ndflow writer (safetensors layout)",
                     _best(lambda: _tensorfile.write(p, arrays), args.repeat),
                     _best(lambda: _tensorfile.read(p), args.repeat), _size(p)))
        try:
            import safetensors.numpy as stn
        except ImportError:
            stn = None
        if stn is not None:
            p = os.path.join(d, "b.safetensors")

            def save_st():
                stn.save_file(arrays, p)
                with open(p, "rb+") as fh:
                    os.fsync(fh.fileno())
            rows.append(("safetensors package", _best(save_st, args.repeat),
                         _best(lambda: stn.load_file(p), args.repeat), _size(p)))
        p = os.path.join(d, "c.npz")
        names = {k: "t%d" % i for i, k in enumerate(arrays)}

        def save_npz():
            with open(p, "wb") as fh:
                np.savez(fh, **{names[k]: v for k, v in arrays.items()})
                fh.flush()
                os.fsync(fh.fileno())
            with open(p + ".json", "w") as fh:
                json.dump({k: [names[k], list(v.shape), v.dtype.name]
                           for k, v in arrays.items()}, fh)

        def load_npz():
            with open(p + ".json") as fh:
                index = json.load(fh)
            with np.load(p, allow_pickle=False) as z:
                return {k: z[e[0]] for k, e in index.items()}
        rows.append(("npz (allow_pickle=False) + JSON index", _best(save_npz, args.repeat),
                     _best(load_npz, args.repeat), _size(p) + _size(p + ".json")))

        model = nf.Module()
        model.layers = [nf.Variable(a) for a in arrays.values()]
        fresh = nf.Module()
        fresh.layers = [nf.Variable(np.zeros_like(a)) for a in arrays.values()]
        ck = nf.train.Checkpoint(model=model)
        p = os.path.join(d, "ckpt")
        rows.append(("nf.train.Checkpoint write / restore",
                     _best(lambda: ck.write(p), args.repeat),
                     _best(lambda: nf.train.Checkpoint(model=fresh).restore(p), args.repeat),
                     _size(p + ".safetensors")))

        @nf.function(input_signature=[nf.TensorSpec([None, 8])])
        def forward(x):
            return tnp.sum(x) + sum(tnp.sum(v) for v in model.layers)
        model.forward = forward
        p = os.path.join(d, "saved")
        rows.append(("nf.saved_model save / load",
                     _best(lambda: nf.saved_model.save(model, p), args.repeat),
                     _best(lambda: nf.saved_model.load(p), args.repeat), _size(p)))
    finally:
        shutil.rmtree(d, ignore_errors=True)
    print(f"{total:,} float32 parameters in {len(arrays)} tensors (best / median of "
          f"{args.repeat})")
    print(f"{'format':40s} {'save ms':>13s} {'load ms':>13s} {'size MB':>9s}")
    for name, s, l, size in rows:
        print(f"{name:40s} {s[0] * 1e3:6.1f}/{s[1] * 1e3:6.1f} {l[0] * 1e3:6.1f}/{l[1] * 1e3:6.1f} "
              f"{size / 1e6:9.2f}")


if __name__ == "__main__":
    main()
