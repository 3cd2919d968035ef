"""onnxruntime in a child process, for tests that run exported models on values that could
crash a runtime (an integer division trap kills the process with SIGFPE): a crash is reported
as a result, and the next call starts a fresh child.

`OrtRunner().run(model_bytes, feeds)` returns ("ok", [outputs per feed or an error string]),
("load-error", message) when onnxruntime refuses the model, or ("crash", exit status).
The child runs this file as a script: it reads length-prefixed pickles of (model, feeds) on
stdin and answers the same way (test data only, never a user's file).
"""
import pickle
import struct
import subprocess
import sys


def _serve():
    import onnxruntime as ort
    inp, out = sys.stdin.buffer, sys.stdout.buffer
    while True:
        head = inp.read(8)
        if len(head) < 8:
            return
        model, feeds = pickle.loads(inp.read(struct.unpack("<Q", head)[0]))
        try:
            opts = ort.SessionOptions()
            opts.log_severity_level = 4
            opts.intra_op_num_threads = 1
            # the default optimization level, as users get it (its rewrites are checked too)
            sess = ort.InferenceSession(model, opts, providers=["CPUExecutionProvider"])
            names = [i.name for i in sess.get_inputs()]
            results = []
            for f in feeds:
                try:
                    results.append(("ok", sess.run(None, dict(zip(names, f)))))
                except Exception as e:   # noqa: BLE001 - the runtime's error is the result
                    results.append(("run-error", str(e)))
            reply = ("ok", results)
        except Exception as e:           # noqa: BLE001
            reply = ("load-error", str(e))
        data = pickle.dumps(reply)
        out.write(struct.pack("<Q", len(data)))
        out.write(data)
        out.flush()


class OrtRunner:
    def __init__(self):
        self.proc = None

    def run(self, model, feeds):
        if self.proc is None or self.proc.poll() is not None:
            self.proc = subprocess.Popen([sys.executable, __file__], stdin=subprocess.PIPE,
                                         stdout=subprocess.PIPE)
        data = pickle.dumps((model, [list(f) for f in feeds]))
        try:
            self.proc.stdin.write(struct.pack("<Q", len(data)))
            self.proc.stdin.write(data)
            self.proc.stdin.flush()
            head = self.proc.stdout.read(8)
            if len(head) < 8:
                raise EOFError
            return pickle.loads(self.proc.stdout.read(struct.unpack("<Q", head)[0]))
        except (EOFError, BrokenPipeError):
            status = self.proc.wait()
            self.proc = None
            return ("crash", status)

    def close(self):
        if self.proc is not None:
            self.proc.stdin.close()
            self.proc.wait()
            self.proc = None


if __name__ == "__main__":
    _serve()
