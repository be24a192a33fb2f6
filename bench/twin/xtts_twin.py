"""A PyTorch twin of xtts's acoustic model (src/core/model), for the engine benchmark (bench/gpu-twin.sh).

The same architecture, layer for layer, under the parameter names `xtts export` writes (so an exported
checkpoint loads with load_state_dict(strict=True)), written as a PyTorch user would train it: SDPA
attention, fused AdamW, bf16 autocast, torch.compile and CUDA graphs. Training follows xtts's step:
monotonic alignment search on the host for the next batch while the device trains on this one, then the
teacher-forced forward pass, the masked losses, global-norm clipping and AdamW.

    python3 bench/twin/xtts_twin.py check DIR
        DIR from bench/twin/reference.ts: xtts's weights, a fixed batch, its alignment, losses and
        gradients. Prints one JSON line; exit 1 when a loss differs by more than 1e-5 (float32, CPU).
    python3 bench/twin/xtts_twin.py bench --weights F.safetensors --batch B --tokens T --frames F --ref R
            [--variants fp32,graphs_fp32,graphs_bf16,compile_graphs_bf16] [--steps 50] [--warmup 10] [--device cuda]
        Trains the bucket shape B×T×F×R (a synthetic batch) with each variant; one JSON line per variant.
        Variants: fp32 (eager, TF32 off), bf16 (eager autocast), compile_bf16 (torch.compile), graphs_bf16
        (the whole step in one CUDA graph), compile_stepgraph_bf16 (torch.compile's kernels, the whole step
        in one CUDA graph), compile_graphs_bf16 (torch.compile, mode reduce-overhead); any of them with fp32
        instead of bf16.

Needs torch and numpy only. Not part of xtts: a measurement kit, run where torch is.
"""
import argparse
import json
import math
import os
import statistics
import struct
import subprocess
import sys
import time
import traceback
from concurrent.futures import ThreadPoolExecutor

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

MASK_BIAS = -1e9  # src/core/model/nn.ts: finite, so a row with every key masked is uniform, not NaN
LN_EPSILON = 1e-5  # src/core/backend/programs/layernorm.ts
FIRST_SYMBOL = 2  # src/core/model/align.ts: <bos> and the language token take no steps
BATCH_KEYS = ("tokens", "text_lengths", "languages", "mel", "mel_lengths", "ref_mel", "ref_lengths")

# ------------------------------------------------------------------------------------------------
# safetensors (F32 and I32, as xtts writes them)

DTYPES = {"F32": torch.float32, "I32": torch.int32}


def read_safetensors(path):
    """{name: tensor} and the metadata of a safetensors file."""
    with open(path, "rb") as f:
        data = f.read()
    (n,) = struct.unpack("<Q", data[:8])
    header = json.loads(data[8 : 8 + n])
    meta = header.pop("__metadata__", {})
    out = {}
    for name, h in header.items():
        a, b = h["data_offsets"]
        dtype = DTYPES[h["dtype"]]
        raw = bytearray(data[8 + n + a : 8 + n + b])
        t = torch.frombuffer(raw, dtype=dtype) if raw else torch.zeros(0, dtype=dtype)
        out[name] = t.reshape(h["shape"])
    return out, meta


# ------------------------------------------------------------------------------------------------
# The model. Activations are [B, T, D]; every module's forward takes `p`, the dropout rate.


def length_mask(lengths, n):
    """[B, n] bool: True for positions < length."""
    return torch.arange(n, device=lengths.device)[None, :] < lengths[:, None]


def key_bias(lengths, keys):
    """[B, 1, 1, keys]: 0 for real keys, MASK_BIAS for padding."""
    return ((~length_mask(lengths, keys)).float() * MASK_BIAS)[:, None, None, :]


def split_heads(x, heads):
    b, t, d = x.shape
    return x.view(b, t, heads, d // heads).transpose(1, 2)


def merge_heads(y):
    b, h, t, dh = y.shape
    return y.transpose(1, 2).reshape(b, t, h * dh)


def attend(q, k, v, bias=None, causal=False):
    # SDPA takes an additive mask of the query's dtype (bf16 holds -1e9; fp16 would not).
    mask = None if bias is None else bias.to(q.dtype)
    return F.scaled_dot_product_attention(q, k, v, attn_mask=mask, is_causal=causal)


def layer_norm(d):
    return nn.LayerNorm(d, eps=LN_EPSILON, bias=False)


class SelfAttention(nn.Module):
    def __init__(self, d, heads):
        super().__init__()
        self.heads = heads
        self.q_proj, self.k_proj, self.v_proj, self.out = (nn.Linear(d, d) for _ in range(4))

    def forward(self, x, bias=None, causal=False):
        q, k, v = (split_heads(f(x), self.heads) for f in (self.q_proj, self.k_proj, self.v_proj))
        return self.out(merge_heads(attend(q, k, v, bias, causal)))


class CrossAttention(nn.Module):
    """Queries from the decoder; keys and values from the memory ([voice latents ; text])."""

    def __init__(self, d, heads):
        super().__init__()
        self.heads = heads
        self.q, self.k_proj, self.v_proj, self.out = (nn.Linear(d, d) for _ in range(4))

    def forward(self, x, memory, bias):
        q = split_heads(self.q(x), self.heads)
        k, v = split_heads(self.k_proj(memory), self.heads), split_heads(self.v_proj(memory), self.heads)
        return self.out(merge_heads(attend(q, k, v, bias)))


class Mlp(nn.Module):
    def __init__(self, d, mult):
        super().__init__()
        self.fc, self.proj = nn.Linear(d, mult * d), nn.Linear(mult * d, d)

    def forward(self, x):
        return self.proj(F.relu(self.fc(x)))


class EncoderBlock(nn.Module):
    """Pre-LN: x + drop(attn(ln1(x))), then x + drop(mlp(ln2(x)))."""

    def __init__(self, d, heads, mult):
        super().__init__()
        self.ln1, self.attn, self.ln2, self.mlp = layer_norm(d), SelfAttention(d, heads), layer_norm(d), Mlp(d, mult)

    def forward(self, x, bias, p):
        x = x + F.dropout(self.attn(self.ln1(x), bias), p, self.training)
        return x + F.dropout(self.mlp(self.ln2(x)), p, self.training)


class TextEncoder(nn.Module):
    def __init__(self, c, vocab, languages, n_mels):
        super().__init__()
        d = c["d_model"]
        self.tok_embed = nn.Parameter(torch.zeros(vocab, d))
        self.lang_embed = nn.Parameter(torch.zeros(languages, d))
        self.pos_embed = nn.Parameter(torch.zeros(c["max_text_tokens"], d))
        self.blocks = nn.ModuleList(EncoderBlock(d, c["heads"], c["ff_mult"]) for _ in range(c["text_layers"]))
        self.ln_out = layer_norm(d)
        self.mel_head = nn.Linear(d, n_mels)  # every symbol's mean mel frame (used by the model, not here)

    def forward(self, tokens, languages, bias, p):
        t = tokens.shape[1]
        x = F.embedding(tokens, self.tok_embed) + self.lang_embed[languages][:, None] + self.pos_embed[:t]
        x = F.dropout(x, p, self.training)
        for block in self.blocks:
            x = block(x, bias, p)
        return self.ln_out(x)


class Pool(nn.Module):
    """Perceiver-style pooling of the reference frames into the learned latents."""

    def __init__(self, d, mult):
        super().__init__()
        self.q, self.k_proj, self.v_proj, self.out = (nn.Linear(d, d) for _ in range(4))
        self.ln, self.mlp = layer_norm(d), Mlp(d, mult)


class ConditioningEncoder(nn.Module):
    def __init__(self, c, n_mels):
        super().__init__()
        d = c["d_model"]
        self.heads = c["heads"]
        self.in_conv = nn.Conv1d(n_mels, d, 3, padding=1)
        self.blocks = nn.ModuleList(EncoderBlock(d, c["heads"], c["ff_mult"]) for _ in range(c["cond_layers"]))
        self.ln_frames = layer_norm(d)
        self.latents = nn.Parameter(torch.zeros(c["cond_latents"], d))
        self.pool = Pool(d, c["ff_mult"])
        self.ln_out = layer_norm(d)
        if c.get("speaker_offset"):
            self.mel_offset = nn.Linear(d, n_mels)

    def forward(self, ref, bias, p):
        """ref [B, Tr, nMels] with its padded frames zeroed, bias [B, 1, 1, Tr] -> latents [B, L, D]."""
        x = self.in_conv(ref.transpose(1, 2)).transpose(1, 2)
        for block in self.blocks:
            x = block(x, bias, p)
        frames = self.ln_frames(x)
        k, v = split_heads(self.pool.k_proj(frames), self.heads), split_heads(self.pool.v_proj(frames), self.heads)
        q = split_heads(self.pool.q(self.latents)[None], self.heads).expand(ref.shape[0], -1, -1, -1)
        lat = self.pool.out(merge_heads(attend(q, k, v, bias))) + self.latents
        out = lat + F.dropout(self.pool.mlp(self.pool.ln(lat)), p, self.training)
        return self.ln_out(out)


class DurationPredictor(nn.Module):
    def __init__(self, d, speaker_rate=False):
        super().__init__()
        self.conv1, self.conv2 = nn.Conv1d(d, d, 3, padding=1), nn.Conv1d(d, d, 3, padding=1)
        self.ln1, self.ln2 = layer_norm(d), layer_norm(d)
        self.out = nn.Linear(d, 1)
        if speaker_rate:  # model.speaker_rate: the voice's vector added to what the predictor reads
            self.voice = nn.Linear(d, d)

    def forward(self, text, mask, p):
        """text [B, T, D] (detached), mask [B, T, 1] -> log(1 + steps) [B, T]."""
        h = text
        for conv, ln in ((self.conv1, self.ln1), (self.conv2, self.ln2)):
            h = F.dropout(ln(F.relu(conv((h * mask).transpose(1, 2)).transpose(1, 2))), p, self.training)
        return self.out(h).squeeze(-1)


class Prenet(nn.Module):
    def __init__(self, in_dim, dim):
        super().__init__()
        self.fc1, self.fc2 = nn.Linear(in_dim, dim), nn.Linear(dim, dim)

    def forward(self, x, rate):
        if rate >= 1:  # no frame reaches the decoder: the prenet of zeros
            return F.relu(self.fc2(F.relu(self.fc1(torch.zeros_like(x)))))
        h = F.dropout(F.relu(self.fc1(x)), rate, True)
        return F.dropout(F.relu(self.fc2(h)), rate, True)


class DecoderBlock(nn.Module):
    def __init__(self, d, heads, mult):
        super().__init__()
        self.ln1, self.self, self.ln2 = layer_norm(d), SelfAttention(d, heads), layer_norm(d)
        self.cross, self.ln3, self.mlp = CrossAttention(d, heads), layer_norm(d), Mlp(d, mult)

    def forward(self, x, memory, cross_bias, p):
        x = x + F.dropout(self.self(self.ln1(x), causal=True), p, self.training)
        x = x + F.dropout(self.cross(self.ln2(x), memory, cross_bias), p, self.training)
        return x + F.dropout(self.mlp(self.ln3(x)), p, self.training)


class Decoder(nn.Module):
    def __init__(self, c, n_mels):
        super().__init__()
        d, r = c["d_model"], c["reduction_factor"]
        self.prenet = Prenet(r * n_mels, c["prenet_dim"])
        self.in_proj = nn.Linear(c["prenet_dim"], d)
        self.pos_embed = nn.Parameter(torch.zeros(math.ceil(c["max_mel_frames"] / r), d))
        self.blocks = nn.ModuleList(DecoderBlock(d, c["heads"], c["ff_mult"]) for _ in range(c["decoder_layers"]))
        self.ln_out = layer_norm(d)
        self.head = nn.Linear(d, r * n_mels)

    def forward(self, prev, memory, cross_bias, p, prenet_rate):
        """prev [B, S, r·nMels] (step s sees group s−1, zeros at 0) -> the decoder's part [B, S, r·nMels]."""
        x = F.dropout(self.in_proj(self.prenet(prev, prenet_rate)) + self.pos_embed[: prev.shape[1]], p, self.training)
        for block in self.blocks:
            x = block(x, memory, cross_bias, p)
        return self.head(self.ln_out(x))


class XttsTwin(nn.Module):
    def __init__(self, c, sizes):
        super().__init__()
        self.c = c
        self.n_mels = sizes["nMels"]
        self.text = TextEncoder(c, sizes["vocabSize"], sizes["numLanguages"], self.n_mels)
        self.cond = ConditioningEncoder(c, self.n_mels)
        self.dur = DurationPredictor(c["d_model"], bool(c.get("speaker_rate")))
        self.dec = Decoder(c, self.n_mels)
        self.postnet = nn.ModuleList()
        k, ch, n = c["postnet_kernel"], c["postnet_channels"], c["postnet_layers"]
        for i in range(n):
            width_in, width_out = self.n_mels if i == 0 else ch, self.n_mels if i == n - 1 else ch
            self.postnet.append(nn.Conv1d(width_in, width_out, k, padding=k // 2))

    def means(self, text):
        return self.text.mel_head(text)

    def alignment_scores(self, tokens, text_lengths, languages, mel):
        """The scores monotonic alignment search reads [B, S, T] (model.ts align: no dropout)."""
        b, frames, n = mel.shape
        r = self.c["reduction_factor"]
        means = self.means(self.text(tokens, languages, key_bias(text_lengths, tokens.shape[1]), 0.0))
        step_sums = mel.view(b, frames // r, r, n).sum(2)
        cross = step_sums @ means.transpose(1, 2)
        norms = (means * means).sum(2)[:, None, :]
        return (cross - norms * (r / 2)) / (r * n)

    def cross_bias(self, steps, text_bias):
        """[B, H, S, L + T]: the alignment heads read only the aligned token, the others everything real."""
        c = self.c
        b, s = steps.shape
        latents, t = c["cond_latents"], text_bias.shape[3]
        # One-hot by comparison: F.one_hot checks its classes on the host, which a CUDA graph cannot capture.
        memory = torch.arange(latents + t, device=steps.device)
        aligned = (memory == (steps.long() + latents)[..., None]).to(text_bias.dtype)
        parts = [((aligned - 1) * -MASK_BIAS)[:, None].expand(b, c["alignment_heads"], s, latents + t)]
        if c["heads"] > c["alignment_heads"]:
            free = torch.cat([torch.zeros(b, 1, 1, latents, device=steps.device), text_bias], 3)
            parts.append(free.expand(b, c["heads"] - c["alignment_heads"], s, latents + t))
        return torch.cat(parts, 1)

    def forward(self, batch, steps, p):
        """Teacher-forced pass (model.ts forward): steps [B, S] the aligned token of every decoder step."""
        c, n = self.c, self.n_mels
        tokens, mel = batch["tokens"], batch["mel"]
        b, t = tokens.shape
        frames, r = mel.shape[1], c["reduction_factor"]
        s = frames // r
        text_bias = key_bias(batch["text_lengths"], t)
        text = self.text(tokens, batch["languages"], text_bias, p)
        ref, ref_lengths = batch["ref_mel"], batch["ref_lengths"]
        ref_mask = length_mask(ref_lengths, ref.shape[1]).to(ref.dtype)
        voice = self.cond(ref * ref_mask[..., None], key_bias(ref_lengths, ref.shape[1]), p)
        means = self.means(text)
        if c.get("speaker_offset"):
            means = means + self.cond.mel_offset(voice.mean(1))[:, None]
        per_step = torch.gather(means, 1, steps.long()[..., None].expand(b, s, n))
        text_mel = per_step.repeat_interleave(r, dim=1)
        memory = torch.cat([voice, text], 1)
        grouped = mel.view(b, s, r * n)
        prev = F.pad(grouped[:, :-1], (0, 0, 1, 0))
        own = self.dec(prev, memory, self.cross_bias(steps, text_bias), p, c["prenet_dropout"])
        mel_pre = own.reshape(b, frames, n) + text_mel
        frame_mask = length_mask(batch["mel_lengths"], frames).to(mel.dtype)[..., None]
        mel_post = None
        if len(self.postnet):
            x0 = mel_pre * frame_mask
            x = x0.transpose(1, 2)
            for i, conv in enumerate(self.postnet):
                x = conv(x)
                if i < len(self.postnet) - 1:
                    x = torch.tanh(x) * frame_mask.transpose(1, 2)
            mel_post = x0 + x.transpose(1, 2)
        text_mask = length_mask(batch["text_lengths"], t).to(text.dtype)[..., None]
        dur_in = text.detach()
        if c.get("speaker_rate"):
            dur_in = dur_in + self.dur.voice(voice.mean(1))[:, None]
        log_durations = self.dur(dur_in, text_mask, p)
        return {
            "mel_pre": mel_pre, "mel_post": mel_post, "text_mel": text_mel,
            "log_durations": log_durations, "frame_mask": frame_mask,
        }


def losses(out, batch, durations, loss):
    """losses.ts computeLosses: masked mel errors over real frames · nMels, the log-duration MSE over spoken tokens."""
    mel, mask = batch["mel"], out["frame_mask"]
    denominator = torch.clamp(batch["mel_lengths"].float().sum() * mel.shape[2], min=1)

    def mel_loss(pred):
        d = pred.float() - mel
        err = {"l1": d.abs(), "l2": d * d, "l1_l2": d.abs() + d * d}[loss["mel"]]
        return (err * mask).sum() / denominator

    spoken = (durations > 0).float()
    error = (out["log_durations"].float() - torch.log1p(durations)) ** 2
    duration = (error * spoken).sum() / torch.clamp(spoken.sum(), min=1)
    parts = {
        "melPre": mel_loss(out["mel_pre"]),
        "melPost": mel_loss(out["mel_post"]) if out["mel_post"] is not None else torch.zeros((), device=mel.device),
        "alignedText": mel_loss(out["text_mel"]),
        "duration": duration,
    }
    parts["total"] = (
        parts["melPre"] + parts["melPost"]
        + loss["aligned_text_weight"] * parts["alignedText"] + loss["duration_weight"] * parts["duration"]
    )
    return parts


# ------------------------------------------------------------------------------------------------
# Monotonic alignment search (align.ts), on the host, vectorised over the batch


def viterbi_paths(scores, k, real, prior_sigma):
    """Best monotonic paths of utterances that have one (align.ts monotonicAlignment), all at once: a loop over
    the steps, each a few array operations over [utterances, symbols]. Cells a path cannot reach at a step
    (before its symbol could start, or too late for the rest to get a step each) score -inf, as in align.ts."""
    n, s_max, _ = scores.shape
    kk = int(k.max())
    sym = scores[:, :, FIRST_SYMBOL : FIRST_SYMBOL + kk].astype(np.float64)
    if sym.shape[2] < kk:
        sym = np.pad(sym, ((0, 0), (0, 0), (0, kk - sym.shape[2])))
    j = np.arange(kk)[None, None, :]
    s = np.arange(s_max)[None, :, None]
    if prior_sigma > 0:
        sym -= ((j + 0.5) / k[:, None, None] - (s + 0.5) / real[:, None, None]) ** 2 / (2 * prior_sigma * prior_sigma)
    reachable = (j >= k[:, None, None] - (real[:, None, None] - s)) & (j <= s) & (j < k[:, None, None])
    sym = np.ascontiguousarray(np.where(reachable, sym, -np.inf).transpose(1, 0, 2))  # [S, n, K]
    moved = np.zeros((s_max, n, kk), bool)
    best = sym[0].copy()
    advance = np.full((n, kk), -np.inf)
    for step in range(1, s_max):
        advance[:, 1:] = best[:, :-1]
        np.greater(advance, best, out=moved[step])
        np.maximum(advance, best, out=best)
        best += sym[step]
    # Back from every utterance's last symbol at its last real step; steps past its end are filled after.
    at = k - 1
    own = np.empty((n, s_max), np.int64)
    rows = np.arange(n)
    for step in range(s_max - 1, -1, -1):
        own[:, step] = FIRST_SYMBOL + at
        if step > 0:
            at = at - ((step < real) & moved[step, rows, at])
    return own


def search(scores, text_lengths, mel_lengths, r, prior_sigma):
    """scores [B, S, T] float32 -> path [B, S] int32 (token position per step), durations [B, T] float32."""
    b, s_max, t = scores.shape
    path = np.full((b, s_max), FIRST_SYMBOL, np.int32)
    durations = np.zeros((b, t), np.float32)
    real = -(-mel_lengths.astype(np.int64) // r)
    k = np.maximum(1, text_lengths.astype(np.int64) - FIRST_SYMBOL - 1)
    live = (real > 0) & (text_lengths > 0)
    spread = live & (k > real)  # more symbols than steps: the text spread evenly (no path exists)
    for i in np.flatnonzero(spread):
        s = np.arange(real[i])
        path[i, : real[i]] = FIRST_SYMBOL + np.minimum(k[i] - 1, (s * k[i]) // real[i])
    viterbi = live & ~spread
    if viterbi.any():
        rows = np.flatnonzero(viterbi)
        path[rows] = viterbi_paths(scores[rows], k[rows], real[rows], prior_sigma)
    for i in np.flatnonzero(live):
        path[i, real[i] :] = path[i, real[i] - 1]
        durations[i] = np.bincount(path[i, : real[i]], minlength=t)[:t]
    return path, durations


# ------------------------------------------------------------------------------------------------
# Loading


def load(weights_path, device="cpu"):
    """The twin of an exported checkpoint (or reference.ts's weights): its config, sizes and weights."""
    weights, meta = read_safetensors(weights_path)
    config = json.loads(meta["config"])
    sizes = {
        "vocabSize": weights["text.tok_embed"].shape[0],
        "numLanguages": weights["text.lang_embed"].shape[0],
        "nMels": weights["text.mel_head.weight"].shape[0],
    }
    model = XttsTwin(config["model"], sizes)
    model.load_state_dict(weights, strict=True)
    return model.to(device), config


def check(folder):
    """reference.ts's batch through the twin: losses against xtts's, gradients, and the alignment path."""
    torch.manual_seed(0)
    model, config = load(os.path.join(folder, "weights.safetensors"))
    model.eval()
    batch, _ = read_safetensors(os.path.join(folder, "batch.safetensors"))
    with open(os.path.join(folder, "expected.json")) as f:
        expected = json.load(f)
    inputs = {k: batch[k] for k in BATCH_KEYS}
    with torch.no_grad():
        scores = model.alignment_scores(inputs["tokens"], inputs["text_lengths"], inputs["languages"], inputs["mel"])
    lengths = inputs["text_lengths"].numpy(), inputs["mel_lengths"].numpy()
    path, _ = search(scores.numpy(), *lengths, config["model"]["reduction_factor"], expected["alignmentPrior"])
    path_steps_differ = int((path != batch["alignment_steps"].numpy()).sum())
    out = model(inputs, batch["alignment_steps"], 0.0)
    parts = losses(out, inputs, batch["durations"], config["training"]["loss"])
    parts["total"].backward()
    grads, _ = read_safetensors(os.path.join(folder, "grads.safetensors"))
    # Each gradient's largest difference over its largest value, floored at a millionth of the largest gradient
    # of the model: a key projection's bias has an exact gradient of 0 (softmax ignores a shift shared by every
    # key), and both sides then hold rounding noise of ~1e-11.
    scale = max(float(g.abs().max()) for g in grads.values())
    worst_grad, worst_name = 0.0, None
    for name, param in model.named_parameters():
        want = grads[name]
        got = param.grad if param.grad is not None else torch.zeros_like(param)
        rel = float((got - want).abs().max()) / max(float(want.abs().max()), 1e-6 * scale)
        if rel > worst_grad:
            worst_grad, worst_name = rel, name
    diffs = {k: abs(float(parts[k].detach()) - expected["losses"][k]) for k in expected["losses"]}
    result = {
        "losses": {k: float(v.detach()) for k, v in parts.items()},
        "xttsLosses": expected["losses"],
        "maxLossDiff": max(diffs.values()),
        "maxGradRelDiff": worst_grad,
        "worstGrad": worst_name,
        "pathStepsDiffer": path_steps_differ,
        "pathSteps": int(path.size),
        "parameters": sum(p.numel() for p in model.parameters()),
    }
    print(json.dumps(result))
    return 0 if result["maxLossDiff"] <= 1e-5 and path_steps_differ == 0 and worst_grad <= 1e-3 else 1


# ------------------------------------------------------------------------------------------------
# The benchmark: one bucket shape, trained as xtts trains it


def synthetic_batch(c, sizes, b, t, frames, ref, seed=0):
    """A batch of the bucket's shape with varied lengths (the longest fills it), like a real bucket's."""
    g = torch.Generator().manual_seed(seed)
    fill = torch.linspace(1.0, 0.75, b)
    text_lengths = torch.clamp((fill * t).round().int(), min=4)
    mel_lengths = torch.clamp((fill * frames).round().int(), min=c["reduction_factor"])
    return {
        "tokens": torch.randint(3, sizes["vocabSize"], (b, t), generator=g, dtype=torch.int32)
        * length_mask(text_lengths, t),
        "text_lengths": text_lengths,
        "languages": torch.zeros(b, dtype=torch.int32),
        "mel": torch.randn(b, frames, sizes["nMels"], generator=g) * length_mask(mel_lengths, frames)[..., None],
        "mel_lengths": mel_lengths,
        "ref_mel": torch.randn(b, ref, sizes["nMels"], generator=g),
        "ref_lengths": torch.clamp((fill * ref).round().int(), min=1),
    }


class Trainer:
    """One variant: eager or compiled or CUDA-graphed, float32 or bf16 autocast; xtts's step order."""

    def __init__(self, model, config, host_batch, variant, device):
        self.model, self.variant, self.device = model, variant, device
        self.training = config["training"]
        self.loss_cfg = self.training["loss"]
        self.p = config["model"]["dropout"]
        self.bf16 = "bf16" in variant
        # graphs_* and compile_stepgraph_*: the whole step captured by hand (optimizer included);
        # compile_graphs_*: torch.compile's own CUDA graphs (cudagraph trees) around forward and backward.
        self.graphs = variant.startswith("graphs") or variant.startswith("compile_stepgraph")
        self.r = config["model"]["reduction_factor"]
        torch.backends.cuda.matmul.allow_tf32 = torch.backends.cudnn.allow_tf32 = self.bf16
        o, lr = self.training["optimizer"], self.training["learning_rate"]
        self.opt = torch.optim.AdamW(
            model.parameters(),
            lr=torch.tensor(lr, device=device) if self.graphs else lr,  # a tensor, so a captured step reads it
            betas=(o["beta1"], o["beta2"]), eps=o["epsilon"], weight_decay=o["weight_decay"],
            fused=device == "cuda", capturable=self.graphs,
        )
        self.host = {k: v.pin_memory() if device == "cuda" else v for k, v in host_batch.items()}
        self.static = {k: v.to(device) for k, v in self.host.items()}
        s = host_batch["mel"].shape[1] // self.r
        self.steps = torch.zeros(host_batch["tokens"].shape[0], s, dtype=torch.int32, device=device)
        self.durations = torch.zeros(host_batch["tokens"].shape, dtype=torch.float32, device=device)

        def host_copy(t):
            h = torch.zeros_like(t, device="cpu")
            return h.pin_memory() if device == "cuda" else h

        self.staging = [
            {"steps": host_copy(self.steps), "durations": host_copy(self.durations), "copied": None} for _ in range(2)
        ]
        self.turn = 0
        self.pool = ThreadPoolExecutor(1)
        self.pending = None
        self.search_ms = []  # the host's alignment search per batch (in its own thread, beside the steps)
        # compile_*: torch.compile (inductor); compile_graphs_*: its CUDA graphs too (mode reduce-overhead).
        compiled = variant.startswith("compile")
        mode = "reduce-overhead" if compiled and "graphs" in variant else None
        self.forward = torch.compile(self.forward_loss, mode=mode) if compiled else self.forward_loss
        self.align_forward = torch.compile(self.scores, mode=mode) if compiled else self.scores
        self.graph = None

    def autocast(self):
        return torch.autocast(self.device, dtype=torch.bfloat16, enabled=self.bf16)

    def scores(self, batch):
        with torch.no_grad(), self.autocast():
            scores = self.model.alignment_scores(
                batch["tokens"], batch["text_lengths"], batch["languages"], batch["mel"]
            )
            return scores.float()

    def forward_loss(self, batch, steps, durations):
        with self.autocast():
            out = self.model(batch, steps, self.p)
        return losses(out, batch, durations, self.loss_cfg)["total"]

    def update(self):
        loss = self.forward(self.static, self.steps, self.durations)
        loss.backward()
        if self.training["grad_clip_norm"] > 0:
            torch.nn.utils.clip_grad_norm_(self.model.parameters(), self.training["grad_clip_norm"], foreach=True)
        self.opt.step()
        self.opt.zero_grad(set_to_none=not self.graphs)
        # Detached, so no step's autograd graph outlives it: a graph kept alive keeps the parameters'
        # AccumulateGrad nodes, and with them the stream they were made on, which breaks a later capture.
        return loss.detach()

    def search_async(self):
        """The next batch: uploaded, its alignment scores on the device, the search in a host thread."""
        for k, v in self.host.items():
            self.static[k].copy_(v, non_blocking=True)
        scores = self.align_forward(self.static)
        host = scores.to("cpu", non_blocking=True)
        done = torch.cuda.Event() if self.device == "cuda" else None
        if done:
            done.record()
        lengths = (self.host["text_lengths"].numpy(), self.host["mel_lengths"].numpy())

        def job():
            if done:
                done.synchronize()
            t0 = time.perf_counter()
            found = search(host.numpy(), *lengths, self.r, self.training["alignment_prior"])
            self.search_ms.append((time.perf_counter() - t0) * 1000)
            return found

        return self.pool.submit(job)

    def step(self):
        if self.pending is None:
            self.pending = self.search_async()
        path, durations = self.pending.result()
        # Through pinned staging buffers, two in turn, so the upload does not wait for the device: a buffer
        # is written again only once its last copy has run.
        staging = self.staging[self.turn % 2]
        self.turn += 1
        if staging["copied"] is not None:
            staging["copied"].synchronize()
        staging["steps"].copy_(torch.from_numpy(path))
        staging["durations"].copy_(torch.from_numpy(durations))
        self.steps.copy_(staging["steps"], non_blocking=True)
        self.durations.copy_(staging["durations"], non_blocking=True)
        if self.device == "cuda":
            staging["copied"] = torch.cuda.Event()
            staging["copied"].record()
        if self.graphs and self.graph is None:
            self.capture()  # before the next batch's search starts, so nothing else uses the device meanwhile
        self.pending = self.search_async()  # the next batch's alignment while this one trains
        if self.graphs:
            self.graph.replay()
            return self.loss
        return self.update()

    def capture(self):
        side = torch.cuda.Stream()
        side.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(side):
            for _ in range(3):
                self.update()
        torch.cuda.current_stream().wait_stream(side)
        self.graph = torch.cuda.CUDAGraph()
        # thread_local: only this thread's CUDA calls are held to the capture's rules, so the search thread
        # may wait for its scores (an event recorded before the capture) meanwhile.
        with torch.cuda.graph(self.graph, capture_error_mode="thread_local"):
            self.loss = self.update()


def sync(device):
    if device == "cuda":
        torch.cuda.synchronize()


def bench(args):
    variants = args.variants.split(",")
    if len(variants) > 1:
        # One process per variant: a failed CUDA graph capture leaves the CUDA generator in a state that
        # fails every later variant, and each variant's peak memory and compilation start from nothing.
        failed = 0
        for variant in variants:
            argv = [sys.executable, os.path.abspath(__file__), "bench", "--weights", args.weights]
            for name in ("batch", "tokens", "frames", "ref", "steps", "warmup", "device"):
                argv += [f"--{name}", str(getattr(args, name))]
            failed |= subprocess.run(argv + ["--variants", variant]).returncode
        return failed
    device = args.device
    model, config = load(args.weights, device)
    model.train()
    sizes = {
        "vocabSize": model.text.tok_embed.shape[0], "numLanguages": model.text.lang_embed.shape[0],
        "nMels": model.n_mels,
    }
    batch = synthetic_batch(config["model"], sizes, args.batch, args.tokens, args.frames, args.ref)
    variant = variants[0]
    row = {
        "variant": variant, "shape": f"{args.batch}×{args.tokens}×{args.frames}×{args.ref}",
        "params": sum(p.numel() for p in model.parameters()),
    }
    try:
        if device == "cuda":
            torch.cuda.reset_peak_memory_stats()
        trainer = Trainer(model, config, batch, variant, device)
        t0 = time.perf_counter()
        first = float(trainer.step().detach())
        row["first_step_s"] = time.perf_counter() - t0  # compilation or capture included
        for _ in range(args.warmup):
            trainer.step()
        sync(device)
        windows = []
        per_window = max(1, args.steps // 5)
        for _ in range(5):
            t0 = time.perf_counter()
            for _ in range(per_window):
                loss = trainer.step()
            sync(device)
            windows.append((time.perf_counter() - t0) * 1000 / per_window)
        row.update(
            step_ms_median=statistics.median(windows), step_ms_windows=windows, steps=5 * per_window,
            loss_first=first, loss_last=float(loss.detach()),
            peak_mb=torch.cuda.max_memory_allocated() / 2**20 if device == "cuda" else None,
            search_ms_median=statistics.median(trainer.search_ms),
        )
        trainer.pool.shutdown()
    except Exception as e:  # a variant this torch cannot run is reported, the others still run
        row["error"] = f"{type(e).__name__}: {e}"[:500]
        print(f"variant {variant}:", file=sys.stderr)
        traceback.print_exc(file=sys.stderr)
    print(json.dumps(row), flush=True)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = parser.add_subparsers(dest="command", required=True)
    c = sub.add_parser("check", help="compare losses and gradients with reference.ts's on CPU")
    c.add_argument("folder")
    b = sub.add_parser("bench", help="time training steps of one bucket shape")
    b.add_argument("--weights", required=True, help="an `xtts export`ed checkpoint")
    for name in ("batch", "tokens", "frames", "ref"):
        b.add_argument(f"--{name}", type=int, required=True)
    b.add_argument("--variants", default="fp32,graphs_fp32,graphs_bf16,compile_graphs_bf16")
    b.add_argument("--steps", type=int, default=50)
    b.add_argument("--warmup", type=int, default=10)
    b.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")
    args = parser.parse_args()
    if args.command == "check":
        sys.exit(check(args.folder))
    sys.exit(bench(args))


if __name__ == "__main__":
    main()
