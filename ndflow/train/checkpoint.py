"""Checkpoints, as `tf.train.Checkpoint`: object-based saving and restoring of Variables.

    ckpt = nf.train.Checkpoint(model=model, optimizer=opt)
    path = ckpt.save("/tmp/run/ckpt")          # /tmp/run/ckpt-1 (file /tmp/run/ckpt-1.safetensors)
    ckpt.restore(nf.train.latest_checkpoint("/tmp/run")).assert_consumed()

What is saved. The objects given to `Checkpoint` are walked: a Variable is saved under its path
(the attribute names, list indices and dict keys leading to it, joined by '/', e.g.
`model/layers/0/w`); an `nf.Module`'s attributes, lists, tuples and dicts are walked; an
optimizer contributes `iterations`, its learning rate when that is a Variable, and its slots
(`optimizer/.slots/<path of the variable>/<slot name>`, e.g. Adam's `m` and `v`); another
`Checkpoint` contributes its objects. Other attribute values (numbers, strings, functions) are
not state and are skipped. A Variable reachable along several paths is saved once, under the
first path in sorted order. Slots of a Variable that the checkpoint does not reach are not saved.

Restoring matches by path. A value whose shape or dtype differs from the object's is a
`ValueError` naming the path, raised before anything is assigned (no half-restored model).
Values and objects that do not match are reported by the status object `restore` returns
(`assert_consumed`, `assert_existing_objects_matched`, `expect_partial`), as TensorFlow does.

Slots made later (deferred restoration). Optimizers create slots at their first
`apply_gradients`, usually after `restore` in a fresh process. As TensorFlow, the checkpoint keeps
such a slot's value on the optimizer and the slot starts from it when it is created, so training
continues exactly where it stopped; until then `assert_consumed` reports it as pending.

Files. A checkpoint is one file, `<path>.safetensors` (the safetensors layout: a JSON header and
raw little-endian tensors, see `_tensorfile`); the directory's `checkpoint` file (JSON) lists the
latest and retained checkpoints for `latest_checkpoint` and `CheckpointManager`. Loading parses
JSON and copies bytes: no code from the file runs. Every write goes to a temporary file that is
fsynced and renamed over the target, so a crash mid-save leaves the previous checkpoint loadable.

Several processes (a distribution strategy): every process calls `save`/`write` and gets the same
path, but only a process for which `_should_write()` is true writes files. It returns True; a
strategy replaces it (`checkpoint._should_write = lambda: rank == 0`). Any number of processes
can restore the file.
"""
import json
import os
import time
import warnings

import numpy as np

from .variable import Variable
from .module import Module
from .optimizers import Optimizer
from . import _tensorfile

__all__ = ["Checkpoint", "CheckpointManager", "latest_checkpoint"]

FORMAT = "ndflow.checkpoint"
VERSION = 1
SUFFIX = ".safetensors"
STATE_FILE = "checkpoint"
_SLOTS = ".slots"


def _should_write():
    """Whether this process writes checkpoint files (see the module docstring)."""
    return True


def _written():
    """Called by every process after a save or write; a strategy replaces it with a barrier so
    that no process reads a checkpoint before the writing process has finished it."""


# ------------------------------------------------------------------ the object graph
def _seg(k):
    return str(k).replace("%", "%25").replace("/", "%2F")


def _join(path, k):
    return _seg(k) if not path else path + "/" + _seg(k)


def _is_trackable(obj):
    if isinstance(obj, (Variable, Module, Optimizer, Checkpoint)):
        return True
    if isinstance(obj, (list, tuple)):
        return all(_is_trackable(e) for e in obj)
    if isinstance(obj, dict):
        return all(_is_trackable(e) for e in obj.values())
    return False


class _Graph:
    """The Variables reachable from a checkpoint's objects: `variables` {path: Variable},
    `optimizers` [(path, optimizer)], and the slots {path: (optimizer, owner, name, slot)}."""

    def __init__(self, objects):
        self.variables = {}
        self.optimizers = []
        self._path_of = {}
        self._visited = set()
        for k in sorted(objects):
            self._visit(objects[k], k)
        self.slots = {}
        for opath, opt in self.optimizers:
            for (_, name), (slot, owner) in sorted(opt._slots.items(),
                                                   key=lambda kv: kv[0][1]):
                owner_path = self._path_of.get(id(owner))
                if owner_path is not None:
                    key = "%s/%s/%s/%s" % (opath, _SLOTS, owner_path, _seg(name))
                    self.slots[key] = (opt, owner, name, slot)
        self.slots = dict(sorted(self.slots.items()))

    def _visit(self, obj, path):
        if isinstance(obj, Variable):
            if id(obj) not in self._path_of:
                self._path_of[id(obj)] = path
                self.variables[path] = obj
            return
        if isinstance(obj, (Module, Optimizer, Checkpoint)):
            if id(obj) in self._visited:
                return
            self._visited.add(id(obj))
        if isinstance(obj, Checkpoint):
            for k in sorted(obj._objects):
                self._visit(obj._objects[k], _join(path, k))
            self._visit(obj.save_counter, _join(path, "save_counter"))
        elif isinstance(obj, Optimizer):
            self.optimizers.append((path, obj))
            self._visit(obj.iterations, _join(path, "iterations"))
            if isinstance(obj._learning_rate, Variable):
                self._visit(obj._learning_rate, _join(path, "learning_rate"))
        elif isinstance(obj, Module):
            for k, v in sorted(vars(obj).items()):
                self._visit(v, _join(path, k))
        elif isinstance(obj, (list, tuple)):
            for i, v in enumerate(obj):
                self._visit(v, _join(path, i))
        elif isinstance(obj, dict):
            for k in sorted(obj, key=str):
                self._visit(obj[k], _join(path, k))

    def all_paths(self):
        return list(self.variables) + list(self.slots)

    def values(self):
        out = {p: v.numpy() for p, v in self.variables.items()}
        out.update((p, s[3].numpy()) for p, s in self.slots.items())
        return out


# ------------------------------------------------------------------ files
def _data_file(path):
    path = os.fspath(path)
    return path if path.endswith(SUFFIX) else path + SUFFIX


def _read_checkpoint(path):
    f = _data_file(path)
    if not os.path.exists(f):
        raise FileNotFoundError(f"no checkpoint at {os.fspath(path)!r} (looked for {f!r})")
    tensors, meta = _tensorfile.read(f, with_metadata=True)
    if meta.get("format") != FORMAT:
        raise ValueError(f"{f!r} is not an ndflow checkpoint (its metadata names format "
                         f"{meta.get('format')!r})")
    try:
        version = int(meta.get("version", ""))
    except ValueError:
        raise ValueError(f"{f!r}: unreadable checkpoint version {meta.get('version')!r}") from None
    if version > VERSION:
        raise ValueError(f"{f!r} was written in checkpoint format version {version}, newer than "
                         f"this ndflow reads ({VERSION}); upgrade ndflow")
    return tensors


def _read_state(directory):
    p = os.path.join(os.fspath(directory), STATE_FILE)
    try:
        with open(p, encoding="utf-8") as fh:
            state = json.load(fh)
    except FileNotFoundError:
        return None
    except (json.JSONDecodeError, UnicodeDecodeError) as e:
        raise ValueError(f"{p!r} is not a readable checkpoint state file: {e}") from None
    if not isinstance(state, dict) or not isinstance(state.get("model_checkpoint_path"), str):
        raise ValueError(f"{p!r} is not a readable checkpoint state file: no "
                         f"'model_checkpoint_path'")
    return state


def _write_state(directory, latest, paths, timestamps, preserved=None):
    if not _should_write():
        return
    directory = os.fspath(directory)

    def rel(p):
        return os.path.relpath(p, directory) \
            if os.path.dirname(os.path.abspath(p)) == os.path.abspath(directory) else p
    state = {"format": FORMAT + "_state", "version": VERSION,
             "model_checkpoint_path": rel(latest),
             "all_model_checkpoint_paths": [rel(p) for p in paths],
             "all_model_checkpoint_timestamps": list(timestamps)}
    if preserved is not None:
        state["last_preserved_timestamp"] = preserved
    with _tensorfile.atomic_write(os.path.join(directory, STATE_FILE), "w") as fh:
        json.dump(state, fh, indent=1)


def _abs(directory, p):
    return p if os.path.isabs(p) else os.path.join(os.fspath(directory), p)


def latest_checkpoint(checkpoint_dir, latest_filename=None):
    """The path of the newest checkpoint recorded in `checkpoint_dir`'s state file, or None
    when there is none (as `tf.train.latest_checkpoint`)."""
    if latest_filename not in (None, STATE_FILE):
        p = os.path.join(os.fspath(checkpoint_dir), latest_filename)
        if not os.path.exists(p):
            return None
    state = _read_state(checkpoint_dir)
    if state is None:
        return None
    path = _abs(checkpoint_dir, state["model_checkpoint_path"])
    return path if os.path.exists(_data_file(path)) else None


# ------------------------------------------------------------------ restore status
class CheckpointLoadStatus:
    """What `Checkpoint.restore` matched, as TensorFlow's status object. The checks look at the
    objects as they are when called, so a slot created after `restore` (deferred restoration)
    counts as matched once it exists."""

    def __init__(self, checkpoint, path, keys):
        self._checkpoint = checkpoint
        self._path = path
        self._keys = keys
        self._silent = False

    def _state(self):
        g = _Graph(self._checkpoint._objects_with_counter())
        paths = g.all_paths()
        have = set(paths)
        unmatched_values = [k for k in self._keys if k not in have]
        unmatched_objects = [p for p in paths if p not in self._keys]
        return unmatched_values, unmatched_objects

    @property
    def unmatched_checkpoint_values(self):
        """Paths in the checkpoint that no current object took (slots still pending included)."""
        return self._state()[0]

    @property
    def unmatched_objects(self):
        """Paths of current objects that the checkpoint had no value for."""
        return self._state()[1]

    def _fail(self, what, names):
        shown = ", ".join(repr(n) for n in names[:20]) + (" ..." if len(names) > 20 else "")
        raise AssertionError(f"checkpoint {self._path!r}: {len(names)} {what}: {shown}")

    def assert_consumed(self):
        """Every value in the checkpoint went to an object and every object got a value."""
        self._silent = True
        values, objects = self._state()
        if values:
            self._fail("checkpoint value(s) not matched to any object (slots not created yet "
                       "are listed too)", values)
        if objects:
            self._fail("object(s) with no value in the checkpoint", objects)
        return self

    def assert_existing_objects_matched(self):
        """Every existing object got a value (the checkpoint may hold more)."""
        self._silent = True
        objects = self._state()[1]
        if objects:
            self._fail("object(s) with no value in the checkpoint", objects)
        return self

    def assert_nontrivial_match(self):
        """At least one object other than the save counter got a value."""
        self._silent = True
        g = _Graph(self._checkpoint._objects_with_counter())
        if not any(p in self._keys and p != "save_counter" for p in g.all_paths()):
            raise AssertionError(f"checkpoint {self._path!r}: nothing was matched")
        return self

    def expect_partial(self):
        """Silence the warning about unmatched checkpoint values (a partial restore on purpose)."""
        self._silent = True
        return self

    def __del__(self):
        if getattr(self, "_silent", True):
            return
        try:
            values = self._state()[0]
        except Exception:
            return
        if values:
            warnings.warn(f"checkpoint {self._path!r} was partially restored: "
                          f"{len(values)} value(s) not matched, e.g. {values[:5]}; call "
                          f"expect_partial() on the status if this is intended", stacklevel=2)


class InitializationOnlyStatus(CheckpointLoadStatus):
    """`restore(None)`: nothing was restored."""

    def __init__(self):
        self._silent = True

    def assert_consumed(self):
        raise AssertionError("no checkpoint was restored (restore(None))")

    assert_existing_objects_matched = assert_nontrivial_match = assert_consumed

    def expect_partial(self):
        return self


# ------------------------------------------------------------------ Checkpoint
class Checkpoint:
    """Groups trackable objects (Variables, `nf.Module`s, optimizers, lists and dicts of
    them) for saving and restoring, as `tf.train.Checkpoint(**kwargs)`."""

    def __init__(self, root=None, **kwargs):
        objects = dict(kwargs)
        if root is not None:
            objects["root"] = root
        for k, v in objects.items():
            if k in ("save_counter",) or hasattr(type(self), k):
                raise ValueError(f"Checkpoint: {k!r} is reserved and cannot name an object")
            if not _is_trackable(v):
                raise ValueError(f"Checkpoint was expecting a trackable object for {k!r} (a "
                                 f"Variable, nf.Module, optimizer, Checkpoint, or a list/dict "
                                 f"of them), got {type(v).__name__}: {v!r:.80}")
        self._objects = objects
        self.save_counter = Variable(0, trainable=False, name="save_counter", dtype="int64")

    def __getattr__(self, name):
        objects = self.__dict__.get("_objects", {})
        if name in objects:
            return objects[name]
        raise AttributeError(f"'Checkpoint' object has no attribute {name!r}")

    def _objects_with_counter(self):
        return dict(self._objects, save_counter=self.save_counter)

    # -------------------------------------------------------------- writing
    def write(self, file_prefix):
        """Write the state to `file_prefix` (file `<file_prefix>.safetensors`) and return
        `file_prefix`; no numbering and no state file (see `save`)."""
        path = self._write(file_prefix)
        _written()
        return path

    def _write(self, file_prefix, _fail_after=None):
        file_prefix = os.fspath(file_prefix)
        if _should_write():
            d = os.path.dirname(os.path.abspath(file_prefix))
            os.makedirs(d, exist_ok=True)
            g = _Graph(self._objects_with_counter())
            _tensorfile.write(_data_file(file_prefix), g.values(),
                              {"format": FORMAT, "version": str(VERSION)},
                              _fail_after=_fail_after)
        return file_prefix

    def save(self, file_prefix):
        """Save to `<file_prefix>-<n>` (n = `save_counter` after incrementing it), record it as
        the latest checkpoint of its directory, and return that path."""
        file_prefix = os.fspath(file_prefix)
        self.save_counter.assign_add(1)
        path = self._write("%s-%d" % (file_prefix, int(self.save_counter.numpy())))
        directory = os.path.dirname(os.path.abspath(file_prefix))
        state = _read_state(directory) if os.path.isdir(directory) else None
        paths, stamps = [], []
        if state is not None:
            paths = [_abs(directory, p) for p in state.get("all_model_checkpoint_paths", [])]
            stamps = list(state.get("all_model_checkpoint_timestamps", []))
            if len(stamps) != len(paths):
                stamps = [time.time()] * len(paths)
        ap = os.path.abspath(path)
        keep = [(p, t) for p, t in zip(paths, stamps) if os.path.abspath(p) != ap]
        keep.append((ap, time.time()))
        _write_state(directory, ap, [p for p, _ in keep], [t for _, t in keep])
        _written()
        return path

    # -------------------------------------------------------------- reading
    def read(self, save_path):
        """Restore from `save_path` (as written by `write` or `save`); see `restore`."""
        return self._restore(save_path)

    def restore(self, save_path):
        """Restore the objects' values from `save_path` (a path `save` returned, e.g. from
        `latest_checkpoint`; None restores nothing). Returns a status object. Raises
        ValueError naming the path of a Variable whose shape or dtype differs, before
        assigning anything."""
        if save_path is None:
            return InitializationOnlyStatus()
        return self._restore(save_path)

    def _restore(self, save_path):
        save_path = os.fspath(save_path)
        tensors = _read_checkpoint(save_path)
        g = _Graph(self._objects_with_counter())
        plan, deferred = [], []

        def check(path, value, shape, dtype):
            if tuple(value.shape) != tuple(shape):
                raise ValueError(f"checkpoint {save_path!r}: {path!r} has shape "
                                 f"{tuple(value.shape)} in the checkpoint but {tuple(shape)} in "
                                 f"the object being restored")
            if value.dtype != np.dtype(dtype):
                raise ValueError(f"checkpoint {save_path!r}: {path!r} has dtype "
                                 f"{value.dtype.name} in the checkpoint but "
                                 f"{np.dtype(dtype).name} in the object being restored")

        for path, var in g.variables.items():
            if path in tensors:
                check(path, tensors[path], var.shape, var.dtype)
                plan.append((var, tensors[path]))
        for path, (opt, owner, name, slot) in g.slots.items():
            if path in tensors:
                check(path, tensors[path], slot.shape, slot.dtype)
                plan.append((slot, tensors[path]))
        opt_paths = {p: o for p, o in g.optimizers}
        for key, value in tensors.items():
            if key in g.slots or "/%s/" % _SLOTS not in key:
                continue
            opath, rest = key.split("/%s/" % _SLOTS, 1)
            owner_path, _, slot_name = rest.rpartition("/")
            opt = opt_paths.get(opath)
            owner = g.variables.get(owner_path)
            if opt is None or owner is None:
                continue        # reported as unmatched by the status
            check(key, value, owner.shape, owner.dtype)
            deferred.append((opt, owner, slot_name.replace("%2F", "/").replace("%25", "%"),
                             value))
        from ..backends.device import device
        for var, value in plan:
            with device(var.device):        # the value goes where the Variable lives
                var.assign(value)
        for opt, owner, name, value in deferred:
            opt._deferred_slots[(id(owner), name)] = (value, owner)
        return CheckpointLoadStatus(self, save_path, list(tensors))


# ------------------------------------------------------------------ CheckpointManager
class CheckpointManager:
    """Numbered checkpoints in one directory, keeping the newest `max_to_keep` (None: all), as
    `tf.train.CheckpointManager`. Picks up the checkpoints a previous run left in `directory`."""

    def __init__(self, checkpoint, directory, max_to_keep, keep_checkpoint_every_n_hours=None,
                 checkpoint_name="ckpt", step_counter=None, checkpoint_interval=None,
                 init_fn=None):
        if not isinstance(checkpoint, Checkpoint):
            raise TypeError(f"CheckpointManager manages an nf.train.Checkpoint, got "
                            f"{type(checkpoint).__name__}")
        if max_to_keep is not None and (int(max_to_keep) != max_to_keep or max_to_keep < 1):
            raise ValueError(f"max_to_keep must be a positive integer or None, got {max_to_keep!r}")
        if checkpoint_interval is not None and step_counter is None:
            raise ValueError("step_counter is needed when checkpoint_interval is given")
        self._checkpoint = checkpoint
        self._directory = os.fspath(directory)
        self._max_to_keep = max_to_keep
        self._keep_hours = keep_checkpoint_every_n_hours
        self._prefix = os.path.join(self._directory, checkpoint_name)
        self._step_counter = step_counter
        self._interval = checkpoint_interval
        self._last_step = None
        self._init_fn = init_fn
        state = _read_state(self._directory) if os.path.isdir(self._directory) else None
        self._kept = []          # [(absolute path, timestamp)], oldest first
        self._preserved = time.time()
        if state is not None:
            paths = state.get("all_model_checkpoint_paths", [])
            stamps = state.get("all_model_checkpoint_timestamps", [])
            if len(stamps) != len(paths):
                stamps = [time.time()] * len(paths)
            self._kept = [(_abs(self._directory, p), t) for p, t in zip(paths, stamps)
                          if os.path.exists(_data_file(_abs(self._directory, p)))]
            self._preserved = state.get("last_preserved_timestamp", self._preserved)

    @property
    def directory(self):
        return self._directory

    @property
    def checkpoint(self):
        return self._checkpoint

    @property
    def checkpoints(self):
        """The retained checkpoints' paths, oldest first."""
        return [p for p, _ in self._kept]

    @property
    def latest_checkpoint(self):
        return self._kept[-1][0] if self._kept else None

    @property
    def checkpoint_interval(self):
        return self._interval

    def restore_or_initialize(self):
        """Restore the latest checkpoint if there is one (returning its path), else run
        `init_fn` (returning None)."""
        if self.latest_checkpoint is not None:
            self._checkpoint.restore(self.latest_checkpoint)
            return self.latest_checkpoint
        if self._init_fn is not None:
            self._init_fn()
        return None

    def save(self, checkpoint_number=None, check_interval=True):
        """Write `<directory>/<checkpoint_name>-<n>` (n: `checkpoint_number`, else the
        checkpoint's `save_counter` after incrementing it), drop the oldest beyond
        `max_to_keep`, and return the path (None when `checkpoint_interval` says not yet)."""
        if self._interval is not None and check_interval:
            step = int(np.asarray(self._step_counter.numpy()
                                  if isinstance(self._step_counter, Variable)
                                  else self._step_counter))
            if self._last_step is not None and step < self._last_step + self._interval:
                return None
            self._last_step = step
        ck = self._checkpoint
        ck.save_counter.assign_add(1)
        if checkpoint_number is None:
            checkpoint_number = int(ck.save_counter.numpy())
        elif isinstance(checkpoint_number, Variable):
            checkpoint_number = int(checkpoint_number.numpy())
        path = ck._write("%s-%d" % (self._prefix, int(checkpoint_number)))
        ap = os.path.abspath(path)
        now = time.time()
        self._kept = [(p, t) for p, t in self._kept if os.path.abspath(p) != ap] + [(ap, now)]
        self._sweep()
        _write_state(self._directory, ap, self.checkpoints, [t for _, t in self._kept],
                     self._preserved)
        _written()
        return path

    def _sweep(self):
        if self._max_to_keep is None:
            return
        while len(self._kept) > self._max_to_keep:
            p, t = self._kept.pop(0)
            if self._keep_hours is not None and t - self._preserved >= self._keep_hours * 3600:
                self._preserved = t          # kept on disk, no longer managed (as TF)
                continue
            if _should_write():
                try:
                    os.remove(_data_file(p))
                except FileNotFoundError:
                    pass
