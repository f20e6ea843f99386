/// @file softmax.hpp
/// @brief The engine's softmax of one row: mha::softmax_row(), in vectors,
///        with its own e^x.
#pragma once

#include <cstddef>

namespace mha::fast {

/// @addtogroup engine
/// @{

/// The same as mha::softmax_row() (the same policy for fully masked rows,
/// NaN and Inf), a vector of floats at a time: 8 on processors with AVX2 +
/// FMA, else 4. Its e^x is the engine's own, not std::exp: within 1e-7
/// relative of exp() in double; a score more than 87.7 below its row's
/// maximum gets exactly 0 (its true weight is under 1e-38).
/// @param row @p n scores in, @p n weights out
/// @param n   Tk, the number of keys
void softmax_row(float* row, std::size_t n);

/// The step the softmax and the tiled attention share: row[j] becomes
/// \f$e^{row_j - max}\f$, with the same e^x, and the sum is returned.
/// @param row @p n scores in, their exponentials out
/// @param n   how many
/// @param max a finite number at least every score (NaN scores give NaN)
/// @return    the sum of the exponentials
float exp_sum(float* row, std::size_t n, float max);

/// The largest of @p init and the @p n floats of @p row, a vector at a
/// time (the tiled attention's running max); NaNs are passed over, as
/// std::max(m, x) passes them, so a NaN score is left to the exponentials.
/// @param row  @p n floats
/// @param n    how many
/// @param init the max so far (not NaN)
/// @return     the max
float row_max(const float* row, std::size_t n, float init);

/// The softmax's backward for one row of weights, as the teaching core's
/// backward_stages() takes it (step 5, src/mha/backward.cpp), in vectors:
/// \f$dS_j = P_j (dP_j - \sum_k P_k dP_k)\f$ over the first @p c keys; 0
/// where @p keep masks a key (its score was the fill, a constant) and past
/// @p c (keys that the row does not see).
/// @param p    the row's weights, @p c of them read
/// @param ds   @p n floats: dL/d weights in (the first @p c), dL/d scores out
/// @param keep the row of the mask, bools read as bytes, or nullptr: no mask
/// @param c    keys computed, <= @p n
/// @param n    Tk, the number of keys
void softmax_grad_row(const float* p, float* ds, const unsigned char* keep, std::size_t c,
                      std::size_t n);

/// Tanh soft-capping of one row of scores, in place, a vector at a time:
/// \f$s \to C \tanh(s / C)\f$, and with @p derivative its
/// \f$ds'/ds = 1 - \tanh^2(s / C)\f$ (the tiled backward's). Its tanh is the
/// engine's own, from the e^x above: within 5e-7 of tanh() in double; NaN
/// stays NaN, +-inf becomes +-C.
/// @param row        @p n scores in, capped scores out
/// @param n          how many
/// @param cap        C, above 0
/// @param derivative nullptr, or @p n floats: \f$1 - \tanh^2(s / C)\f$ out
void soft_cap_row(float* row, std::size_t n, float cap, float* derivative);

/// @}

}  // namespace mha::fast
