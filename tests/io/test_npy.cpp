// Tests for mha/io/npy.hpp: good files load, bad ones are refused by name.
#include <doctest/doctest.h>

#include <cstdint>
#include <filesystem>
#include <fstream>
#include <limits>
#include <string>

#include <xtensor/xbuilder.hpp>
#include <xtensor/xnpy.hpp>

#include "mha/io/npy.hpp"

namespace fs = std::filesystem;

namespace {

// A folder of its own for each test case: ctest runs cases in parallel.
struct TempDir {
    fs::path path;
    explicit TempDir(const std::string& name)
        : path(fs::temp_directory_path() / ("mha_test_npy_" + name)) {
        fs::create_directories(path);
    }
    ~TempDir() { fs::remove_all(path); }
    std::string file(const std::string& name) const { return (path / name).string(); }
};

std::string read_all(const std::string& p) {
    std::ifstream f(p, std::ios::binary);
    return std::string(std::istreambuf_iterator<char>(f), {});
}

void write_all(const std::string& p, const std::string& bytes) {
    std::ofstream(p, std::ios::binary) << bytes;
}

}  // namespace

TEST_CASE("npy: float32 round trip, float64 converted") {
    TempDir d("round_trip");
    const mha::Tensor3 x = {{{1.5f, -2.0f}, {3.25f, 0.0f}}};
    mha::save_npy(d.file("x.npy"), x);
    const auto info = mha::npy_info(d.file("x.npy"));
    CHECK(info.dtype == "<f4");
    CHECK(mha::shape_str(info.shape) == "[1, 2, 2]");
    CHECK(mha::max_abs_diff(mha::load_npy_float(d.file("x.npy"), "x", 3), x) == 0.0);
    const xt::xtensor<double, 2> d64 = {{0.1, 0.2}};
    xt::dump_npy(d.file("d.npy"), d64);
    const auto f = mha::load_npy_float(d.file("d.npy"), "d", 2);
    CHECK(f(0, 1) == doctest::Approx(0.2f));
}

TEST_CASE("npy: masks are written as bool, and every file as NumPy writes it") {
    TempDir d("bool");
    const xt::xtensor<bool, 4> mask = {{{{true, false, true}, {false, false, true}}}};
    mha::save_npy(d.file("m.npy"), mask);
    CHECK(mha::npy_info(d.file("m.npy")).dtype == "|b1");
    const auto back = mha::load_npy_bool(d.file("m.npy"), "mask", 4);
    CHECK(mha::shape_of(back) == "[1, 1, 2, 3]");
    CHECK(std::equal(back.begin(), back.end(), mask.begin()));
    // np.save(f, np.zeros(5, np.float32)) writes exactly these 128 + 20 bytes:
    // the header padded to 128 so that the data starts on a multiple of 64.
    const mha::Tensor1 five = xt::zeros<float>({5});
    mha::save_npy(d.file("five.npy"), five);
    const std::string bytes = read_all(d.file("five.npy"));
    std::string header = "{'descr': '<f4', 'fortran_order': False, 'shape': (5,), }";
    header += std::string(128 - 10 - header.size() - 1, ' ') + "\n";
    CHECK(bytes.substr(10, 118) == header);
    CHECK(bytes.size() == 128 + 20);
    CHECK_THROWS_WITH_AS(mha::save_npy(d.file("no/such/folder/x.npy"), mask),
                         doctest::Contains("cannot write"), std::invalid_argument);
}

TEST_CASE("npy: a Fortran-order file is read in the right order") {
    TempDir d("fortran");
    // np.asfortranarray([[1, 2, 3], [4, 5, 6]], dtype=np.float32): column-major
    // data 1 4 2 5 3 6, written by hand.
    std::string header = "{'descr': '<f4', 'fortran_order': True, 'shape': (2, 3), }";
    header += std::string(118 - header.size() - 1, ' ') + "\n";
    std::string bytes = std::string("\x93NUMPY\x01\x00", 8) + char(118) + char(0) + header;
    for (float v : {1.f, 4.f, 2.f, 5.f, 3.f, 6.f})
        bytes.append(reinterpret_cast<const char*>(&v), 4);
    write_all(d.file("f.npy"), bytes);
    const auto x = mha::load_npy_float(d.file("f.npy"), "x", 2);
    const xt::xtensor<float, 2> want = {{1, 2, 3}, {4, 5, 6}};
    CHECK(mha::max_abs_diff(x, want) == 0.0);
}

TEST_CASE("npy: bad files get one clear error naming the file") {
    TempDir d("bad_files");
    const mha::Tensor2 x = {{1, 2, 3}, {4, 5, 6}};
    mha::save_npy(d.file("good.npy"), x);
    const std::string good = read_all(d.file("good.npy"));

    CHECK_THROWS_WITH_AS(mha::npy_info(d.file("missing.npy")),
                         doctest::Contains("missing.npy: cannot open"),
                         std::invalid_argument);
    write_all(d.file("short.npy"), good.substr(0, good.size() - 5));
    CHECK_THROWS_WITH_AS(mha::npy_info(d.file("short.npy")),
                         doctest::Contains("short.npy: truncated"), std::invalid_argument);
    write_all(d.file("head.npy"), good.substr(0, 40));
    CHECK_THROWS_WITH_AS(mha::npy_info(d.file("head.npy")),
                         doctest::Contains("truncated inside its header"),
                         std::invalid_argument);
    write_all(d.file("long.npy"), good + "xx");
    CHECK_THROWS_WITH_AS(mha::npy_info(d.file("long.npy")),
                         doctest::Contains("extra bytes"), std::invalid_argument);
    write_all(d.file("magic.npy"), "PK" + good.substr(2));
    CHECK_THROWS_WITH_AS(mha::npy_info(d.file("magic.npy")),
                         doctest::Contains("not a .npy file"), std::invalid_argument);
    write_all(d.file("empty.npy"), "");
    CHECK_THROWS_AS(mha::npy_info(d.file("empty.npy")), std::invalid_argument);
    std::string garbled = good;
    garbled.replace(garbled.find("'shape'"), 7, "'shope'");
    write_all(d.file("garbled.npy"), garbled);
    CHECK_THROWS_WITH_AS(mha::npy_info(d.file("garbled.npy")),
                         doctest::Contains("bad .npy header"), std::invalid_argument);

    CHECK_THROWS_WITH_AS(mha::load_npy_float(d.file("good.npy"), "query [B, T, E]", 3),
                         doctest::Contains("has shape [2, 3], not rank 3"),
                         std::invalid_argument);
    const xt::xtensor<long, 1> ints = {1, 2};
    xt::dump_npy(d.file("int.npy"), ints);
    CHECK_THROWS_WITH_AS(mha::load_npy_float(d.file("int.npy"), "bias", 1),
                         doctest::Contains("must be float32 or float64, not int64"),
                         std::invalid_argument);
    const xt::xtensor<bool, 1> flags = {true, false};
    xt::dump_npy(d.file("bool.npy"), flags);
    CHECK_THROWS_WITH_AS(mha::load_npy_float(d.file("bool.npy"), "bias", 1),
                         doctest::Contains("not bool"), std::invalid_argument);
    CHECK_THROWS_WITH_AS(mha::load_npy_bool(d.file("good.npy"), "mask", 2),
                         doctest::Contains("must be bool"), std::invalid_argument);
    CHECK_THROWS_WITH_AS(mha::save_npy(d.file("no/such/dir/x.npy"), x),
                         doctest::Contains("cannot write"), std::invalid_argument);
}

namespace {

// A .npy file of format version @p major (1, 2 or 3) with this header text,
// padded as NumPy pads it, and these data bytes.
std::string npy_bytes(int major, std::string header, const std::string& data) {
    const std::size_t prefix = major == 1 ? 10 : 12;
    header.append((64 - (prefix + header.size() + 1) % 64) % 64, ' ');
    header += '\n';
    std::string s = std::string("\x93NUMPY", 6) + char(major) + '\0';
    s += char(header.size() & 0xff);
    s += char((header.size() >> 8) & 0xff);
    if (major != 1) s += std::string(2, '\0');
    return s + header + data;
}

std::string floats(std::initializer_list<float> v) {
    return std::string(reinterpret_cast<const char*>(v.begin()), v.size() * sizeof(float));
}

}  // namespace

// What the fuzzers found (scripts/fuzz.sh), each kept as a case.
TEST_CASE("npy, found by fuzzing: format versions 2 and 3 are read, not only checked") {
    TempDir d("versions");
    const std::string h = "{'descr': '<f4', 'fortran_order': False, 'shape': (2,), }";
    for (int major : {1, 2, 3}) {
        write_all(d.file("v.npy"), npy_bytes(major, h, floats({1.5f, -2.0f})));
        const auto x = mha::load_npy_float(d.file("v.npy"), "x", 1);
        REQUIRE(x.size() == 2);
        CHECK(x(0) == 1.5f);
        CHECK(x(1) == -2.0f);
    }
}

TEST_CASE("npy: a version 1.0 header past 255 bytes is read whole") {
    TempDir d("long_header");
    // The format pads the dict with spaces; here to 310 bytes, so that the
    // header's length needs both of its bytes (scripts/mutants.txt:
    // npy_header_length_low_byte read only the first).
    const std::string h = "{'descr': '<f4', 'fortran_order': False, 'shape': (2,), }" +
                          std::string(250, ' ');
    const std::string bytes = npy_bytes(1, h, floats({1.5f, -2.0f}));
    REQUIRE(bytes[9] == 1);  // 320 - 10 = 310 = 0x136
    write_all(d.file("long.npy"), bytes);
    const auto x = mha::load_npy_float(d.file("long.npy"), "x", 1);
    REQUIRE(x.size() == 2);
    CHECK(x(0) == 1.5f);
    CHECK(x(1) == -2.0f);
}

TEST_CASE("npy, found by fuzzing: malformed headers are refused by name, with no UB") {
    TempDir d("headers");
    const std::string two = floats({1.0f, 2.0f});
    const char* headers[] = {
        "",                                                           // empty (read past its end)
        "{",
        "{'descr': '<f4', 'fortran_order': False}",                   // no shape
        "{'descr': '<f4', 'fortran_order': False, 'shape': (2,), 'x': 1}",
        "{'descr': '<f4', 'descr': '<f4', 'fortran_order': False, 'shape': (2,)}",
        "{'descr': '<f4', 'fortran_order': Maybe, 'shape': (2,)}",
        "{'descr': '<f4', 'fortran_order': False, 'shape': (-2,)}",
        "{'descr': '<f4', 'fortran_order': False, 'shape': (99999999999999999999,)}",
        "{'descr': '<f4', 'fortran_order': False, 'shape': (2,)} trailing",
        "{'descr: '<f4', 'fortran_order': False, 'shape': (2,)}",
    };
    for (const char* h : headers) {
        CAPTURE(h);
        write_all(d.file("h.npy"), npy_bytes(1, h, two));
        CHECK_THROWS_WITH_AS(mha::npy_info(d.file("h.npy")),
                             doctest::Contains((d.file("h.npy") + ": ").c_str()), std::invalid_argument);
    }
    // a key order NumPy never writes is still a valid dict
    write_all(d.file("ok.npy"),
              npy_bytes(1, "{'shape': (2,), 'fortran_order': False, 'descr': '<f4'}", two));
    CHECK(mha::load_npy_float(d.file("ok.npy"), "x", 1)(1) == 2.0f);
}

TEST_CASE("npy, found by fuzzing: a bool file's bytes must be 0 or 1") {
    TempDir d("bool_bytes");
    const std::string h = "{'descr': '|b1', 'fortran_order': False, 'shape': (3,), }";
    write_all(d.file("b.npy"), npy_bytes(1, h, std::string("\x01\x00\x52", 3)));
    CHECK_THROWS_WITH_AS(mha::load_npy_bool(d.file("b.npy"), "mask", 1),
                         doctest::Contains("byte 82 at element 2 is not a bool (0 or 1)"),
                         std::invalid_argument);
    // 2, the first byte past a bool (scripts/mutants.txt: npy_bool_byte)
    write_all(d.file("two.npy"), npy_bytes(1, h, std::string("\x01\x02\x00", 3)));
    CHECK_THROWS_WITH_AS(mha::load_npy_bool(d.file("two.npy"), "mask", 1),
                         doctest::Contains("byte 2 at element 1 is not a bool"),
                         std::invalid_argument);
    write_all(d.file("ok.npy"), npy_bytes(1, h, std::string("\x01\x00\x01", 3)));
    const auto m = mha::load_npy_bool(d.file("ok.npy"), "mask", 1);
    CHECK((m(0) && !m(1) && m(2)));
}

TEST_CASE("npy: float64 beyond float's range becomes inf, as NumPy's astype does") {
    TempDir d("f64_range");
    const double v[3] = {1e300, -1e300, 0.5};
    const std::string h = "{'descr': '<f8', 'fortran_order': False, 'shape': (3,), }";
    write_all(d.file("d.npy"), npy_bytes(1, h, std::string(reinterpret_cast<const char*>(v), 24)));
    const auto x = mha::load_npy_float(d.file("d.npy"), "x", 1);
    CHECK(x(0) == std::numeric_limits<float>::infinity());
    CHECK(x(1) == -std::numeric_limits<float>::infinity());
    CHECK(x(2) == 0.5f);
}

TEST_CASE("npy: integers from int64 and int32 files, and a float file refused, not rounded") {
    TempDir d("int");
    const xt::xtensor<std::int64_t, 2> i64 = {{1, -2, 3}, {(std::int64_t(1) << 40), 0, 7}};
    xt::dump_npy(d.file("i64.npy"), i64);
    const auto a = mha::load_npy_int(d.file("i64.npy"), "ids", 2);
    CHECK(mha::shape_str(a.shape()) == "[2, 3]");
    CHECK(a(0, 1) == -2);
    CHECK(a(1, 0) == (std::int64_t(1) << 40));
    const xt::xtensor<std::int32_t, 1> i32 = {5, -6};
    xt::dump_npy(d.file("i32.npy"), i32);
    CHECK(mha::load_npy_int(d.file("i32.npy"), "ids", 1)(1) == -6);
    const xt::xtensor<std::int64_t, 2, xt::layout_type::column_major> fortran = i64;
    xt::dump_npy(d.file("fortran.npy"), fortran);
    CHECK(mha::load_npy_int(d.file("fortran.npy"), "ids", 2) == a);
    mha::save_npy(d.file("f32.npy"), mha::Tensor2{{1.0f, 2.0f}});
    CHECK_THROWS_WITH_AS(mha::load_npy_int(d.file("f32.npy"), "tokens [B, T]", 2),
                         doctest::Contains("f32.npy: tokens [B, T] must be int64 or int32, "
                                           "not float32"),
                         std::invalid_argument);
    CHECK_THROWS_WITH_AS(mha::load_npy_int(d.file("i32.npy"), "tokens [B, T]", 2),
                         doctest::Contains("has shape [2], not rank 2"), std::invalid_argument);
}
