#!/usr/bin/env python3
"""PyTorch twin of the candle TFT in tft/src: same model, data, loss, optimizer and schedule.

The point is a fair ms/step comparison with `cargo run --release -p tft`, so the twin mirrors
the Rust program module by module:

* model   (tft/src/model.rs, grn.rs, vsn.rs, attention.rs): the same modules and parameter
  tensors (the run asserts the counts against an independent tally of the Rust construction and,
  at the known configurations, against the numbers the Rust binary prints); `nn.LSTM` for the
  two LSTMs (same gate order i, f, g, o and two bias vectors as candle's).
* init    (tft/src/init.rs + candle_nn defaults): the same distributions (linear weights
  kaiming-normal fan-in with ReLU gain, biases U(+-1/sqrt(fan_in)), LSTM weights kaiming-uniform,
  LSTM biases 0, LayerNorm 1/0), drawn from torch's seeded generator (not the same numbers).
* data    (tft/src/data.rs, synth.rs): the CO2 preparation ported to numpy (gap filling,
  calendar covariates, chronological split, train-only normalisation, windows); the synthetic
  panel is read from the file `tft --dataset synthetic --dump-data PATH` writes, with the same
  features. Both programs print a `data fingerprint` (sum of |x| over the batches of a fixed
  sample of windows) that must agree.
* training (tft/src/train.rs, loss.rs, main.rs): pinball loss over quantiles 0.1/0.5/0.9,
  AdamW(lr, betas (0.9, 0.999), eps 1e-8, weight_decay 1e-4), cosine decay from lr to lr/10 over
  all steps (set before each step), the training windows shuffled per epoch and cut into
  batches (deterministic in --seed, numpy's RNG rather than Rust's), validation in chunks of 256.

A timed step is what the Rust run times around `Trainer::step`: the batch gathered on the host
and copied to the device, forward, loss, backward, optimizer step and zero_grad, and the loss
read back (`loss.item()`, a synchronisation, like candle's `to_scalar`); on CUDA the clock is
read after `torch.cuda.synchronize()`. The first 5 steps are warm-up and not counted (with
--compile also the first step of every new batch shape, which recompiles).

    python3 bench/scripts/tft_torch.py --epochs 3 --threads 2
    tft --dataset synthetic --preset paper --dump-data /tmp/synth.csv   # prints its fingerprint F
    python3 bench/scripts/tft_torch.py --dataset synthetic --data /tmp/synth.csv --preset paper \\
        --expect-fingerprint F --device cuda --compile --epochs 1
"""
import argparse
import math
import os
import statistics
import sys
import time

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

HERE = os.path.dirname(os.path.abspath(__file__))
CO2_CSV = os.path.join(HERE, "..", "..", "tft", "data", "co2_weekly_mlo.csv")
VAL_FRAC = 0.2
QUANTILES = (0.1, 0.5, 0.9)
LN_EPS = 1e-5
WARMUP_STEPS = 5
EVAL_BATCH = 256
SHUFFLE_MUL = 0x9E3779B97F4A7C15
# tft/src/cli.rs Preset: hidden, heads, lookback, horizon, batch.
PRESETS = {
    "default": dict(hidden=32, heads=4, lookback=52, horizon=12, batch_size=64),
    "paper": dict(hidden=160, heads=4, lookback=168, horizon=24, batch_size=256),
}
# What the Rust binary prints ("parameters: T tensors (S scalars)") at these configurations:
# (dataset, hidden, heads) -> (tensors, scalars). Lookback/horizon/batch do not change them.
RUST_PARAM_COUNTS = {
    ("co2", 32, 4): (231, 105171),
    ("co2", 160, 4): (231, 2502003),
    ("synthetic", 8, 4): (303, 10819),
    ("synthetic", 32, 4): (303, 140209),
    ("synthetic", 160, 4): (303, 3291473),
}


# ---------------------------------------------------------------------------------------------
# Data
# ---------------------------------------------------------------------------------------------
def split_index(n, val_frac):
    """data.rs split_index: f64::round (half away from zero), not Python's banker's round."""
    return int(math.floor(n * (1.0 - val_frac) + 0.5))


def mean_std(xs):
    """data.rs mean_std: population standard deviation, at least 1e-8."""
    xs = np.asarray(xs, dtype=np.float64)
    m = xs.sum() / len(xs)
    v = ((xs - m) ** 2).sum() / len(xs)
    return m, max(math.sqrt(v), 1e-8)


def fractional_year(date):
    y, m, d = date // 10000, (date // 100) % 100, date % 100
    cum = [0, 31, 59, 90, 120, 151, 181, 212, 243, 273, 304, 334]
    leap = (y % 4 == 0 and y % 100 != 0) or y % 400 == 0
    doy = cum[m - 1] + d + (1 if leap and m > 2 else 0)
    return y + (doy - 0.5) / (366.0 if leap else 365.0)


class Windows:
    """What both datasets provide (data.rs `Dataset`): window ends, batches, MAE, baselines.

    A window end `e` indexes `self.y` (flat over series for the synthetic panel). Subclasses fill
    `past_rows(ends)`, `future_rows(ends)`, `static_rows(ends)`, `targets(ends)` as float64
    arrays; `batch` casts them to float32 like the Rust `Tensor::from_vec(Vec<f32>)`.
    """

    season = 1
    unit = ""

    def batch(self, ends):
        ends = np.asarray(ends, dtype=np.int64)
        return (
            self.static_rows(ends).astype(np.float32),
            self.past_rows(ends).astype(np.float32),
            self.future_rows(ends).astype(np.float32),
            self.targets(ends).astype(np.float32),
        )

    def _future_idx(self, ends):
        return ends[:, None] + np.arange(1, self.horizon + 1)[None, :]

    def _past_idx(self, ends):
        return ends[:, None] + np.arange(1 - self.lookback, 1)[None, :]

    def mae(self, ends, forecast):
        """Mean |forecast - y| over the observed targets; forecast: [len(ends), horizon]."""
        idx = self._future_idx(np.asarray(ends))
        obs = self.observed[idx]
        err = np.abs(forecast - self.y[idx])
        return float(err[obs].sum() / max(obs.sum(), 1))

    def persistence_mae(self, ends):
        ends = np.asarray(ends)
        return self.mae(ends, np.repeat(self.y[ends][:, None], self.horizon, 1))

    def seasonal_naive_mae(self, ends):
        idx = self._future_idx(np.asarray(ends))
        return self.mae(ends, self.y[idx - self.season])

    def seasonal_drift_mae(self, ends):
        ends = np.asarray(ends)
        idx = self._future_idx(ends)
        drift = (self.y[ends] - self.y[ends - self.season])[:, None]
        return self.mae(ends, self.y[idx - self.season] + drift)

    def fingerprint(self):
        """data.rs Dataset::fingerprint: sum of |x| over static, past, future and target of the
        batch of every k-th training window and every k-th validation window (k = len/128)."""
        total = 0.0
        for ends in (self.train_ends, self.val_ends):
            k = max(1, len(ends) // 128)
            for part in self.batch(ends[::k]):
                total += float(np.abs(part.astype(np.float64)).sum())
        return total


class Co2(Windows):
    """data.rs for the shipped weekly Mauna Loa CO2 series."""

    season = 52
    unit = "ppm"
    n_static, n_past, n_future = 1, 5, 3

    def __init__(self, lookback, horizon, val_frac=VAL_FRAC, path=CO2_CSV):
        dates, raw = [], []
        with open(path) as f:
            for i, line in enumerate(f):
                line = line.strip()
                if i == 0 or not line:
                    continue
                d, v = line.split(",", 1)
                dates.append(int(d.strip()))
                v = v.strip()
                raw.append(None if v == "" or v.lower() == "nan" else float(v))
        if raw[0] is None or raw[-1] is None:
            raise ValueError("series must start and end with an observed value")
        n = len(raw)
        y = np.zeros(n)
        prev = 0
        for i, v in enumerate(raw):  # linear interpolation over gaps, as data.rs
            if v is None:
                continue
            y[i] = v
            for j in range(prev + 1, i):
                w = (j - prev) / (i - prev)
                y[j] = raw[prev] * (1.0 - w) + v * w
            prev = i
        self.dates = dates
        self.y = y
        self.observed = np.array([v is not None for v in raw])
        self.year = np.array([fractional_year(d) for d in dates])
        self.lookback, self.horizon = lookback, horizon
        split = split_index(n, val_frac)
        if lookback < 2 or horizon == 0 or split < lookback + horizon + 1 or n - split < horizon:
            raise ValueError(f"series too short: n={n}, split={split}, lookback={lookback}, horizon={horizon}")
        self.split = split
        tr = y[:split]
        self.level_mean, self.level_std = mean_std(tr)
        _, self.diff_scale = mean_std(tr[1:] - tr[:-1])
        sq = 0.0
        for h in range(1, horizon + 1):
            sq += ((tr[h:split - horizon + h] - tr[: split - horizon]) ** 2).sum()
        self.rel_scale = math.sqrt(sq / ((split - horizon) * horizon))
        self.year_mean, self.year_std = mean_std(self.year[:split])
        self.train_ends = np.arange(lookback - 1, split - horizon)
        self.val_ends = np.arange(split - 1, n - horizon)
        phase = 2.0 * math.pi * (self.year - np.trunc(self.year))
        self.week = np.stack(
            [np.sin(phase), np.cos(phase), (self.year - self.year_mean) / self.year_std], axis=1
        )
        diff = np.concatenate([[0.0], y[1:] - y[:-1]])
        self.diff_norm = diff / self.diff_scale

    def describe(self):
        n = len(self.y)
        return (
            f"weekly Mauna Loa CO2, {n} weeks ({self.dates[0]}..{self.dates[-1]}), "
            f"{int((~self.observed).sum())} gaps interpolated; train {self.split} weeks / "
            f"{len(self.train_ends)} windows, validation {n - self.split} weeks / {len(self.val_ends)} windows"
        )

    def static_rows(self, ends):
        return ((self.y[ends] - self.level_mean) / self.level_std)[:, None]

    def past_rows(self, ends):
        idx = self._past_idx(ends)
        last = self.y[ends][:, None]
        rel = (self.y[idx] - last) / self.rel_scale
        return np.concatenate([rel[..., None], self.diff_norm[idx][..., None], self.week[idx]], axis=2)

    def future_rows(self, ends):
        return self.week[self._future_idx(ends)]

    def targets(self, ends):
        return (self.y[self._future_idx(ends)] - self.y[ends][:, None]) / self.rel_scale

    def denormalise(self, ends, pred):
        return self.y[np.asarray(ends)][:, None] + pred.astype(np.float64) * self.rel_scale


class Synthetic(Windows):
    """synth.rs: the hourly multi-series panel, read from `tft --dataset synthetic --dump-data`.

    Per series s and hour t (flat index s*hours + t): static = one-hot category ++ standardised
    log scale; known = [sin, cos of hour of day, sin, cos of day of week, weekend flag,
    standardised hour index]; past = [target z-score, covariate z-score] ++ known; future = known;
    target = z-score of the series. Normalisation uses the training hours of each series only.
    """

    season = 168
    unit = "units"

    def __init__(self, path, lookback, horizon, val_frac=VAL_FRAC):
        meta = {}
        with open(path) as f:
            first = f.readline()
        if not first.startswith("# tft synthetic panel"):
            raise ValueError(f"{path}: not a `tft --dump-data` file")
        for kv in first.split(":", 1)[1].split(","):
            k, v = kv.strip().split("=")
            meta[k] = int(v)
        self.meta = meta
        s_n, hours, n_cat = meta["n_series"], meta["hours"], meta["categories"]
        self.train_stride, self.val_stride = meta["train_stride"], meta["val_stride"]
        cols = np.loadtxt(path, delimiter=",", skiprows=2, dtype=np.float64, ndmin=2)
        if cols.shape[0] != s_n * hours:
            raise ValueError(f"{path}: {cols.shape[0]} rows, expected {s_n * hours}")
        series, hour = cols[:, 0].astype(np.int64), cols[:, 1].astype(np.int64)
        if not (np.array_equal(series, np.repeat(np.arange(s_n), hours))
                and np.array_equal(hour, np.tile(np.arange(hours), s_n))):
            raise ValueError(f"{path}: rows are not series-major, hour-minor")
        self.category = cols[::hours, 2].astype(np.int64)
        self.scale = cols[::hours, 3]
        self.y = cols[:, 4].copy()
        self.x = cols[:, 5].copy()
        self.observed = np.ones(len(self.y), dtype=bool)
        self.n_series, self.hours, self.n_categories = s_n, hours, n_cat
        self.n_static, self.n_past, self.n_future = n_cat + 1, 8, 6
        self.lookback, self.horizon = lookback, horizon
        split = split_index(hours, val_frac)
        if lookback < 2 or horizon == 0 or split < lookback + horizon + 1 or hours - split < horizon:
            raise ValueError(f"series too short: hours={hours}, split={split}, lookback={lookback}, horizon={horizon}")
        self.split = split
        y2, x2 = self.y.reshape(s_n, hours), self.x.reshape(s_n, hours)
        self.mu = np.empty(s_n)
        self.sd = np.empty(s_n)
        xm, xs = np.empty(s_n), np.empty(s_n)
        for s in range(s_n):
            self.mu[s], self.sd[s] = mean_std(y2[s, :split])
            xm[s], xs[s] = mean_std(x2[s, :split])
        self.z = ((y2 - self.mu[:, None]) / self.sd[:, None]).reshape(-1)
        self.xz = ((x2 - xm[:, None]) / xs[:, None]).reshape(-1)
        ls = np.log(self.scale)
        lm, lsd = mean_std(ls)
        self.static = np.concatenate([np.eye(n_cat)[self.category], ((ls - lm) / lsd)[:, None]], axis=1)
        t = np.arange(hours, dtype=np.float64)
        tm, tsd = mean_std(t[:split])
        hod, dow = np.arange(hours) % 24, (np.arange(hours) // 24) % 7
        ph, pw = 2.0 * math.pi * hod / 24.0, 2.0 * math.pi * dow / 7.0
        self.known = np.stack(
            [np.sin(ph), np.cos(ph), np.sin(pw), np.cos(pw), (dow >= 5).astype(np.float64), (t - tm) / tsd], axis=1
        )
        base = np.arange(s_n)[:, None] * hours
        self.train_ends = (base + np.arange(lookback - 1, split - horizon, self.train_stride)[None, :]).reshape(-1)
        self.val_ends = (base + np.arange(split - 1, hours - horizon, self.val_stride)[None, :]).reshape(-1)

    def describe(self):
        m = self.meta
        return (
            f"synthetic hourly panel (seed {m['seed']}), {self.n_series} series x {self.hours} hours, "
            f"{self.n_categories} categories; train {self.split} hours / {len(self.train_ends)} windows "
            f"(every {self.train_stride} h), validation {self.hours - self.split} hours / "
            f"{len(self.val_ends)} windows (every {self.val_stride} h)"
        )

    def static_rows(self, ends):
        return self.static[ends // self.hours]

    def past_rows(self, ends):
        idx = self._past_idx(ends)
        return np.concatenate([self.z[idx][..., None], self.xz[idx][..., None], self.known[idx % self.hours]], axis=2)

    def future_rows(self, ends):
        return self.known[self._future_idx(ends) % self.hours]

    def targets(self, ends):
        return self.z[self._future_idx(ends)]

    def denormalise(self, ends, pred):
        s = np.asarray(ends) // self.hours
        return self.mu[s][:, None] + pred.astype(np.float64) * self.sd[s][:, None]


# ---------------------------------------------------------------------------------------------
# Model
# ---------------------------------------------------------------------------------------------
class GLU(nn.Module):
    def __init__(self, d_in, d_out):
        super().__init__()
        self.gate = nn.Linear(d_in, d_out)
        self.value = nn.Linear(d_in, d_out)

    def forward(self, x):
        return torch.sigmoid(self.gate(x)) * self.value(x)


class GateAddNorm(nn.Module):
    """LayerNorm(skip + GLU(x))."""

    def __init__(self, d_in, d_out):
        super().__init__()
        self.glu = GLU(d_in, d_out)
        self.norm = nn.LayerNorm(d_out, eps=LN_EPS)

    def forward(self, x, skip):
        return self.norm(skip + self.glu(x))


class GRN(nn.Module):
    """LayerNorm(skip(a) + GLU(fc2(ELU(fc1(a) + context(c))))); skip is a linear map when the
    widths differ, the context projection has no bias (grn.rs)."""

    def __init__(self, d_in, hidden, d_out, d_ctx=None):
        super().__init__()
        self.skip = nn.Linear(d_in, d_out) if d_in != d_out else None
        self.fc1 = nn.Linear(d_in, hidden)
        self.context = nn.Linear(d_ctx, hidden, bias=False) if d_ctx is not None else None
        self.fc2 = nn.Linear(hidden, hidden)
        self.gate_norm = GateAddNorm(hidden, d_out)

    def forward(self, x, c=None):
        skip = self.skip(x) if self.skip is not None else x
        h = self.fc1(x)
        if self.context is not None:
            c = self.context(c)
            while c.dim() < h.dim():
                c = c.unsqueeze(1)
            h = h + c
        h = self.fc2(F.elu(h))
        return self.gate_norm(h, skip)


class VariableSelection(nn.Module):
    """vsn.rs: each input variable embedded by its own Linear(1, hidden) and GRN, mixed with
    softmax weights from a context-aware GRN over the concatenated embeddings."""

    def __init__(self, n_vars, hidden, d_ctx):
        super().__init__()
        self.prescale = nn.ModuleList(nn.Linear(1, hidden) for _ in range(n_vars))
        self.var_grn = nn.ModuleList(GRN(hidden, hidden, hidden) for _ in range(n_vars))
        self.weight_grn = GRN(n_vars * hidden, hidden, n_vars, d_ctx)

    def forward(self, x, c):
        embedded = [p(x[..., i : i + 1]) for i, p in enumerate(self.prescale)]
        processed = [g(e) for g, e in zip(self.var_grn, embedded)]
        weights = torch.softmax(self.weight_grn(torch.cat(embedded, -1), c), -1)
        combined = (torch.stack(processed, -2) * weights.unsqueeze(-1)).sum(-2)
        return combined, weights


class InterpretableMultiHeadAttention(nn.Module):
    """attention.rs: per-head q/k, one shared value projection, heads averaged, causal mask."""

    def __init__(self, hidden, n_heads):
        super().__init__()
        assert hidden % n_heads == 0
        self.n_heads, self.d_head = n_heads, hidden // n_heads
        self.q = nn.Linear(hidden, hidden)
        self.k = nn.Linear(hidden, hidden)
        self.v = nn.Linear(hidden, self.d_head)
        self.out = nn.Linear(self.d_head, hidden)

    def forward(self, x):
        b, t, _ = x.shape
        q = self.q(x).view(b, t, self.n_heads, self.d_head).transpose(1, 2)
        k = self.k(x).view(b, t, self.n_heads, self.d_head).transpose(1, 2)
        v = self.v(x)
        scores = q @ k.transpose(2, 3) * (1.0 / math.sqrt(self.d_head))
        i = torch.arange(t, device=x.device)
        mask = torch.where(i[None, :] <= i[:, None], 0.0, -1e9).to(scores.dtype)
        attn = torch.softmax(scores + mask, -1).mean(1)  # [b, t, t]
        return self.out(attn @ v), attn


class TFT(nn.Module):
    """model.rs: static encoders -> 4 contexts, VSNs, LSTM encoder/decoder, gate-add-norm,
    static enrichment, attention, gate-add-norm, position-wise GRN, gate-add-norm, output."""

    def __init__(self, hidden, n_heads, n_static, n_past, n_future, n_quantiles=len(QUANTILES)):
        super().__init__()
        h = hidden
        self.static_enc = GRN(n_static, h, h)
        self.ctx_select = GRN(h, h, h)
        self.ctx_enrich = GRN(h, h, h)
        self.ctx_h = GRN(h, h, h)
        self.ctx_c = GRN(h, h, h)
        self.past_vsn = VariableSelection(n_past, h, h)
        self.future_vsn = VariableSelection(n_future, h, h)
        self.lstm_enc = nn.LSTM(h, h, batch_first=True)
        self.lstm_dec = nn.LSTM(h, h, batch_first=True)
        self.post_lstm = GateAddNorm(h, h)
        self.enrich = GRN(h, h, h, h)
        self.attention = InterpretableMultiHeadAttention(h, n_heads)
        self.post_attn = GateAddNorm(h, h)
        self.positionwise = GRN(h, h, h)
        self.pre_output = GateAddNorm(h, h)
        self.output = nn.Linear(h, n_quantiles)

    def forward(self, static_x, past, future):
        lookback = past.shape[1]
        s = self.static_enc(static_x)
        c_select, c_enrich = self.ctx_select(s), self.ctx_enrich(s)
        c_h, c_c = self.ctx_h(s), self.ctx_c(s)
        past_emb, _ = self.past_vsn(past, c_select)
        fut_emb, _ = self.future_vsn(future, c_select)
        enc, state = self.lstm_enc(past_emb, (c_h.unsqueeze(0).contiguous(), c_c.unsqueeze(0).contiguous()))
        dec, _ = self.lstm_dec(fut_emb, state)
        lstm_out = torch.cat([enc, dec], 1)
        phi = self.post_lstm(lstm_out, torch.cat([past_emb, fut_emb], 1))
        theta = self.enrich(phi, c_enrich)
        attn_out, _ = self.attention(theta)
        delta = self.post_attn(attn_out, theta)
        psi = self.positionwise(delta)
        out = self.pre_output(psi, phi)[:, lookback:]
        return self.output(out)


def candle_init_(model, gen):
    """The distributions candle_nn gives these layers (tft/src/init.rs draws them from StdRng)."""
    with torch.no_grad():
        for m in model.modules():
            if isinstance(m, nn.Linear):
                fan_in = m.weight.shape[1]
                m.weight.normal_(0.0, math.sqrt(2.0) / math.sqrt(fan_in), generator=gen)
                if m.bias is not None:
                    b = 1.0 / math.sqrt(fan_in)
                    m.bias.uniform_(-b, b, generator=gen)
            elif isinstance(m, nn.LSTM):
                for name, p in m.named_parameters():
                    if name.startswith("weight"):
                        b = math.sqrt(3.0) * math.sqrt(2.0) / math.sqrt(p.shape[1])
                        p.uniform_(-b, b, generator=gen)
                    else:
                        p.zero_()
            elif isinstance(m, nn.LayerNorm):
                m.weight.fill_(1.0)
                m.bias.zero_()


def expected_counts(hidden, n_heads, n_static, n_past, n_future, n_q=len(QUANTILES)):
    """(tensors, scalars) tallied from the Rust construction (model.rs/grn.rs/vsn.rs/
    attention.rs + candle_nn::linear/lstm + the shim's affine LayerNorm), independently of torch."""
    h = hidden

    def linear(i, o, bias=True):
        return (2, i * o + o) if bias else (1, i * o)

    def add(*parts):
        return tuple(map(sum, zip(*parts)))

    def gan(i, o):  # GLU (gate, value) + LayerNorm (weight, bias)
        return add(linear(i, o), linear(i, o), (2, 2 * o))

    def grn(i, hid, o, ctx=None):
        parts = [linear(i, hid), linear(hid, hid), gan(hid, o)]
        if i != o:
            parts.append(linear(i, o))
        if ctx is not None:
            parts.append(linear(ctx, hid, bias=False))
        return add(*parts)

    def vsn(n):
        return add(*([add(linear(1, h), grn(h, h, h)) for _ in range(n)] + [grn(n * h, h, n, h)]))

    lstm = (4, 4 * h * h + 4 * h * h + 8 * h)
    d = h // n_heads
    attn = add(linear(h, h), linear(h, h), linear(h, d), linear(d, h))
    return add(
        grn(n_static, h, h), *[grn(h, h, h)] * 4, vsn(n_past), vsn(n_future), lstm, lstm,
        gan(h, h), grn(h, h, h, h), attn, gan(h, h), grn(h, h, h), gan(h, h), linear(h, n_q),
    )


# ---------------------------------------------------------------------------------------------
# Training
# ---------------------------------------------------------------------------------------------
def quantile_loss(pred, target, q):
    err = target.unsqueeze(2) - pred
    return (torch.relu(err) * q + torch.relu(-err) * (1.0 - q)).mean()


def cosine_lr(lr, step, total):
    p = step / (total - 1) if total > 1 else 0.0
    lo = lr / 10.0
    return lo + (lr - lo) * 0.5 * (1.0 + math.cos(math.pi * p))


def epoch_batches(ends, batch_size, seed, epoch):
    """train.rs epoch_batches: all training windows shuffled (seeded per epoch), then chunked."""
    s = (seed ^ ((SHUFFLE_MUL * (epoch + 1)) & 0xFFFFFFFFFFFFFFFF)) & 0xFFFFFFFFFFFFFFFF
    idx = np.random.default_rng(s).permutation(np.asarray(ends))
    return [idx[i : i + batch_size] for i in range(0, len(idx), batch_size)]


def to_device(arrays, device):
    return [torch.from_numpy(a).to(device, non_blocking=False) for a in arrays]


def evaluate(model, data, ends, device, q):
    """Mean loss and the MAE of the median forecast (original units), chunks of 256."""
    median = QUANTILES.index(0.5)
    loss_sum, preds = 0.0, []
    with torch.no_grad():
        for i in range(0, len(ends), EVAL_BATCH):
            chunk = ends[i : i + EVAL_BATCH]
            st, pa, fu, tg = to_device(data.batch(chunk), device)
            out = model(st, pa, fu)
            loss_sum += quantile_loss(out, tg, q).item() * len(chunk)
            preds.append(out[:, :, median].float().cpu().numpy())
    pred = np.concatenate(preds)
    return loss_sum / max(len(ends), 1), data.mae(ends, data.denormalise(ends, pred))


def profile_steps(a, model, fwd, opt, data, device, q, sync):
    """`--profile-steps N`: where the twin's step goes on the device (what `tft --profile` and
    `ncu` show for ours): GPU time per step summed over kernels, kernels per step, the top ones."""
    from torch.profiler import ProfilerActivity, profile

    batches = [b for b in epoch_batches(data.train_ends, a.batch_size, a.seed, 1) if len(b) == a.batch_size]
    need = WARMUP_STEPS + a.profile_steps
    batches = (batches * (need // max(len(batches), 1) + 1))[:need]

    def step(ends):
        st, pa, fu, tg = to_device(data.batch(ends), device)
        loss = quantile_loss(fwd(st, pa, fu), tg, q)
        loss.backward()
        opt.step()
        opt.zero_grad(set_to_none=True)
        return loss.item()

    model.train()
    for ends in batches[:WARMUP_STEPS]:
        step(ends)
    sync()
    acts = [ProfilerActivity.CPU] + ([ProfilerActivity.CUDA] if device.type == "cuda" else [])
    wall = []
    with profile(activities=acts) as prof:
        for ends in batches[WARMUP_STEPS:]:
            t = time.perf_counter()
            step(ends)
            sync()
            wall.append((time.perf_counter() - t) * 1e3)
    n = a.profile_steps
    # Device-side events, less the spans of record_function labels on the GPU timeline
    # ("Optimizer.step#AdamW.step"), which cover kernels rather than being kernels.
    kernels = [
        e for e in prof.events()
        if e.device_type == torch.autograd.DeviceType.CUDA and not getattr(e, "is_user_annotation", False)
    ]
    busy = sum(e.device_time for e in kernels) / 1e3 / n  # us -> ms
    print(f"profile: {n} steps of batch {a.batch_size} after {WARMUP_STEPS} warm-up steps (torch.profiler)")
    print(f"step wall ms median {sorted(wall)[n // 2]:.2f}; GPU kernel time {busy:.2f} ms/step; "
          f"{len(kernels) / n:.0f} kernels/step")
    by_name = {}
    for e in kernels:
        t, c = by_name.get(e.name, (0.0, 0))
        by_name[e.name] = (t + e.device_time, c + 1)
    print(f"{'ms/step':>8} {'share':>6} {'calls':>6}  kernel")
    for name, (t, c) in sorted(by_name.items(), key=lambda kv: -kv[1][0])[:25]:
        print(f"{t / 1e3 / n:>8.3f} {t / 1e3 / n / busy:>6.1%} {c / n:>6.0f}  {name[:110]}")


def parse_args(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--epochs", type=int, default=10)
    ap.add_argument("--batch-size", type=int)
    ap.add_argument("--seed", type=int, default=42)
    ap.add_argument("--lr", type=float, default=3e-3)
    ap.add_argument("--hidden", type=int)
    ap.add_argument("--heads", type=int)
    ap.add_argument("--lookback", type=int)
    ap.add_argument("--horizon", type=int)
    ap.add_argument("--preset", choices=sorted(PRESETS), default="default",
                    help="sets hidden/heads/lookback/horizon/batch-size; explicit flags override")
    ap.add_argument("--dataset", choices=["co2", "synthetic"], default="co2")
    ap.add_argument("--data", help="the synthetic panel written by `tft --dataset synthetic --dump-data PATH`")
    ap.add_argument("--expect-fingerprint", type=float,
                    help="exit 1 unless the data fingerprint is this (what the Rust run printed)")
    ap.add_argument("--device", choices=["cpu", "cuda"], default="cpu")
    ap.add_argument("--compile", action="store_true", help="torch.compile the model")
    ap.add_argument("--threads", type=int, help="torch.set_num_threads")
    ap.add_argument("--quiet", action="store_true", help="no per-step progress")
    ap.add_argument("--profile-steps", type=int, metavar="N",
                    help="instead of training: N steps after the warm-up under torch.profiler; "
                         "prints the GPU kernel time per step and the kernels that take it")
    a = ap.parse_args(argv)
    for k, v in PRESETS[a.preset].items():
        if getattr(a, k) is None:
            setattr(a, k, v)
    err = None
    if a.epochs < 1:
        err = f"--epochs must be at least 1 (got {a.epochs})"
    elif a.batch_size < 1:
        err = f"--batch-size must be at least 1 (got {a.batch_size})"
    elif not (math.isfinite(a.lr) and a.lr > 0):
        err = f"--lr must be a finite number above 0 (got {a.lr})"
    elif a.heads < 1:
        err = f"--heads must be at least 1 (got {a.heads})"
    elif a.hidden < 1 or a.hidden % a.heads:
        err = f"--hidden must be a positive multiple of {a.heads} (the attention heads) (got {a.hidden})"
    elif a.lookback < 2 or a.horizon < 1:
        err = f"--lookback must be at least 2 and --horizon at least 1 (got {a.lookback}, {a.horizon})"
    elif a.dataset == "synthetic" and not a.data:
        err = "--dataset synthetic needs --data PATH, written by `tft --dataset synthetic --dump-data PATH`"
    elif a.device == "cuda" and not torch.cuda.is_available():
        err = "--device cuda: CUDA is not available to this PyTorch"
    elif a.profile_steps is not None and a.profile_steps < 1:
        err = f"--profile-steps must be at least 1 (got {a.profile_steps})"
    elif a.threads is not None and a.threads < 1:
        err = f"--threads must be at least 1 (got {a.threads})"
    if err:
        ap.exit(2, f"error: {err}\n")
    return a


def main(argv=None):
    a = parse_args(argv)
    if a.threads:
        torch.set_num_threads(a.threads)
    torch.manual_seed(a.seed)
    device = torch.device(a.device)
    t_start = time.perf_counter()

    data = Co2(a.lookback, a.horizon) if a.dataset == "co2" else Synthetic(a.data, a.lookback, a.horizon)
    print(f"data: {data.describe()}")
    fp = data.fingerprint()
    print(f"data fingerprint: {fp:.4f}")
    if a.expect_fingerprint is not None:
        if abs(fp - a.expect_fingerprint) > 1e-4 + 1e-9 * abs(a.expect_fingerprint):
            sys.exit(f"error: data fingerprint {fp:.4f} differs from the Rust run's {a.expect_fingerprint:.4f}")
        print("data fingerprint: same as the Rust run")

    model = TFT(a.hidden, a.heads, data.n_static, data.n_past, data.n_future)
    gen = torch.Generator().manual_seed(a.seed)
    candle_init_(model, gen)
    model.to(device)
    params = list(model.parameters())
    counts = (len(params), sum(p.numel() for p in params))
    expect = expected_counts(a.hidden, a.heads, data.n_static, data.n_past, data.n_future)
    assert counts == expect, f"parameter counts {counts} differ from the Rust model's {expect}"
    rust = RUST_PARAM_COUNTS.get((a.dataset, a.hidden, a.heads))
    assert rust is None or counts == rust, f"parameter counts {counts} differ from the Rust run's {rust}"
    print(
        f"model: TFT hidden={a.hidden} heads={a.heads} lookback={a.lookback} horizon={a.horizon} "
        f"quantiles={list(QUANTILES)}; parameters: {counts[0]} tensors ({counts[1]} scalars), "
        f"same as the Rust model ({'checked against the Rust run' if rust else 'tallied from its construction'})"
    )
    impl = "torch-compile" if a.compile else "torch-eager"
    fwd = torch.compile(model) if a.compile else model
    print(
        f"device: {a.device}, torch {torch.__version__}, threads {torch.get_num_threads()}, {impl}, "
        f"seed {a.seed}, lr {a.lr}, batch {a.batch_size}"
    )
    opt = torch.optim.AdamW(params, lr=a.lr, weight_decay=1e-4)
    q = torch.tensor(QUANTILES, device=device)
    sync = torch.cuda.synchronize if device.type == "cuda" else (lambda: None)

    if a.profile_steps:
        return profile_steps(a, model, fwd, opt, data, device, q, sync)
    steps_per_epoch = -(-len(data.train_ends) // a.batch_size)
    total_steps = steps_per_epoch * a.epochs
    step_ms, counted, seen_shapes = [], [], set()
    global_step = 0
    last = None
    for epoch in range(1, a.epochs + 1):
        batches = epoch_batches(data.train_ends, a.batch_size, a.seed, epoch)
        loss_sum, n = 0.0, 0
        model.train()
        t_epoch = time.perf_counter()
        for i, ends in enumerate(batches):
            for g in opt.param_groups:
                g["lr"] = cosine_lr(a.lr, global_step, total_steps)
            sync()
            t = time.perf_counter()
            st, pa, fu, tg = to_device(data.batch(ends), device)
            loss = quantile_loss(fwd(st, pa, fu), tg, q)
            loss.backward()
            opt.step()
            opt.zero_grad(set_to_none=True)
            lv = loss.item()
            sync()
            step_ms.append((time.perf_counter() - t) * 1e3)
            new_shape = a.compile and len(ends) not in seen_shapes
            seen_shapes.add(len(ends))
            counted.append(global_step >= WARMUP_STEPS and not new_shape)
            global_step += 1
            if not math.isfinite(lv):
                sys.exit(f"error: non-finite loss at epoch {epoch}")
            loss_sum += lv * len(ends)
            n += len(ends)
            if not a.quiet and sys.stderr.isatty():
                print(f"\repoch {epoch:>3} {i + 1}/{len(batches)} loss {lv:.4f}", end="", file=sys.stderr)
        if not a.quiet and sys.stderr.isatty():
            print("\r\033[K", end="", file=sys.stderr)
        epoch_ms = (time.perf_counter() - t_epoch) * 1e3
        model.eval()
        val_loss, val_mae = evaluate(fwd, data, data.val_ends, device, q)
        print(
            f"epoch {epoch:>3}: train loss {loss_sum / n:.4f}  val loss {val_loss:.4f}  "
            f"val MAE(p50) {val_mae:.3f} {data.unit}  {epoch_ms / len(batches):.1f} ms/step"
        )
        last = val_mae

    ve = data.val_ends
    pers, seas, drift = data.persistence_mae(ve), data.seasonal_naive_mae(ve), data.seasonal_drift_mae(ve)
    best = min(pers, seas, drift)
    print(f"validation MAE over {len(ve)} windows x {a.horizon} horizons ({data.unit}):")
    print(f"  persistence             {pers:.3f}")
    print(f"  seasonal naive          {seas:.3f}  (period {data.season})")
    print(f"  seasonal naive + drift  {drift:.3f}")
    print(f"  TFT median (p50)        {last:.3f}")
    print(f"  TFT {'BEATS' if last < best else 'does NOT beat'} the best naive baseline "
          f"({best:.3f} {data.unit}, {100 * (last - best) / best:+.1f}%)")
    timed = [ms for ms, c in zip(step_ms, counted) if c]
    excluded = len(step_ms) - len(timed)
    if not timed:
        sys.exit(f"error: all {len(step_ms)} steps were warm-up; run more epochs")
    mean_ms, median_ms = statistics.fmean(timed), statistics.median(timed)
    print(f"step time: mean {mean_ms:.1f} ms, median {median_ms:.1f} ms over {len(timed)} steps "
          f"({excluded} warm-up steps excluded: the first {WARMUP_STEPS}"
          f"{' and the first of each new batch shape' if a.compile else ''})")
    print(f"total wall time {time.perf_counter() - t_start:.1f} s")
    print(f"RESULT impl={impl} device={a.device} dataset={a.dataset} hidden={a.hidden} heads={a.heads} "
          f"lookback={a.lookback} horizon={a.horizon} batch={a.batch_size} threads={torch.get_num_threads()} "
          f"steps={len(timed)} mean_ms={mean_ms:.3f} median_ms={median_ms:.3f} val_mae={last:.4f}")


if __name__ == "__main__":
    main()
