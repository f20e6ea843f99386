/// @file loss.hpp
/// @brief Training, 2: softmax cross-entropy over a vocabulary, with its gradient.
///
/// B batch, T positions, V vocabulary size.
#pragma once

#include "mha/model/embedding.hpp"

namespace mha {

/// @addtogroup training
/// @{

/// What cross_entropy() gives: the loss, its gradient, and how many
/// positions the largest logit got right.
struct CrossEntropy {
    double loss = 0;          ///< mean over the B T positions of -log p(target)
    Tensor3 d_logits;         ///< dL/d logits `[B, T, V]`
    std::size_t correct = 0;  ///< positions whose arg-max logit is the target
};

/// `F.cross_entropy(logits.view(-1, V), targets.view(-1))`: the mean over
/// the N = B T positions of \f$-\log \mathrm{softmax}(z)_y\f$, with the
/// gradient \f$\partial L / \partial z_j = (\mathrm{softmax}(z)_j -
/// [j = y]) / N\f$. The softmax subtracts each row's max first.
/// @param logits  `[B, T, V]`
/// @param targets `[B, T]`, each in `[0, V)`
/// @return        the loss, dL/d logits and the count right
/// @throws std::invalid_argument when the shapes differ or a target is out
///         of range.
CrossEntropy cross_entropy(const Tensor3& logits, const Tokens& targets);

/// @}

}  // namespace mha
