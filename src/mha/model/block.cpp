// The block, 3: x + attn(norm1(x)), then x + ff(norm2(x)).
//
// B batch, T positions, E embed_dim, H heads, F hidden. The stages are the
// teaching core's layer_norm() and feed_forward(), run by the engine
// (fast/dense.hpp) over the cores; tests hold the two together.
#include "mha/model/block.hpp"

#include "mha/fast/dense.hpp"

namespace mha {

Block::Block(std::size_t embed_dim, std::size_t num_heads, std::size_t hidden,
             std::uint64_t seed)
    : self_attn(embed_dim, num_heads, Init::torch(seed)),
      norm1(make_layer_norm(embed_dim)),
      norm2(make_layer_norm(embed_dim)) {
    Rng rng(seed + 1);
    ff = make_feed_forward(embed_dim, hidden, rng);
}

Tensor3 dropout_mask(const std::array<std::size_t, 3>& shape, const Dropout& d) {
    if (!(d.p >= 0 && d.p < 1))
        fail("dropout: p = " + std::to_string(d.p) + " is outside [0, 1)");
    if (d.p > 0 && d.rng == nullptr) fail("dropout: p > 0 needs an Rng to draw the mask");
    Tensor3 mask = Tensor3::from_shape(shape);  // [B, T, E]
    const float keep = 1.0f / (1.0f - d.p);
    for (float& m : mask) m = d.rng->uniform(0.0f, 1.0f) < d.p ? 0.0f : keep;
    return mask;
}

Tensor3 block_forward(const Block& blk, const Tensor3& x, bool causal, BlockTrace* keep,
                      bool keep_weights, const Dropout& drop) {
    BlockTrace local;
    BlockTrace& t = keep ? *keep : local;
    t.h1 = fast::layer_norm(x, blk.norm1, &t.n1);                 // [B, T, E]
    if (!keep_weights)  // lse [B, H, T]: the backward rebuilds the weights by tiles
        t.attn = causal ? blk.self_attn.trace_no_weights(t.h1, t.h1, t.h1, mha::causal)
                        : blk.self_attn.trace_no_weights(t.h1, t.h1, t.h1);
    else if (causal)
        blk.self_attn.trace_into(t.attn, t.h1, t.h1, t.h1, mha::causal);
    else
        blk.self_attn.trace_into(t.attn, t.h1, t.h1, t.h1);    // weights [B, H, T, T]
    if (drop.p != 0) {  // the same block with each branch's output thinned (p < 0 throws)
        t.drop1 = dropout_mask(x.shape(), drop), t.drop2 = dropout_mask(x.shape(), drop);
        t.x1 = x + t.attn.output * t.drop1;                                   // [B, T, E]
        t.h2 = fast::layer_norm(t.x1, blk.norm2, &t.n2);                         // [B, T, E]
        return t.x1 + fast::feed_forward(t.h2, blk.ff, &t.ff) * t.drop2;      // [B, T, E]
    }
    t.drop1 = t.drop2 = Tensor3();
    t.x1 = x + t.attn.output;                                  // [B, T, E] residual
    t.h2 = fast::layer_norm(t.x1, blk.norm2, &t.n2);              // [B, T, E]
    return t.x1 + fast::feed_forward(t.h2, blk.ff, &t.ff);     // [B, T, E] residual
}

Tensor3 block_backward(const Block& blk, const BlockTrace& t, const Tensor3& dy, bool causal,
                       BlockGrads& g) {
    // y = x1 + ff(h2): dy reaches x1 twice, directly and through the branch
    const bool dropped = t.drop1.shape() == dy.shape();  // a dropout mask: through it too
    Tensor3 thinned;  // dL/d ff(h2) [B, T, E] when a mask thinned it
    if (dropped) thinned = dy * t.drop2;
    const Tensor3 d_h2 =
        fast::feed_forward_backward(t.h2, t.ff, dropped ? thinned : dy, blk.ff, g.ff);
    Tensor3 d_x1 = dy + fast::layer_norm_backward(t.n2, d_h2, blk.norm2, g.norm2);  // [B, T, E]
    // x1 = x + attn(h1): the same again; h1 fed query, key and value
    if (dropped) thinned = d_x1 * t.drop1;  // dL/d attn(h1)
    const Tensor3& d_attn = dropped ? thinned : d_x1;
    g.self_attn = causal
        ? backward_self_attention(blk.self_attn, t.attn, t.h1, d_attn, mha::causal)
        : backward_self_attention(blk.self_attn, t.attn, t.h1, d_attn);
    return d_x1 + fast::layer_norm_backward(t.n1, g.self_attn.input, blk.norm1, g.norm1);
}

std::vector<Parameter> parameters(Block& blk, const BlockGrads& g, const std::string& prefix) {
    auto of = [&](const std::string& name, auto& value, const auto& grad) {
        return Parameter{prefix + name, value.data(), grad.data(), value.size()};
    };
    std::vector<Parameter> p;
    for (const Parameter& q : parameters(blk.self_attn, g.self_attn))
        p.push_back({prefix + "self_attn." + q.name, q.value, q.grad, q.size});
    p.push_back(of("linear1.weight", blk.ff.linear1.weight, g.ff.linear1.weight));
    p.push_back(of("linear1.bias", blk.ff.linear1.bias, g.ff.linear1.bias));
    p.push_back(of("linear2.weight", blk.ff.linear2.weight, g.ff.linear2.weight));
    p.push_back(of("linear2.bias", blk.ff.linear2.bias, g.ff.linear2.bias));
    p.push_back(of("norm1.weight", blk.norm1.weight, g.norm1.weight));
    p.push_back(of("norm1.bias", blk.norm1.bias, g.norm1.bias));
    p.push_back(of("norm2.weight", blk.norm2.weight, g.norm2.weight));
    p.push_back(of("norm2.bias", blk.norm2.bias, g.norm2.bias));
    return p;
}

}  // namespace mha
