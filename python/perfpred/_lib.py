"""ctypes over libperfpred: finding the library, and its four C calls this package uses.

Only plain C types cross the boundary (strings, ints, opaque pointers): requests and answers are
JSON (perfpred_json, docs/json.md), so Python mirrors no C struct layout.
"""
import ctypes
import ctypes.util
import json
import os
import shutil
import subprocess
import threading

_HERE = os.path.dirname(os.path.abspath(__file__))
_ROOT = os.path.dirname(os.path.dirname(_HERE))  # the source tree, when run from a checkout
_NAMES = ("libperfpred.so", "libperfpred.so.0")
_STATUS = {
    0: "PERFPRED_OK", 1: "PERFPRED_ERR_INVALID_ARG", 2: "PERFPRED_ERR_IO",
    3: "PERFPRED_ERR_PARSE", 4: "PERFPRED_ERR_UNSUPPORTED", 5: "PERFPRED_ERR_SHAPE",
    6: "PERFPRED_ERR_GRAPH", 7: "PERFPRED_ERR_DEVICE", 8: "PERFPRED_ERR_MODEL",
    9: "PERFPRED_ERR_NOMEM", 10: "PERFPRED_ERR_INTERNAL",
}


class Error(Exception):
    """A failure reported by libperfpred: str(e) is the library's message (naming the file, node
    or device), e.status its perfpred_status code, e.status_name the enum's name."""

    def __init__(self, message, status=1):
        super().__init__(message)
        self.message = message
        self.status = int(status)
        self.status_name = _STATUS.get(self.status, "PERFPRED_ERR_INTERNAL")


def _pkg_config_libdir():
    if not shutil.which("pkg-config"):
        return None
    try:
        out = subprocess.run(["pkg-config", "--variable=libdir", "perfpred"],
                             capture_output=True, text=True, timeout=10)
    except (OSError, subprocess.SubprocessError):
        return None
    d = out.stdout.strip()
    return os.path.normpath(d) if out.returncode == 0 and d else None


def find_library():
    """Where libperfpred.so is: $PERFPRED_LIB (a file), the build folders of the checkout this
    package sits in (build/, build-test/), pkg-config's libdir (an installed perfpred), then the
    loader's own search. Raises Error if none."""
    tried = []
    env = os.environ.get("PERFPRED_LIB")
    if env:
        if os.path.isfile(env):
            return env
        raise Error("PERFPRED_LIB=%s: no such file" % env, 2)
    dirs = [os.path.join(_ROOT, b) for b in ("build", "build-test")]
    libdir = _pkg_config_libdir()
    if libdir:
        dirs.append(libdir)
    for d in dirs:
        for n in _NAMES:
            p = os.path.join(d, n)
            tried.append(p)
            if os.path.isfile(p):
                return p
    found = ctypes.util.find_library("perfpred")
    if found:
        return found
    raise Error("libperfpred.so not found (tried %s; set PERFPRED_LIB, install perfpred "
                "(pkg-config perfpred) or build it: cmake -S . -B build && cmake --build build)"
                % ", ".join(tried), 2)


class _Lib:
    def __init__(self, path):
        lib = ctypes.CDLL(path)
        lib.perfpred_ctx_open.restype = ctypes.c_void_p
        lib.perfpred_ctx_open.argtypes = [ctypes.c_void_p, ctypes.POINTER(ctypes.c_int),
                                          ctypes.c_char_p, ctypes.c_size_t]
        lib.perfpred_ctx_close.restype = None
        lib.perfpred_ctx_close.argtypes = [ctypes.c_void_p]
        # c_void_p, not c_char_p: the answer must go back to perfpred_free
        lib.perfpred_json.restype = ctypes.c_void_p
        lib.perfpred_json.argtypes = [ctypes.c_void_p, ctypes.c_char_p,
                                      ctypes.POINTER(ctypes.c_int), ctypes.c_char_p,
                                      ctypes.c_size_t]
        lib.perfpred_compare_plot.restype = ctypes.c_int
        lib.perfpred_compare_plot.argtypes = [ctypes.c_char_p, ctypes.c_char_p, ctypes.c_char_p,
                                              ctypes.c_char_p, ctypes.c_size_t]
        lib.perfpred_free.restype = None
        lib.perfpred_free.argtypes = [ctypes.c_void_p]
        lib.perfpred_version.restype = ctypes.c_char_p
        lib.perfpred_version.argtypes = []
        self.lib = lib
        self.path = path


_lock = threading.Lock()
_loaded = None
_contexts = {}


def lib():
    global _loaded
    with _lock:
        if _loaded is None:
            _loaded = _Lib(find_library())
        return _loaded


def _open_ctx(config_dir):
    L = lib().lib
    status = ctypes.c_int(0)
    err = ctypes.create_string_buffer(1024)
    # the context's only setting this package passes is the configs folder, through the
    # documented environment variable (no C struct is mirrored)
    saved = os.environ.get("PERFPRED_CONFIG_DIR")
    try:
        if config_dir is not None:
            os.environ["PERFPRED_CONFIG_DIR"] = os.fspath(config_dir)
        ctx = L.perfpred_ctx_open(None, ctypes.byref(status), err, len(err))
    finally:
        if config_dir is not None:
            if saved is None:
                del os.environ["PERFPRED_CONFIG_DIR"]
            else:
                os.environ["PERFPRED_CONFIG_DIR"] = saved
    if not ctx:
        raise Error(err.value.decode("utf-8", "replace"), status.value)
    return ctx


def context(config_dir=None):
    """The process's context for config_dir (None: $PERFPRED_CONFIG_DIR, else the default) and
    the user's descriptors named by $PERFPRED_DEVICES when it opens, opened once per pair and
    kept: predictions on one context are thread-safe."""
    key = (None if config_dir is None else os.path.abspath(os.fspath(config_dir)),
           os.environ.get("PERFPRED_DEVICES", ""))
    with _lock:
        ctx = _contexts.get(key)
    if ctx is None:
        ctx = _open_ctx(config_dir)
        with _lock:
            if key in _contexts:  # another thread opened it first
                lib().lib.perfpred_ctx_close(ctx)
                ctx = _contexts[key]
            else:
                _contexts[key] = ctx
    return ctx


def call(request, config_dir=None, need_ctx=True):
    """perfpred_json(request) -> the parsed answer; Error on failure."""
    L = lib().lib
    ctx = context(config_dir) if need_ctx else None
    status = ctypes.c_int(0)
    err = ctypes.create_string_buffer(2048)
    raw = L.perfpred_json(ctx, json.dumps(request).encode("utf-8"), ctypes.byref(status), err,
                          len(err))
    if not raw:
        raise Error(err.value.decode("utf-8", "replace"), status.value)
    try:
        text = ctypes.string_at(raw).decode("utf-8")
    finally:
        L.perfpred_free(raw)
    return json.loads(text)


def compare_plot(answer, path, y=None):
    L = lib().lib
    err = ctypes.create_string_buffer(1024)
    st = L.perfpred_compare_plot(json.dumps(answer).encode("utf-8"), os.fspath(path).encode(),
                                 y.encode() if y else None, err, len(err))
    if st:
        raise Error(err.value.decode("utf-8", "replace"), st)


def version():
    return lib().lib.perfpred_version().decode()
