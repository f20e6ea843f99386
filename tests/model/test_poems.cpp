// Tests for mha/model/poems.hpp: the split by index, the ids and the
// windows (every target once, none across poems), batches cut from the text,
// the n-gram baselines (each a distribution, their losses from their
// definitions, alpha chosen by validation), training (the same bits twice,
// the best checkpoint the lowest validation loss logged), the log's file, and
// the committed data/tang/: its vocabulary is the training split's and the
// first 20 steps of its training give its log's losses exactly (skipped,
// with the reason, without fortunes-zh or data/tang/, or where OpenBLAS runs
// another sgemm kernel than the log's: ctest's data_tang.log_bits_on_haswell_kernel
// then runs the case with that kernel chosen).
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <numeric>
#include <set>
#include <string>
#include <vector>

#include "mha/fast/parallel.hpp"
#include "mha/io/corpus_io.hpp"
#include "mha/model/poems.hpp"

extern "C" char* openblas_get_corename(void) __attribute__((weak));  // OpenBLAS only

namespace poems_test {

namespace fs = std::filesystem;

// n poems of a few characters, poem i starting with a letter of its own.
std::vector<mha::Poem> toy_poems(std::size_t n) {
    std::vector<mha::Poem> poems;
    for (std::size_t i = 0; i < n; ++i)
        poems.push_back({std::string(1, char('a' + i % 26)), "x", "，", "y", "z", "。", "\n"});
    return poems;
}

const fs::path kTang = fs::path(MHA_TEST_DATA) / ".." / ".." / "data" / "tang";
// fortunes-zh's poems, or the file MHA_TANG300 names (a missing one: as without fortunes-zh).
const std::string kCorpus = std::getenv("MHA_TANG300") && *std::getenv("MHA_TANG300")
                                ? std::getenv("MHA_TANG300")
                                : "/usr/share/games/fortunes/tang300";

}  // namespace poems_test

using namespace poems_test;

TEST_CASE("split_poems: index % 10 == 9 held out and == 4 validation and the rest training") {
    const std::vector<mha::Poem> p = toy_poems(25);
    const mha::PoemSplit s = mha::split_poems(p);
    REQUIRE(s.held_out.size() == 2);  // 9, 19
    REQUIRE(s.validation.size() == 3);  // 4, 14, 24
    REQUIRE(s.train.size() == 20);
    CHECK(s.held_out[1] == p[19]);
    CHECK(s.validation[2] == p[24]);
    CHECK(s.train[4] == p[5]);  // 0 1 2 3 5
}

TEST_CASE("poem_ids and poem_windows: <poem> first and every target once and no window across poems") {
    const std::vector<mha::Poem> p = toy_poems(3);
    const mha::Vocab v = mha::build_vocab({p[0], p[1]});  // 'c' is unknown
    const std::vector<std::int32_t> ids = mha::poem_ids(p, v);
    REQUIRE(ids.size() == 3 * 8);
    CHECK(ids[0] == 1);
    CHECK(ids[8] == 1);
    CHECK(ids[16 + 1] == 0);  // 'c': <unk>
    CHECK(ids[7] == 2);       // "\n"
    for (const std::size_t t_max : {1, 3, 7, 8, 64}) {
        const auto w = mha::poem_windows(p, v, t_max);
        std::size_t targets = 0;
        std::vector<std::int32_t> joined;  // each window's targets, in order
        for (const auto& win : w) {
            CHECK(win.size() >= 2);
            CHECK(win.size() <= t_max + 1);
            targets += win.size() - 1;
            joined.insert(joined.end(), win.begin() + 1, win.end());
        }
        CHECK(targets == 3 * 7);  // every id but the <poem>s
        std::vector<std::int32_t> want;
        for (std::size_t i = 0; i < ids.size(); ++i)
            if (i % 8 != 0) want.push_back(ids[i]);
        CHECK(joined == want);
    }
}

TEST_CASE("poem_windows: a window that does not reach the poem's end ends at a line end") {
    const mha::Poem poem = {"a", "b", "\n", "c", "d", "e", "\n", "f", "\n"};
    const mha::Vocab v = mha::build_vocab({poem});
    const auto w = mha::poem_windows({poem}, v, 5);  // <poem> a b \n | \n c d e \n | \n f \n
    REQUIRE(w.size() == 3);
    CHECK(w[0].size() == 4);
    CHECK(w[1].size() == 5);
    CHECK(w[1][0] == 2);
    CHECK(w[2][0] == 2);
    CHECK(w[2].size() == 3);
    const auto long_line = mha::poem_windows({{"a", "b", "c", "d", "\n"}}, v, 2);
    REQUIRE(long_line.size() == 3);  // no line end to cut at: T_max + 1 ids a window
    CHECK(long_line[0].size() == 3);
}

TEST_CASE("poem_batch: windows start at a <poem> or a \\n a line follows, and y is x shifted by one") {
    // <poem> a b c \n d e \n <poem> f \n g h i \n: ids 1, 2 and letters from 10
    const std::vector<std::int32_t> ids = {1, 10, 11, 12, 2, 13, 14, 2, 1, 15, 2, 16, 17, 18, 2};
    mha::Rng rng(3);
    const mha::TokenBatch b = mha::poem_batch(ids, 40, 3, rng);
    REQUIRE(b.x.shape(0) == 40);
    REQUIRE(b.x.shape(1) == 3);
    std::set<std::size_t> seen;
    for (std::size_t i = 0; i < 40; ++i) {
        std::size_t o = 0;  // where row i was cut: its three ids match there
        while (!(ids[o] == b.x(i, 0) && ids[o + 1] == b.x(i, 1) && ids[o + 2] == b.x(i, 2))) ++o;
        seen.insert(o);
        CHECK((ids[o] == 1 || (ids[o] == 2 && ids[o + 1] != 1)));
        for (std::size_t j = 0; j < 3; ++j) CHECK(b.y(i, j) == ids[o + j + 1]);
    }
    // every 1, and every 2 not before a 1 (7 ends a poem), that leaves 4 ids
    CHECK(seen == std::set<std::size_t>{0, 4, 8, 10});
    CHECK_THROWS_AS(mha::poem_batch(ids, 1, 15, rng), std::invalid_argument);
}

namespace poems_test {

// Ids 0-4: <unk> <poem> \n ， 。, then a-g from 5.
mha::Vocab line_vocab() {  // a function: Vocab's names are statics of another file
    return mha::Vocab({"<unk>", "<poem>", "\n", "，", "。", "a", "b", "c", "d", "e", "f", "g"});
}

// Lines of shape 2 2 (three), one of shape 1 2, and a last line without a mark.
std::vector<mha::Poem> shaped_poems() {
    const auto line = [](const std::string& s) {  // one token per byte, then "\n"
        mha::Poem p;
        for (std::size_t i = 0; i < s.size();) {
            const std::size_t n = (s[i] & 0x80) ? 3 : 1;  // "，" and "。" are 3 bytes
            p.push_back(s.substr(i, n)), i += n;
        }
        p.push_back("\n");
        return p;
    };
    mha::Poem one = line("ab，cd。"), two = line("bc，de。");
    for (const auto& l : {line("ef，ga。"), line("a，bc。")})
        one.insert(one.end(), l.begin(), l.end());
    const mha::Poem tail = line("abc");
    two.insert(two.end(), tail.begin(), tail.end());
    return {one, two};
}

}  // namespace poems_test

TEST_CASE("line_bank and made_up_poem: lines by shape, the rare shapes left out, one shape a poem") {
    const auto ids = [](std::initializer_list<std::int32_t> l) {
        return std::vector<std::int32_t>(l);
    };
    const mha::LineBank all = mha::line_bank(shaped_poems(), line_vocab(), 1);
    REQUIRE(all.size() == 2);  // 2 2 first seen, then 1 2; "abc" has no mark
    using Lines = std::vector<std::vector<std::int32_t>>;
    CHECK(all[0] == Lines{ids({5, 6, 3, 7, 8, 4, 2}), ids({9, 10, 3, 11, 5, 4, 2}),
                          ids({6, 7, 3, 8, 9, 4, 2})});
    CHECK(all[1] == Lines{ids({5, 3, 6, 7, 4, 2})});
    const mha::LineBank bank = mha::line_bank(shaped_poems(), line_vocab(), 2);
    REQUIRE(bank.size() == 1);  // 1 2 has one line only
    mha::Rng rng(7);
    std::set<std::vector<std::int32_t>> used;
    for (int n = 0; n < 20; ++n) {
        const std::vector<std::int32_t> p = mha::made_up_poem(bank, 23, rng);
        REQUIRE(p.size() == 24);
        CHECK(p[0] == 1);  // <poem>, then whole lines of the bank, the last one cut
        for (std::size_t at = 1; at < p.size(); at += 7) {
            const std::size_t n_ids = std::min<std::size_t>(7, p.size() - at);
            const std::vector<std::int32_t> piece(p.begin() + long(at),
                                                  p.begin() + long(at + n_ids));
            const bool found = std::any_of(bank[0].begin(), bank[0].end(), [&](const auto& l) {
                return std::equal(piece.begin(), piece.end(), l.begin());
            });
            CHECK(found);
            if (n_ids == 7) used.insert(piece);
        }
    }
    CHECK(used.size() == 3);  // every line is drawn
    CHECK_THROWS_AS(mha::made_up_poem({}, 8, rng), std::invalid_argument);
}

TEST_CASE("poem_batch with made-up poems: share 0 draws as before, the share made up, bad share refused") {
    const std::vector<std::int32_t> ids = {1, 10, 11, 12, 2, 13, 14, 2, 1, 15, 2, 16, 17, 18, 2};
    const mha::LineBank bank = mha::line_bank(shaped_poems(), line_vocab(), 2);
    mha::Rng a(3), b(3);
    const mha::TokenBatch plain = mha::poem_batch(ids, 40, 3, a);
    const mha::TokenBatch none = mha::poem_batch(ids, 40, 3, b, bank, 0.0);
    CHECK(plain.x == none.x);
    CHECK(plain.y == none.y);
    CHECK(a.uniform(0, 1) == b.uniform(0, 1));  // the same draws, no more
    for (const double share : {0.25, 1.0}) {
        const mha::TokenBatch m = mha::poem_batch(ids, 400, 3, a, bank, share);
        std::size_t made_up = 0;  // rows <poem> x y ， : the text has no mark
        for (std::size_t i = 0; i < 400; ++i) {
            made_up += m.y(i, 2) == 3;
            if (m.y(i, 2) == 3) CHECK(m.x(i, 0) == 1);
            for (std::size_t j = 0; j < 2; ++j) CHECK(m.y(i, j) == m.x(i, j + 1));
        }
        CHECK(double(made_up) == doctest::Approx(400 * share).epsilon(0.2));  // binomial: sd 9
    }
    CHECK_THROWS_AS(mha::poem_batch(ids, 1, 3, a, bank, 1.5), std::invalid_argument);
    CHECK_THROWS_AS(mha::poem_batch(ids, 1, 3, a, bank, -0.1), std::invalid_argument);
    CHECK_THROWS_AS(mha::poem_batch(ids, 1, 3, a, {}, 0.5), std::invalid_argument);
}

TEST_CASE("Ngrams: each a distribution over V and losses from the counts and alpha by validation") {
    const std::vector<std::int32_t> ids = {1, 3, 4, 3, 4, 3, 5, 2};  // 7 targets
    const std::size_t V = 6;
    const mha::Ngrams g(ids, V, 2.0);
    double uni = 0, bi = 0;
    for (std::int32_t b = 0; b < 6; ++b) uni += g.unigram(b), bi += g.bigram(3, b);
    CHECK(uni == doctest::Approx(1.0).epsilon(1e-12));
    CHECK(bi == doctest::Approx(1.0).epsilon(1e-12));
    CHECK(g.unigram(4) == doctest::Approx(3.0 / 13));  // (c 2 + 1) / (7 + 6)
    // after 3: 4 twice, 5 once; (2 + 2 p1(4)) / (3 + 2)
    CHECK(g.bigram(3, 4) == doctest::Approx((2 + 2 * 3.0 / 13) / 5));
    const std::vector<std::vector<std::int32_t>> w = {{3, 4, 0}};
    const auto p2 = g.predictions(w, 2), p1 = g.predictions(w, 1);
    REQUIRE(p2.size() == 2);
    CHECK(p2[0].loss == doctest::Approx(-std::log(g.bigram(3, 4))));
    CHECK(p2[1].loss == doctest::Approx(-std::log(g.bigram(4, 0))));
    CHECK(p2[0].correct);  // 4 is the likeliest after 3
    CHECK(p1[1].loss == doctest::Approx(-std::log(1.0 / 13)));
    const mha::Ngrams fit = mha::fit_ngrams(ids, V, w);
    for (const double a : {0.5, 1.0, 2.0, 5.0, 10.0, 20.0, 50.0, 100.0, 200.0})
        CHECK(mha::mean_loss(fit.predictions(w, 2)) <=
              mha::mean_loss(mha::Ngrams(ids, V, a).predictions(w, 2)));
}

TEST_CASE("train_poems: the same bits twice and the best checkpoint is the lowest validation") {
    const std::vector<mha::Poem> p = toy_poems(40);
    const mha::PoemSplit s = mha::split_poems(p);
    const mha::Vocab v = mha::build_vocab(s.train);
    const std::vector<std::int32_t> ids = mha::poem_ids(s.train, v);
    const auto val = mha::poem_windows(s.validation, v, 8);
    mha::PoemTraining c;
    c.model = {v.size(), 8, 16, 2, 32, 2};
    c.batch = 4, c.steps = 40, c.eval_every = 5, c.patience = 100, c.lr = 3e-3f;
    const mha::PoemRun a = mha::train_poems(c, ids, val), b = mha::train_poems(c, ids, val);
    REQUIRE(a.log.size() == 40);
    double lowest = mha::mean_loss(mha::model_predictions(mha::make_language_model(c.model, 34),
                                                          val));
    for (std::size_t i = 0; i < a.log.size(); ++i) {
        CHECK(a.log[i].train_loss == b.log[i].train_loss);
        CHECK(std::isnan(a.log[i].val_loss) == ((i + 1) % 5 != 0));
        if (!std::isnan(a.log[i].val_loss)) lowest = std::min(lowest, a.log[i].val_loss);
    }
    CHECK(a.best_val == lowest);
    CHECK(mha::mean_loss(mha::model_predictions(a.best, val)) == a.best_val);
    CHECK(a.log.back().train_loss < a.log.front().train_loss);
    const mha::PoemRun first = mha::train_poems(c, ids, val, 7);  // stop_after 7
    REQUIRE(first.log.size() == 7);
    CHECK(first.log[6].train_loss == a.log[6].train_loss);
    c.patience = 1;  // stops at the first validation that is not a new best
    const mha::PoemRun early = mha::train_poems(c, ids, val);
    CHECK(early.log.size() <= 40);
    CHECK(early.log.back().step % 5 == 0);
}

TEST_CASE("train_log.tsv: written and read back to the bit") {
    const std::vector<mha::TrainLogRow> log = {{1, 6.123456789012345, std::nan(""), 1e-4f},
                                               {2, 5.5, 5.75, 2e-4f}};
    const std::string path = (fs::temp_directory_path() / "mha_poems_log.tsv").string();
    mha::save_train_log(log, path);
    const std::vector<mha::TrainLogRow> back = mha::load_train_log(path);
    REQUIRE(back.size() == 2);
    CHECK(back[0].train_loss == log[0].train_loss);
    CHECK(std::isnan(back[0].val_loss));
    CHECK(back[1].val_loss == 5.75);
    CHECK(back[1].lr == 2e-4f);
}

TEST_CASE("data/tang: the training split's vocabulary and 20 steps give the log's losses exactly") {
    // A long test (20 steps of the poem model): only data_tang.log_bits_on_haswell_kernel,
    // which sets MHA_TANG_LOG_CHECK, runs it; scripts/test.sh --all and CI run that test.
    if (!std::getenv("MHA_TANG_LOG_CHECK")) {
        MESSAGE("skipped here: data_tang.log_bits_on_haswell_kernel runs it (a long test)");
        return;
    }
    if (!fs::exists(kCorpus) || !fs::exists(kTang / "train_log.tsv")) {
        MESSAGE("skipped: needs fortunes-zh (" << kCorpus << ") and data/tang/");
        return;
    }
    // The log's bits are those of OpenBLAS's Haswell sgemm, which Zen runs too; an
    // AVX-512 core (SkylakeX, ...) sums in another order and ends a few ulps away.
    const std::string core = openblas_get_corename ? openblas_get_corename() : "not OpenBLAS";
    if (core != "Haswell" && core != "Zen") {
        MESSAGE("skipped: the log was made with OpenBLAS's Haswell sgemm, this run has "
                << core << "'s; data_tang.log_bits_on_haswell_kernel runs it with that one");
        return;
    }
    // and with 2 workers: with 1, the losses end a few ulps away (seen, cause not traced)
    if (mha::fast::worker_count() != 2) {
        MESSAGE("skipped: the log was made with 2 workers, this run has "
                << mha::fast::worker_count()
                << "; data_tang.log_bits_on_haswell_kernel runs it with 2");
        return;
    }
    const mha::PoemSplit s = mha::split_poems(mha::read_poems(kCorpus));
    const mha::Vocab v = mha::build_vocab(s.train);
    CHECK(mha::load_vocab((kTang / "vocab.json").string()).tokens() == v.tokens());
    const std::string config = (kTang / "config.json").string();
    const mha::JsonNumbers n = mha::load_numbers(config);
    const auto get = [&](const char* name) { return mha::number(n, name, config); };
    mha::PoemTraining c;
    c.model = {std::size_t(get("vocab")), std::size_t(get("t_max")),
               std::size_t(get("embed_dim")), std::size_t(get("num_heads")),
               std::size_t(get("ff_dim")), std::size_t(get("num_layers"))};
    c.batch = std::size_t(get("batch")), c.steps = int(get("steps")), c.lr = float(get("lr"));
    c.clip = get("clip"), c.eval_every = int(get("eval_every"));
    c.patience = int(get("patience")), c.seed = std::uint64_t(get("seed"));
    const mha::PoemTraining saved = mha::load_poem_checkpoint(kTang.string()).training;
    c.made_up = saved.made_up, c.dropout = saved.dropout, c.smoothing = saved.smoothing;
    const auto val = mha::poem_windows(s.validation, v, c.model.max_len);
    const mha::PoemRun run = mha::train_poems(c, mha::poem_ids(s.train, v), val, 20, nullptr,
                                              mha::line_bank(s.train, v));
    const std::vector<mha::TrainLogRow> log = mha::load_train_log((kTang / "train_log.tsv").string());
    REQUIRE(log.size() >= 20);
    for (std::size_t i = 0; i < 20; ++i) {
        CHECK(run.log[i].train_loss == log[i].train_loss);  // the same bits
        CHECK(run.log[i].lr == log[i].lr);
    }
}

TEST_CASE("split_losses: the marks and line ends apart from the rest with the accuracy") {
    const mha::Vocab v({"<unk>", "<poem>", "\n", "，", "a"});
    const std::vector<mha::Prediction> p = {
        {1, 4, 1.0, true, 0.5}, {4, 3, 0.5, false, 0.4}, {3, 2, 0.25, true, 0.9},
        {2, 0, 3.0, false, 0.2}};
    const mha::LossSplit r = mha::split_losses(p, v);
    CHECK(r.n_marks == 2);  // ， and \n
    CHECK(r.n_rest == 2);   // a and <unk>
    CHECK(r.marks == doctest::Approx(0.375));
    CHECK(r.rest == doctest::Approx(2.0));
    CHECK(r.all == doctest::Approx(4.75 / 4));
    CHECK(r.accuracy == doctest::Approx(0.5));
}

TEST_CASE("second_line_loss: the targets after an odd count of marks since a line began") {
    const mha::Vocab v({"<unk>", "<poem>", "\n", "，", "。", "a", "b"});
    // <poem> a ， b 。 \n a ， b 。: targets a ， b 。 \n a ， b 。 (losses 1 .. 9)
    const std::vector<std::vector<std::int32_t>> w = {{1, 5, 3, 6, 4, 2}, {2, 5, 3, 6, 4}};
    std::vector<mha::Prediction> p;
    for (int i = 1; i <= 9; ++i) p.push_back({0, 0, double(i), false, 0.1});
    // second lines: b and 。 of each couplet, targets 3, 4 and 8, 9
    CHECK(mha::second_line_loss(p, w, v) == doctest::Approx((3.0 + 4 + 8 + 9) / 4));
    p.pop_back();
    CHECK_THROWS_AS(mha::second_line_loss(p, w, v), std::invalid_argument);
    CHECK(std::isnan(mha::second_line_loss({p[0]}, {{1, 5}}, v)));  // a first line only
}

TEST_CASE("poem checkpoints: saved then loaded give the same model and vocabulary and training and log") {
    const std::vector<mha::Poem> p = toy_poems(20);
    const mha::PoemSplit s = mha::split_poems(p);
    const mha::Vocab v = mha::build_vocab(s.train);
    mha::PoemTraining c;
    c.model = {v.size(), 8, 8, 2, 16, 1};
    c.batch = 2, c.steps = 6, c.eval_every = 3, c.lr = 2e-3f, c.seed = 5;
    c.dropout = 0.2f, c.smoothing = 0.1;
    const auto val = mha::poem_windows(s.validation, v, 8);
    const mha::PoemRun run = mha::train_poems(c, mha::poem_ids(s.train, v), val);
    // dropout's masks come from the seed: the same run twice is the same bits
    CHECK(mha::train_poems(c, mha::poem_ids(s.train, v), val).log.back().train_loss ==
          run.log.back().train_loss);
    mha::PoemTraining plain = c;
    plain.dropout = 0, plain.smoothing = 0;
    CHECK(mha::train_poems(plain, mha::poem_ids(s.train, v), val).log.back().train_loss !=
          run.log.back().train_loss);
    const std::string dir = (fs::temp_directory_path() / "mha_poem_checkpoint").string();
    c.made_up = 0.25;  // saved with the rest (this run drew no made-up poem)
    mha::save_poem_checkpoint({run.best, v, c, run.best_step, run.best_val, run.log}, dir);
    const mha::PoemCheckpoint back = mha::load_poem_checkpoint(dir);
    CHECK(back.training.made_up == 0.25);
    CHECK(back.training.dropout == 0.2f);
    CHECK(back.training.smoothing == 0.1);
    CHECK(back.vocab.tokens() == v.tokens());
    CHECK(back.training.lr == c.lr);
    CHECK(back.training.seed == 5);
    CHECK(back.training.model.hidden == 16);
    CHECK(back.best_step == run.best_step);
    CHECK(back.best_val == run.best_val);
    REQUIRE(back.log.size() == run.log.size());
    CHECK(back.log.back().train_loss == run.log.back().train_loss);
    const auto a = mha::model_predictions(run.best, val), b = mha::model_predictions(back.model, val);
    REQUIRE(a.size() == b.size());
    for (std::size_t i = 0; i < a.size(); ++i) CHECK(a[i].loss == b[i].loss);
    CHECK_THROWS_AS(mha::load_poem_checkpoint(dir + "/missing"), std::invalid_argument);
}

TEST_CASE("sample_poems: each from <poem> and no second <poem> and at most T_max tokens") {
    const std::vector<mha::Poem> p = toy_poems(12);
    const mha::Vocab v = mha::build_vocab(p);
    const mha::LanguageModel m = mha::make_language_model({v.size(), 10, 8, 2, 16, 1}, 3);
    mha::Rng rng(1);
    const auto poems = mha::sample_poems(m, v, 5, {1.0f, std::nullopt}, rng);
    REQUIRE(poems.size() == 5);
    for (const auto& poem : poems) {
        CHECK(poem.front() == "<poem>");
        CHECK(poem.size() <= 10);
        CHECK(std::count(poem.begin(), poem.end(), "<poem>") == 1);
    }
}

TEST_CASE("bigram_poems: a text of one pair repeated gives that pair and at most tokens ids") {
    const mha::Vocab v({"<unk>", "<poem>", "\n", "a", "b"});
    std::vector<std::int32_t> ids;
    for (int i = 0; i < 50; ++i) ids.insert(ids.end(), {1, 3, 4});  // <poem> a b, 50 times
    const mha::Ngrams g(ids, v.size(), 1e-6);  // almost no pull towards the unigram
    mha::Rng rng(2);
    const auto poems = mha::bigram_poems(g, v, 20, 10, rng);
    REQUIRE(poems.size() == 20);
    for (const auto& poem : poems)  // after b comes <poem>: the poem ends there
        CHECK(poem == std::vector<std::string>{"<poem>", "a", "b"});
    const auto short_ones = mha::bigram_poems(g, v, 3, 1, rng);
    for (const auto& poem : short_ones) CHECK(poem == std::vector<std::string>{"<poem>", "a"});
}

TEST_CASE("mean_head_patterns: the mean of model_head_patterns() over the windows") {
    const std::vector<mha::Poem> p = toy_poems(6);
    const mha::Vocab v = mha::build_vocab(p);
    const mha::LanguageModel m = mha::make_language_model({v.size(), 8, 8, 2, 16, 2}, 4);
    const auto windows = mha::poem_windows(p, v, 8);
    mha::HeadPatterns even;
    const auto mean = mha::mean_head_patterns(m, v, windows, even);
    double previous = 0;  // layer 1, head 1, by hand
    for (const auto& w : windows) {
        const std::size_t T = std::min<std::size_t>(w.size(), 8);
        mha::Tokens x({1, T});
        std::vector<std::string> tokens;
        for (std::size_t j = 0; j < T; ++j) x(0, j) = w[j], tokens.push_back(v.token(w[j]));
        previous += mha::model_head_patterns(m, x, tokens)[1][1].previous;
    }
    CHECK(mean[1][1].previous == doctest::Approx(previous / double(windows.size())));
    CHECK(even.start == doctest::Approx(even.previous));  // the same queries, 1/(q + 1)
}
