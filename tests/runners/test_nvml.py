"""test_nvml.py: the ctypes NVML binding of runners/nvml.py against a stand-in libnvidia-ml built from
fake_nvml.c (prototypes of nvml.h, fixed values): argument and struct types, strings, errors, the
MIG/UUID handle selection, and that a machine without NVML reports it instead of failing."""

import os
import shutil
import subprocess
import tempfile
import unittest

import _common  # noqa: F401 - puts runners/ on sys.path
import nvml

HERE = os.path.dirname(os.path.abspath(__file__))
CC = shutil.which("cc") or shutil.which("gcc")


@unittest.skipIf(CC is None, "no C compiler to build the stand-in NVML library")
class CtypesNvmlTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.TemporaryDirectory()
        cls.lib = os.path.join(cls.tmp.name, "libfake_nvml.so")
        subprocess.run([CC, "-shared", "-fPIC", "-O1", "-o", cls.lib,
                        os.path.join(HERE, "fake_nvml.c")], check=True)

    @classmethod
    def tearDownClass(cls):
        cls.tmp.cleanup()

    def open(self):
        b, why = nvml.open_nvml("ctypes", libpath=self.lib)
        self.assertIsNotNone(b, why)
        self.assertEqual(b.backend_name, "ctypes")
        return b

    def test_binding_should_read_the_values_the_library_returns(self):
        b = self.open()
        self.assertEqual(b.device_count(), 2)
        h = b.handle_by_index(0)
        self.assertEqual(b.name(h), "Fake GPU Zero")
        self.assertEqual(b.uuid(h), "GPU-fake-0")
        self.assertEqual(b.driver_version(), "535.104.05")
        self.assertEqual(b.cuda_driver_version(), 12020)
        total, free, used = b.memory(h)
        self.assertEqual(total, 85899345920)       # above 2^32: 64-bit fields
        self.assertEqual(used, 5368709120)
        self.assertEqual(free, total - used)
        self.assertEqual(b.clock_mhz(h, nvml.CLOCK_SM), 1980)
        self.assertEqual(b.clock_mhz(h, nvml.CLOCK_MEM), 2619)
        self.assertEqual(b.clock_mhz(h, nvml.CLOCK_GRAPHICS), 1755)
        self.assertEqual(b.power_limit_mw(h), 700000)
        self.assertEqual(b.enforced_power_limit_mw(h), 650000)
        self.assertEqual(b.power_usage_mw(h), 72500)
        self.assertEqual(b.temperature_c(h), 41)
        self.assertEqual(b.mig_mode(h), (1, 0))
        e1 = b.total_energy_mj(h)
        e2 = b.total_energy_mj(h)
        self.assertEqual(e2 - e1, 1500)

    def test_handles_should_differ_per_device(self):
        b = self.open()
        h1 = b.handle_by_index(1)
        self.assertEqual(b.name(h1), "Fake GPU One")
        self.assertEqual(b.clock_mhz(h1, nvml.CLOCK_SM), 1981)
        self.assertEqual(b.memory(h1)[2], 5368709121)

    def test_errors_should_carry_the_nvml_message(self):
        b = self.open()
        with self.assertRaises(nvml.NvmlError) as cm:
            b.total_energy_mj(b.handle_by_index(1))
        self.assertEqual(cm.exception.code, nvml.NVML_ERROR_NOT_SUPPORTED)
        self.assertIn("Not Supported", str(cm.exception))
        with self.assertRaises(nvml.NvmlError):
            b.handle_by_index(7)

    def test_gpu_handle_should_follow_cuda_visible_devices(self):
        b = self.open()
        g = nvml.GpuHandle(b, 0, visible="GPU-fake-1")
        self.assertEqual(b.name(g.handle), "Fake GPU One")
        self.assertIsNone(g.energy_mj())   # device 1 has no energy counter: None, not an error
        g = nvml.GpuHandle(b, 1, visible="1,0")
        self.assertEqual(b.name(g.handle), "Fake GPU Zero")
        g = nvml.GpuHandle(b, 0, visible="")
        d = g.describe()
        self.assertEqual(d["gpu_name"], "Fake GPU Zero")
        self.assertEqual(d["power_limit_w"], 700.0)
        self.assertEqual(d["mig_mode_current"], 1)
        self.assertEqual(d["sm_clock_mhz"], 1980)
        self.assertTrue(d["energy_counter"])
        self.assertFalse(d["is_mig_instance"])
        self.assertEqual(d["nvml_backend"], "ctypes")

    def test_binding_should_have_no_setters(self):
        # read-only by construction: nothing that sets clocks, limits, MIG or resets is bound
        with open(nvml.__file__, encoding="utf-8") as f:
            src = f.read()
        for word in ("nvmlDeviceSet", "nvmlDeviceReset", "nvmlDeviceResetGpuLockedClocks",
                     "nvmlDeviceClearAccountingPids", "nvmlGpuInstanceCreate"):
            self.assertNotIn(word, src)


class NoNvmlTest(unittest.TestCase):
    def test_missing_library_should_be_reported(self):
        b, why = nvml.open_nvml("ctypes", libpath="/nonexistent/libnvidia-ml.so.1")
        self.assertIsNone(b)
        self.assertIn("not loadable", why)


if __name__ == "__main__":
    unittest.main()
