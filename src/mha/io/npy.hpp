/// @file npy.hpp
/// @brief NumPy `.npy` files in and out, checked before they are trusted.
#pragma once

#include <string>
#include <vector>

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

/// A bool array (dtype `|b1`) of the given rank.
/// @param path the file
/// @param what how to name it in errors, e.g. "key_padding_mask [B, Tk]"
/// @param rank the rank it must have
/// @return the flags, row-major, and their shape
/// @throws std::invalid_argument for any other dtype or rank.
xt::xarray<bool> load_npy_bool(const std::string& path, const std::string& what,
                               std::size_t rank);

/// Writes @p t as float32, C order, so that `np.load` opens it.
/// @param path the file to write
/// @param t    a tensor of any rank (bool masks are written as 0.0 / 1.0)
/// @throws std::invalid_argument when the file cannot be written.
template <class T>
void save_npy(const std::string& path, const T& t);

/// @}

}  // namespace mha

#include "mha/io/npy_save.hpp"
