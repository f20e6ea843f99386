// libFuzzer target: the lessons' flag parser (lessons/support/lesson.cpp),
// with a lesson's own flags as lesson 19 has them, and in the variant of
// lesson 08 (heads that must not divide d_model). argv comes from the input
// (fuzz/argv.hpp); the lesson's body only prints a line.
#include <cstdint>
#include <cstdio>

#include "argv.hpp"
#include "common.hpp"
#include "support/lesson.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    // stdin from /dev/null: --pause and --predict read it. (scripts/fuzz.sh
    // closes the target's stdout and stderr with -close_fd_mask=3.)
    static bool once = [] {
        fuzz::scratch();
        return std::freopen("/dev/null", "r", stdin) != nullptr;
    }();
    if (!once || size == 0) return 0;
    lesson::Info info{"19_heads_learn", "a lesson with flags of its own", true, 0.2, 2};
    if (data[0] % 2 == 0) {
        info.default_batch = 64, info.default_time = 8, info.default_d_model = 32;
        info.tiny_batch = 16;
        info.extra = {{"--steps", "N", "training steps", 600, 4, 100000},
                      {"--lr", "R", "Adam's learning rate", 0.05, 1e-6, 1, false},
                      {"--vocab", "V", "tokens in the vocabulary", 10, 2, 1000}};
    } else {
        info = lesson::Info{"08_indivisible_heads", "heads that do not divide", false, 0, 7,
                            false};
    }
    fuzz::Argv a("lesson", data + 1, size - 1);
    lesson::run(a.argc(), a.argv(), info, [](lesson::Lesson& L) {
        L.say("sizes " + std::to_string(L.opt.batch) + " " + std::to_string(L.opt.time));
        return 0;
    });
    return 0;
}
