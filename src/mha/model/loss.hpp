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
///
/// With label smoothing \f$\varepsilon\f$ (`label_smoothing=` in PyTorch)
/// the target is no longer all on y: \f$1 - \varepsilon\f$ on y and
/// \f$\varepsilon\f$ spread evenly over the V tokens, so the loss is
/// \f$(1 - \varepsilon)(-\log p_y) + \varepsilon \cdot
/// \frac{1}{V}\sum_j -\log p_j\f$ and the gradient \f$(p_j - (1 -
/// \varepsilon)[j = y] - \varepsilon / V) / N\f$. A model is then never
/// paid to be certain, which a small text would otherwise teach it.
/// @param logits    `[B, T, V]`
/// @param targets   `[B, T]`, each in `[0, V)`
/// @param smoothing \f$\varepsilon\f$ in [0, 1); 0 is the plain loss
/// @return          the loss, dL/d logits and the count right
/// @throws std::invalid_argument when the shapes differ, a target is out
///         of range or the smoothing is outside [0, 1).
CrossEntropy cross_entropy(const Tensor3& logits, const Tokens& targets, double smoothing = 0);

/// @}

}  // namespace mha
