// Tests for mha/memory.hpp: the tensors' allocator keeps large freed blocks
// and gives them back for the same size, within its limit.
#include <doctest/doctest.h>

#include <cstdint>
#include <thread>
#include <utility>
#include <vector>

#include "mha/init.hpp"
#include "mha/memory.hpp"
#include "mha/shape.hpp"

namespace {

constexpr std::size_t kMiB = std::size_t{1} << 20;

// Sets a limit for one test and puts the old one back, with nothing kept.
struct Limit {
    std::size_t old = mha::kept_limit_bytes();
    explicit Limit(std::size_t bytes) {
        mha::release_kept_blocks();
        mha::set_kept_limit_bytes(bytes);
    }
    ~Limit() {
        mha::release_kept_blocks();
        mha::set_kept_limit_bytes(old);
    }
};

}  // namespace

TEST_CASE("memory: a freed large block comes back for the same size only") {
    const Limit limit(64 * kMiB);
    void* a = mha::reuse_allocate(2 * kMiB);
    mha::reuse_deallocate(a, 2 * kMiB);
    CHECK(mha::kept_bytes() == 2 * kMiB);
    void* other = mha::reuse_allocate(3 * kMiB);  // larger: fresh
    CHECK(other != a);
    CHECK(mha::kept_bytes() == 2 * kMiB);
    void* smaller = mha::reuse_allocate(kMiB);  // smaller: fresh as well
    CHECK(smaller != a);
    CHECK(mha::kept_bytes() == 2 * kMiB);
    mha::reuse_deallocate(smaller, kMiB);
    CHECK(mha::kept_bytes() == 3 * kMiB);
    void* again = mha::reuse_allocate(2 * kMiB);
    CHECK(again == a);
    CHECK(mha::kept_bytes() == kMiB);
    mha::reuse_deallocate(again, 2 * kMiB);
    mha::reuse_deallocate(other, 3 * kMiB);
    CHECK(mha::kept_bytes() == 6 * kMiB);
    mha::release_kept_blocks();
    CHECK(mha::kept_bytes() == 0);
}

TEST_CASE("memory: every block starts on a cache line, fresh or kept") {
    const Limit limit(64 * kMiB);
    auto line_offset = [](const void* p) { return reinterpret_cast<std::uintptr_t>(p) % 64; };
    std::vector<std::pair<void*, std::size_t>> blocks;
    // Small ones from the heap's bins, large ones from their own pages.
    for (std::size_t bytes : {std::size_t{4}, std::size_t{100}, std::size_t{4100},
                              std::size_t{200000}, kMiB, 3 * kMiB + 4}) {
        CAPTURE(bytes);
        void* p = mha::reuse_allocate(bytes);
        CHECK(line_offset(p) == 0);
        blocks.emplace_back(p, bytes);
    }
    for (const auto& b : blocks) mha::reuse_deallocate(b.first, b.second);
    void* kept = mha::reuse_allocate(3 * kMiB + 4);  // comes back from the list
    CHECK(line_offset(kept) == 0);
    mha::reuse_deallocate(kept, 3 * kMiB + 4);
    const mha::Tensor3 t = mha::Tensor3::from_shape({2, 3, 5});  // odd sizes
    CHECK(line_offset(t.data()) == 0);
}

TEST_CASE("memory: small blocks are not kept, and the oldest go past the limit") {
    const Limit limit(5 * kMiB);
    void* small = mha::reuse_allocate(kMiB - 1);
    mha::reuse_deallocate(small, kMiB - 1);
    CHECK(mha::kept_bytes() == 0);
    void* big = mha::reuse_allocate(6 * kMiB);  // over the limit: not kept
    mha::reuse_deallocate(big, 6 * kMiB);
    CHECK(mha::kept_bytes() == 0);
    void* first = mha::reuse_allocate(2 * kMiB);
    void* second = mha::reuse_allocate(3 * kMiB);
    void* third = mha::reuse_allocate(2 * kMiB + 4096);
    mha::reuse_deallocate(first, 2 * kMiB);
    mha::reuse_deallocate(second, 3 * kMiB);       // 5 MiB kept: at the limit
    mha::reuse_deallocate(third, 2 * kMiB + 4096);  // first goes, then second
    CHECK(mha::kept_bytes() == 2 * kMiB + 4096);
}

TEST_CASE("memory: a limit of 0 keeps nothing, and tensors still work") {
    const Limit limit(0);
    mha::Rng rng(3);
    {
        const mha::Tensor3 x = mha::randn(4, 256, 512, rng);  // 2 MiB
        CHECK(x.size() == 4 * 256 * 512);
    }
    CHECK(mha::kept_bytes() == 0);
}

TEST_CASE("memory: tensors of one shape reuse one block, from several threads") {
    const Limit limit(256 * kMiB);
    const float* first = nullptr;
    {
        const auto t = mha::Tensor3::from_shape({4, 256, 512});
        first = t.data();
    }
    const auto again = mha::Tensor3::from_shape({4, 256, 512});
    CHECK(again.data() == first);
    // Two threads allocating and freeing two sizes: the kept total stays
    // within the limit and every block is either in use or kept.
    auto churn = [](std::size_t rows) {
        for (int i = 0; i < 200; ++i) {
            auto t = mha::Tensor2::from_shape({rows, 1024});
            t(rows - 1, 1023) = 1.0f;  // touch the last element
        }
    };
    std::thread other(churn, 300);
    churn(500);
    other.join();
    CHECK(mha::kept_bytes() <= 256 * kMiB);
    CHECK(mha::kept_bytes() == (300 + 500) * 1024 * sizeof(float));
}
