"""test_gpu_passes.py: the CUDA-only pieces of runners/gpu_runner.py and timing.CudaEventTimer, run
against a stand-in torch.cuda and NVML handle (this machine has no GPU): the energy arithmetic
(joules per forward from the counter difference, idle correction), the memory figures taken from
the allocator, and that every torch.cuda name they call exists in the installed PyTorch."""

import types
import unittest

import _common  # noqa: F401 - puts runners/ on sys.path
import gpu_runner
import timing
import torch


class FakeCuda:
    """The torch.cuda functions the passes call, with scripted allocator figures."""

    def __init__(self):
        self.calls = []

    def synchronize(self):
        self.calls.append("synchronize")

    def empty_cache(self):
        self.calls.append("empty_cache")

    def memory_allocated(self):
        return 1000

    def reset_peak_memory_stats(self):
        self.calls.append("reset_peak_memory_stats")

    def max_memory_allocated(self):
        return 5000

    def max_memory_reserved(self):
        return 8192

    class Event:
        def __init__(self, enable_timing=False):
            assert enable_timing
            self.t = None

        def record(self):
            FakeCuda.clock += 1.5
            self.t = FakeCuda.clock

        def synchronize(self):
            pass

        def elapsed_time(self, end):
            return end.t - self.t  # ms

    clock = 0.0


class FakeGpu:
    def __init__(self, energy_step_mj=0):
        self.e = 10_000_000
        self.step = energy_step_mj
        self.reads = 0

    def energy_mj(self):
        self.reads += 1
        v = self.e
        self.e += self.step
        return v

    def memory_used(self):
        return 3 << 30

    def sm_clock_mhz(self):
        return 1980


def fake_torch():
    return types.SimpleNamespace(cuda=FakeCuda())


class PassesTest(unittest.TestCase):
    def test_fake_api_should_exist_in_real_torch(self):
        for name in ("synchronize", "empty_cache", "memory_allocated", "reset_peak_memory_stats",
                     "max_memory_allocated", "max_memory_reserved", "Event",
                     "get_device_properties", "get_device_capability", "current_device",
                     "get_device_name", "is_available"):
            self.assertTrue(hasattr(torch.cuda, name), name)
        for name in ("record", "synchronize", "elapsed_time"):
            self.assertTrue(hasattr(torch.cuda.Event, name), name)
        self.assertTrue(hasattr(torch.backends.cudnn, "allow_tf32"))
        self.assertTrue(hasattr(torch.backends.cuda.matmul, "allow_tf32"))

    def test_energy_should_be_counter_difference_per_forward(self):
        t = fake_torch()
        gpu = FakeGpu(energy_step_mj=6000)  # the second read is 6 J after the first
        n_calls = [0]

        def fwd():
            n_calls[0] += 1
        r = gpu_runner.energy_pass(t, fwd, gpu, seconds=0.01, est_s=0.001, idle_w=None)
        self.assertEqual(r["energy_iterations"], n_calls[0])
        self.assertGreaterEqual(n_calls[0], 10)
        self.assertAlmostEqual(r["energy_j"], 6.0 / n_calls[0])
        self.assertAlmostEqual(r["avg_power_w"], 6.0 / r["energy_seconds"])
        self.assertEqual(r["nvml_used_peak_bytes"], 3 << 30)
        self.assertNotIn("energy_dynamic_j", r)

    def test_idle_power_should_be_subtracted_for_dynamic_energy(self):
        t = fake_torch()
        gpu = FakeGpu(energy_step_mj=6000)
        r = gpu_runner.energy_pass(t, lambda: None, gpu, seconds=0.01, est_s=0.001, idle_w=50.0)
        n, dt = r["energy_iterations"], r["energy_seconds"]
        self.assertAlmostEqual(r["energy_dynamic_j"], max(0.0, 6.0 - 50.0 * dt) / n)
        self.assertEqual(r["idle_power_w"], 50.0)

    def test_no_energy_counter_should_give_no_figures(self):
        gpu = FakeGpu()
        gpu.energy_mj = lambda: None
        self.assertEqual(gpu_runner.energy_pass(fake_torch(), lambda: None, gpu, 0.01, 0.001,
                                                None), {})
        self.assertEqual(gpu_runner.energy_pass(fake_torch(), lambda: None, None, 0.01, 0.001,
                                                None), {})

    def test_memory_pass_should_reset_the_peak_before_the_measured_forward(self):
        t = fake_torch()
        order = []

        def fwd():
            order.append(list(t.cuda.calls))
            return object()
        r = gpu_runner.memory_pass(t, fwd, FakeGpu())
        self.assertEqual(r["max_allocated_bytes"], 5000)
        self.assertEqual(r["max_reserved_bytes"], 8192)
        self.assertEqual(r["alloc_before_bytes"], 1000)
        self.assertEqual(r["nvml_used_before_bytes"], 3 << 30)
        self.assertNotIn("reset_peak_memory_stats", order[0])  # warm-up forward: not measured
        self.assertIn("reset_peak_memory_stats", order[1])     # measured forward: after reset

    def test_cuda_event_timer_should_return_nanoseconds(self):
        t = types.SimpleNamespace(cuda=FakeCuda)
        calls = []
        ns = timing.CudaEventTimer(t).sample(lambda: calls.append(1), 4)
        self.assertEqual(len(calls), 4)
        self.assertAlmostEqual(ns, 1.5e6)  # events 1.5 ms apart

    def test_version_suffix_should_name_driver_and_clocks(self):
        env = {"device": "cuda", "driver_version": "535.1", "gpu_name": "H100",
               "sm_clock_mhz": 1980, "mem_clock_mhz": 2619, "power_limit_w": 700.0,
               "mig_mode_current": 0}
        s = gpu_runner.env_version_suffix(env)
        for part in ("driver 535.1", "gpu H100", "sm_clock 1980 MHz", "power_limit 700.0 W",
                     "mig 0"):
            self.assertIn(part, s)
        self.assertEqual(gpu_runner.env_version_suffix({"device": "cpu"}), "")


if __name__ == "__main__":
    unittest.main()
