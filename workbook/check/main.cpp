// One exercise's checker: built with WORKBOOK_EXERCISE = its number, linked
// with the student's file (workbook/NN_name.cpp) and the checks.
#include <cstdio>

#include "../exercises.hpp"
#include "check.hpp"

int main(int argc, char**) {
    if (argc > 1) {
        std::fprintf(stderr, "takes no arguments: run it as scripts/check-exercise.sh NN\n");
        return 2;
    }
    using namespace workbook;
#if WORKBOOK_EXERCISE == 1
    return check::linear(linear);
#elif WORKBOOK_EXERCISE == 2
    return check::split_heads(split_heads);
#elif WORKBOOK_EXERCISE == 3
    return check::scores(scaled_scores);
#elif WORKBOOK_EXERCISE == 4
    return check::mask(causal_mask, apply_mask);
#elif WORKBOOK_EXERCISE == 5
    return check::softmax(softmax);
#elif WORKBOOK_EXERCISE == 6
    return check::attend_merge(attend, merge_heads);
#elif WORKBOOK_EXERCISE == 7
    return check::forward(forward);
#elif WORKBOOK_EXERCISE == 16
    return check::kv_cache(decode_step);
#elif WORKBOOK_EXERCISE == 18
    return check::online_softmax(take_block);
#elif WORKBOOK_EXERCISE == 19
    return check::softmax_backward(softmax_backward);
#else
#error "WORKBOOK_EXERCISE names no exercise"
#endif
}
