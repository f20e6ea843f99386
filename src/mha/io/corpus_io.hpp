/// @file corpus_io.hpp
/// @brief Poems from a text file, a vocabulary of characters as vocab.json,
///        a checkpoint's config.json.
///
/// A corpus is UTF-8 text cut into poems:
/// - in a *fortune file* (a text with a line holding only `%`, such as
///   /usr/share/games/fortunes/tang300) a `%` line ends a poem and empty
///   lines are dropped (tang300 has four, after the prose preface of a
///   poem); in any other text an empty line ends a poem;
/// - a line starting with ESC (`\x1b`, an ANSI colour code) is dropped: in
///   tang300 the title and the author lines are wrapped in colour codes,
///   so only the bodies remain;
/// - every other line is kept, its characters then "\n" (a `\r` before the
///   line end is dropped). A poem is the lines between two ends, if any.
///
/// A token is one character (one Unicode code point, as its UTF-8 bytes),
/// "\n", or the names `<unk>` and `<poem>`.
#pragma once

#include <cstdint>
#include <string>
#include <unordered_map>
#include <vector>

namespace mha {

/// @defgroup corpus Corpus: poems, characters and their ids
/// @brief A text cut into poems, the characters of UTF-8, a vocabulary.
/// @{

/// One poem: its characters and a "\n" after each line.
using Poem = std::vector<std::string>;

/// The characters of UTF-8 text, each as its bytes. Strict: an overlong
/// form, a surrogate (U+D800 to U+DFFF), a code point above U+10FFFF, a stray
/// continuation byte or a character cut short is refused.
/// @param text  the bytes
/// @param where what to name in the error, e.g. the file's path
/// @return      one string per code point
/// @throws std::invalid_argument "WHERE: invalid UTF-8 at byte N" (0-based).
std::vector<std::string> utf8_chars(const std::string& text, const std::string& where);

/// A text cut into poems, by the rules of this file's header.
/// @param text  the whole text, UTF-8
/// @param where what to name in the error
/// @return      the poems, in the text's order (none for an empty text)
/// @throws std::invalid_argument for invalid UTF-8 (as utf8_chars()).
std::vector<Poem> parse_poems(const std::string& text, const std::string& where);

/// parse_poems() of a file.
/// @param path the file
/// @return     its poems, at least one
/// @throws std::invalid_argument naming the file when it cannot be read,
///         is not UTF-8 or holds no poem.
std::vector<Poem> read_poems(const std::string& path);

/// Token ids: `<unk>` = 0 (a character the vocabulary never saw),
/// `<poem>` = 1 (starts every poem), "\n" = 2, then the rest.
class Vocab {
public:
    static const std::string unk;       ///< `<unk>`, id 0
    static const std::string poem;      ///< `<poem>`, id 1
    static const std::string line_end;  ///< "\n", id 2
    /// @param tokens the token of each id; tokens 0, 1, 2 must be `<unk>`,
    ///               `<poem>` and "\n", each token valid UTF-8 and unique
    /// @throws std::invalid_argument naming what is wrong.
    explicit Vocab(std::vector<std::string> tokens);
    /// @param token a token
    /// @return      its id, 0 when unknown
    std::int32_t id(const std::string& token) const;
    /// @param id an id in [0, size())
    /// @return   its token
    const std::string& token(std::int32_t id) const { return tokens_.at(std::size_t(id)); }
    /// @return V
    std::size_t size() const { return tokens_.size(); }
    /// @return the tokens, by id
    const std::vector<std::string>& tokens() const { return tokens_; }

private:
    std::vector<std::string> tokens_;
    std::unordered_map<std::string, std::int32_t> ids_;
};

/// The vocabulary of @p poems: `<unk>`, `<poem>`, "\n", then the marks
/// (is_mark()) in the order `，。？！；：、,.?!;:` where they occur, then the
/// other characters, most frequent first (ties by code point).
/// @param poems the training poems only
/// @return      the vocabulary
Vocab build_vocab(const std::vector<Poem>& poems);

/// Writes the vocabulary as vocab.json: a JSON list of strings, index = id.
/// @param v    the vocabulary
/// @param path the file
/// @throws std::invalid_argument when it cannot be written.
void save_vocab(const Vocab& v, const std::string& path);

/// Reads what save_vocab() writes (any JSON list of strings: escapes
/// `\n`, `\"`, `\\`, `\/`, `\b`, `\f`, `\r`, `\t`, `\uXXXX` with surrogate pairs).
/// @param path the file
/// @return     the vocabulary
/// @throws std::invalid_argument with one line naming the file, for bad
///         JSON, a value not a string, or tokens Vocab() refuses.
Vocab load_vocab(const std::string& path);

/// parse_vocab() of JSON text (what load_vocab() reads; for the fuzzer).
/// @param json  the text
/// @param where what to name in the error
/// @return      the vocabulary
/// @throws std::invalid_argument as load_vocab().
Vocab parse_vocab(const std::string& json, const std::string& where);

/// A flat JSON object of numbers, as config.json holds:
/// `{"vocab": 2400, "t_max": 64, ..., "lr": 0.001}`.
using JsonNumbers = std::vector<std::pair<std::string, double>>;

/// Writes @p fields as one JSON object, in their order, each number to 17
/// significant digits (a whole number without a point: `64`, not `64.0`).
/// @param fields the names and values
/// @param path   the file
/// @throws std::invalid_argument when it cannot be written.
void save_numbers(const JsonNumbers& fields, const std::string& path);

/// Reads a flat JSON object whose values are numbers (a string value, a
/// note, is skipped).
/// @param path the file
/// @return     its fields, in the file's order
/// @throws std::invalid_argument naming the file for bad JSON.
JsonNumbers load_numbers(const std::string& path);

/// The value of @p name in @p fields.
/// @param fields what load_numbers() read
/// @param name   the field, e.g. "t_max"
/// @param where  what to name in the error
/// @return       its value
/// @throws std::invalid_argument when it is missing.
double number(const JsonNumbers& fields, const std::string& name, const std::string& where);

/// @}

}  // namespace mha
