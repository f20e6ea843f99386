// parallel_for with std::thread: one contiguous chunk per core.
//
// The engine does its own threading and keeps OpenBLAS to one thread: when
// OpenBLAS runs its own worker threads, they keep spinning for a while after
// each call and take the cores from ours (measured here: the (batch, head)
// loop then ran no faster on two threads than on one).
#include "mha/fast/parallel.hpp"

#include <algorithm>
#include <cstdlib>
#include <mutex>
#include <thread>
#include <vector>

// OpenBLAS's thread control, declared weak: with another BLAS it is null
// and the BLAS is left alone.
extern "C" void openblas_set_num_threads(int) __attribute__((weak));

namespace mha::fast {

namespace {

thread_local bool t_inside = false;  // already one of parallel_for's workers

std::size_t core_count() {
    std::size_t cores = std::max(1u, std::thread::hardware_concurrency());
    if (const char* env = std::getenv("MHA_THREADS")) {
        cores = static_cast<std::size_t>(std::max(1, std::atoi(env)));
    }
    return cores;
}

}  // namespace

std::size_t worker_count() {
    static const std::size_t n = core_count();
    return n;
}

void parallel_for(std::size_t n,
                  const std::function<void(std::size_t, std::size_t)>& body) {
    static std::once_flag blas_once;
    std::call_once(blas_once, [] {
        if (openblas_set_num_threads) openblas_set_num_threads(1);
    });
    const std::size_t workers = std::min(worker_count(), n);
    if (workers <= 1 || t_inside) {  // nested: run in this worker
        body(0, n);
        return;
    }
    auto run = [&body](std::size_t begin, std::size_t end) {
        t_inside = true;
        body(begin, end);
        t_inside = false;
    };
    std::vector<std::thread> threads;
    for (std::size_t w = 1; w < workers; ++w)
        threads.emplace_back(run, n * w / workers, n * (w + 1) / workers);
    run(0, n / workers);  // this thread takes the first chunk
    for (std::thread& t : threads) t.join();
}

}  // namespace mha::fast
