#include "mha/model/poems.hpp"

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <limits>
#include <sstream>
#include <stdexcept>

#include "mha/fast/softmax.hpp"
#include "mha/io/model_io.hpp"
#include "mha/model/poem_heads.hpp"
#include "mha/model/train.hpp"

namespace mha {

PoemSplit split_poems(const std::vector<Poem>& poems) {
    PoemSplit s;
    for (std::size_t i = 0; i < poems.size(); ++i)
        (i % 10 == 9 ? s.held_out : i % 10 == 4 ? s.validation : s.train).push_back(poems[i]);
    return s;
}

std::vector<std::int32_t> poem_ids(const std::vector<Poem>& poems, const Vocab& v) {
    std::vector<std::int32_t> ids;
    for (const Poem& p : poems) {
        ids.push_back(1);  // <poem>
        for (const std::string& c : p) ids.push_back(v.id(c));
    }
    return ids;
}

std::vector<std::vector<std::int32_t>> poem_windows(const std::vector<Poem>& poems,
                                                    const Vocab& v, std::size_t t_max) {
    if (t_max < 1) throw std::invalid_argument("poem_windows: T_max must be at least 1");
    std::vector<std::vector<std::int32_t>> windows;
    for (const Poem& p : poems) {
        const std::vector<std::int32_t> ids = poem_ids({p}, v);  // <poem> and the poem
        for (std::size_t start = 0; start + 1 < ids.size();) {
            std::size_t end = std::min(ids.size() - 1, start + t_max);  // the last id
            std::size_t cut = end;  // back to the last \n, if the window holds one
            while (cut > start && ids[cut] != 2) --cut;
            if (end < ids.size() - 1 && cut > start) end = cut;
            windows.emplace_back(ids.begin() + long(start), ids.begin() + long(end + 1));
            start = end;
        }
    }
    return windows;
}

TokenBatch poem_batch(const std::vector<std::int32_t>& ids, std::size_t batch, std::size_t t,
                      Rng& rng) {
    return poem_batch(ids, batch, t, rng, {}, 0.0);
}

TokenBatch poem_batch(const std::vector<std::int32_t>& ids, std::size_t batch, std::size_t t,
                      Rng& rng, const LineBank& bank, double share) {
    if (!(share >= 0 && share <= 1))
        throw std::invalid_argument("poem_batch: the made-up share " + std::to_string(share) +
                                    " is not in [0, 1]");
    if (share > 0 && bank.empty())
        throw std::invalid_argument("poem_batch: made-up poems need a line bank; it is empty");
    std::vector<std::size_t> starts;  // a <poem> or a \n a line follows, T + 1 ids before the end
    for (std::size_t o = 0; o + t < ids.size(); ++o)
        if (ids[o] == 1 || (ids[o] == 2 && ids[o + 1] != 1)) starts.push_back(o);
    if (starts.empty())
        throw std::invalid_argument("the training text has " + std::to_string(ids.size()) +
                                    " tokens: no line starts a window of T_max + 1 = " +
                                    std::to_string(t + 1));
    TokenBatch b{Tokens({batch, t}), Tokens({batch, t})};  // x, y [B, T]
    for (std::size_t i = 0; i < batch; ++i) {
        if (share > 0 && rng.uniform(0.0f, 1.0f) < share) {
            const std::vector<std::int32_t> w = made_up_poem(bank, t, rng);  // T + 1 ids
            for (std::size_t j = 0; j < t; ++j) b.x(i, j) = w[j], b.y(i, j) = w[j + 1];
            continue;
        }
        const std::size_t k = std::size_t(rng.uniform(0.0f, float(starts.size())));
        const std::size_t o = starts[k % starts.size()];
        for (std::size_t j = 0; j < t; ++j) b.x(i, j) = ids[o + j], b.y(i, j) = ids[o + j + 1];
    }
    return b;
}

LineBank line_bank(const std::vector<Poem>& poems, const Vocab& v, std::size_t min_lines) {
    std::vector<std::vector<std::size_t>> shapes;  // the bank's shapes, in its order
    LineBank bank;
    for (const Poem& p : poems) {
        std::vector<std::int32_t> line;
        std::vector<std::size_t> shape;  // characters between marks
        std::size_t n = 0;
        for (const std::string& c : p) {
            line.push_back(v.id(c));
            if (is_mark(c)) shape.push_back(n), n = 0;
            else if (c != Vocab::line_end) ++n;
            if (c != Vocab::line_end) continue;
            if (n == 0 && !shape.empty()) {  // a line that ends on a mark
                std::size_t k = std::size_t(std::find(shapes.begin(), shapes.end(), shape) -
                                            shapes.begin());
                if (k == shapes.size()) shapes.push_back(shape), bank.emplace_back();
                bank[k].push_back(line);
            }
            line.clear(), shape.clear(), n = 0;
        }
    }
    LineBank kept;
    for (auto& lines : bank)
        if (lines.size() >= min_lines) kept.push_back(std::move(lines));
    return kept;
}

std::vector<std::int32_t> made_up_poem(const LineBank& bank, std::size_t t, Rng& rng) {
    if (bank.empty()) throw std::invalid_argument("made_up_poem: the line bank is empty");
    const auto pick = [&rng](std::size_t n) {  // uniform in [0, n)
        return std::min(n - 1, std::size_t(rng.uniform(0.0f, float(n))));
    };
    const auto& lines = bank[pick(bank.size())];  // one shape
    std::vector<std::int32_t> poem = {1};        // <poem>
    while (poem.size() < t + 1) {
        const auto& line = lines[pick(lines.size())];
        poem.insert(poem.end(), line.begin(), line.end());
    }
    poem.resize(t + 1);
    return poem;
}

namespace {

// One target's prediction from the probabilities p [V] (in double).
Prediction predicted(const std::vector<double>& p, std::int32_t previous, std::int32_t target) {
    const std::size_t best = std::size_t(std::max_element(p.begin(), p.end()) - p.begin());
    return {previous, target, -std::log(p[std::size_t(target)]), best == std::size_t(target),
            p[best]};
}

}  // namespace

std::vector<Prediction> model_predictions(const LanguageModel& m,
                                          const std::vector<std::vector<std::int32_t>>& windows) {
    std::vector<Prediction> out;
    for (const std::vector<std::int32_t>& w : windows) {
        const std::size_t T = w.size() - 1;  // the model reads ids 0 .. T-1
        Tokens x({1, T});                    // [1, T]
        for (std::size_t j = 0; j < T; ++j) x(0, j) = w[j];
        Tensor3 logits = forward(m, x).logits;  // [1, T, V]
        const std::size_t V = logits.shape(2);
        for (std::size_t j = 0; j < T; ++j) {  // only p(target) and the largest p are kept
            float* z = &logits(0, j, 0);        // [V], one position's logits
            const std::size_t best = std::size_t(std::max_element(z, z + V) - z);
            const double top = z[best], right = z[w[j + 1]];
            const double sum = fast::exp_sum(z, V, z[best]);  // sum of e^(z - top), in place
            // -log softmax(z)_y = log sum - (z_y - top); the largest p is e^0 / sum
            out.push_back({w[j], w[j + 1], std::log(sum) - (right - top),
                           best == std::size_t(w[j + 1]), 1.0 / sum});
        }
    }
    return out;
}

double mean_loss(const std::vector<Prediction>& p) {
    double sum = 0;
    for (const Prediction& q : p) sum += q.loss;
    return p.empty() ? std::nan("") : sum / double(p.size());
}

Ngrams::Ngrams(const std::vector<std::int32_t>& ids, std::size_t vocab, double alpha)
    : V_(vocab), alpha_(alpha), uni_(vocab, 0.0), pairs_(vocab), after_(vocab, 0.0) {
    if (!(alpha > 0)) throw std::invalid_argument("Ngrams: alpha must be above 0");
    for (const std::int32_t id : ids)
        if (id < 0 || std::size_t(id) >= vocab)
            throw std::invalid_argument("Ngrams: id " + std::to_string(id) + " not in [0, " +
                                        std::to_string(vocab) + ")");
    for (std::size_t i = 1; i < ids.size(); ++i) {
        const std::int32_t a = ids[i - 1], b = ids[i];
        uni_[std::size_t(b)] += 1, N_ += 1, after_[std::size_t(a)] += 1;
        auto& row = pairs_[std::size_t(a)];
        auto it = std::find_if(row.begin(), row.end(), [b](const auto& e) { return e.first == b; });
        if (it == row.end()) row.emplace_back(b, 1.0);
        else it->second += 1;
    }
}

double Ngrams::unigram(std::int32_t b) const {
    return (uni_.at(std::size_t(b)) + 1) / (N_ + double(V_));
}

double Ngrams::bigram(std::int32_t a, std::int32_t b) const {
    double c = 0;
    for (const auto& e : pairs_.at(std::size_t(a)))
        if (e.first == b) c = e.second;
    return (c + alpha_ * unigram(b)) / (after_[std::size_t(a)] + alpha_);
}

std::vector<Prediction> Ngrams::predictions(const std::vector<std::vector<std::int32_t>>& windows,
                                            int order) const {
    std::vector<Prediction> out;
    std::vector<double> p(V_);  // [V]
    for (const std::vector<std::int32_t>& w : windows)
        for (std::size_t j = 0; j + 1 < w.size(); ++j) {
            const std::size_t a = std::size_t(w[j]);
            const double seen = order == 1 ? 0 : after_[a];  // c(a), 0 for the unigram
            const double pull = order == 1 ? 1 : alpha_ / (seen + alpha_);
            for (std::size_t k = 0; k < V_; ++k) p[k] = pull * unigram(std::int32_t(k));
            if (order == 2)  // p2 = (c(a b) + alpha p1) / (c(a) + alpha)
                for (const auto& e : pairs_[a]) p[std::size_t(e.first)] += e.second / (seen + alpha_);
            out.push_back(predicted(p, w[j], w[j + 1]));
        }
    return out;
}

Ngrams fit_ngrams(const std::vector<std::int32_t>& train_ids, std::size_t vocab,
                  const std::vector<std::vector<std::int32_t>>& validation) {
    Ngrams best(train_ids, vocab, 0.5);
    double lowest = mean_loss(best.predictions(validation, 2));
    for (const double alpha : {1.0, 2.0, 5.0, 10.0, 20.0, 50.0, 100.0, 200.0}) {
        Ngrams g(train_ids, vocab, alpha);
        const double loss = mean_loss(g.predictions(validation, 2));
        if (loss < lowest) lowest = loss, best = g;
    }
    return best;
}

PoemRun train_poems(const PoemTraining& c, const std::vector<std::int32_t>& train_ids,
                    const std::vector<std::vector<std::int32_t>>& validation, int stop_after,
                    const std::function<void(const TrainLogRow&)>& on_step,
                    const LineBank& lines) {
    LanguageModel m = make_language_model(c.model, c.seed);
    Rng batches(c.seed + 1), masks(c.seed + 2);
    const Dropout drop{c.dropout, &masks};  // the validation loss is measured without it
    Adam adam(c.lr);
    const LrSchedule schedule{c.lr, c.steps / 20, c.steps, 0.1f};
    PoemRun run{m, 0, mean_loss(model_predictions(m, validation)), {}};
    ModelTrace trace;
    int since_best = 0;
    const int last = stop_after > 0 ? std::min(stop_after, c.steps) : c.steps;
    for (int step = 1; step <= last; ++step) {
        const TokenBatch b = poem_batch(train_ids, c.batch, c.model.max_len, batches, lines,
                                        c.made_up);  // [B, T]
        adam.set_lr(schedule.at(step));
        const StepReport r = train_step(m, adam, b, trace, c.clip, true, drop, c.smoothing);
        TrainLogRow row{step, r.loss, std::nan(""), r.lr};
        if (step % c.eval_every == 0 || step == last) {
            row.val_loss = mean_loss(model_predictions(m, validation));
            if (row.val_loss < run.best_val)
                run.best = m, run.best_step = step, run.best_val = row.val_loss, since_best = 0;
            else
                ++since_best;
        }
        run.log.push_back(row);
        if (on_step) on_step(row);
        if (since_best >= c.patience) break;
    }
    return run;
}

void save_train_log(const std::vector<TrainLogRow>& log, const std::string& path) {
    std::ofstream f(path, std::ios::trunc);
    f << "step\ttrain_loss\tval_loss\tlr\n";
    char line[128];
    for (const TrainLogRow& r : log) {
        char val[40] = "";
        if (!std::isnan(r.val_loss)) std::snprintf(val, sizeof val, "%.17g", r.val_loss);
        std::snprintf(line, sizeof line, "%d\t%.17g\t%s\t%.9g\n", r.step, r.train_loss, val,
                      double(r.lr));
        f << line;
    }
    if (!f) throw std::invalid_argument(path + ": cannot be written");
}

std::vector<TrainLogRow> load_train_log(const std::string& path) {
    std::ifstream f(path);
    if (!f) throw std::invalid_argument(path + ": cannot be read");
    std::string line;
    std::getline(f, line);  // the header
    std::vector<TrainLogRow> log;
    for (int n = 2; std::getline(f, line); ++n) {
        std::vector<std::string> cell;
        std::stringstream s(line);
        for (std::string c; std::getline(s, c, '\t');) cell.push_back(c);
        try {
            if (cell.size() != 4) throw std::invalid_argument("");
            TrainLogRow r{std::stoi(cell[0]), std::stod(cell[1]),
                          cell[2].empty() ? std::nan("") : std::stod(cell[2]),
                          std::stof(cell[3])};
            log.push_back(r);
        } catch (const std::exception&) {
            throw std::invalid_argument(path + ": line " + std::to_string(n) +
                                        " is not step, train_loss, val_loss, lr");
        }
    }
    return log;
}

LossSplit split_losses(const std::vector<Prediction>& p, const Vocab& v) {
    LossSplit r;
    double marks = 0, rest = 0, right = 0;
    for (const Prediction& q : p) {
        const std::string& t = v.token(q.target);
        const bool mark = is_mark(t) || t == Vocab::line_end;
        (mark ? marks : rest) += q.loss;
        ++(mark ? r.n_marks : r.n_rest);
        right += q.correct;
    }
    r.all = mean_loss(p);
    r.marks = r.n_marks ? marks / double(r.n_marks) : std::nan("");
    r.rest = r.n_rest ? rest / double(r.n_rest) : std::nan("");
    r.accuracy = p.empty() ? std::nan("") : right / double(p.size());
    return r;
}

double second_line_loss(const std::vector<Prediction>& p,
                        const std::vector<std::vector<std::int32_t>>& windows, const Vocab& v) {
    double sum = 0;
    std::size_t i = 0, n = 0;  // p[i] predicts w[j + 1] from w[j]
    for (const std::vector<std::int32_t>& w : windows) {
        std::size_t marks = 0;  // since the line began
        for (std::size_t j = 0; j + 1 < w.size(); ++j, ++i) {
            const std::string& t = v.token(w[j]);
            marks = t == Vocab::poem || t == Vocab::line_end ? 0 : marks + is_mark(t);
            if (i < p.size() && marks % 2 == 1) sum += p[i].loss, ++n;
        }
    }
    if (i != p.size())
        throw std::invalid_argument("second_line_loss: " + std::to_string(p.size()) +
                                    " predictions for " + std::to_string(i) + " targets");
    return n ? sum / double(n) : std::nan("");
}

std::vector<std::vector<std::string>> sample_poems(const LanguageModel& m, const Vocab& v,
                                                   std::size_t n, const Sampling& s, Rng& rng) {
    const std::size_t t_max = m.pos_emb.vocab();
    std::vector<std::vector<std::string>> poems;
    if (n == 0) return poems;
    const Tokens start = xt::ones<std::int32_t>({n, std::size_t(1)});  // [n, 1]: <poem>
    const Tokens ids = generate(m, start, t_max - 1, s, rng);  // [n, T_max], all at once
    for (std::size_t i = 0; i < n; ++i) {
        std::vector<std::string> poem = {Vocab::poem};
        for (std::size_t j = 1; j < ids.shape(1) && ids(i, j) != 1; ++j)
            poem.push_back(v.token(ids(i, j)));
        poems.push_back(poem);
    }
    return poems;
}

std::vector<std::vector<std::string>> bigram_poems(const Ngrams& g, const Vocab& v,
                                                   std::size_t n, std::size_t tokens, Rng& rng) {
    std::vector<std::vector<std::string>> poems;
    for (std::size_t i = 0; i < n; ++i) {
        std::vector<std::string> poem = {Vocab::poem};
        std::int32_t a = 1;  // <poem>
        for (std::size_t k = 0; k < tokens; ++k) {
            std::int32_t b = 0;  // the first id where the running sum of p2(. | a) passes u
            double u = rng.uniform(0, 1);
            while (b + 1 < std::int32_t(v.size()) && (u -= g.bigram(a, b)) > 0) ++b;
            if (b == 1) break;  // a second <poem>: the poem ends
            poem.push_back(v.token(b)), a = b;
        }
        poems.push_back(poem);
    }
    return poems;
}

std::vector<std::vector<HeadPatterns>> mean_head_patterns(
    const LanguageModel& m, const Vocab& v,
    const std::vector<std::vector<std::int32_t>>& windows, HeadPatterns& uniform) {
    const std::size_t L = m.config().layers, H = m.config().num_heads;
    const auto fields = [](HeadPatterns& p) {
        return std::array<double*, 4>{&p.previous, &p.partner, &p.last_mark, &p.start};
    };
    std::vector<std::vector<HeadPatterns>> sum(L, std::vector<HeadPatterns>(H, {0, 0, 0, 0}));
    HeadPatterns even_sum{0, 0, 0, 0};
    std::array<double, 4> count{0, 0, 0, 0};
    for (const std::vector<std::int32_t>& w : windows) {
        const std::size_t T = std::min(w.size(), m.pos_emb.vocab());  // the ids read
        Tokens x({1, T});                                              // [1, T]
        std::vector<std::string> tokens;
        for (std::size_t j = 0; j < T; ++j) x(0, j) = w[j], tokens.push_back(v.token(w[j]));
        auto p = model_head_patterns(m, x, tokens);  // [L][H]
        Tensor2 even = xt::zeros<float>({T, T});      // [T, T], a uniform causal head
        for (std::size_t q = 0; q < T; ++q)
            for (std::size_t k = 0; k <= q; ++k) even(q, k) = 1.0f / float(q + 1);
        HeadPatterns u = head_patterns(even, tokens);
        for (std::size_t f = 0; f < 4; ++f) {
            if (std::isnan(*fields(u)[f])) continue;  // no query has that key here
            count[f] += 1, *fields(even_sum)[f] += *fields(u)[f];
            for (std::size_t l = 0; l < L; ++l)
                for (std::size_t h = 0; h < H; ++h) *fields(sum[l][h])[f] += *fields(p[l][h])[f];
        }
    }
    for (std::size_t f = 0; f < 4; ++f) {
        *fields(even_sum)[f] /= count[f];
        for (auto& layer : sum)
            for (HeadPatterns& p : layer) *fields(p)[f] /= count[f];
    }
    uniform = even_sum;
    return sum;
}

void save_poem_checkpoint(const PoemCheckpoint& c, const std::string& dir) {
    std::filesystem::create_directories(dir);
    save_model(c.model, dir);
    save_vocab(c.vocab, dir + "/vocab.json");
    const ModelConfig& m = c.training.model;
    const PoemTraining& t = c.training;
    save_numbers({{"vocab", double(m.vocab)}, {"t_max", double(m.max_len)},
                  {"embed_dim", double(m.embed_dim)}, {"num_heads", double(m.num_heads)},
                  {"ff_dim", double(m.hidden)}, {"num_layers", double(m.layers)},
                  {"batch", double(t.batch)}, {"steps", double(t.steps)}, {"lr", double(t.lr)},
                  {"clip", t.clip}, {"eval_every", double(t.eval_every)},
                  {"patience", double(t.patience)}, {"seed", double(t.seed)},
                  {"made_up", t.made_up}, {"dropout", double(t.dropout)},
                  {"label_smoothing", t.smoothing}, {"best_step", double(c.best_step)},
                  {"best_val", c.best_val}},
                 dir + "/config.json");
    save_train_log(c.log, dir + "/train_log.tsv");
}

PoemCheckpoint load_poem_checkpoint(const std::string& dir) {
    const std::string config = dir + "/config.json";
    if (!std::filesystem::exists(config))
        throw std::invalid_argument(dir + ": no config.json (not a checkpoint folder)");
    const JsonNumbers n = load_numbers(config);
    const auto size = [&](const char* name) {
        const double x = number(n, name, config);
        if (!(x >= 1 && x <= 1e9) || x != std::floor(x))
            throw std::invalid_argument(config + ": \"" + name + "\" must be a whole number >= 1");
        return std::size_t(x);
    };
    PoemTraining t;
    t.model = {size("vocab"), size("t_max"), size("embed_dim"), size("num_heads"),
               size("ff_dim"), size("num_layers")};
    t.batch = size("batch"), t.steps = int(size("steps")), t.eval_every = int(size("eval_every"));
    t.patience = int(size("patience")), t.seed = size("seed");
    t.lr = float(number(n, "lr", config)), t.clip = number(n, "clip", config);
    const auto share = [&](const char* name) {  // absent: 0, as before it was a field
        const bool there =
            std::any_of(n.begin(), n.end(), [&](const auto& f) { return f.first == name; });
        const double x = there ? number(n, name, config) : 0.0;
        if (!(x >= 0 && x <= 1))
            throw std::invalid_argument(config + ": \"" + name + "\" must be in [0, 1]");
        return x;
    };
    t.made_up = share("made_up"), t.dropout = float(share("dropout"));
    t.smoothing = share("label_smoothing");
    Vocab v = load_vocab(dir + "/vocab.json");
    if (v.size() != t.model.vocab)
        throw std::invalid_argument(dir + "/vocab.json: " + std::to_string(v.size()) +
                                    " tokens, config.json says vocab " +
                                    std::to_string(t.model.vocab));
    LanguageModel m = load_model(dir, t.model.num_heads);
    const ModelConfig got = m.config();
    if (got.vocab != t.model.vocab || got.max_len != t.model.max_len ||
        got.embed_dim != t.model.embed_dim || got.hidden != t.model.hidden ||
        got.layers != t.model.layers)
        throw std::invalid_argument(dir + ": the weights' sizes are not config.json's");
    return {std::move(m), std::move(v), t, int(number(n, "best_step", config)),
            number(n, "best_val", config), load_train_log(dir + "/train_log.tsv")};
}

}  // namespace mha
