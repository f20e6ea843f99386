"""The two articles' multi-head attention classes, in PyTorch.

Written for this project after the two articles (the four-linear-layers one
and the handwritten-course one): the same layer names, the same operations
in the same order, each article's mask convention and fill, so that their
state_dicts load and their numbers can be compared with the C++ core's.

B batch, T time, E embed_dim (d_model), H heads, D = E / H.
"""
import math

import torch
from torch import nn


class FourLinearLayers(nn.Module):
    """wq, wk, wv, fc_out with Xavier weights; forward(query, key, value,
    mask) fills the scores where mask == 0 with -1e10."""

    def __init__(self, embed_dim=512, num_heads=8):
        super().__init__()
        self.embed_dim, self.num_heads = embed_dim, num_heads
        self.head_dim = embed_dim // num_heads
        self.wq = nn.Linear(embed_dim, embed_dim)
        self.wk = nn.Linear(embed_dim, embed_dim)
        self.wv = nn.Linear(embed_dim, embed_dim)
        self.fc_out = nn.Linear(embed_dim, embed_dim)
        for layer in (self.wq, self.wk, self.wv, self.fc_out):
            nn.init.xavier_uniform_(layer.weight)

    def split(self, x, batch):  # [B, T, E] -> [B, H, T, D]
        return x.view(batch, -1, self.num_heads, self.head_dim).permute(0, 2, 1, 3)

    def forward(self, query, key, value, mask=None):
        batch = query.shape[0]
        Q = self.split(self.wq(query), batch)
        K = self.split(self.wk(key), batch)
        V = self.split(self.wv(value), batch)
        energy = torch.matmul(Q, K.permute(0, 1, 3, 2)) / (self.head_dim ** 0.5)
        if mask is not None:
            energy = energy.masked_fill(mask == 0, -1e10)
        x = torch.matmul(torch.softmax(energy, dim=-1), V)      # [B, H, T, D]
        x = x.permute(0, 2, 1, 3).contiguous().view(batch, -1, self.embed_dim)
        return self.fc_out(x)                                   # [B, T, E]


class HandwrittenCourse(nn.Module):
    """w_q, w_k, w_v, w_combine with nn.Linear's own init; forward(q, k, v)
    is always causal: a tril mask, the rest filled with -inf."""

    def __init__(self, d_model, n_head):
        super().__init__()
        self.d_model, self.n_head = d_model, n_head
        self.w_q = nn.Linear(d_model, d_model)
        self.w_k = nn.Linear(d_model, d_model)
        self.w_v = nn.Linear(d_model, d_model)
        self.w_combine = nn.Linear(d_model, d_model)
        self.softmax = nn.Softmax(dim=-1)

    def forward(self, q, k, v):
        batch, time, dimension = q.shape
        n_d = self.d_model // self.n_head
        q, k, v = self.w_q(q), self.w_k(k), self.w_v(v)
        q = q.view(batch, time, self.n_head, n_d).permute(0, 2, 1, 3)
        k = k.view(batch, time, self.n_head, n_d).permute(0, 2, 1, 3)
        v = v.view(batch, time, self.n_head, n_d).permute(0, 2, 1, 3)
        score = q @ k.transpose(2, 3) / math.sqrt(n_d)
        mask = torch.tril(torch.ones(time, time, dtype=bool))
        score = score.masked_fill(mask == 0, float("-inf"))
        score = self.softmax(score) @ v                         # [B, H, T, D]
        score = score.permute(0, 2, 1, 3).contiguous().view(batch, time, dimension)
        return self.w_combine(score)                            # [B, T, E]
