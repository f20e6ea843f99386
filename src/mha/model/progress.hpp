/// @file progress.hpp
/// @brief Training, 6: a progress line for long runs.
///
/// B batch, T positions: a step reads B T tokens.
#pragma once
#include <functional>
#include <iosfwd>
#include <string>

namespace mha {

/// @addtogroup training
/// @{

/// Seconds on `std::chrono::steady_clock`, which never jumps back: the
/// clock Progress reads unless a test gives it another.
/// @return seconds since a fixed point in the past
double steady_seconds();

/// Where a lesson's progress line goes: stderr when stderr is a terminal,
/// else nowhere. Tokens per second and the time left differ from run to
/// run, and the tests and the docs compare what lessons print; so a lesson
/// shows the line only to a person watching (`2>/dev/null` hides it there
/// too). A tool (tools/) passes `&std::cerr` instead: its logs may keep it.
/// @return `&std::cerr` on a terminal, else nullptr
std::ostream* stderr_if_terminal();

/// A line such as `step 120/600  loss 2.3141  41.2k tok/s  0:42 left`,
/// written at most once every @p every seconds and always after the last
/// step (`done in 2:06` in place of the time left). The rate and the time
/// left are averages since the Progress was made, so the first step's
/// start-up counts too.
///
///     mha::Progress progress(steps, B * T, mha::stderr_if_terminal());
///     for (int step = 1; step <= steps; ++step)
///         progress.update(step, mha::train_step(m, adam, batch, trace).loss);
class Progress {
public:
    /// Seconds from a fixed point, never going back (steady_seconds()).
    using Clock = std::function<double()>;

    /// Starts the clock.
    /// @param total           the run's steps, at least 1
    /// @param tokens_per_step the tokens a step reads, B T
    /// @param out             where the lines go; nullptr: nowhere
    /// @param clock           what update() reads the time from
    /// @param every           the least seconds between two lines, at least 0
    /// @throws std::invalid_argument for total < 1 or every < 0.
    Progress(int total, double tokens_per_step, std::ostream* out,
             Clock clock = steady_seconds, double every = 1.0);

    /// After step @p step: writes its line when @p every seconds have passed
    /// since the last line (or the start), or when step is the last.
    /// @param step 1 .. total, the step just done
    /// @param loss its loss
    /// @return     whether it wrote (also when @p out is nullptr)
    /// @throws std::invalid_argument for a step outside [1, total].
    bool update(int step, double loss);

    /// The line for these numbers, without a newline: what update() writes.
    /// @param step              the step just done, 1 .. total
    /// @param total             the run's steps
    /// @param loss              the step's loss
    /// @param tokens_per_second `812`, `41.2k`, `1.3M` tok/s
    /// @param seconds           the time left (`0:42 left`), or, at the last
    ///                          step, the whole run's (`done in 2:06`); h:mm:ss
    ///                          past an hour
    /// @return                  the line, the step padded to total's width
    static std::string line(int step, int total, double loss, double tokens_per_second,
                            double seconds);

private:
    int total_;
    double tokens_per_step_;
    std::ostream* out_;
    Clock clock_;
    double every_, start_, last_;
};

/// @}

}  // namespace mha
