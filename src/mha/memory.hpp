/// @file memory.hpp
/// @brief The allocator behind the core's tensors: large blocks are kept
///        for reuse instead of going back to the kernel.
#pragma once

#include <cstddef>

namespace mha {

/// @addtogroup shapes
/// @{

/// A block of @p bytes: a kept block of exactly that size when there is one
/// (for blocks of 1 MiB and more), else fresh memory from `operator new`.
/// Either way it starts on a 64-byte boundary (a cache line).
/// @param bytes the size wanted
/// @return the block; throws std::bad_alloc when there is no memory
void* reuse_allocate(std::size_t bytes);

/// Gives a block back. A block of 1 MiB or more is kept for the next
/// reuse_allocate() of the same size, while the kept blocks total at most
/// kept_limit_bytes() (the oldest go first); smaller ones are freed.
/// @param p     what reuse_allocate() returned
/// @param bytes the size it was asked for
void reuse_deallocate(void* p, std::size_t bytes) noexcept;

/// The most memory kept for reuse: 1 GiB, or the environment variable
/// MHA_KEEP_MB (0 keeps nothing), or what set_kept_limit_bytes() set.
/// Builds with sanitizers start at 0, so that every block is really freed
/// where the sanitizer can see it.
/// @return bytes
std::size_t kept_limit_bytes();

/// Changes the limit; blocks already kept stay until the next free.
/// @param bytes the new limit, 0 to keep nothing
void set_kept_limit_bytes(std::size_t bytes);

/// @return how many bytes are kept for reuse right now
std::size_t kept_bytes();

/// Frees every kept block: hands the memory back to the system.
void release_kept_blocks();

/// Why keep blocks: a fresh page costs the kernel a fault and a clearing
/// (0.6 to 0.9 ms per MB here), and glibc hands large freed blocks back to
/// the kernel. A loop of forward() calls of one shape frees and asks again
/// for the same sizes each time, so with this allocator its output and
/// weights come back without faults. Like std::allocator otherwise.
template <class T>
struct ReuseAllocator {
    using value_type = T;  ///< what it allocates
    ReuseAllocator() noexcept = default;
    /// The same allocator for another type (all are stateless).
    template <class U>
    ReuseAllocator(const ReuseAllocator<U>&) noexcept {}  // NOLINT: implicit
    /// @param n how many T
    /// @return room for n T
    T* allocate(std::size_t n) { return static_cast<T*>(reuse_allocate(n * sizeof(T))); }
    /// @param p what allocate() returned
    /// @param n the n it was given
    void deallocate(T* p, std::size_t n) noexcept { reuse_deallocate(p, n * sizeof(T)); }
};

/// All ReuseAllocators share one pool: any of them frees what another made.
/// @return true
template <class T, class U>
bool operator==(const ReuseAllocator<T>&, const ReuseAllocator<U>&) noexcept {
    return true;
}
/// See operator==.
/// @return false
template <class T, class U>
bool operator!=(const ReuseAllocator<T>&, const ReuseAllocator<U>&) noexcept {
    return false;
}

/// @}

}  // namespace mha
