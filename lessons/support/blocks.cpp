// Blocks pictures from tensors: which part to draw, each cell's head and step.
#include "blocks.hpp"

#include <algorithm>

namespace lesson {

Shown shown_of(std::size_t T, std::size_t E, std::size_t H) {
    Shown s;
    const std::size_t D = E / H, steps = std::min<std::size_t>(T, 6);
    for (std::size_t t = 0; t < steps; ++t) s.rows.push_back(t);
    if (T <= 8 && E <= 32) {  // the --tiny sizes and the like: all of it
        s.rows.resize(T);
        for (std::size_t t = 0; t < T; ++t) s.rows[t] = t;
        for (std::size_t e = 0; e < E; ++e) s.cols.push_back(e);
        s.text = "sequence 0, every number";
        return s;
    }
    const std::size_t heads = std::min<std::size_t>(H, 8);
    const std::size_t per = std::min<std::size_t>(D, std::max<std::size_t>(1, 32 / heads));
    for (std::size_t h = 0; h < heads; ++h)
        for (std::size_t d = 0; d < per; ++d) s.cols.push_back(h * D + d);
    s.text = "shown: sequence 0, time steps 0-" + std::to_string(steps - 1) + " of " +
             std::to_string(T) + ", columns 0-" + std::to_string(per - 1) + " of each of " +
             (heads < H ? "heads 0-" + std::to_string(heads - 1) + " of " : "the ") +
             std::to_string(H) + " heads (" + std::to_string(D) + " columns each)";
    return s;
}

namespace {

// An empty block over the shown rows and columns, each cell's value and head
// given by @p at(t, e).
template <class At>
svg::Block block(const std::string& name, const std::vector<std::size_t>& rows,
                 const std::vector<std::size_t>& cols, At at) {
    svg::Block b{name, {}, {}, rows, cols};
    b.value.assign(rows.size(), std::vector<float>(cols.size()));
    b.head.assign(rows.size(), std::vector<int>(cols.size()));
    for (std::size_t i = 0; i < rows.size(); ++i)
        for (std::size_t j = 0; j < cols.size(); ++j) {
            const auto vh = at(rows[i], cols[j]);
            b.value[i][j] = vh.first, b.head[i][j] = vh.second;
        }
    return b;
}

}  // namespace

svg::Block by_head(const mha::Tensor3& t, std::size_t H, const std::string& name) {
    const std::size_t T = t.shape(1), E = t.shape(2), D = E / H;
    const Shown s = shown_of(T, E, H);
    return block(name, s.rows, s.cols, [&](std::size_t i, std::size_t e) {
        return std::make_pair(float(t(0, i, e)), int(e / D));
    });
}

std::vector<svg::Block> head_blocks(const mha::Tensor4& t, const std::string& name) {
    const std::size_t H = t.shape(1), T = t.shape(2), D = t.shape(3);
    const Shown s = shown_of(T, H * D, H);
    std::vector<svg::Block> out;
    for (std::size_t h = 0; h < H; ++h) {
        std::vector<std::size_t> cols;  // head h's shown columns of E, as d
        for (std::size_t e : s.cols)
            if (e / D == h) cols.push_back(e % D);
        if (cols.empty()) continue;
        out.push_back(block(name + "[0, " + std::to_string(h) + "]", s.rows, cols,
                            [&](std::size_t i, std::size_t d) {
                                return std::make_pair(float(t(0, h, i, d)), int(h));
                            }));
        out.back().col_label = "d";
    }
    return out;
}

svg::Block merged_from(const mha::Tensor3& merged, std::size_t H, bool permuted,
                       const std::string& name) {
    const std::size_t T = merged.shape(1), E = merged.shape(2), D = E / H;
    const Shown s = shown_of(T, E, H);
    // Where number (t, e) of the merged sequence was in [H, T, D]: the right
    // merge reads head e / D at step t; the view alone reads the memory of
    // [H, T, D] in order, so its flat index t * E + e.
    auto source = [&](std::size_t t, std::size_t e) {
        const std::size_t flat = permuted ? (e / D) * T * D + t * D + e % D : t * E + e;
        return std::make_pair(int(flat / (T * D)), int(flat % (T * D) / D));
    };
    svg::Block b = block(name, s.rows, s.cols, [&](std::size_t t, std::size_t e) {
        return std::make_pair(float(merged(0, t, e)), source(t, e).first);
    });
    b.step.assign(s.rows.size(), std::vector<int>(s.cols.size()));
    for (std::size_t i = 0; i < s.rows.size(); ++i)
        for (std::size_t j = 0; j < s.cols.size(); ++j)
            b.step[i][j] = source(s.rows[i], s.cols[j]).second;
    return b;
}

svg::Block weight_by_head(const mha::Tensor2& weight, std::size_t H, const std::string& name) {
    const std::size_t E = weight.shape(1), D = E / H;
    const Shown s = shown_of(1, E, H);
    svg::Block b = block(name, s.cols, s.cols, [&](std::size_t k, std::size_t j) {
        return std::make_pair(float(weight(j, k)), int(k / D));
    });
    b.row_label = "k", b.col_label = "j", b.own_scale = true;
    return b;
}

svg::Block mixed(const mha::Tensor3& t, std::size_t H, const std::string& name) {
    const Shown s = shown_of(t.shape(1), t.shape(2), H);
    return block(name, s.rows, s.cols, [&](std::size_t i, std::size_t e) {
        return std::make_pair(float(t(0, i, e)), -1);
    });
}

}  // namespace lesson
