// Whether the engine runs the packed kernels of packed_gemm_avx2.cpp, and
// their AVX-512 tile.
// This file is plain x86-64 (or any other target): it only asks.
#include "mha/fast/packed_gemm.hpp"
#include "mha/fast/packed_tile.hpp"

#include <atomic>
#include <cstdlib>
#include <cstring>
#include <stdexcept>

namespace mha::fast {

namespace {

// On unless the environment says MHA_PACKED=0.
bool on_at_start() {
    const char* env = std::getenv("MHA_PACKED");
    return env == nullptr || std::strcmp(env, "0") != 0;
}

std::atomic<bool> g_on{on_at_start()};

// The AVX-512 tile: on unless the environment says MHA_AVX512=0.
bool wide_at_start() {
    const char* env = std::getenv("MHA_AVX512");
    return env == nullptr || std::strcmp(env, "0") != 0;
}

std::atomic<bool> g_wide{wide_at_start()};

}  // namespace

bool packed_products_available() {
#if defined(MHA_AVX2_KERNEL)
    static const bool yes = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
    return yes;
#else
    return false;
#endif
}

bool packed_products_on() {
    return packed_products_available() && g_on.load(std::memory_order_relaxed);
}

void set_packed_products(bool on) { g_on.store(on, std::memory_order_relaxed); }

bool wide_tiles_on() {
#if defined(MHA_AVX512_KERNEL)
    static const bool yes = __builtin_cpu_supports("avx512f");
    return yes && g_wide.load(std::memory_order_relaxed);
#else
    return false;
#endif
}

void set_wide_tiles(bool on) { g_wide.store(on, std::memory_order_relaxed); }

#if !defined(MHA_AVX2_KERNEL)
// Builds without the AVX2 file: nothing calls these (packed_products_on()
// is false), but the names exist, so that the tests link everywhere.
void pack_panels(const float*, std::size_t, bool, std::size_t, std::size_t, float*) {
    throw std::logic_error("pack_panels: this build has no packed kernels (x86-64 only)");
}
void packed_gemm(const float*, std::size_t, std::size_t, std::size_t, const float*,
                 std::size_t, std::size_t, float*, std::size_t, float, bool) {
    throw std::logic_error("packed_gemm: this build has no packed kernels (x86-64 only)");
}
void packed_gemm_add(const float*, std::size_t, bool, std::size_t, std::size_t, const float*,
                     std::size_t, std::size_t, float*, std::size_t, float, bool) {
    throw std::logic_error("packed_gemm_add: this build has no packed kernels (x86-64 only)");
}
void packed_linear(const float*, std::size_t, std::size_t, std::size_t, const LinearPanels*,
                   std::size_t) {
    throw std::logic_error("packed_linear: this build has no packed kernels (x86-64 only)");
}
void packed_product(Block, bool, Block, bool, float*, std::size_t, float, float) {
    throw std::logic_error("packed_product: this build has no packed kernels (x86-64 only)");
}
#endif

}  // namespace mha::fast
