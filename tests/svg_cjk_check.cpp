// The heat maps of lessons/support/svg.hpp with Chinese tick labels, the
// tokens of a poem: "<poem>" shown as text (escaped, never a tag), the
// labels' room measured in wide characters (1 em each, full-width marks
// such as '，' too), a CJK font before the generic one, and no control
// character that would stop the XML from parsing.
//
//     svg_cjk_check [OUT.svg]
//
// Writes the picture to OUT.svg when given (tests/check_svg.py parses it and
// reads the labels back). Exit 0 when all hold, 1 with a line per failure.
#include <cstdio>
#include <fstream>
#include <string>
#include <vector>

#include "support/svg.hpp"

namespace {

int failures = 0;

void check(bool ok, const std::string& what) {
    if (!ok) {
        std::printf("FAILED %s\n", what.c_str());
        ++failures;
    }
}

// The x of the first cell drawn: where the row labels' room ends.
int first_cell_x(const std::string& svg) {
    const std::size_t at = svg.find("data-row='0' data-col='0'");
    const std::size_t x = svg.rfind("<rect x='", at);
    return std::stoi(svg.substr(x + 9));
}

// One grid of T x T cells labelled @p ticks down and across.
std::string picture(const std::vector<std::string>& ticks, const std::string& title = "t") {
    const std::size_t T = ticks.size();
    lesson::svg::Grid g;
    g.name = "layer 0, head 1";
    g.value.assign(T, std::vector<float>(T, 0.0f));
    g.masked.assign(T, std::vector<bool>(T, false));
    for (std::size_t i = 0; i < T; ++i)
        for (std::size_t j = 0; j < T; ++j) {
            g.value[i][j] = j <= i ? 1.0f / float(i + 1) : 0.0f;
            g.masked[i][j] = j > i;
        }
    g.row_ticks = g.col_ticks = ticks;
    lesson::svg::Style s;
    s.title = title;
    return lesson::svg::heatmap({g}, s);
}

}  // namespace

int main(int argc, char** argv) {
    // 登鸛雀樓's first couplet as tokens; "\n" drawn as the lessons may label it
    const std::vector<std::string> poem = {"<poem>", "白", "日", "依", "山", "盡", "，",
                                           "黃", "河", "入", "海", "流", "。", "↵"};
    const std::string svg = picture(poem, "Tang: layer 0, head 1 (白日依山盡)");

    check(svg.find("&lt;poem&gt;") != std::string::npos, "\"<poem>\" is not escaped as text");
    check(svg.find("<poem>") == std::string::npos, "\"<poem>\" written raw, a tag to XML");
    check(svg.find("class='tick' ") != std::string::npos &&
              svg.find(">白</text>") != std::string::npos &&
              svg.find(">，</text>") != std::string::npos,
          "the characters are not tick labels");
    check(svg.find("query 7 (黃), key 1 (白): 0.125") != std::string::npos,
          "a cell's title does not name its two characters");
    const std::size_t fonts = svg.find("font-family='");
    const std::string family = svg.substr(fonts, svg.find('\'', fonts + 13) - fonts);
    const std::size_t cjk = family.find("Noto Sans CJK SC"), generic = family.find("sans-serif");
    check(cjk != std::string::npos && cjk < generic,
          "no CJK font before the generic one: " + family);

    // Room for the row labels: 4 wide characters take 1 em (10 px at size 10)
    // each, more than 4 narrow ones; a full-width mark as much as a character.
    const int narrow = first_cell_x(picture({"abcd", "a"}));
    const int han = first_cell_x(picture({"白日依山", "a"}));
    const int marks = first_cell_x(picture({"，，，，", "a"}));
    check(han >= 30 + 4 * 10, "4 characters get " + std::to_string(han - 30) + " px, not 40");
    check(han > narrow, "4 characters get no more room than 4 letters");
    check(marks == han, "4 full-width marks get " + std::to_string(marks) + " px, 4 characters " +
                            std::to_string(han));

    // A control character in a label (a class's own corpus) is not written raw.
    const std::string odd = picture({"a\x1b[32m", "b"});
    check(odd.find('\x1b') == std::string::npos, "an ESC byte written into the XML");

    if (argc > 1) std::ofstream(argv[1]) << svg;
    std::printf("%d failures\n", failures);
    return failures ? 1 : 0;
}
