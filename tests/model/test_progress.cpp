// Tests for mha/model/progress.hpp: the line's format, and when update()
// writes it, on a clock the test moves by hand.
#include <doctest/doctest.h>

#include <unistd.h>

#include <sstream>
#include <string>
#include <vector>

#include "mha/model/progress.hpp"

TEST_CASE("Progress::line: step, loss, tokens per second, time left") {
    CHECK(mha::Progress::line(120, 600, 2.31406, 41234, 42.4) ==
          "step 120/600  loss 2.3141  41.2k tok/s  0:42 left");
    CHECK(mha::Progress::line(5, 600, 9.5, 812.4, 3725) ==
          "step   5/600  loss 9.5000  812 tok/s  1:02:05 left");  // padded; h:mm:ss
    CHECK(mha::Progress::line(7, 10, 0.5, 1.34e6, 61) ==
          "step  7/10  loss 0.5000  1.3M tok/s  1:01 left");
    CHECK(mha::Progress::line(600, 600, 0.01234, 41000, 126.2) ==
          "step 600/600  loss 0.0123  41.0k tok/s  done in 2:06");
}

TEST_CASE("Progress::update: at most once every second, and always the last step") {
    double now = 100.0;  // the injected clock, in seconds
    std::ostringstream out;
    mha::Progress p(600, 256, &out, [&] { return now; });
    std::vector<int> wrote;
    // steps 0.3 s apart: a line at 1.2 s (step 4), 2.4 s (step 8), ...
    for (int step = 1; step <= 10; ++step) {
        now += 0.3;
        if (p.update(step, 3.0 - 0.1 * step)) wrote.push_back(step);
    }
    CHECK(wrote == std::vector<int>{4, 8});
    now = 100.0 + 0.3 * 600;  // jump to the end: the last line comes whatever the time
    CHECK(p.update(600, 0.25));
    std::istringstream lines(out.str());
    std::string first, second, last, more;
    std::getline(lines, first), std::getline(lines, second), std::getline(lines, last);
    CHECK_FALSE(std::getline(lines, more));
    // step 4 at 1.2 s: 4 x 256 tokens / 1.2 s = 853 tok/s; 596 steps at 0.3 s = 2:59 left
    CHECK(first == "step   4/600  loss 2.6000  853 tok/s  2:59 left");
    CHECK(second == "step   8/600  loss 2.2000  853 tok/s  2:58 left");
    CHECK(last == "step 600/600  loss 0.2500  853 tok/s  done in 3:00");
    // a last step within the second of the one before still writes
    mha::Progress q(2, 1, &out, [&] { return now; });
    CHECK_FALSE(q.update(1, 1.0));
    CHECK(q.update(2, 1.0));
}

TEST_CASE("Progress: nowhere to write, where lessons write, and bad arguments") {
    double now = 0;
    mha::Progress silent(3, 10, nullptr, [&] { return now; }, 0.0);
    now = 1;
    CHECK(silent.update(1, 1.0));  // every = 0: each step "writes", to nowhere
    // lessons write only to a terminal: ctest's stderr is a pipe or a file
    CHECK((mha::stderr_if_terminal() != nullptr) == bool(isatty(STDERR_FILENO)));
    CHECK(mha::steady_seconds() > 0);
    CHECK_THROWS_AS(mha::Progress(0, 10, nullptr), std::invalid_argument);
    CHECK_THROWS_AS(mha::Progress(5, 10, nullptr, mha::steady_seconds, -1.0), std::invalid_argument);
    CHECK_THROWS_AS(mha::Progress(5, 10, nullptr, nullptr), std::invalid_argument);
    CHECK_THROWS_WITH_AS(silent.update(4, 1.0), "Progress: step 4 is outside 1 .. 3",
                         std::invalid_argument);
    CHECK_THROWS_AS(silent.update(0, 1.0), std::invalid_argument);
}
