"""timing.py: the measurement protocol shared by every perfpred runner.

Interleaved rounds against noisy, shared machines: each round visits every pending configuration
once in a seeded shuffled order and takes a short burst of timed repetitions; the statistic is the
median of per-round minima, with the spread of per-round medians kept beside it. Results are
appended per (configuration, round) to a JSON-lines partial file so an interrupted run resumes;
final files are written atomically. The clock is injectable so the protocol is testable.
"""

import bisect
import csv
import datetime
import gc
import hashlib
import io
import json
import math
import os
import platform
import random
import sys
import time
from dataclasses import dataclass, field

try:  # the progress bar is tqdm's where python3-tqdm is installed (make_progress)
    from tqdm import tqdm as _tqdm
except ImportError:  # a board without it: Progress's plain line
    _tqdm = None


# ----------------------------------------------------------------------------- statistics ----

def quantile(values, q):
    """Linear-interpolation quantile (numpy's default 'linear' method) of a non-empty list."""
    if not values:
        raise ValueError("quantile of an empty list")
    if not 0.0 <= q <= 1.0:
        raise ValueError(f"quantile q={q} outside [0, 1]")
    s = sorted(values)
    pos = (len(s) - 1) * q
    lo = math.floor(pos)
    hi = math.ceil(pos)
    if lo == hi:
        return float(s[lo])
    return s[lo] + (s[hi] - s[lo]) * (pos - lo)


def median(values):
    return quantile(values, 0.5)


@dataclass
class Stats:
    """Robust summary of one configuration; times in nanoseconds per call."""
    median_ns: float       # median over rounds of the per-round minimum: the reported latency
    iqr_ns: float          # interquartile range of the per-round medians: between-round drift
    min_ns: float          # fastest single sample
    max_ns: float          # slowest single sample
    mean_ns: float         # mean of all samples (kept for comparison with mean-based datasets)
    iqr_all_ns: float      # interquartile range of all samples pooled
    rounds: int            # rounds that contributed
    reps: int              # timed samples in total
    calls: int             # forward calls inside the timed samples (reps x inner)


def summarize(rounds_samples, inner=1, first=0):
    """rounds_samples: one list of per-call times (ns) per round. Returns Stats.

    Per round r: m_r = min(samples_r), d_r = median(samples_r). latency = median(m_r);
    spread = IQR(d_r). The minimum per round rejects interference inside a burst, the median over
    rounds rejects rounds that fell into a noisy period; IQR(d_r) shows how noisy the periods were.
    first > 0: only the first `first` samples of each round count (every statistic), so that a
    burst of 5 can be summarized as a burst of 2 is.
    """
    if first < 0:
        raise ValueError("first must be >= 0")
    rs = [list(r)[:first] if first else list(r) for r in rounds_samples if len(r) > 0]
    if not rs:
        raise ValueError("no samples to summarize")
    minima = [min(r) for r in rs]
    medians = [median(r) for r in rs]
    flat = [x for r in rs for x in r]
    return Stats(
        median_ns=median(minima),
        iqr_ns=quantile(medians, 0.75) - quantile(medians, 0.25),
        min_ns=float(min(flat)),
        max_ns=float(max(flat)),
        mean_ns=sum(flat) / len(flat),
        iqr_all_ns=quantile(flat, 0.75) - quantile(flat, 0.25),
        rounds=len(rs),
        reps=len(flat),
        calls=len(flat) * inner,
    )


# ------------------------------------------------------------------------------ protocol ----

@dataclass
class Protocol:
    """How one configuration is timed. Every field is recorded in the partial file's header."""
    rounds: int = 7              # R: visits per configuration
    burst: int = 5               # timed samples per visit
    warmup_calls: int = 3        # untimed calls when a configuration is (re)built ...
    warmup_min_s: float = 0.05   # ... and at least this long
    visit_warmup: int = 1        # untimed calls at the start of every visit (caches went cold)
    min_sample_us: float = 200.0 # one sample = `inner` back-to-back calls lasting at least this
    max_inner: int = 1000        # cap on inner calls per sample
    seed: int = 1
    max_visit_s: float = 0.0     # > 0: fewer samples per visit (at least 1) for slow configurations
    scrub_bytes: int = 0         # > 0: before every timed call, write a buffer this large (caches
                                 # go cold as they are for a layer inside a network); one call per
                                 # sample then
    scrub_warm_input: bool = False  # after the scrub, read the layer's first input back
    canary: bool = False         # time a fixed reference workload before every visit and scale the
                                 # visit's samples by the machine's speed over the minute around
                                 # it (Canary, PartialStore.canary_levels)

    def check(self):
        if self.rounds < 1 or self.burst < 1:
            raise ValueError("rounds and burst must be >= 1")
        if self.warmup_calls < 0 or self.visit_warmup < 0 or self.warmup_min_s < 0:
            raise ValueError("warm-up settings must be >= 0")
        if self.min_sample_us < 0 or self.max_inner < 1:
            raise ValueError("min_sample_us must be >= 0 and max_inner >= 1")
        if self.scrub_bytes < 0:
            raise ValueError("scrub_bytes must be >= 0")

    def as_dict(self):
        d = dict(self.__dict__)
        if not d.get("canary"):
            d.pop("canary", None)  # identities of runs before the canary existed stay the same
        return d


class CpuTimer:
    """Times `inner` back-to-back calls of fn with a monotonic nanosecond clock."""
    def __init__(self, clock=time.perf_counter_ns):
        self.clock = clock

    def sample(self, fn, inner):
        t0 = self.clock()
        for _ in range(inner):
            fn()
        return self.clock() - t0


class CudaEventTimer:
    """Times `inner` back-to-back calls with CUDA events on the current stream (GPU time)."""
    def __init__(self, torch_mod):
        self.torch = torch_mod

    def sample(self, fn, inner):
        cuda = self.torch.cuda
        start = cuda.Event(enable_timing=True)
        end = cuda.Event(enable_timing=True)
        start.record()
        for _ in range(inner):
            fn()
        end.record()
        end.synchronize()
        return start.elapsed_time(end) * 1e6  # ms -> ns


# glibc's mallopt parameters (malloc.h)
_M_TRIM_THRESHOLD, _M_MMAP_THRESHOLD = -1, -3
KEEP_HEAP_MMAP_BYTES = 32 << 20     # glibc's own ceiling for its dynamic mmap threshold
KEEP_HEAP_TRIM_BYTES = (1 << 31) - 1


def keep_heap():
    """Makes glibc's malloc keep freed memory in the process (no trim below 2 GiB of free top, mmap
    only above 32 MiB), as a network's heap does between its layers. Returns "kept", or "default"
    where the C library is not glibc (the rows' source says which: malloc=kept).

    Why: a layer timed alone allocates its outputs (and oneDNN's reordered copies) and frees them
    every call. With glibc's defaults a freed run of memory on top of the heap larger than twice the
    mmap threshold goes back to the kernel, and every next call faults its pages in again (about 2
    us a 4 KiB page on a KVM guest): a 3x3 depthwise convolution over 8x256x56x56 took 47.5 ms that
    way against 8.5 ms with the heap kept (data/epyc-zen4-kvm-2vcpu/dw-fault-check.txt), and
    whether a row paid it depended on what the runner had timed before it. Inside a network the
    live activations hold the heap up and its buffers are reused: whole networks in the network
    runner fault 30-100 pages a forward pass, all but a few (docs/accuracy.md, "The heap")."""
    import ctypes
    import ctypes.util
    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6")
        libc.gnu_get_libc_version  # glibc's alone: musl's mallopt does nothing
        mallopt = libc.mallopt
    except (OSError, AttributeError):
        return "default"
    mallopt.argtypes = [ctypes.c_int, ctypes.c_int]
    mallopt.restype = ctypes.c_int
    if not (mallopt(_M_MMAP_THRESHOLD, KEEP_HEAP_MMAP_BYTES) and
            mallopt(_M_TRIM_THRESHOLD, KEEP_HEAP_TRIM_BYTES)):
        return "default"
    return "kept"


# A visit's canary level: the median canary of the visits within this many seconds of it
CANARY_WINDOW_S = 60.0


class Canary:
    """A fixed reference workload, timed before every visit when protocol.canary is set.

    On a shared machine (a cloud guest) the whole CPU slows by tens of percent for minutes at a
    time while neighbours run, and kernels slow by about the same factor (lab/canary_check.py). A
    visit's samples divided by the machine's canary level at the time (the median canary of the
    visits within CANARY_WINDOW_S seconds of it), times the level of the run's quietest minute,
    are what the visit would have taken on the quiet machine. One canary alone also measures what
    the visit before it left behind (its caches, a neighbour's burst of memory traffic): on a quiet
    Zen 4 guest the canaries of one layer run spread 306-1,395 us, and each visit scaled by its own
    put the layers' run-to-run spread at 17 % against 4 % as timed (docs/accuracy.md, "The
    canary"). The workload holds both sides of a kernel: a 192 x 192 x 192 GEMM (the BLAS) and an
    add over 3 x 4 MiB (the memory), the best of `best_of` runs, in ns.
    """
    def __init__(self, torch, n=192, elems=1 << 20, best_of=3, clock=time.perf_counter_ns):
        g = torch.Generator().manual_seed(1)
        self.a = torch.randn(n, n, generator=g)
        self.b = torch.randn(n, n, generator=g)
        self.c = torch.empty(n, n)
        self.u = torch.randn(elems, generator=g)
        self.v = torch.randn(elems, generator=g)
        self.w = torch.empty(elems)
        self.torch = torch
        self.best_of = best_of
        self.clock = clock
        self()  # first call: allocations, BLAS set-up

    def __call__(self):
        t = self.torch
        best = float("inf")
        for _ in range(self.best_of):
            t0 = self.clock()
            t.mm(self.a, self.b, out=self.c)
            t.add(self.u, self.v, out=self.w)
            best = min(best, self.clock() - t0)
        return float(best)


def canary_scaled(visits, canaries, ref):
    """visits: {round: samples}; canaries: {round: canary ns}. The samples of each round scaled by
    ref / that round's canary (rounds without one unchanged)."""
    out = {}
    for r, samples in visits.items():
        c = canaries.get(r)
        f = ref / c if c and c > 0 and ref > 0 else 1.0
        out[r] = [x * f for x in samples]
    return out


def fastest_after_scrub(fn, scrub, burst, clock=time.perf_counter):
    """Seconds of the fastest of `burst` calls of fn, each after scrub() (untimed): the cold-cache
    sample the lab/ checks take (lab/composite_op_check.py, lab/matmul_layout_check.py)."""
    best = math.inf
    for _ in range(burst):
        scrub()
        t = clock()
        fn()
        best = min(best, clock() - t)
    return best


def choose_inner(per_call_ns, protocol):
    """Calls per sample so that one sample lasts at least min_sample_us (timer overhead < 1%).
    With a cache scrub every sample is one call (back-to-back calls would find the caches warm)."""
    if protocol.scrub_bytes > 0:
        return 1
    if per_call_ns <= 0:
        return protocol.max_inner
    need = math.ceil(protocol.min_sample_us * 1000.0 / per_call_ns)
    return max(1, min(protocol.max_inner, need))


# ---------------------------------------------------------------------------- partial file ----

class ResumeMismatch(Exception):
    """The partial file belongs to a different plan or protocol."""


class PartialStore:
    """Append-only JSON-lines record of finished (configuration, round) visits.

    Line 1: {"type": "header", "identity": {...}}: what must match for results to be combined
    (plan digest, protocol, threads, device...). Then {"type": "visit", "key", "round", "inner",
    "samples_ns"} and {"type": "error", "key", "message"} lines. A torn last line (the process died
    mid-write) is cut off on open; any other malformed line is an error.
    """

    def __init__(self, path, identity, restart=False, retry_errors=False):
        self._empty(path, identity)
        if restart and os.path.exists(path):
            os.remove(path)
        if os.path.exists(path):
            self._load()
        else:
            d = os.path.dirname(os.path.abspath(path))
            os.makedirs(d, exist_ok=True)
            with open(path, "w", encoding="utf-8") as f:
                f.write(json.dumps({"type": "header", "identity": identity}, sort_keys=True) + "\n")
        self._f = open(path, "a", encoding="utf-8")
        if retry_errors and self.errors:
            self._write({"type": "clear_errors"})
            self.errors.clear()

    def _empty(self, path, identity):
        self.path = path
        self.identity = identity
        self.visits = {}   # key -> {round: samples}
        self.canary = {}   # key -> {round: canary ns timed before that visit} (protocol.canary)
        self.visit_t = {}  # key -> {round: wall time of the visit, s}
        self.inner = {}    # key -> inner calls per sample
        self.errors = {}   # key -> message
        self.extra = {}    # key -> dict of further figures (e.g. measured memory)
        self.last_time = {}  # key -> unix time of its latest visit
        self._f = None

    @classmethod
    def read(cls, path):
        """A finished or interrupted run's partial file, read as it is: the header's identity is
        taken, not checked, and nothing is written, repaired or kept open."""
        store = cls.__new__(cls)
        store._empty(path, None)
        store._load(resume=False)
        return store

    def _load(self, resume=True):
        with open(self.path, "rb") as f:
            data = f.read()
        lines = data.split(b"\n")
        good_end = 0
        pos = 0
        for i, raw in enumerate(lines):
            line_end = pos + len(raw) + 1
            last = i == len(lines) - 1
            if not raw.strip():
                if not last:
                    raise ResumeMismatch(f"{self.path}: line {i + 1}: blank line")
                continue
            try:
                rec = json.loads(raw.decode("utf-8"))
            except (ValueError, UnicodeDecodeError):
                # only the final line may be torn, and then only when no newline followed it
                if last:
                    break
                raise ResumeMismatch(f"{self.path}: line {i + 1}: not valid JSON")
            if last:
                # complete JSON but no trailing newline: treat as torn (it may be a prefix that
                # happens to parse, e.g. a number); it will be re-measured
                break
            if i == 0:
                if rec.get("type") != "header":
                    raise ResumeMismatch(f"{self.path}: first line is not a header")
                if not resume:
                    self.identity = rec.get("identity")
                elif rec.get("identity") != self.identity:
                    raise ResumeMismatch(
                        f"{self.path}: recorded for a different plan or protocol:\n"
                        f"  recorded: {json.dumps(rec.get('identity'), sort_keys=True)}\n"
                        f"  now:      {json.dumps(self.identity, sort_keys=True)}\n"
                        "rerun with --restart to discard it, or choose another output")
            else:
                self._apply(rec, i + 1)
            good_end = line_end
            pos = line_end
        if not resume:
            if good_end == 0:
                raise ResumeMismatch(f"{self.path}: no header line")
            return
        if good_end == 0:
            # died while writing the header: nothing was measured, start the file again
            with open(self.path, "w", encoding="utf-8") as f:
                f.write(json.dumps({"type": "header", "identity": self.identity},
                                   sort_keys=True) + "\n")
            return
        if good_end < len(data):
            with open(self.path, "r+b") as f:
                f.truncate(good_end)

    def _apply(self, rec, lineno):
        t = rec.get("type")
        if t == "clear_errors":  # a rerun with --retry-errors: earlier failures are tried again
            self.errors.clear()
            return
        key = rec.get("key")
        if not isinstance(key, str):
            raise ResumeMismatch(f"{self.path}: line {lineno}: record without key")
        if t == "visit":
            r = rec.get("round")
            samples = rec.get("samples_ns")
            if not isinstance(r, int) or not isinstance(samples, list) or not samples:
                raise ResumeMismatch(f"{self.path}: line {lineno}: malformed visit")
            self.visits.setdefault(key, {})[r] = [float(x) for x in samples]
            c = rec.get("canary_ns")
            if isinstance(c, (int, float)) and c > 0:
                self.canary.setdefault(key, {})[r] = float(c)
            self.inner[key] = int(rec.get("inner", 1))
            t = rec.get("t")
            if isinstance(t, (int, float)):
                self.last_time[key] = max(self.last_time.get(key, 0.0), float(t))
                self.visit_t.setdefault(key, {})[r] = float(t)
        elif t == "error":
            self.errors[key] = str(rec.get("message", ""))
        elif t == "extra":
            self.extra.setdefault(key, {}).update(rec.get("extra", {}))
        else:
            raise ResumeMismatch(f"{self.path}: line {lineno}: unknown record type {t!r}")

    def _write(self, rec):
        self._f.write(json.dumps(rec, sort_keys=True) + "\n")
        self._f.flush()

    def add_visit(self, key, rnd, inner, samples_ns, wall_time=None, canary_ns=None):
        t = time.time() if wall_time is None else wall_time
        # kept as written (0.1 ns) so that a resumed run computes exactly what this one does
        samples = [round(float(x), 1) for x in samples_ns]
        rec = {"type": "visit", "key": key, "round": rnd, "inner": inner, "t": round(t, 3),
               "samples_ns": samples}
        self.visit_t.setdefault(key, {})[rnd] = rec["t"]
        if canary_ns is not None:
            rec["canary_ns"] = round(float(canary_ns), 1)
            self.canary.setdefault(key, {})[rnd] = rec["canary_ns"]
        self._write(rec)
        self.visits.setdefault(key, {})[rnd] = samples
        self.inner[key] = inner
        self.last_time[key] = max(self.last_time.get(key, 0.0), t)

    def add_error(self, key, message):
        self._write({"type": "error", "key": key, "message": message})
        self.errors[key] = message

    def add_extra(self, key, extra):
        self._write({"type": "extra", "key": key, "extra": extra})
        self.extra.setdefault(key, {}).update(extra)

    def canary_levels(self, window_s=CANARY_WINDOW_S):
        """key -> {round: the median canary (ns) of the visits recorded within window_s seconds of
        that visit}: the machine's speed at the time, without what one canary also measures of
        the visit before it. A visit without a wall time keeps its own canary."""
        ev = sorted((self.visit_t[k][r], c, k, r) for k, per in self.canary.items()
                    for r, c in per.items() if r in self.visit_t.get(k, {}))
        ts = [e[0] for e in ev]
        out = {k: dict(per) for k, per in self.canary.items()}
        for t, _, k, r in ev:
            lo, hi = bisect.bisect_left(ts, t - window_s), bisect.bisect_right(ts, t + window_s)
            out[k][r] = median([e[1] for e in ev[lo:hi]])
        return out

    @staticmethod
    def canary_reference(levels):
        """The level of the run's quietest minute (ns): what the samples are scaled to; 0.0 when
        the run timed no canary."""
        all_c = [c for per in levels.values() for c in per.values()]
        return min(all_c) if all_c else 0.0

    def rounds_done(self, key):
        return len(self.visits.get(key, {}))

    def close(self):
        if self._f:
            try:
                self._f.flush()
                os.fsync(self._f.fileno())
            finally:
                self._f.close()
                self._f = None


# ------------------------------------------------------------------------------ progress ----

def _fmt_secs(s):
    s = max(0, int(round(s)))
    if s >= 3600:
        return f"{s // 3600}h{(s % 3600) // 60:02d}m"
    if s >= 60:
        return f"{s // 60}m{s % 60:02d}s"
    return f"{s}s"


class Progress:
    """A one-line progress bar with ETA on a text stream (\\r, no dependency), throttled: the
    runners' bar where tqdm is not installed (make_progress)."""
    def __init__(self, total, label="", stream=None, clock=time.monotonic, width=28,
                 min_interval=0.25):
        self.total = max(0, total)
        self.done = 0
        self.label = label
        self.stream = sys.stderr if stream is None else stream
        self.clock = clock
        self.t0 = clock()
        self.width = width
        self.min_interval = min_interval
        self.last = -1e18
        self.note = ""
        self._shown = None

    def update(self, n=1, note=None):
        self.done += n
        if note is not None:
            self.note = note
        now = self.clock()
        if now - self.last >= self.min_interval or self.done >= self.total:
            self.last = now
            self._draw(now)

    def line(self, now=None):
        now = self.clock() if now is None else now
        frac = self.done / self.total if self.total else 1.0
        frac = min(1.0, frac)
        filled = int(round(frac * self.width))
        el = now - self.t0
        eta = (el / self.done * (self.total - self.done)) if self.done else float("nan")
        eta_s = _fmt_secs(eta) if self.done else "?"
        bar = "#" * filled + "." * (self.width - filled)
        return (f"{self.label}[{bar}] {100 * frac:5.1f}% {self.done}/{self.total} "
                f"elapsed {_fmt_secs(el)} ETA {eta_s} {self.note}")

    def _draw(self, now):
        self._shown = self.done
        self.stream.write("\r" + self.line(now) + "\033[K" if self._tty() else
                          "\r" + self.line(now))
        self.stream.flush()

    def _tty(self):
        try:
            return self.stream.isatty()
        except (AttributeError, ValueError):
            return False

    def close(self):
        if self._shown != self.done:  # the final count is not on screen yet
            self._draw(self.clock())
        self.stream.write("\n")
        self.stream.flush()


class TqdmProgress:
    """Progress's interface (total settable at any time, done, update(n, note), close) drawn by
    tqdm: the bar, rate and ETA, the note as its postfix, the last state left on screen. Like
    Progress it draws nothing before the total is known or the first update."""
    def __init__(self, total, label="", stream=None, min_interval=0.25, tqdm=None):
        self._tqdm = _tqdm if tqdm is None else tqdm
        self._kw = dict(desc=label.rstrip() or None, unit="visit",
                        file=sys.stderr if stream is None else stream,
                        mininterval=min_interval, dynamic_ncols=True, leave=True)
        self._total = max(0, total)
        self._bar = None

    def _shown(self):
        if self._bar is None:
            self._bar = self._tqdm(total=self._total, **self._kw)
        return self._bar

    @property
    def total(self):
        return self._total

    @total.setter
    def total(self, value):  # run_interleaved sets it once known and lowers it on errors
        self._total = max(0, value)
        bar = self._shown()
        bar.total = self._total
        bar.refresh()

    @property
    def done(self):
        return self._bar.n if self._bar is not None else 0

    def update(self, n=1, note=None):
        bar = self._shown()
        if note is not None:
            bar.set_postfix_str(note, refresh=False)
        bar.update(n)

    def close(self):
        self._shown().close()


def make_progress(total, label="", stream=None):
    """The runners' progress bar on stream (default stderr): tqdm's where python3-tqdm is
    installed, else Progress's plain line, since runners also run on boards that lack tqdm."""
    if _tqdm is None:
        return Progress(total, label=label, stream=stream)
    return TqdmProgress(total, label=label, stream=stream)


# ------------------------------------------------------------------------------- scheduler ----

@dataclass
class RunResult:
    stats: dict = field(default_factory=dict)      # key -> Stats
    inner: dict = field(default_factory=dict)      # key -> inner
    errors: dict = field(default_factory=dict)     # key -> message
    incomplete: list = field(default_factory=list) # keys with fewer rounds than asked
    budget_exhausted: bool = False
    visits_this_run: int = 0
    raw_stats: dict = field(default_factory=dict)  # key -> Stats of the unscaled samples (canary)
    canary_ref_ns: float = 0.0                     # the quietest minute's canary level (0: none)


class BenchCache:
    """Keeps built benchmarks up to max_items and max_bytes; rebuilds on a miss (LRU).

    A built benchmark may carry an `nbytes` attribute (tensor bytes it holds) for the byte bound.
    """
    def __init__(self, build, max_items, max_bytes=None):
        self.build = build
        self.max_items = max(1, max_items)
        self.max_bytes = max_bytes
        self.items = {}
        self.bytes = 0

    def get(self, key):
        if key in self.items:
            b = self.items.pop(key)
            self.items[key] = b
            return b, False
        while len(self.items) >= self.max_items:
            self.drop(next(iter(self.items)))
        b = self.build(key)
        size = int(getattr(b, "nbytes", 0) or 0)
        while self.items and self.max_bytes is not None and self.bytes + size > self.max_bytes:
            self.drop(next(iter(self.items)))
        self.items[key] = b
        self.bytes += size
        return b, True

    def drop(self, key):
        b = self.items.pop(key, None)
        if b is not None:
            self.bytes -= int(getattr(b, "nbytes", 0) or 0)

    def clear(self):
        self.items.clear()
        self.bytes = 0


def run_interleaved(keys, build, store, protocol, timer=None, budget_s=None, clock=None,
                    progress=None, on_visit=None, cache_items=64, cache_bytes=None,
                    stop_after_visits=None, scrub=None, stat_first=0, canary=None,
                    wall_clock=None):
    """Measures every key in interleaved rounds and returns RunResult.

    build(key) -> fn: a zero-argument callable running one forward pass, fully prepared
    (inputs allocated). Exceptions from build or fn become per-key errors (recorded, not retried).
    store: PartialStore (its finished visits are skipped). budget_s: wall time after which no new
    visit starts (the run then returns what it has; a rerun continues). clock: seconds (monotonic),
    injectable for tests; timer.sample(fn, inner) -> ns. stop_after_visits: test hook simulating
    an interruption after that many visits. scrub(fn): evicts the caches (writes
    protocol.scrub_bytes of memory) and may bring back what fn would find warm inside a network
    (its input); called untimed before every timed sample; required when protocol.scrub_bytes > 0.
    canary() -> ns (a Canary): timed before every visit when protocol.canary is set (required
    then); the statistics then come from each visit's samples scaled by the level of the run's
    quietest minute over the visit's own level (PartialStore.canary_levels, canary_scaled),
    res.raw_stats from the samples as timed. wall_clock: the visits' wall times (s), which the
    canary levels are taken over; injectable for tests.
    """
    protocol.check()
    if protocol.scrub_bytes > 0 and scrub is None:
        raise ValueError("protocol.scrub_bytes > 0 needs a scrub callable")
    if protocol.scrub_bytes == 0:
        scrub = None
    if protocol.canary and canary is None:
        raise ValueError("protocol.canary needs a canary callable")
    if not protocol.canary:
        canary = None
    timer = timer or CpuTimer()
    clock = clock or time.monotonic
    keys = list(keys)
    if len(set(keys)) != len(keys):
        raise ValueError("duplicate configuration keys")
    t_start = clock()
    res = RunResult()
    cache = BenchCache(build, cache_items, cache_bytes)
    inner = dict(store.inner)

    def pending_in_round(r):
        return [k for k in keys if k not in store.errors and r not in store.visits.get(k, {})]

    total = sum(len(pending_in_round(r)) for r in range(protocol.rounds))
    if progress is not None:
        progress.total = total
    gc_was_enabled = gc.isenabled()
    try:
        for r in range(protocol.rounds):
            # collect between rounds, never inside a visit: cycle collection pauses are noise
            gc.collect()
            gc.disable()
            stop = _one_round(r, keys, pending_in_round(r), build, store, protocol, timer, clock,
                              budget_s, t_start, res, cache, inner, progress, on_visit,
                              stop_after_visits, scrub, canary, wall_clock)
            if stop:
                break
    finally:
        if gc_was_enabled:
            gc.enable()
    cache.clear()
    levels = {}
    if canary is not None:
        levels = store.canary_levels()
        res.canary_ref_ns = PartialStore.canary_reference(levels)
    for key in keys:
        if key in store.errors:
            res.errors[key] = store.errors[key]
            continue
        v = store.visits.get(key, {})
        if not v:
            res.incomplete.append(key)
            continue
        res.inner[key] = store.inner.get(key, 1)
        raw = summarize([v[r] for r in sorted(v)], res.inner[key], stat_first)
        res.raw_stats[key] = raw
        if canary is not None:
            sv = canary_scaled(v, levels.get(key, {}), res.canary_ref_ns)
            res.stats[key] = summarize([sv[r] for r in sorted(sv)], res.inner[key], stat_first)
        else:
            res.stats[key] = raw
        if len(v) < protocol.rounds:
            res.incomplete.append(key)
    return res


def _one_round(r, keys, todo, build, store, protocol, timer, clock, budget_s, t_start, res,
               cache, inner, progress, on_visit, stop_after_visits, scrub=None, canary=None,
               wall_clock=None):
    """Visits the keys of todo once, in the seeded order of round r. Returns True to stop."""
    # the same order for a given (seed, round) whatever was already done: resumed runs see the
    # same interleaving as uninterrupted ones
    order = list(keys)
    random.Random(protocol.seed * 1000003 + r).shuffle(order)
    todo_set = set(todo)
    est = {k: min(min(v) for v in store.visits[k].values()) * store.inner.get(k, 1)
           for k in todo_set if store.visits.get(k)}
    for key in [k for k in order if k in todo_set]:
        if key in store.errors:
            continue
        if budget_s is not None and clock() - t_start >= budget_s:
            res.budget_exhausted = True
            return True
        if stop_after_visits is not None and res.visits_this_run >= stop_after_visits:
            return True
        try:
            fn, fresh = cache.get(key)
            if fresh:
                _warm_up(fn, protocol, clock)
                if key not in inner:
                    inner[key] = _calibrate_inner(fn, protocol, timer)
            # before the visit's warm-up call, which brings the benchmark's data back into the
            # caches the canary went through
            c_ns = canary() if canary is not None else None
            for _ in range(protocol.visit_warmup):
                fn()
            n_in = inner[key]
            burst = protocol.burst
            if protocol.max_visit_s > 0:
                if key not in est:
                    est[key] = timer.sample(fn, 1)
                burst = max(1, min(burst, int(protocol.max_visit_s * 1e9 / max(est[key], 1.0))))
            samples = []
            for _ in range(burst):
                if scrub is not None:
                    scrub(fn)
                samples.append(timer.sample(fn, n_in) / n_in)
        except Exception as e:  # noqa: BLE001 - one failing configuration must not end the run
            cache.drop(key)
            msg = f"{type(e).__name__}: {e}".strip()
            store.add_error(key, msg[:500])
            if progress is not None:
                progress.total -= protocol.rounds - r - 1
                progress.update(1, note=f"error on {key}")
            continue
        store.add_visit(key, r, n_in, samples, canary_ns=c_ns,
                        wall_time=wall_clock() if wall_clock is not None else None)
        res.visits_this_run += 1
        if on_visit is not None:
            on_visit(key, r, samples)
        if progress is not None:
            progress.update(1, note=f"round {r + 1}/{protocol.rounds}")
    return False


def _warm_up(fn, protocol, clock):
    t0 = clock()
    n = 0
    while n < protocol.warmup_calls or clock() - t0 < protocol.warmup_min_s:
        fn()
        n += 1
        if n >= 10000:
            break


def _calibrate_inner(fn, protocol, timer):
    """Estimates one call's duration from the fastest of three single-call samples."""
    est = min(timer.sample(fn, 1) for _ in range(3))
    return choose_inner(est, protocol)


# --------------------------------------------------------------------------- files & ids ----

def write_csv_atomic(path, header, rows):
    """Writes a CSV (header + rows of dicts or sequences) to path via path.tmp.<pid> + os.replace.

    On any exception the temporary file is removed and path is left as it was.
    """
    d = os.path.dirname(os.path.abspath(path))
    os.makedirs(d, exist_ok=True)
    tmp = f"{path}.tmp.{os.getpid()}"
    try:
        with open(tmp, "w", encoding="utf-8", newline="") as f:
            w = csv.writer(f, lineterminator="\n")
            w.writerow(header)
            for row in rows:
                if isinstance(row, dict):
                    extra = set(row) - set(header)
                    if extra:
                        raise ValueError(f"row has columns not in the header: {sorted(extra)}")
                    w.writerow([_cell(row.get(c, "")) for c in header])
                else:
                    if len(row) != len(header):
                        raise ValueError("row length differs from header")
                    w.writerow([_cell(x) for x in row])
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        try:
            os.remove(tmp)
        except FileNotFoundError:
            pass
        raise


def write_text_atomic(path, text):
    d = os.path.dirname(os.path.abspath(path))
    os.makedirs(d, exist_ok=True)
    tmp = f"{path}.tmp.{os.getpid()}"
    try:
        with open(tmp, "w", encoding="utf-8") as f:
            f.write(text)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        try:
            os.remove(tmp)
        except FileNotFoundError:
            pass
        raise


def _cell(x):
    if x is None:
        return ""
    if isinstance(x, float):
        if math.isnan(x) or math.isinf(x):
            return ""
        return f"{x:.6g}" if abs(x) >= 1e-3 or x == 0 else f"{x:.6e}"
    return str(x)


def file_sha256(path):
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def text_sha256(text):
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def utc_now_iso():
    return datetime.datetime.now(datetime.timezone.utc).replace(microsecond=0).isoformat().replace(
        "+00:00", "Z")


def cpu_model():
    """CPU model from /proc/cpuinfo (no hostname), with the logical CPU count."""
    name = ""
    try:
        with open("/proc/cpuinfo", encoding="utf-8", errors="replace") as f:
            for line in f:
                k, _, v = line.partition(":")
                if k.strip() in ("model name", "Model", "Hardware") and v.strip():
                    name = v.strip()
                    break
    except OSError:
        pass
    if not name:
        name = platform.processor() or platform.machine() or "unknown-cpu"
    return f"{name} ({os.cpu_count()} logical CPUs, {platform.machine()})"


def private_cache_bytes(sysfs="/sys/devices/system/cpu/cpu0/cache"):
    """Largest data/unified cache that cpu0 does not share with another CPU (sysfs), 0 if unknown."""
    best = 0
    try:
        entries = sorted(os.listdir(sysfs))
    except OSError:
        return 0
    for e in entries:
        if not e.startswith("index"):
            continue
        try:
            def rd(name):
                with open(os.path.join(sysfs, e, name), encoding="ascii") as f:
                    return f.read().strip()
            if rd("type") == "Instruction":
                continue
            shared = rd("shared_cpu_list")
            size = rd("size")
        except OSError:
            continue
        if "," in shared or "-" in shared:
            continue
        mult = {"K": 1 << 10, "M": 1 << 20, "G": 1 << 30}.get(size[-1:].upper(), 1)
        digits = size[:-1] if size[-1:].upper() in ("K", "M", "G") else size
        if digits.isdigit():
            best = max(best, int(digits) * mult)
    return best


def parse_int_list(text, what="list"):
    """'1,8,32' -> [1, 8, 32]; strict: every item a positive integer, no duplicates."""
    out = []
    for part in text.split(","):
        p = part.strip()
        if not p.isdigit() or int(p) < 1:
            raise ValueError(f"bad {what} item {part!r}: expected positive integers like 1,8")
        if int(p) in out:
            raise ValueError(f"duplicate {what} item {p}")
        out.append(int(p))
    return out


def ns_to_ms(x):
    return x / 1e6


def csv_string(header, rows):
    """CSV text for tests and small outputs (same formatting as write_csv_atomic)."""
    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\n")
    w.writerow(header)
    for row in rows:
        w.writerow([_cell(row.get(c, "")) for c in header])
    return buf.getvalue()
