// Tests for mha/io/npy.hpp: good files load, bad ones are refused by name.
#include <doctest/doctest.h>

#include <filesystem>
#include <fstream>
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
