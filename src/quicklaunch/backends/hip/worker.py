"""The parent side of the compiler process (rtc_worker.py explains why
hiprtc never runs in the user's process).

One worker per process, started on the first compilation and kept for the
next ones (starting Python and opening hiprtc costs about 0.2 s); a worker
that died, by a crash or otherwise, is replaced by the next compilation.
Compilations are serialised by a lock. A crash while compiling is a
CompileError carrying the end of what the compiler printed.
"""
from __future__ import annotations

import atexit
import base64
import json
import os
import signal
import struct
import subprocess
import sys
import tempfile
import threading

from ...errors import CompileError

__all__ = ["Worker", "CompilerCrash", "get", "shutdown"]

SCRIPT = os.path.join(os.path.dirname(__file__), "rtc_worker.py")
_TAIL = 4000


class CompilerCrash(CompileError):
    """The compiler process died; ``headline`` says how, ``log`` holds what
    the compiler printed last."""

    def __init__(self, headline: str, log: str):
        super().__init__(f"{headline}. The compiler said:\n{log or '(nothing)'}", log=log)
        self.headline = headline


def _signal_name(code: int) -> str:
    try:
        return f"signal {-code}, {signal.Signals(-code).name}"
    except ValueError:
        return f"signal {-code}"


class Worker:
    def __init__(self, library: str):
        self.library = library
        self._proc: subprocess.Popen | None = None
        self._pid = 0          # the process that started the worker
        self._stderr = None
        self._lock = threading.Lock()

    def _start(self) -> None:
        if not sys.executable:
            raise CompileError("the hiprtc compiler process cannot start: sys.executable is "
                               "empty (an embedded interpreter?)")
        self._stderr = tempfile.TemporaryFile()
        try:
            self._proc = subprocess.Popen([sys.executable, "-I", "-S", SCRIPT],
                                          stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                          stderr=self._stderr, close_fds=True)
        except OSError as exc:
            self.close()
            raise CompileError(f"the hiprtc compiler process could not start: {exc}") from None
        self._pid = os.getpid()
        reply = self._exchange({"library": self.library}, "opening hiprtc")
        if not reply.get("ok"):
            self.close()
            raise CompileError(f"the hiprtc compiler process could not open {self.library}: "
                               f"{reply.get('error')}")

    def _exchange(self, request: dict, what: str) -> dict:
        proc = self._proc
        data = json.dumps(request).encode()
        try:
            proc.stdin.write(struct.pack("<I", len(data)) + data)
            proc.stdin.flush()
            head = proc.stdout.read(4)
            if len(head) == 4:
                (n,) = struct.unpack("<I", head)
                body = proc.stdout.read(n)
                if len(body) == n:
                    return json.loads(body)
        except (OSError, ValueError):
            pass
        except BaseException:   # interrupted mid-exchange: the stream is out of step
            self.close()
            raise
        raise self._crashed(what)

    def _crashed(self, what: str) -> CompilerCrash:
        proc = self._proc
        try:
            code = proc.wait(timeout=5)
        except subprocess.TimeoutExpired:
            proc.kill()
            code = proc.wait()
        said = ""
        if self._stderr is not None:
            self._stderr.seek(0)
            said = self._stderr.read().decode("utf-8", "replace").strip()
        self.close()
        how = _signal_name(code) if code < 0 else f"exit status {code}"
        said = said if len(said) <= _TAIL else "[...]\n" + said[-_TAIL:]
        return CompilerCrash(f"hiprtc crashed while {what} ({how}); its process is replaced "
                             f"and this process is unharmed", said)

    def compile(self, source: str, name: str, options, headers: dict, exprs) -> dict:
        """One compilation; the worker's reply (see rtc_worker.py), with
        ``code`` decoded to bytes."""
        with self._lock:
            if self._proc is not None and self._pid != os.getpid():
                self._proc = self._stderr = None   # a forked child: the worker is the parent's
            if self._proc is None or self._proc.poll() is not None:
                self.close()
                self._start()
            reply = self._exchange({"source": source, "name": name, "options": list(options),
                                    "headers": headers, "exprs": list(exprs)}, "compiling")
        if "code" in reply:
            reply["code"] = base64.b64decode(reply["code"])
        return reply

    def close(self) -> None:
        proc, self._proc = self._proc, None
        if proc is not None:
            for stream in (proc.stdin, proc.stdout):
                try:
                    stream.close()
                except OSError:
                    pass
            try:
                proc.wait(timeout=5)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
        if self._stderr is not None:
            self._stderr.close()
            self._stderr = None


_workers: dict[str, Worker] = {}
_lock = threading.Lock()


def get(library: str) -> Worker:
    with _lock:
        w = _workers.get(library)
        if w is None:
            w = _workers[library] = Worker(library)
        return w


@atexit.register
def shutdown() -> None:
    with _lock:
        for w in _workers.values():
            w.close()
        _workers.clear()
