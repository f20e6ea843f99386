// make_bad_npy DIR: writes the odd .npy files that mha_forward must refuse
// (or read correctly), for the mha_forward.npy.* tests. The good ones are
// [2, 5, 12] float32 inputs for the causal_and_padding parity case (E = 12).
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>

#include <xtensor/xnpy.hpp>

#include "mha/init.hpp"
#include "mha/io/npy.hpp"

namespace {

std::string bytes_of(const std::string& path) {
    std::ifstream f(path, std::ios::binary);
    return std::string(std::istreambuf_iterator<char>(f), {});
}

void write(const std::string& path, const std::string& bytes) {
    std::ofstream(path, std::ios::binary) << bytes;
}

}  // namespace

int main(int argc, char** argv) {
    if (argc != 2) {
        std::fprintf(stderr, "usage: make_bad_npy DIR\n");
        return 2;
    }
    const std::string dir = argv[1];
    std::filesystem::create_directories(dir);
    mha::Rng rng(5);
    const mha::Tensor3 x = mha::randn(2, 5, 12, rng);
    mha::save_npy(dir + "/good.npy", x);
    const std::string good = bytes_of(dir + "/good.npy");
    write(dir + "/truncated.npy", good.substr(0, good.size() - 100));
    write(dir + "/magic.npy", "\x89PNG" + good.substr(4));
    write(dir + "/empty.npy", "");
    const xt::xtensor<int, 3> ints = xt::xtensor<int, 3>::from_shape({2, 5, 12});
    xt::dump_npy(dir + "/int32.npy", ints);
    const xt::xtensor<bool, 3> flags = xt::xtensor<bool, 3>::from_shape({2, 5, 12});
    xt::dump_npy(dir + "/bool.npy", flags);
    mha::save_npy(dir + "/rank2.npy", mha::zeros(10, 12));
    mha::save_npy(dir + "/wrong_e.npy", mha::randn(2, 5, 7, rng));
    // The same numbers as good.npy, as float64, and in Fortran order.
    const xt::xtensor<double, 3> d = xt::cast<double>(x);
    xt::dump_npy(dir + "/float64.npy", d);
    const xt::xtensor<float, 3, xt::layout_type::column_major> f = x;
    xt::dump_npy(dir + "/fortran.npy", f);
    std::printf("wrote 10 files to %s\n", dir.c_str());
    return 0;
}
