"""test_timing.py: the interleaved-rounds protocol of runners/timing.py on a scripted timer and a
fake clock: statistics, schedule, budget, resume after interruption, torn partial files, atomic
writes, progress bar."""

import io
import json
import os
import tempfile
import unittest

import _common  # noqa: F401 - puts runners/ on sys.path
import timing
from _common import FakeClock, ScriptedTimer


def make_fn(key, calls):
    def fn():
        calls[key] = calls.get(key, 0) + 1
    fn.key = key
    return fn


class QuantileTest(unittest.TestCase):
    def test_quantile_should_interpolate_linearly(self):
        # sorted 1 2 3 4: q=0.25 at position 0.75 -> 1.75; q=0.75 at 2.25 -> 3.25
        self.assertAlmostEqual(timing.quantile([4, 1, 3, 2], 0.25), 1.75)
        self.assertAlmostEqual(timing.quantile([4, 1, 3, 2], 0.75), 3.25)
        self.assertEqual(timing.median([5, 1, 3]), 3)
        self.assertEqual(timing.median([7]), 7)

    def test_quantile_should_reject_empty_input(self):
        with self.assertRaises(ValueError):
            timing.quantile([], 0.5)


class FastestAfterScrubTest(unittest.TestCase):
    def test_scrubs_before_every_call_and_keeps_the_fastest(self):
        clock = FakeClock()
        durations = iter([0.5, 0.2, 0.3])
        log = []

        def fn():
            log.append("call")
            clock.advance(next(durations))

        best = timing.fastest_after_scrub(fn, lambda: log.append("scrub"), 3, clock=clock)
        self.assertAlmostEqual(best, 0.2)
        self.assertEqual(log, ["scrub", "call"] * 3)


class SummarizeTest(unittest.TestCase):
    def test_summarize_should_take_median_of_round_minima(self):
        # round minima 10, 30, 20 -> median 20; round medians 12, 31, 50 -> IQR over
        # positions: sorted 12 31 50, q25 = 21.5, q75 = 40.5 -> 19
        s = timing.summarize([[12, 10, 14], [31, 30, 90], [50, 20, 60]], inner=4)
        self.assertEqual(s.median_ns, 20)
        self.assertAlmostEqual(s.iqr_ns, 19.0)
        self.assertEqual(s.min_ns, 10)
        self.assertEqual(s.max_ns, 90)
        self.assertEqual(s.rounds, 3)
        self.assertEqual(s.reps, 9)
        self.assertEqual(s.calls, 36)
        self.assertAlmostEqual(s.mean_ns, (12 + 10 + 14 + 31 + 30 + 90 + 50 + 20 + 60) / 9)

    def test_summarize_should_ignore_an_outlier_round(self):
        # one round in a noisy period (x10) moves the median of minima not at all
        s = timing.summarize([[100, 101], [102, 100], [1000, 1005], [101, 103], [99, 100]])
        self.assertEqual(s.median_ns, 100)


class InterleavedTest(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory()
        self.partial = os.path.join(self.tmp.name, "out.csv.partial.jsonl")

    def tearDown(self):
        self.tmp.cleanup()

    def protocol(self, **kw):
        base = dict(rounds=3, burst=2, warmup_calls=0, warmup_min_s=0.0, visit_warmup=0,
                    min_sample_us=0.0, seed=7)
        base.update(kw)
        return timing.Protocol(**base)

    def run_keys(self, keys, durations, protocol, store=None, **kw):
        """Runs the scheduler; returns (result, timer, calls per key, [(key, round)] visited)."""
        calls, visits = {}, []
        clock = kw.pop("clock", FakeClock())
        timer = ScriptedTimer(durations, clock)
        store = store or timing.PartialStore(self.partial, {"t": 1})
        res = timing.run_interleaved(keys, lambda k: make_fn(k, calls), store, protocol,
                                     timer=timer, clock=clock,
                                     on_visit=lambda k, r, s: visits.append((k, r)), **kw)
        store.close()
        return res, timer, calls, visits

    def test_rounds_should_visit_every_key_once_per_round_in_shuffled_order(self):
        keys = [f"k{i}" for i in range(6)]
        # samples per key: 3 calibration + burst 2 x 3 rounds = 9
        dur = {k: [1000.0] * 9 for k in keys}
        res, timer, _, visits = self.run_keys(keys, dur, self.protocol())
        self.assertEqual(len(timer.sampled), 6 * 9)
        rounds = [[k for k, r in visits if r == i] for i in range(3)]
        self.assertEqual([r for _, r in visits], [0] * 6 + [1] * 6 + [2] * 6)
        for r in rounds:
            self.assertEqual(sorted(r), keys)
        self.assertNotEqual(rounds[0], rounds[1], "rounds should be shuffled differently")
        self.assertNotEqual(rounds[0], keys, "order should not be the plan order")
        self.assertEqual(len(res.stats), 6)

    def test_stats_should_come_from_the_scripted_samples(self):
        # 3 calibration samples, then round 0: 50, 40; round 1: 45, 90; round 2: 41, 47
        dur = {"a": [44.0, 44.0, 44.0, 50.0, 40.0, 45.0, 90.0, 41.0, 47.0]}
        res, _, _, _ = self.run_keys(["a"], dur, self.protocol())
        st = res.stats["a"]
        self.assertEqual(st.median_ns, 41.0)          # minima 40, 45, 41
        self.assertEqual(st.min_ns, 40.0)
        self.assertEqual(st.max_ns, 90.0)
        self.assertEqual(st.reps, 6)
        # round medians 45, 67.5, 44 -> sorted 44 45 67.5 -> q25 44.5, q75 56.25
        self.assertAlmostEqual(st.iqr_ns, 56.25 - 44.5)

    def test_inner_should_be_chosen_from_the_calibration_sample(self):
        # 50 us per call, samples must last 200 us -> 4 calls per sample, per-call time = d / 4
        p = self.protocol(rounds=1, burst=1, min_sample_us=200.0)
        dur = {"a": [60_000.0, 50_000.0, 70_000.0, 400_000.0]}
        res, _, calls, _ = self.run_keys(["a"], dur, p)
        self.assertEqual(res.inner["a"], 4)
        self.assertEqual(res.stats["a"].median_ns, 100_000.0)
        self.assertEqual(calls["a"], 3 + 4)  # calibration + one sample of 4 calls

    def test_scrub_should_run_before_every_timed_sample_and_force_one_call(self):
        # min_sample_us would ask for 4 calls per sample; a scrub makes every sample one cold call
        p = self.protocol(rounds=2, burst=3, min_sample_us=200.0, scrub_bytes=1 << 20)
        events = []
        calls = {}

        def build(k):
            def fn():
                calls[k] = calls.get(k, 0) + 1
                events.append("call")
            fn.key = k
            return fn
        clock = FakeClock()
        timer = ScriptedTimer({"a": [50_000.0] * 9}, clock)
        store = timing.PartialStore(self.partial, {"t": 1})
        res = timing.run_interleaved(["a"], build, store, p, timer=timer, clock=clock,
                                     scrub=lambda fn: events.append(("scrub", fn.key)))
        store.close()
        self.assertEqual(res.inner["a"], 1)
        timed = events[3:]  # after the three calibration calls, which are not scrubbed
        self.assertEqual(timed, [("scrub", "a"), "call"] * 6)
        self.assertEqual(calls["a"], 3 + 6)

    def test_canary_should_scale_each_minute_to_the_runs_quiet_speed(self):
        # the machine slows by a factor for minutes at a time (its neighbours' load): each round
        # falls in its own 100 s, both visits of a round slow alike and so do their canaries, so
        # the scaled statistics are the quiet machine's: 100 ns for a, 300 for b
        round_f = [1.0, 2.0, 1.5]
        state = {"f": 1.0, "visits": 0}
        base = {"a": 100.0, "b": 300.0}

        def canary():
            state["f"] = round_f[state["visits"] // 2]
            state["visits"] += 1
            return 1000.0 * state["f"]

        class SlowTimer:
            def sample(self, fn, inner):
                return base[fn.key] * state["f"] * inner

        p = self.protocol(rounds=3, burst=2, canary=True)
        store = timing.PartialStore(self.partial, {"t": 1})
        res = timing.run_interleaved(["a", "b"], lambda k: make_fn(k, {}), store, p,
                                     timer=SlowTimer(), clock=FakeClock(), canary=canary,
                                     wall_clock=lambda: 1000.0 + 100.0 * ((state["visits"] - 1) // 2))
        store.close()
        self.assertEqual(res.canary_ref_ns, 1000.0)
        for k in ("a", "b"):
            self.assertAlmostEqual(res.stats[k].median_ns, base[k])
            self.assertAlmostEqual(res.stats[k].iqr_ns, 0.0)
            self.assertGreater(res.raw_stats[k].median_ns, base[k])  # as timed: slowed
        # the journal keeps each visit's canary and time: read back, it scales to the same figures
        back = timing.PartialStore.read(self.partial)
        self.assertEqual(sorted(c for per in back.canary.values() for c in per.values()),
                         [1000.0, 1000.0, 1500.0, 1500.0, 2000.0, 2000.0])
        levels = back.canary_levels()
        ref = timing.PartialStore.canary_reference(levels)
        for k in ("a", "b"):
            v = timing.canary_scaled(back.visits[k], levels[k], ref)
            self.assertAlmostEqual(timing.summarize([v[r] for r in sorted(v)]).median_ns, base[k])

    def test_canary_should_not_scale_what_one_visit_left_behind(self):
        # within one minute the canaries alternate 1000 and 2000 ns (the cache state the visit
        # before left) while the layers run at their speed: every visit's level is the minute's
        # median, the run's quietest level the same, so nothing is scaled; scaled visit by visit
        # (its own canary over the run's fastest) they come out faster than they ran
        cans = iter([1000.0, 2000.0] * 6)
        base = {"a": 100.0, "b": 300.0}

        class Timer:
            def sample(self, fn, inner):
                return base[fn.key] * inner

        p = self.protocol(rounds=3, burst=2, canary=True)
        store = timing.PartialStore(self.partial, {"t": 1})
        clock = iter(range(100))
        res = timing.run_interleaved(["a", "b"], lambda k: make_fn(k, {}), store, p,
                                     timer=Timer(), clock=FakeClock(), canary=lambda: next(cans),
                                     wall_clock=lambda: 5000.0 + next(clock))
        store.close()
        self.assertEqual(res.canary_ref_ns, 1500.0)
        for k in ("a", "b"):
            self.assertAlmostEqual(res.stats[k].median_ns, base[k])
        back = timing.PartialStore.read(self.partial)
        per_visit = {k: timing.canary_scaled(back.visits[k], back.canary[k], 1000.0)
                     for k in ("a", "b")}
        self.assertTrue(any(timing.summarize([v[r] for r in sorted(v)]).median_ns < base[k]
                            for k, v in per_visit.items()))
        # a visit more than a minute away from every other keeps its own canary
        levels = back.canary_levels(window_s=0.5)
        self.assertEqual(sorted(c for per in levels.values() for c in per.values()),
                         [1000.0] * 3 + [2000.0] * 3)

    def test_canary_should_be_required_and_left_out_of_old_identities(self):
        store = timing.PartialStore(self.partial, {"t": 1})
        with self.assertRaises(ValueError):
            timing.run_interleaved(["a"], lambda k: make_fn(k, {}), store,
                                   self.protocol(canary=True))
        store.close()
        # runs recorded before the canary existed resume under the same identity
        self.assertNotIn("canary", self.protocol().as_dict())
        self.assertTrue(self.protocol(canary=True).as_dict()["canary"])

    def test_scrub_should_be_required_when_the_protocol_asks_for_one(self):
        store = timing.PartialStore(self.partial, {"t": 1})
        with self.assertRaises(ValueError):
            timing.run_interleaved(["a"], lambda k: make_fn(k, {}), store,
                                   self.protocol(scrub_bytes=4096))
        store.close()
        with self.assertRaises(ValueError):
            self.protocol(scrub_bytes=-1).check()

    def test_private_cache_should_skip_shared_and_instruction_caches(self):
        root = os.path.join(self.tmp.name, "cache")
        for idx, (typ, size, shared) in enumerate([("Data", "48K", "0"),
                                                   ("Instruction", "4096K", "0"),
                                                   ("Unified", "2048K", "0"),
                                                   ("Unified", "107520K", "0-1")]):
            d = os.path.join(root, f"index{idx}")
            os.makedirs(d)
            for name, val in (("type", typ), ("size", size), ("shared_cpu_list", shared)):
                with open(os.path.join(d, name), "w", encoding="ascii") as f:
                    f.write(val + "\n")
        self.assertEqual(timing.private_cache_bytes(root), 2048 << 10)
        self.assertEqual(timing.private_cache_bytes(os.path.join(root, "missing")), 0)

    def test_budget_should_stop_new_visits_and_keep_results(self):
        keys = ["a", "b", "c"]
        clock = FakeClock()
        # each sample takes 1 s of fake time: a first visit is 3 calibration + 2 timed samples =
        # 5 s; budget 9 s -> two visits start, the third never does
        dur = {k: [1e9] * 9 for k in keys}
        res, _, _, visits = self.run_keys(keys, dur, self.protocol(), budget_s=9.0, clock=clock)
        self.assertEqual(len(visits), 2)
        self.assertTrue(res.budget_exhausted)
        self.assertEqual(len(res.stats), 2)
        self.assertEqual(sorted(res.incomplete), keys)

    def test_resume_should_not_measure_anything_twice(self):
        keys = [f"k{i}" for i in range(5)]
        p = self.protocol()
        dur = {k: [1000.0] * 20 for k in keys}
        res1, _, _, _ = self.run_keys(keys, dur, p, stop_after_visits=7)
        self.assertEqual(res1.visits_this_run, 7)
        store = timing.PartialStore(self.partial, {"t": 1})
        self.assertEqual(sum(store.rounds_done(k) for k in keys), 7)
        res2, _, _, _ = self.run_keys(keys, {k: [1000.0] * 20 for k in keys}, p, store=store)
        self.assertEqual(res2.visits_this_run, 15 - 7)
        self.assertEqual(len(res2.stats), 5)
        self.assertEqual(res2.incomplete, [])
        with open(self.partial, encoding="utf-8") as f:
            recs = [json.loads(x) for x in f][1:]
        pairs = [(r["key"], r["round"]) for r in recs if r["type"] == "visit"]
        self.assertEqual(len(pairs), len(set(pairs)), "a (key, round) was measured twice")
        self.assertEqual(len(pairs), 15)

    def test_resume_should_follow_the_uninterrupted_order(self):
        keys = [f"k{i}" for i in range(5)]
        p = self.protocol(burst=1)
        _, _, _, full = self.run_keys(keys, {k: [1.0] * 10 for k in keys}, p)
        os.remove(self.partial)
        _, _, _, part1 = self.run_keys(keys, {k: [1.0] * 10 for k in keys}, p,
                                       stop_after_visits=6)
        store = timing.PartialStore(self.partial, {"t": 1})
        _, _, _, part2 = self.run_keys(keys, {k: [1.0] * 10 for k in keys}, p, store=store)
        self.assertEqual(len(part1), 6)
        self.assertEqual(part1 + part2, full)

    def test_errors_should_be_recorded_and_not_retried(self):
        calls = {}

        def build(k):
            if k == "bad":
                raise ValueError("cannot build")
            return make_fn(k, calls)
        store = timing.PartialStore(self.partial, {"t": 1})
        timer = ScriptedTimer({"good": [1.0] * 9})
        res = timing.run_interleaved(["good", "bad"], build, store, self.protocol(),
                                     timer=timer, clock=FakeClock())
        store.close()
        self.assertIn("cannot build", res.errors["bad"])
        self.assertIn("good", res.stats)
        store = timing.PartialStore(self.partial, {"t": 1})
        self.assertIn("bad", store.errors)
        store.close()
        store = timing.PartialStore(self.partial, {"t": 1}, retry_errors=True)
        self.assertNotIn("bad", store.errors)
        store.close()
        store = timing.PartialStore(self.partial, {"t": 1})
        self.assertNotIn("bad", store.errors, "a retry must survive a reload")
        store.close()


class PartialStoreTest(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory()
        self.path = os.path.join(self.tmp.name, "p.jsonl")

    def tearDown(self):
        self.tmp.cleanup()

    def test_torn_last_line_should_be_cut_off(self):
        s = timing.PartialStore(self.path, {"plan": "x"})
        s.add_visit("a", 0, 1, [5.0])
        s.add_visit("a", 1, 1, [6.0])
        s.close()
        with open(self.path, "a", encoding="utf-8") as f:
            f.write('{"type": "visit", "key": "a", "round": 2, "sam')
        s = timing.PartialStore(self.path, {"plan": "x"})
        self.assertEqual(sorted(s.visits["a"]), [0, 1])
        s.add_visit("a", 2, 1, [7.0])
        s.close()
        s = timing.PartialStore(self.path, {"plan": "x"})
        self.assertEqual(s.visits["a"], {0: [5.0], 1: [6.0], 2: [7.0]})
        s.close()

    def test_other_identity_should_be_refused(self):
        timing.PartialStore(self.path, {"plan": "x"}).close()
        with self.assertRaises(timing.ResumeMismatch):
            timing.PartialStore(self.path, {"plan": "y"})
        s = timing.PartialStore(self.path, {"plan": "y"}, restart=True)
        s.close()

    def test_read_should_take_the_identity_and_leave_the_file_as_it_is(self):
        s = timing.PartialStore(self.path, {"plan": "x"})
        s.add_visit("a", 0, 2, [5.0, 4.0])
        s.close()
        with open(self.path, "a", encoding="utf-8") as f:
            f.write('{"type": "visit", "key": "a", "round": 1, "sam')
        with open(self.path, "rb") as f:
            before = f.read()
        r = timing.PartialStore.read(self.path)
        self.assertEqual(r.identity, {"plan": "x"})
        self.assertEqual(r.visits, {"a": {0: [5.0, 4.0]}})
        self.assertEqual(r.inner, {"a": 2})
        with open(self.path, "rb") as f:
            self.assertEqual(f.read(), before)
        with open(self.path, "w", encoding="utf-8") as f:
            f.write("")
        with self.assertRaises(timing.ResumeMismatch):
            timing.PartialStore.read(self.path)

    def test_corrupt_middle_line_should_be_an_error(self):
        s = timing.PartialStore(self.path, {"plan": "x"})
        s.add_visit("a", 0, 1, [5.0])
        s.close()
        with open(self.path, encoding="utf-8") as f:
            lines = f.read().splitlines()
        lines.insert(1, "garbage")
        with open(self.path, "w", encoding="utf-8") as f:
            f.write("\n".join(lines) + "\n")
        with self.assertRaises(timing.ResumeMismatch):
            timing.PartialStore(self.path, {"plan": "x"})


class AtomicWriteTest(unittest.TestCase):
    def test_exception_should_leave_no_partial_csv(self):
        with tempfile.TemporaryDirectory() as d:
            path = os.path.join(d, "out.csv")

            def rows():
                yield {"a": 1}
                raise RuntimeError("died mid-write")
            with self.assertRaises(RuntimeError):
                timing.write_csv_atomic(path, ["a"], rows())
            self.assertEqual(os.listdir(d), [])

    def test_exception_should_keep_the_previous_file(self):
        with tempfile.TemporaryDirectory() as d:
            path = os.path.join(d, "out.csv")
            timing.write_csv_atomic(path, ["a", "b"], [{"a": 1, "b": "x,y"}])
            with self.assertRaises(ValueError):
                timing.write_csv_atomic(path, ["a"], [{"a": 2, "zzz": 3}])
            with open(path, encoding="utf-8") as f:
                self.assertEqual(f.read(), 'a,b\n1,"x,y"\n')
            self.assertEqual(os.listdir(d), ["out.csv"])


class ProgressTest(unittest.TestCase):
    def test_progress_should_draw_bar_and_eta(self):
        out = io.StringIO()
        clock = FakeClock(0.0)
        p = timing.Progress(4, label="x ", stream=out, clock=clock, min_interval=0.0)
        clock.advance(10.0)
        p.update(1)
        # 1 of 4 in 10 s -> 30 s left
        self.assertIn("\r", out.getvalue())
        self.assertIn("25.0%", out.getvalue())
        self.assertIn("ETA 30s", out.getvalue())
        p.close()
        self.assertTrue(out.getvalue().endswith("\n"))

    def test_runners_bar_should_be_plain_without_tqdm(self):
        saved, timing._tqdm = timing._tqdm, None  # a board without python3-tqdm
        try:
            p = timing.make_progress(0, label="x ", stream=io.StringIO())
        finally:
            timing._tqdm = saved
        self.assertIsInstance(p, timing.Progress)

    def test_tqdm_bar_should_follow_the_protocol_counts(self):
        class FakeTqdm:  # records what TqdmProgress asks of tqdm
            def __init__(self, total, **kw):
                self.total, self.kw, self.n, self.postfix, self.closed = total, kw, 0, "", False

            def refresh(self):
                pass

            def set_postfix_str(self, s, refresh=True):
                self.postfix = s

            def update(self, n=1):
                self.n += n

            def close(self):
                self.closed = True

        out = io.StringIO()
        p = timing.TqdmProgress(0, label="layer_runner ", stream=out, tqdm=FakeTqdm)
        p.total = 6  # as run_interleaved: the total once known, lowered after an error
        p.update(1, note="error on k")
        p.total -= 2
        p.update(1, note="round 1/7")
        bar = p._bar
        self.assertEqual((bar.total, bar.n, p.done, bar.postfix), (4, 2, 2, "round 1/7"))
        self.assertEqual((bar.kw["desc"], bar.kw["file"]), ("layer_runner", out))
        p.close()
        self.assertTrue(bar.closed)

    @unittest.skipIf(timing._tqdm is None, "python3-tqdm is not installed")
    def test_tqdm_bar_should_draw_counts_and_note(self):
        out = io.StringIO()
        p = timing.make_progress(0, label="x ", stream=out)
        self.assertIsInstance(p, timing.TqdmProgress)
        p.total = 4
        p.update(1, note="round 1/7")
        p.close()
        self.assertIn("1/4", out.getvalue())
        self.assertIn("round 1/7", out.getvalue())
        self.assertTrue(out.getvalue().endswith("\n"))


class ParseTest(unittest.TestCase):
    def test_int_list_should_be_strict(self):
        self.assertEqual(timing.parse_int_list("1,8, 32"), [1, 8, 32])
        for bad in ("", "1,,2", "0", "-1", "1.5", "1,1", "8x"):
            with self.assertRaises(ValueError, msg=bad):
                timing.parse_int_list(bad)


# A child that allocates and touches three 20 MiB buffers, frees them, does it again, and prints
# what timing.keep_heap returned and the minor page faults of the second round.
_HEAP_CHILD = """
import resource, sys
sys.path.insert(0, sys.argv[1])
import timing
note = timing.keep_heap() if sys.argv[2] == "kept" else "default"
def one_round():
    bufs = [bytearray(20 << 20) for _ in range(3)]
    for b in bufs:
        b[::4096] = b"\\1" * len(range(0, len(b), 4096))
    del bufs
one_round()
f0 = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
one_round()
print(note, resource.getrusage(resource.RUSAGE_SELF).ru_minflt - f0)
"""


def _glibc():
    import ctypes
    try:
        ctypes.CDLL("libc.so.6").gnu_get_libc_version
        return True
    except (OSError, AttributeError):
        return False


class KeepHeapTest(unittest.TestCase):
    def child(self, mode):
        import subprocess
        import sys
        out = subprocess.run([sys.executable, "-c", _HEAP_CHILD, os.path.dirname(timing.__file__),
                              mode], capture_output=True, text=True, check=True).stdout.split()
        return out[0], int(out[1])

    @unittest.skipUnless(_glibc(), "glibc's malloc only")
    def test_kept_heap_should_not_fault_freed_buffers_in_again(self):
        # with glibc's defaults 60 MiB freed on top of the heap exceed twice the raised mmap
        # threshold (20 MiB) and go back to the kernel: the second round faults its ~15,000 pages
        # again; kept, the second round reuses them
        note, default_faults = self.child("default")
        self.assertEqual(note, "default")
        self.assertGreater(default_faults, 10000)
        note, kept_faults = self.child("kept")
        self.assertEqual(note, "kept")
        self.assertLess(kept_faults, default_faults / 10)


if __name__ == "__main__":
    unittest.main()
