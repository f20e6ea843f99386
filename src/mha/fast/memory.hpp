/// @file memory.hpp
/// @brief The engine's memory: scratch on cache lines, and freed blocks kept
///        for the next call instead of going back to the kernel.
#pragma once

#include <cstddef>
#include <new>
#include <utility>
#include <vector>

namespace mha::fast {

/// @addtogroup engine
/// @{

/// A block of @p bytes starting on a 64-byte boundary (a cache line).
/// @param bytes the size wanted
/// @return the block; throws std::bad_alloc when there is no memory
void* line_allocate(std::size_t bytes);

/// Frees what line_allocate() returned.
/// @param p the block, or nullptr
void line_deallocate(void* p) noexcept;

/// std::allocator, but every block starts on a cache line: from plain
/// `operator new` a large block starts 16 bytes past a page, and every other
/// 32-byte load of a row or a packed panel then straddles two lines.
template <class T>
struct LineAllocator {
    using value_type = T;  ///< what it allocates
    LineAllocator() noexcept = default;
    /// The same allocator for another type (all are stateless).
    template <class U>
    LineAllocator(const LineAllocator<U>&) noexcept {}  // NOLINT: implicit
    /// @param n how many T
    /// @return room for n T
    T* allocate(std::size_t n) { return static_cast<T*>(line_allocate(n * sizeof(T))); }
    /// @param p what allocate() returned
    void deallocate(T* p, std::size_t) noexcept { line_deallocate(p); }
    /// Leaves a new element uninitialised (resize() does not clear): every
    /// buffer of the engine is written before it is read.
    /// @param p where the element lives
    template <class U>
    void construct(U* p) noexcept { (void)p; }
    /// Constructs an element from @p args, as std::allocator does.
    /// @param p    where the element lives
    /// @param args what to construct it from
    template <class U, class... Args>
    void construct(U* p, Args&&... args) {
        ::new (static_cast<void*>(p)) U(std::forward<Args>(args)...);
    }
};

/// All LineAllocators are interchangeable.
/// @return true
template <class T, class U>
bool operator==(const LineAllocator<T>&, const LineAllocator<U>&) noexcept {
    return true;
}
/// See operator==.
/// @return false
template <class T, class U>
bool operator!=(const LineAllocator<T>&, const LineAllocator<U>&) noexcept {
    return false;
}

/// Floats on a cache line: the engine's scratch and packed panels.
using Buffer = std::vector<float, LineAllocator<float>>;

/// Asks the C library, once per process, to keep freed memory for the next
/// allocation instead of handing it back to the kernel: up to 1 GiB, or
/// MHA_KEEP_MB megabytes from the environment (0 leaves the C library's own
/// policy alone). The engine calls it at its first forward, the lessons'
/// frame and the workbook's checker at their start.
///
/// Why: a fresh page costs the kernel a fault and a clearing (0.6 to 0.9 ms
/// per MB here), and glibc returns every block over 32 MiB to the kernel
/// when it is freed. A loop of forward() calls frees and asks again for the
/// same output and weights each time; without this, a forward at
/// T = 2048 spent more time faulting in its 537 MB of weights than
/// computing them. With glibc: mallopt(M_MMAP_MAX, 0) and M_TRIM_THRESHOLD;
/// other C libraries and sanitizer builds are left alone.
/// @return true when the policy is in force
bool keep_freed_memory();

/// Hands the memory kept by keep_freed_memory() back to the kernel now
/// (glibc's malloc_trim).
void release_kept_memory();

/// Copies `rows x cols` floats from @p src to @p dst with streaming stores,
/// which write whole lines to memory without reading them into the caches
/// first: for results nothing reads again until far more than a cache has
/// passed through. A plain copy where @p dst or its rows are not on 16-byte
/// boundaries, or the processor has no such stores. Call stream_fence()
/// before other threads read @p dst.
/// @param src    the block, rows @p src_ld apart
/// @param src_ld distance between rows of @p src
/// @param rows   rows of the block
/// @param cols   floats per row
/// @param dst    where it goes, rows @p dst_ld apart
/// @param dst_ld distance between rows of @p dst
void stream_rows(const float* src, std::size_t src_ld, std::size_t rows, std::size_t cols,
                 float* dst, std::size_t dst_ld);

/// Orders this thread's streaming stores before its later stores (sfence):
/// after them, a thread that sees those later stores sees these too.
void stream_fence();

/// @}

}  // namespace mha::fast
