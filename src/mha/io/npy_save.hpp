// save_npy's template body: xt::dump_npy on a float32 copy.
#pragma once

#include <fstream>

#include <xtensor/xarray.hpp>
#include <xtensor/xnpy.hpp>

namespace mha {

template <class T>
void save_npy(const std::string& path, const T& t) {
    xt::xarray<float> copy = xt::xarray<float>::from_shape(
        std::vector<std::size_t>(t.shape().begin(), t.shape().end()));
    std::copy(t.begin(), t.end(), copy.begin());
    std::ofstream probe(path, std::ios::binary);
    if (!probe) fail("cannot write " + path);
    probe.close();
    xt::dump_npy(path, copy);
}

}  // namespace mha
