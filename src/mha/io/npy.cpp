// .npy files: the header is read and checked here, byte by byte, before
// xt::load_npy is trusted with the data.
#include "mha/io/npy.hpp"

#include <algorithm>
#include <fstream>
#include <stdexcept>

#include <xtensor/xarray.hpp>
#include <xtensor/xnpy.hpp>

namespace mha {

namespace {

std::size_t item_size(const std::string& dtype) {
    if (dtype.size() < 3) return 0;
    try {
        return static_cast<std::size_t>(std::stoul(dtype.substr(2)));
    } catch (const std::exception&) {
        return 0;
    }
}

std::string dtype_name(const std::string& d) {
    if (d == "<f4") return "float32";
    if (d == "<f8") return "float64";
    if (d == "|b1") return "bool";
    if (d == "<i8") return "int64";
    if (d == "<i4") return "int32";
    return "dtype " + d;
}

void check_rank(const NpyInfo& info, const std::string& path,
                const std::string& what, std::size_t rank) {
    if (info.shape.size() != rank) {
        fail(path + ": " + what + " has shape " + shape_str(info.shape) + ", not rank " +
             std::to_string(rank));
    }
}

// Magic, version 1.0, and a header padded with spaces so that the data
// starts on a multiple of 64 bytes, ended by a newline (NumPy's format).
void write_npy(const std::string& path, const char* descr, const void* data,
               std::size_t bytes, const std::vector<std::size_t>& shape) {
    std::string dims;
    for (std::size_t i = 0; i < shape.size(); ++i)
        dims += (i > 0 ? ", " : "") + std::to_string(shape[i]);
    if (shape.size() == 1) dims += ',';  // (5,): how Python writes a 1-tuple
    std::string header = std::string("{'descr': '") + descr +
                         "', 'fortran_order': False, 'shape': (" + dims + "), }";
    const std::size_t total = (10 + header.size() + 1 + 63) / 64 * 64;
    header.append(total - 10 - header.size() - 1, ' ');
    header += '\n';
    std::ofstream f(path, std::ios::binary);
    if (!f) fail("cannot write " + path);
    const unsigned char magic[8] = {0x93, 'N', 'U', 'M', 'P', 'Y', 1, 0};
    f.write(reinterpret_cast<const char*>(magic), 8);
    const unsigned char len[2] = {static_cast<unsigned char>(header.size() & 0xff),
                                  static_cast<unsigned char>(header.size() >> 8)};
    f.write(reinterpret_cast<const char*>(len), 2);
    f.write(header.data(), static_cast<std::streamsize>(header.size()));
    f.write(static_cast<const char*>(data), static_cast<std::streamsize>(bytes));
    if (!f) fail("cannot write " + path);
}

std::size_t count(const std::vector<std::size_t>& shape) {
    std::size_t n = 1;
    for (std::size_t d : shape) n *= d;
    return n;
}

}  // namespace

void save_npy_float(const std::string& path, const float* data,
                    const std::vector<std::size_t>& shape) {
    write_npy(path, "<f4", data, count(shape) * sizeof(float), shape);
}

void save_npy_bool(const std::string& path, const bool* data,
                   const std::vector<std::size_t>& shape) {
    static_assert(sizeof(bool) == 1, "a bool .npy holds one byte per flag");
    write_npy(path, "|b1", data, count(shape), shape);
}

NpyInfo npy_info(const std::string& path) {
    std::ifstream f(path, std::ios::binary | std::ios::ate);
    if (!f) fail(path + ": cannot open the file (does it exist?)");
    const std::streamoff file_size = f.tellg();
    f.seekg(0);
    unsigned char head[10] = {};
    f.read(reinterpret_cast<char*>(head), 10);
    if (!f || std::string(reinterpret_cast<char*>(head), 6) != "\x93NUMPY") {
        fail(path + ": not a .npy file (it does not start with \\x93NUMPY)");
    }
    const unsigned major = head[6];
    std::size_t header_len = 0, data_start = 0;
    if (major == 1) {
        header_len = head[8] | (std::size_t(head[9]) << 8);
        data_start = 10 + header_len;
    } else if (major == 2 || major == 3) {
        unsigned char more[2] = {};
        f.read(reinterpret_cast<char*>(more), 2);
        header_len = head[8] | (std::size_t(head[9]) << 8) |
                     (std::size_t(more[0]) << 16) | (std::size_t(more[1]) << 24);
        data_start = 12 + header_len;
    } else {
        fail(path + ": .npy format version " + std::to_string(major) +
             " is not supported (1, 2 and 3 are)");
    }
    if (static_cast<std::streamoff>(data_start) > file_size) {
        fail(path + ": truncated inside its header");
    }
    std::string header(header_len, '\0');
    f.read(&header[0], static_cast<std::streamsize>(header_len));
    NpyInfo info;
    try {
        xt::detail::parse_header(header, info.dtype, &info.fortran_order, info.shape);
    } catch (const std::exception& e) {
        fail(path + ": bad .npy header (" + e.what() + ")");
    }
    const std::size_t item = item_size(info.dtype);
    if (item == 0) fail(path + ": unknown dtype '" + info.dtype + "'");
    // Count the bytes the shape needs, refusing sizes that overflow.
    std::size_t bytes = item;
    for (std::size_t n : info.shape) {
        if (n != 0 && bytes > (std::size_t(1) << 40) / n) {
            fail(path + ": shape " + shape_str(info.shape) + " is too large");
        }
        bytes *= n;
    }
    const std::size_t held = static_cast<std::size_t>(file_size) - data_start;
    if (held != bytes) {
        fail(path + ": " + (held < bytes ? "truncated" : "has extra bytes") + ": " +
             shape_str(info.shape) + " " + dtype_name(info.dtype) + " needs " +
             std::to_string(bytes) + " bytes, it has " + std::to_string(held));
    }
    return info;
}

xt::xarray<float> load_npy_float(const std::string& path, const std::string& what,
                                 std::size_t rank) {
    const NpyInfo info = npy_info(path);
    if (info.dtype != "<f4" && info.dtype != "<f8") {
        fail(path + ": " + what + " must be float32 or float64, not " +
             dtype_name(info.dtype));
    }
    check_rank(info, path, what, rank);
    if (info.dtype == "<f4") return xt::load_npy<float>(path);
    const xt::xarray<double> d = xt::load_npy<double>(path);
    return xt::cast<float>(d);
}

Tensor3 load_npy_tensor3(const std::string& path, const std::string& what) {
    const xt::xarray<float> x = load_npy_float(path, what, 3);
    Tensor3 t = Tensor3::from_shape({x.shape(0), x.shape(1), x.shape(2)});
    std::copy(x.begin(), x.end(), t.begin());
    return t;
}

xt::xarray<bool> load_npy_bool(const std::string& path, const std::string& what,
                               std::size_t rank) {
    const NpyInfo info = npy_info(path);
    if (info.dtype != "|b1") {
        fail(path + ": " + what + " must be bool, not " + dtype_name(info.dtype));
    }
    check_rank(info, path, what, rank);
    return xt::load_npy<bool>(path);
}

}  // namespace mha
