// An argument list from fuzz input, for the flag parsers' targets.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace fuzz {

/// Splits the input at NUL bytes into at most 24 arguments of at most 80
/// bytes, after a program name. A path that could leave the scratch folder
/// (starting with '/', or holding "..") becomes "d": the parsers create
/// folders and write files where they are told.
struct Argv {
    std::vector<std::string> args;
    std::vector<char*> ptrs;

    Argv(const char* program, const std::uint8_t* data, std::size_t size) {
        args.emplace_back(program);
        std::string cur;
        for (std::size_t i = 0; i <= size && args.size() < 25; ++i) {
            if (i == size || data[i] == 0) {
                if (cur.find("..") != std::string::npos || (!cur.empty() && cur[0] == '/'))
                    cur = "d";
                args.push_back(cur.substr(0, 80));
                cur.clear();
            } else {
                cur += static_cast<char>(data[i]);
            }
        }
        for (std::string& a : args) ptrs.push_back(&a[0]);
        ptrs.push_back(nullptr);
    }
    int argc() const { return static_cast<int>(args.size()); }
    char** argv() { return ptrs.data(); }
};

}  // namespace fuzz
