// The engine's memory: blocks on cache lines, and glibc asked to keep what
// is freed (see memory.hpp for why).
#include "mha/fast/memory.hpp"

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <new>

#if defined(__GLIBC__)
#include <malloc.h>
#endif
#if defined(__SSE2__)
#include <emmintrin.h>
#endif

namespace mha::fast {

namespace {

constexpr std::uintptr_t kLine = 64;

}  // namespace

// malloc and a line's slack, not aligned new: glibc's memalign asks for the
// alignment on top of the size, so a freed block of exactly that size never
// serves the same request again, and the heap grew by a whole buffer on
// some calls. The block malloc gave sits just before the aligned address.
void* line_allocate(std::size_t bytes) {
    void* raw = std::malloc(bytes + kLine);
    if (raw == nullptr) throw std::bad_alloc();
    const std::uintptr_t at = (reinterpret_cast<std::uintptr_t>(raw) + kLine) & ~(kLine - 1);
    reinterpret_cast<void**>(at)[-1] = raw;  // at - raw >= 16: malloc aligns to 16
    return reinterpret_cast<void*>(at);
}

void line_deallocate(void* p) noexcept {
    if (p != nullptr) std::free(static_cast<void**>(p)[-1]);
}

bool keep_freed_memory() {
    static const bool kept = [] {
#if defined(__GLIBC__) && !defined(MHA_SANITIZE)
        const char* env = std::getenv("MHA_KEEP_MB");
        const long mb = env != nullptr ? std::atol(env) : 1024;
        if (mb <= 0) return false;
        // Every block from the heap (none mapped alone, to be unmapped at its
        // free), and up to mb MB free at the heap's top before it shrinks.
        return mallopt(M_MMAP_MAX, 0) == 1 &&
               mallopt(M_TRIM_THRESHOLD, static_cast<int>(std::min(mb, 2047L) << 20)) == 1;
#else
        return false;
#endif
    }();
    return kept;
}

void release_kept_memory() {
#if defined(__GLIBC__)
    malloc_trim(0);
#endif
}

void stream_rows(const float* src, std::size_t src_ld, std::size_t rows, std::size_t cols,
                 float* dst, std::size_t dst_ld) {
#if defined(__SSE2__)
    if (cols % 4 == 0 && dst_ld % 4 == 0 && reinterpret_cast<std::uintptr_t>(dst) % 16 == 0) {
        for (std::size_t r = 0; r < rows; ++r)
            for (std::size_t c = 0; c < cols; c += 4)
                _mm_stream_ps(dst + r * dst_ld + c, _mm_loadu_ps(src + r * src_ld + c));
        return;
    }
#endif
    for (std::size_t r = 0; r < rows; ++r) std::copy_n(src + r * src_ld, cols, dst + r * dst_ld);
}

void stream_fence() {
#if defined(__SSE2__)
    _mm_sfence();
#endif
}

}  // namespace mha::fast
