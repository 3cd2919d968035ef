"""What a checkpoint restore matched, and the status objects `Checkpoint.restore` returns.

A restore (`Restore`) records the checkpoint's keys and the paths it gave a value to: at once
(the objects that existed) or later (deferred restoration: an optimizer slot created after the
restore starts from the checkpoint's value, and counts as matched from then on). The status
reports from that record, so it never calls a value matched that was not restored (an object
created after the restore at a checkpointed path, other than a slot, is reported as unmatched,
not silently left with its initial value).

The record lives as long as the status object or a pending slot value holds it. When it goes
(the status dropped and every pending slot created, or their optimizer gone), checkpoint values
that nothing took are reported in a warning, unless `expect_partial()` or an assertion was
called: so a status dropped right after `restore` (as `CheckpointManager.restore_or_initialize`
does) warns only if something is still unmatched once training has created the slots, as
TensorFlow warns when its restore coordinator is deleted.
"""
import warnings


class Restore:
    """The record of one restore (see the module docstring)."""

    def __init__(self, path, keys):
        self.path = path
        self.keys = list(keys)
        self.matched = set()
        self.silent = False

    def unmatched_values(self):
        return [k for k in self.keys if k not in self.matched]

    def __del__(self):
        if self.silent:
            return
        try:
            values = self.unmatched_values()
            if values:
                warnings.warn(f"checkpoint {self.path!r} was partially restored: "
                              f"{len(values)} value(s) not matched, e.g. {values[:5]}; call "
                              f"expect_partial() on the status if this is intended",
                              stacklevel=2)
        except Exception:       # interpreter shutdown: warnings may be gone
            pass


class PendingSlot:
    """A checkpoint value waiting on an optimizer for the slot it belongs to (deferred
    restoration); `Optimizer._slot` takes it when it creates the slot."""

    __slots__ = ("value", "owner", "record", "key")

    def __init__(self, value, owner, record, key):
        self.value, self.owner, self.record, self.key = value, owner, record, key

    def taken(self):
        """The slot was created from `value`: the restore matched it."""
        self.record.matched.add(self.key)
        return self.value


class CheckpointLoadStatus:
    """What `Checkpoint.restore` matched, as TensorFlow's status object. A pending slot counts
    as matched once its optimizer created it from the checkpoint's value."""

    def __init__(self, checkpoint, record):
        self._checkpoint = checkpoint
        self._record = record

    @property
    def _path(self):
        return self._record.path

    def _state(self):
        paths = self._checkpoint._graph().all_paths()
        keys = set(self._record.keys)
        return self._record.unmatched_values(), [p for p in paths if p not in keys]

    @property
    def unmatched_checkpoint_values(self):
        """Paths in the checkpoint that no object took (slots still pending included)."""
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
        self._record.silent = True
        values, objects = self._state()
        if values:
            self._fail("checkpoint value(s) not matched to any object (optimizer slots not "
                       "created yet are listed too: they are matched when the optimizer "
                       "creates them, at its first apply_gradients or build)", values)
        if objects:
            self._fail("object(s) with no value in the checkpoint", objects)
        return self

    def assert_existing_objects_matched(self):
        """Every existing object got a value (the checkpoint may hold more)."""
        self._record.silent = True
        objects = self._state()[1]
        if objects:
            self._fail("object(s) with no value in the checkpoint", objects)
        return self

    def assert_nontrivial_match(self):
        """At least one object other than the save counter got a value."""
        self._record.silent = True
        if not any(p != "save_counter" for p in self._record.matched):
            raise AssertionError(f"checkpoint {self._path!r}: nothing was matched")
        return self

    def expect_partial(self):
        """Silence the warning about unmatched checkpoint values (a partial restore on purpose)."""
        self._record.silent = True
        return self


class InitializationOnlyStatus(CheckpointLoadStatus):
    """`restore(None)`: nothing was restored."""

    def __init__(self):
        pass

    def assert_consumed(self):
        raise AssertionError("no checkpoint was restored (restore(None))")

    assert_existing_objects_matched = assert_nontrivial_match = assert_consumed

    def expect_partial(self):
        return self
