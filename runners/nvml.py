"""nvml.py: read-only NVIDIA Management Library access for the GPU runner.

Uses pynvml when importable, else a ctypes binding of libnvidia-ml.so.1 written here (the dozen
functions the runner reads). Only queries: nothing here sets clocks, power limits or MIG mode, and
nothing resets the device. Every query that the device does not support returns None.
"""

import ctypes
import os

NVML_SUCCESS = 0
NVML_ERROR_NOT_SUPPORTED = 3
CLOCK_GRAPHICS, CLOCK_SM, CLOCK_MEM = 0, 1, 2
TEMPERATURE_GPU = 0


class NvmlError(RuntimeError):
    def __init__(self, fn, code, text=""):
        super().__init__(f"{fn}: NVML error {code} {text}".strip())
        self.code = code


class _Memory(ctypes.Structure):
    # nvmlMemory_t (nvml.h): unsigned long long total, free, used; in bytes
    _fields_ = [("total", ctypes.c_ulonglong), ("free", ctypes.c_ulonglong),
                ("used", ctypes.c_ulonglong)]


class _CtypesBackend:
    """The ctypes binding: prototypes as declared in nvml.h (NVML API version 11/12)."""
    backend_name = "ctypes"

    def __init__(self, libpath=None):
        self.lib = ctypes.CDLL(libpath or "libnvidia-ml.so.1")
        L = self.lib
        dev = ctypes.c_void_p  # nvmlDevice_t is an opaque pointer
        u32p = ctypes.POINTER(ctypes.c_uint)
        self._proto("nvmlInit_v2", [])
        self._proto("nvmlShutdown", [])
        self._proto("nvmlDeviceGetCount_v2", [u32p])
        self._proto("nvmlDeviceGetHandleByIndex_v2", [ctypes.c_uint, ctypes.POINTER(dev)])
        self._proto("nvmlDeviceGetHandleByUUID", [ctypes.c_char_p, ctypes.POINTER(dev)])
        self._proto("nvmlDeviceGetName", [dev, ctypes.c_char_p, ctypes.c_uint])
        self._proto("nvmlDeviceGetUUID", [dev, ctypes.c_char_p, ctypes.c_uint])
        self._proto("nvmlSystemGetDriverVersion", [ctypes.c_char_p, ctypes.c_uint])
        self._proto("nvmlSystemGetCudaDriverVersion_v2", [ctypes.POINTER(ctypes.c_int)])
        self._proto("nvmlDeviceGetTotalEnergyConsumption",
                    [dev, ctypes.POINTER(ctypes.c_ulonglong)])
        self._proto("nvmlDeviceGetMemoryInfo", [dev, ctypes.POINTER(_Memory)])
        self._proto("nvmlDeviceGetClockInfo", [dev, ctypes.c_int, u32p])
        self._proto("nvmlDeviceGetMaxClockInfo", [dev, ctypes.c_int, u32p])
        self._proto("nvmlDeviceGetPowerManagementLimit", [dev, u32p])
        self._proto("nvmlDeviceGetEnforcedPowerLimit", [dev, u32p])
        self._proto("nvmlDeviceGetPowerUsage", [dev, u32p])
        self._proto("nvmlDeviceGetTemperature", [dev, ctypes.c_int, u32p])
        self._proto("nvmlDeviceGetMigMode", [dev, u32p, u32p])
        self._proto("nvmlDeviceIsMigDeviceHandle", [dev, u32p])
        self._proto("nvmlDeviceGetDeviceHandleFromMigDeviceHandle", [dev, ctypes.POINTER(dev)])
        L.nvmlErrorString.restype = ctypes.c_char_p
        L.nvmlErrorString.argtypes = [ctypes.c_int]

    def _proto(self, fn, args):
        f = getattr(self.lib, fn, None)
        if f is None:
            return
        f.restype = ctypes.c_int
        f.argtypes = args

    def _call(self, fn, *args):
        f = getattr(self.lib, fn, None)
        if f is None:
            raise NvmlError(fn, NVML_ERROR_NOT_SUPPORTED, "(symbol missing from the library)")
        rc = f(*args)
        if rc != NVML_SUCCESS:
            text = self.lib.nvmlErrorString(rc)
            raise NvmlError(fn, rc, text.decode(errors="replace") if text else "")

    def init(self):
        self._call("nvmlInit_v2")

    def shutdown(self):
        self._call("nvmlShutdown")

    def device_count(self):
        n = ctypes.c_uint()
        self._call("nvmlDeviceGetCount_v2", ctypes.byref(n))
        return n.value

    def handle_by_index(self, i):
        h = ctypes.c_void_p()
        self._call("nvmlDeviceGetHandleByIndex_v2", ctypes.c_uint(i), ctypes.byref(h))
        return h

    def handle_by_uuid(self, uuid):
        h = ctypes.c_void_p()
        self._call("nvmlDeviceGetHandleByUUID", uuid.encode(), ctypes.byref(h))
        return h

    def _string(self, fn, *args, size=96):
        buf = ctypes.create_string_buffer(size)
        self._call(fn, *args, buf, ctypes.c_uint(size))
        return buf.value.decode(errors="replace")

    def name(self, h):
        return self._string("nvmlDeviceGetName", h)

    def uuid(self, h):
        return self._string("nvmlDeviceGetUUID", h, size=96)

    def driver_version(self):
        return self._string("nvmlSystemGetDriverVersion", size=96)

    def cuda_driver_version(self):
        v = ctypes.c_int()
        self._call("nvmlSystemGetCudaDriverVersion_v2", ctypes.byref(v))
        return v.value

    def total_energy_mj(self, h):
        v = ctypes.c_ulonglong()
        self._call("nvmlDeviceGetTotalEnergyConsumption", h, ctypes.byref(v))
        return v.value

    def memory(self, h):
        m = _Memory()
        self._call("nvmlDeviceGetMemoryInfo", h, ctypes.byref(m))
        return m.total, m.free, m.used

    def _u32(self, fn, *args):
        v = ctypes.c_uint()
        self._call(fn, *args, ctypes.byref(v))
        return v.value

    def clock_mhz(self, h, kind):
        return self._u32("nvmlDeviceGetClockInfo", h, ctypes.c_int(kind))

    def max_clock_mhz(self, h, kind):
        return self._u32("nvmlDeviceGetMaxClockInfo", h, ctypes.c_int(kind))

    def power_limit_mw(self, h):
        return self._u32("nvmlDeviceGetPowerManagementLimit", h)

    def enforced_power_limit_mw(self, h):
        return self._u32("nvmlDeviceGetEnforcedPowerLimit", h)

    def power_usage_mw(self, h):
        return self._u32("nvmlDeviceGetPowerUsage", h)

    def temperature_c(self, h):
        return self._u32("nvmlDeviceGetTemperature", h, ctypes.c_int(TEMPERATURE_GPU))

    def mig_mode(self, h):
        cur, pend = ctypes.c_uint(), ctypes.c_uint()
        self._call("nvmlDeviceGetMigMode", h, ctypes.byref(cur), ctypes.byref(pend))
        return cur.value, pend.value

    def is_mig_handle(self, h):
        return bool(self._u32("nvmlDeviceIsMigDeviceHandle", h))

    def parent_of_mig(self, h):
        p = ctypes.c_void_p()
        self._call("nvmlDeviceGetDeviceHandleFromMigDeviceHandle", h, ctypes.byref(p))
        return p


class _PynvmlBackend:
    backend_name = "pynvml"

    def __init__(self, mod):
        self.m = mod

    @staticmethod
    def _s(v):
        return v.decode(errors="replace") if isinstance(v, bytes) else str(v)

    def _c(self, fn, *args):
        try:
            return getattr(self.m, fn)(*args)
        except AttributeError:
            raise NvmlError(fn, NVML_ERROR_NOT_SUPPORTED, "(not in this pynvml)")
        except self.m.NVMLError as e:
            raise NvmlError(fn, getattr(e, "value", -1), str(e))

    def init(self):
        self._c("nvmlInit")

    def shutdown(self):
        self._c("nvmlShutdown")

    def device_count(self):
        return self._c("nvmlDeviceGetCount")

    def handle_by_index(self, i):
        return self._c("nvmlDeviceGetHandleByIndex", i)

    def handle_by_uuid(self, uuid):
        return self._c("nvmlDeviceGetHandleByUUID", uuid)

    def name(self, h):
        return self._s(self._c("nvmlDeviceGetName", h))

    def uuid(self, h):
        return self._s(self._c("nvmlDeviceGetUUID", h))

    def driver_version(self):
        return self._s(self._c("nvmlSystemGetDriverVersion"))

    def cuda_driver_version(self):
        try:
            return int(self._c("nvmlSystemGetCudaDriverVersion_v2"))
        except NvmlError:
            return int(self._c("nvmlSystemGetCudaDriverVersion"))

    def total_energy_mj(self, h):
        return int(self._c("nvmlDeviceGetTotalEnergyConsumption", h))

    def memory(self, h):
        m = self._c("nvmlDeviceGetMemoryInfo", h)
        return int(m.total), int(m.free), int(m.used)

    def clock_mhz(self, h, kind):
        return int(self._c("nvmlDeviceGetClockInfo", h, kind))

    def max_clock_mhz(self, h, kind):
        return int(self._c("nvmlDeviceGetMaxClockInfo", h, kind))

    def power_limit_mw(self, h):
        return int(self._c("nvmlDeviceGetPowerManagementLimit", h))

    def enforced_power_limit_mw(self, h):
        return int(self._c("nvmlDeviceGetEnforcedPowerLimit", h))

    def power_usage_mw(self, h):
        return int(self._c("nvmlDeviceGetPowerUsage", h))

    def temperature_c(self, h):
        return int(self._c("nvmlDeviceGetTemperature", h, TEMPERATURE_GPU))

    def mig_mode(self, h):
        cur, pend = self._c("nvmlDeviceGetMigMode", h)
        return int(cur), int(pend)

    def is_mig_handle(self, h):
        return bool(self._c("nvmlDeviceIsMigDeviceHandle", h))

    def parent_of_mig(self, h):
        return self._c("nvmlDeviceGetDeviceHandleFromMigDeviceHandle", h)


def open_nvml(prefer="auto", libpath=None):
    """An initialised backend, or (None, reason) when NVML is not available on this machine.

    prefer: "auto" (pynvml, else ctypes), "pynvml" or "ctypes". libpath overrides the library the
    ctypes binding loads (tests point it at a stand-in library)."""
    errors = []
    if prefer in ("auto", "pynvml") and libpath is None:
        try:
            import pynvml
            b = _PynvmlBackend(pynvml)
            b.init()
            return b, ""
        except ImportError:
            errors.append("pynvml not importable")
        except Exception as e:  # noqa: BLE001 - report and try ctypes
            errors.append(f"pynvml: {e}")
    if prefer in ("auto", "ctypes"):
        try:
            b = _CtypesBackend(libpath)
            b.init()
            return b, ""
        except OSError as e:
            errors.append(f"libnvidia-ml.so.1 not loadable ({e})")
        except NvmlError as e:
            errors.append(str(e))
    return None, "; ".join(errors)


class GpuHandle:
    """The NVML view of the GPU that CUDA device `index` is: a physical GPU, or a MIG instance
    whose parent holds the energy counter, clocks and power limit."""

    def __init__(self, backend, cuda_index=0, visible=None):
        self.b = backend
        visible = os.environ.get("CUDA_VISIBLE_DEVICES", "") if visible is None else visible
        ids = [v.strip() for v in visible.split(",") if v.strip()]
        self.note = ""
        h = None
        if ids and cuda_index < len(ids):
            ident = ids[cuda_index]
            if ident.isdigit():
                h = backend.handle_by_index(int(ident))
            else:  # GPU-<uuid> or MIG-<uuid>
                h = backend.handle_by_uuid(ident)
        if h is None:
            h = backend.handle_by_index(cuda_index)
        self.handle = h
        self.parent = h
        self.is_mig = False
        try:
            if backend.is_mig_handle(h):
                self.is_mig = True
                self.parent = backend.parent_of_mig(h)
                self.note = "MIG instance: energy, clocks and power are the whole GPU's"
        except NvmlError:
            pass

    def _try(self, fn, *args):
        try:
            return fn(*args)
        except NvmlError:
            return None

    def energy_mj(self):
        return self._try(self.b.total_energy_mj, self.parent)

    def memory_used(self):
        m = self._try(self.b.memory, self.handle)
        return None if m is None else m[2]

    def sm_clock_mhz(self):
        return self._try(self.b.clock_mhz, self.parent, CLOCK_SM)

    def power_w(self):
        v = self._try(self.b.power_usage_mw, self.parent)
        return None if v is None else v / 1000.0

    def describe(self):
        """Everything the runner records about the GPU as found (read-only)."""
        b, h, p = self.b, self.handle, self.parent
        mem = self._try(b.memory, h)
        mig = self._try(b.mig_mode, p)
        lim = self._try(b.power_limit_mw, p)
        enf = self._try(b.enforced_power_limit_mw, p)
        return {
            "nvml_backend": b.backend_name,
            "gpu_name": self._try(b.name, p),
            "gpu_uuid": self._try(b.uuid, h),
            "driver_version": self._try(b.driver_version),
            "cuda_driver_version": self._try(b.cuda_driver_version),
            "memory_total_bytes": None if mem is None else mem[0],
            "mig_mode_current": None if mig is None else mig[0],
            "mig_mode_pending": None if mig is None else mig[1],
            "is_mig_instance": self.is_mig,
            "sm_clock_mhz": self._try(b.clock_mhz, p, CLOCK_SM),
            "mem_clock_mhz": self._try(b.clock_mhz, p, CLOCK_MEM),
            "graphics_clock_mhz": self._try(b.clock_mhz, p, CLOCK_GRAPHICS),
            "max_sm_clock_mhz": self._try(b.max_clock_mhz, p, CLOCK_SM),
            "max_mem_clock_mhz": self._try(b.max_clock_mhz, p, CLOCK_MEM),
            "power_limit_w": None if lim is None else lim / 1000.0,
            "enforced_power_limit_w": None if enf is None else enf / 1000.0,
            "temperature_c": self._try(b.temperature_c, p),
            "energy_counter": self.energy_mj() is not None,
            "note": self.note,
        }
