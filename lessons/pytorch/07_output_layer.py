"""Lesson 07 side by side: each article's whole module, and
nn.MultiheadAttention for the cross-attention, on the lesson's weights."""
import sys

from common import Lesson, torch  # first: without PyTorch it exits 77 (skipped)
import articles  # the articles' classes (it imports torch)

L = Lesson("07_output_layer", sys.argv)
with torch.no_grad():
    X = L.load("X")                                              # [B, T, E]
    batch, time, d_model = X.shape
    n_head = L.load("v").shape[1]
    # The lesson dumped its layers under the four-linear-layers article's names.
    state = {f"{n}.{p}": L.load(f"{n}.{p}") for n in ["wq", "wk", "wv", "fc_out"]
             for p in ["weight", "bias"]}

    L.section("1. The output layer w_o, written out")
    four = articles.FourLinearLayers(d_model, n_head)
    four.load_state_dict(state)
    mask = torch.tril(torch.ones(time, time))                   # 1 = may attend
    L.show("four-linear-layers: model(X, X, X, mask)", "output", four(X, X, X, mask))

    L.section("2. The same module, fast")
    hand = articles.HandwrittenCourse(d_model, n_head)
    renamed = {"wq": "w_q", "wk": "w_k", "wv": "w_v", "fc_out": "w_combine"}
    hand.load_state_dict({renamed[k.split(".")[0]] + "." + k.split(".")[1]: v
                          for k, v in state.items()})
    L.show("handwritten course: attention(X, X, X)", "fast.output", hand(X, X, X))

    L.section("3. Cross-attention: 10 queries over 6 keys")
    dec, enc, keep = L.load("dec"), L.load("enc"), L.load("cross.pad")  # keep [B, 1, 1, Tk]
    mha = torch.nn.MultiheadAttention(d_model, n_head, batch_first=True)
    mha.in_proj_weight.copy_(torch.cat([state["wq.weight"], state["wk.weight"],
                                        state["wv.weight"]]))
    mha.in_proj_bias.copy_(torch.cat([state["wq.bias"], state["wk.bias"], state["wv.bias"]]))
    mha.out_proj.weight.copy_(state["fc_out.weight"])
    mha.out_proj.bias.copy_(state["fc_out.bias"])
    out, w = mha.eval()(dec, enc, enc, key_padding_mask=~keep[:, 0, 0, :],
                        average_attn_weights=False)
    L.show("out, w = mha(dec, enc, enc, ...)", "cross.weights", w)
    L.show("(its output)", "cross.output", out)
L.done()
