// libFuzzer target: the lessons' flag parser (lessons/support/lesson.cpp),
// with a lesson's own flags as lesson 19 has them, in the variant of lesson
// 08 (heads that must not divide d_model), and with lesson 00's fixed sizes.
// argv comes from the input (fuzz/argv.hpp); the lesson's body only prints a
// line. One input in four is instead --predict's answers, read from stdin by
// a lesson of three steps.
#include <cstdint>
#include <cstdio>
#include <iostream>

#include <xtensor/xbuilder.hpp>

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
    } else if (data[0] % 8 == 1) {  // lesson 00: its words fix the sizes
        info = lesson::Info{"00_what_attention_is_for", "sizes its own", true, 0.01, 2};
        info.default_batch = 1, info.default_time = 6, info.default_d_model = 12;
        info.fixed_sizes = true;
    } else {
        info = lesson::Info{"08_indivisible_heads", "heads that do not divide", false, 0, 7,
                            false};
    }
    if (data[0] % 4 == 3) {
        // --predict's answers: the rest of the input is what the student types
        fuzz::write("answers.txt", data + 1, size - 1);
        if (std::freopen("answers.txt", "r", stdin) == nullptr) return 0;
        std::cin.clear();
        char program[] = "lesson", tiny[] = "--tiny", predict[] = "--predict";
        char* argv[] = {program, tiny, predict, nullptr};
        lesson::run(3, argv, lesson::Info{"02_split_heads", "shapes to predict", false, 0.1},
                    [](lesson::Lesson& L) {
            const mha::Tensor3 x = xt::zeros<float>({1, 5, 8});
            const mha::Tensor4 q = xt::zeros<float>({1, 2, 5, 4});
            L.step("x", "x", x, "B, T, E", "x", "x");
            L.step("q", "q", q, "B, H, T, D", "q", "q");
            L.step("q again", "q", q, "B, H, T, D", "q", "q");
            return 0;
        });
        return 0;
    }
    fuzz::Argv a("lesson", data + 1, size - 1);
    lesson::run(a.argc(), a.argv(), info, [](lesson::Lesson& L) {
        L.say("sizes " + std::to_string(L.opt.batch) + " " + std::to_string(L.opt.time));
        return 0;
    });
    return 0;
}
