// Tests for mha/fast/memory.hpp: the engine's buffers start on cache lines,
// and with freed memory kept a forward in a loop gets its blocks back with
// no page faults (counted by the kernel, not timed), until it is released.
#include <doctest/doctest.h>

#include <cstdint>
#include <fstream>
#include <thread>
#include <vector>

#include <sys/resource.h>
#include <unistd.h>

#include "mha/attention.hpp"
#include "mha/fast/memory.hpp"

namespace {

bool on_a_line(const void* p) { return reinterpret_cast<std::uintptr_t>(p) % 64 == 0; }

long minor_faults() {
    rusage ru{};
    getrusage(RUSAGE_SELF, &ru);
    return ru.ru_minflt;
}

double resident_mb() {
    std::ifstream statm("/proc/self/statm");
    long pages = 0, resident = 0;
    statm >> pages >> resident;
    return double(resident) * double(sysconf(_SC_PAGESIZE)) / 1e6;
}

// A forward whose weights [1, 16, 1024, 1024] are 64 MiB: over the 32 MiB
// that glibc serves from its heap on its own.
struct BigWeights {
    mha::Rng rng{7};
    mha::MultiHeadAttention m{16, 16, mha::Init::xavier(7)};
    mha::Tensor3 x = mha::randn(1, 1024, 16, rng);
    void forward_and_free() { (void)m.forward(x, x, x); }
};

}  // namespace

TEST_CASE("memory: engine buffers start on a cache line, whatever their size") {
    for (std::size_t n : {1, 3, 17, 1000, 4097, 300000, 1 << 21}) {
        CAPTURE(n);
        const mha::fast::Buffer b(n, 1.5f);
        CHECK(on_a_line(b.data()));
        CHECK(b[n - 1] == 1.5f);  // constructed from a value, not left unset
    }
    std::vector<std::thread> threads;
    std::vector<int> ok(4, 0);
    for (int t = 0; t < 4; ++t)
        threads.emplace_back([&ok, t] {
            for (std::size_t n = 1; n < 5000; n += 37) {
                mha::fast::Buffer b;
                b.resize(n);
                ok[t] += on_a_line(b.data());
            }
        });
    for (auto& t : threads) t.join();
    for (int t = 0; t < 4; ++t) CHECK(ok[t] == 136);
}

TEST_CASE("memory: a forward in a loop gets its 64 MiB of weights back without faults") {
    if (!mha::fast::keep_freed_memory()) {
        MESSAGE("freed memory is not kept here (MHA_KEEP_MB=0, a sanitizer build, or "
                "not glibc): nothing to test");
        return;
    }
    BigWeights big;
    big.forward_and_free();  // the first call faults its pages in
    const long before = minor_faults();
    big.forward_and_free();
    const long faults = minor_faults() - before;
    CAPTURE(faults);
    // Fresh, the weights alone are 16384 pages of 4 KiB.
    CHECK(faults < 2000);
}

TEST_CASE("memory: release_kept_memory hands the kept blocks back") {
    if (!mha::fast::keep_freed_memory()) {
        MESSAGE("freed memory is not kept here: nothing to test");
        return;
    }
    BigWeights big;
    big.forward_and_free();
    const double kept = resident_mb();
    mha::fast::release_kept_memory();
    const double released = resident_mb();
    CAPTURE(kept);
    CAPTURE(released);
    CHECK(kept - released > 32.0);  // most of the 67 MB of weights
}

TEST_CASE("memory: the heap does not grow call after call (blocks of one size fit again)") {
    if (!mha::fast::keep_freed_memory()) {
        MESSAGE("freed memory is not kept here: nothing to test");
        return;
    }
    // Each call takes 16.8 MB of chunk rows and frees them. With aligned
    // new (memalign) the freed block was just too small for the next
    // request: resident memory rose by about that much on most calls.
    mha::Rng rng(8);
    const mha::MultiHeadAttention m(512, 8, mha::Init::xavier(8));
    const mha::Tensor3 x = mha::randn(1, 2048, 512, rng);
    for (int i = 0; i < 2; ++i) (void)m.forward_no_weights(x, x, x, mha::causal);
    const double settled = resident_mb();
    for (int i = 0; i < 6; ++i) (void)m.forward_no_weights(x, x, x, mha::causal);
    const double later = resident_mb();
    CAPTURE(settled);
    CAPTURE(later);
    CHECK(later - settled < 8.0);
}
