/// @file train.hpp
/// @brief Training, 5: one training step, gradient clipping, the learning-rate schedule.
///
/// B batch, T positions, V vocabulary.
#pragma once
#include <vector>

#include "mha/model/language_model.hpp"
#include "mha/model/loss.hpp"
#include "mha/model/optim.hpp"
#include "mha/model/sequence_model.hpp"

namespace mha {

/// @addtogroup training
/// @{

/// Warm-up then cosine decay, as nanoGPT schedules its learning rate: from
/// step 1 to `warmup` the rate climbs linearly to `peak` (Adam's first steps
/// move every weight by about lr whatever its gradient, so they start small);
/// then it falls along half a cosine to `final_fraction` of peak at `total`,
/// and stays there.
struct LrSchedule {
    float peak = 1e-3f;           ///< the highest rate
    int warmup = 0;               ///< steps of linear warm-up, in [0, total]
    int total = 1;                ///< the step where the decay ends
    float final_fraction = 0.1f;  ///< the last rate over the peak, in [0, 1]
    /// @param step 1, 2, ...
    /// @return     the rate for that step, above 0 (when final_fraction is)
    /// @throws std::invalid_argument for a field out of range or step < 1.
    float at(int step) const;
};

/// The gradients' global 2-norm, \f$\sqrt{\sum_p \sum_i g_{p,i}^2}\f$, over
/// every parameter, as `torch.nn.utils.clip_grad_norm_` measures it.
/// @param params the parameters and their gradients
/// @return       the norm, accumulated in double
double grad_norm(const std::vector<Parameter>& params);

/// What `clip_grad_norm_(params, max_norm)` multiplies every gradient by:
/// `max_norm / (norm + 1e-6)` when that is below 1, else 1. One bad batch
/// then moves the weights no further than a normal one.
/// @param norm     grad_norm() of the step
/// @param max_norm the largest norm let through, above 0 (0: no clipping)
/// @return         the factor, in (0, 1]
float clip_scale(double norm, double max_norm);

/// What one step reports.
struct StepReport {
    double loss = 0;          ///< the batch's mean cross-entropy, before the update
    std::size_t correct = 0;  ///< positions whose arg-max logit was the target
    double grad_norm = 0;     ///< before clipping
    float lr = 0;             ///< the rate the update used
};

/// One training step: forward, cross-entropy against `batch.y`, backward,
/// clip, one Adam update; what `loss.backward(); clip_grad_norm_(...);
/// opt.step()` does in PyTorch, with the forward kept in @p trace so that a
/// caller can look at the attention weights it used.
/// @param m     the model, updated in place
/// @param opt   the optimizer (its lr is the step's; set_lr() between steps)
/// @param batch x `[B, T]` and the targets y `[B, T]`
/// @param trace gets the forward of @p batch (its weights before the update)
/// @param clip  the largest gradient norm let through; 0 for none
/// @param keep_weights false: through the tiled backward, no attention
///        weights held (forward()'s flag); @p trace then has none to look at
/// @param drop  dropout in the forward (forward()'s); p = 0 for none
/// @param smoothing label smoothing of the loss (cross_entropy()'s); 0 for none
/// @return      the loss, the count right, the gradient norm and the rate
/// @throws std::invalid_argument when the batch does not fit the model.
StepReport train_step(LanguageModel& m, Adam& opt, const TokenBatch& batch, ModelTrace& trace,
                      double clip = 0, bool keep_weights = true, const Dropout& drop = {},
                      double smoothing = 0);

/// The same step for lesson 19's SequenceModel.
/// @param m, opt, batch, clip as above
/// @param trace gets the forward of @p batch
/// @return      the loss, the count right, the gradient norm and the rate
StepReport train_step(SequenceModel& m, Adam& opt, const TokenBatch& batch,
                      SequenceTrace& trace, double clip = 0);

/// @}

}  // namespace mha
