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
`apply_gradients` (or `build`), usually after `restore` in a fresh process. As TensorFlow, the
checkpoint keeps such a slot's value on the optimizer and the slot starts from it when it is
created, so training continues exactly where it stopped; until then `assert_consumed` reports it
as pending, and a save made meanwhile still writes the pending value. The status counts only
what the restore gave a value to (`_restore`): an object created after the restore at a
checkpointed path, other than a slot, is reported as unmatched.

Files. A checkpoint is one file, `<path>.safetensors` (the safetensors layout: a JSON header and
raw little-endian tensors with a CRC-32 each, see `_tensorfile`); the directory's `checkpoint`
file (JSON) lists the latest and retained checkpoints for `latest_checkpoint` and
`CheckpointManager`. Loading parses JSON and copies bytes: no code from the file runs; a damaged
file is a ValueError naming it, a tensor whose bytes changed an `nf.errors.DataLossError`
(checkpoints written before checksums existed load unchecked).

Saving never loses the last good state. Every file is written to a temporary file that is
fsynced and renamed over the target, so a crash mid-write leaves the previous file. The state
file names the new checkpoint before any old one is deleted (TensorFlow's order), so a crash
at any moment of `CheckpointManager.save` leaves `latest_checkpoint` naming a complete
checkpoint. Saves into one directory take its lock (`_files.directory_lock`): two threads or
processes saving there run one after the other, each leaving the directory consistent.

Several processes (a distribution strategy): every process calls `save`/`write` and gets the same
path, but only a process for which `_should_write()` is true writes files. It returns True; a
strategy replaces it (`checkpoint._should_write = lambda: rank == 0`). Any number of processes
can restore the file.
"""
import contextlib
import json
import os
import time

import numpy as np

from ..backends.device import device
from .variable import Variable
from .module import Module
from .optimizers import Optimizer
from . import _tensorfile
from ._files import atomic_write, directory_lock, load_json, json_type, remove_stale_temps
from ._restore import Restore, PendingSlot, CheckpointLoadStatus, InitializationOnlyStatus

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


def _unseg(k):
    return k.replace("%2F", "/").replace("%25", "%")


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
    `optimizers` [(path, optimizer)], the slots {path: (optimizer, owner, name, slot)} and the
    slot values still pending on the optimizers {path: PendingSlot}."""

    def __init__(self, objects):
        self.variables = {}
        self.optimizers = []
        self._path_of = {}
        self._visited = set()
        for k in sorted(objects):
            self._visit(objects[k], k)
        self.slots, self.pending = {}, {}
        for opath, opt in self.optimizers:
            for (_, name), (slot, owner) in sorted(opt._slots.items(),
                                                   key=lambda kv: kv[0][1]):
                key = self.slot_path(opath, owner, name)
                if key is not None:
                    self.slots[key] = (opt, owner, name, slot)
            for (_, name), p in opt._deferred_slots.items():
                key = self.slot_path(opath, p.owner, name)
                if key is not None:
                    self.pending[key] = p
        self.slots = dict(sorted(self.slots.items()))

    def slot_path(self, opath, owner, name):
        owner_path = self._path_of.get(id(owner))
        return None if owner_path is None else \
            "%s/%s/%s/%s" % (opath, _SLOTS, owner_path, _seg(name))

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
        """What a save writes: every Variable and slot, and the slot values a restore left
        pending (not created yet, so that a save right after a restore loses nothing)."""
        out = {p: v.numpy() for p, v in self.variables.items()}
        out.update((p, s[3].numpy()) for p, s in self.slots.items())
        out.update((p, np.asarray(v.value)) for p, v in self.pending.items() if p not in out)
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
                         f"{meta.get('format')!r:.80})")
    try:
        version = int(meta.get("version", ""))
    except ValueError:
        raise ValueError(f"{f!r}: unreadable checkpoint version "
                         f"{meta.get('version')!r:.40}") from None
    if version > VERSION:
        raise ValueError(f"{f!r} was written in checkpoint format version {version}, newer than "
                         f"this ndflow reads ({VERSION}); upgrade ndflow")
    return tensors


def _number(v):
    return isinstance(v, (int, float)) and not isinstance(v, bool)


def _read_state(directory):
    """The directory's state file as a dict (None when there is none), every field checked."""
    p = os.path.join(os.fspath(directory), STATE_FILE)
    try:
        with open(p, "rb") as fh:
            raw = fh.read()
    except FileNotFoundError:
        return None
    bad = f"{p!r} is not a readable checkpoint state file"
    try:
        state = load_json(raw, bad, 2)
    except ValueError as e:
        raise ValueError(str(e)) from None
    if not isinstance(state, dict):
        raise ValueError(f"{bad}: it holds a JSON {json_type(state)}, not an object")
    if not isinstance(state.get("model_checkpoint_path"), str):
        raise ValueError(f"{bad}: no 'model_checkpoint_path' string")
    for key, ok in (("all_model_checkpoint_paths", lambda v: isinstance(v, str)),
                    ("all_model_checkpoint_timestamps", _number)):
        v = state.setdefault(key, [])
        if not isinstance(v, list) or not all(map(ok, v)):
            raise ValueError(f"{bad}: {key!r} is not an array of "
                             f"{'strings' if key.endswith('paths') else 'numbers'}")
    if "last_preserved_timestamp" in state and not _number(state["last_preserved_timestamp"]):
        raise ValueError(f"{bad}: 'last_preserved_timestamp' is not a number")
    if len(state["all_model_checkpoint_timestamps"]) != len(state["all_model_checkpoint_paths"]):
        # (TensorFlow's rule for a state without timestamps: the time of reading)
        state["all_model_checkpoint_timestamps"] = \
            [time.time()] * len(state["all_model_checkpoint_paths"])
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
    with atomic_write(os.path.join(directory, STATE_FILE), "w") as fh:
        json.dump(state, fh, indent=1)


def _abs(directory, p):
    return p if os.path.isabs(p) else os.path.join(os.fspath(directory), p)


def _directory_of(file_prefix):
    d = os.path.dirname(os.path.abspath(os.fspath(file_prefix)))
    if _should_write():
        os.makedirs(d, exist_ok=True)
    return d


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


# ------------------------------------------------------------------ Checkpoint
class Checkpoint:
    """Groups trackable objects (Variables, `nf.Module`s, optimizers, lists and dicts of
    them) for saving and restoring, as `tf.train.Checkpoint(**kwargs)`.

    >>> import ndflow as nf, tempfile, os
    >>> v = nf.Variable(3.0)
    >>> ck = nf.train.Checkpoint(v=v)
    >>> path = ck.save(os.path.join(tempfile.mkdtemp(), "ckpt"))
    >>> w = nf.Variable(0.0)
    >>> status = nf.train.Checkpoint(v=w).restore(path).assert_consumed()
    >>> float(w.numpy())
    3.0
    """

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

    def _graph(self):
        return _Graph(self._objects_with_counter())

    # -------------------------------------------------------------- writing
    def write(self, file_prefix):
        """Write the state to `file_prefix` (file `<file_prefix>.safetensors`, replaced
        atomically) and return `file_prefix`; no numbering and no state file (see `save`)."""
        d = _directory_of(file_prefix)
        with directory_lock(d) if _should_write() else _nothing():
            if _should_write():
                remove_stale_temps(d, (os.path.basename(_data_file(file_prefix)),))
            path = self._write(file_prefix)
        _written()
        return path

    def _write(self, file_prefix, _fail_after=None):
        file_prefix = os.fspath(file_prefix)
        if _should_write():
            _tensorfile.write(_data_file(file_prefix), self._graph().values(),
                              {"format": FORMAT, "version": str(VERSION)},
                              _fail_after=_fail_after)
        return file_prefix

    def save(self, file_prefix):
        """Save to `<file_prefix>-<n>` (n = `save_counter` after incrementing it), record it as
        the latest checkpoint of its directory, and return that path."""
        file_prefix = os.fspath(file_prefix)
        directory = _directory_of(file_prefix)
        with directory_lock(directory) if _should_write() else _nothing():
            if _should_write():
                remove_stale_temps(directory, (os.path.basename(file_prefix) + "-", STATE_FILE))
            self.save_counter.assign_add(1)
            path = self._write("%s-%d" % (file_prefix, int(self.save_counter.numpy())))
            state = _read_state(directory) if os.path.isdir(directory) else None
            paths, stamps = [], []
            if state is not None:
                paths = [_abs(directory, p) for p in state["all_model_checkpoint_paths"]]
                stamps = state["all_model_checkpoint_timestamps"]
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
        assigning anything; ValueError for a damaged file and `nf.errors.DataLossError` for a
        tensor whose bytes no longer match their checksum."""
        if save_path is None:
            return InitializationOnlyStatus()
        return self._restore(save_path)

    def _restore(self, save_path):
        save_path = os.fspath(save_path)
        tensors = _read_checkpoint(save_path)
        g = self._graph()
        plan = _plan(save_path, tensors, g)
        deferred = _deferred(save_path, tensors, g)
        record = Restore(save_path, tensors)
        for path, var, value in plan:
            with device(var.device):        # the value goes where the Variable lives
                var.assign(value)
            record.matched.add(path)
        for key, opt, owner, name, value in deferred:
            old = opt._deferred_slots.get((id(owner), name))
            if old is not None:         # restored again before the slot was made: superseded
                old.record.matched.add(old.key)
            opt._deferred_slots[(id(owner), name)] = PendingSlot(value, owner, record, key)
        return CheckpointLoadStatus(self, record)


def _nothing():
    return contextlib.nullcontext()


def _check(save_path, path, value, shape, dtype):
    if tuple(value.shape) != tuple(shape):
        raise ValueError(f"checkpoint {save_path!r}: {path!r} has shape "
                         f"{tuple(value.shape)} in the checkpoint but {tuple(shape)} in "
                         f"the object being restored")
    if value.dtype != np.dtype(dtype):
        raise ValueError(f"checkpoint {save_path!r}: {path!r} has dtype "
                         f"{value.dtype.name} in the checkpoint but "
                         f"{np.dtype(dtype).name} in the object being restored")


def _plan(save_path, tensors, g):
    """[(path, Variable, value)] for the objects that exist, every one checked first."""
    plan = []
    for path, var in g.variables.items():
        if path in tensors:
            _check(save_path, path, tensors[path], var.shape, var.dtype)
            plan.append((path, var, tensors[path]))
    for path, (opt, owner, name, slot) in g.slots.items():
        if path in tensors:
            _check(save_path, path, tensors[path], slot.shape, slot.dtype)
            plan.append((path, slot, tensors[path]))
    return plan


def _deferred(save_path, tensors, g):
    """[(path, optimizer, owner, slot name, value)]: slot values whose optimizer and owner
    exist but the slot not yet."""
    opt_paths = dict(g.optimizers)
    out = []
    for key, value in tensors.items():
        if key in g.slots or "/%s/" % _SLOTS not in key:
            continue
        opath, rest = key.split("/%s/" % _SLOTS, 1)
        owner_path, _, slot_name = rest.rpartition("/")
        opt = opt_paths.get(opath)
        owner = g.variables.get(owner_path)
        if opt is None or owner is None:
            continue        # reported as unmatched by the status
        _check(save_path, key, value, owner.shape, owner.dtype)
        out.append((key, opt, owner, _unseg(slot_name), value))
    return out


# ------------------------------------------------------------------ CheckpointManager
class CheckpointManager:
    """Numbered checkpoints in one directory, keeping the newest `max_to_keep` (None: all), as
    `tf.train.CheckpointManager`. Picks up the checkpoints a previous run left in `directory`.

    `save` writes the new checkpoint, records it in the state file, then deletes the oldest
    beyond `max_to_keep` and records the state again (TensorFlow's order): a crash at any point
    leaves `latest_checkpoint` naming a complete checkpoint. With `checkpoint_interval`, a save
    happens only when `step_counter` moved at least that far since the last saved (or restored)
    step, and never twice for one step.

    >>> import ndflow as nf, tempfile
    >>> step = nf.Variable(0, dtype="int64")
    >>> mgr = nf.train.CheckpointManager(nf.train.Checkpoint(step=step), tempfile.mkdtemp(),
    ...                                  max_to_keep=2, step_counter=step,
    ...                                  checkpoint_interval=10)
    >>> saved = []
    >>> for s in (0, 5, 10, 10, 25):
    ...     _ = step.assign(s)
    ...     saved.append(mgr.save() is not None)
    >>> saved
    [True, False, True, False, True]
    """

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
            paths = state["all_model_checkpoint_paths"]
            stamps = state["all_model_checkpoint_timestamps"]
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

    def _step(self):
        s = self._step_counter
        return int(np.asarray(s.numpy() if isinstance(s, Variable) else s))

    def restore_or_initialize(self):
        """Restore the latest checkpoint if there is one (returning its path), else run
        `init_fn` (returning None). After a restore, `checkpoint_interval` counts from the
        restored step."""
        if self.latest_checkpoint is not None:
            self._checkpoint.restore(self.latest_checkpoint)
            if self._interval is not None:
                self._last_step = self._step()
            return self.latest_checkpoint
        if self._init_fn is not None:
            self._init_fn()
        return None

    def save(self, checkpoint_number=None, check_interval=True):
        """Write `<directory>/<checkpoint_name>-<n>` (n: `checkpoint_number`, else the
        checkpoint's `save_counter` after incrementing it), drop the oldest beyond
        `max_to_keep`, and return the path. With `checkpoint_interval`: None (nothing saved)
        when the step has not moved since the last save, or (with `check_interval`) moved
        less than the interval."""
        if self._interval is not None:
            step = self._step()
            if self._last_step is not None and (step == self._last_step or (
                    check_interval and step < self._last_step + self._interval)):
                return None
            self._last_step = step
        writes = _should_write()
        if writes:
            os.makedirs(self._directory, exist_ok=True)
        with directory_lock(self._directory) if writes else _nothing():
            if writes:
                remove_stale_temps(self._directory,
                                   (os.path.basename(self._prefix) + "-", STATE_FILE))
            path = self._save(checkpoint_number)
        _written()
        return path

    def _save(self, checkpoint_number):
        ck = self._checkpoint
        ck.save_counter.assign_add(1)
        if checkpoint_number is None:
            checkpoint_number = int(ck.save_counter.numpy())
        elif isinstance(checkpoint_number, Variable):
            checkpoint_number = int(checkpoint_number.numpy())
        path = ck._write("%s-%d" % (self._prefix, int(checkpoint_number)))
        ap = os.path.abspath(path)
        self._kept = [(p, t) for p, t in self._kept if os.path.abspath(p) != ap] + \
            [(ap, time.time())]
        # the new checkpoint is recorded before any old one goes: a crash in between leaves
        # the state naming it (the list may still name files the sweep removed)
        self._record(ap)
        if self._sweep():
            self._record(ap)
        return path

    def _record(self, latest):
        _write_state(self._directory, latest, self.checkpoints, [t for _, t in self._kept],
                     self._preserved)

    def _sweep(self):
        """Drop the oldest checkpoints beyond `max_to_keep`; whether any was dropped."""
        if self._max_to_keep is None or len(self._kept) <= self._max_to_keep:
            return False
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
        return True
