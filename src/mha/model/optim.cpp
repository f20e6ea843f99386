// Training, 3: the two update rules.
#include "mha/model/optim.hpp"

#include <cmath>

#include "mha/shape.hpp"

namespace mha {

void Sgd::step(const std::vector<Parameter>& params) const {
    for (const Parameter& p : params)
        for (std::size_t i = 0; i < p.size; ++i) p.value[i] -= lr * p.grad[i];
}

Adam::Adam(float lr, float beta1, float beta2, float eps)
    : lr_(lr), beta1_(beta1), beta2_(beta2), eps_(eps) {
    if (!(lr > 0) || !(beta1 >= 0 && beta1 < 1) || !(beta2 >= 0 && beta2 < 1) ||
        !(eps >= 0)) {
        fail("Adam: lr must be > 0, betas in [0, 1) and eps >= 0");
    }
}

void Adam::set_lr(float lr) {
    // 0 is a rate (a schedule may end there); a negative one would climb the loss
    if (!(lr >= 0)) fail("Adam: set_lr needs lr >= 0, got " + std::to_string(lr));
    lr_ = lr;
}

void Adam::step(const std::vector<Parameter>& params, float grad_scale) {
    if (t_ == 0) {
        for (const Parameter& p : params) {
            m_.emplace_back(p.size, 0.0f);
            v_.emplace_back(p.size, 0.0f);
        }
    }
    if (params.size() != m_.size()) {
        fail("Adam: step() got " + std::to_string(params.size()) +
             " parameters, the first step " + std::to_string(m_.size()));
    }
    for (std::size_t k = 0; k < params.size(); ++k)
        if (params[k].size != m_[k].size()) {
            fail("Adam: parameter " + params[k].name + " has " +
                 std::to_string(params[k].size) + " floats, at the first step " +
                 std::to_string(m_[k].size()));
        }
    ++t_;
    const float c1 = 1.0f - std::pow(beta1_, static_cast<float>(t_));  // bias corrections
    const float c2 = 1.0f - std::pow(beta2_, static_cast<float>(t_));
    // Copies in locals: a store through p.value could otherwise change the members,
    // which then load again at every i and keep the loop from running 4 at a time.
    const float beta1 = beta1_, beta2 = beta2_, lr = lr_, eps = eps_;
    for (std::size_t k = 0; k < params.size(); ++k) {
        const Parameter& p = params[k];
        float* m = m_[k].data();
        float* v = v_[k].data();
        for (std::size_t i = 0; i < p.size; ++i) {
            const float g = grad_scale * p.grad[i];
            m[i] = beta1 * m[i] + (1 - beta1) * g;
            v[i] = beta2 * v[i] + (1 - beta2) * g * g;
            p.value[i] -= lr * (m[i] / c1) / (std::sqrt(v[i] / c2) + eps);
        }
    }
}

}  // namespace mha
