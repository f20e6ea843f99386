// parallel_for: one contiguous chunk per core, on threads started once.
//
// The engine does its own threading and keeps OpenBLAS to one thread: when
// OpenBLAS runs its own worker threads, they keep spinning for a while after
// each call and take the cores from ours (measured here: the (batch, head)
// loop then ran no faster on two threads than on one). The workers live as
// long as the process and sleep between calls: starting threads for every
// call cost about 70 microseconds, which a decoding step cannot spare.
#include "mha/fast/parallel.hpp"

#include <algorithm>
#include <condition_variable>
#include <cstdint>
#include <cstdlib>
#include <exception>
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

// Workers 1 .. n-1 (the caller is worker 0), waiting for the next call.
class Pool {
public:
    explicit Pool(std::size_t workers) {
        for (std::size_t w = 1; w < workers; ++w) threads_.emplace_back([this, w] { serve(w); });
    }
    ~Pool() {
        {
            std::lock_guard<std::mutex> lock(m_);
            stop_ = true;
        }
        wake_.notify_all();
        for (std::thread& t : threads_) t.join();
    }

    // body over [0, n) in `workers` contiguous parts; the caller takes the first.
    void run(std::size_t n, std::size_t workers,
             const std::function<void(std::size_t, std::size_t)>& body) {
        std::lock_guard<std::mutex> one_call_at_a_time(call_);
        {
            std::lock_guard<std::mutex> lock(m_);
            body_ = &body;
            n_ = n;
            workers_ = workers;
            pending_ = workers - 1;
            ++round_;
        }
        wake_.notify_all();
        // Whatever throws, the workers finish with body before it goes away,
        // and the first exception reaches the caller.
        std::exception_ptr error;
        t_inside = true;
        try {
            body(0, n / workers);
        } catch (...) {
            error = std::current_exception();
        }
        t_inside = false;
        std::unique_lock<std::mutex> lock(m_);
        done_.wait(lock, [this] { return pending_ == 0; });
        if (!error) error = worker_error_;
        worker_error_ = nullptr;
        if (error) std::rethrow_exception(error);
    }

private:
    void serve(std::size_t w) {
        t_inside = true;
        std::uint64_t seen = 0;
        std::unique_lock<std::mutex> lock(m_);
        for (;;) {
            wake_.wait(lock, [&] { return stop_ || round_ != seen; });
            if (stop_) return;
            seen = round_;
            if (w >= workers_) continue;  // fewer parts than workers this round
            const auto* body = body_;
            const std::size_t n = n_, workers = workers_;
            lock.unlock();
            std::exception_ptr error;
            try {
                (*body)(n * w / workers, n * (w + 1) / workers);
            } catch (...) {
                error = std::current_exception();
            }
            lock.lock();
            if (error && !worker_error_) worker_error_ = error;
            if (--pending_ == 0) done_.notify_one();
        }
    }

    std::vector<std::thread> threads_;
    std::mutex call_;  // one parallel_for at a time, whoever calls it
    std::mutex m_;
    std::condition_variable wake_, done_;
    const std::function<void(std::size_t, std::size_t)>* body_ = nullptr;
    std::size_t n_ = 0, workers_ = 0, pending_ = 0;
    std::uint64_t round_ = 0;
    bool stop_ = false;
    std::exception_ptr worker_error_;
};

Pool& pool() {
    static Pool p(worker_count());
    return p;
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
    pool().run(n, workers, body);
}

}  // namespace mha::fast
