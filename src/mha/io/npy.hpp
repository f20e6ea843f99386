/// @file npy.hpp
/// @brief NumPy `.npy` files in and out, checked before they are trusted.
#pragma once

#include <cstdint>
#include <string>
#include <type_traits>
#include <vector>

#include <xtensor/xarray.hpp>

#include "mha/shape.hpp"

namespace mha {

/// @defgroup io I/O: NumPy files and PyTorch state_dicts
/// @brief `.npy` files in and out, `nn.MultiheadAttention`'s weights and
///        masks.
///
/// Every `.npy` file is checked first: the magic string, the header, the dtype,
/// and that the file really holds as many bytes as its shape says. A bad
/// file throws std::invalid_argument naming the file and what is wrong.
/// @{

/// What a `.npy` header says.
struct NpyInfo {
    std::string dtype;               ///< e.g. "<f4", "<f8", "|b1"
    std::vector<std::size_t> shape;  ///< e.g. [2, 5, 8]
    bool fortran_order = false;      ///< column-major data
};

/// Reads and checks the header of @p path (nothing else is loaded).
/// @param path the file
/// @return its dtype, shape and order
/// @throws std::invalid_argument for a missing file, a wrong magic string,
///         a bad header, or a file shorter or longer than its shape says.
NpyInfo npy_info(const std::string& path);

/// A float array of any rank from a float32 file; a float64 file is
/// converted to float32, and Fortran order is read correctly.
/// @param path the file
/// @param what how to name it in errors, e.g. "query [B, Tq, E]"
/// @param rank the rank it must have
/// @return the numbers, row-major, and their shape
/// @throws std::invalid_argument for any other dtype or rank.
xt::xarray<float> load_npy_float(const std::string& path, const std::string& what,
                                 std::size_t rank);

/// load_npy_float() of a rank-3 file, as a Tensor3: an input `[B, T, E]`.
/// @param path the file
/// @param what how to name it in errors, e.g. "query [B, T, E]"
/// @return the numbers, row-major
/// @throws std::invalid_argument as load_npy_float() does.
Tensor3 load_npy_tensor3(const std::string& path, const std::string& what);

/// Whether @p path opens for reading: a folder's optional file is there.
/// @param path the file
/// @return true when it can be read
bool file_exists(const std::string& path);

/// A bool array (dtype `|b1`) of the given rank.
/// @param path the file
/// @param what how to name it in errors, e.g. "key_padding_mask [B, Tk]"
/// @param rank the rank it must have
/// @return the flags, row-major, and their shape
/// @throws std::invalid_argument for any other dtype or rank.
xt::xarray<bool> load_npy_bool(const std::string& path, const std::string& what,
                               std::size_t rank);

/// An integer array from an int64 file (`torch.long`, NumPy's default) or
/// an int32 one: token ids.
/// @param path the file
/// @param what how to name it in errors, e.g. "tokens [B, T]"
/// @param rank the rank it must have
/// @return the numbers, row-major, and their shape
/// @throws std::invalid_argument for any other dtype (float files are
///         refused, not rounded) or rank.
xt::xarray<std::int64_t> load_npy_int(const std::string& path, const std::string& what,
                                      std::size_t rank);

/// Writes @p n floats of shape @p shape as a float32 `.npy` file, C order.
/// @param path  the file to write
/// @param data  the numbers, row-major
/// @param shape their shape (its product is the count)
/// @throws std::invalid_argument when the file cannot be written.
void save_npy_float(const std::string& path, const float* data,
                    const std::vector<std::size_t>& shape);

/// The same for flags: a bool `.npy` file (dtype `|b1`), as PyTorch and
/// NumPy save masks.
/// @param path  the file to write
/// @param data  the flags, row-major
/// @param shape their shape
/// @throws std::invalid_argument when the file cannot be written.
void save_npy_bool(const std::string& path, const bool* data,
                   const std::vector<std::size_t>& shape);

/// Writes @p t as `np.load` opens it: float32 for numbers, bool for a mask.
/// @param path the file to write
/// @param t    a contiguous tensor of any rank, float or bool
/// @throws std::invalid_argument when the file cannot be written.
template <class T>
void save_npy(const std::string& path, const T& t) {
    const std::vector<std::size_t> shape(t.shape().begin(), t.shape().end());
    if constexpr (std::is_same<typename T::value_type, bool>::value) {
        save_npy_bool(path, t.data(), shape);
    } else {
        save_npy_float(path, t.data(), shape);
    }
}

/// @}

}  // namespace mha
