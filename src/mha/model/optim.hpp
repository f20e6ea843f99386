/// @file optim.hpp
/// @brief Training, 3: plain SGD and Adam over named parameter tensors.
#pragma once

#include <string>
#include <vector>

namespace mha {

/// @addtogroup training
/// @{

/// One parameter tensor and its gradient, seen as flat floats: what an
/// optimizer updates (`model.parameters()` with each `.grad`).
struct Parameter {
    std::string name;   ///< e.g. "wq.weight"
    float* value;       ///< the tensor's data, updated in place
    const float* grad;  ///< dL/d value, as many floats
    std::size_t size;   ///< how many floats
};

/// `torch.optim.SGD(params, lr)`: \f$w \leftarrow w - \eta\, g\f$.
struct Sgd {
    float lr;  ///< \f$\eta\f$

    /// One update of every parameter from its gradient.
    /// @param params the parameters and their gradients
    void step(const std::vector<Parameter>& params) const;
};

/// `torch.optim.Adam(params, lr, betas, eps)`. At step t, for each entry:
/// \f$m \leftarrow \beta_1 m + (1-\beta_1) g\f$,
/// \f$v \leftarrow \beta_2 v + (1-\beta_2) g^2\f$,
/// \f$w \leftarrow w - \eta\, \hat m / (\sqrt{\hat v} + \epsilon)\f$ with
/// \f$\hat m = m / (1-\beta_1^t)\f$, \f$\hat v = v / (1-\beta_2^t)\f$.
/// Each entry's step is about \f$\eta\f$ whatever its gradient's scale.
class Adam {
public:
    /// @param lr    \f$\eta\f$, above 0
    /// @param beta1 \f$\beta_1\f$ in [0, 1)
    /// @param beta2 \f$\beta_2\f$ in [0, 1)
    /// @param eps   \f$\epsilon\f$, at least 0
    /// @throws std::invalid_argument for a value out of range.
    explicit Adam(float lr, float beta1 = 0.9f, float beta2 = 0.999f, float eps = 1e-8f);

    /// One update. The first call fixes the parameters' count and sizes.
    /// @param params the parameters and their gradients, in the same order
    ///               every step
    /// @param grad_scale every gradient is read times this: what
    ///               `clip_grad_norm_` leaves in `.grad` (train.hpp's clip_scale())
    /// @throws std::invalid_argument when they differ from the first call's.
    void step(const std::vector<Parameter>& params, float grad_scale = 1.0f);
    /// @return \f$\eta\f$, the learning rate of the next step
    float lr() const { return lr_; }
    /// What a learning-rate schedule changes between steps.
    /// @param lr the new \f$\eta\f$, at least 0 (0: the step changes nothing)
    void set_lr(float lr);

    /// @return t, the steps taken
    int steps() const { return t_; }
    /// @param i the parameter's index in step()'s list
    /// @return  its first moment m, flat
    const std::vector<float>& first_moment(std::size_t i) const { return m_.at(i); }
    /// @param i the parameter's index in step()'s list
    /// @return  its second moment v, flat
    const std::vector<float>& second_moment(std::size_t i) const { return v_.at(i); }

private:
    float lr_, beta1_, beta2_, eps_;
    int t_ = 0;
    std::vector<std::vector<float>> m_, v_;
};

/// @}

}  // namespace mha
