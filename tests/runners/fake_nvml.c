/* fake_nvml.c: a stand-in libnvidia-ml for tests/runners/test_nvml.py. It implements the NVML
 * functions runners/nvml.py binds with the prototypes of nvml.h and returns fixed values (energy
 * grows by 1500 mJ per read), so the ctypes binding's types and struct layout are checked on a
 * machine without an NVIDIA driver. Built by the test with the system C compiler. */
#include <string.h>

typedef struct fake_dev { int index; } *nvmlDevice_t;
typedef struct { unsigned long long total, free, used; } nvmlMemory_t;

static struct fake_dev devs[2] = {{0}, {1}};
static unsigned long long energy = 1000000ULL;
static int inited = 0;

int nvmlInit_v2(void) { inited = 1; return 0; }
int nvmlShutdown(void) { inited = 0; return 0; }
const char *nvmlErrorString(int rc) { return rc == 3 ? "Not Supported" : "Unknown Error"; }
int nvmlDeviceGetCount_v2(unsigned int *n) { *n = 2; return inited ? 0 : 1; }
int nvmlDeviceGetHandleByIndex_v2(unsigned int i, nvmlDevice_t *h)
{
    if (i > 1) return 2; /* NVML_ERROR_INVALID_ARGUMENT */
    *h = &devs[i];
    return 0;
}
int nvmlDeviceGetHandleByUUID(const char *uuid, nvmlDevice_t *h)
{
    if (strcmp(uuid, "GPU-fake-1") != 0) return 6; /* NVML_ERROR_NOT_FOUND */
    *h = &devs[1];
    return 0;
}
int nvmlDeviceGetName(nvmlDevice_t d, char *buf, unsigned int n)
{
    const char *s = d->index ? "Fake GPU One" : "Fake GPU Zero";
    if (n < strlen(s) + 1) return 7; /* NVML_ERROR_INSUFFICIENT_SIZE */
    strcpy(buf, s);
    return 0;
}
int nvmlDeviceGetUUID(nvmlDevice_t d, char *buf, unsigned int n)
{
    const char *s = d->index ? "GPU-fake-1" : "GPU-fake-0";
    if (n < strlen(s) + 1) return 7;
    strcpy(buf, s);
    return 0;
}
int nvmlSystemGetDriverVersion(char *buf, unsigned int n)
{
    if (n < 10) return 7;
    strcpy(buf, "535.104.05");
    return 0;
}
int nvmlSystemGetCudaDriverVersion_v2(int *v) { *v = 12020; return 0; }
int nvmlDeviceGetTotalEnergyConsumption(nvmlDevice_t d, unsigned long long *mj)
{
    if (d->index == 1) return 3; /* device 1: no energy counter (NVML_ERROR_NOT_SUPPORTED) */
    energy += 1500ULL;
    *mj = energy;
    return 0;
}
int nvmlDeviceGetMemoryInfo(nvmlDevice_t d, nvmlMemory_t *m)
{
    m->total = 85899345920ULL;          /* 80 GiB: needs all 64 bits */
    m->used = 5368709120ULL + (unsigned long long)d->index;
    m->free = m->total - m->used;
    return 0;
}
int nvmlDeviceGetClockInfo(nvmlDevice_t d, int type, unsigned int *mhz)
{
    static const unsigned int clk[3] = {1755, 1980, 2619}; /* graphics, SM, memory */
    if (type < 0 || type > 2) return 2;
    *mhz = clk[type] + (unsigned int)d->index;
    return 0;
}
int nvmlDeviceGetMaxClockInfo(nvmlDevice_t d, int type, unsigned int *mhz)
{
    (void)d;
    *mhz = type == 2 ? 2619 : 1980;
    return 0;
}
int nvmlDeviceGetPowerManagementLimit(nvmlDevice_t d, unsigned int *mw) { (void)d; *mw = 700000; return 0; }
int nvmlDeviceGetEnforcedPowerLimit(nvmlDevice_t d, unsigned int *mw) { (void)d; *mw = 650000; return 0; }
int nvmlDeviceGetPowerUsage(nvmlDevice_t d, unsigned int *mw) { (void)d; *mw = 72500; return 0; }
int nvmlDeviceGetTemperature(nvmlDevice_t d, int sensor, unsigned int *c)
{
    (void)d;
    if (sensor != 0) return 2;
    *c = 41;
    return 0;
}
int nvmlDeviceGetMigMode(nvmlDevice_t d, unsigned int *cur, unsigned int *pend)
{
    *cur = d->index == 0 ? 1u : 0u;
    *pend = 0u;
    return 0;
}
int nvmlDeviceIsMigDeviceHandle(nvmlDevice_t d, unsigned int *is_mig) { (void)d; *is_mig = 0; return 0; }
int nvmlDeviceGetDeviceHandleFromMigDeviceHandle(nvmlDevice_t d, nvmlDevice_t *p) { *p = d; return 0; }
