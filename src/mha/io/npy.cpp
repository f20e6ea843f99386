// .npy files, read here byte by byte: the header parsed strictly, the size
// checked against the shape, the data converted with no undefined
// behaviour (fuzz/npy_fuzzer.cpp holds it to that).
#include "mha/io/npy.hpp"

#include <algorithm>
#include <limits>
#include <fstream>
#include <stdexcept>

#include <xtensor/xarray.hpp>
#include <xtensor/xmanipulation.hpp>

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

namespace {

// The header of a .npy file is the text of a Python dict, e.g.
//   {'descr': '<f4', 'fortran_order': False, 'shape': (2, 5, 8), }
// padded with spaces and ended by a newline. Parsed here strictly, every
// byte checked: the three keys once each, nothing else.
struct HeaderParser {
    const std::string& text;
    const std::string& path;
    std::size_t at = 0;

    [[noreturn]] void bad(const std::string& why) const {
        fail(path + ": bad .npy header (" + why + ")");
    }
    void skip_spaces() {
        while (at < text.size() && (text[at] == ' ' || text[at] == '\t')) ++at;
    }
    bool take(char c) {
        skip_spaces();
        if (at < text.size() && text[at] == c) {
            ++at;
            return true;
        }
        return false;
    }
    void expect(char c) {
        if (!take(c)) bad(std::string("expected '") + c + "' at byte " + std::to_string(at));
    }
    std::string quoted() {
        skip_spaces();
        if (at >= text.size() || (text[at] != '\'' && text[at] != '"')) bad("expected a string");
        const char q = text[at++];
        const std::size_t end = text.find(q, at);
        if (end == std::string::npos || end - at > 64) bad("a string that does not end");
        std::string s = text.substr(at, end - at);
        at = end + 1;
        return s;
    }
    bool boolean() {
        skip_spaces();
        for (const char* word : {"True", "False"}) {
            const std::string w = word;
            if (text.compare(at, w.size(), w) == 0) {
                at += w.size();
                return w == "True";
            }
        }
        bad("fortran_order must be True or False");
    }
    std::size_t whole() {
        skip_spaces();
        std::size_t n = 0, digits = 0;
        while (at < text.size() && text[at] >= '0' && text[at] <= '9') {
            n = n * 10 + std::size_t(text[at++] - '0');
            if (++digits > 13) bad("a dimension over 10^13");
        }
        if (digits == 0) bad("a dimension that is not a whole number");
        return n;
    }
    std::vector<std::size_t> tuple() {
        expect('(');
        std::vector<std::size_t> dims;
        while (!take(')')) {
            if (dims.size() == 32) bad("more than 32 dimensions");
            dims.push_back(whole());
            if (take(')')) break;
            expect(',');
        }
        return dims;
    }
    NpyInfo parse() {
        NpyInfo info;
        bool seen[3] = {false, false, false};
        expect('{');
        while (!take('}')) {
            const std::string key = quoted();
            expect(':');
            const int k = key == "descr" ? 0 : key == "fortran_order" ? 1 : key == "shape" ? 2 : -1;
            if (k < 0) bad("unknown key '" + key + "'");
            if (seen[k]) bad("key '" + key + "' twice");
            seen[k] = true;
            if (k == 0) info.dtype = quoted();
            if (k == 1) info.fortran_order = boolean();
            if (k == 2) info.shape = tuple();
            if (take('}')) break;
            expect(',');
        }
        if (!seen[0] || !seen[1] || !seen[2]) bad("descr, fortran_order and shape are needed");
        while (at < text.size() && (text[at] == ' ' || text[at] == '\n')) ++at;
        if (at != text.size()) bad("bytes after the dict");
        return info;
    }
};

// The header of @p path, checked against the file's size; @p data_start
// gets where the numbers begin.
NpyInfo read_header(const std::string& path, std::size_t& data_start) {
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
    std::size_t header_len = 0;
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
    if (!f || static_cast<std::streamoff>(data_start) > file_size) {
        fail(path + ": truncated inside its header");
    }
    std::string header(header_len, '\0');
    f.read(&header[0], static_cast<std::streamsize>(header_len));
    const NpyInfo info = HeaderParser{header, path}.parse();
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

// The numbers of @p path as T, row-major whatever the file's order. Each
// element is read by @p convert from its bytes.
template <class T, class Raw, class Convert>
xt::xarray<T> read_data(const std::string& path, const NpyInfo& info, std::size_t data_start,
                        Convert convert) {
    std::size_t n = 1;
    for (std::size_t d : info.shape) n *= d;
    std::vector<Raw> raw(n);
    std::ifstream f(path, std::ios::binary);
    f.seekg(static_cast<std::streamoff>(data_start));
    f.read(reinterpret_cast<char*>(raw.data()), static_cast<std::streamsize>(n * sizeof(Raw)));
    if (!f && n > 0) fail(path + ": could not read its data");
    std::vector<std::size_t> shape = info.shape;
    if (info.fortran_order) std::reverse(shape.begin(), shape.end());
    xt::xarray<T> a = xt::xarray<T>::from_shape(shape);
    for (std::size_t i = 0; i < n; ++i) a.data()[i] = convert(raw[i], i);
    if (info.fortran_order) return xt::transpose(a);  // column-major: reversed axes
    return a;
}

xt::xarray<float> read_floats(const std::string& path, const NpyInfo& info,
                              std::size_t data_start) {
    if (info.dtype == "<f4") {
        return read_data<float, float>(path, info, data_start, [](float x, std::size_t) { return x; });
    }
    // float64 -> float32 as NumPy's astype does: out of range becomes +-inf
    // (a plain conversion would be undefined behaviour)
    return read_data<float, double>(path, info, data_start, [](double x, std::size_t) {
        constexpr double top = std::numeric_limits<float>::max();
        if (x > top) return std::numeric_limits<float>::infinity();
        if (x < -top) return -std::numeric_limits<float>::infinity();
        return static_cast<float>(x);
    });
}

}  // namespace

NpyInfo npy_info(const std::string& path) {
    std::size_t data_start = 0;
    return read_header(path, data_start);
}

xt::xarray<float> load_npy_float(const std::string& path, const std::string& what,
                                 std::size_t rank) {
    std::size_t data_start = 0;
    const NpyInfo info = read_header(path, data_start);
    if (info.dtype != "<f4" && info.dtype != "<f8") {
        fail(path + ": " + what + " must be float32 or float64, not " +
             dtype_name(info.dtype));
    }
    check_rank(info, path, what, rank);
    return read_floats(path, info, data_start);
}

bool file_exists(const std::string& path) { return std::ifstream(path).good(); }

Tensor3 load_npy_tensor3(const std::string& path, const std::string& what) {
    const xt::xarray<float> x = load_npy_float(path, what, 3);
    Tensor3 t = Tensor3::from_shape({x.shape(0), x.shape(1), x.shape(2)});
    std::copy(x.begin(), x.end(), t.begin());
    return t;
}

xt::xarray<std::int64_t> load_npy_int(const std::string& path, const std::string& what,
                                      std::size_t rank) {
    std::size_t data_start = 0;
    const NpyInfo info = read_header(path, data_start);
    if (info.dtype != "<i8" && info.dtype != "<i4") {
        fail(path + ": " + what + " must be int64 or int32, not " + dtype_name(info.dtype));
    }
    check_rank(info, path, what, rank);
    if (info.dtype == "<i4") {
        return read_data<std::int64_t, std::int32_t>(path, info, data_start,
                                                     [](std::int32_t x, std::size_t) { return x; });
    }
    return read_data<std::int64_t, std::int64_t>(path, info, data_start,
                                                 [](std::int64_t x, std::size_t) { return x; });
}

xt::xarray<bool> load_npy_bool(const std::string& path, const std::string& what,
                               std::size_t rank) {
    std::size_t data_start = 0;
    const NpyInfo info = read_header(path, data_start);
    if (info.dtype != "|b1") {
        fail(path + ": " + what + " must be bool, not " + dtype_name(info.dtype));
    }
    check_rank(info, path, what, rank);
    // NumPy writes 0 or 1; any other byte is not a bool (reading it as one
    // would be undefined behaviour)
    return read_data<bool, unsigned char>(path, info, data_start,
                                          [&](unsigned char b, std::size_t i) {
        if (b > 1) {
            fail(path + ": " + what + ": byte " + std::to_string(b) + " at element " +
                 std::to_string(i) + " is not a bool (0 or 1)");
        }
        return b == 1;
    });
}

}  // namespace mha
