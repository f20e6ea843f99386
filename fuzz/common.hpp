// What the fuzz targets share: a scratch folder of their own, files written
// from the input, and the one exception that bad input may raise.
//
// Every target holds the readers to their contract: bad bytes give
// std::invalid_argument (one line, exit 2 in the tools); anything else
// escaping (another exception, a crash, a leak, a sanitizer report, a hang)
// is a finding.
#pragma once

#include <unistd.h>

#include <cstdint>
#include <cstdlib>
#include <fstream>
#include <stdexcept>
#include <string>

namespace fuzz {

/// A fresh folder under /tmp for this process, made the working directory
/// once, so that whatever the input names stays inside it.
inline const std::string& scratch() {
    static const std::string dir = [] {
        char name[] = "/tmp/mha_fuzz_XXXXXX";
        if (mkdtemp(name) == nullptr || chdir(name) != 0) std::abort();
        return std::string(name);
    }();
    return dir;
}

/// Writes @p size bytes to @p path (relative to scratch()).
inline void write(const std::string& path, const std::uint8_t* data, std::size_t size) {
    std::ofstream f(path, std::ios::binary | std::ios::trunc);
    f.write(reinterpret_cast<const char*>(data), static_cast<std::streamsize>(size));
}

/// Runs @p f; the readers' std::invalid_argument is the expected answer to
/// bad bytes, so it is swallowed; anything else propagates to libFuzzer.
template <class F>
void refused_or_read(F&& f) {
    try {
        f();
    } catch (const std::invalid_argument&) {
    }
}

/// Takes the next chunk of the input: a little-endian 16-bit length, then
/// that many bytes (fewer when the input runs out). false when none is left.
inline bool next_chunk(const std::uint8_t*& data, std::size_t& size, std::string& out) {
    if (size < 2) return false;
    std::size_t n = data[0] | (std::size_t(data[1]) << 8);
    data += 2, size -= 2;
    if (n > size) n = size;
    out.assign(reinterpret_cast<const char*>(data), n);
    data += n, size -= n;
    return true;
}

}  // namespace fuzz
