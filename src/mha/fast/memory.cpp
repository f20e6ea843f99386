// The engine's memory: blocks on cache lines, and glibc asked to keep what
// is freed (see memory.hpp for why).
#include "mha/fast/memory.hpp"

#include <algorithm>
#include <cstdlib>

#if defined(__GLIBC__)
#include <malloc.h>
#endif

namespace mha::fast {

namespace {

constexpr std::align_val_t kLine{64};

}  // namespace

void* line_allocate(std::size_t bytes) { return ::operator new(bytes, kLine); }

void line_deallocate(void* p) noexcept { ::operator delete(p, kLine); }

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

}  // namespace mha::fast
