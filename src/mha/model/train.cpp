// Training, 5: the step every training lesson runs, clipping and the schedule.
//
// B batch, T positions, V vocabulary.
#include "mha/model/train.hpp"

#include <cmath>
#include <string>

#include "mha/fast/dense.hpp"

namespace mha {

float LrSchedule::at(int step) const {
    if (!(peak > 0) || warmup < 0 || total < 1 || warmup > total ||
        !(final_fraction >= 0 && final_fraction <= 1))
        fail("LrSchedule: needs peak > 0, 0 <= warmup <= total, total >= 1, final_fraction "
             "in [0, 1]; got peak " + std::to_string(peak) + ", warmup " +
             std::to_string(warmup) + ", total " + std::to_string(total) +
             ", final_fraction " + std::to_string(final_fraction));
    if (step < 1) fail("LrSchedule: steps count from 1, got step " + std::to_string(step));
    if (step <= warmup) return peak * float(step) / float(warmup);  // step >= 1: never 0
    if (step >= total) return peak * final_fraction;
    const double done = double(step - warmup) / double(total - warmup);  // in (0, 1)
    const double cosine = 0.5 * (1.0 + std::cos(M_PI * done));           // 1 -> 0
    return float(peak * (final_fraction + (1.0 - final_fraction) * cosine));
}

double grad_norm(const std::vector<Parameter>& params) {
    double sum = 0;
    for (const Parameter& p : params)
        for (std::size_t i = 0; i < p.size; ++i) sum += double(p.grad[i]) * p.grad[i];
    return std::sqrt(sum);
}

float clip_scale(double norm, double max_norm) {
    if (max_norm < 0) fail("clip_scale: max_norm must be >= 0, got " + std::to_string(max_norm));
    if (max_norm == 0) return 1.0f;
    const double scale = max_norm / (norm + 1e-6);  // PyTorch's 1e-6
    return scale < 1.0 ? float(scale) : 1.0f;
}

namespace {

// The part both models share once their gradients exist.
StepReport update(Adam& opt, const std::vector<Parameter>& params, const CrossEntropy& ce,
                  double clip) {
    StepReport r;
    r.loss = ce.loss;
    r.correct = ce.correct;
    r.grad_norm = grad_norm(params);
    r.lr = opt.lr();
    opt.step(params, clip_scale(r.grad_norm, clip));
    return r;
}

}  // namespace

StepReport train_step(LanguageModel& m, Adam& opt, const TokenBatch& batch, ModelTrace& trace,
                      double clip, bool keep_weights, const Dropout& drop, double smoothing) {
    trace = ModelTrace();  // the last step's goes first: its weights, at long T, are large
    trace = forward(m, batch.x, keep_weights, drop);              // logits [B, T, V]
    const CrossEntropy ce = fast::cross_entropy(trace.logits, batch.y, smoothing);  // d_logits
    const ModelGrads g = backward(m, trace, batch.x, ce.d_logits);
    return update(opt, parameters(m, g), ce, clip);
}

StepReport train_step(SequenceModel& m, Adam& opt, const TokenBatch& batch,
                      SequenceTrace& trace, double clip) {
    trace = forward(m, batch.x);
    const CrossEntropy ce = cross_entropy(trace.logits, batch.y);
    const SequenceGrads g = backward(m, trace, batch.x, ce.d_logits);
    return update(opt, parameters(m, g), ce, clip);
}

}  // namespace mha
