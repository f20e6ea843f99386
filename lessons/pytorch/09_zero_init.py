"""Lesson 09 side by side: zero, constant and Xavier init, the gradients from
PyTorch's autograd and the steps from torch.optim.SGD on the lesson's X and
target, against the C++ lesson's hand-written backward: the gradients it
showed, and the weights its three SGD steps reached."""
import math
import sys

from common import Lesson, torch

L = Lesson("09_zero_init", sys.argv)
X, target = L.load("X"), L.load("target")                      # [B, T, E] each
batch, time, e = X.shape
NAMES = ("wq", "wk", "wv", "fc_out")


def loss_of(m, n_head):
    """The four-linear-layers article's forward on X, then the lesson's loss:
    0.5 |output - target|^2, the mean over the B T tokens."""
    d = e // n_head

    def split(t):  # [B, T, E] -> [B, H, T, D]
        return t.view(batch, -1, n_head, d).permute(0, 2, 1, 3)

    q, k, v = split(m["wq"](X)), split(m["wk"](X)), split(m["wv"](X))
    w = torch.softmax(q @ k.transpose(2, 3) / math.sqrt(d), dim=-1)
    out = m["fc_out"]((w @ v).permute(0, 2, 1, 3).reshape(batch, time, e))
    return 0.5 * ((out - target) ** 2).sum() / (batch * time)


def module(weight=None):
    """The four nn.Linear: the lesson's Xavier draw (dumped), or every weight
    `weight` and every bias 0."""
    m = {n: torch.nn.Linear(e, e) for n in NAMES}
    with torch.no_grad():
        for n, layer in m.items():
            if weight is None:
                layer.weight.copy_(L.load(n + ".weight")), layer.bias.copy_(L.load(n + ".bias"))
            else:
                torch.nn.init.constant_(layer.weight, weight), torch.nn.init.zeros_(layer.bias)
    return m


def grads(m, n_head):  # {name: dL/dname.weight}, and fc_out's bias
    params = [m[n].weight for n in NAMES] + [m["fc_out"].bias]
    g = torch.autograd.grad(loss_of(m, n_head), params)
    return dict(zip(["wq", "wk", "wv", "fc_out", "fc_out.bias"], g))


def heads(g, n_head):  # |rows h*D .. (h+1)*D| of a [E, E] gradient, for each head h
    return " ".join(f"{float(x):.6f}" for x in g.view(n_head, -1).norm(dim=1)[:6])


def sgd(m, n_head, lr, show):
    """Three steps of torch.optim.SGD; show(step, gradients) before each."""
    opt = torch.optim.SGD([p for n in NAMES for p in m[n].parameters()], lr=lr)
    for step in range(3):
        opt.zero_grad()
        loss_of(m, n_head).backward()
        show(step, {n: m[n].weight.grad for n in NAMES} | {"fc_out.bias": m["fc_out"].bias.grad})
        opt.step()


# The dump holds no head count: of those that divide E, the one whose Xavier
# dWv is the lesson's.
xavier_dwv = L.load("xavier.dWv")
n_head = min((h for h in range(1, e + 1) if e % h == 0),
             key=lambda h: float((grads(module(), h)["wv"] - xavier_dwv).abs().max()))
print(f"H = {n_head}, the head count whose gradients are the lesson's")

L.section("1. The article's example: only wq.weight is zero")
a = module()
with torch.no_grad():
    torch.nn.init.zeros_(a["wq"].weight)                        # nn.init.zeros_(self.wq.weight)
ga = grads(a, n_head)
print(f"|dL/dWq| = {float(ga['wq'].norm()):.5f}: not zero, nothing vanishes")
L.show("dL/dWq, wq.weight zero", "dWq", ga["wq"])

L.section("2. Every weight and bias zero")
z = module(0.0)
worst_zero = []
sgd(z, n_head, 0.5, lambda step, g: (
    print(f"step {step}  " + "  ".join(f"|{n}| {float(g[w].norm()):.3g}" for n, w in
                                       zip(("dWq", "dWk", "dWv", "dWo"), NAMES)) +
          f"  |dbo| {float(g['fc_out.bias'].norm()):.4f}"),
    worst_zero.append(max(float(g[n].abs().max()) for n in NAMES))))
print(f"the largest |weight gradient| in the 3 steps: {max(worst_zero):g} (the lesson: exactly 0)")
L.worst = max(L.worst, max(worst_zero))
L.show("fc_out.bias after 3 steps of lr 0.5", "zero.fc_out.bias", z["fc_out"].bias.detach())

L.section("3. Constant init: identical heads stay identical")
c = module(1.0 / e)                           # nn.init.constant_(w, 1 / E); nn.init.zeros_(b)
sgd(c, n_head, 0.1, lambda step, g: print(f"step {step}  |dWv| of each head: "
                                          f"{heads(g['wv'], n_head)}"))
L.show("wv.weight after 3 steps of lr 0.1", "constant.wv.weight", c["wv"].weight.detach())

L.section("4. Xavier: the heads differ")
dwv = grads(module(), n_head)["wv"]
print(f"step 0  |dWv| of each head: {heads(dwv, n_head)}")
L.show("dL/dWv, Xavier", "xavier.dWv", dwv)
L.done()
