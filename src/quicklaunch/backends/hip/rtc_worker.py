"""The process hiprtc compiles in (quicklaunch.hip; run as a script).

hiprtc and the LLVM inside it abort the whole process on some inputs (an
architecture comgr does not know corrupts the heap; code LLVM cannot select
instructions for, such as a device thread_local, ends in "LLVM ERROR" and
abort()). So quicklaunch never compiles in the user's process: it keeps one
of these workers per process and sends it one compilation at a time.

Protocol, on stdin/stdout: a request or reply is a 4-byte little-endian
length and that many bytes of JSON. The first request names the library:
    {"library": path}          -> {"ok": true} or {"ok": false, "error": ...}
then each compilation:
    {"source", "name", "options", "headers": {name: text}, "exprs"}
    -> {"status", "error", "log", "code" (base64), "lowered": {expr: symbol}}
Before each compilation the worker empties its stderr (a file the parent
reads after a crash, for the compiler's last words).

This file imports nothing from quicklaunch: it starts with ``python -I -S``.
"""
import base64
import ctypes
import json
import os
import struct
import sys


def _read(stream):
    head = stream.read(4)
    if len(head) < 4:
        return None
    (n,) = struct.unpack("<I", head)
    return json.loads(stream.read(n))


def _write(stream, obj):
    data = json.dumps(obj).encode()
    stream.write(struct.pack("<I", len(data)) + data)
    stream.flush()


def _open(path):
    lib = ctypes.CDLL(path)
    p, c, sz = ctypes.c_void_p, ctypes.c_char_p, ctypes.c_size_t
    for name, args in {
        "hiprtcCreateProgram": [ctypes.POINTER(p), c, c, ctypes.c_int,
                                ctypes.POINTER(c), ctypes.POINTER(c)],
        "hiprtcDestroyProgram": [ctypes.POINTER(p)],
        "hiprtcCompileProgram": [p, ctypes.c_int, ctypes.POINTER(c)],
        "hiprtcGetCodeSize": [p, ctypes.POINTER(sz)], "hiprtcGetCode": [p, c],
        "hiprtcGetProgramLogSize": [p, ctypes.POINTER(sz)], "hiprtcGetProgramLog": [p, c],
        "hiprtcAddNameExpression": [p, c],
        "hiprtcGetLoweredName": [p, c, ctypes.POINTER(c)],
    }.items():
        fn = getattr(lib, name)
        fn.argtypes, fn.restype = args, ctypes.c_int
    lib.hiprtcGetErrorString.argtypes, lib.hiprtcGetErrorString.restype = [ctypes.c_int], c
    return lib


def _strings(items):
    return (ctypes.c_char_p * max(len(items), 1))(*[s.encode("utf-8") for s in items])


def _compile(lib, req):
    def name(status):
        return (lib.hiprtcGetErrorString(status) or b"unknown").decode(errors="replace")

    def fail(status, what, log=""):
        return {"status": status, "error": f"{what}: {name(status)}", "log": log}

    def read(prog, size_fn, read_fn):
        size = ctypes.c_size_t()
        if size_fn(prog, ctypes.byref(size)) != 0:
            return b""
        buf = ctypes.create_string_buffer(size.value + 1)
        return buf.raw[:size.value] if read_fn(prog, buf) == 0 else b""

    prog = ctypes.c_void_p()
    headers = req["headers"]
    hnames = list(headers)
    st = lib.hiprtcCreateProgram(ctypes.byref(prog), req["source"].encode("utf-8"),
                                 req["name"].encode("utf-8"), len(hnames),
                                 _strings([headers[h] for h in hnames]), _strings(hnames))
    if st != 0:
        return fail(st, "hiprtcCreateProgram")
    try:
        for e in req["exprs"]:
            st = lib.hiprtcAddNameExpression(prog, e.encode("utf-8"))
            if st != 0:
                return fail(st, f"hiprtcAddNameExpression({e!r})")
        options = req["options"]
        status = lib.hiprtcCompileProgram(prog, len(options), _strings(options))
        log = read(prog, lib.hiprtcGetProgramLogSize, lib.hiprtcGetProgramLog)
        log = log.rstrip(b"\0").decode("utf-8", "replace")
        if status != 0:
            return {"status": status, "error": name(status), "log": log}
        code = read(prog, lib.hiprtcGetCodeSize, lib.hiprtcGetCode)
        lowered = {}
        for e in req["exprs"]:
            out = ctypes.c_char_p()
            st = lib.hiprtcGetLoweredName(prog, e.encode("utf-8"), ctypes.byref(out))
            if st != 0 or not out.value:
                return {"status": 6, "error": name(st), "log": log + f"\nname expression "
                        f"{e!r} could not be lowered ({name(st)})"}
            lowered[e] = out.value.decode("utf-8")
        return {"status": 0, "error": "", "log": log, "lowered": lowered,
                "code": base64.b64encode(code).decode("ascii")}
    finally:
        lib.hiprtcDestroyProgram(ctypes.byref(prog))


def main():
    stdin, stdout = sys.stdin.buffer, sys.stdout.buffer
    first = _read(stdin)
    try:
        lib = _open(first["library"])
    except (OSError, AttributeError, KeyError, TypeError) as exc:
        _write(stdout, {"ok": False, "error": str(exc)})
        return
    _write(stdout, {"ok": True})
    while True:
        req = _read(stdin)
        if req is None:
            return
        try:   # the parent reads stderr only after a crash: keep just this request's
            os.ftruncate(2, 0)
            os.lseek(2, 0, os.SEEK_SET)
        except OSError:
            pass
        _write(stdout, _compile(lib, req))


if __name__ == "__main__":
    main()
