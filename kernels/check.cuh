// CUDA error checking and a minimal owning device buffer. Every runtime call goes through
// ORRERY_CUDA_CHECK, every launch is followed by ORRERY_CUDA_LAUNCHED(); with the environment
// variable ORRERY_SYNC_KERNELS=1 each launch is also synchronised, so an asynchronous fault is
// reported at the kernel that caused it.
#pragma once
#include <cuda_runtime.h>

#include <cstdlib>
#include <string>
#include <utility>

#include "orrery/error.hpp"

namespace orrery::cuda {

inline void check(cudaError_t status, const char* call, const char* file, int line) {
  if (status != cudaSuccess)
    throw Error(ErrorKind::cuda, std::string(call) + ": " + cudaGetErrorString(status) + " at " + file + ":" +
                                     std::to_string(line));
}

inline bool sync_kernels() {
  static const bool on = [] {
    const char* v = std::getenv("ORRERY_SYNC_KERNELS");
    return v && std::string(v) == "1";
  }();
  return on;
}

inline void launched(const char* kernel, const char* file, int line) {
  check(cudaGetLastError(), kernel, file, line);
  if (sync_kernels()) check(cudaDeviceSynchronize(), kernel, file, line);
}

// Guard bytes around device buffers (ORRERY_GUARD_BUFFERS=1): each allocation gets kGuardBytes of
// kGuardByte before and after its elements, checked when the buffer is read back and when it is
// freed. A kernel that writes past either end of its output is then reported (the first violation,
// by device_guard_violations() in orrery/backend.hpp) instead of silently corrupting a neighbor.
inline constexpr size_t kGuardBytes = 256;  // a multiple of every element size used, keeps alignment
inline constexpr unsigned char kGuardByte = 0xA5;

bool guards_enabled();
// Checks the guards of the allocation at `base` with `bytes` of elements; records the first
// violation. Never throws (it runs in destructors): when reading the guards back fails, it checks
// nothing and clears that failure from cudaGetLastError, so that the next ORRERY_CUDA_LAUNCHED does
// not blame it on its kernel; a sticky error (a kernel's fault) outlives the clearing: every later
// call fails with it, and the next checked one reports it.
void check_guards(const void* base, size_t bytes);

// Owns n elements of device memory; moves, never copies.
template <class T>
class DeviceBuffer {
 public:
  DeviceBuffer() = default;
  explicit DeviceBuffer(size_t n) { resize(n); }
  ~DeviceBuffer() { release(); }
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;
  DeviceBuffer(DeviceBuffer&& o) noexcept : base_(o.base_), ptr_(o.ptr_), n_(o.n_) {
    o.base_ = nullptr, o.ptr_ = nullptr, o.n_ = 0;
  }

  void resize(size_t n) {
    if (n == n_) return;
    release();
    if (!n) return;
    const size_t guard = guards_enabled() ? kGuardBytes : 0;
    check(cudaMalloc(&base_, n * sizeof(T) + 2 * guard), "cudaMalloc", __FILE__, __LINE__);
    ptr_ = reinterpret_cast<T*>(static_cast<unsigned char*>(base_) + guard);
    n_ = n;
    if (guard) {
      check(cudaMemset(base_, kGuardByte, guard), "cudaMemset (guard)", __FILE__, __LINE__);
      check(cudaMemset(static_cast<unsigned char*>(base_) + guard + n * sizeof(T), kGuardByte, guard),
            "cudaMemset (guard)", __FILE__, __LINE__);
    }
  }
  void upload(const T* host, size_t n) {
    resize(n);
    if (n) check(cudaMemcpy(ptr_, host, n * sizeof(T), cudaMemcpyHostToDevice), "cudaMemcpy H2D", __FILE__, __LINE__);
  }
  void download(T* host, size_t n) const {
    if (n) check(cudaMemcpy(host, ptr_, n * sizeof(T), cudaMemcpyDeviceToHost), "cudaMemcpy D2H", __FILE__, __LINE__);
    if (base_ && guards_enabled()) check_guards(base_, n_ * sizeof(T));
  }
  // Device-to-device copy of another buffer's n elements (resizing this one to n).
  void copy_from(const DeviceBuffer& o, size_t n) {
    resize(n);
    if (n) check(cudaMemcpy(ptr_, o.ptr_, n * sizeof(T), cudaMemcpyDeviceToDevice), "cudaMemcpy D2D", __FILE__, __LINE__);
  }
  // Exchanges the two buffers' memory (no copy).
  void swap(DeviceBuffer& o) noexcept {
    std::swap(base_, o.base_);
    std::swap(ptr_, o.ptr_);
    std::swap(n_, o.n_);
  }
  T* get() const { return ptr_; }
  size_t size() const { return n_; }

 private:
  void release() {
    if (base_) {
      if (guards_enabled()) check_guards(base_, n_ * sizeof(T));
      cudaFree(base_);
    }
    base_ = nullptr;
    ptr_ = nullptr;
    n_ = 0;
  }
  void* base_ = nullptr;
  T* ptr_ = nullptr;
  size_t n_ = 0;
};

// CUB's temporary storage, kept across calls: run(f) asks f(nullptr, bytes) for the size, grows the
// buffer when it is short, then calls f(storage, bytes); f returns the CUB call's cudaError_t.
class CubScratch {
 public:
  template <class F>
  void run(F&& f) {
    size_t bytes = 0;
    check(f(nullptr, bytes), "CUB (temporary storage size)", __FILE__, __LINE__);
    if (buf_.size() < bytes) buf_.resize(bytes);
    check(f(buf_.get(), bytes), "CUB", __FILE__, __LINE__);
  }

 private:
  DeviceBuffer<unsigned char> buf_;
};

// Makes `device` current for a scope and restores the previous device at its end: a destructor that
// releases a cuFFT plan or a cuBLAS handle runs on the device that made it, whichever device the
// process has made current since. Never throws: a switch that fails is cleared from
// cudaGetLastError (not to be blamed on the next launch) and the release runs on the current device.
class ScopedDevice {
 public:
  explicit ScopedDevice(int device) noexcept {
    int current = -1;
    if (cudaGetDevice(&current) != cudaSuccess) {
      cudaGetLastError();
      return;
    }
    if (current == device) return;
    if (cudaSetDevice(device) != cudaSuccess) cudaGetLastError();
    else previous_ = current;
  }
  ~ScopedDevice() {
    if (previous_ >= 0 && cudaSetDevice(previous_) != cudaSuccess) cudaGetLastError();
  }
  ScopedDevice(const ScopedDevice&) = delete;
  ScopedDevice& operator=(const ScopedDevice&) = delete;

 private:
  int previous_ = -1;  // the device to restore; -1: none was changed
};

// The device current now (to remember which device an owned handle belongs to).
inline int current_device() {
  int d = 0;
  check(cudaGetDevice(&d), "cudaGetDevice", __FILE__, __LINE__);
  return d;
}

// A CUDA event, destroyed with its owner (also when a call between its creation and its last use
// throws); moves, never copies.
class Event {
 public:
  Event() { check(cudaEventCreate(&e_), "cudaEventCreate", __FILE__, __LINE__); }
  ~Event() {
    if (e_) cudaEventDestroy(e_);
  }
  Event(const Event&) = delete;
  Event& operator=(const Event&) = delete;
  Event(Event&& o) noexcept : e_(o.e_) { o.e_ = nullptr; }
  cudaEvent_t get() const { return e_; }

 private:
  cudaEvent_t e_ = nullptr;
};

// Page-locked host memory of n elements (transfers run at full link speed); moves, never copies.
template <class T>
class PinnedBuffer {
 public:
  PinnedBuffer() = default;
  ~PinnedBuffer() {
    if (ptr_) cudaFreeHost(ptr_);
  }
  PinnedBuffer(const PinnedBuffer&) = delete;
  PinnedBuffer& operator=(const PinnedBuffer&) = delete;
  void resize(size_t n) {
    if (n == n_) return;
    if (ptr_) cudaFreeHost(ptr_);
    ptr_ = nullptr;
    n_ = 0;
    if (n) check(cudaMallocHost(reinterpret_cast<void**>(&ptr_), n * sizeof(T)), "cudaMallocHost", __FILE__, __LINE__);
    n_ = n;
  }
  T* get() const { return ptr_; }
  size_t size() const { return n_; }

 private:
  T* ptr_ = nullptr;
  size_t n_ = 0;
};

}  // namespace orrery::cuda

#define ORRERY_CUDA_CHECK(call) ::orrery::cuda::check((call), #call, __FILE__, __LINE__)
#define ORRERY_CUDA_LAUNCHED(name) ::orrery::cuda::launched(name, __FILE__, __LINE__)
