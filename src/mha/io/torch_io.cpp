// PyTorch interop: state_dict files in and out, masks with PyTorch's polarity.
#include "mha/io/torch_io.hpp"

#include <algorithm>
#include <vector>

#include <xtensor/xbuilder.hpp>
#include <xtensor/xview.hpp>

#include "mha/backward.hpp"
#include "mha/io/npy.hpp"

namespace mha {

namespace {

std::string sizes(std::size_t a, std::size_t b) {
    return "[" + std::to_string(a) + ", " + std::to_string(b) + "]";
}

}  // namespace

MultiHeadAttention load_torch_mha(const std::string& dir, std::size_t num_heads,
                                  const std::string& prefix) {
    const std::string stem = dir + "/" + prefix;  // "DIR/" or "DIR/layers.0.self_attn."
    const std::string w_path = stem + "in_proj_weight.npy";
    const xt::xarray<float> in_w = load_npy_float(w_path, "in_proj_weight [3E, E]", 2);
    const std::size_t E = in_w.shape(1);
    if (E == 0 || in_w.shape(0) != 3 * E) {
        fail(w_path + ": in_proj_weight is " + shape_of(in_w) + ", not [3E, E]");
    }
    const xt::xarray<float> in_b =
        load_npy_float(stem + "in_proj_bias.npy", "in_proj_bias [3E]", 1);
    const xt::xarray<float> out_w =
        load_npy_float(stem + "out_proj.weight.npy", "out_proj.weight [E, E]", 2);
    const xt::xarray<float> out_b =
        load_npy_float(stem + "out_proj.bias.npy", "out_proj.bias [E]", 1);
    if (in_b.shape(0) != 3 * E) {
        fail(stem + "in_proj_bias.npy: " + shape_of(in_b) + ", not [3E] = [" +
             std::to_string(3 * E) + "]");
    }
    if (out_w.shape(0) != E || out_w.shape(1) != E) {
        fail(stem + "out_proj.weight.npy: " + shape_of(out_w) + ", not [E, E] = " +
             sizes(E, E));
    }
    if (out_b.shape(0) != E) {
        fail(stem + "out_proj.bias.npy: " + shape_of(out_b) + ", not [E] = [" +
             std::to_string(E) + "]");
    }
    MultiHeadAttention m(E, num_heads, Init::zero());
    Linear* parts[3] = {&m.wq, &m.wk, &m.wv};
    for (std::size_t p = 0; p < 3; ++p) {
        parts[p]->weight = xt::view(in_w, xt::range(p * E, (p + 1) * E), xt::all());
        parts[p]->bias = xt::view(in_b, xt::range(p * E, (p + 1) * E));
    }
    m.w_o.weight = out_w;
    m.w_o.bias = out_b;
    return m;
}

namespace {

// The four layers' file names in a state_dict of four nn.Linear.
struct LinearLayout {
    const char* who;
    const char* names[4];  // wq, wk, wv, w_o
    bool bias_optional;    // current models often have none (Llama) or some (Qwen)
};
constexpr LinearLayout kLinearLayouts[] = {
    {"the four-linear-layers article", {"wq", "wk", "wv", "fc_out"}, false},
    {"the handwritten-course article", {"w_q", "w_k", "w_v", "w_combine"}, false},
    {"current models (Llama, Mistral, Qwen)", {"q_proj", "k_proj", "v_proj", "o_proj"}, true},
};

// wq [E, E] first, which gives E and so the module; then wk and wv
// [H_kv * D, E] and w_o [E, E], each with its bias (or zeros, where the
// layout may leave it out).
MultiHeadAttention load_linears(const std::string& dir, const LinearLayout& layout,
                                std::size_t num_heads, std::size_t num_kv_heads) {
    const std::string first = dir + "/" + layout.names[0] + ".weight.npy";
    const NpyInfo info = npy_info(first);
    if (info.shape.size() != 2) (void)load_npy_float(first, "weight [E, E]", 2);  // its line
    const std::size_t E = info.shape[1];
    // [E, E] before the module is made: a [0, 10^9] file holds no bytes at all
    if (E == 0 || info.shape[0] != E) {
        fail(first + ": " + shape_str(info.shape) + ", not [E, E] with E at least 1");
    }
    MultiHeadAttention m(E, num_heads, num_kv_heads, Init::zero());
    Linear* layers[4] = {&m.wq, &m.wk, &m.wv, &m.w_o};
    for (int l = 0; l < 4; ++l) {
        const std::string stem = dir + "/" + layout.names[l];
        const bool kv = l == 1 || l == 2;  // k_proj, v_proj: [H_kv * D, E]
        const std::size_t rows = kv ? m.kv_dim() : E;
        const bool grouped = kv && rows != E;  // how the sizes are named
        const xt::xarray<float> w = load_npy_float(stem + ".weight.npy", "weight", 2);
        if (w.shape(0) != rows || w.shape(1) != E) {
            const bool other_kv = kv && rows == E && w.shape(1) == E;  // no H_kv given
            fail(stem + ".weight.npy: " + shape_of(w) + ", not " +
                 (grouped ? "[H_kv*D, E] = " : "[E, E] = ") + sizes(rows, E) +
                 (other_kv ? " (--num-kv-heads?)" : ""));
        }
        layers[l]->weight = w;
        if (layout.bias_optional && !file_exists(stem + ".bias.npy")) {  // bias=False
            layers[l]->bias = xt::zeros<float>({rows});
            continue;
        }
        const xt::xarray<float> b = load_npy_float(stem + ".bias.npy", "bias", 1);
        if (b.shape(0) != rows) {
            fail(stem + ".bias.npy: " + shape_of(b) + ", not " + (grouped ? "[H_kv*D]" : "[E]") +
                 " = [" + std::to_string(rows) + "]");
        }
        layers[l]->bias = b;
    }
    return m;
}

}  // namespace

MultiHeadAttention load_state_dict(const std::string& dir, std::size_t num_heads,
                                   std::size_t num_kv_heads) {
    if (num_kv_heads == 0) num_kv_heads = num_heads;
    std::vector<std::string> found;  // the first file of each layout present
    const bool mha = file_exists(dir + "/in_proj_weight.npy");
    if (mha) found.push_back("in_proj_weight.npy");
    const LinearLayout* linears = nullptr;
    for (const LinearLayout& l : kLinearLayouts) {
        if (file_exists(dir + "/" + l.names[0] + ".weight.npy")) {
            linears = &l;
            found.push_back(std::string(l.names[0]) + ".weight.npy");
        }
    }
    if (found.empty()) {
        fail(dir + ": no state_dict: no in_proj_weight.npy, wq.*, w_q.* or q_proj.* files");
    }
    if (found.size() > 1) {
        fail(dir + ": two state_dicts, " + found[0] + " and " + found[1] + ": keep one");
    }
    if (mha && num_kv_heads != num_heads) {
        fail(dir + ": nn.MultiheadAttention has no grouped heads (use q_proj.* files)");
    }
    return mha ? load_torch_mha(dir, num_heads)
               : load_linears(dir, *linears, num_heads, num_kv_heads);
}

namespace {

// wq, wk, wv stacked as nn.MultiheadAttention's in_proj, weight [3E, E] and
// bias [3E], written as STEM + "in_proj_weight" + SUFFIX (".npy" for the
// weights, ".grad.npy" for their gradients).
void save_in_proj(const Tensor2* const w[3], const Tensor1* const b[3],
                  const std::string& stem, const std::string& suffix) {
    const std::size_t E = w[0]->shape(1);
    for (std::size_t p = 0; p < 3; ++p) {
        if (w[p]->shape() != Tensor2::shape_type{E, E} || b[p]->shape(0) != E) {
            fail(stem + "in_proj_weight" + suffix + ": in_proj stacks three [E, E], not " +
                 shape_of(*w[0]) + ", " + shape_of(*w[1]) + ", " + shape_of(*w[2]) +
                 " (grouped heads have no in_proj: q_proj ... o_proj)");
        }
    }
    auto in_w = Tensor2::from_shape({3 * E, E});
    auto in_b = Tensor1::from_shape({3 * E});
    for (std::size_t p = 0; p < 3; ++p) {
        std::copy(w[p]->begin(), w[p]->end(), in_w.begin() + p * E * E);
        std::copy(b[p]->begin(), b[p]->end(), in_b.begin() + p * E);
    }
    save_npy(stem + "in_proj_weight" + suffix, in_w);
    save_npy(stem + "in_proj_bias" + suffix, in_b);
}

}  // namespace

void save_torch_mha(const MultiHeadAttention& m, const std::string& dir,
                    const std::string& prefix) {
    if (m.num_kv_heads() != m.num_heads()) {
        fail("save_torch_mha: nn.MultiheadAttention has no grouped heads, and this module "
             "has " + std::to_string(m.num_kv_heads()) + " kv heads for " +
             std::to_string(m.num_heads()));
    }
    const std::string stem = dir + "/" + prefix;
    const Tensor2* const w[3] = {&m.wq.weight, &m.wk.weight, &m.wv.weight};
    const Tensor1* const b[3] = {&m.wq.bias, &m.wk.bias, &m.wv.bias};
    save_in_proj(w, b, stem, ".npy");
    save_npy(stem + "out_proj.weight.npy", m.w_o.weight);
    save_npy(stem + "out_proj.bias.npy", m.w_o.bias);
}

void save_torch_mha_grads(const AttentionGrads& g, const std::string& dir,
                          const std::string& prefix) {
    const std::string stem = dir + "/" + prefix;
    const Tensor2* const w[3] = {&g.wq.weight, &g.wk.weight, &g.wv.weight};
    const Tensor1* const b[3] = {&g.wq.bias, &g.wk.bias, &g.wv.bias};
    save_in_proj(w, b, stem, ".grad.npy");
    save_npy(stem + "out_proj.weight.grad.npy", g.w_o.weight);
    save_npy(stem + "out_proj.bias.grad.npy", g.w_o.bias);
}

Mask load_keep_mask(const std::string& path, std::size_t b, std::size_t h, std::size_t tq,
                    std::size_t tk) {
    const NpyInfo info = npy_info(path);
    const std::size_t rank = info.shape.size();
    if (rank < 2 || rank > 4) {
        fail(path + ": a keep-mask has rank 2, 3 or 4, not " + shape_str(info.shape));
    }
    std::array<std::size_t, 4> shape{1, 1, 1, 1};
    for (std::size_t d = 0; d < rank; ++d) shape[4 - rank + d] = info.shape[d];
    if (rank == 3) shape = {info.shape[0], 1, info.shape[1], info.shape[2]};  // [B, Tq, Tk]
    Mask keep = Mask::from_shape(shape);
    if (info.dtype == "|b1") {
        const xt::xarray<bool> m = load_npy_bool(path, "keep-mask", rank);
        std::copy(m.begin(), m.end(), keep.begin());
    } else {
        const xt::xarray<float> m = load_npy_float(path, "keep-mask", rank);
        std::transform(m.begin(), m.end(), keep.begin(), [](float x) { return x != 0.0f; });
    }
    try {
        check_mask(keep, b, h, tq, tk);
    } catch (const std::invalid_argument& e) {
        fail(path + ": " + e.what());
    }
    return keep;
}

TorchMasks load_torch_masks(const std::string& attn_mask_path,
                            const std::string& key_padding_mask_path,
                            std::size_t b, std::size_t h, std::size_t tq,
                            std::size_t tk) {
    TorchMasks masks;
    if (!attn_mask_path.empty()) {
        const NpyInfo info = npy_info(attn_mask_path);
        const std::size_t rank = info.shape.size();
        const bool fits2 = rank == 2 && info.shape[0] == tq && info.shape[1] == tk;
        const bool fits3 = rank == 3 && info.shape[0] == b * h && info.shape[1] == tq &&
                           info.shape[2] == tk;
        if (!fits2 && !fits3) {
            fail(attn_mask_path + ": attn_mask is " + shape_str(info.shape) +
                 ", not [Tq, Tk] = " + sizes(tq, tk) + " or [B*H, Tq, Tk]");
        }
        // [Tq, Tk] broadcasts over batch and heads; [B*H, ...] is b-major.
        const std::array<std::size_t, 4> shape =
            fits2 ? std::array<std::size_t, 4>{1, 1, tq, tk}
                  : std::array<std::size_t, 4>{b, h, tq, tk};
        if (info.dtype == "|b1") {
            const xt::xarray<bool> m = load_npy_bool(attn_mask_path, "attn_mask", rank);
            Mask keep = Mask::from_shape(shape);
            std::transform(m.begin(), m.end(), keep.begin(),
                           [](bool masked) { return !masked; });  // True = not allowed
            masks.keep = std::move(keep);
        } else {
            const xt::xarray<float> m = load_npy_float(attn_mask_path, "attn_mask", rank);
            Tensor4 bias = Tensor4::from_shape(shape);
            std::copy(m.begin(), m.end(), bias.begin());
            masks.bias = std::move(bias);
        }
    }
    if (!key_padding_mask_path.empty()) {
        const NpyInfo info = npy_info(key_padding_mask_path);
        if (info.shape.size() != 2 || info.shape[0] != b || info.shape[1] != tk) {
            fail(key_padding_mask_path + ": key_padding_mask is " + shape_str(info.shape) +
                 ", not [B, Tk] = " + sizes(b, tk));
        }
        const xt::xarray<bool> p =
            load_npy_bool(key_padding_mask_path, "key_padding_mask [B, Tk]", 2);
        Mask keep = Mask::from_shape({b, 1, 1, tk});
        std::transform(p.begin(), p.end(), keep.begin(),
                       [](bool ignore) { return !ignore; });  // True = ignore
        masks.keep = masks.keep ? combine_masks(*masks.keep, keep) : keep;
    }
    return masks;
}

}  // namespace mha
