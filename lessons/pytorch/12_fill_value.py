"""Lesson 12 side by side: masked_fill with -inf, -1e10 and -1e9, then
torch.softmax, on causal rows and on a row with every key masked."""
import sys

from common import Lesson, torch

L = Lesson("12_fill_value", sys.argv)
with torch.no_grad():
    score = L.load("S0")                                       # sequence 0, [1, H, T, T]
    time = score.shape[-1]

    L.section("1. Rows with at least one key: the fill does not matter")
    causal = torch.tril(torch.ones(time, time))                # 1 = may attend
    for fill, name in ((float("-inf"), "w_inf"), (-1e10, "w_1e10"), (-1e9, "w_1e9")):
        L.show(f"softmax(masked_fill(mask == 0, {fill:g}))", name,
               torch.softmax(score.masked_fill(causal == 0, fill), dim=-1),
               dump=name + ("0" if name == "w_inf" else "_0"))
    try:
        score.half().masked_fill(causal == 0, -1e10)
        print("masked_fill(mask == 0, -1e10) on float16 ran")
    except RuntimeError as e:
        print(f"masked_fill(mask == 0, -1e10) on float16: RuntimeError: {e}")

    L.section("2. A row with every key masked")
    empty = torch.zeros(1, 1, 1, time)                         # sequence 0 has length 0
    t_inf = torch.softmax(score.masked_fill(empty == 0, float("-inf")), dim=-1)
    nan = L.show("softmax(-inf everywhere) is NaN", "t_inf", torch.isnan(t_inf), dump="t_inf0")
    L.worst = max(L.worst, float((torch.isnan(L.load("t_inf0")) != nan).sum()))
    L.show("softmax(-1e10 everywhere) = 1/T", "t_1e10",
           torch.softmax(score.masked_fill(empty == 0, -1e10), dim=-1), dump="t_1e10_0")
    # The core's policy, not PyTorch's: the NaN row becomes zero weights.
    L.show("the core: torch.nan_to_num(.., nan=0)", "c_inf", torch.nan_to_num(t_inf, nan=0.0),
           dump="c_inf0")
L.done()
