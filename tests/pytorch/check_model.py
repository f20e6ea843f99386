#!/usr/bin/env python3
"""mha_forward --model against a decoder-only language model in PyTorch.

    /usr/bin/python3 tests/pytorch/check_model.py build/tools/mha_forward

The model, under the names io/model_io.hpp reads: tok_emb = nn.Embedding(V, E),
pos_emb = nn.Embedding(T_max, E), layers = nn.ModuleList of L
nn.TransformerEncoderLayer(E, H, F, dropout=0.0, activation="gelu",
batch_first=True, norm_first=True), norm = nn.LayerNorm(E), head =
nn.Linear(E, V); forward
    x = tok_emb(idx) + pos_emb(torch.arange(T))
    for layer in layers: x = layer(x, src_mask=torch.ones(T, T, dtype=torch.bool).triu(1))
    logits = head(norm(x))
Its state_dict goes to mha_forward --model as .npy files with token ids
int64 [B, T] and a random dL/d logits G; autograd runs loss = sum(logits * G).
L = 1, 2, 3; E 8 to 64, H 1 to 4, F 16 to 128, T 1 to 9 (up to T_max), B 1
to 3; the two embedding tables at scale 1, 1e-3 (LayerNorm's eps matters)
and 100.

With --layer-weights it also writes each layer's attention weights, which
must match nn.MultiheadAttention's (need_weights, average_attn_weights=False)
within 1e-5 of the largest.

Tolerances, each relative to the largest |value| of PyTorch's tensor: the
logits within 2e-5, every parameter's gradient within 1e-4 (pos_emb's rows
past T are 0 on both sides). The reference is PyTorch in float64 on the same
float32 weights; PyTorch's own float32 run is measured against it too and
printed beside ("torch f32").
Exit 0 when all agree, 1 when one does not, 77 (skipped) without PyTorch.
"""
import copy
import sys

from state_dicts import compare, run, torch, worst_diff

if len(sys.argv) != 2:
    sys.exit("usage: check_model.py MHA_FORWARD")
FORWARD = sys.argv[1]
LOGITS_LIMIT, GRAD_LIMIT, WEIGHTS_LIMIT = 2e-5, 1e-4, 1e-5


class LanguageModel(torch.nn.Module):
    def __init__(self, V, T_max, E, H, F, L):
        super().__init__()
        self.tok_emb = torch.nn.Embedding(V, E)
        self.pos_emb = torch.nn.Embedding(T_max, E)
        # train mode, dropout 0.0: never the eval-mode fused fast path (see check_block.py)
        self.layers = torch.nn.ModuleList(
            torch.nn.TransformerEncoderLayer(E, H, F, dropout=0.0, activation="gelu",
                                             batch_first=True, norm_first=True)
            for _ in range(L))
        self.norm = torch.nn.LayerNorm(E)
        self.head = torch.nn.Linear(E, V)

    def forward(self, idx):
        T = idx.shape[1]
        x = self.tok_emb(idx) + self.pos_emb(torch.arange(T))
        for layer in self.layers:
            x = layer(x, src_mask=torch.ones(T, T, dtype=torch.bool).triu(1))
        return self.head(self.norm(x))


def layer_weights(model, idx):
    """Each layer's attention weights [B, H, T, T], as its self_attn sees norm1(x)."""
    T = idx.shape[1]
    mask = torch.ones(T, T, dtype=torch.bool).triu(1)
    x = model.tok_emb(idx) + model.pos_emb(torch.arange(T))
    out = {}
    for i, layer in enumerate(model.layers):
        h = layer.norm1(x)
        _, w = layer.self_attn(h, h, h, attn_mask=mask, need_weights=True,
                               average_attn_weights=False)
        out[f"layer{i}.weights"] = w
        x = layer(x, src_mask=mask)
    return out


def make_model(V, T_max, E, H, F, L, scale):
    m = LanguageModel(V, T_max, E, H, F, L)
    with torch.no_grad():
        for name, p in m.named_parameters():
            if "emb" in name:
                p.mul_(scale)
            elif "norm" in name and name.endswith("weight"):
                p.copy_(1 + 0.2 * torch.randn_like(p))
            elif name.endswith("bias"):
                p.copy_(0.1 * torch.randn_like(p))
    return m


def autograd(model, idx, G):
    logits = model(idx)
    (logits * G).sum().backward()
    out = {"logits": logits}
    out.update({f"{k}.grad": p.grad for k, p in model.named_parameters()})
    return out


torch.manual_seed(33)
results = []
#        L   V T_max  E  H    F  B  T  scale
for L, V, T_max, E, H, F, B, T, scale in [
        (1, 5, 4, 8, 1, 16, 1, 1, 1.0),
        (2, 11, 9, 16, 2, 32, 2, 9, 1.0),
        (3, 7, 12, 32, 4, 64, 3, 8, 1e-3),
        (2, 20, 9, 64, 4, 128, 2, 5, 100.0),
        (3, 13, 9, 24, 3, 48, 1, 9, 1.0),
        (1, 9, 6, 8, 2, 16, 3, 6, 100.0),
        (2, 6, 16, 48, 4, 96, 2, 7, 1e-3)]:
    model = make_model(V, T_max, E, H, F, L, scale)
    idx = torch.randint(0, V, (B, T))
    G = torch.randn(B, T, V)
    theirs = autograd(copy.deepcopy(model).double(), idx, G.double())
    theirs32 = autograd(model, idx, G)
    ours = run(FORWARD, "--model", model, ["--num-heads", str(H), "--layer-weights"],
               {"tokens": idx, "grad-output": G})
    case = f"L {L} V {V:2d} T_max {T_max:2d} E {E:2d} H {H} F {F:3d} B {B} T {T} emb x{scale:g}"
    with torch.no_grad():
        weights = layer_weights(copy.deepcopy(model).double(), idx)
    ours_w = {n: ours.pop(n) for n in list(ours) if n.endswith(".weights")}
    if sorted(ours_w) != sorted(weights):
        print(f"FAILED {case}: --layer-weights wrote {sorted(ours_w)}, not {sorted(weights)}")
        results.append(False)
        continue
    w_err, where = worst_diff(ours_w, weights, list(weights))
    print(f"{'ok    ' if w_err <= WEIGHTS_LIMIT else 'FAILED'} {case}: "
          f"{len(weights)} layers' weights {w_err:.1e} ({where})")
    results.append(w_err <= WEIGHTS_LIMIT)
    results.append(compare(case, ours, theirs, theirs32, "logits", LOGITS_LIMIT, GRAD_LIMIT))

print(f"{sum(results)} of {len(results)} checks agree with PyTorch (logits within "
      f"{LOGITS_LIMIT:g}, layer weights within {WEIGHTS_LIMIT:g}, gradients within "
      f"{GRAD_LIMIT:g} of the largest |value|)")
sys.exit(0 if all(results) else 1)
