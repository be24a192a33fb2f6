// xtts NVML telemetry: reads NVIDIA GPU counters through libnvidia-ml.so.1, opened with dlopen() at
// run time so that building needs no CUDA toolkit and loading never fails on a machine without a
// driver: init() then answers {ok: false, error} and every field that a GPU does not report is null.
//
// The few NVML types and entry points used are declared below from NVIDIA's public NVML API
// reference (docs.nvidia.com/deploy/nvml-api); their layouts are part of NVML's stable C ABI.

#include <napi.h>

#include <dlfcn.h>
#include <time.h>

#include <cstdio>
#include <cstring>
#include <memory>
#include <mutex>
#include <shared_mutex>
#include <string>
#include <utility>
#include <vector>

namespace {

// ---- NVML declarations (from the NVML API reference) ----------------------------------------

typedef int nvmlReturn_t;  // an enum in nvml.h: int-sized
typedef struct nvmlDevice_st* nvmlDevice_t;
typedef struct nvmlGpmSample_st* nvmlGpmSample_t;

constexpr nvmlReturn_t NVML_SUCCESS = 0;
constexpr nvmlReturn_t NVML_ERROR_NOT_SUPPORTED = 3;

struct nvmlUtilization_t {
  unsigned int gpu;     // % of the last sample period in which one or more kernels ran
  unsigned int memory;  // % of the period in which device memory was read or written
};

struct nvmlMemory_t {
  unsigned long long total;
  unsigned long long free;
  unsigned long long used;
};

constexpr int NVML_CLOCK_SM = 1;         // nvmlClockType_t
constexpr int NVML_TEMPERATURE_GPU = 0;  // nvmlTemperatureSensors_t
constexpr unsigned NVML_DEVICE_NAME_V2_BUFFER_SIZE = 96;
constexpr unsigned NVML_DEVICE_UUID_V2_BUFFER_SIZE = 96;
constexpr unsigned NVML_SYSTEM_DRIVER_VERSION_BUFFER_SIZE = 80;
constexpr unsigned NVML_SYSTEM_NVML_VERSION_BUFFER_SIZE = 80;

struct nvmlGpmSupport_t {
  unsigned int version;  // NVML_GPM_SUPPORT_VERSION
  unsigned int isSupportedDevice;
};
constexpr unsigned NVML_GPM_SUPPORT_VERSION = 1;

struct nvmlGpmMetric_t {
  unsigned int metricId;
  nvmlReturn_t nvmlReturn;
  double value;
  struct {
    char* shortName;
    char* longName;
    char* unit;
  } metricInfo;
};

// NVML reads numMetrics entries of `metrics`. The array's declared length (NVML_GPM_METRIC_MAX) has
// grown across releases (98 in CUDA 12.0's header, 333 in CUDA 13's) while the struct version stayed
// 1; we ask for a handful, so any length at least that large is laid out identically.
constexpr unsigned kGpmMetricSlots = 333;
struct nvmlGpmMetricsGet_t {
  unsigned int version;  // NVML_GPM_METRICS_GET_VERSION
  unsigned int numMetrics;
  nvmlGpmSample_t sample1;
  nvmlGpmSample_t sample2;
  nvmlGpmMetric_t metrics[kGpmMetricSlots];
};
constexpr unsigned NVML_GPM_METRICS_GET_VERSION = 1;

// nvmlGpmMetricId_t values.
constexpr unsigned NVML_GPM_METRIC_GRAPHICS_UTIL = 1;
constexpr unsigned NVML_GPM_METRIC_SM_UTIL = 2;
constexpr unsigned NVML_GPM_METRIC_SM_OCCUPANCY = 3;
constexpr unsigned NVML_GPM_METRIC_ANY_TENSOR_UTIL = 5;
constexpr unsigned NVML_GPM_METRIC_DRAM_BW_UTIL = 10;
constexpr unsigned NVML_GPM_METRIC_FP64_UTIL = 11;
constexpr unsigned NVML_GPM_METRIC_FP32_UTIL = 12;
constexpr unsigned NVML_GPM_METRIC_FP16_UTIL = 13;
constexpr unsigned NVML_GPM_METRIC_PCIE_TX_PER_SEC = 20;
constexpr unsigned NVML_GPM_METRIC_PCIE_RX_PER_SEC = 21;

// The GPM metrics we report, in the order of GpmResult::values, with their JavaScript names.
struct GpmMetricSpec {
  unsigned id;
  const char* jsName;
};
constexpr GpmMetricSpec kGpmMetrics[] = {
    {NVML_GPM_METRIC_SM_OCCUPANCY, "smOccupancyPct"},    // warps resident / theoretical maximum
    {NVML_GPM_METRIC_SM_UTIL, "smActivityPct"},          // SMs busy (DCGM's SM_ACTIVE)
    {NVML_GPM_METRIC_GRAPHICS_UTIL, "graphicsActivityPct"},  // any engine busy
    {NVML_GPM_METRIC_ANY_TENSOR_UTIL, "tensorActivityPct"},
    {NVML_GPM_METRIC_DRAM_BW_UTIL, "dramBandwidthPct"},
    {NVML_GPM_METRIC_FP16_UTIL, "fp16ActivityPct"},
    {NVML_GPM_METRIC_FP32_UTIL, "fp32ActivityPct"},
    {NVML_GPM_METRIC_FP64_UTIL, "fp64ActivityPct"},
    {NVML_GPM_METRIC_PCIE_TX_PER_SEC, "pcieTxMiBps"},
    {NVML_GPM_METRIC_PCIE_RX_PER_SEC, "pcieRxMiBps"},
};
constexpr unsigned kGpmCount = sizeof(kGpmMetrics) / sizeof(kGpmMetrics[0]);

// Names of nvmlReturn_t values, for messages a person can search for.
const char* ReturnName(nvmlReturn_t r) {
  switch (r) {
    case 0: return "NVML_SUCCESS";
    case 1: return "NVML_ERROR_UNINITIALIZED";
    case 2: return "NVML_ERROR_INVALID_ARGUMENT";
    case 3: return "NVML_ERROR_NOT_SUPPORTED";
    case 4: return "NVML_ERROR_NO_PERMISSION";
    case 5: return "NVML_ERROR_ALREADY_INITIALIZED";
    case 6: return "NVML_ERROR_NOT_FOUND";
    case 7: return "NVML_ERROR_INSUFFICIENT_SIZE";
    case 8: return "NVML_ERROR_INSUFFICIENT_POWER";
    case 9: return "NVML_ERROR_DRIVER_NOT_LOADED";
    case 10: return "NVML_ERROR_TIMEOUT";
    case 11: return "NVML_ERROR_IRQ_ISSUE";
    case 12: return "NVML_ERROR_LIBRARY_NOT_FOUND";
    case 13: return "NVML_ERROR_FUNCTION_NOT_FOUND";
    case 14: return "NVML_ERROR_CORRUPTED_INFOROM";
    case 15: return "NVML_ERROR_GPU_IS_LOST";
    case 16: return "NVML_ERROR_RESET_REQUIRED";
    case 17: return "NVML_ERROR_OPERATING_SYSTEM";
    case 18: return "NVML_ERROR_LIB_RM_VERSION_MISMATCH";
    case 19: return "NVML_ERROR_IN_USE";
    case 20: return "NVML_ERROR_MEMORY";
    case 21: return "NVML_ERROR_NO_DATA";
    case 22: return "NVML_ERROR_VGPU_ECC_NOT_ENABLED";
    case 23: return "NVML_ERROR_INSUFFICIENT_RESOURCES";
    case 24: return "NVML_ERROR_FREQ_NOT_SUPPORTED";
    case 25: return "NVML_ERROR_ARGUMENT_VERSION_MISMATCH";
    case 26: return "NVML_ERROR_DEPRECATED";
    case 27: return "NVML_ERROR_NOT_READY";
    case 28: return "NVML_ERROR_GPU_NOT_FOUND";
    case 29: return "NVML_ERROR_INVALID_STATE";
    case 999: return "NVML_ERROR_UNKNOWN";
    default: return "NVML_ERROR_?";
  }
}

// ---- the library, opened at run time ----------------------------------------------------------

struct NvmlApi {
  void* lib = nullptr;
  std::string path;
  nvmlReturn_t (*Init_v2)() = nullptr;
  nvmlReturn_t (*Shutdown)() = nullptr;
  const char* (*ErrorString)(nvmlReturn_t) = nullptr;
  nvmlReturn_t (*SystemGetDriverVersion)(char*, unsigned) = nullptr;
  nvmlReturn_t (*SystemGetNVMLVersion)(char*, unsigned) = nullptr;
  nvmlReturn_t (*DeviceGetCount_v2)(unsigned*) = nullptr;
  nvmlReturn_t (*DeviceGetHandleByIndex_v2)(unsigned, nvmlDevice_t*) = nullptr;
  nvmlReturn_t (*DeviceGetName)(nvmlDevice_t, char*, unsigned) = nullptr;
  nvmlReturn_t (*DeviceGetUUID)(nvmlDevice_t, char*, unsigned) = nullptr;
  nvmlReturn_t (*DeviceGetUtilizationRates)(nvmlDevice_t, nvmlUtilization_t*) = nullptr;
  nvmlReturn_t (*DeviceGetMemoryInfo)(nvmlDevice_t, nvmlMemory_t*) = nullptr;
  nvmlReturn_t (*DeviceGetClockInfo)(nvmlDevice_t, int, unsigned*) = nullptr;
  nvmlReturn_t (*DeviceGetPowerUsage)(nvmlDevice_t, unsigned*) = nullptr;
  nvmlReturn_t (*DeviceGetTemperature)(nvmlDevice_t, int, unsigned*) = nullptr;
  // Renamed in driver R535 ("clocks event reasons"); the old name is still exported.
  nvmlReturn_t (*DeviceGetCurrentClocksEventReasons)(nvmlDevice_t, unsigned long long*) = nullptr;
  nvmlReturn_t (*DeviceGetCurrentClocksThrottleReasons)(nvmlDevice_t, unsigned long long*) = nullptr;
  nvmlReturn_t (*DeviceGetMigMode)(nvmlDevice_t, unsigned*, unsigned*) = nullptr;
  // GPM (GPU performance monitoring, Hopper and newer, driver R520+).
  nvmlReturn_t (*GpmQueryDeviceSupport)(nvmlDevice_t, nvmlGpmSupport_t*) = nullptr;
  nvmlReturn_t (*GpmSampleAlloc)(nvmlGpmSample_t*) = nullptr;
  nvmlReturn_t (*GpmSampleFree)(nvmlGpmSample_t) = nullptr;
  nvmlReturn_t (*GpmSampleGet)(nvmlDevice_t, nvmlGpmSample_t) = nullptr;
  nvmlReturn_t (*GpmMetricsGet)(nvmlGpmMetricsGet_t*) = nullptr;
};

template <typename F>
void Bind(void* lib, const char* name, F& slot) {
  slot = reinterpret_cast<F>(dlsym(lib, name));
}

struct DeviceState {
  unsigned index = 0;
  nvmlDevice_t handle = nullptr;
  std::string handleError;  // why there is no handle (e.g. no permission for this GPU)
  std::mutex gpmMutex;      // guards everything below
  bool gpmChecked = false;
  bool gpmSupported = false;
  std::string gpmReason;
  nvmlGpmSample_t gpmPrev = nullptr;
  nvmlGpmSample_t gpmNext = nullptr;
  bool gpmPrimed = false;
  double gpmPrevMs = 0;
};

// One process-wide NVML session shared by every Node environment (main thread and workers) that
// called init(); it is shut down when the last of them calls shutdown() or exits.
std::shared_mutex g_lifetime;  // shared: sampling; exclusive: init/shutdown
NvmlApi g_api;
std::vector<std::unique_ptr<DeviceState>> g_devices;
int g_refs = 0;
std::string g_driverVersion;
std::string g_nvmlVersion;

double MonotonicMs() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<double>(ts.tv_sec) * 1e3 + static_cast<double>(ts.tv_nsec) / 1e6;
}

std::string Describe(const char* call, nvmlReturn_t r) {
  std::string s = call;
  s += ": ";
  if (g_api.ErrorString) {
    const char* e = g_api.ErrorString(r);
    if (e) s += e;
  }
  s += " (";
  s += ReturnName(r);
  s += ")";
  return s;
}

// ---- readings, taken without touching JavaScript so that they can run on a worker thread ------

struct Field {
  bool ok = false;
  double value = 0;
  std::string error;  // empty when ok or when the GPU does not support the reading
};

void Record(Field& f, const char* call, nvmlReturn_t r, double value) {
  if (r == NVML_SUCCESS) {
    f.ok = true;
    f.value = value;
  } else if (r != NVML_ERROR_NOT_SUPPORTED) {
    f.error = Describe(call, r);
  }
}

struct RawSample {
  unsigned index = 0;
  double monotonicMs = 0;
  std::string deviceError;
  Field utilization, memoryUtilization, memoryUsed, memoryTotal, smClock, power, temperature, throttleMask;
};

void ReadSample(DeviceState& d, RawSample& s) {
  s.index = d.index;
  s.monotonicMs = MonotonicMs();
  if (!d.handle) {
    s.deviceError = d.handleError;
    return;
  }
  if (g_api.DeviceGetUtilizationRates) {
    nvmlUtilization_t u{};
    nvmlReturn_t r = g_api.DeviceGetUtilizationRates(d.handle, &u);
    Record(s.utilization, "nvmlDeviceGetUtilizationRates", r, u.gpu);
    Record(s.memoryUtilization, "nvmlDeviceGetUtilizationRates", r, u.memory);
  }
  if (g_api.DeviceGetMemoryInfo) {
    nvmlMemory_t m{};
    nvmlReturn_t r = g_api.DeviceGetMemoryInfo(d.handle, &m);
    Record(s.memoryUsed, "nvmlDeviceGetMemoryInfo", r, static_cast<double>(m.used));
    Record(s.memoryTotal, "nvmlDeviceGetMemoryInfo", r, static_cast<double>(m.total));
  }
  if (g_api.DeviceGetClockInfo) {
    unsigned mhz = 0;
    nvmlReturn_t r = g_api.DeviceGetClockInfo(d.handle, NVML_CLOCK_SM, &mhz);
    Record(s.smClock, "nvmlDeviceGetClockInfo(SM)", r, mhz);
  }
  if (g_api.DeviceGetPowerUsage) {
    unsigned mw = 0;
    nvmlReturn_t r = g_api.DeviceGetPowerUsage(d.handle, &mw);
    Record(s.power, "nvmlDeviceGetPowerUsage", r, mw / 1000.0);
  }
  if (g_api.DeviceGetTemperature) {
    unsigned c = 0;
    nvmlReturn_t r = g_api.DeviceGetTemperature(d.handle, NVML_TEMPERATURE_GPU, &c);
    Record(s.temperature, "nvmlDeviceGetTemperature(GPU)", r, c);
  }
  // The value argument of Record() must be read after the call that fills it: C++ leaves the order
  // in which arguments are evaluated unspecified.
  unsigned long long mask = 0;
  if (g_api.DeviceGetCurrentClocksEventReasons) {
    nvmlReturn_t r = g_api.DeviceGetCurrentClocksEventReasons(d.handle, &mask);
    Record(s.throttleMask, "nvmlDeviceGetCurrentClocksEventReasons", r, static_cast<double>(mask));
  } else if (g_api.DeviceGetCurrentClocksThrottleReasons) {
    nvmlReturn_t r = g_api.DeviceGetCurrentClocksThrottleReasons(d.handle, &mask);
    Record(s.throttleMask, "nvmlDeviceGetCurrentClocksThrottleReasons", r, static_cast<double>(mask));
  }
}

// Decides once per device whether GPM can be read, and why not. Caller holds d.gpmMutex.
void CheckGpm(DeviceState& d) {
  if (d.gpmChecked) return;
  d.gpmChecked = true;
  if (!d.handle) {
    d.gpmReason = d.handleError;
    return;
  }
  if (!g_api.GpmQueryDeviceSupport || !g_api.GpmSampleAlloc || !g_api.GpmSampleGet || !g_api.GpmMetricsGet || !g_api.GpmSampleFree) {
    d.gpmReason = "this driver's NVML has no GPM functions (they need driver R520 or newer)";
    return;
  }
  nvmlGpmSupport_t support{};
  support.version = NVML_GPM_SUPPORT_VERSION;
  nvmlReturn_t r = g_api.GpmQueryDeviceSupport(d.handle, &support);
  if (r != NVML_SUCCESS) {
    d.gpmReason = Describe("nvmlGpmQueryDeviceSupport", r);
    return;
  }
  if (!support.isSupportedDevice) {
    d.gpmReason = "this GPU has no GPM counters (they need Hopper or newer)";
    return;
  }
  if (g_api.DeviceGetMigMode) {
    unsigned current = 0, pending = 0;
    if (g_api.DeviceGetMigMode(d.handle, &current, &pending) == NVML_SUCCESS && current == 1) {
      d.gpmReason = "MIG mode is enabled on this GPU; whole-GPU GPM samples are not available (per-instance GPM is not read)";
      return;
    }
  }
  r = g_api.GpmSampleAlloc(&d.gpmPrev);
  if (r == NVML_SUCCESS) r = g_api.GpmSampleAlloc(&d.gpmNext);
  if (r != NVML_SUCCESS) {
    d.gpmReason = Describe("nvmlGpmSampleAlloc", r);
    return;
  }
  d.gpmSupported = true;
}

struct GpmResult {
  bool supported = false;
  std::string reason;
  bool primed = false;  // a reference sample existed, so values cover [previous call, this call]
  double intervalMs = 0;
  Field values[kGpmCount];
  std::string error;  // the whole read failed
};

void ReadGpm(DeviceState& d, GpmResult& g) {
  std::lock_guard<std::mutex> lock(d.gpmMutex);
  CheckGpm(d);
  g.supported = d.gpmSupported;
  g.reason = d.gpmReason;
  if (!d.gpmSupported) return;
  nvmlReturn_t r = g_api.GpmSampleGet(d.handle, d.gpmNext);
  double now = MonotonicMs();
  if (r != NVML_SUCCESS) {
    g.error = Describe("nvmlGpmSampleGet", r);
    d.gpmPrimed = false;
    return;
  }
  if (!d.gpmPrimed) {
    std::swap(d.gpmPrev, d.gpmNext);
    d.gpmPrevMs = now;
    d.gpmPrimed = true;
    return;
  }
  // ~8 KB: on the heap, since this may run on a libuv worker with a small stack.
  auto q = std::make_unique<nvmlGpmMetricsGet_t>();
  std::memset(q.get(), 0, sizeof(nvmlGpmMetricsGet_t));
  q->version = NVML_GPM_METRICS_GET_VERSION;
  q->numMetrics = kGpmCount;
  q->sample1 = d.gpmPrev;
  q->sample2 = d.gpmNext;
  for (unsigned i = 0; i < kGpmCount; i++) q->metrics[i].metricId = kGpmMetrics[i].id;
  r = g_api.GpmMetricsGet(q.get());
  g.primed = true;
  g.intervalMs = now - d.gpmPrevMs;
  if (r != NVML_SUCCESS) {
    g.error = Describe("nvmlGpmMetricsGet", r);
  } else {
    for (unsigned i = 0; i < kGpmCount; i++) Record(g.values[i], "nvmlGpmMetricsGet", q->metrics[i].nvmlReturn, q->metrics[i].value);
  }
  // The newest sample is the reference for the next interval.
  std::swap(d.gpmPrev, d.gpmNext);
  d.gpmPrevMs = now;
}

// ---- conversion to JavaScript ----------------------------------------------------------------

Napi::Value FieldValue(Napi::Env env, const Field& f) {
  return f.ok ? Napi::Number::New(env, f.value) : env.Null();
}

Napi::Object SampleToJs(Napi::Env env, const RawSample& s) {
  Napi::Object o = Napi::Object::New(env);
  o.Set("index", s.index);
  o.Set("monotonicMs", s.monotonicMs);
  o.Set("utilizationPct", FieldValue(env, s.utilization));
  o.Set("memoryUtilizationPct", FieldValue(env, s.memoryUtilization));
  o.Set("memoryUsedBytes", FieldValue(env, s.memoryUsed));
  o.Set("memoryTotalBytes", FieldValue(env, s.memoryTotal));
  o.Set("smClockMhz", FieldValue(env, s.smClock));
  o.Set("powerW", FieldValue(env, s.power));
  o.Set("temperatureC", FieldValue(env, s.temperature));
  o.Set("throttleReasonsMask", FieldValue(env, s.throttleMask));
  Napi::Object errors = Napi::Object::New(env);
  bool any = false;
  auto add = [&](const char* k, const std::string& e) {
    if (!e.empty()) {
      errors.Set(k, e);
      any = true;
    }
  };
  add("device", s.deviceError);
  add("utilizationPct", s.utilization.error);
  add("memoryUsedBytes", s.memoryUsed.error);
  add("smClockMhz", s.smClock.error);
  add("powerW", s.power.error);
  add("temperatureC", s.temperature.error);
  add("throttleReasonsMask", s.throttleMask.error);
  if (any) o.Set("errors", errors);
  return o;
}

Napi::Value GpmToJs(Napi::Env env, const GpmResult& g) {
  if (!g.supported) return env.Null();
  Napi::Object o = Napi::Object::New(env);
  o.Set("intervalMs", g.primed ? Napi::Number::New(env, g.intervalMs) : env.Null());
  for (unsigned i = 0; i < kGpmCount; i++) o.Set(kGpmMetrics[i].jsName, FieldValue(env, g.values[i]));
  if (!g.error.empty()) o.Set("error", g.error);
  return o;
}

// ---- lifetime ----------------------------------------------------------------------------------

struct EnvState {
  bool holdsRef = false;
};

// Every exported function carries its environment's EnvState as callback data; the environment's
// cleanup hook releases the NVML reference and frees it.
EnvState* StateOf(const Napi::CallbackInfo& info) { return static_cast<EnvState*>(info.Data()); }

// Caller holds g_lifetime exclusively.
void ReleaseLocked() {
  if (g_refs == 0) return;
  if (--g_refs > 0) return;
  for (auto& d : g_devices) {
    if (d->gpmPrev) g_api.GpmSampleFree(d->gpmPrev);
    if (d->gpmNext) g_api.GpmSampleFree(d->gpmNext);
  }
  g_devices.clear();
  if (g_api.Shutdown) g_api.Shutdown();
  if (g_api.lib) dlclose(g_api.lib);
  g_api = NvmlApi();
}

void ReleaseEnv(EnvState* s) {
  if (!s->holdsRef) return;
  std::unique_lock<std::shared_mutex> lock(g_lifetime);
  s->holdsRef = false;
  ReleaseLocked();
}

Napi::Object InitResult(Napi::Env env) {
  Napi::Object o = Napi::Object::New(env);
  o.Set("ok", true);
  o.Set("library", g_api.path);
  o.Set("driverVersion", g_driverVersion);
  o.Set("nvmlVersion", g_nvmlVersion);
  o.Set("deviceCount", static_cast<double>(g_devices.size()));
  return o;
}

Napi::Object InitFailure(Napi::Env env, const std::string& code, const std::string& error) {
  Napi::Object o = Napi::Object::New(env);
  o.Set("ok", false);
  o.Set("code", code);
  o.Set("error", error);
  return o;
}

// init(libraryPath?: string) -> {ok: true, library, driverVersion, nvmlVersion, deviceCount} | {ok: false, code, error}
Napi::Value Init(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  EnvState* es = StateOf(info);
  std::unique_lock<std::shared_mutex> lock(g_lifetime);
  if (es->holdsRef) return InitResult(env);
  if (g_refs > 0) {
    es->holdsRef = true;
    g_refs++;
    return InitResult(env);
  }
  std::string path = "libnvidia-ml.so.1";
  if (info.Length() > 0 && info[0].IsString()) path = info[0].As<Napi::String>().Utf8Value();
  dlerror();
  void* lib = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!lib) {
    const char* e = dlerror();
    return InitFailure(env, "LIBRARY_NOT_FOUND",
                       "cannot load " + path + " (no NVIDIA driver installed, or its library is not on the loader path): " + (e ? e : "unknown dlopen error"));
  }
  NvmlApi api;
  api.lib = lib;
  api.path = path;
  Bind(lib, "nvmlInit_v2", api.Init_v2);
  Bind(lib, "nvmlShutdown", api.Shutdown);
  Bind(lib, "nvmlErrorString", api.ErrorString);
  Bind(lib, "nvmlSystemGetDriverVersion", api.SystemGetDriverVersion);
  Bind(lib, "nvmlSystemGetNVMLVersion", api.SystemGetNVMLVersion);
  Bind(lib, "nvmlDeviceGetCount_v2", api.DeviceGetCount_v2);
  Bind(lib, "nvmlDeviceGetHandleByIndex_v2", api.DeviceGetHandleByIndex_v2);
  Bind(lib, "nvmlDeviceGetName", api.DeviceGetName);
  Bind(lib, "nvmlDeviceGetUUID", api.DeviceGetUUID);
  Bind(lib, "nvmlDeviceGetUtilizationRates", api.DeviceGetUtilizationRates);
  Bind(lib, "nvmlDeviceGetMemoryInfo", api.DeviceGetMemoryInfo);
  Bind(lib, "nvmlDeviceGetClockInfo", api.DeviceGetClockInfo);
  Bind(lib, "nvmlDeviceGetPowerUsage", api.DeviceGetPowerUsage);
  Bind(lib, "nvmlDeviceGetTemperature", api.DeviceGetTemperature);
  Bind(lib, "nvmlDeviceGetCurrentClocksEventReasons", api.DeviceGetCurrentClocksEventReasons);
  Bind(lib, "nvmlDeviceGetCurrentClocksThrottleReasons", api.DeviceGetCurrentClocksThrottleReasons);
  Bind(lib, "nvmlDeviceGetMigMode", api.DeviceGetMigMode);
  Bind(lib, "nvmlGpmQueryDeviceSupport", api.GpmQueryDeviceSupport);
  Bind(lib, "nvmlGpmSampleAlloc", api.GpmSampleAlloc);
  Bind(lib, "nvmlGpmSampleFree", api.GpmSampleFree);
  Bind(lib, "nvmlGpmSampleGet", api.GpmSampleGet);
  Bind(lib, "nvmlGpmMetricsGet", api.GpmMetricsGet);
  const char* missing = !api.Init_v2 ? "nvmlInit_v2" : !api.Shutdown ? "nvmlShutdown" : !api.DeviceGetCount_v2 ? "nvmlDeviceGetCount_v2" : !api.DeviceGetHandleByIndex_v2 ? "nvmlDeviceGetHandleByIndex_v2" : nullptr;
  if (missing) {
    dlclose(lib);
    return InitFailure(env, "FUNCTION_NOT_FOUND", path + " has no " + missing + " (an NVIDIA driver older than R319?)");
  }
  g_api = api;
  nvmlReturn_t r = g_api.Init_v2();
  if (r != NVML_SUCCESS) {
    std::string why = Describe("nvmlInit_v2", r);
    if (r == 9) why += ": the NVIDIA kernel driver is not loaded (no GPU, or the driver is not running)";
    if (r == 4) why += ": this user may not talk to the NVIDIA driver";
    if (r == 18) why += ": the NVML library and the loaded kernel driver are different versions (reboot or reload the driver)";
    dlclose(lib);
    g_api = NvmlApi();
    return InitFailure(env, ReturnName(r), why);
  }
  char buf[NVML_SYSTEM_DRIVER_VERSION_BUFFER_SIZE] = {0};
  g_driverVersion = (g_api.SystemGetDriverVersion && g_api.SystemGetDriverVersion(buf, sizeof buf) == NVML_SUCCESS) ? buf : "";
  char nbuf[NVML_SYSTEM_NVML_VERSION_BUFFER_SIZE] = {0};
  g_nvmlVersion = (g_api.SystemGetNVMLVersion && g_api.SystemGetNVMLVersion(nbuf, sizeof nbuf) == NVML_SUCCESS) ? nbuf : "";
  unsigned count = 0;
  r = g_api.DeviceGetCount_v2(&count);
  if (r != NVML_SUCCESS) {
    std::string why = Describe("nvmlDeviceGetCount_v2", r);
    g_api.Shutdown();
    dlclose(lib);
    g_api = NvmlApi();
    return InitFailure(env, ReturnName(r), why);
  }
  g_devices.clear();
  for (unsigned i = 0; i < count; i++) {
    auto d = std::make_unique<DeviceState>();
    d->index = i;
    nvmlReturn_t hr = g_api.DeviceGetHandleByIndex_v2(i, &d->handle);
    if (hr != NVML_SUCCESS) {
      d->handle = nullptr;
      d->handleError = Describe("nvmlDeviceGetHandleByIndex_v2", hr);
    }
    g_devices.push_back(std::move(d));
  }
  g_refs = 1;
  es->holdsRef = true;
  return InitResult(env);
}

Napi::Value Shutdown(const Napi::CallbackInfo& info) {
  ReleaseEnv(StateOf(info));
  return info.Env().Undefined();
}

// Caller holds g_lifetime (shared). Throws a JavaScript error on misuse.
DeviceState& DeviceAt(const Napi::CallbackInfo& info, size_t arg) {
  Napi::Env env = info.Env();
  if (!StateOf(info)->holdsRef) throw Napi::Error::New(env, "NVML is not initialised: call init() first and check that it returned ok");
  if (info.Length() <= arg || !info[arg].IsNumber()) throw Napi::TypeError::New(env, "expected a GPU index");
  double v = info[arg].As<Napi::Number>().DoubleValue();
  if (!(v >= 0) || v != static_cast<double>(static_cast<unsigned>(v)) || v >= static_cast<double>(g_devices.size())) {
    throw Napi::RangeError::New(env, "GPU index " + std::to_string(v) + " is out of range (" + std::to_string(g_devices.size()) + " GPUs)");
  }
  return *g_devices[static_cast<unsigned>(v)];
}

Napi::Value DeviceCount(const Napi::CallbackInfo& info) {
  std::shared_lock<std::shared_mutex> lock(g_lifetime);
  if (!StateOf(info)->holdsRef) throw Napi::Error::New(info.Env(), "NVML is not initialised: call init() first and check that it returned ok");
  return Napi::Number::New(info.Env(), static_cast<double>(g_devices.size()));
}

// deviceInfo(index) -> {index, name, uuid, memoryTotalBytes, migEnabled, gpmSupported, gpmReason?}
Napi::Value DeviceInfo(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  std::shared_lock<std::shared_mutex> lock(g_lifetime);
  DeviceState& d = DeviceAt(info, 0);
  Napi::Object o = Napi::Object::New(env);
  o.Set("index", d.index);
  if (!d.handle) {
    o.Set("name", env.Null());
    o.Set("uuid", env.Null());
    o.Set("memoryTotalBytes", env.Null());
    o.Set("migEnabled", env.Null());
    o.Set("gpmSupported", false);
    o.Set("gpmReason", d.handleError);
    o.Set("error", d.handleError);
    return o;
  }
  char name[NVML_DEVICE_NAME_V2_BUFFER_SIZE] = {0};
  o.Set("name", g_api.DeviceGetName && g_api.DeviceGetName(d.handle, name, sizeof name) == NVML_SUCCESS ? Napi::String::New(env, name) : env.Null());
  char uuid[NVML_DEVICE_UUID_V2_BUFFER_SIZE] = {0};
  o.Set("uuid", g_api.DeviceGetUUID && g_api.DeviceGetUUID(d.handle, uuid, sizeof uuid) == NVML_SUCCESS ? Napi::String::New(env, uuid) : env.Null());
  nvmlMemory_t m{};
  o.Set("memoryTotalBytes", g_api.DeviceGetMemoryInfo && g_api.DeviceGetMemoryInfo(d.handle, &m) == NVML_SUCCESS ? Napi::Number::New(env, static_cast<double>(m.total)) : env.Null());
  unsigned current = 0, pending = 0;
  o.Set("migEnabled", g_api.DeviceGetMigMode && g_api.DeviceGetMigMode(d.handle, &current, &pending) == NVML_SUCCESS ? Napi::Boolean::New(env, current == 1) : env.Null());
  {
    std::lock_guard<std::mutex> g(d.gpmMutex);
    CheckGpm(d);
    o.Set("gpmSupported", d.gpmSupported);
    if (!d.gpmSupported) o.Set("gpmReason", d.gpmReason);
  }
  return o;
}

Napi::Value Sample(const Napi::CallbackInfo& info) {
  std::shared_lock<std::shared_mutex> lock(g_lifetime);
  DeviceState& d = DeviceAt(info, 0);
  RawSample s;
  ReadSample(d, s);
  return SampleToJs(info.Env(), s);
}

// gpmSample(index) -> null when the GPU has no GPM counters (see deviceInfo().gpmReason); else the
// metrics over the interval since the previous gpmSample(index) call. The first call only takes the
// reference sample: its intervalMs and values are null.
Napi::Value GpmSample(const Napi::CallbackInfo& info) {
  std::shared_lock<std::shared_mutex> lock(g_lifetime);
  DeviceState& d = DeviceAt(info, 0);
  GpmResult g;
  ReadGpm(d, g);
  return GpmToJs(info.Env(), g);
}

// sampleAsync(indices: number[], gpm: boolean) -> Promise<{sample, gpm}[]>: the same readings on a
// libuv worker thread, so that a slow driver call never stalls the event loop.
class SampleWorker : public Napi::AsyncWorker {
 public:
  SampleWorker(Napi::Env env, std::vector<unsigned> indices, bool gpm)
      : Napi::AsyncWorker(env), deferred_(Napi::Promise::Deferred::New(env)), indices_(std::move(indices)), gpm_(gpm) {}

  Napi::Promise Promise() { return deferred_.Promise(); }

  void Execute() override {
    std::shared_lock<std::shared_mutex> lock(g_lifetime);
    if (g_refs == 0) {
      SetError("NVML was shut down before the sample was taken");
      return;
    }
    samples_.resize(indices_.size());
    gpms_.resize(gpm_ ? indices_.size() : 0);
    for (size_t i = 0; i < indices_.size(); i++) {
      if (indices_[i] >= g_devices.size()) {
        SetError("GPU index " + std::to_string(indices_[i]) + " is out of range");
        return;
      }
      DeviceState& d = *g_devices[indices_[i]];
      ReadSample(d, samples_[i]);
      if (gpm_) ReadGpm(d, gpms_[i]);
    }
  }

  void OnOK() override {
    Napi::Env env = Env();
    Napi::Array out = Napi::Array::New(env, samples_.size());
    for (size_t i = 0; i < samples_.size(); i++) {
      Napi::Object o = Napi::Object::New(env);
      o.Set("sample", SampleToJs(env, samples_[i]));
      o.Set("gpm", gpm_ ? GpmToJs(env, gpms_[i]) : env.Null());
      out.Set(static_cast<uint32_t>(i), o);
    }
    deferred_.Resolve(out);
  }

  void OnError(const Napi::Error& e) override { deferred_.Reject(e.Value()); }

 private:
  Napi::Promise::Deferred deferred_;
  std::vector<unsigned> indices_;
  bool gpm_;
  std::vector<RawSample> samples_;
  std::vector<GpmResult> gpms_;
};

Napi::Value SampleAsync(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  if (!StateOf(info)->holdsRef) throw Napi::Error::New(env, "NVML is not initialised: call init() first and check that it returned ok");
  if (info.Length() < 1 || !info[0].IsArray()) throw Napi::TypeError::New(env, "expected an array of GPU indices");
  Napi::Array arr = info[0].As<Napi::Array>();
  std::vector<unsigned> indices;
  for (uint32_t i = 0; i < arr.Length(); i++) {
    Napi::Value v = arr.Get(i);
    if (!v.IsNumber()) throw Napi::TypeError::New(env, "GPU indices must be numbers");
    double x = v.As<Napi::Number>().DoubleValue();
    if (!(x >= 0) || x != static_cast<double>(static_cast<unsigned>(x))) throw Napi::RangeError::New(env, "GPU indices must be non-negative integers");
    indices.push_back(static_cast<unsigned>(x));
  }
  bool gpm = info.Length() > 1 && info[1].ToBoolean().Value();
  auto* w = new SampleWorker(env, std::move(indices), gpm);
  Napi::Promise p = w->Promise();
  w->Queue();
  return p;
}

Napi::Value Monotonic(const Napi::CallbackInfo& info) { return Napi::Number::New(info.Env(), MonotonicMs()); }

Napi::Object Module(Napi::Env env, Napi::Object exports) {
  EnvState* es = new EnvState();
  env.AddCleanupHook([es]() {
    ReleaseEnv(es);
    delete es;
  });
  exports.Set("init", Napi::Function::New(env, Init, "init", es));
  exports.Set("shutdown", Napi::Function::New(env, Shutdown, "shutdown", es));
  exports.Set("deviceCount", Napi::Function::New(env, DeviceCount, "deviceCount", es));
  exports.Set("deviceInfo", Napi::Function::New(env, DeviceInfo, "deviceInfo", es));
  exports.Set("sample", Napi::Function::New(env, Sample, "sample", es));
  exports.Set("gpmSample", Napi::Function::New(env, GpmSample, "gpmSample", es));
  exports.Set("sampleAsync", Napi::Function::New(env, SampleAsync, "sampleAsync", es));
  exports.Set("monotonicMs", Napi::Function::New(env, Monotonic, "monotonicMs", es));
  return exports;
}

}  // namespace

NODE_API_MODULE(xtts_nvml, Module)
