"""Lesson 04 side by side: torch.tril, masked_fill, a padding mask, and the
four ways of writing one mask."""
import sys

from common import Lesson, torch

L = Lesson("04_mask", sys.argv)
with torch.no_grad():
    L.section("Earlier stages, by the core")
    score = L.load("score")                                   # [B, H, Tq, Tk]
    batch, time = score.shape[0], score.shape[2]

    L.section("1. The causal mask: torch.tril")
    mask = L.show("mask = tril(ones(T, T))", "mask",
                  torch.tril(torch.ones(time, time, dtype=bool)))

    L.section("2. masked_fill(mask == 0, -inf)")
    L.show("score.masked_fill(mask==0, -inf)", "score",
           score.masked_fill(mask == 0, float("-inf")), dump="score.2")

    L.section("3. A padding mask from lengths")
    lengths = L.load("lengths").long()
    pad = torch.arange(time)[None, :] < lengths[:, None]      # [B, Tk], True = real
    pad = L.show("pad = lengths[b] > j", "pad", pad[:, None, None, :])
    L.show("both = tril & pad", "both", mask & pad)

    L.section("4. Four ways to write the same mask")
    keep = torch.arange(5)[None, :] < torch.tensor([5, 3])[:, None]
    print("  keep, 1 = may attend (articles)  ", keep.int().tolist())
    print("  PyTorch bool, True = may not     ", (~keep).int().tolist())
    print("  additive, added to the scores    ",
          torch.zeros(2, 5).masked_fill(~keep, float("-inf")).tolist())
    print("  valid lengths                    ", keep.sum(-1).tolist())
L.done()
