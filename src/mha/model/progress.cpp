// Training, 6: how far a long run is, how fast it goes, when it ends.
#include "mha/model/progress.hpp"

#include <unistd.h>

#include <chrono>
#include <cmath>
#include <cstdio>
#include <iostream>
#include <utility>

#include "mha/shape.hpp"

namespace mha {

double steady_seconds() {
    using namespace std::chrono;
    return duration<double>(steady_clock::now().time_since_epoch()).count();
}

std::ostream* stderr_if_terminal() { return isatty(STDERR_FILENO) ? &std::cerr : nullptr; }

Progress::Progress(int total, double tokens_per_step, std::ostream* out, Clock clock,
                   double every)
    : total_(total), tokens_per_step_(tokens_per_step), out_(out), clock_(std::move(clock)),
      every_(every) {
    if (total < 1 || !(every >= 0) || !(tokens_per_step >= 0) || !clock_) {
        fail("Progress: needs total >= 1 step, tokens_per_step >= 0, every >= 0 seconds and "
             "a clock; got total " + std::to_string(total) + ", every " + std::to_string(every));
    }
    start_ = last_ = clock_();
}

bool Progress::update(int step, double loss) {
    if (step < 1 || step > total_) {
        fail("Progress: step " + std::to_string(step) + " is outside 1 .. " +
             std::to_string(total_));
    }
    const double now = clock_();
    if (step < total_ && now - last_ < every_) return false;
    last_ = now;
    const double elapsed = now - start_;
    const double rate = elapsed > 0 ? step * tokens_per_step_ / elapsed : 0;
    // the steps left at the mean time per step so far; at the end, the run's time
    const double seconds = step < total_ ? elapsed / step * (total_ - step) : elapsed;
    if (out_) *out_ << line(step, total_, loss, rate, seconds) << std::endl;  // flushed: seen now
    return true;
}

std::string Progress::line(int step, int total, double loss, double tokens_per_second,
                           double seconds) {
    char rate[32], time[32], text[160];
    if (tokens_per_second < 1e3)
        std::snprintf(rate, sizeof rate, "%.0f", tokens_per_second);
    else if (tokens_per_second < 1e6)
        std::snprintf(rate, sizeof rate, "%.1fk", tokens_per_second / 1e3);
    else
        std::snprintf(rate, sizeof rate, "%.1fM", tokens_per_second / 1e6);
    const long s = std::lround(std::fmax(seconds, 0.0));
    if (s < 3600)
        std::snprintf(time, sizeof time, "%ld:%02ld", s / 60, s % 60);
    else
        std::snprintf(time, sizeof time, "%ld:%02ld:%02ld", s / 3600, s / 60 % 60, s % 60);
    const int width = int(std::to_string(total).size());
    std::snprintf(text, sizeof text, "step %*d/%d  loss %.4f  %s tok/s  %s%s", width, step, total,
                  loss, rate, step == total ? "done in " : "", time);
    return std::string(text) + (step == total ? "" : " left");
}

}  // namespace mha
