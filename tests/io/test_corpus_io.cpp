// Tests for mha/io/corpus_io.hpp: strict UTF-8 (every kind of bad byte
// refused, naming where), poems cut from a fortune file (colour-coded title
// and author dropped) and from a plain text, the vocabulary's order and ids,
// vocab.json written and read back (escapes included) and refused when bad,
// and config.json's numbers.
#include <doctest/doctest.h>

#include <cstdio>
#include <functional>
#include <filesystem>
#include <fstream>
#include <stdexcept>
#include <string>
#include <vector>

#include "mha/io/corpus_io.hpp"

namespace corpus_test {

namespace fs = std::filesystem;
using Strings = std::vector<std::string>;

std::string scratch(const std::string& name) {
    const fs::path dir = fs::temp_directory_path() / "mha_corpus_test";
    fs::create_directories(dir);
    return (dir / name).string();
}

std::string write(const std::string& name, const std::string& text) {
    const std::string path = scratch(name);
    std::ofstream(path, std::ios::binary) << text;
    return path;
}

std::string error_of(const std::function<void()>& f) {
    try {
        f();
    } catch (const std::invalid_argument& e) {
        return e.what();
    }
    return "no error";
}

}  // namespace corpus_test

using namespace corpus_test;

TEST_CASE("utf8_chars: one string per code point of 1 to 4 bytes") {
    const Strings c = mha::utf8_chars("a\xC3\xA9\xE6\x98\x8E\xF0\x9F\x98\x80", "t");  // a é 明 😀
    REQUIRE(c.size() == 4);
    CHECK(c[0] == "a");
    CHECK(c[1] == "\xC3\xA9");
    CHECK(c[2] == "明");
    CHECK(c[3] == "\xF0\x9F\x98\x80");
    CHECK(mha::utf8_chars("", "t").empty());
}

TEST_CASE("utf8_chars: every kind of bad UTF-8 is refused with its byte") {
    const std::vector<std::pair<std::string, std::string>> bad = {
        {"ab\x80", "2"},                 // a stray continuation byte
        {"\xC0\xAF", "0"},               // overlong '/'
        {"x\xE0\x80\xAF", "1"},          // overlong, three bytes
        {"\xED\xA0\x80", "0"},           // a surrogate, U+D800
        {"\xF4\x90\x80\x80", "0"},       // above U+10FFFF
        {"\xF5\x80\x80\x80", "0"},       // F5: never a lead byte
        {"明\xE6\x98", "3"},             // cut short at the end
        {"\xE6\x98" "a", "0"},           // cut short by an ASCII byte
        {"\xFF", "0"}};
    for (const auto& [text, at] : bad)
        CHECK(error_of([&] { mha::utf8_chars(text, "f.txt"); }) ==
              "f.txt: invalid UTF-8 at byte " + at);
}

TEST_CASE("parse_poems: a fortune file keeps the bodies with a \\n after each line") {
    const std::string text =
        "\x1b[32m《登鸛雀樓》\x1b[m\n\x1b[33m作者：王之渙\x1b[m\n"
        "白日依山盡，黃河入海流。\n欲窮千里目，更上一層樓。\n%\n"
        "\x1b[32m《春曉》\x1b[m\n\x1b[33m作者：孟浩然\x1b[m\n"
        "序。\n\n春眠不覺曉，處處聞啼鳥。\r\n%\n";
    const std::vector<mha::Poem> p = mha::parse_poems(text, "t");
    REQUIRE(p.size() == 2);
    CHECK(p[0].size() == 2 * 13);  // 12 characters and \n, twice
    CHECK(p[0][0] == "白");
    CHECK(p[0][5] == "，");
    CHECK(p[0][12] == "\n");
    CHECK(p[0][25] == "\n");
    // the blank line after a preface does not cut a fortune's poem; \r is dropped
    REQUIRE(p[1].size() == 3 + 13);
    CHECK(p[1][0] == "序");
    CHECK(p[1][2] == "\n");
    CHECK(p[1][3] == "春");
    CHECK(p[1][15] == "\n");
}

TEST_CASE("parse_poems: a plain text is cut at empty lines and no text gives no poem") {
    const std::vector<mha::Poem> p = mha::parse_poems("ab\ncd\n\n\n\nef", "t");
    REQUIRE(p.size() == 2);
    CHECK(p[0] == Strings{"a", "b", "\n", "c", "d", "\n"});
    CHECK(p[1] == Strings{"e", "f", "\n"});
    CHECK(mha::parse_poems("", "t").empty());
    CHECK(mha::parse_poems("\n\n", "t").empty());
    CHECK(error_of([] { mha::parse_poems("ab\n\xC3", "x"); }) == "x: invalid UTF-8 at byte 3");
}

TEST_CASE("read_poems: an empty file or one of titles only or a missing file is one error") {
    CHECK(error_of([] { mha::read_poems(write("empty.txt", "")); }).find("no poem") !=
          std::string::npos);
    CHECK(error_of([] { mha::read_poems(write("titles.txt", "\x1b[32mT\x1b[m\n%\n")); })
              .find("no poem") != std::string::npos);
    CHECK(error_of([] { mha::read_poems(scratch("missing.txt")); }).find("cannot be read") !=
          std::string::npos);
    CHECK(mha::read_poems(write("one.txt", "床前明月光")).size() == 1);
}

TEST_CASE("build_vocab: <unk> <poem> \\n then the marks then the most frequent first") {
    const std::vector<mha::Poem> p = {{"b", "。", "a", "，", "a", "\n"}, {"c", "a", "b", "\n"}};
    const mha::Vocab v = mha::build_vocab(p);
    CHECK(v.tokens() == Strings{"<unk>", "<poem>", "\n", "，", "。", "a", "b", "c"});
    CHECK(v.id("a") == 5);
    CHECK(v.id("never") == 0);
    CHECK(v.token(7) == "c");
}

TEST_CASE("vocab.json: written and read back with escapes and JSON written elsewhere read") {
    const mha::Vocab v({"<unk>", "<poem>", "\n", "\"", "\\", "\t", "明", "\x01"});
    const std::string path = scratch("vocab.json");
    mha::save_vocab(v, path);
    CHECK(mha::load_vocab(path).tokens() == v.tokens());
    const std::string py = "[\"<unk>\", \"<poem>\", \"\\n\", \"\\u660e\", \"\\ud83d\\ude00\", \"\\/\"]";
    CHECK(mha::parse_vocab(py, "t").tokens() ==
          Strings{"<unk>", "<poem>", "\n", "明", "\xF0\x9F\x98\x80", "/"});
}

TEST_CASE("vocab.json: bad JSON or a bad vocabulary is one error naming the file") {
    const Strings bad = {"", "[", "[\"<unk>\", \"<poem>\", \"\\n\"", "{}", "[1, 2, 3]",
                         "[\"<unk>\", \"<poem>\"]", "[\"<poem>\", \"<unk>\", \"\\n\"]",
                         "[\"<unk>\", \"<poem>\", \"\\n\", \"a\", \"a\"]",
                         "[\"<unk>\", \"<poem>\", \"\\n\", \"\"]",
                         "[\"<unk>\", \"<poem>\", \"\\n\", \"\\ud800\"]",
                         "[\"<unk>\", \"<poem>\", \"\\n\", \"\\x\"]",
                         "[\"<unk>\", \"<poem>\", \"\\n\", \"\xC3\"]",
                         "[\"<unk>\", \"<poem>\", \"\\n\"] x"};
    for (const std::string& json : bad)
        CHECK(error_of([&] { mha::parse_vocab(json, "v.json"); }).rfind("v.json: ", 0) == 0);
}

TEST_CASE("config.json: numbers written and read back and a note skipped and bad JSON refused") {
    const std::string path = scratch("config.json");
    mha::save_numbers({{"vocab", 2328}, {"t_max", 64}, {"seed", -1}, {"lr", 0.001}}, path);
    const mha::JsonNumbers n = mha::load_numbers(path);
    CHECK(mha::number(n, "vocab", path) == 2328);
    CHECK(mha::number(n, "seed", path) == -1);
    CHECK(mha::number(n, "lr", path) == 0.001);  // 17 digits: the same double back
    CHECK(error_of([&] { mha::number(n, "ff_dim", path); }).find("no \"ff_dim\"") !=
          std::string::npos);
    CHECK(mha::number(mha::load_numbers(write("c2.json", "{\"note\": \"x\", \"a\": 3}")), "a",
                      "c2") == 3);
    for (const char* bad : {"", "{", "{\"a\": 1.}", "{\"a\": }", "{\"a\": 1e999}",
                                   "{\"a\": 1} 2", "{\"a\": [1]}"})
        CHECK(error_of([&] { mha::load_numbers(write("bad.json", bad)); }).find("bad.json: ") !=
              std::string::npos);
}
