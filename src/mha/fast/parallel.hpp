/// @file parallel.hpp
/// @brief The engine's threads: independent work spread over the cores.
#pragma once

#include <cstddef>
#include <functional>

namespace mha::fast {

/// @addtogroup engine
/// @{

/// Runs `body(begin, end)` over [0, n) cut into one contiguous chunk per
/// worker thread (worker_count(), at most n), and returns when all are done.
/// The chunks must be independent. Called from inside a worker, it runs the
/// whole range in that worker. From the first call on, OpenBLAS is kept to
/// one thread: the engine splits the work itself (see gemm()).
/// @param n    how many items, e.g. B * H (batch, head) pairs
/// @param body called once per chunk with its [begin, end)
void parallel_for(std::size_t n,
                  const std::function<void(std::size_t, std::size_t)>& body);

/// The number of worker threads: the machine's cores, or the environment
/// variable MHA_THREADS when it is set.
/// @return at least 1
std::size_t worker_count();

/// @}

}  // namespace mha::fast
