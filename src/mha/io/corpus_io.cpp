#include "mha/io/corpus_io.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <map>
#include <sstream>
#include <stdexcept>

#include "mha/model/poem_heads.hpp"

namespace mha {

namespace {

std::invalid_argument bad(const std::string& where, const std::string& what) {
    return std::invalid_argument(where + ": " + what);
}

// The code point of the character at text[i], its length in n; false when
// the bytes there are not one valid UTF-8 character.
bool decode(const std::string& text, std::size_t i, std::uint32_t& cp, std::size_t& n) {
    const auto byte = [&](std::size_t k) { return std::uint8_t(text[k]); };
    const std::uint8_t b0 = byte(i);
    std::uint32_t min = 0;
    if (b0 < 0x80) return cp = b0, n = 1, true;
    if (b0 >= 0xC2 && b0 <= 0xDF) cp = b0 & 0x1F, n = 2, min = 0x80;
    else if (b0 >= 0xE0 && b0 <= 0xEF) cp = b0 & 0x0F, n = 3, min = 0x800;
    else if (b0 >= 0xF0 && b0 <= 0xF4) cp = b0 & 0x07, n = 4, min = 0x10000;
    else return false;  // a continuation byte, C0, C1 or F5 .. FF
    if (i + n > text.size()) return false;
    for (std::size_t k = 1; k < n; ++k) {
        if ((byte(i + k) & 0xC0) != 0x80) return false;
        cp = (cp << 6) | (byte(i + k) & 0x3F);
    }
    return cp >= min && cp <= 0x10FFFF && !(cp >= 0xD800 && cp <= 0xDFFF);
}

std::string encode(std::uint32_t cp) {
    std::string s;
    if (cp < 0x80) {
        s += char(cp);
    } else if (cp < 0x800) {
        s += char(0xC0 | (cp >> 6)), s += char(0x80 | (cp & 0x3F));
    } else if (cp < 0x10000) {
        s += char(0xE0 | (cp >> 12)), s += char(0x80 | ((cp >> 6) & 0x3F));
        s += char(0x80 | (cp & 0x3F));
    } else {
        s += char(0xF0 | (cp >> 18)), s += char(0x80 | ((cp >> 12) & 0x3F));
        s += char(0x80 | ((cp >> 6) & 0x3F)), s += char(0x80 | (cp & 0x3F));
    }
    return s;
}

std::string read_file(const std::string& path) {
    std::ifstream f(path, std::ios::binary);
    if (!f) throw bad(path, "cannot be read");
    std::ostringstream s;
    s << f.rdbuf();
    if (f.bad()) throw bad(path, "cannot be read");
    return s.str();
}

void write_file(const std::string& text, const std::string& path) {
    std::ofstream f(path, std::ios::binary | std::ios::trunc);
    f << text;
    if (!f) throw bad(path, "cannot be written");
}

// A small JSON reader: enough for a list of strings and a flat object of
// whole numbers and strings.
struct Json {
    const std::string& s;
    const std::string& where;
    std::size_t i = 0;

    std::invalid_argument error(const std::string& what) const {
        return bad(where, what + " at byte " + std::to_string(i));
    }
    void space() {
        while (i < s.size() && (s[i] == ' ' || s[i] == '\n' || s[i] == '\r' || s[i] == '\t'))
            ++i;
    }
    bool eat(char c) {
        space();
        if (i < s.size() && s[i] == c) return ++i, true;
        return false;
    }
    void expect(char c) {
        if (!eat(c)) throw error(std::string("expected '") + c + "'");
    }
    std::uint32_t hex4() {
        if (i + 4 > s.size()) throw error("a \\u escape cut short");
        std::uint32_t v = 0;
        for (int k = 0; k < 4; ++k, ++i) {
            const char c = s[i];
            const int d = c >= '0' && c <= '9' ? c - '0'
                          : c >= 'a' && c <= 'f' ? c - 'a' + 10
                          : c >= 'A' && c <= 'F' ? c - 'A' + 10 : -1;
            if (d < 0) throw error("a bad \\u escape");
            v = v * 16 + std::uint32_t(d);
        }
        return v;
    }
    std::string string() {
        expect('"');
        std::string out;
        while (true) {
            if (i >= s.size()) throw error("a string not closed");
            const char c = s[i];
            if (c == '"') return ++i, out;
            if (std::uint8_t(c) < 0x20) throw error("a control character in a string");
            if (c != '\\') {
                std::uint32_t cp;
                std::size_t n;
                if (!decode(s, i, cp, n)) throw error("invalid UTF-8");
                out.append(s, i, n), i += n;
                continue;
            }
            if (++i >= s.size()) throw error("an escape cut short");
            const char e = s[i++];
            static const std::map<char, char> simple = {{'"', '"'}, {'\\', '\\'}, {'/', '/'},
                {'b', '\b'}, {'f', '\f'}, {'n', '\n'}, {'r', '\r'}, {'t', '\t'}};
            if (simple.count(e)) {
                out += simple.at(e);
                continue;
            }
            if (e != 'u') throw error("a bad escape");
            std::uint32_t cp = hex4();
            if (cp >= 0xDC00 && cp <= 0xDFFF) throw error("a lone low surrogate");
            if (cp >= 0xD800 && cp <= 0xDBFF) {  // a pair: \uD83D\uDE00
                if (i + 2 > s.size() || s[i] != '\\' || s[i + 1] != 'u')
                    throw error("a lone high surrogate");
                i += 2;
                const std::uint32_t lo = hex4();
                if (lo < 0xDC00 || lo > 0xDFFF) throw error("a lone high surrogate");
                cp = 0x10000 + ((cp - 0xD800) << 10) + (lo - 0xDC00);
            }
            out += encode(cp);
        }
    }
    double number() {  // JSON's grammar: -?(0|[1-9]d*)(.d+)?([eE][+-]?d+)?
        space();
        const std::size_t from = i;
        const auto digits = [&] {
            const std::size_t d = i;
            while (i < s.size() && s[i] >= '0' && s[i] <= '9') ++i;
            if (i == d) throw error("expected a number");
        };
        if (i < s.size() && s[i] == '-') ++i;
        digits();
        if (i < s.size() && s[i] == '.') ++i, digits();
        if (i < s.size() && (s[i] == 'e' || s[i] == 'E')) {
            ++i;
            if (i < s.size() && (s[i] == '+' || s[i] == '-')) ++i;
            digits();
        }
        const double v = std::strtod(s.substr(from, i - from).c_str(), nullptr);
        if (!std::isfinite(v)) throw error("a number too large");
        return v;
    }
    void end() {
        space();
        if (i != s.size()) throw error("text after the JSON value");
    }
};

std::string quoted(const std::string& t) {
    std::string out = "\"";
    for (const char c : t) {
        if (c == '"' || c == '\\') out += '\\', out += c;
        else if (c == '\n') out += "\\n";
        else if (c == '\r') out += "\\r";
        else if (c == '\t') out += "\\t";
        else if (std::uint8_t(c) < 0x20) {
            static const char* hex = "0123456789abcdef";
            out += "\\u00", out += hex[std::uint8_t(c) >> 4], out += hex[c & 0xF];
        } else {
            out += c;
        }
    }
    return out + "\"";
}

}  // namespace

std::vector<std::string> utf8_chars(const std::string& text, const std::string& where) {
    std::vector<std::string> out;
    for (std::size_t i = 0; i < text.size();) {
        std::uint32_t cp;
        std::size_t n;
        if (!decode(text, i, cp, n))
            throw bad(where, "invalid UTF-8 at byte " + std::to_string(i));
        out.push_back(text.substr(i, n));
        i += n;
    }
    return out;
}

std::vector<Poem> parse_poems(const std::string& text, const std::string& where) {
    utf8_chars(text, where);  // the whole text first: the error names the byte
    // A fortune file ends its poems with '%' lines only; a plain text, with empty lines.
    const bool fortune = text.rfind("%\n", 0) == 0 || text.find("\n%\n") != std::string::npos ||
                         text.find("\n%\r\n") != std::string::npos || text == "%" ||
                         (text.size() >= 2 && text.compare(text.size() - 2, 2, "\n%") == 0);
    std::vector<Poem> poems;
    Poem poem;
    std::size_t start = 0;
    while (start < text.size()) {
        std::size_t stop = text.find('\n', start);
        if (stop == std::string::npos) stop = text.size();
        std::string line = text.substr(start, stop - start);
        start = stop + 1;
        if (!line.empty() && line.back() == '\r') line.pop_back();
        if (line.empty() && fortune) continue;  // a blank line inside a fortune's poem
        if (line.empty() || line == "%") {  // the end of a poem
            if (!poem.empty()) poems.push_back(poem), poem.clear();
            continue;
        }
        if (line[0] == '\x1b') continue;  // a coloured title or author line
        for (std::string& c : utf8_chars(line, where)) poem.push_back(std::move(c));
        poem.push_back("\n");
    }
    if (!poem.empty()) poems.push_back(poem);
    return poems;
}

std::vector<Poem> read_poems(const std::string& path) {
    std::vector<Poem> poems = parse_poems(read_file(path), path);
    if (poems.empty()) throw bad(path, "no poem in it");
    return poems;
}

const std::string Vocab::unk = "<unk>", Vocab::poem = "<poem>", Vocab::line_end = "\n";

Vocab::Vocab(std::vector<std::string> tokens) : tokens_(std::move(tokens)) {
    if (tokens_.size() < 3 || tokens_[0] != unk || tokens_[1] != poem || tokens_[2] != line_end)
        throw std::invalid_argument(
            "a vocabulary starts with \"<unk>\", \"<poem>\", \"\\n\" (ids 0, 1, 2)");
    for (std::size_t k = 0; k < tokens_.size(); ++k) {
        if (tokens_[k].empty())
            throw std::invalid_argument("vocabulary token " + std::to_string(k) + " is empty");
        utf8_chars(tokens_[k], "vocabulary token " + std::to_string(k));
        if (!ids_.emplace(tokens_[k], std::int32_t(k)).second)
            throw std::invalid_argument("vocabulary token " + std::to_string(k) +
                                        " occurs twice");
    }
}

std::int32_t Vocab::id(const std::string& token) const {
    const auto it = ids_.find(token);
    return it == ids_.end() ? 0 : it->second;
}

Vocab build_vocab(const std::vector<Poem>& poems) {
    std::map<std::string, std::size_t> count;  // ordered by bytes: by code point
    for (const Poem& p : poems)
        for (const std::string& c : p) ++count[c];
    std::vector<std::string> tokens = {Vocab::unk, Vocab::poem, Vocab::line_end};
    for (const char* mark : {"，", "。", "？", "！", "；", "：", "、", ",", ".", "?", "!", ";", ":"})
        if (count.count(mark)) tokens.push_back(mark);
    std::vector<std::pair<std::string, std::size_t>> rest;
    for (const auto& [c, n] : count)
        if (!is_mark(c) && c != Vocab::line_end && c != Vocab::unk && c != Vocab::poem)
            rest.emplace_back(c, n);
    std::stable_sort(rest.begin(), rest.end(),
                     [](const auto& a, const auto& b) { return a.second > b.second; });
    for (const auto& r : rest) tokens.push_back(r.first);
    return Vocab(tokens);
}

void save_vocab(const Vocab& v, const std::string& path) {
    std::string out = "[";
    for (std::size_t k = 0; k < v.size(); ++k) out += (k ? ", " : "") + quoted(v.tokens()[k]);
    write_file(out + "]\n", path);
}

Vocab parse_vocab(const std::string& json, const std::string& where) {
    Json j{json, where};
    std::vector<std::string> tokens;
    j.expect('[');
    if (!j.eat(']')) {
        do tokens.push_back(j.string());
        while (j.eat(','));
        j.expect(']');
    }
    j.end();
    try {
        return Vocab(tokens);
    } catch (const std::invalid_argument& e) {
        throw bad(where, e.what());
    }
}

Vocab load_vocab(const std::string& path) { return parse_vocab(read_file(path), path); }

void save_numbers(const JsonNumbers& fields, const std::string& path) {
    std::string out = "{";
    for (std::size_t k = 0; k < fields.size(); ++k) {
        char v[32];
        std::snprintf(v, sizeof v, "%.17g", fields[k].second);
        out += (k ? ", " : "") + quoted(fields[k].first) + ": " + v;
    }
    write_file(out + "}\n", path);
}

JsonNumbers load_numbers(const std::string& path) {
    const std::string text = read_file(path);
    Json j{text, path};
    JsonNumbers fields;
    j.expect('{');
    if (!j.eat('}')) {
        do {
            std::string name = j.string();
            j.expect(':');
            j.space();
            if (j.i < text.size() && text[j.i] == '"') j.string();  // a note: skipped
            else fields.emplace_back(std::move(name), j.number());
        } while (j.eat(','));
        j.expect('}');
    }
    j.end();
    return fields;
}

double number(const JsonNumbers& fields, const std::string& name, const std::string& where) {
    for (const auto& [n, v] : fields)
        if (n == name) return v;
    throw bad(where, "no \"" + name + "\"");
}

}  // namespace mha
