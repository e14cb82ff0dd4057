"""Capture the demo traces bundled in ``src/memtune/data/traces``, and the
held-out traces of ``benchmarks/heldout``.

Small, real PyTorch CPU training workloads (fixed seeds, a few steps each) run
under ``memtune.record()``; each recording is saved as ``<name>.jsonl.gz``.
``memtune demo`` replays the demo set under every preset. The held-out sets
(larger models of other kinds) are a check on traces memtune's policy was not
tuned on: each was measured once as it came (the sets and what was changed after
them: ``benchmarks/heldout/README.md``), and ``python benchmarks/run.py policy``
reports the issue-6 targets on them beside the shared traces.

    python scripts/capture_demo_traces.py            # rewrite the bundled traces
    python scripts/capture_demo_traces.py --heldout  # rewrite benchmarks/heldout
    python scripts/capture_demo_traces.py --out DIR  # write elsewhere
    python scripts/capture_demo_traces.py --heldout --steps-factor 2 --seed 1 --out benchmarks/heldout/rerun  # a second run: twice the steps, other data

Allocation sizes depend only on the model and batch shapes, so a rerun gives
the same sizes and the same order of allocations and frees on the same PyTorch
version (addresses and times differ: they are the real program's pointers and
clock). Recorded with torch 2.13.0 (CPU).
"""

from __future__ import annotations

import argparse
import copy
import functools
import itertools
import math
import sys
from pathlib import Path
from typing import Callable, Protocol, cast

import numpy as np
import torch
from torch import nn

import memtune
import memtune.units
from memtune.trace.model import Action

ROOT = Path(__file__).resolve().parents[1]
DEFAULT_OUT = ROOT / "src" / "memtune" / "data" / "traces"
HELDOUT_OUT = ROOT / "benchmarks" / "heldout"


class Workload(Protocol):
    """A captured program. ``steps``: how many training steps it runs (requests it serves),
    None for ``default_steps``, the number its docstring gives; ``seed`` is added to the seed of
    the generator that makes its data (not to ``torch.manual_seed(0)``, the model's init), so
    seed 0 is the run of the committed traces and another seed the same program on other data."""

    default_steps: int
    __doc__: str | None

    def __call__(self, *, steps: int | None = None, seed: int = 0) -> float: ...


def _workload(default_steps: int) -> Callable[[Callable[..., float]], Workload]:
    """Make ``fn(*, steps, seed)`` a :class:`Workload` that runs ``default_steps`` steps unless told otherwise."""

    def wrap(fn: Callable[..., float]) -> Workload:
        @functools.wraps(fn)
        def run(*, steps: int | None = None, seed: int = 0) -> float:
            return fn(steps=default_steps if steps is None else steps, seed=seed)

        workload = cast(Workload, run)
        workload.default_steps = default_steps
        return workload

    return wrap


def _train(model: nn.Module, make_batch: Callable[[], tuple[torch.Tensor, torch.Tensor]], steps: int,
           loss_fn: Callable[[torch.Tensor, torch.Tensor], torch.Tensor], opt: torch.optim.Optimizer) -> float:
    total = 0.0
    for _ in range(steps):
        x, y = make_batch()
        opt.zero_grad(set_to_none=True)
        loss = loss_fn(model(x), y)
        loss.backward()
        opt.step()
        total += loss.item()
    return total


@_workload(default_steps=8)
def mlp_train(*, steps: int, seed: int) -> float:
    """MLP 784-1024-1024-10, batch 128, Adam, 8 steps (an MNIST-sized classifier)."""
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(784, 1024), nn.ReLU(), nn.Linear(1024, 1024), nn.ReLU(), nn.Linear(1024, 10))
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    gen = torch.Generator().manual_seed(1 + seed)
    batch = lambda: (torch.randn(128, 784, generator=gen), torch.randint(0, 10, (128,), generator=gen))  # noqa: E731
    return _train(model, batch, steps, nn.functional.cross_entropy, opt)


@_workload(default_steps=5)
def cnn_train(*, steps: int, seed: int) -> float:
    """Small CNN (3 conv blocks with BatchNorm, 32x32 RGB, batch 32), SGD momentum, 5 steps."""
    torch.manual_seed(0)

    def block(cin: int, cout: int) -> nn.Sequential:
        return nn.Sequential(nn.Conv2d(cin, cout, 3, padding=1), nn.BatchNorm2d(cout), nn.ReLU(), nn.MaxPool2d(2))

    model = nn.Sequential(block(3, 32), block(32, 64), block(64, 128), nn.Flatten(), nn.Linear(128 * 4 * 4, 10))
    opt = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
    gen = torch.Generator().manual_seed(2 + seed)
    batch = lambda: (torch.randn(32, 3, 32, 32, generator=gen), torch.randint(0, 10, (32,), generator=gen))  # noqa: E731
    return _train(model, batch, steps, nn.functional.cross_entropy, opt)


@_workload(default_steps=3)
def transformer_train(*, steps: int, seed: int) -> float:
    """TransformerEncoder (2 layers, d_model 128, 4 heads, seq 64, batch 16) + AdamW, 3 steps."""
    torch.manual_seed(0)
    layer = nn.TransformerEncoderLayer(d_model=128, nhead=4, dim_feedforward=512, dropout=0.1, batch_first=True)
    model = nn.Sequential(nn.TransformerEncoder(layer, num_layers=2, enable_nested_tensor=False), nn.Linear(128, 128))
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
    gen = torch.Generator().manual_seed(3 + seed)
    batch = lambda: (torch.randn(16, 64, 128, generator=gen), torch.randn(16, 64, 128, generator=gen))  # noqa: E731
    return _train(model, batch, steps, nn.functional.mse_loss, opt)


@_workload(default_steps=4)
def gru_lm_train(*, steps: int, seed: int) -> float:
    """GRU language model (embedding 5000x256, 2-layer GRU 512, batch 32 x 64 tokens) + Adam, 4 steps."""
    torch.manual_seed(0)

    class LM(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.emb = nn.Embedding(5000, 256)
            self.rnn = nn.GRU(256, 512, num_layers=2, batch_first=True)
            self.head = nn.Linear(512, 5000)

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            return self.head(self.rnn(self.emb(x))[0]).reshape(-1, 5000)

    model = LM()
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    gen = torch.Generator().manual_seed(4 + seed)

    def batch() -> tuple[torch.Tensor, torch.Tensor]:
        x = torch.randint(0, 5000, (32, 64), generator=gen)
        return x, x.reshape(-1)

    return _train(model, batch, steps, nn.functional.cross_entropy, opt)


@_workload(default_steps=3)
def vgg_train(*, steps: int, seed: int) -> float:
    """VGG-style CNN (3 double-conv blocks 64-128-256 with BatchNorm, 96x96 RGB, batch 32), SGD, 3 steps."""
    torch.manual_seed(0)

    def block(cin: int, cout: int) -> nn.Sequential:
        return nn.Sequential(nn.Conv2d(cin, cout, 3, padding=1), nn.BatchNorm2d(cout), nn.ReLU(),
                             nn.Conv2d(cout, cout, 3, padding=1), nn.BatchNorm2d(cout), nn.ReLU(), nn.MaxPool2d(2))

    model = nn.Sequential(block(3, 64), block(64, 128), block(128, 256), nn.AdaptiveAvgPool2d(1), nn.Flatten(),
                          nn.Linear(256, 10))
    opt = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    gen = torch.Generator().manual_seed(5 + seed)
    batch = lambda: (torch.randn(32, 3, 96, 96, generator=gen), torch.randint(0, 10, (32,), generator=gen))  # noqa: E731
    return _train(model, batch, steps, nn.functional.cross_entropy, opt)


@_workload(default_steps=3)
def vit_train(*, steps: int, seed: int) -> float:
    """ViT-S-sized encoder (6 layers, d_model 384, 6 heads, 197 tokens of 768 features, batch 16) + AdamW, 3 steps."""
    torch.manual_seed(0)
    layer = nn.TransformerEncoderLayer(384, 6, 1536, batch_first=True)
    encoder = nn.TransformerEncoder(layer, 6, enable_nested_tensor=False)

    class ViT(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.embed, self.encoder, self.head = nn.Linear(768, 384), encoder, nn.Linear(384, 100)

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            return self.head(self.encoder(self.embed(x)).mean(1))

    model = ViT()
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
    gen = torch.Generator().manual_seed(6 + seed)
    batch = lambda: (torch.randn(16, 197, 768, generator=gen), torch.randint(0, 100, (16,), generator=gen))  # noqa: E731
    return _train(model, batch, steps, nn.functional.cross_entropy, opt)


@_workload(default_steps=3)
def resnet_train(*, steps: int, seed: int) -> float:
    """ResNet-style CNN (stem + 3 stages of 2 residual blocks, 32-64-128 channels, BatchNorm,
    64x64 RGB, batch 32), SGD momentum with weight decay, 3 steps."""
    torch.manual_seed(0)

    layers: list[nn.Module] = [nn.Conv2d(3, 32, 3, 1, 1, bias=False), nn.BatchNorm2d(32), nn.ReLU()]
    cin = 32
    for cout, stride in ((32, 1), (64, 2), (128, 2)):
        layers += [_ResidualBlock(cin, cout, stride), _ResidualBlock(cout, cout, 1)]
        cin = cout
    model = nn.Sequential(*layers, nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(128, 100))
    opt = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9, weight_decay=5e-4)
    gen = torch.Generator().manual_seed(7 + seed)
    batch = lambda: (torch.randn(32, 3, 64, 64, generator=gen), torch.randint(0, 100, (32,), generator=gen))  # noqa: E731
    return _train(model, batch, steps, nn.functional.cross_entropy, opt)


@_workload(default_steps=6)
def lstm_varlen_train(*, steps: int, seed: int) -> float:
    """LSTM text classifier (embedding 10000x128, LSTM 512, batch 64) whose sequence length
    changes every step (30-90 tokens: no two steps alike), Adam, 6 steps."""
    torch.manual_seed(0)

    class Classifier(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.emb = nn.Embedding(10000, 128)
            self.rnn = nn.LSTM(128, 512, batch_first=True)
            self.head = nn.Linear(512, 5)

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            return self.head(self.rnn(self.emb(x))[0][:, -1])

    model = Classifier()
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    gen = torch.Generator().manual_seed(8 + seed)

    def batch() -> tuple[torch.Tensor, torch.Tensor]:
        length = int(torch.randint(30, 91, (1,), generator=gen))
        return torch.randint(0, 10000, (64, length), generator=gen), torch.randint(0, 5, (64,), generator=gen)

    return _train(model, batch, steps, nn.functional.cross_entropy, opt)


@_workload(default_steps=3)
def unet_train(*, steps: int, seed: int) -> float:
    """U-Net (encoder 32-64-128, bottleneck 256, decoder with transposed convolutions and
    skip concatenations, 96x96 RGB, batch 16) regressing an image, AdamW, 3 steps."""
    torch.manual_seed(0)

    def double(cin: int, cout: int) -> nn.Sequential:
        return nn.Sequential(nn.Conv2d(cin, cout, 3, padding=1), nn.ReLU(), nn.Conv2d(cout, cout, 3, padding=1), nn.ReLU())

    class UNet(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.down = nn.ModuleList([double(3, 32), double(32, 64), double(64, 128)])
            self.mid = double(128, 256)
            self.up = nn.ModuleList([nn.ConvTranspose2d(256, 128, 2, 2), nn.ConvTranspose2d(128, 64, 2, 2),
                                     nn.ConvTranspose2d(64, 32, 2, 2)])
            self.dec = nn.ModuleList([double(256, 128), double(128, 64), double(64, 32)])
            self.out = nn.Conv2d(32, 3, 1)

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            skips = []
            for d in self.down:
                x = d(x)
                skips.append(x)
                x = nn.functional.max_pool2d(x, 2)
            x = self.mid(x)
            for up, dec, skip in zip(self.up, self.dec, reversed(skips)):
                x = dec(torch.cat([up(x), skip], 1))
            return self.out(x)

    model = UNet()
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
    gen = torch.Generator().manual_seed(9 + seed)
    batch = lambda: (torch.randn(16, 3, 96, 96, generator=gen), torch.randn(16, 3, 96, 96, generator=gen))  # noqa: E731
    return _train(model, batch, steps, nn.functional.mse_loss, opt)


@_workload(default_steps=3)
def gpt_accum_train(*, steps: int, seed: int) -> float:
    """Decoder-only causal transformer (4 layers, d_model 256, 8 heads, vocabulary 8000,
    128 tokens, batch 8) with gradient accumulation over 2 micro-batches, AdamW, 3 steps."""
    torch.manual_seed(0)

    class GPT(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.tok = nn.Embedding(8000, 256)
            self.pos = nn.Parameter(torch.zeros(128, 256))
            layer = nn.TransformerEncoderLayer(256, 8, 1024, dropout=0.0, batch_first=True, norm_first=True)
            self.blocks = nn.TransformerEncoder(layer, 4, enable_nested_tensor=False)
            self.head = nn.Linear(256, 8000)
            self.register_buffer("mask", nn.Transformer.generate_square_subsequent_mask(128))

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            h = self.blocks(self.tok(x) + self.pos, mask=self.mask, is_causal=True)
            return self.head(h).reshape(-1, 8000)

    model = GPT()
    opt = torch.optim.AdamW(model.parameters(), lr=3e-4)
    gen = torch.Generator().manual_seed(10 + seed)
    total = 0.0
    for _ in range(steps):
        opt.zero_grad(set_to_none=True)
        for _micro in range(2):
            x = torch.randint(0, 8000, (8, 129), generator=gen)
            loss = nn.functional.cross_entropy(model(x[:, :-1]), x[:, 1:].reshape(-1)) / 2
            loss.backward()
            total += loss.item()
        opt.step()
    return total


@_workload(default_steps=8)
def encoder_serve(*, steps: int, seed: int) -> float:
    """Inference only: a BERT-small-sized encoder (4 layers, d_model 256, 4 heads) serving
    requests of changing batch size and length under torch.no_grad(), 8 requests."""
    torch.manual_seed(0)
    layer = nn.TransformerEncoderLayer(256, 4, 1024, batch_first=True)
    model = nn.Sequential(nn.TransformerEncoder(layer, 4, enable_nested_tensor=False), nn.Linear(256, 2)).eval()
    gen = torch.Generator().manual_seed(11 + seed)
    total = 0.0
    shapes = ((1, 32), (16, 256), (4, 64), (64, 128), (8, 512), (2, 16), (64, 256), (32, 512))
    with torch.no_grad():
        # the same 8 request shapes in the same order, again from the first after the eighth request
        for batch, length in itertools.islice(itertools.cycle(shapes), steps):
            total += float(model(torch.randn(batch, length, 256, generator=gen)).sum())
    return total


@_workload(default_steps=3)
def mobilenet_train(*, steps: int, seed: int) -> float:
    """MobileNet-style CNN (a stem and 6 depthwise-separable blocks 32-256 with BatchNorm,
    112x112 RGB, batch 32), SGD with Nesterov momentum and label smoothing, 3 steps."""
    torch.manual_seed(0)

    def sep(cin: int, cout: int, stride: int) -> nn.Sequential:
        return nn.Sequential(nn.Conv2d(cin, cin, 3, stride, 1, groups=cin, bias=False), nn.BatchNorm2d(cin), nn.ReLU6(),
                             nn.Conv2d(cin, cout, 1, bias=False), nn.BatchNorm2d(cout), nn.ReLU6())

    model = nn.Sequential(nn.Conv2d(3, 32, 3, 2, 1, bias=False), nn.BatchNorm2d(32), nn.ReLU6(),
                          sep(32, 64, 1), sep(64, 128, 2), sep(128, 128, 1), sep(128, 256, 2), sep(256, 256, 1),
                          sep(256, 256, 2), nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(256, 100))
    opt = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9, nesterov=True)
    gen = torch.Generator().manual_seed(12 + seed)
    batch = lambda: (torch.randn(32, 3, 112, 112, generator=gen), torch.randint(0, 100, (32,), generator=gen))  # noqa: E731
    return _train(model, batch, steps, functools.partial(nn.functional.cross_entropy, label_smoothing=0.1), opt)


@_workload(default_steps=3)
def gan_train(*, steps: int, seed: int) -> float:
    """DCGAN (generator 128-64-32 transposed convolutions to 32x32 RGB, discriminator
    32-64-128 convolutions, batch 128): per step a discriminator update on real and
    generated images, then a generator update, each with its own Adam, 3 steps."""
    torch.manual_seed(0)
    g = nn.Sequential(nn.ConvTranspose2d(64, 128, 4, 1, 0, bias=False), nn.BatchNorm2d(128), nn.ReLU(),
                      nn.ConvTranspose2d(128, 64, 4, 2, 1, bias=False), nn.BatchNorm2d(64), nn.ReLU(),
                      nn.ConvTranspose2d(64, 32, 4, 2, 1, bias=False), nn.BatchNorm2d(32), nn.ReLU(),
                      nn.ConvTranspose2d(32, 3, 4, 2, 1, bias=False), nn.Tanh())
    d = nn.Sequential(nn.Conv2d(3, 32, 4, 2, 1, bias=False), nn.LeakyReLU(0.2),
                      nn.Conv2d(32, 64, 4, 2, 1, bias=False), nn.BatchNorm2d(64), nn.LeakyReLU(0.2),
                      nn.Conv2d(64, 128, 4, 2, 1, bias=False), nn.BatchNorm2d(128), nn.LeakyReLU(0.2),
                      nn.Conv2d(128, 1, 4, 1, 0, bias=False), nn.Flatten())
    opt_g = torch.optim.Adam(g.parameters(), lr=2e-4, betas=(0.5, 0.999))
    opt_d = torch.optim.Adam(d.parameters(), lr=2e-4, betas=(0.5, 0.999))
    gen = torch.Generator().manual_seed(13 + seed)
    bce = nn.functional.binary_cross_entropy_with_logits
    ones, zeros = torch.ones(128, 1), torch.zeros(128, 1)
    total = 0.0
    for _ in range(steps):
        real = torch.rand(128, 3, 32, 32, generator=gen) * 2 - 1
        fake = g(torch.randn(128, 64, 1, 1, generator=gen))
        opt_d.zero_grad(set_to_none=True)
        loss_d = bce(d(real), ones) + bce(d(fake.detach()), zeros)
        loss_d.backward()
        opt_d.step()
        opt_g.zero_grad(set_to_none=True)
        loss_g = bce(d(fake), ones)
        loss_g.backward()
        opt_g.step()
        total += loss_d.item() + loss_g.item()
    return total


@_workload(default_steps=4)
def vae_train(*, steps: int, seed: int) -> float:
    """Convolutional VAE (encoder 32-64-128 to a 64-dimensional latent, mirrored decoder,
    64x64 RGB, batch 64): reparameterized sample, reconstruction plus KL loss, Adam, 4 steps."""
    torch.manual_seed(0)

    class VAE(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.enc = nn.Sequential(nn.Conv2d(3, 32, 4, 2, 1), nn.ReLU(), nn.Conv2d(32, 64, 4, 2, 1), nn.ReLU(),
                                     nn.Conv2d(64, 128, 4, 2, 1), nn.ReLU(), nn.Flatten())
            self.mu, self.logvar = nn.Linear(128 * 8 * 8, 64), nn.Linear(128 * 8 * 8, 64)
            self.dec_in = nn.Linear(64, 128 * 8 * 8)
            self.dec = nn.Sequential(nn.ConvTranspose2d(128, 64, 4, 2, 1), nn.ReLU(),
                                     nn.ConvTranspose2d(64, 32, 4, 2, 1), nn.ReLU(), nn.ConvTranspose2d(32, 3, 4, 2, 1))

        def forward(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
            h = self.enc(x)
            mu, logvar = self.mu(h), self.logvar(h)
            z = mu + torch.randn_like(mu) * torch.exp(0.5 * logvar)
            return self.dec(self.dec_in(z).view(-1, 128, 8, 8)), mu, logvar

    model = VAE()
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    gen = torch.Generator().manual_seed(14 + seed)
    total = 0.0
    for _ in range(steps):
        x = torch.rand(64, 3, 64, 64, generator=gen)
        opt.zero_grad(set_to_none=True)
        out, mu, logvar = model(x)
        rec = nn.functional.binary_cross_entropy_with_logits(out, x, reduction="sum")
        kl = -0.5 * torch.sum(1 + logvar - mu.pow(2) - logvar.exp())
        loss = (rec + kl) / 64
        loss.backward()
        opt.step()
        total += loss.item()
    return total


@_workload(default_steps=3)
def bert_mlm_train(*, steps: int, seed: int) -> float:
    """Masked language model (encoder 4 layers, d_model 256, 4 heads, vocabulary 12000,
    128 tokens, batch 16): the loss is taken on the ~15 % masked tokens only, so its
    tensors change size with the data; gradient clipping, AdamW, 3 steps."""
    torch.manual_seed(0)

    class MLM(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.tok = nn.Embedding(12000, 256)
            self.pos = nn.Parameter(torch.zeros(128, 256))
            layer = nn.TransformerEncoderLayer(256, 4, 1024, dropout=0.1, batch_first=True)
            self.blocks = nn.TransformerEncoder(layer, 4, enable_nested_tensor=False)
            self.head = nn.Linear(256, 12000)

        def forward(self, x: torch.Tensor, masked: torch.Tensor) -> torch.Tensor:
            h = self.blocks(self.tok(x) + self.pos)
            return self.head(h[masked])  # only the masked positions: a data-dependent number of rows

    model = MLM()
    opt = torch.optim.AdamW(model.parameters(), lr=3e-4)
    gen = torch.Generator().manual_seed(15 + seed)
    total = 0.0
    for _ in range(steps):
        x = torch.randint(1, 12000, (16, 128), generator=gen)
        masked = torch.rand(16, 128, generator=gen) < 0.15
        opt.zero_grad(set_to_none=True)
        loss = nn.functional.cross_entropy(model(x.masked_fill(masked, 0), masked), x[masked])
        loss.backward()
        nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        total += loss.item()
    return total


@_workload(default_steps=4)
def moe_train(*, steps: int, seed: int) -> float:
    """Mixture-of-experts feed-forward layers (2 layers of 8 experts 256-1024-256, top-1
    routing of 2048 tokens, batch 16 x 128): how many tokens each expert gets depends on
    the router, so the experts' tensors change size every step; Adam, 4 steps."""
    torch.manual_seed(0)

    class MoE(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.router = nn.Linear(256, 8)
            self.experts = nn.ModuleList(nn.Sequential(nn.Linear(256, 1024), nn.GELU(), nn.Linear(1024, 256))
                                         for _ in range(8))

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            gate = self.router(x).softmax(-1)
            weight, choice = gate.max(-1)
            out = torch.zeros_like(x)
            for e, expert in enumerate(self.experts):
                rows = (choice == e).nonzero(as_tuple=True)[0]
                if rows.numel():
                    out = out.index_add(0, rows, expert(x[rows]) * weight[rows, None])
            return x + out

    model = nn.Sequential(MoE(), nn.LayerNorm(256), MoE(), nn.Linear(256, 256))
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    gen = torch.Generator().manual_seed(16 + seed)
    batch = lambda: (torch.randn(2048, 256, generator=gen), torch.randn(2048, 256, generator=gen))  # noqa: E731
    return _train(model, batch, steps, nn.functional.mse_loss, opt)


@_workload(default_steps=12)
def diffusion_sample(*, steps: int, seed: int) -> float:
    """Inference only: a small convolutional denoiser (32-64-128 with a skip per level,
    timestep embedding) run for 12 sampling steps on a batch of 32 64x64 RGB images
    under torch.no_grad(), each step updating the images from its noise estimate."""
    torch.manual_seed(0)

    class Denoiser(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.t = nn.Sequential(nn.Linear(1, 128), nn.SiLU(), nn.Linear(128, 128))
            self.d1, self.d2 = nn.Conv2d(3, 32, 3, 1, 1), nn.Conv2d(32, 64, 3, 2, 1)
            self.d3 = nn.Conv2d(64, 128, 3, 2, 1)
            self.u3 = nn.ConvTranspose2d(128, 64, 4, 2, 1)
            self.u2 = nn.ConvTranspose2d(128, 32, 4, 2, 1)
            self.out = nn.Conv2d(64, 3, 3, 1, 1)

        def forward(self, x: torch.Tensor, t: torch.Tensor) -> torch.Tensor:
            h1 = nn.functional.silu(self.d1(x))
            h2 = nn.functional.silu(self.d2(h1))
            h3 = nn.functional.silu(self.d3(h2) + self.t(t)[:, :, None, None])
            u = nn.functional.silu(self.u3(h3))
            u = nn.functional.silu(self.u2(torch.cat([u, h2], 1)))
            return self.out(torch.cat([u, h1], 1))

    model = Denoiser().eval()
    gen = torch.Generator().manual_seed(17 + seed)
    x = torch.randn(32, 3, 64, 64, generator=gen)
    with torch.no_grad():
        for k in range(steps, 0, -1):
            t = torch.full((32, 1), k / steps)
            x = x - 0.1 * model(x, t) + 0.01 * torch.randn(32, 3, 64, 64, generator=gen)
    return float(x.sum())


@_workload(default_steps=3)
def seq2seq_train(*, steps: int, seed: int) -> float:
    """Encoder-decoder nn.Transformer (2 encoder and 2 decoder layers, d_model 256, 4 heads,
    vocabularies of 8000, source 64 and target 48 tokens, batch 16) trained with teacher
    forcing to reverse its source: the decoder reads the target shifted right under a causal
    mask; fixed shapes, AdamW, 3 steps."""
    torch.manual_seed(0)

    class Seq2Seq(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.src_tok, self.tgt_tok = nn.Embedding(8000, 256), nn.Embedding(8000, 256)
            self.src_pos, self.tgt_pos = nn.Parameter(torch.zeros(64, 256)), nn.Parameter(torch.zeros(47, 256))
            self.core = nn.Transformer(256, 4, 2, 2, 1024, dropout=0.1, batch_first=True)
            self.head = nn.Linear(256, 8000)
            self.register_buffer("mask", nn.Transformer.generate_square_subsequent_mask(47))

        def forward(self, src: torch.Tensor, tgt: torch.Tensor) -> torch.Tensor:
            h = self.core(self.src_tok(src) + self.src_pos, self.tgt_tok(tgt) + self.tgt_pos,
                          tgt_mask=self.mask, tgt_is_causal=True)
            return self.head(h).reshape(-1, 8000)

    model = Seq2Seq()
    opt = torch.optim.AdamW(model.parameters(), lr=3e-4)
    gen = torch.Generator().manual_seed(18 + seed)
    total = 0.0
    for _ in range(steps):
        src = torch.randint(2, 8000, (16, 64), generator=gen)
        tgt = torch.cat([torch.ones(16, 1, dtype=torch.long), src.flip(1)[:, :47]], 1)  # 1: begin-of-sequence
        opt.zero_grad(set_to_none=True)
        loss = nn.functional.cross_entropy(model(src, tgt[:, :-1]), tgt[:, 1:].reshape(-1))
        loss.backward()
        opt.step()
        total += loss.item()
    return total


@_workload(default_steps=4)
def dlrm_train(*, steps: int, seed: int) -> float:
    """DLRM-style recommender (13 dense features through a bottom MLP 13-512-256-64; 8
    EmbeddingBag tables of 30000x64 summing 4 ids per sample, dense gradients; pairwise
    dot-product interaction of the 9 feature vectors by bmm; top MLP 100-512-256-1;
    batch 2048) predicting clicks, Adagrad, 4 steps."""
    torch.manual_seed(0)

    class DLRM(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.bottom = nn.Sequential(nn.Linear(13, 512), nn.ReLU(), nn.Linear(512, 256), nn.ReLU(),
                                        nn.Linear(256, 64), nn.ReLU())
            self.tables = nn.ModuleList(nn.EmbeddingBag(30000, 64, mode="sum") for _ in range(8))
            self.top = nn.Sequential(nn.Linear(64 + 36, 512), nn.ReLU(), nn.Linear(512, 256), nn.ReLU(),
                                     nn.Linear(256, 1))
            self.register_buffer("pairs", torch.triu_indices(9, 9, 1))

        def forward(self, dense: torch.Tensor, ids: torch.Tensor) -> torch.Tensor:
            z = self.bottom(dense)
            feats = torch.stack([z, *(table(ids[:, k]) for k, table in enumerate(self.tables))], 1)  # (B, 9, 64)
            inter = torch.bmm(feats, feats.transpose(1, 2))[:, self.pairs[0], self.pairs[1]]  # (B, 36)
            return self.top(torch.cat([z, inter], 1)).squeeze(1)

    model = DLRM()
    opt = torch.optim.Adagrad(model.parameters(), lr=1e-2)
    gen = torch.Generator().manual_seed(19 + seed)

    def batch() -> tuple[tuple[torch.Tensor, torch.Tensor], torch.Tensor]:
        dense = torch.rand(2048, 13, generator=gen)
        ids = torch.randint(0, 30000, (2048, 8, 4), generator=gen)
        return (dense, ids), torch.randint(0, 2, (2048,), generator=gen).float()

    total = 0.0
    for _ in range(steps):
        (dense, ids), clicks = batch()
        opt.zero_grad(set_to_none=True)
        loss = nn.functional.binary_cross_entropy_with_logits(model(dense, ids), clicks)
        loss.backward()
        opt.step()
        total += loss.item()
    return total


@_workload(default_steps=3)
def wavenet_train(*, steps: int, seed: int) -> float:
    """WaveNet-style model (a causal stem and 10 dilated causal Conv1d layers, dilations 1-512,
    32 residual and 64 skip channels, gated tanh x sigmoid units with residual and skip 1x1
    convolutions, output 1x1 convolutions 64-128-256) predicting the next of 256 mu-law levels
    of a 1-D audio-like signal (batch 4 x 4096 samples), RMSprop, 3 steps."""
    torch.manual_seed(0)

    class Layer(nn.Module):
        def __init__(self, dilation: int) -> None:
            super().__init__()
            self.dilation = dilation
            self.conv = nn.Conv1d(32, 64, 2, dilation=dilation)
            self.res, self.skip = nn.Conv1d(32, 32, 1), nn.Conv1d(32, 64, 1)

        def forward(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
            filt, gate = self.conv(nn.functional.pad(x, (self.dilation, 0))).chunk(2, 1)  # left padding: causal
            h = torch.tanh(filt) * torch.sigmoid(gate)
            return x + self.res(h), self.skip(h)

    class WaveNet(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.stem = nn.Conv1d(1, 32, 2)
            self.layers = nn.ModuleList(Layer(2 ** k) for k in range(10))
            self.out = nn.Sequential(nn.ReLU(), nn.Conv1d(64, 128, 1), nn.ReLU(), nn.Conv1d(128, 256, 1))

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            x = self.stem(nn.functional.pad(x, (1, 0)))
            skips = torch.zeros(())
            for layer in self.layers:
                x, s = layer(x)
                skips = skips + s
            return self.out(skips)

    model = WaveNet()
    opt = torch.optim.RMSprop(model.parameters(), lr=1e-3)
    gen = torch.Generator().manual_seed(20 + seed)

    def batch() -> tuple[torch.Tensor, torch.Tensor]:
        freq = torch.rand(4, 1, generator=gen) * 0.1 + 0.01
        t = torch.arange(4097, dtype=torch.float32)
        wave = (0.6 * torch.sin(freq * t) + 0.1 * torch.randn(4, 4097, generator=gen)).clamp(-1, 1)
        mu = torch.sign(wave) * torch.log1p(255 * wave.abs()) / torch.log(torch.tensor(256.0))
        levels = ((mu + 1) / 2 * 255).round().long()
        return mu[:, None, :-1], levels[:, 1:]

    return _train(model, batch, steps, nn.functional.cross_entropy, opt)


@_workload(default_steps=4)
def gnn_train(*, steps: int, seed: int) -> float:
    """Graph network (3 message-passing layers of 64 features: each edge's message is an MLP
    128-64-64 of its two end nodes' features, summed into its target node by index_add_ and
    divided by the in-degree; LayerNorm residual updates) classifying nodes into 10 classes.
    Every step is a new random graph whose node count (1000-8000) and edge count
    (5000-60000) are drawn from the data generator, so its tensors change size every step;
    Adam, 4 steps."""
    torch.manual_seed(0)

    class Layer(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.msg = nn.Sequential(nn.Linear(128, 64), nn.ReLU(), nn.Linear(64, 64))
            self.upd = nn.Linear(128, 64)
            self.norm = nn.LayerNorm(64)

        def forward(self, h: torch.Tensor, src: torch.Tensor, dst: torch.Tensor, deg: torch.Tensor) -> torch.Tensor:
            messages = self.msg(torch.cat([h[src], h[dst]], 1))
            agg = torch.zeros_like(h).index_add_(0, dst, messages) / deg
            return self.norm(h + torch.relu(self.upd(torch.cat([h, agg], 1))))

    class GNN(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.embed = nn.Linear(32, 64)
            self.layers = nn.ModuleList(Layer() for _ in range(3))
            self.head = nn.Linear(64, 10)

        def forward(self, x: torch.Tensor, src: torch.Tensor, dst: torch.Tensor) -> torch.Tensor:
            deg = torch.zeros(x.shape[0], 1).index_add_(0, dst, torch.ones(dst.shape[0], 1)).clamp_(min=1)
            h = self.embed(x)
            for layer in self.layers:
                h = layer(h, src, dst, deg)
            return self.head(h)

    model = GNN()
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    gen = torch.Generator().manual_seed(21 + seed)
    total = 0.0
    for _ in range(steps):
        nodes = int(torch.randint(1000, 8001, (1,), generator=gen))
        edges = int(torch.randint(5000, 60001, (1,), generator=gen))
        x = torch.randn(nodes, 32, generator=gen)
        src, dst = torch.randint(0, nodes, (2, edges), generator=gen)
        labels = torch.randint(0, 10, (nodes,), generator=gen)
        opt.zero_grad(set_to_none=True)
        loss = nn.functional.cross_entropy(model(x, src, dst), labels)
        loss.backward()
        opt.step()
        total += loss.item()
    return total


@_workload(default_steps=3)
def checkpoint_train(*, steps: int, seed: int) -> float:
    """Deep residual MLP (16 pre-norm blocks 512-1024-512 with GELU, batch 2048 rows) with
    activation checkpointing: every block runs under torch.utils.checkpoint.checkpoint
    (use_reentrant=False), so only block inputs are kept and backward recomputes each
    block; regression, SGD momentum, 3 steps."""
    import torch.utils.checkpoint

    torch.manual_seed(0)

    class Deep(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.blocks = nn.ModuleList(nn.Sequential(nn.LayerNorm(512), nn.Linear(512, 1024), nn.GELU(),
                                                      nn.Linear(1024, 512)) for _ in range(16))

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            for block in self.blocks:
                x = x + torch.utils.checkpoint.checkpoint(block, x, use_reentrant=False)
            return x

    model = Deep()
    opt = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
    gen = torch.Generator().manual_seed(22 + seed)
    batch = lambda: (torch.randn(2048, 512, generator=gen), torch.randn(2048, 512, generator=gen))  # noqa: E731
    return _train(model, batch, steps, nn.functional.mse_loss, opt)


class _ResidualBlock(nn.Module):
    """A ResNet basic block: two 3x3 Conv2d with BatchNorm, a 1x1 projection on the skip
    when the shape changes, ReLU after the sum (resnet-train, moco-train)."""

    def __init__(self, cin: int, cout: int, stride: int) -> None:
        super().__init__()
        self.body = nn.Sequential(nn.Conv2d(cin, cout, 3, stride, 1, bias=False), nn.BatchNorm2d(cout), nn.ReLU(),
                                  nn.Conv2d(cout, cout, 3, 1, 1, bias=False), nn.BatchNorm2d(cout))
        self.skip = (nn.Identity() if stride == 1 and cin == cout else
                     nn.Sequential(nn.Conv2d(cin, cout, 1, stride, bias=False), nn.BatchNorm2d(cout)))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.relu(self.body(x) + self.skip(x))


class _CachedBlock(nn.Module):
    """A pre-norm decoder layer (d_model 512, 8 heads, MLP 2048) with a key/value cache:
    ``cache`` (a list, empty at first) holds the keys and values of every position so far,
    grown by torch.cat at each call (kvcache-generate, beam-decode)."""

    def __init__(self) -> None:
        super().__init__()
        self.ln1, self.ln2 = nn.LayerNorm(512), nn.LayerNorm(512)
        self.qkv, self.proj = nn.Linear(512, 3 * 512), nn.Linear(512, 512)
        self.ff = nn.Sequential(nn.Linear(512, 2048), nn.GELU(), nn.Linear(2048, 512))

    def forward(self, x: torch.Tensor, cache: list[torch.Tensor]) -> torch.Tensor:
        b, t, _ = x.shape
        q, k, v = self.qkv(self.ln1(x)).view(b, t, 3, 8, 64).permute(2, 0, 3, 1, 4)
        if cache:
            k, v = torch.cat([cache[0], k], 2), torch.cat([cache[1], v], 2)
        cache[:] = [k, v]
        att = nn.functional.scaled_dot_product_attention(q, k, v, is_causal=t > 1)
        x = x + self.proj(att.transpose(1, 2).reshape(b, t, 512))
        return x + self.ff(self.ln2(x))


@_workload(default_steps=24)
def kvcache_generate(*, steps: int, seed: int) -> float:
    """Inference only: greedy autoregressive decoding under torch.no_grad() with a small
    decoder-only transformer (6 pre-norm layers, d_model 512, 8 heads, vocabulary 16000,
    batch 16, a 128-token prompt) and a per-layer key/value cache: the prompt's pass fills
    the cache and gives the first token, then each later token runs one position and grows
    every layer's cache by torch.cat, so the cache tensors are larger every step; 24
    generated tokens."""
    torch.manual_seed(0)

    class Decoder(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.tok, self.pos = nn.Embedding(16000, 512), nn.Embedding(1024, 512)
            self.blocks = nn.ModuleList(_CachedBlock() for _ in range(6))
            self.ln, self.head = nn.LayerNorm(512), nn.Linear(512, 16000)

        def forward(self, ids: torch.Tensor, start: int, caches: list[list[torch.Tensor]]) -> torch.Tensor:
            h = self.tok(ids) + self.pos(torch.arange(start, start + ids.shape[1]))
            for block, cache in zip(self.blocks, caches):
                h = block(h, cache)
            return self.head(self.ln(h[:, -1]))  # logits of the last position only

    model = Decoder().eval()
    gen = torch.Generator().manual_seed(23 + seed)
    ids = torch.randint(0, 16000, (16, 128), generator=gen)
    caches: list[list[torch.Tensor]] = [[] for _ in model.blocks]
    total, start = 0.0, 0
    with torch.no_grad():
        for _ in range(steps):
            logits = model(ids, start, caches)
            start += ids.shape[1]
            ids = logits.argmax(-1, keepdim=True)
            total += float(logits.max(-1).values.sum())
    return total


@_workload(default_steps=4)
def lora_finetune(*, steps: int, seed: int) -> float:
    """LoRA fine-tuning of a small decoder-only transformer (4 pre-norm layers, d_model 384,
    6 heads with explicit causal attention (matmul, additive mask, softmax), MLP 1536,
    vocabulary 8000, 128 tokens, batch 8) whose base weights are frozen
    (requires_grad False): rank-8 adapters (scale 2) on the qkv, output, and both MLP
    projections of every layer are the only trained parameters; forward and backward run
    under torch.autocast("cpu", dtype=torch.bfloat16); next-token loss, fixed shapes, AdamW,
    4 steps."""
    torch.manual_seed(0)

    class LoRALinear(nn.Module):
        def __init__(self, cin: int, cout: int, rank: int = 8) -> None:
            super().__init__()
            self.base = nn.Linear(cin, cout)
            self.a = nn.Parameter(torch.randn(rank, cin) * 0.01)
            self.b = nn.Parameter(torch.zeros(cout, rank))

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            return self.base(x) + 2.0 * nn.functional.linear(nn.functional.linear(x, self.a), self.b)

    class Block(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.ln1, self.ln2 = nn.LayerNorm(384), nn.LayerNorm(384)
            self.qkv, self.proj = LoRALinear(384, 3 * 384), LoRALinear(384, 384)
            self.up, self.down = LoRALinear(384, 1536), LoRALinear(1536, 384)
            self.register_buffer("mask", nn.Transformer.generate_square_subsequent_mask(128))

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            b, t, _ = x.shape
            q, k, v = self.qkv(self.ln1(x)).view(b, t, 3, 6, 64).permute(2, 0, 3, 1, 4)
            att = ((q @ k.transpose(-2, -1)) * 0.125 + self.mask).softmax(-1) @ v  # explicit causal attention
            x = x + self.proj(att.transpose(1, 2).reshape(b, t, 384))
            return x + self.down(nn.functional.gelu(self.up(self.ln2(x))))

    class LM(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.tok, self.pos = nn.Embedding(8000, 384), nn.Parameter(torch.zeros(128, 384))
            self.blocks = nn.ModuleList(Block() for _ in range(4))
            self.ln, self.head = nn.LayerNorm(384), nn.Linear(384, 8000)

        def forward(self, ids: torch.Tensor) -> torch.Tensor:
            h = self.tok(ids) + self.pos
            for block in self.blocks:
                h = block(h)
            return self.head(self.ln(h)).reshape(-1, 8000)

    model = LM()
    for name, p in model.named_parameters():
        p.requires_grad_(name.endswith((".a", ".b")))  # only the adapters train
    opt = torch.optim.AdamW([p for p in model.parameters() if p.requires_grad], lr=1e-3)
    gen = torch.Generator().manual_seed(24 + seed)
    total = 0.0
    for _ in range(steps):
        ids = torch.randint(0, 8000, (8, 129), generator=gen)
        opt.zero_grad(set_to_none=True)
        with torch.autocast("cpu", dtype=torch.bfloat16):
            loss = nn.functional.cross_entropy(model(ids[:, :-1]), ids[:, 1:].reshape(-1))
            loss.backward()
        opt.step()
        total += loss.item()
    return total


@_workload(default_steps=3)
def simclr_train(*, steps: int, seed: int) -> float:
    """SimCLR-style contrastive learning: a small CNN encoder (4 conv blocks 32-64-128-256
    with BatchNorm, strides 1-2-2-2, global average pooling) and a projection head 256-256-128
    embed two augmented 24x24 views of each batch of 256 32x32 RGB images (each view: a
    random 24x24 crop by slicing, a random cyclic shift by torch.roll, a per-image random
    horizontal flip and Gaussian noise, all from the data generator); NT-Xent loss
    (temperature 0.2) over the 512x512 cosine-similarity matrix; fixed shapes, SGD momentum
    with weight decay, 3 steps."""
    torch.manual_seed(0)

    def block(cin: int, cout: int, stride: int) -> nn.Sequential:
        return nn.Sequential(nn.Conv2d(cin, cout, 3, stride, 1, bias=False), nn.BatchNorm2d(cout), nn.ReLU())

    model = nn.Sequential(block(3, 32, 1), block(32, 64, 2), block(64, 128, 2), block(128, 256, 2),
                          nn.AdaptiveAvgPool2d(1), nn.Flatten(),
                          nn.Linear(256, 256), nn.ReLU(), nn.Linear(256, 128))
    opt = torch.optim.SGD(model.parameters(), lr=0.3, momentum=0.9, weight_decay=1e-6)
    gen = torch.Generator().manual_seed(25 + seed)

    def view(images: torch.Tensor) -> torch.Tensor:
        top, left, shift = (int(v) for v in torch.randint(0, 9, (3,), generator=gen))
        x = images[:, :, top:top + 24, left:left + 24].roll(shift, 3)
        flip = torch.rand(images.shape[0], 1, 1, 1, generator=gen) < 0.5
        x = torch.where(flip, x.flip(3), x)
        return x + 0.1 * torch.randn(x.shape, generator=gen)

    total = 0.0
    targets = (torch.arange(512) + 256) % 512  # each view's positive: the other view of its image
    for _ in range(steps):
        images = torch.randn(256, 3, 32, 32, generator=gen)
        opt.zero_grad(set_to_none=True)
        z = nn.functional.normalize(model(torch.cat([view(images), view(images)])), dim=1)
        sim = (z @ z.t() / 0.2).masked_fill(torch.eye(512, dtype=torch.bool), float("-inf"))
        loss = nn.functional.cross_entropy(sim, targets)
        loss.backward()
        opt.step()
        total += loss.item()
    return total


@_workload(default_steps=3)
def swin_train(*, steps: int, seed: int) -> float:
    """Swin-style hierarchical vision transformer (4x4 patch embedding of 112x112 RGB to
    28x28 tokens; 3 stages of 2 blocks, dims 64-128-256, heads 2-4-8, MLP ratio 4, at 28x28,
    14x14 and 7x7 tokens; window attention in 7x7 windows by reshape/permute with a learned
    relative position bias, every second block on windows shifted by torch.roll with the
    shifted-window attention mask; 2x2 patch merging between stages), batch 32, 100
    classes, fixed shapes, AdamW, 3 steps."""
    torch.manual_seed(0)
    win = 7
    coords = torch.stack(torch.meshgrid(torch.arange(win), torch.arange(win), indexing="ij")).flatten(1)
    rel = (coords[:, :, None] - coords[:, None, :]) + win - 1
    rel_index = rel[0] * (2 * win - 1) + rel[1]  # (49, 49) into the (2w-1)^2 bias table

    def windows(x: torch.Tensor) -> torch.Tensor:  # (B, H, W, C) -> (B * nW, 49, C)
        b, h, w, c = x.shape
        return x.view(b, h // win, win, w // win, win, c).permute(0, 1, 3, 2, 4, 5).reshape(-1, win * win, c)

    def unwindows(x: torch.Tensor, b: int, h: int, w: int) -> torch.Tensor:
        return x.view(b, h // win, w // win, win, win, -1).permute(0, 1, 3, 2, 4, 5).reshape(b, h, w, -1)

    class Block(nn.Module):
        def __init__(self, dim: int, heads: int, res: int, shift: int) -> None:
            super().__init__()
            self.heads, self.shift = heads, shift
            self.ln1, self.ln2 = nn.LayerNorm(dim), nn.LayerNorm(dim)
            self.qkv, self.proj = nn.Linear(dim, 3 * dim), nn.Linear(dim, dim)
            self.mlp = nn.Sequential(nn.Linear(dim, 4 * dim), nn.GELU(), nn.Linear(4 * dim, dim))
            self.bias = nn.Parameter(torch.zeros((2 * win - 1) ** 2, heads))
            mask = torch.zeros(0)
            if shift:  # regions of the rolled map that must not attend to each other
                region = torch.zeros(1, res, res, 1)
                cuts = (slice(0, -win), slice(-win, -shift), slice(-shift, None))
                for n, (hs, ws) in enumerate(itertools.product(cuts, cuts)):
                    region[:, hs, ws] = n
                ids = windows(region).squeeze(2)
                mask = (ids[:, None, :] != ids[:, :, None]).float() * -100.0  # (nW, 49, 49)
            self.register_buffer("mask", mask)

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            b, h, w, c = x.shape
            y = self.ln1(x)
            if self.shift:
                y = torch.roll(y, (-self.shift, -self.shift), (1, 2))
            y = windows(y)
            q, k, v = self.qkv(y).view(y.shape[0], win * win, 3, self.heads, -1).permute(2, 0, 3, 1, 4)
            att = (q * q.shape[-1] ** -0.5) @ k.transpose(-2, -1)
            att = att + self.bias[rel_index].permute(2, 0, 1)
            if self.shift:
                nw = self.mask.shape[0]
                att = (att.view(b, nw, self.heads, win * win, win * win) + self.mask[None, :, None]).flatten(0, 1)
            y = (att.softmax(-1) @ v).transpose(1, 2).reshape(-1, win * win, c)
            y = unwindows(self.proj(y), b, h, w)
            if self.shift:
                y = torch.roll(y, (self.shift, self.shift), (1, 2))
            x = x + y
            return x + self.mlp(self.ln2(x))

    class Merge(nn.Module):  # 2x2 neighbourhoods -> one token of twice the channels
        def __init__(self, dim: int) -> None:
            super().__init__()
            self.norm, self.reduce = nn.LayerNorm(4 * dim), nn.Linear(4 * dim, 2 * dim, bias=False)

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            x = torch.cat([x[:, 0::2, 0::2], x[:, 1::2, 0::2], x[:, 0::2, 1::2], x[:, 1::2, 1::2]], -1)
            return self.reduce(self.norm(x))

    class Swin(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.embed, self.embed_norm = nn.Conv2d(3, 64, 4, 4), nn.LayerNorm(64)
            layers: list[nn.Module] = []
            for stage, (dim, heads, res) in enumerate(((64, 2, 28), (128, 4, 14), (256, 8, 7))):
                if stage:
                    layers.append(Merge(dim // 2))
                layers += [Block(dim, heads, res, 0), Block(dim, heads, res, win // 2 if res > win else 0)]
            self.layers = nn.Sequential(*layers)
            self.norm, self.head = nn.LayerNorm(256), nn.Linear(256, 100)

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            x = self.embed_norm(self.embed(x).permute(0, 2, 3, 1))  # (B, 28, 28, 64)
            return self.head(self.norm(self.layers(x)).mean((1, 2)))

    model = Swin()
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3, weight_decay=0.05)
    gen = torch.Generator().manual_seed(26 + seed)
    batch = lambda: (torch.randn(32, 3, 112, 112, generator=gen), torch.randint(0, 100, (32,), generator=gen))  # noqa: E731
    return _train(model, batch, steps, nn.functional.cross_entropy, opt)


@_workload(default_steps=3)
def fpn_detect_train(*, steps: int, seed: int) -> float:
    """Detection-style model: a conv backbone (stride-2 stem 32, then 4 stages of two 3x3
    convs with BatchNorm, 48-96-192-256 channels, each stage halving the map: C2-C5 at
    strides 4-32 of a 256x256 RGB input), a feature pyramid (1x1 lateral convs to 128
    channels, top-down nearest upsampling and addition, 3x3 output convs) and, for each of
    the 4 levels, its own classification head (3x3 conv then 3 anchors x 20 classes) and
    box-regression head (3x3 conv then 3 anchors x 4), trained on random targets (about 2%
    of anchor-class pairs positive, BCE-with-logits; smooth L1 on random boxes at anchors
    that have any positive); batch 8, fixed shapes, SGD momentum with weight decay, 3 steps."""
    torch.manual_seed(0)

    def conv(cin: int, cout: int, stride: int = 1) -> nn.Sequential:
        return nn.Sequential(nn.Conv2d(cin, cout, 3, stride, 1, bias=False), nn.BatchNorm2d(cout), nn.ReLU())

    class Detector(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.stem = conv(3, 32, 2)
            chans = (48, 96, 192, 256)
            self.stages = nn.ModuleList(nn.Sequential(conv(cin, cout, 2), conv(cout, cout))
                                        for cin, cout in zip((32, *chans[:-1]), chans))
            self.lateral = nn.ModuleList(nn.Conv2d(c, 128, 1) for c in chans)
            self.smooth = nn.ModuleList(nn.Conv2d(128, 128, 3, padding=1) for _ in chans)
            self.cls = nn.ModuleList(nn.Sequential(nn.Conv2d(128, 128, 3, padding=1), nn.ReLU(),
                                                   nn.Conv2d(128, 3 * 20, 3, padding=1)) for _ in chans)
            self.box = nn.ModuleList(nn.Sequential(nn.Conv2d(128, 128, 3, padding=1), nn.ReLU(),
                                                   nn.Conv2d(128, 3 * 4, 3, padding=1)) for _ in chans)

        def forward(self, x: torch.Tensor) -> list[tuple[torch.Tensor, torch.Tensor]]:
            feats = []
            x = self.stem(x)
            for stage in self.stages:
                x = stage(x)
                feats.append(x)
            top = self.lateral[-1](feats[-1])
            pyramid = [top]
            for lat, f in zip(reversed(self.lateral[:-1]), reversed(feats[:-1])):
                top = lat(f) + nn.functional.interpolate(top, scale_factor=2.0, mode="nearest")
                pyramid.insert(0, top)
            return [(cls(p), box(p)) for p, cls, box in
                    zip((s(p) for s, p in zip(self.smooth, pyramid)), self.cls, self.box)]

    model = Detector()
    opt = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9, weight_decay=1e-4)
    gen = torch.Generator().manual_seed(27 + seed)
    total = 0.0
    for _ in range(steps):
        images = torch.randn(8, 3, 256, 256, generator=gen)
        opt.zero_grad(set_to_none=True)
        loss = torch.zeros(())
        for cls, box in model(images):
            b, _, h, w = cls.shape
            labels = (torch.rand(b, 3, 20, h, w, generator=gen) < 0.02).float()
            boxes = torch.randn(b, 3, 4, h, w, generator=gen)
            positive = labels.amax(2, keepdim=True)
            loss = loss + nn.functional.binary_cross_entropy_with_logits(cls.view(b, 3, 20, h, w), labels)
            loss = loss + (nn.functional.smooth_l1_loss(box.view(b, 3, 4, h, w), boxes, reduction="none")
                           * positive).sum() / positive.sum().clamp(min=1)
        loss.backward()
        opt.step()
        total += loss.item()
    return total


@_workload(default_steps=4)
def ctc_speech_train(*, steps: int, seed: int) -> float:
    """CTC speech recogniser: conv subsampling (two 3x3 stride-2 Conv2d 1-32-32 with ReLU)
    over 80-bin log-mel-like features, a linear 640-256, a 2-layer bidirectional LSTM of 256
    per direction and a linear 512-32 (32 symbols, blank 0), trained with nn.CTCLoss; batch
    8. Each step's utterance length (400-1600 frames, the whole batch padded to it, each
    utterance's own length 70-100% of it) and each transcript's length (10 up to a quarter
    of that utterance's subsampled frames, at most 120) are drawn from the data generator,
    so tensor sizes change every step; Adam, 4 steps."""
    torch.manual_seed(0)

    class ASR(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.sub = nn.Sequential(nn.Conv2d(1, 32, 3, 2, 1), nn.ReLU(), nn.Conv2d(32, 32, 3, 2, 1), nn.ReLU())
            self.proj = nn.Linear(32 * 20, 256)
            self.rnn = nn.LSTM(256, 256, num_layers=2, bidirectional=True, batch_first=True)
            self.head = nn.Linear(512, 32)

        def forward(self, feats: torch.Tensor) -> torch.Tensor:  # (B, T, 80) -> (T/4, B, 32) log-probs
            x = self.sub(feats[:, None])  # (B, 32, T/4, 20)
            x = self.proj(x.permute(0, 2, 1, 3).flatten(2))
            return self.head(self.rnn(x)[0]).log_softmax(-1).transpose(0, 1)

    model = ASR()
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    ctc = nn.CTCLoss(blank=0, zero_infinity=True)
    gen = torch.Generator().manual_seed(28 + seed)
    total = 0.0
    for _ in range(steps):
        frames = int(torch.randint(400, 1601, (1,), generator=gen))
        feats = torch.randn(8, frames, 80, generator=gen)
        lengths = (frames * (0.7 + 0.3 * torch.rand(8, generator=gen))).long().clamp(max=frames)
        out_lengths = (lengths + 3) // 4  # two stride-2 convs with padding 1
        target_lengths = (10 + (torch.rand(8, generator=gen) * (out_lengths // 4 - 9).clamp(max=111))).long()
        targets = torch.randint(1, 32, (int(target_lengths.sum()),), generator=gen)
        opt.zero_grad(set_to_none=True)
        loss = ctc(model(feats), targets, out_lengths, target_lengths)
        loss.backward()
        opt.step()
        total += loss.item()
    return total


@_workload(default_steps=3)
def convnext_train(*, steps: int, seed: int) -> float:
    """ConvNeXt-style image classifier: a 4x4 stride-4 patchify stem (3-48) of 128x128 RGB
    to 32x32, then 4 stages of depths 2-2-4-2 and dims 48-96-192-384 at 32x32, 16x16, 8x8
    and 4x4; each block a 7x7 depthwise conv, a permute to channels-last, LayerNorm over
    channels, an inverted-bottleneck MLP (Linear to 4x the dim, GELU, Linear back), a
    learned per-channel layer scale and a residual add; between stages a channels LayerNorm
    and a 2x2 stride-2 conv downsampling; global average pooling, LayerNorm and a linear
    head to 100 classes; batch 16, fixed shapes, AdamW, 3 steps."""
    torch.manual_seed(0)

    class ChannelNorm(nn.LayerNorm):  # LayerNorm over the channels of a (B, C, H, W) map
        def forward(self, x: torch.Tensor) -> torch.Tensor:
            return super().forward(x.permute(0, 2, 3, 1)).permute(0, 3, 1, 2)

    class Block(nn.Module):
        def __init__(self, dim: int) -> None:
            super().__init__()
            self.dw = nn.Conv2d(dim, dim, 7, padding=3, groups=dim)
            self.norm = nn.LayerNorm(dim)
            self.up, self.down = nn.Linear(dim, 4 * dim), nn.Linear(4 * dim, dim)
            self.gamma = nn.Parameter(torch.full((dim,), 1e-6))

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            y = self.norm(self.dw(x).permute(0, 2, 3, 1))  # (B, H, W, C)
            y = self.gamma * self.down(nn.functional.gelu(self.up(y)))
            return x + y.permute(0, 3, 1, 2)

    dims, depths = (48, 96, 192, 384), (2, 2, 4, 2)
    layers: list[nn.Module] = [nn.Conv2d(3, dims[0], 4, 4), ChannelNorm(dims[0])]
    for stage, (dim, depth) in enumerate(zip(dims, depths)):
        if stage:
            layers += [ChannelNorm(dims[stage - 1]), nn.Conv2d(dims[stage - 1], dim, 2, 2)]
        layers += [Block(dim) for _ in range(depth)]
    model = nn.Sequential(*layers, nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.LayerNorm(dims[-1]),
                          nn.Linear(dims[-1], 100))
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3, weight_decay=0.05)
    gen = torch.Generator().manual_seed(29 + seed)
    batch = lambda: (torch.randn(16, 3, 128, 128, generator=gen), torch.randint(0, 100, (16,), generator=gen))  # noqa: E731
    return _train(model, batch, steps, nn.functional.cross_entropy, opt)


@_workload(default_steps=4)
def distill_train(*, steps: int, seed: int) -> float:
    """Knowledge distillation on 32x32 RGB images, batch 128, 100 classes: a larger frozen
    teacher (VGG-style, 4 blocks of two 3x3 convs with BatchNorm, 64-128-256-512 channels,
    max pooling after each, in eval mode with requires_grad False) runs under
    torch.no_grad() each step, then a smaller student (3 blocks of one 3x3 conv with
    BatchNorm, 32-64-128 channels, max pooling, a linear head) is trained on cross-entropy
    with the labels plus the KL divergence between its and the teacher's softened outputs
    (temperature 4, scaled by 16); fixed shapes, SGD momentum, 4 steps."""
    torch.manual_seed(0)

    def conv(cin: int, cout: int) -> list[nn.Module]:
        return [nn.Conv2d(cin, cout, 3, padding=1, bias=False), nn.BatchNorm2d(cout), nn.ReLU()]

    teacher = nn.Sequential(*conv(3, 64), *conv(64, 64), nn.MaxPool2d(2), *conv(64, 128), *conv(128, 128),
                            nn.MaxPool2d(2), *conv(128, 256), *conv(256, 256), nn.MaxPool2d(2),
                            *conv(256, 512), *conv(512, 512), nn.AdaptiveAvgPool2d(1), nn.Flatten(),
                            nn.Linear(512, 100)).eval()
    teacher.requires_grad_(False)
    student = nn.Sequential(*conv(3, 32), nn.MaxPool2d(2), *conv(32, 64), nn.MaxPool2d(2), *conv(64, 128),
                            nn.MaxPool2d(2), nn.Flatten(), nn.Linear(128 * 4 * 4, 100))
    opt = torch.optim.SGD(student.parameters(), lr=0.05, momentum=0.9)
    gen = torch.Generator().manual_seed(30 + seed)
    temp = 4.0
    total = 0.0
    for _ in range(steps):
        images = torch.randn(128, 3, 32, 32, generator=gen)
        labels = torch.randint(0, 100, (128,), generator=gen)
        with torch.no_grad():
            soft = (teacher(images) / temp).log_softmax(-1)
        opt.zero_grad(set_to_none=True)
        logits = student(images)
        kl = nn.functional.kl_div((logits / temp).log_softmax(-1), soft, reduction="batchmean", log_target=True)
        loss = nn.functional.cross_entropy(logits, labels) + temp * temp * kl
        loss.backward()
        opt.step()
        total += loss.item()
    return total


@_workload(default_steps=6)
def txl_train(*, steps: int, seed: int) -> float:
    """Transformer-XL-style language model (4 pre-norm layers, d_model 256, 4 heads, MLP
    1024, vocabulary 8000, batch 8) reading each batch row as one long token stream in
    64-token segments, one segment a step: every layer attends over its memory of 64 earlier
    hidden states concatenated with the current segment (a causal mask offset by the memory
    length, a learned per-head bias by relative distance). After each step every layer's
    memory is replaced, as in Transformer-XL, by the last 64 rows of the concatenation of
    its old memory and its current input, detached from the graph: memory tensors outlive
    the step that made them and are freed one step later (the first segment has no memory,
    so its attention is smaller); next-token loss, Adam, 6 steps."""
    torch.manual_seed(0)
    seg, mem_len = 64, 64

    class Layer(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.ln1, self.ln2 = nn.LayerNorm(256), nn.LayerNorm(256)
            self.q, self.kv, self.proj = nn.Linear(256, 256), nn.Linear(256, 512), nn.Linear(256, 256)
            self.ff = nn.Sequential(nn.Linear(256, 1024), nn.GELU(), nn.Linear(1024, 256))
            self.rel = nn.Parameter(torch.zeros(4, mem_len + seg))  # a bias per head and distance

        def forward(self, x: torch.Tensor, mem: torch.Tensor) -> torch.Tensor:
            b, t, _ = x.shape
            m = mem.shape[1]
            ctx = self.ln1(torch.cat([mem, x], 1))
            q = self.q(ctx[:, m:]).view(b, t, 4, 64).transpose(1, 2)
            k, v = self.kv(ctx).view(b, m + t, 2, 4, 64).permute(2, 0, 3, 1, 4)
            dist = torch.arange(m, m + t)[:, None] - torch.arange(m + t)[None, :]  # (t, m + t)
            att = (q @ k.transpose(-2, -1)) * 0.125 + self.rel[:, dist.clamp(min=0)]
            att = att.masked_fill(dist < 0, float("-inf")).softmax(-1) @ v
            x = x + self.proj(att.transpose(1, 2).reshape(b, t, 256))
            return x + self.ff(self.ln2(x))

    class TXL(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.tok = nn.Embedding(8000, 256)
            self.layers = nn.ModuleList(Layer() for _ in range(4))
            self.ln, self.head = nn.LayerNorm(256), nn.Linear(256, 8000)

        def forward(self, ids: torch.Tensor, mems: list[torch.Tensor]) -> tuple[torch.Tensor, list[torch.Tensor]]:
            h = self.tok(ids)
            new_mems = []
            for layer, mem in zip(self.layers, mems):
                new_mems.append(torch.cat([mem, h], 1)[:, -mem_len:].detach())
                h = layer(h, mem)
            return self.head(self.ln(h)).reshape(-1, 8000), new_mems

    model = TXL()
    opt = torch.optim.Adam(model.parameters(), lr=3e-4)
    gen = torch.Generator().manual_seed(31 + seed)
    mems = [torch.zeros(8, 0, 256) for _ in model.layers]
    last = torch.randint(0, 8000, (8, 1), generator=gen)
    total = 0.0
    for _ in range(steps):
        ids = torch.cat([last, torch.randint(0, 8000, (8, seg), generator=gen)], 1)  # the stream's next segment
        last = ids[:, -1:]
        opt.zero_grad(set_to_none=True)
        logits, mems = model(ids[:, :-1], mems)
        loss = nn.functional.cross_entropy(logits, ids[:, 1:].reshape(-1))
        loss.backward()
        opt.step()
        total += loss.item()
    return total


@_workload(default_steps=6)
def pointnet_train(*, steps: int, seed: int) -> float:
    """PointNet-style point-cloud classifier: an input transform net (shared per-point
    Conv1d 3-64-128-256 with BatchNorm, max over points, MLP 256-128-9 predicting a 3x3
    matrix added to the identity, applied by bmm), a shared per-point MLP (Conv1d
    3-64-64-128-512 with BatchNorm and ReLU), a max over points and a head 512-256-40 with
    BatchNorm and dropout 0.3; batch 8 clouds. Each step's number of points per cloud
    (256-2048) is drawn from the data generator, so the per-point tensors change size every
    step; Adam, 6 steps."""
    torch.manual_seed(0)

    def shared(*chans: int) -> nn.Sequential:
        layers: list[nn.Module] = []
        for cin, cout in zip(chans, chans[1:]):
            layers += [nn.Conv1d(cin, cout, 1, bias=False), nn.BatchNorm1d(cout), nn.ReLU()]
        return nn.Sequential(*layers)

    class PointNet(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.tnet = shared(3, 64, 128, 256)
            self.tnet_fc = nn.Sequential(nn.Linear(256, 128), nn.ReLU(), nn.Linear(128, 9))
            self.feat = shared(3, 64, 64, 128, 512)
            self.head = nn.Sequential(nn.Linear(512, 256), nn.BatchNorm1d(256), nn.ReLU(), nn.Dropout(0.3),
                                      nn.Linear(256, 40))

        def forward(self, pts: torch.Tensor) -> torch.Tensor:  # (B, 3, N) -> (B, 40)
            t = self.tnet_fc(self.tnet(pts).amax(2)).view(-1, 3, 3) + torch.eye(3)
            return self.head(self.feat(torch.bmm(t, pts)).amax(2))

    model = PointNet()
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    gen = torch.Generator().manual_seed(32 + seed)
    total = 0.0
    for _ in range(steps):
        points = int(torch.randint(256, 2049, (1,), generator=gen))
        pts = torch.randn(8, 3, points, generator=gen)
        labels = torch.randint(0, 40, (8,), generator=gen)
        opt.zero_grad(set_to_none=True)
        loss = nn.functional.cross_entropy(model(pts), labels)
        loss.backward()
        opt.step()
        total += loss.item()
    return total


@_workload(default_steps=8)
def curriculum_lm_train(*, steps: int, seed: int) -> float:
    """GPT-style decoder-only language model (4 pre-norm layers, d_model 256, 8 heads with
    scaled_dot_product_attention(is_causal=True), MLP 1024, learned positions, vocabulary
    8000, batch 8) trained with a sequence-length curriculum: 32 tokens for the first two
    steps and 32 more every two steps after, up to 160 (8 steps: 32, 32, 64, 64, 96, 96,
    128, 128; a longer run goes on to 160 and stays there), so tensor shapes grow as the
    run goes on; gradient clipping, AdamW, 8 steps."""
    torch.manual_seed(0)

    class Block(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.ln1, self.ln2 = nn.LayerNorm(256), nn.LayerNorm(256)
            self.qkv, self.proj = nn.Linear(256, 3 * 256), nn.Linear(256, 256)
            self.ff = nn.Sequential(nn.Linear(256, 1024), nn.GELU(), nn.Linear(1024, 256))

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            b, t, _ = x.shape
            q, k, v = self.qkv(self.ln1(x)).view(b, t, 3, 8, 32).permute(2, 0, 3, 1, 4)
            att = nn.functional.scaled_dot_product_attention(q, k, v, is_causal=True)
            x = x + self.proj(att.transpose(1, 2).reshape(b, t, 256))
            return x + self.ff(self.ln2(x))

    class GPT(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.tok, self.pos = nn.Embedding(8000, 256), nn.Embedding(160, 256)
            self.blocks = nn.Sequential(*(Block() for _ in range(4)))
            self.ln, self.head = nn.LayerNorm(256), nn.Linear(256, 8000)

        def forward(self, ids: torch.Tensor) -> torch.Tensor:
            h = self.tok(ids) + self.pos(torch.arange(ids.shape[1]))
            return self.head(self.ln(self.blocks(h))).reshape(-1, 8000)

    model = GPT()
    opt = torch.optim.AdamW(model.parameters(), lr=3e-4)
    gen = torch.Generator().manual_seed(33 + seed)
    total = 0.0
    for step in range(steps):
        length = min(32 * (1 + step // 2), 160)
        ids = torch.randint(0, 8000, (8, length + 1), generator=gen)
        opt.zero_grad(set_to_none=True)
        loss = nn.functional.cross_entropy(model(ids[:, :-1]), ids[:, 1:].reshape(-1))
        loss.backward()
        nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        total += loss.item()
    return total


@_workload(default_steps=3)
def mae_pretrain(*, steps: int, seed: int) -> float:
    """Masked-autoencoder pre-training (MAE) on 224x224 RGB images, batch 16, cut into 196
    16x16 patches of 768 values: a linear patch embedding 768-256 with learned positions, then
    a random 25 % of each image's patches (49 of 196, chosen by argsort of per-patch noise from
    the data generator, so the number kept is fixed and which ones are kept changes every step)
    gathered by torch.gather and encoded by a ViT encoder (6 pre-norm layers, d_model 256, 4
    heads, MLP 1024) on those 49 tokens only; a light decoder (a linear 256-128, a learned mask
    token for each of the 147 dropped patches, unshuffled back into patch order by gather,
    learned positions, 2 pre-norm layers of d_model 128, 4 heads, MLP 512, a linear 128-768)
    over all 196 patches; MSE loss on the per-patch-normalized pixels of the masked patches
    only; AdamW, 3 steps."""
    torch.manual_seed(0)
    keep, patches = 49, 196

    def layers(dim: int, heads: int, depth: int) -> nn.TransformerEncoder:
        layer = nn.TransformerEncoderLayer(dim, heads, 4 * dim, dropout=0.0, activation="gelu", batch_first=True,
                                           norm_first=True)
        return nn.TransformerEncoder(layer, depth, enable_nested_tensor=False)

    class MAE(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.embed, self.pos = nn.Linear(768, 256), nn.Parameter(torch.randn(patches, 256) * 0.02)
            self.encoder, self.enc_norm = layers(256, 4, 6), nn.LayerNorm(256)
            self.dec_embed, self.mask_token = nn.Linear(256, 128), nn.Parameter(torch.zeros(128))
            self.dec_pos = nn.Parameter(torch.randn(patches, 128) * 0.02)
            self.decoder, self.dec_norm, self.pred = layers(128, 4, 2), nn.LayerNorm(128), nn.Linear(128, 768)

        def forward(self, x: torch.Tensor, noise: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
            b = x.shape[0]
            shuffle = noise.argsort(1)  # the first `keep` of each row are the patches kept
            restore = shuffle.argsort(1)
            kept = shuffle[:, :keep]
            h = (self.embed(x) + self.pos).gather(1, kept[:, :, None].expand(-1, -1, 256))
            h = self.dec_embed(self.enc_norm(self.encoder(h)))
            h = torch.cat([h, self.mask_token.expand(b, patches - keep, 128)], 1)
            h = h.gather(1, restore[:, :, None].expand(-1, -1, 128)) + self.dec_pos
            masked = torch.ones(b, patches).scatter_(1, kept, 0.0)  # 1 on the patches the encoder did not see
            return self.pred(self.dec_norm(self.decoder(h))), masked

    model = MAE()
    opt = torch.optim.AdamW(model.parameters(), lr=1.5e-4, betas=(0.9, 0.95), weight_decay=0.05)
    gen = torch.Generator().manual_seed(34 + seed)
    total = 0.0
    for _ in range(steps):
        images = torch.randn(16, 3, 224, 224, generator=gen)
        x = images.view(16, 3, 14, 16, 14, 16).permute(0, 2, 4, 3, 5, 1).reshape(16, patches, 768)  # patchify
        noise = torch.rand(16, patches, generator=gen)
        target = (x - x.mean(-1, keepdim=True)) / (x.var(-1, keepdim=True) + 1e-6).sqrt()
        opt.zero_grad(set_to_none=True)
        pred, masked = model(x, noise)
        loss = (((pred - target) ** 2).mean(-1) * masked).sum() / masked.sum()
        loss.backward()
        opt.step()
        total += loss.item()
    return total


@_workload(default_steps=6)
def nerf_train(*, steps: int, seed: int) -> float:
    """NeRF-style radiance field trained on batches of 384 rays (origins on a sphere of radius
    4 looking at the centre, random target colours, near 2, far 6): positional encoding of the
    points (10 frequencies, 63 features) and view directions (4 frequencies, 27 features);
    32 stratified coarse samples per ray through a coarse MLP, then 64 fine samples per ray
    drawn from the coarse weights (hierarchical sampling: a piecewise-constant PDF over the
    coarse bins, inverted with torch.searchsorted, detached) and, sorted together with the
    coarse samples, 96 per ray through a fine MLP; each MLP 6 layers of 128 with ReLU and a
    skip concatenation of the encoded point after the third, a density output and a
    128-64-3 colour branch fed the encoded direction; volume rendering (alpha compositing
    by an exclusive cumprod of transmittance) of both; MSE of both renders against the
    target colours, Adam, 6 steps."""
    torch.manual_seed(0)
    rays, coarse, fine, near, far = 384, 32, 64, 2.0, 6.0

    def encode(x: torch.Tensor, freqs: int) -> torch.Tensor:
        scaled = x[..., None, :] * (2.0 ** torch.arange(freqs, dtype=torch.float32))[:, None]  # (..., F, 3)
        return torch.cat([x, scaled.sin().flatten(-2), scaled.cos().flatten(-2)], -1)

    class Field(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.first = nn.ModuleList([nn.Linear(63, 128), nn.Linear(128, 128), nn.Linear(128, 128)])
            self.second = nn.ModuleList([nn.Linear(128 + 63, 128), nn.Linear(128, 128), nn.Linear(128, 128)])
            self.sigma, self.feat = nn.Linear(128, 1), nn.Linear(128, 128)
            self.color = nn.Sequential(nn.Linear(128 + 27, 64), nn.ReLU(), nn.Linear(64, 3), nn.Sigmoid())

        def forward(self, pts: torch.Tensor, dirs: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
            p = encode(pts, 10)
            h = p
            for layer in self.first:
                h = torch.relu(layer(h))
            h = torch.cat([h, p], -1)  # the skip connection of NeRF
            for layer in self.second:
                h = torch.relu(layer(h))
            d = encode(dirs, 4)[:, None].expand(-1, pts.shape[1], -1)
            return self.sigma(h).squeeze(-1), self.color(torch.cat([self.feat(h), d], -1))

    def render(field: Field, origins: torch.Tensor, dirs: torch.Tensor, z: torch.Tensor
               ) -> tuple[torch.Tensor, torch.Tensor]:
        sigma, rgb = field(origins[:, None] + dirs[:, None] * z[..., None], dirs)
        delta = torch.cat([z[:, 1:] - z[:, :-1], torch.full((z.shape[0], 1), 1e10)], 1)
        alpha = 1 - torch.exp(-torch.relu(sigma) * delta)
        trans = torch.cumprod(torch.cat([torch.ones(z.shape[0], 1), 1 - alpha + 1e-10], 1), 1)[:, :-1]
        weights = alpha * trans
        return (weights[..., None] * rgb).sum(1), weights

    def sample_pdf(bins: torch.Tensor, weights: torch.Tensor, u: torch.Tensor) -> torch.Tensor:
        pdf = (weights + 1e-5) / (weights + 1e-5).sum(-1, keepdim=True)
        cdf = torch.cat([torch.zeros(weights.shape[0], 1), pdf.cumsum(-1)], -1)
        idx = torch.searchsorted(cdf, u, right=True)
        below, above = (idx - 1).clamp(min=0), idx.clamp(max=cdf.shape[1] - 1)
        cdf_lo, cdf_hi = cdf.gather(1, below), cdf.gather(1, above)
        bin_lo, bin_hi = bins.gather(1, below), bins.gather(1, above)
        denom = torch.where(cdf_hi - cdf_lo < 1e-5, torch.ones_like(cdf_lo), cdf_hi - cdf_lo)
        return bin_lo + (u - cdf_lo) / denom * (bin_hi - bin_lo)

    coarse_field, fine_field = Field(), Field()
    opt = torch.optim.Adam([*coarse_field.parameters(), *fine_field.parameters()], lr=5e-4)
    gen = torch.Generator().manual_seed(35 + seed)
    total = 0.0
    for _ in range(steps):
        origins = nn.functional.normalize(torch.randn(rays, 3, generator=gen), dim=-1) * 4.0
        dirs = nn.functional.normalize(-origins + 0.5 * torch.randn(rays, 3, generator=gen), dim=-1)
        target = torch.rand(rays, 3, generator=gen)
        edges = torch.linspace(near, far, coarse + 1)
        z = edges[:-1] + (edges[1:] - edges[:-1]) * torch.rand(rays, coarse, generator=gen)  # stratified
        u = torch.rand(rays, fine, generator=gen)
        opt.zero_grad(set_to_none=True)
        rgb_coarse, weights = render(coarse_field, origins, dirs, z)
        with torch.no_grad():
            mids = torch.cat([torch.full((rays, 1), near), (z[:, 1:] + z[:, :-1]) / 2, torch.full((rays, 1), far)], 1)
            z_fine = torch.sort(torch.cat([z, sample_pdf(mids, weights.detach(), u)], 1), 1).values
        rgb_fine, _ = render(fine_field, origins, dirs, z_fine)
        loss = nn.functional.mse_loss(rgb_coarse, target) + nn.functional.mse_loss(rgb_fine, target)
        loss.backward()
        opt.step()
        total += loss.item()
    return total


@_workload(default_steps=4)
def transducer_train(*, steps: int, seed: int) -> float:
    """RNN-T (transducer) speech recogniser, batch 16, 80-bin log-mel-like features: a
    convolutional encoder (two stride-2 Conv1d 80-256-256 with ReLU, T frames to T/4, then 4
    residual blocks of a kernel-5 Conv1d 256-256, BatchNorm and ReLU); a prediction network
    (an embedding of the 128 symbols, blank 0, and a 1-layer LSTM of 256) over the U labels
    with a blank prepended; a joint network (linears 256-256 from each, broadcast to
    B x T/4 x (U+1) x 256, tanh, a linear 256-128) building the B x T/4 x (U+1) x 128 logits
    and their log_softmax; the RNN-T loss computed in plain PyTorch by the forward algorithm,
    one frame at a time over the label axis with logcumsumexp (no torchaudio). Each step's
    frame count (96-288, one for the whole batch) and label count (8-32) are drawn from the
    data generator, so the joint tensors change size every step; Adam, 4 steps."""
    torch.manual_seed(0)

    class Transducer(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.sub = nn.Sequential(nn.Conv1d(80, 256, 3, 2, 1), nn.ReLU(), nn.Conv1d(256, 256, 3, 2, 1), nn.ReLU())
            self.enc = nn.ModuleList(nn.Sequential(nn.Conv1d(256, 256, 5, padding=2, bias=False), nn.BatchNorm1d(256),
                                                   nn.ReLU()) for _ in range(4))
            self.emb, self.pred = nn.Embedding(128, 256), nn.LSTM(256, 256, batch_first=True)
            self.enc_proj, self.pred_proj = nn.Linear(256, 256), nn.Linear(256, 256)
            self.out = nn.Linear(256, 128)

        def forward(self, feats: torch.Tensor, labels: torch.Tensor) -> torch.Tensor:
            x = self.sub(feats.transpose(1, 2))  # (B, 256, T')
            for block in self.enc:
                x = x + block(x)
            enc = x.transpose(1, 2)  # (B, T', 256)
            blank_first = nn.functional.pad(labels, (1, 0))  # blank 0 before the labels
            pred = self.pred(self.emb(blank_first))[0]  # (B, U + 1, 256)
            joint = torch.tanh(self.enc_proj(enc)[:, :, None] + self.pred_proj(pred)[:, None])
            return self.out(joint).log_softmax(-1)  # (B, T', U + 1, 128)

    def rnnt_loss(logp: torch.Tensor, labels: torch.Tensor) -> torch.Tensor:
        b, t, u1, _ = logp.shape
        blank = logp[..., 0]  # (B, T', U + 1)
        emit = logp[:, :, :-1].gather(3, labels[:, None, :, None].expand(b, t, u1 - 1, 1)).squeeze(3)  # (B, T', U)
        run = torch.cat([torch.zeros(b, t, 1), emit.cumsum(2)], 2)  # (B, T', U + 1): emit[f, :u] summed
        step = blank[:, :-1] - run[:, 1:]  # (B, T' - 1, U + 1)
        alpha = run[:, 0]  # first frame: labels emitted one after another
        for frame in range(1, t):
            # alpha[u] = logsumexp over k <= u of (alpha_prev[k] + blank_prev[k] + sum of emit[frame, k:u])
            alpha = run[:, frame] + torch.logcumsumexp(alpha + step[:, frame - 1], 1)
        return -(alpha[:, -1] + blank[:, -1, -1]).mean()

    model = Transducer()
    opt = torch.optim.Adam(model.parameters(), lr=5e-4)
    gen = torch.Generator().manual_seed(36 + seed)
    total = 0.0
    for _ in range(steps):
        frames = int(torch.randint(96, 289, (1,), generator=gen))
        count = int(torch.randint(8, 33, (1,), generator=gen))
        feats = torch.randn(16, frames, 80, generator=gen)
        labels = torch.randint(1, 128, (16, count), generator=gen)
        opt.zero_grad(set_to_none=True)
        loss = rnnt_loss(model(feats, labels), labels) / frames
        loss.backward()
        opt.step()
        total += loss.item()
    return total


@_workload(default_steps=3)
def beam_decode(*, steps: int, seed: int) -> float:
    """Inference only: beam search under torch.no_grad() with a small decoder-only transformer
    (4 pre-norm layers, d_model 512, 8 heads, MLP 2048, vocabulary 16000) and a per-layer
    key/value cache, one request after another (3 requests, each 2 prompts whose length,
    32-128 tokens, is drawn from the data generator): the prompts' pass fills the caches,
    which are then repeated for 8 beams per prompt (16 rows); each of 20 generated tokens
    runs one position, grows every layer's cache by torch.cat, takes the top 8 of the
    beams' 8 x 16000 continuations per prompt, and reorders every layer's key and value
    cache and the token history by index_select with the surviving beams' rows; the caches
    are dropped when the request is done."""
    torch.manual_seed(0)
    beams, prompts, new_tokens, vocab = 8, 2, 20, 16000

    class Decoder(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.tok, self.pos = nn.Embedding(vocab, 512), nn.Embedding(256, 512)
            self.blocks = nn.ModuleList(_CachedBlock() for _ in range(4))
            self.ln, self.head = nn.LayerNorm(512), nn.Linear(512, vocab)

        def forward(self, ids: torch.Tensor, start: int, caches: list[list[torch.Tensor]]) -> torch.Tensor:
            h = self.tok(ids) + self.pos(torch.arange(start, start + ids.shape[1]))
            for block, cache in zip(self.blocks, caches):
                h = block(h, cache)
            return self.head(self.ln(h[:, -1])).log_softmax(-1)  # the last position only

    model = Decoder().eval()
    gen = torch.Generator().manual_seed(37 + seed)
    base = (torch.arange(prompts) * beams)[:, None]  # each prompt's first row
    total = 0.0
    with torch.no_grad():
        for _ in range(steps):
            length = int(torch.randint(32, 129, (1,), generator=gen))
            prompt = torch.randint(0, vocab, (prompts, length), generator=gen)
            caches: list[list[torch.Tensor]] = [[] for _ in model.blocks]
            logp = model(prompt, 0, caches).repeat_interleave(beams, 0)  # (prompts * beams, vocab)
            for cache in caches:
                cache[:] = [t.repeat_interleave(beams, 0) for t in cache]
            scores = torch.full((prompts, beams), float("-inf"))
            scores[:, 0] = 0.0  # all beams start as the same prompt: only the first is live
            history = torch.zeros(prompts * beams, 0, dtype=torch.long)
            for step in range(new_tokens):
                if step:
                    logp = model(history[:, -1:], length + step - 1, caches)
                cand = (scores[:, :, None] + logp.view(prompts, beams, vocab)).view(prompts, -1)
                scores, flat = cand.topk(beams, 1)  # (prompts, beams)
                rows = (base + flat // vocab).view(-1)  # the surviving beams' rows
                for cache in caches:
                    cache[:] = [t.index_select(0, rows) for t in cache]
                history = torch.cat([history.index_select(0, rows), (flat % vocab).view(-1, 1)], 1)
            total += float(scores.max(1).values.sum())
            del caches, logp
    return total


class _MixerLayer(nn.Module):
    """An MLP-Mixer layer over (batch, tokens, dim): a token-mixing MLP tokens-token_hidden-tokens
    (GELU) on the transposed LayerNorm of the input and a channel-mixing MLP
    dim-channel_hidden-dim (GELU) on the LayerNorm of the result, each added back as a residual;
    with ``drop_path`` > 0, in training each residual branch is dropped per sample with that
    probability (stochastic depth) and the kept ones scaled by 1 / (1 - drop_path)
    (flat-adam-train, mlp-mixer-train)."""

    def __init__(self, tokens: int, dim: int, token_hidden: int, channel_hidden: int, drop_path: float = 0.0) -> None:
        super().__init__()
        self.ln1, self.ln2 = nn.LayerNorm(dim), nn.LayerNorm(dim)
        self.tokens = nn.Sequential(nn.Linear(tokens, token_hidden), nn.GELU(), nn.Linear(token_hidden, tokens))
        self.channels = nn.Sequential(nn.Linear(dim, channel_hidden), nn.GELU(), nn.Linear(channel_hidden, dim))
        self.drop_path = drop_path

    def _branch(self, y: torch.Tensor) -> torch.Tensor:
        if not self.training or self.drop_path == 0.0:
            return y
        keep = (torch.rand(y.shape[0], 1, 1) >= self.drop_path).to(y.dtype)
        return y * keep / (1 - self.drop_path)

    def forward(self, x: torch.Tensor) -> torch.Tensor:  # (B, tokens, dim)
        x = x + self._branch(self.tokens(self.ln1(x).transpose(1, 2)).transpose(1, 2))
        return x + self._branch(self.channels(self.ln2(x)))


@_workload(default_steps=4)
def flat_adam_train(*, steps: int, seed: int) -> float:
    """MLP-Mixer image classifier (64x64 RGB cut into 64 8x8 patches, a linear 192-256 patch
    embedding, 8 mixer layers of a token-mixing MLP 64-128-64 and a channel-mixing MLP
    256-1024-256 with LayerNorm and residuals, global average pooling, a linear head to 100
    classes; batch 16) trained the way apex's flat master weights or DDP gradient buckets
    keep state: the ~4.4M parameters are split in model order into buckets of at most 1M
    elements, each with a flat fp32 master-weight buffer and a flat gradient buffer made
    once; during backward a post-accumulate-grad hook on every parameter copies its gradient
    into its bucket's gradient buffer and frees it, then Adam (one parameter per bucket:
    exp_avg, exp_avg_sq and temporaries bucket-sized) updates the flat master buffers and
    every parameter is copied back from its slice; 4 steps."""
    torch.manual_seed(0)

    class MixerNet(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.embed = nn.Linear(192, 256)
            self.layers = nn.Sequential(*(_MixerLayer(64, 256, 128, 1024) for _ in range(8)))
            self.norm, self.head = nn.LayerNorm(256), nn.Linear(256, 100)

        def forward(self, images: torch.Tensor) -> torch.Tensor:
            x = images.view(-1, 3, 8, 8, 8, 8).permute(0, 2, 4, 3, 5, 1).reshape(-1, 64, 192)  # patchify
            return self.head(self.norm(self.layers(self.embed(x))).mean(1))

    model = MixerNet()
    buckets: list[list[nn.Parameter]] = [[]]
    for p in model.parameters():
        if buckets[-1] and sum(q.numel() for q in buckets[-1]) + p.numel() > 1 << 20:
            buckets.append([])
        buckets[-1].append(p)
    masters: list[nn.Parameter] = []
    slots: dict[nn.Parameter, tuple[torch.Tensor, torch.Tensor]] = {}  # a parameter's gradient and master slices
    for bucket in buckets:
        flat = nn.Parameter(torch.cat([p.detach().reshape(-1) for p in bucket]))
        flat.grad = torch.zeros_like(flat)
        masters.append(flat)
        offset = 0
        for p in bucket:
            slots[p] = flat.grad[offset:offset + p.numel()].view_as(p), flat[offset:offset + p.numel()].view_as(p)
            offset += p.numel()

    def to_bucket(p: torch.Tensor) -> None:
        slots[p][0].copy_(p.grad)
        p.grad = None

    for p in model.parameters():
        p.register_post_accumulate_grad_hook(to_bucket)
    opt = torch.optim.Adam(masters, lr=1e-3)
    gen = torch.Generator().manual_seed(38 + seed)
    total = 0.0
    for _ in range(steps):
        images = torch.randn(16, 3, 64, 64, generator=gen)
        labels = torch.randint(0, 100, (16,), generator=gen)
        loss = nn.functional.cross_entropy(model(images), labels)
        loss.backward()
        opt.step()
        with torch.no_grad():
            for p, (_, master) in slots.items():
                p.copy_(master)
        total += loss.item()
    return total


@_workload(default_steps=8)
def clip_train(*, steps: int, seed: int) -> float:
    """CLIP-style contrastive image-text training, batch 64 pairs: an image tower (a ViT of a
    stride-8 Conv2d patch embedding 3-256 over 64x64 RGB images, 64 patches and a class token
    with learned positions, 4 pre-norm layers of d_model 256, 4 heads, MLP 1024, the class
    token's LayerNorm and a linear 256-256) and a text tower (token and learned position
    embeddings of a 8000-id vocabulary over a 32-token context, 4 pre-norm causal layers of
    d_model 256, 4 heads, MLP 1024, a final LayerNorm, the features at each caption's
    end-of-text token, found by argmax of the ids as in CLIP, and a linear 256-256); both
    embeddings L2-normalized, the 64x64 logits img @ txt.T scaled by a learned temperature
    (clamped at 100), symmetric cross-entropy over images and texts. Each caption's length
    (8-32 tokens, padded with 0 after its end-of-text id) is drawn from the data generator,
    so the shapes are fixed; AdamW with weight decay, 8 steps."""
    torch.manual_seed(0)
    pairs, ctx, vocab, dim = 64, 32, 8000, 256

    def layers(depth: int) -> nn.TransformerEncoder:
        layer = nn.TransformerEncoderLayer(dim, 4, 4 * dim, dropout=0.0, activation="gelu", batch_first=True,
                                           norm_first=True)
        return nn.TransformerEncoder(layer, depth, enable_nested_tensor=False)

    class ImageTower(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.patch = nn.Conv2d(3, dim, 8, 8)
            self.cls, self.pos = nn.Parameter(torch.randn(dim) * 0.02), nn.Parameter(torch.randn(65, dim) * 0.02)
            self.layers, self.ln, self.proj = layers(4), nn.LayerNorm(dim), nn.Linear(dim, 256, bias=False)

        def forward(self, images: torch.Tensor) -> torch.Tensor:
            x = self.patch(images).flatten(2).transpose(1, 2)  # (B, 64, dim)
            x = torch.cat([self.cls.expand(x.shape[0], 1, dim), x], 1) + self.pos
            return self.proj(self.ln(self.layers(x)[:, 0]))

    class TextTower(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.tok, self.pos = nn.Embedding(vocab, dim), nn.Parameter(torch.randn(ctx, dim) * 0.01)
            self.layers, self.ln, self.proj = layers(4), nn.LayerNorm(dim), nn.Linear(dim, 256, bias=False)
            self.register_buffer("mask", nn.Transformer.generate_square_subsequent_mask(ctx))

        def forward(self, ids: torch.Tensor) -> torch.Tensor:
            x = self.ln(self.layers(self.tok(ids) + self.pos, mask=self.mask, is_causal=True))
            return self.proj(x[torch.arange(ids.shape[0]), ids.argmax(-1)])  # at the end-of-text token

    image_tower, text_tower = ImageTower(), TextTower()
    logit_scale = nn.Parameter(torch.tensor(1 / 0.07).log())
    params = [*image_tower.parameters(), *text_tower.parameters(), logit_scale]
    opt = torch.optim.AdamW(params, lr=5e-4, betas=(0.9, 0.98), eps=1e-6, weight_decay=0.2)
    gen = torch.Generator().manual_seed(39 + seed)
    targets = torch.arange(pairs)
    total = 0.0
    for _ in range(steps):
        images = torch.randn(pairs, 3, 64, 64, generator=gen)
        lengths = torch.randint(8, ctx + 1, (pairs, 1), generator=gen)
        ids = torch.randint(1, vocab - 1, (pairs, ctx), generator=gen)
        position = torch.arange(ctx)
        ids = torch.where(position == lengths - 1, vocab - 1, ids.masked_fill(position >= lengths, 0))
        opt.zero_grad(set_to_none=True)
        img = nn.functional.normalize(image_tower(images), dim=-1)
        txt = nn.functional.normalize(text_tower(ids), dim=-1)
        logits = logit_scale.exp().clamp(max=100) * img @ txt.t()
        loss = (nn.functional.cross_entropy(logits, targets) + nn.functional.cross_entropy(logits.t(), targets)) / 2
        loss.backward()
        opt.step()
        total += loss.item()
    return total


@_workload(default_steps=8)
def conformer_train(*, steps: int, seed: int) -> float:
    """Conformer speech encoder (Conformer-S-like) with a CTC head, batch 16 utterances of 512
    frames of 80-bin log-mel-like features: conv subsampling (two 3x3 stride-2 Conv2d 1-144-144
    with ReLU, 512x80 to 127x19) and a linear 144*19-144 plus sinusoidal positions (absolute,
    instead of Conformer's relative ones); 4 Conformer blocks of d_model 144: a half-step
    feed-forward module (LayerNorm, 144-576 with SiLU, 576-144), multi-head self-attention
    (LayerNorm, nn.MultiheadAttention with 4 heads), a convolution module (LayerNorm, a
    pointwise Conv1d 144-288 and GLU, a kernel-31 depthwise Conv1d, BatchNorm, SiLU, a
    pointwise Conv1d 144-144), a second half-step feed-forward module and a final LayerNorm;
    a linear 144-64 (64 symbols, blank 0) and nn.CTCLoss with every utterance's 127 frames
    and a 40-symbol transcript, so the shapes are fixed; AdamW, 8 steps."""
    torch.manual_seed(0)
    batch, frames, dim, symbols, labels = 16, 512, 144, 64, 40

    def feed_forward() -> nn.Sequential:
        return nn.Sequential(nn.LayerNorm(dim), nn.Linear(dim, 4 * dim), nn.SiLU(), nn.Linear(4 * dim, dim))

    class ConvModule(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.ln = nn.LayerNorm(dim)
            self.body = nn.Sequential(nn.Conv1d(dim, 2 * dim, 1), nn.GLU(1),
                                      nn.Conv1d(dim, dim, 31, padding=15, groups=dim), nn.BatchNorm1d(dim), nn.SiLU(),
                                      nn.Conv1d(dim, dim, 1))

        def forward(self, x: torch.Tensor) -> torch.Tensor:  # (B, T, dim)
            return self.body(self.ln(x).transpose(1, 2)).transpose(1, 2)

    class Block(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.ff1, self.ff2, self.conv = feed_forward(), feed_forward(), ConvModule()
            self.ln_att, self.att = nn.LayerNorm(dim), nn.MultiheadAttention(dim, 4, batch_first=True)
            self.ln_out = nn.LayerNorm(dim)

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            x = x + 0.5 * self.ff1(x)
            h = self.ln_att(x)
            x = x + self.att(h, h, h, need_weights=False)[0]
            x = x + self.conv(x)
            return self.ln_out(x + 0.5 * self.ff2(x))

    class Conformer(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.sub = nn.Sequential(nn.Conv2d(1, dim, 3, 2), nn.ReLU(), nn.Conv2d(dim, dim, 3, 2), nn.ReLU())
            self.proj = nn.Linear(dim * 19, dim)
            self.blocks = nn.Sequential(*(Block() for _ in range(4)))
            self.head = nn.Linear(dim, symbols)
            t = torch.arange(127, dtype=torch.float32)[:, None] / 10000 ** (torch.arange(0, dim, 2) / dim)
            self.register_buffer("pos", torch.stack([t.sin(), t.cos()], -1).flatten(1))

        def forward(self, feats: torch.Tensor) -> torch.Tensor:  # (B, T, 80) -> (T/4, B, symbols) log-probs
            x = self.sub(feats[:, None])  # (B, dim, 127, 19)
            x = self.proj(x.permute(0, 2, 1, 3).flatten(2)) + self.pos
            return self.head(self.blocks(x)).log_softmax(-1).transpose(0, 1)

    model = Conformer()
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3, betas=(0.9, 0.98), weight_decay=1e-3)
    ctc = nn.CTCLoss(blank=0, zero_infinity=True)
    gen = torch.Generator().manual_seed(40 + seed)
    out_lengths, target_lengths = torch.full((batch,), 127), torch.full((batch,), labels)
    total = 0.0
    for _ in range(steps):
        feats = torch.randn(batch, frames, 80, generator=gen)
        targets = torch.randint(1, symbols, (batch, labels), generator=gen)
        opt.zero_grad(set_to_none=True)
        loss = ctc(model(feats), targets, out_lengths, target_lengths)
        loss.backward()
        opt.step()
        total += loss.item()
    return total


@_workload(default_steps=8)
def ssm_train(*, steps: int, seed: int) -> float:
    """Mamba-style selective state-space language model (vocabulary 4096, d_model 128, 2
    pre-norm residual blocks, batch 32 x 64 tokens): each block a LayerNorm, an input
    projection 128-2x256 into the scanned branch and the gate, a causal kernel-4 depthwise
    Conv1d and SiLU, an x-projection 256-(8+16+16) to the step size's low-rank input and the
    input-dependent B and C (state size 16), a dt projection 8-256 with softplus, A = -exp(A_log)
    (256x16), then the selective scan written in Python as a loop over the 64 time steps with a
    per-step state h of 32x256x16 (h = exp(dt*A) * h + dt*B*x, y = h @ C, plus D*x), stacked,
    gated by SiLU of the gate, an output projection 256-128; a final LayerNorm and an untied
    linear head to the vocabulary, next-token cross-entropy; fixed shapes, Adam, 8 steps."""
    torch.manual_seed(0)
    vocab, dim, inner, state, rank, batch, length = 4096, 128, 256, 16, 8, 32, 64

    class Mamba(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.ln, self.in_proj = nn.LayerNorm(dim), nn.Linear(dim, 2 * inner, bias=False)
            self.conv = nn.Conv1d(inner, inner, 4, padding=3, groups=inner)
            self.x_proj, self.dt_proj = nn.Linear(inner, rank + 2 * state, bias=False), nn.Linear(rank, inner)
            self.A_log = nn.Parameter(torch.arange(1, state + 1, dtype=torch.float32).log().repeat(inner, 1))
            self.D, self.out_proj = nn.Parameter(torch.ones(inner)), nn.Linear(inner, dim, bias=False)

        def forward(self, x: torch.Tensor) -> torch.Tensor:  # (B, T, dim)
            b, t, _ = x.shape
            u, gate = self.in_proj(self.ln(x)).chunk(2, -1)
            u = nn.functional.silu(self.conv(u.transpose(1, 2))[..., :t].transpose(1, 2))  # causal
            dt, B, C = self.x_proj(u).split([rank, state, state], -1)
            dt = nn.functional.softplus(self.dt_proj(dt))  # (B, T, inner)
            A = -self.A_log.exp()  # (inner, state)
            h = x.new_zeros(b, inner, state)
            ys = []
            for i in range(t):  # the selective scan, one time step at a time
                h = torch.exp(dt[:, i, :, None] * A) * h + (dt[:, i] * u[:, i])[:, :, None] * B[:, i, None, :]
                ys.append((h @ C[:, i, :, None]).squeeze(-1))
            y = torch.stack(ys, 1) + u * self.D
            return x + self.out_proj(y * nn.functional.silu(gate))

    model = nn.Sequential(nn.Embedding(vocab, dim), *(Mamba() for _ in range(2)), nn.LayerNorm(dim),
                          nn.Linear(dim, vocab))
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    gen = torch.Generator().manual_seed(41 + seed)
    total = 0.0
    for _ in range(steps):
        ids = torch.randint(0, vocab, (batch, length + 1), generator=gen)
        opt.zero_grad(set_to_none=True)
        loss = nn.functional.cross_entropy(model(ids[:, :-1]).reshape(-1, vocab), ids[:, 1:].reshape(-1))
        loss.backward()
        opt.step()
        total += loss.item()
    return total


@_workload(default_steps=8)
def pipeline_microbatch_train(*, steps: int, seed: int) -> float:
    """GPipe-style pipeline-parallel training of a decoder-only transformer LM (vocabulary
    8000, d_model 256, 4 heads, MLP 1024, 8 pre-norm causal layers, batch 32 x 128 tokens)
    split in 4 stages of 2 layers (the first with the token and position embeddings, the last
    with the final LayerNorm, the head and the loss), run on one device: each step splits the
    batch in 4 micro-batches of 8 and runs GPipe's schedule clock by clock, all forwards
    first (stage s runs micro-batch c - s at clock c; each stage's output is sent to the next
    as a detached copy that requires grad, the receive buffer), keeping every micro-batch's
    graph and activations alive, then all backwards in reverse (the last stage's losses first,
    each stage passing its input's gradient back to the one before), the parameters'
    gradients accumulating over the micro-batches; one Adam step per step; fixed shapes, 8
    steps."""
    torch.manual_seed(0)
    vocab, dim, seq, batch, stages, micro = 8000, 256, 128, 16, 4, 4
    mask = nn.Transformer.generate_square_subsequent_mask(seq)

    class Stage(nn.Module):
        def __init__(self, first: bool, last: bool) -> None:
            super().__init__()
            self.embed = nn.Embedding(vocab, dim) if first else None
            self.pos = nn.Parameter(torch.randn(seq, dim) * 0.02) if first else None
            self.layers = nn.ModuleList(
                nn.TransformerEncoderLayer(dim, 4, 4 * dim, dropout=0.0, activation="gelu", batch_first=True,
                                           norm_first=True) for _ in range(2))
            self.head = nn.Sequential(nn.LayerNorm(dim), nn.Linear(dim, vocab)) if last else None

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            if self.embed is not None:
                x = self.embed(x) + self.pos
            for layer in self.layers:
                x = layer(x, src_mask=mask, is_causal=True)
            return x if self.head is None else self.head(x)

    model = nn.ModuleList(Stage(s == 0, s == stages - 1) for s in range(stages))
    opt = torch.optim.Adam(model.parameters(), lr=3e-4)
    gen = torch.Generator().manual_seed(42 + seed)
    total = 0.0
    for _ in range(steps):
        ids = torch.randint(0, vocab, (batch, seq + 1), generator=gen)
        inputs, targets = ids[:, :-1].chunk(micro), ids[:, 1:].chunk(micro)
        received: list[list[torch.Tensor | None]] = [[None] * micro for _ in range(stages)]
        outputs: list[list[torch.Tensor | None]] = [[None] * micro for _ in range(stages)]
        opt.zero_grad(set_to_none=True)
        for clock in range(micro + stages - 1):  # all forwards
            for s in range(stages):
                m = clock - s
                if not 0 <= m < micro:
                    continue
                out = model[s](inputs[m] if s == 0 else received[s][m])
                if s == stages - 1:
                    out = nn.functional.cross_entropy(out.reshape(-1, vocab), targets[m].reshape(-1)) / micro
                    total += out.item()
                else:
                    received[s + 1][m] = out.detach().clone().requires_grad_()  # the next stage's receive buffer
                outputs[s][m] = out
        for clock in range(micro + stages - 1):  # all backwards, the last micro-batch first
            for s in reversed(range(stages)):
                m = micro - 1 - (clock - (stages - 1 - s))
                if not 0 <= m < micro:
                    continue
                out = outputs[s][m]
                assert out is not None
                if s == stages - 1:
                    out.backward()
                else:
                    grad = received[s + 1][m]
                    assert grad is not None
                    out.backward(grad.grad)
                    received[s + 1][m] = None
                outputs[s][m] = None
        opt.step()
    return total


@_workload(default_steps=6)
def ppo_train(*, steps: int, seed: int) -> float:
    """PPO reinforcement learning on a synthetic vectorized environment (256 environments,
    128-dim observations, 16 discrete actions): each step (one PPO iteration) rolls out a policy
    MLP 128-256-256-16 and a value MLP 128-256-256-1 (tanh) under torch.no_grad() for an
    episode length drawn from the data generator (64-256 time steps; actions sampled by
    torch.multinomial, observations and rewards from the generator), stacks the rollout,
    computes GAE advantages (gamma 0.99, lambda 0.95) by a Python loop backwards over time,
    then runs 4 epochs over the 256 x length samples in 4 shuffled minibatches (torch.randperm,
    index gathers; minibatches of 4096-16384 rows) of the clipped surrogate loss (clip 0.2), the
    clipped value loss and an entropy bonus, gradient-norm clipping at 0.5 and an Adam step
    each, so every tensor of the iteration changes size with the episode length; 6 steps."""
    torch.manual_seed(0)
    envs, obs_dim, actions, hidden = 256, 128, 16, 256

    def mlp(out: int) -> nn.Sequential:
        return nn.Sequential(nn.Linear(obs_dim, hidden), nn.Tanh(), nn.Linear(hidden, hidden), nn.Tanh(),
                             nn.Linear(hidden, out))

    policy, value = mlp(actions), mlp(1)
    params = [*policy.parameters(), *value.parameters()]
    opt = torch.optim.Adam(params, lr=3e-4, eps=1e-5)
    gen = torch.Generator().manual_seed(43 + seed)
    total = 0.0
    for _ in range(steps):
        length = int(torch.randint(64, 257, (1,), generator=gen))
        observations, taken, old_logps, values, rewards = [], [], [], [], []
        obs = torch.randn(envs, obs_dim, generator=gen)
        with torch.no_grad():
            for _ in range(length):
                logp = policy(obs).log_softmax(-1)
                action = torch.multinomial(logp.exp(), 1, generator=gen)
                observations.append(obs)
                taken.append(action.squeeze(1))
                old_logps.append(logp.gather(1, action).squeeze(1))
                values.append(value(obs).squeeze(1))
                rewards.append(torch.randn(envs, generator=gen))
                obs = torch.randn(envs, obs_dim, generator=gen)
            last_value = value(obs).squeeze(1)
            advantages = torch.zeros(length, envs)
            running = torch.zeros(envs)
            for t in reversed(range(length)):  # GAE
                next_value = last_value if t == length - 1 else values[t + 1]
                running = rewards[t] + 0.99 * next_value - values[t] + 0.99 * 0.95 * running
                advantages[t] = running
            returns = (advantages + torch.stack(values)).reshape(-1)
            advantages = advantages.reshape(-1)
            advantages = (advantages - advantages.mean()) / (advantages.std() + 1e-8)
        flat_obs, flat_actions = torch.stack(observations).reshape(-1, obs_dim), torch.stack(taken).reshape(-1)
        flat_logps, flat_values = torch.stack(old_logps).reshape(-1), torch.stack(values).reshape(-1)
        del observations, taken, old_logps, values, rewards
        samples = length * envs
        for _ in range(4):
            for rows in torch.randperm(samples, generator=gen).split(samples // 4):
                logp = policy(flat_obs[rows]).log_softmax(-1)
                new_logp = logp.gather(1, flat_actions[rows, None]).squeeze(1)
                ratio = (new_logp - flat_logps[rows]).exp()
                adv = advantages[rows]
                surrogate = torch.min(ratio * adv, ratio.clamp(0.8, 1.2) * adv).mean()
                v = value(flat_obs[rows]).squeeze(1)
                v_clipped = flat_values[rows] + (v - flat_values[rows]).clamp(-0.2, 0.2)
                v_loss = torch.max((v - returns[rows]) ** 2, (v_clipped - returns[rows]) ** 2).mean()
                entropy = -(logp.exp() * logp).sum(-1).mean()
                loss = -surrogate + 0.5 * v_loss - 0.01 * entropy
                opt.zero_grad(set_to_none=True)
                loss.backward()
                nn.utils.clip_grad_norm_(params, 0.5)
                opt.step()
                total += loss.item()
    return total


@_workload(default_steps=32)
def speculative_decode(*, steps: int, seed: int) -> float:
    """Inference only: speculative decoding under torch.no_grad(), batch 4 prompts of 128
    tokens, vocabulary 16000: a small draft decoder (2 pre-norm layers, d_model 256, 4 heads,
    MLP 1024) and a larger target decoder (6 pre-norm layers, d_model 512, 8 heads, MLP 2048),
    each with a per-layer key/value cache grown by torch.cat. The prompts' pass fills both
    caches and the target gives the first token; then each step (one speculation round) the
    draft proposes k=4 tokens greedily one position at a time (feeding the tokens its cache has
    not seen, one or two), the target verifies them in one forward of 5 positions (its pending
    token and the 4 drafts, attention masked causally past its cache), the accepted prefix
    length (0-4, the drafts accepted while a uniform draw from the data generator is below 0.7,
    a stand-in for the target/draft probability test; the same for the batch) keeps that many
    drafts plus the target's token after them, and both caches are truncated by slicing to the
    positions still valid, so the next torch.cat rebuilds them; 32 rounds."""
    torch.manual_seed(0)
    vocab, prompt_len, batch, k = 16000, 128, 4, 4

    class Block(nn.Module):
        def __init__(self, dim: int, heads: int) -> None:
            super().__init__()
            self.heads = heads
            self.ln1, self.ln2 = nn.LayerNorm(dim), nn.LayerNorm(dim)
            self.qkv, self.proj = nn.Linear(dim, 3 * dim), nn.Linear(dim, dim)
            self.ff = nn.Sequential(nn.Linear(dim, 4 * dim), nn.GELU(), nn.Linear(4 * dim, dim))

        def forward(self, x: torch.Tensor, cache: list[torch.Tensor]) -> torch.Tensor:
            b, t, dim = x.shape
            q, key, val = self.qkv(self.ln1(x)).view(b, t, 3, self.heads, dim // self.heads).permute(2, 0, 3, 1, 4)
            past = cache[0].shape[2] if cache else 0
            if cache:
                key, val = torch.cat([cache[0], key], 2), torch.cat([cache[1], val], 2)
            cache[:] = [key, val]
            visible = torch.ones(t, past + t, dtype=torch.bool).tril(past)  # row i sees the cache and new rows <= i
            att = nn.functional.scaled_dot_product_attention(q, key, val, attn_mask=visible)
            x = x + self.proj(att.transpose(1, 2).reshape(b, t, dim))
            return x + self.ff(self.ln2(x))

    class Decoder(nn.Module):
        def __init__(self, dim: int, heads: int, depth: int) -> None:
            super().__init__()
            self.tok, self.pos = nn.Embedding(vocab, dim), nn.Embedding(1024, dim)
            self.blocks = nn.ModuleList(Block(dim, heads) for _ in range(depth))
            self.ln, self.head = nn.LayerNorm(dim), nn.Linear(dim, vocab)

        def forward(self, ids: torch.Tensor, start: int, caches: list[list[torch.Tensor]], last: bool
                    ) -> torch.Tensor:
            h = self.tok(ids) + self.pos(torch.arange(start, start + ids.shape[1]))
            for block, cache in zip(self.blocks, caches):
                h = block(h, cache)
            return self.head(self.ln(h[:, -1:] if last else h))  # (B, 1 or t, vocab)

    target, draft = Decoder(512, 8, 6).eval(), Decoder(256, 4, 2).eval()
    gen = torch.Generator().manual_seed(44 + seed)
    total = 0.0
    with torch.no_grad():
        tokens = torch.randint(0, vocab, (batch, prompt_len), generator=gen)
        target_caches: list[list[torch.Tensor]] = [[] for _ in target.blocks]
        draft_caches: list[list[torch.Tensor]] = [[] for _ in draft.blocks]
        draft(tokens, 0, draft_caches, True)
        tokens = torch.cat([tokens, target(tokens, 0, target_caches, True).argmax(-1)], 1)
        for _ in range(steps):
            length = tokens.shape[1]  # both caches hold fewer positions than this: the rest is pending
            seen = draft_caches[0][0].shape[2]
            proposal = tokens[:, seen:]
            drafts = []
            for i in range(k):
                proposal = draft(proposal, seen, draft_caches, True).argmax(-1)
                seen = length + i
                drafts.append(proposal)
            drafted = torch.cat(drafts, 1)  # (B, k)
            logits = target(torch.cat([tokens[:, -1:], drafted], 1), length - 1, target_caches, False)
            accepted = int((torch.rand(k, generator=gen) < 0.7).int().cumprod(0).sum())
            tokens = torch.cat([tokens, drafted[:, :accepted], logits[:, accepted].argmax(-1, keepdim=True)], 1)
            for caches in (target_caches, draft_caches):  # keep only the positions still valid
                for cache in caches:
                    keep = min(cache[0].shape[2], length + accepted)
                    cache[:] = [cache[0][:, :, :keep], cache[1][:, :, :keep]]
            total += float(logits.max(-1).values.sum())
    return total

@_workload(default_steps=8)
def video_r2plus1d_train(*, steps: int, seed: int) -> float:
    """R(2+1)D video classifier, batch 8 clips of 3 x 16 frames x 56 x 56, 101 classes: every
    3D convolution factored into a spatial Conv3d (1, k, k) to M channels, BatchNorm3d and ReLU,
    then a temporal Conv3d (3, 1, 1), M = t*k*k*cin*cout // (k*k*cin + t*cout) as in the paper
    so the pair has a full 3D convolution's parameters; a stem of (1, 7, 7) stride (1, 2, 2) to 45
    channels and (3, 1, 1) to 32 (16 x 28 x 28), each with BatchNorm3d and ReLU; 4 stages of one
    residual block of two (2+1)D convolutions (32, 64, 128 and 256 channels, the last three with
    stride 2 in time and space, a strided 1x1x1 Conv3d and BatchNorm3d on their skip), so 16 x 28
    x 28 to 2 x 4 x 4; global average pooling, a linear 256-101, cross-entropy; fixed shapes, SGD
    with momentum 0.9 and weight decay, 8 steps."""
    torch.manual_seed(0)
    batch, frames, size, classes = 8, 16, 56, 101

    class Conv2Plus1d(nn.Sequential):
        def __init__(self, cin: int, cout: int, k: int, stride: int) -> None:
            mid = 3 * k * k * cin * cout // (k * k * cin + 3 * cout)
            super().__init__(nn.Conv3d(cin, mid, (1, k, k), (1, stride, stride), (0, k // 2, k // 2), bias=False),
                             nn.BatchNorm3d(mid), nn.ReLU(),
                             nn.Conv3d(mid, cout, (3, 1, 1), (stride, 1, 1), (1, 0, 0), bias=False))

    class Block(nn.Module):
        def __init__(self, cin: int, cout: int, stride: int) -> None:
            super().__init__()
            self.body = nn.Sequential(Conv2Plus1d(cin, cout, 3, stride), nn.BatchNorm3d(cout), nn.ReLU(),
                                      Conv2Plus1d(cout, cout, 3, 1), nn.BatchNorm3d(cout))
            self.skip = (nn.Identity() if stride == 1 and cin == cout else
                         nn.Sequential(nn.Conv3d(cin, cout, 1, stride, bias=False), nn.BatchNorm3d(cout)))

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            return nn.functional.relu(self.body(x) + self.skip(x))

    stem = nn.Sequential(nn.Conv3d(3, 45, (1, 7, 7), (1, 2, 2), (0, 3, 3), bias=False), nn.BatchNorm3d(45), nn.ReLU(),
                         nn.Conv3d(45, 32, (3, 1, 1), 1, (1, 0, 0), bias=False), nn.BatchNorm3d(32), nn.ReLU())
    model = nn.Sequential(stem, Block(32, 32, 1), Block(32, 64, 2), Block(64, 128, 2), Block(128, 256, 2),
                          nn.AdaptiveAvgPool3d(1), nn.Flatten(), nn.Linear(256, classes))
    opt = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9, weight_decay=1e-4)
    gen = torch.Generator().manual_seed(45 + seed)
    batch_fn = lambda: (torch.randn(batch, 3, frames, size, size, generator=gen),  # noqa: E731
                        torch.randint(0, classes, (batch,), generator=gen))
    return _train(model, batch_fn, steps, nn.functional.cross_entropy, opt)


@_workload(default_steps=8)
def vqvae_train(*, steps: int, seed: int) -> float:
    """VQ-VAE on 64x64 RGB images, batch 64: a conv encoder (4x4 stride-2 Conv2d 3-64 and 64-128
    with ReLU, 64x64 to 16x16, a 3x3 Conv2d 128-128, two residual blocks of ReLU, 3x3 Conv2d
    128-32, ReLU, 1x1 Conv2d 32-128, and a 1x1 Conv2d 128-64 to the 64-dim latents); a vector
    quantizer with a 512 x 64 codebook: the 64*16*16 = 16384 latents flattened, the full 16384 x
    512 matrix of squared distances to the codes (|z|^2 - 2 z @ E.T + |E|^2), argmin, the chosen
    codes gathered by embedding lookup, the codebook loss |sg(z) - q|^2 plus 0.25 times the
    commitment loss |z - sg(q)|^2, and the straight-through estimator z + sg(q - z); a conv
    decoder (3x3 Conv2d 64-128, two residual blocks, 4x4 stride-2 ConvTranspose2d 128-64 and
    64-3, 16x16 to 64x64) and an MSE reconstruction loss; fixed shapes, Adam, 8 steps."""
    torch.manual_seed(0)
    batch, size, codes, dim, hidden = 64, 64, 512, 64, 128

    class Residual(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.body = nn.Sequential(nn.ReLU(), nn.Conv2d(hidden, 32, 3, padding=1), nn.ReLU(),
                                      nn.Conv2d(32, hidden, 1))

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            return x + self.body(x)

    encoder = nn.Sequential(nn.Conv2d(3, 64, 4, 2, 1), nn.ReLU(), nn.Conv2d(64, hidden, 4, 2, 1), nn.ReLU(),
                            nn.Conv2d(hidden, hidden, 3, padding=1), Residual(), Residual(), nn.ReLU(),
                            nn.Conv2d(hidden, dim, 1))
    decoder = nn.Sequential(nn.Conv2d(dim, hidden, 3, padding=1), Residual(), Residual(), nn.ReLU(),
                            nn.ConvTranspose2d(hidden, 64, 4, 2, 1), nn.ReLU(), nn.ConvTranspose2d(64, 3, 4, 2, 1))
    codebook = nn.Embedding(codes, dim)
    nn.init.uniform_(codebook.weight, -1 / codes, 1 / codes)
    opt = torch.optim.Adam([*encoder.parameters(), *decoder.parameters(), *codebook.parameters()], lr=2e-4)
    gen = torch.Generator().manual_seed(46 + seed)
    total = 0.0
    for _ in range(steps):
        images = torch.rand(batch, 3, size, size, generator=gen) - 0.5
        opt.zero_grad(set_to_none=True)
        z = encoder(images)  # (B, dim, 16, 16)
        flat = z.permute(0, 2, 3, 1).reshape(-1, dim)  # (B*16*16, dim)
        distances = (flat.pow(2).sum(1, keepdim=True) - 2 * flat @ codebook.weight.t()
                     + codebook.weight.pow(2).sum(1))  # (B*16*16, codes)
        q = codebook(distances.argmin(1)).view(batch, 16, 16, dim).permute(0, 3, 1, 2)
        vq_loss = nn.functional.mse_loss(q, z.detach()) + 0.25 * nn.functional.mse_loss(z, q.detach())
        recon = decoder(z + (q - z).detach())  # straight-through
        loss = nn.functional.mse_loss(recon, images) + vq_loss
        loss.backward()
        opt.step()
        total += loss.item()
    return total


@_workload(default_steps=8)
def perceiver_train(*, steps: int, seed: int) -> float:
    """Perceiver-style classifier, batch 16 arrays of 2048 inputs x 64 features, each input
    concatenated with Fourier features of its position in [-1, 1] (sin and cos of 16 frequency
    bands and the position itself: 33, so 97 features), 100 classes: a learned latent array of
    128 x 256 cross-attends to the inputs (LayerNorm of the latents and of the inputs, queries
    256-256 from the latents, keys and values 97-256 from the 2048 inputs, one head, so a 16 x
    128 x 2048 attention matrix, an output projection, a residual and an MLP 256-1024-256 with
    GELU), then a latent transformer of 3 pre-norm self-attention layers (d_model 256, 8 heads,
    MLP 1024); then a second cross-attention to the inputs (its own weights) and the same latent
    transformer again (weights shared, as in the Perceiver); a final LayerNorm, the mean over the
    latents, a linear 256-100, cross-entropy; fixed shapes, AdamW, 8 steps."""
    torch.manual_seed(0)
    batch, inputs, features, bands, latents, dim, classes = 16, 2048, 64, 16, 128, 256, 100
    position = torch.linspace(-1, 1, inputs)[:, None]
    angles = position * torch.pi * torch.arange(1, bands + 1, dtype=torch.float32)
    fourier = torch.cat([angles.sin(), angles.cos(), position], 1)  # (inputs, 2*bands+1)
    in_dim = features + 2 * bands + 1

    class CrossAttend(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.ln_q, self.ln_kv = nn.LayerNorm(dim), nn.LayerNorm(in_dim)
            self.q, self.kv, self.out = nn.Linear(dim, dim), nn.Linear(in_dim, 2 * dim), nn.Linear(dim, dim)
            self.mlp = nn.Sequential(nn.LayerNorm(dim), nn.Linear(dim, 4 * dim), nn.GELU(), nn.Linear(4 * dim, dim))

        def forward(self, latent: torch.Tensor, x: torch.Tensor) -> torch.Tensor:
            key, val = self.kv(self.ln_kv(x)).chunk(2, -1)  # (B, inputs, dim) each
            att = (self.q(self.ln_q(latent)) @ key.transpose(1, 2) / dim ** 0.5).softmax(-1)  # (B, latents, inputs)
            latent = latent + self.out(att @ val)
            return latent + self.mlp(latent)

    class Perceiver(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.latent = nn.Parameter(torch.randn(latents, dim) * 0.02)
            self.cross = nn.ModuleList(CrossAttend() for _ in range(2))
            layer = nn.TransformerEncoderLayer(dim, 8, 4 * dim, dropout=0.0, activation="gelu", batch_first=True,
                                               norm_first=True)
            self.tower = nn.TransformerEncoder(layer, 3, enable_nested_tensor=False)
            self.ln, self.head = nn.LayerNorm(dim), nn.Linear(dim, classes)

        def forward(self, data: torch.Tensor) -> torch.Tensor:
            x = torch.cat([data, fourier.expand(data.shape[0], -1, -1)], -1)
            latent = self.latent.expand(data.shape[0], -1, -1)
            for cross in self.cross:
                latent = self.tower(cross(latent, x))
            return self.head(self.ln(latent).mean(1))

    model = Perceiver()
    opt = torch.optim.AdamW(model.parameters(), lr=5e-4, weight_decay=0.01)
    gen = torch.Generator().manual_seed(47 + seed)
    batch_fn = lambda: (torch.randn(batch, inputs, features, generator=gen),  # noqa: E731
                        torch.randint(0, classes, (batch,), generator=gen))
    return _train(model, batch_fn, steps, nn.functional.cross_entropy, opt)


@_workload(default_steps=8)
def neural_ode_train(*, steps: int, seed: int) -> float:
    """Neural ODE image classifier (ODE-Net of Chen et al.), batch 64 grey 28x28 images, 10
    classes: a downsampling stem (3x3 Conv2d 1-32, GroupNorm, ReLU, 4x4 stride-2 Conv2d 32-32 to
    14x14), then the state integrated from t=0 to 1 by a fixed-step RK4 solver written in Python
    (8 steps of 1/8, each evaluating the ODE function 4 times and combining the slopes, 32
    evaluations per forward), the ODE function a small conv net whose convolutions see t as an
    extra input channel (GroupNorm, ReLU, 3x3 Conv2d 33-32, GroupNorm, ReLU, 3x3 Conv2d 33-32,
    GroupNorm), backpropagation through every solver step (no adjoint); GroupNorm, ReLU, global
    average pooling, a linear 32-10, cross-entropy; fixed shapes, Adam, 8 steps."""
    torch.manual_seed(0)
    batch, channels, solver_steps = 64, 32, 8

    class ConcatConv(nn.Conv2d):
        def forward(self, x: torch.Tensor, t: float) -> torch.Tensor:  # type: ignore[override]
            return super().forward(torch.cat([torch.full_like(x[:, :1], t), x], 1))

    class ODEFunc(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.norm1, self.norm2, self.norm3 = (nn.GroupNorm(8, channels) for _ in range(3))
            self.conv1, self.conv2 = (ConcatConv(channels + 1, channels, 3, padding=1) for _ in range(2))

        def forward(self, t: float, x: torch.Tensor) -> torch.Tensor:
            x = self.conv1(torch.relu(self.norm1(x)), t)
            return self.norm3(self.conv2(torch.relu(self.norm2(x)), t))

    class ODENet(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.stem = nn.Sequential(nn.Conv2d(1, channels, 3, padding=1), nn.GroupNorm(8, channels), nn.ReLU(),
                                      nn.Conv2d(channels, channels, 4, 2, 1))
            self.func = ODEFunc()
            self.head = nn.Sequential(nn.GroupNorm(8, channels), nn.ReLU(), nn.AdaptiveAvgPool2d(1), nn.Flatten(),
                                      nn.Linear(channels, 10))

        def forward(self, images: torch.Tensor) -> torch.Tensor:
            x, h = self.stem(images), 1 / solver_steps
            for i in range(solver_steps):  # classic RK4
                t = i * h
                k1 = self.func(t, x)
                k2 = self.func(t + h / 2, x + h / 2 * k1)
                k3 = self.func(t + h / 2, x + h / 2 * k2)
                k4 = self.func(t + h, x + h * k3)
                x = x + h / 6 * (k1 + 2 * k2 + 2 * k3 + k4)
            return self.head(x)

    model = ODENet()
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    gen = torch.Generator().manual_seed(48 + seed)
    batch_fn = lambda: (torch.rand(batch, 1, 28, 28, generator=gen),  # noqa: E731
                        torch.randint(0, 10, (batch,), generator=gen))
    return _train(model, batch_fn, steps, nn.functional.cross_entropy, opt)


@_workload(default_steps=8)
def pixelcnn_train(*, steps: int, seed: int) -> float:
    """PixelCNN on grey 28x28 images of 256 levels, batch 32: a 7x7 masked Conv2d of mask type A
    (each pixel sees only the pixels above and to its left) 1-128, then 6 residual blocks (ReLU,
    1x1 Conv2d 128-64, ReLU, a 3x3 masked Conv2d of mask type B (the pixel itself too) 64-64,
    ReLU, 1x1 Conv2d 64-128, a residual), ReLU, two 1x1 Conv2d 128-128 and 128-256 with a ReLU
    between, so 256-way logits per pixel (32 x 256 x 28 x 28), cross-entropy against the pixels'
    levels; each masked Conv2d multiplies its weight by its mask in every forward; the images'
    levels drawn from the data generator, fixed shapes, Adam, 8 steps."""
    torch.manual_seed(0)
    batch, size, levels, hidden = 32, 28, 256, 128

    class MaskedConv(nn.Conv2d):
        def __init__(self, cin: int, cout: int, k: int, kind: str) -> None:
            super().__init__(cin, cout, k, padding=k // 2)
            mask = torch.ones(k, k)
            mask[k // 2, k // 2 + (kind == "B"):] = 0
            mask[k // 2 + 1:] = 0
            self.register_buffer("mask", mask)

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            return self._conv_forward(x, self.weight * self.mask, self.bias)

    class Residual(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.body = nn.Sequential(nn.ReLU(), nn.Conv2d(hidden, hidden // 2, 1), nn.ReLU(),
                                      MaskedConv(hidden // 2, hidden // 2, 3, "B"), nn.ReLU(),
                                      nn.Conv2d(hidden // 2, hidden, 1))

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            return x + self.body(x)

    model = nn.Sequential(MaskedConv(1, hidden, 7, "A"), *(Residual() for _ in range(6)), nn.ReLU(),
                          nn.Conv2d(hidden, hidden, 1), nn.ReLU(), nn.Conv2d(hidden, levels, 1))
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    gen = torch.Generator().manual_seed(49 + seed)

    def batch_fn() -> tuple[torch.Tensor, torch.Tensor]:
        pixels = torch.randint(0, levels, (batch, size, size), generator=gen)
        return (pixels[:, None].float() / (levels - 1), pixels)

    return _train(model, batch_fn, steps, nn.functional.cross_entropy, opt)


@_workload(default_steps=10)
def transe_train(*, steps: int, seed: int) -> float:
    """TransE knowledge-graph embedding with negative sampling: an entity table of 200000 x 128
    and a relation table of 1000 x 128 (dense nn.Embedding, sparse=False, so the entity table's
    gradient, Adam's two moments and its step's temporaries are all 200000 x 128); each step a
    batch of 2048 positive (head, relation, tail) triples drawn from the data generator and k=16
    corrupted copies of each (32768 negatives; the head or the tail, drawn per negative, replaced
    by an entity drawn from the generator); entity embeddings L2-normalized on lookup, the L1
    distance |h + r - t| of every triple, the margin ranking loss (margin 1) of each positive
    against its 16 negatives; fixed shapes, Adam, 10 steps."""
    torch.manual_seed(0)
    entities, relations, dim, batch, k = 200_000, 1000, 128, 2048, 16
    ent, rel = nn.Embedding(entities, dim), nn.Embedding(relations, dim)
    nn.init.uniform_(ent.weight, -6 / dim ** 0.5, 6 / dim ** 0.5)
    nn.init.uniform_(rel.weight, -6 / dim ** 0.5, 6 / dim ** 0.5)
    opt = torch.optim.Adam([*ent.parameters(), *rel.parameters()], lr=1e-3)
    gen = torch.Generator().manual_seed(50 + seed)

    def distance(head: torch.Tensor, relation: torch.Tensor, tail: torch.Tensor) -> torch.Tensor:
        h, t = nn.functional.normalize(ent(head), dim=-1), nn.functional.normalize(ent(tail), dim=-1)
        return (h + rel(relation) - t).abs().sum(-1)

    total = 0.0
    for _ in range(steps):
        head = torch.randint(0, entities, (batch,), generator=gen)
        relation = torch.randint(0, relations, (batch,), generator=gen)
        tail = torch.randint(0, entities, (batch,), generator=gen)
        corrupt = torch.randint(0, entities, (batch, k), generator=gen)
        corrupt_head = torch.rand(batch, k, generator=gen) < 0.5
        neg_head = torch.where(corrupt_head, corrupt, head[:, None])
        neg_tail = torch.where(corrupt_head, tail[:, None], corrupt)
        opt.zero_grad(set_to_none=True)
        positive = distance(head, relation, tail)  # (batch,)
        negative = distance(neg_head, relation[:, None].expand(batch, k), neg_tail)  # (batch, k)
        loss = nn.functional.margin_ranking_loss(negative, positive[:, None].expand(batch, k),
                                                 torch.ones(batch, k), margin=1.0)
        loss.backward()
        opt.step()
        total += loss.item()
    return total


@_workload(default_steps=8)
def wgan_gp_train(*, steps: int, seed: int) -> float:
    """WGAN-GP on 32x32 RGB images, batch 64: a generator (a linear 128-256*4*4, BatchNorm2d and
    ReLU, three 4x4 stride-2 ConvTranspose2d 256-128-64-32 with BatchNorm2d and ReLU, 4x4 to
    32x32, a 3x3 Conv2d 32-3 and tanh) and a critic without normalization (3x3 Conv2d 3-64, then
    4x4 stride-2 Conv2d 64-128-256-512 with LeakyReLU 0.2, 32x32 to 4x4, a linear 512*4*4-1).
    Each step 3 critic updates, each on a fresh real batch and generated images made under
    no_grad: the Wasserstein loss D(fake) - D(real) plus 10 times the gradient penalty
    (|grad_x D(x)| - 1)^2 at random interpolates x of real and fake, the gradient taken by
    torch.autograd.grad with create_graph=True so the critic's backward runs through that
    gradient's graph (double backward); then one generator update on -D(G(z)). Fixed shapes,
    Adam (lr 1e-4, betas 0 and 0.9) for each, 8 steps."""
    torch.manual_seed(0)
    batch, latent, n_critic = 64, 128, 3

    def up(cin: int, cout: int) -> list[nn.Module]:
        return [nn.ConvTranspose2d(cin, cout, 4, 2, 1, bias=False), nn.BatchNorm2d(cout), nn.ReLU()]

    g = nn.Sequential(nn.Linear(latent, 256 * 16), nn.Unflatten(1, (256, 4, 4)), nn.BatchNorm2d(256), nn.ReLU(),
                      *up(256, 128), *up(128, 64), *up(64, 32), nn.Conv2d(32, 3, 3, padding=1), nn.Tanh())
    d = nn.Sequential(nn.Conv2d(3, 64, 3, padding=1), nn.LeakyReLU(0.2),
                      nn.Conv2d(64, 128, 4, 2, 1), nn.LeakyReLU(0.2), nn.Conv2d(128, 256, 4, 2, 1), nn.LeakyReLU(0.2),
                      nn.Conv2d(256, 512, 4, 2, 1), nn.LeakyReLU(0.2), nn.Flatten(), nn.Linear(512 * 16, 1))
    opt_g = torch.optim.Adam(g.parameters(), lr=1e-4, betas=(0.0, 0.9))
    opt_d = torch.optim.Adam(d.parameters(), lr=1e-4, betas=(0.0, 0.9))
    gen = torch.Generator().manual_seed(51 + seed)
    total = 0.0
    for _ in range(steps):
        for _ in range(n_critic):
            real = torch.rand(batch, 3, 32, 32, generator=gen) * 2 - 1
            with torch.no_grad():
                fake = g(torch.randn(batch, latent, generator=gen))
            alpha = torch.rand(batch, 1, 1, 1, generator=gen)
            mixed = (alpha * real + (1 - alpha) * fake).requires_grad_(True)
            opt_d.zero_grad(set_to_none=True)
            grad, = torch.autograd.grad(d(mixed).sum(), mixed, create_graph=True)
            penalty = (grad.flatten(1).norm(dim=1) - 1).pow(2).mean()
            loss_d = d(fake).mean() - d(real).mean() + 10 * penalty
            loss_d.backward()
            opt_d.step()
        opt_g.zero_grad(set_to_none=True)
        loss_g = -d(g(torch.randn(batch, latent, generator=gen))).mean()
        loss_g.backward()
        opt_g.step()
        total += loss_d.item() + loss_g.item()
    return total


@_workload(default_steps=8)
def maml_train(*, steps: int, seed: int) -> float:
    """Second-order MAML, 5-way 1-shot image classification on 84x84 RGB images (MiniImageNet
    shapes): a conv net of 4 blocks (3x3 Conv2d 3-32-32-32-32, batch-statistics BatchNorm with
    learned affine, ReLU, 2x2 max-pool; 84 to 5), a linear 32*5*5-5, run functionally with
    torch.func.functional_call on a dict of fast weights. Each meta-step a meta-batch of 2 tasks,
    each of 5 support images (1 per class) and 75 query images (15 per class) drawn from the data
    generator; per task an inner SGD step (lr 0.01) on the support loss, its gradient taken by
    torch.autograd.grad with create_graph=True so the fast weights (new tensors, w - lr * g) keep
    their graph; the query loss under the adapted weights, summed over the tasks (both tasks'
    graphs alive until the outer backward), then one backward through the inner step (second
    order) and Adam on the initial weights. Fixed shapes, 8 meta-steps."""
    torch.manual_seed(0)
    ways, shots, queries, tasks, inner_steps, size, width = 5, 1, 15, 2, 1, 84, 32

    def block(cin: int) -> list[nn.Module]:
        return [nn.Conv2d(cin, width, 3, padding=1), nn.BatchNorm2d(width, track_running_stats=False), nn.ReLU(),
                nn.MaxPool2d(2)]

    model = nn.Sequential(*block(3), *block(width), *block(width), *block(width), nn.Flatten(),
                          nn.Linear(width * 5 * 5, ways))
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    gen = torch.Generator().manual_seed(52 + seed)
    labels = lambda n: torch.arange(ways).repeat_interleave(n)  # noqa: E731
    total = 0.0
    for _ in range(steps):
        opt.zero_grad(set_to_none=True)
        meta_loss = torch.zeros(())
        for _ in range(tasks):
            support = torch.randn(ways * shots, 3, size, size, generator=gen)
            query = torch.randn(ways * queries, 3, size, size, generator=gen)
            fast = dict(model.named_parameters())
            for _ in range(inner_steps):
                loss = nn.functional.cross_entropy(torch.func.functional_call(model, fast, (support,)), labels(shots))
                grads = torch.autograd.grad(loss, list(fast.values()), create_graph=True)
                fast = {name: w - 0.01 * gw for (name, w), gw in zip(fast.items(), grads)}
            meta_loss = meta_loss + nn.functional.cross_entropy(torch.func.functional_call(model, fast, (query,)),
                                                                labels(queries))
        (meta_loss / tasks).backward()
        opt.step()
        total += meta_loss.item() / tasks
    return total


@_workload(default_steps=8)
def realnvp_train(*, steps: int, seed: int) -> float:
    """RealNVP normalizing flow on 32x32 RGB images, batch 32, trained by maximum likelihood: 8
    affine coupling layers alternating a checkerboard mask and its complement; each coupling's
    scale and shift net sees the masked image (3x3 Conv2d 3-64, ReLU, two residual blocks of 3x3
    Conv2d 64-64 with ReLU, 3x3 Conv2d 64-6 split into log-scale and shift, the log-scale a
    learned per-channel factor times tanh), both multiplied by the other half's mask, y = x *
    exp(s) + t, and the log-determinant sum(s) accumulated over the couplings; the loss the
    negative log-likelihood under a standard normal base (0.5 z^2 summed per image, minus the
    log-determinant), in bits per dimension. The images dequantized uniform noise drawn from the
    data generator; fixed shapes, Adam, 8 steps."""
    torch.manual_seed(0)
    batch, size, hidden, couplings = 32, 32, 64, 8
    checker = ((torch.arange(size)[:, None] + torch.arange(size)) % 2).float()[None, None]

    class Residual(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.body = nn.Sequential(nn.ReLU(), nn.Conv2d(hidden, hidden, 3, padding=1), nn.ReLU(),
                                      nn.Conv2d(hidden, hidden, 3, padding=1))

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            return x + self.body(x)

    class Coupling(nn.Module):
        def __init__(self, mask: torch.Tensor) -> None:
            super().__init__()
            self.register_buffer("mask", mask)
            self.net = nn.Sequential(nn.Conv2d(3, hidden, 3, padding=1), Residual(), Residual(), nn.ReLU(),
                                     nn.Conv2d(hidden, 6, 3, padding=1))
            nn.init.zeros_(self.net[-1].weight)
            nn.init.zeros_(self.net[-1].bias)
            self.scale = nn.Parameter(torch.ones(1, 3, 1, 1))

        def forward(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
            s, t = self.net(x * self.mask).chunk(2, 1)
            s, t = self.scale * torch.tanh(s) * (1 - self.mask), t * (1 - self.mask)
            return x * s.exp() + t, s.flatten(1).sum(1)

    flows = nn.ModuleList(Coupling(checker if i % 2 == 0 else 1 - checker) for i in range(couplings))
    opt = torch.optim.Adam(flows.parameters(), lr=1e-3)
    gen = torch.Generator().manual_seed(53 + seed)
    dims = 3 * size * size
    total = 0.0
    for _ in range(steps):
        pixels = torch.randint(0, 256, (batch, 3, size, size), generator=gen).float()
        x = (pixels + torch.rand(batch, 3, size, size, generator=gen)) / 256 - 0.5
        opt.zero_grad(set_to_none=True)
        log_det = torch.zeros(batch)
        for flow in flows:
            x, ld = flow(x)
            log_det = log_det + ld
        nll = 0.5 * x.pow(2).flatten(1).sum(1) + 0.5 * dims * torch.log(torch.tensor(2 * torch.pi)) - log_det
        loss = (nll / (dims * torch.log(torch.tensor(2.0)))).mean()
        loss.backward()
        opt.step()
        total += loss.item()
    return total


@_workload(default_steps=8)
def moco_train(*, steps: int, seed: int) -> float:
    """MoCo v2-style contrastive pretraining, batch 64 images of 32x32 RGB, two views each (the
    second the first plus noise and a horizontal flip, drawn from the data generator): a query
    encoder (a ResNet-style CNN: 3x3 Conv2d 3-64 with BatchNorm and ReLU, 3 stages of one
    residual block each, 64-128-256 channels, the last two stride 2, 32x32 to 8x8, global average
    pooling, an MLP head 256-512-128) trained by SGD, and a key encoder of the same shape that
    takes no gradient (run under no_grad) and is updated in place each step as a momentum average
    (0.999) of the query encoder's weights; a fixed queue of 65536 x 128 normalized keys (a plain
    tensor, 32 MiB) against which each query's InfoNCE logits are computed (64 x (1 + 65536),
    temperature 0.2, cross-entropy with the positive key at index 0), the step's keys then
    written into the queue in place at a moving pointer. Fixed shapes, SGD with momentum 0.9 and
    weight decay, 8 steps."""
    torch.manual_seed(0)
    batch, size, dim, queue_len = 64, 32, 128, 65536

    def encoder() -> nn.Sequential:
        return nn.Sequential(nn.Conv2d(3, 64, 3, 1, 1, bias=False), nn.BatchNorm2d(64), nn.ReLU(),
                             _ResidualBlock(64, 64, 1), _ResidualBlock(64, 128, 2), _ResidualBlock(128, 256, 2),
                             nn.AdaptiveAvgPool2d(1),
                             nn.Flatten(), nn.Linear(256, 512), nn.ReLU(), nn.Linear(512, dim))

    query_enc = encoder()
    key_enc = encoder()
    key_enc.load_state_dict(query_enc.state_dict())
    key_enc.requires_grad_(False)
    queue = nn.functional.normalize(torch.randn(queue_len, dim), dim=1)
    opt = torch.optim.SGD(query_enc.parameters(), lr=0.03, momentum=0.9, weight_decay=1e-4)
    gen = torch.Generator().manual_seed(54 + seed)
    targets = torch.zeros(batch, dtype=torch.long)
    ptr, total = 0, 0.0
    for _ in range(steps):
        images = torch.rand(batch, 3, size, size, generator=gen)
        view_q = images + 0.1 * torch.randn(batch, 3, size, size, generator=gen)
        view_k = (images + 0.1 * torch.randn(batch, 3, size, size, generator=gen)).flip(-1)
        opt.zero_grad(set_to_none=True)
        q = nn.functional.normalize(query_enc(view_q), dim=1)
        with torch.no_grad():
            for pk, pq in zip(key_enc.parameters(), query_enc.parameters()):
                pk.mul_(0.999).add_(pq.detach(), alpha=0.001)
            k = nn.functional.normalize(key_enc(view_k), dim=1)
        logits = torch.cat([(q * k).sum(1, keepdim=True), q @ queue.t()], 1) / 0.2
        loss = nn.functional.cross_entropy(logits, targets)
        loss.backward()
        opt.step()
        queue[ptr:ptr + batch] = k
        ptr = (ptr + batch) % queue_len
        total += loss.item()
    return total


@_workload(default_steps=16)
def textcnn_bucket_train(*, steps: int, seed: int) -> float:
    """Text CNN sentence classifier (Kim 2014) trained on length-bucketed batches under a token
    budget: each step's bucket length is drawn from the data generator among 32, 64, 128, 256 and
    512 tokens and its batch holds 16384 tokens (512 sentences of 32 down to 32 of 512), so the
    shapes change from step to step by design; an embedding of 30000 x 300, Conv1d 300-256 of
    widths 3, 4 and 5 with ReLU, max over time of each, concatenated (768), dropout 0.5, a linear
    768-20, cross-entropy; Adam, 16 steps."""
    torch.manual_seed(0)
    vocab, emb, filters, classes, budget = 30000, 300, 256, 20, 16384
    buckets = [32, 64, 128, 256, 512]

    class TextCNN(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.emb = nn.Embedding(vocab, emb)
            self.convs = nn.ModuleList(nn.Conv1d(emb, filters, k) for k in (3, 4, 5))
            self.drop, self.head = nn.Dropout(0.5), nn.Linear(3 * filters, classes)

        def forward(self, ids: torch.Tensor) -> torch.Tensor:
            x = self.emb(ids).transpose(1, 2)  # (B, emb, length)
            return self.head(self.drop(torch.cat([torch.relu(conv(x)).amax(-1) for conv in self.convs], 1)))

    model = TextCNN()
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    gen = torch.Generator().manual_seed(55 + seed)

    def batch_fn() -> tuple[torch.Tensor, torch.Tensor]:
        length = buckets[int(torch.randint(0, len(buckets), (1,), generator=gen))]
        n = budget // length
        return torch.randint(1, vocab, (n, length), generator=gen), torch.randint(0, classes, (n,), generator=gen)

    return _train(model, batch_fn, steps, nn.functional.cross_entropy, opt)


@_workload(default_steps=8)
def densenet_train(*, steps: int, seed: int) -> float:
    """DenseNet-BC image classifier, batch 32 images of 32x32 RGB, 100 classes: a 3x3 Conv2d stem
    3-64; 3 dense blocks of 6 layers each, growth rate 32, every layer (BatchNorm, ReLU, 1x1
    Conv2d to 128, BatchNorm, ReLU, 3x3 Conv2d 128-32) seeing the torch.cat of all earlier
    feature maps of its block, so each layer's input is a new, larger concatenation (64 to 224
    channels in the first block); transitions of compression 0.5 (BatchNorm, ReLU, 1x1 Conv2d,
    2x2 average pooling) between blocks, 32x32 to 8x8; BatchNorm, ReLU, global average pooling,
    a linear to 100, cross-entropy; fixed shapes, SGD with Nesterov momentum and weight decay, 8
    steps."""
    torch.manual_seed(0)
    batch, size, growth, layers, classes = 32, 32, 32, 6, 100

    class DenseLayer(nn.Module):
        def __init__(self, cin: int) -> None:
            super().__init__()
            self.body = nn.Sequential(nn.BatchNorm2d(cin), nn.ReLU(), nn.Conv2d(cin, 4 * growth, 1, bias=False),
                                      nn.BatchNorm2d(4 * growth), nn.ReLU(),
                                      nn.Conv2d(4 * growth, growth, 3, padding=1, bias=False))

        def forward(self, features: list[torch.Tensor]) -> torch.Tensor:
            return self.body(torch.cat(features, 1))

    class DenseBlock(nn.Module):
        def __init__(self, cin: int) -> None:
            super().__init__()
            self.layers = nn.ModuleList(DenseLayer(cin + i * growth) for i in range(layers))

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            features = [x]
            for layer in self.layers:
                features.append(layer(features))
            return torch.cat(features, 1)

    def transition(cin: int) -> nn.Sequential:
        return nn.Sequential(nn.BatchNorm2d(cin), nn.ReLU(), nn.Conv2d(cin, cin // 2, 1, bias=False), nn.AvgPool2d(2))

    channels, parts = 64, [nn.Conv2d(3, 64, 3, padding=1, bias=False)]
    for i in range(3):
        parts.append(DenseBlock(channels))
        channels += layers * growth
        if i < 2:
            parts.append(transition(channels))
            channels //= 2
    model = nn.Sequential(*parts, nn.BatchNorm2d(channels), nn.ReLU(), nn.AdaptiveAvgPool2d(1), nn.Flatten(),
                          nn.Linear(channels, classes))
    opt = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9, nesterov=True, weight_decay=1e-4)
    gen = torch.Generator().manual_seed(56 + seed)
    batch_fn = lambda: (torch.randn(batch, 3, size, size, generator=gen),  # noqa: E731
                        torch.randint(0, classes, (batch,), generator=gen))
    return _train(model, batch_fn, steps, nn.functional.cross_entropy, opt)


@_workload(default_steps=8)
def deq_train(*, steps: int, seed: int) -> float:
    """Deep equilibrium model (DEQ) image classifier, batch 32 images of 32x32 RGB, 10 classes: a
    stem (3x3 Conv2d 3-64, GroupNorm) gives the injection x, and the hidden state z (32 x 64 x
    32 x 32) is the fixed point z = f(z, x) of one residual cell, f(z, x) = GroupNorm(relu(z +
    GroupNorm(x + conv2(GroupNorm(relu(conv1(z))))))) with 3x3 Conv2d 64-64 (no bias) and
    GroupNorm of 8 groups; the fixed point found under torch.no_grad() by Anderson acceleration
    from z = 0 (memory 5, 24 evaluations of f: the last 5 iterates and their images kept in two
    32 x 5 x 65536 buffers overwritten in place, a 6 x 6 bordered least-squares system solved
    per image by torch.linalg.solve each iteration); then one step of f attached to the graph
    from the detached fixed point, so the backward runs through that one step only (the
    Jacobian-free one-step / phantom gradient, no implicit solve); GroupNorm, ReLU, global
    average pooling, a linear 64-10, cross-entropy; fixed shapes, Adam, 8 steps."""
    torch.manual_seed(0)
    batch, channels, size, memory, evaluations = 32, 64, 32, 5, 24

    class Cell(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.conv1 = nn.Conv2d(channels, channels, 3, padding=1, bias=False)
            self.conv2 = nn.Conv2d(channels, channels, 3, padding=1, bias=False)
            self.norm1, self.norm2, self.norm3 = (nn.GroupNorm(8, channels) for _ in range(3))

        def forward(self, z: torch.Tensor, x: torch.Tensor) -> torch.Tensor:
            y = self.norm1(torch.relu(self.conv1(z)))
            return self.norm3(torch.relu(z + self.norm2(x + self.conv2(y))))

    def anderson(f: Callable[[torch.Tensor], torch.Tensor], z0: torch.Tensor) -> torch.Tensor:
        b = z0.shape[0]
        xs, fs = torch.zeros(b, memory, z0[0].numel()), torch.zeros(b, memory, z0[0].numel())
        xs[:, 0], fs[:, 0] = z0.flatten(1), f(z0).flatten(1)
        xs[:, 1], fs[:, 1] = fs[:, 0], f(fs[:, 0].view_as(z0)).flatten(1)
        h = torch.zeros(b, memory + 1, memory + 1)
        h[:, 0, 1:] = h[:, 1:, 0] = 1
        y = torch.zeros(b, memory + 1, 1)
        y[:, 0] = 1
        for k in range(2, evaluations):
            n = min(k, memory)
            g = fs[:, :n] - xs[:, :n]
            h[:, 1:n + 1, 1:n + 1] = g @ g.transpose(1, 2) + 1e-4 * torch.eye(n)[None]
            alpha = torch.linalg.solve(h[:, :n + 1, :n + 1], y[:, :n + 1])[:, 1:n + 1, 0]
            xs[:, k % memory] = (alpha[:, None] @ fs[:, :n])[:, 0]
            fs[:, k % memory] = f(xs[:, k % memory].view_as(z0)).flatten(1)
        return fs[:, (evaluations - 1) % memory].view_as(z0)

    class DEQ(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.stem = nn.Sequential(nn.Conv2d(3, channels, 3, padding=1, bias=False), nn.GroupNorm(8, channels))
            self.cell = Cell()
            self.head = nn.Sequential(nn.GroupNorm(8, channels), nn.ReLU(), nn.AdaptiveAvgPool2d(1), nn.Flatten(),
                                      nn.Linear(channels, 10))

        def forward(self, images: torch.Tensor) -> torch.Tensor:
            x = self.stem(images)
            with torch.no_grad():
                z = anderson(lambda z: self.cell(z, x), torch.zeros_like(x))
            return self.head(self.cell(z, x))  # one attached step from the fixed point

    model = DEQ()
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    gen = torch.Generator().manual_seed(57 + seed)
    batch_fn = lambda: (torch.randn(batch, 3, size, size, generator=gen),  # noqa: E731
                        torch.randint(0, 10, (batch,), generator=gen))
    return _train(model, batch_fn, steps, nn.functional.cross_entropy, opt)


@_workload(default_steps=8)
def capsnet_train(*, steps: int, seed: int) -> float:
    """Capsule network with dynamic routing (Sabour et al. 2017) on grey 28x28 images, batch 64, 10
    classes: a 9x9 Conv2d 1-256 with ReLU (20x20), a primary-capsule 9x9 stride-2 Conv2d 256-256
    read as 32 x 6 x 6 = 1152 capsules of 8 dimensions and squashed; every primary capsule's
    prediction for every class capsule by a learned 1152 x 10 x 16 x 8 transform (einsum), so a
    64 x 1152 x 10 x 16 prediction tensor; 3 routing iterations over it (coupling coefficients the
    softmax over classes of the routing logits, class capsules the squashed coupling-weighted sum
    of the predictions, the logits raised by the predictions' agreement with them), the gradient
    taken through every iteration; the margin loss on the class capsules' lengths plus 0.0005 x a
    reconstruction loss (summed squared error) of a decoder 160-512-1024-784 (ReLU, sigmoid) fed
    the class capsules masked to the true class; the images and labels drawn from the data
    generator, fixed shapes, Adam, 8 steps."""
    torch.manual_seed(0)
    batch, classes, capsules, routing = 64, 10, 1152, 3

    def squash(s: torch.Tensor) -> torch.Tensor:
        norm2 = s.pow(2).sum(-1, keepdim=True)
        return norm2 / (1 + norm2) * s / (norm2 + 1e-8).sqrt()

    class CapsNet(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.conv = nn.Sequential(nn.Conv2d(1, 256, 9), nn.ReLU())
            self.primary = nn.Conv2d(256, 32 * 8, 9, stride=2)
            self.transform = nn.Parameter(0.01 * torch.randn(capsules, classes, 16, 8))
            self.decoder = nn.Sequential(nn.Linear(16 * classes, 512), nn.ReLU(), nn.Linear(512, 1024), nn.ReLU(),
                                         nn.Linear(1024, 784), nn.Sigmoid())

        def forward(self, images: torch.Tensor) -> torch.Tensor:
            b = images.shape[0]
            u = squash(self.primary(self.conv(images)).view(b, 32, 8, 6, 6).permute(0, 1, 3, 4, 2)
                       .reshape(b, capsules, 8))
            u_hat = torch.einsum("njdk,bnk->bnjd", self.transform, u)  # (b, 1152, 10, 16)
            logits = torch.zeros(b, capsules, classes)
            for i in range(routing):
                v = squash((logits.softmax(2)[..., None] * u_hat).sum(1))  # (b, 10, 16)
                if i < routing - 1:
                    logits = logits + (u_hat * v[:, None]).sum(-1)
            return v

    model = CapsNet()
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    gen = torch.Generator().manual_seed(58 + seed)
    total = 0.0
    for _ in range(steps):
        images = torch.rand(batch, 1, 28, 28, generator=gen)
        labels = torch.randint(0, classes, (batch,), generator=gen)
        opt.zero_grad(set_to_none=True)
        v = model(images)
        onehot = nn.functional.one_hot(labels, classes).float()
        lengths = v.norm(dim=-1)
        margin = (onehot * torch.relu(0.9 - lengths).pow(2)
                  + 0.5 * (1 - onehot) * torch.relu(lengths - 0.1).pow(2)).sum(1).mean()
        recon = model.decoder((v * onehot[..., None]).flatten(1))
        loss = margin + 0.0005 * (recon - images.flatten(1)).pow(2).sum(1).mean()
        loss.backward()
        opt.step()
        total += loss.item()
    return total


@_workload(default_steps=8)
def bilstm_crf_train(*, steps: int, seed: int) -> float:
    """BiLSTM-CRF sequence tagger (NER-style), batch 64 sentences padded to a fixed 64 tokens, 17
    tags: an embedding of 30000 x 300, a 2-layer bidirectional LSTM of 256 per direction over all
    64 positions (no packing), a linear 512-17 to emission scores, and a linear-chain CRF
    (transition, start and end scores) whose negative log-likelihood takes the partition function
    by the forward algorithm as a Python loop over the 63 later time steps (each a log-sum-exp
    over the previous tag of a 64 x 17 x 17 score tensor, kept where the sentence has not ended)
    minus the gold path's score; after each update the batch is decoded by Viterbi under
    torch.no_grad() (a max over the previous tag per time step, the backpointers of every step
    kept until the backtrace). The sentence lengths (16-64), tokens and tags drawn from the data
    generator; fixed shapes (the lengths only mask), Adam, 8 steps."""
    torch.manual_seed(0)
    vocab, emb, hidden, tags, batch, length = 30000, 300, 256, 17, 64, 64

    class Tagger(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.emb = nn.Embedding(vocab, emb)
            self.lstm = nn.LSTM(emb, hidden, num_layers=2, batch_first=True, bidirectional=True)
            self.emit = nn.Linear(2 * hidden, tags)
            self.trans = nn.Parameter(0.1 * torch.randn(tags, tags))  # trans[i, j]: tag i then tag j
            self.start, self.end = nn.Parameter(torch.zeros(tags)), nn.Parameter(torch.zeros(tags))

        def forward(self, ids: torch.Tensor) -> torch.Tensor:
            return self.emit(self.lstm(self.emb(ids))[0])  # (B, L, tags)

        def nll(self, em: torch.Tensor, gold: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
            alpha = self.start + em[:, 0]
            for t in range(1, em.shape[1]):
                step = torch.logsumexp(alpha[:, :, None] + self.trans + em[:, t, None], 1)
                alpha = torch.where(mask[:, t, None], step, alpha)
            log_z = torch.logsumexp(alpha + self.end, 1)
            last = gold.gather(1, mask.sum(1, keepdim=True) - 1)[:, 0]
            score = (self.start[gold[:, 0]] + (em.gather(2, gold[..., None])[..., 0] * mask).sum(1)
                     + (self.trans[gold[:, :-1], gold[:, 1:]] * mask[:, 1:]).sum(1) + self.end[last])
            return (log_z - score).mean()

        @torch.no_grad()
        def viterbi(self, em: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
            best, pointers = self.start + em[:, 0], []
            for t in range(1, em.shape[1]):
                value, pointer = (best[:, :, None] + self.trans).max(1)
                best = torch.where(mask[:, t, None], value + em[:, t], best)
                pointers.append(pointer)
            tag = (best + self.end).argmax(1)
            path = [tag]
            for t in range(em.shape[1] - 1, 0, -1):
                tag = torch.where(mask[:, t], pointers[t - 1].gather(1, tag[:, None])[:, 0], tag)
                path.append(tag)
            return torch.stack(path[::-1], 1)

    model = Tagger()
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    gen = torch.Generator().manual_seed(59 + seed)
    positions = torch.arange(length)
    total = 0.0
    for _ in range(steps):
        lengths = torch.randint(16, length + 1, (batch,), generator=gen)
        mask = positions < lengths[:, None]
        ids = torch.randint(1, vocab, (batch, length), generator=gen) * mask
        gold = torch.randint(0, tags, (batch, length), generator=gen) * mask
        opt.zero_grad(set_to_none=True)
        em = model(ids)
        loss = model.nll(em, gold, mask)
        loss.backward()
        opt.step()
        accuracy = ((model.viterbi(em.detach(), mask) == gold) & mask).sum() / mask.sum()
        total += loss.item() + accuracy.item()
    return total


@_workload(default_steps=8)
def mlp_mixer_train(*, steps: int, seed: int) -> float:
    """MLP-Mixer image classifier trained with the Mixer paper's recipe, batch 16 images of
    224x224 RGB, 100 classes: a 16x16 stride-16 Conv2d patch embedding 3-256 (196 tokens), 8 mixer
    layers (a token-mixing MLP 196-128-196 and a channel-mixing MLP 256-1024-256, GELU, pre-norm
    LayerNorm and residuals, each residual branch dropped per sample by stochastic depth rising
    from 0 to 0.1 over the layers), LayerNorm, global average pooling, a linear 256-100; mixup of
    each batch with a permutation of itself (the weight and the permutation drawn from the data
    generator) and cross-entropy with label smoothing 0.1 against both label sets; the gradient's
    global norm clipped to 1, then AdamW (weight decay 0.05) with per-parameter state; fixed
    shapes, 8 steps."""
    torch.manual_seed(0)
    batch, size, patch, dim, layers, classes = 16, 224, 16, 256, 8, 100
    tokens = (size // patch) ** 2

    class Mixer(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.embed = nn.Conv2d(3, dim, patch, stride=patch)
            self.layers = nn.Sequential(*(_MixerLayer(tokens, dim, 128, 1024, drop_path=0.1 * i / (layers - 1))
                                          for i in range(layers)))
            self.norm, self.head = nn.LayerNorm(dim), nn.Linear(dim, classes)

        def forward(self, images: torch.Tensor) -> torch.Tensor:
            x = self.embed(images).flatten(2).transpose(1, 2)  # (B, 196 tokens, dim)
            return self.head(self.norm(self.layers(x)).mean(1))

    model = Mixer()
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3, weight_decay=0.05)
    gen = torch.Generator().manual_seed(60 + seed)
    total = 0.0
    for _ in range(steps):
        images = torch.randn(batch, 3, size, size, generator=gen)
        labels = torch.randint(0, classes, (batch,), generator=gen)
        lam, perm = float(torch.rand((), generator=gen)), torch.randperm(batch, generator=gen)
        opt.zero_grad(set_to_none=True)
        out = model(lam * images + (1 - lam) * images[perm])
        loss = (lam * nn.functional.cross_entropy(out, labels, label_smoothing=0.1)
                + (1 - lam) * nn.functional.cross_entropy(out, labels[perm], label_smoothing=0.1))
        loss.backward()
        nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        total += loss.item()
    return total


@_workload(default_steps=8)
def hypernet_train(*, steps: int, seed: int) -> float:
    """Task-conditioned chunked hypernetwork (von Oswald et al. 2020) generating the weights of a
    target MLP 512-1024-1024-10 (1585162 weights) every step: a table of 100 task embeddings and
    97 learned chunk embeddings (64 each) go through a shared MLP 128-256-256-16384 (ReLU), each
    task's 97 chunks of 16384 concatenated and cut into the target's weights and biases (views of
    one 97 x 16384 output per task); each step a meta-batch of 12 tasks drawn from the data
    generator, all 12 tasks' weights generated in one pass (12 x 97 x 16384), then for each task
    the target run with torch.func.functional_call on those weights (the target module itself on
    the meta device, so it holds no weights) over that task's batch of 256 inputs of 512
    features, cross-entropy summed over the tasks (every task's generated weights and target
    activations alive until the backward); gradients reach only the hypernetwork and the
    embeddings; fixed shapes, Adam, 8 steps."""
    torch.manual_seed(0)
    n_tasks, meta_batch, emb, chunk, per_task = 100, 12, 64, 16384, 256
    with torch.device("meta"):
        target = nn.Sequential(nn.Linear(512, 1024), nn.ReLU(), nn.Linear(1024, 1024), nn.ReLU(), nn.Linear(1024, 10))
    shapes = {name: p.shape for name, p in target.named_parameters()}
    sizes = [s.numel() for s in shapes.values()]
    chunks = -(-sum(sizes) // chunk)

    class HyperNet(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.tasks = nn.Embedding(n_tasks, emb)
            self.chunks = nn.Parameter(torch.randn(chunks, emb))
            self.mlp = nn.Sequential(nn.Linear(2 * emb, 256), nn.ReLU(), nn.Linear(256, 256), nn.ReLU(),
                                     nn.Linear(256, chunk))
            nn.init.normal_(self.mlp[-1].weight, std=0.02 / emb ** 0.5)
            nn.init.zeros_(self.mlp[-1].bias)

        def forward(self, task_ids: torch.Tensor) -> list[dict[str, torch.Tensor]]:
            t = self.tasks(task_ids)[:, None].expand(-1, chunks, -1)
            flat = self.mlp(torch.cat([t, self.chunks.expand(len(task_ids), -1, -1)], -1)).flatten(1)
            return [{name: w.view(s) for (name, s), w in zip(shapes.items(), row[:sum(sizes)].split(sizes))}
                    for row in flat]

    hyper = HyperNet()
    opt = torch.optim.Adam(hyper.parameters(), lr=1e-4)
    gen = torch.Generator().manual_seed(61 + seed)
    total = 0.0
    for _ in range(steps):
        task_ids = torch.randint(0, n_tasks, (meta_batch,), generator=gen)
        xs = torch.randn(meta_batch, per_task, 512, generator=gen)
        ys = torch.randint(0, 10, (meta_batch, per_task), generator=gen)
        opt.zero_grad(set_to_none=True)
        loss = sum(nn.functional.cross_entropy(torch.func.functional_call(target, weights, (x,)), y)
                   for weights, x, y in zip(hyper(task_ids), xs, ys))
        loss.backward()
        opt.step()
        total += loss.item()
    return total


@_workload(default_steps=12)
def triplet_mining_train(*, steps: int, seed: int) -> float:
    """Metric learning with a triplet loss and online hard-negative mining, batch 128 images of
    32x32 RGB in P x K form (32 identities of 1000 drawn per step, 4 images each, an identity's
    images its fixed prototype plus noise, all from the data generator): an embedding CNN (3x3
    Conv2d 3-32 with BatchNorm and ReLU, residual blocks 32-64-128-256 each of stride 2, 32x32
    to 4x4, global average pooling, a linear 256-128, L2-normalized); the 128 x 128 distance
    matrix, and under no_grad every (anchor, positive, negative) triplet of the batch whose
    negative violates the margin (d(a, n) < d(a, p) + 0.2: the hard and semi-hard negatives)
    taken by nonzero of a 128 x 128 x 128 mask; the mined triplets' embeddings gathered (3
    tensors of N x 128) and the mean hinge loss over them, N following the data and the model,
    so the loss tensors' shapes change every step by design; SGD with momentum, 12 steps."""
    torch.manual_seed(0)
    identities, per_id, size, dim, margin, pool = 32, 4, 32, 128, 0.2, 1000
    model = nn.Sequential(nn.Conv2d(3, 32, 3, 1, 1, bias=False), nn.BatchNorm2d(32), nn.ReLU(),
                          _ResidualBlock(32, 64, 2), _ResidualBlock(64, 128, 2), _ResidualBlock(128, 256, 2),
                          nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(256, dim))
    opt = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
    gen = torch.Generator().manual_seed(62 + seed)
    prototypes = torch.randn(pool, 3, size, size, generator=gen)
    total = 0.0
    for _ in range(steps):
        ids = torch.randperm(pool, generator=gen)[:identities].repeat_interleave(per_id)
        images = prototypes[ids] + 0.5 * torch.randn(len(ids), 3, size, size, generator=gen)
        opt.zero_grad(set_to_none=True)
        e = nn.functional.normalize(model(images), dim=1)
        with torch.no_grad():
            d = torch.cdist(e, e)
            same = ids[:, None] == ids[None]
            positive = same & ~torch.eye(len(ids), dtype=torch.bool)
            a, p, n = (positive[:, :, None] & ~same[:, None, :]
                       & (d[:, None, :] < d[:, :, None] + margin)).nonzero(as_tuple=True)
        loss = torch.relu((e[a] - e[p]).pow(2).sum(1) - (e[a] - e[n]).pow(2).sum(1) + margin).mean() \
            if len(a) else e.sum() * 0
        loss.backward()
        opt.step()
        total += loss.item()
    return total


@_workload(default_steps=8)
def style_transfer_lbfgs(*, steps: int, seed: int) -> float:
    """Neural style transfer (Gatys et al.) of one 3 x 320 x 320 image optimised by L-BFGS: a
    frozen VGG-style feature extractor (3x3 Conv2d 3-64, 64-64, average pooling, 64-128,
    128-128, average pooling, 128-256, ReLU after each conv; requires_grad off, so the backward
    reaches only the image), the style targets the 64 x 64, 128 x 128 and 256 x 256 Gram matrices
    of relu1_1, relu2_1 and relu3_1 of a style image (a striped texture, one sinusoid per channel,
    its frequencies and phase drawn from the data generator) and the content target relu2_2 of a
    content image (uniform noise from the data generator), both run once under no_grad before
    the first step, each loss taken relative to its target's mean square (style weight 1000 per
    layer, content weight 100); the image, started from the content image and kept in [0, 1] as
    the sigmoid of the optimised tensor (not clamped between steps, which made L-BFGS skip
    history updates depending on the data), optimised by torch.optim.LBFGS (lr 1, history_size 10,
    max_iter 5, no line search, tolerances 0, so every step is exactly 5 evaluations of a
    closure that runs the extractor, the three Gram matrices, the weighted style and content
    losses and the backward), its history of 10 pairs of flat direction and step vectors kept
    across steps, the oldest pair dropped once it is full; fixed shapes, 8 steps."""
    torch.manual_seed(0)
    size, style_weight, content_weight = 320, 1000.0, 100.0

    class Features(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.conv = nn.ModuleList([nn.Conv2d(3, 64, 3, padding=1), nn.Conv2d(64, 64, 3, padding=1),
                                       nn.Conv2d(64, 128, 3, padding=1), nn.Conv2d(128, 128, 3, padding=1),
                                       nn.Conv2d(128, 256, 3, padding=1)])

        def forward(self, x: torch.Tensor) -> dict[str, torch.Tensor]:
            out = {}
            x = out["relu1_1"] = torch.relu(self.conv[0](x))
            x = nn.functional.avg_pool2d(torch.relu(self.conv[1](x)), 2)
            x = out["relu2_1"] = torch.relu(self.conv[2](x))
            x = out["relu2_2"] = torch.relu(self.conv[3](x))
            out["relu3_1"] = torch.relu(self.conv[4](nn.functional.avg_pool2d(x, 2)))
            return out

    def gram(f: torch.Tensor) -> torch.Tensor:
        b, c, h, w = f.shape
        f = f.view(b, c, h * w)
        return f @ f.transpose(1, 2) / (h * w)

    features = Features().requires_grad_(False)
    gen = torch.Generator().manual_seed(63 + seed)
    content = torch.rand(1, 3, size, size, generator=gen)
    coords = torch.linspace(0, 1, size)
    freqs, phases = 4 + 28 * torch.rand(2, 3, generator=gen), 6.3 * torch.rand(3, generator=gen)
    style = 0.5 + 0.5 * torch.sin(freqs[0, :, None, None] * coords[:, None] + freqs[1, :, None, None] * coords
                                  + phases[:, None, None])[None]  # a striped texture, one wave per channel
    style_layers = ("relu1_1", "relu2_1", "relu3_1")
    with torch.no_grad():
        targets = features(style)
        style_targets = {k: gram(targets[k]) for k in style_layers}
        content_target = features(content)["relu2_2"]
        del targets
    scales = {k: style_weight / float(t.square().mean()) for k, t in style_targets.items()}  # relative to the target
    scales["content"] = content_weight / float(content_target.square().mean())
    image = torch.logit(content.clamp(0.01, 0.99)).requires_grad_(True)  # the image is its sigmoid
    opt = torch.optim.LBFGS([image], lr=1, max_iter=5, history_size=10, tolerance_grad=0.0, tolerance_change=0.0)

    def closure() -> torch.Tensor:
        opt.zero_grad(set_to_none=True)
        out = features(torch.sigmoid(image))
        loss = scales["content"] * nn.functional.mse_loss(out["relu2_2"], content_target)
        for k in style_layers:
            loss = loss + scales[k] * nn.functional.mse_loss(gram(out[k]), style_targets[k])
        loss.backward()
        return loss

    total = 0.0
    for _ in range(steps):
        total += opt.step(closure).item()
    return total


@_workload(default_steps=8)
def qat_train(*, steps: int, seed: int) -> float:
    """Quantization-aware training (torch.ao.quantization, eager mode) of a small CNN on 64x64
    RGB images, batch 64, 10 classes: QuantStub, six 3x3 Conv2d-BatchNorm2d-ReLU blocks
    32-32-64-64-128-128 (strides 1, 1, 2, 1, 2, 2: 64x64 to 8x8) fused by fuse_modules_qat into QAT
    ConvBnReLU2d modules (every forward the conv weight scaled by the BatchNorm's gamma over its
    running std and fake-quantized, the conv output scaled back and normalised by the batch
    statistics), global average pooling, a linear 128-10, DeQuantStub; prepare_qat with a
    QConfig of FakeQuantize observers (activations: per-tensor affine quint8 by a
    MovingAverageMinMaxObserver; weights: per-channel symmetric qint8 by a
    MovingAveragePerChannelMinMaxObserver), so every activation and weight goes through a fake
    quantize (a quantize-dequantize copy and its mask for the straight-through backward) and an
    observer update; the observers frozen after 5 steps (disable_observer), the BatchNorm
    statistics from step 6 on (freeze_bn_stats); cross-entropy, SGD with momentum 0.9 and
    weight decay, fixed shapes, 8 steps."""
    from torch.ao import quantization as tq
    from torch.ao.nn.intrinsic import qat as nniqat

    torch.manual_seed(0)
    batch, size, classes = 64, 64, 10
    plan = ((3, 32, 1), (32, 32, 1), (32, 64, 2), (64, 64, 1), (64, 128, 2), (128, 128, 2))

    class Net(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.quant, self.dequant = tq.QuantStub(), tq.DeQuantStub()
            self.blocks = nn.Sequential(*(nn.Sequential(nn.Conv2d(cin, cout, 3, stride, 1, bias=False),
                                                        nn.BatchNorm2d(cout), nn.ReLU())
                                          for cin, cout, stride in plan))
            self.pool, self.head = nn.AdaptiveAvgPool2d(1), nn.Linear(128, classes)

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            x = self.pool(self.blocks(self.quant(x))).flatten(1)
            return self.dequant(self.head(x))

    model = Net().train()
    tq.fuse_modules_qat(model, [[f"blocks.{i}.0", f"blocks.{i}.1", f"blocks.{i}.2"] for i in range(len(plan))],
                        inplace=True)
    model.qconfig = tq.QConfig(
        activation=tq.FakeQuantize.with_args(observer=tq.MovingAverageMinMaxObserver, quant_min=0, quant_max=255,
                                             dtype=torch.quint8, qscheme=torch.per_tensor_affine),
        weight=tq.FakeQuantize.with_args(observer=tq.MovingAveragePerChannelMinMaxObserver, quant_min=-128,
                                         quant_max=127, dtype=torch.qint8, qscheme=torch.per_channel_symmetric))
    tq.prepare_qat(model, inplace=True)
    opt = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9, weight_decay=1e-4)
    gen = torch.Generator().manual_seed(64 + seed)
    total = 0.0
    for step in range(steps):
        if step == 5:
            model.apply(tq.disable_observer)
        if step == 6:
            model.apply(nniqat.freeze_bn_stats)
        images = torch.randn(batch, 3, size, size, generator=gen)
        labels = torch.randint(0, classes, (batch,), generator=gen)
        opt.zero_grad(set_to_none=True)
        loss = nn.functional.cross_entropy(model(images), labels)
        loss.backward()
        opt.step()
        total += loss.item()
    return total


@_workload(default_steps=40)
def word2vec_sparse_train(*, steps: int, seed: int) -> float:
    """Skip-gram word2vec with negative sampling (Mikolov et al. 2013), vocabulary 200000, dimension
    128: an input and an output nn.Embedding(sparse=True) (97.7 MiB each), trained by
    torch.optim.SparseAdam (dense exp_avg and exp_avg_sq per table, created at the first step and
    updated only at the rows the sparse gradient names: 586 MiB held for the whole run, each step
    small beside it); each step a window of 520 distinct tokens drawn from the data generator from
    a Zipf unigram distribution without replacement, each of the middle 512 paired with its 8
    neighbours (4096 center/context pairs), and 4096 negatives shared by the minibatch (Ji et al.
    2016) drawn without replacement from the unigram distribution to the 3/4 power with the
    window's tokens left out, looked up once, each pair scored against 5 of them picked by index;
    the loss -log sigmoid(u.v) - sum log sigmoid(-u.v_neg); each step's gradients are sparse COO
    tensors of 4096 rows of 128 (input table) and 4096 + 4096 rows (output table: the contexts'
    and the shared negatives' lookups), coalesced by the optimizer to 512 and 520 + 4096 distinct
    rows, fixed by construction (with tokens drawn with replacement the distinct rows, and so the
    optimizer's tensors, would change with the data every step); fixed shapes, 40 steps."""
    torch.manual_seed(0)
    vocab, dim, chunk, window, shared, negatives = 200000, 128, 512, 4, 4096, 5
    emb_in, emb_out = nn.Embedding(vocab, dim, sparse=True), nn.Embedding(vocab, dim, sparse=True)
    with torch.no_grad():
        emb_in.weight.uniform_(-0.5 / dim, 0.5 / dim)
        emb_out.weight.zero_()
    opt = torch.optim.SparseAdam([emb_in.weight, emb_out.weight], lr=1e-2)
    gen = torch.Generator().manual_seed(65 + seed)
    unigram = 1.0 / torch.arange(1, vocab + 1, dtype=torch.float64)  # Zipf: word i has frequency 1 / (i + 1)
    noise = unigram.pow(0.75).float()
    unigram = unigram.float()
    offsets = torch.tensor([o for o in range(-window, window + 1) if o != 0])
    positions = torch.arange(window, window + chunk)
    total = 0.0
    for _ in range(steps):
        text = torch.multinomial(unigram, chunk + 2 * window, replacement=False, generator=gen)
        center = text[positions].repeat_interleave(len(offsets))
        context = text[(positions[:, None] + offsets).flatten()]
        neg_words = torch.multinomial(noise.index_fill(0, text, 0.0), shared, replacement=False, generator=gen)
        pick = torch.randint(0, shared, (len(center), negatives), generator=gen)
        opt.zero_grad(set_to_none=True)
        u = emb_in(center)  # (pairs, dim)
        pos = (emb_out(context) * u).sum(1)
        neg = (emb_out(neg_words)[pick] @ u[:, :, None])[..., 0]  # (pairs, negatives)
        loss = -(nn.functional.logsigmoid(pos) + nn.functional.logsigmoid(-neg).sum(1)).mean()
        loss.backward()
        opt.step()
        total += loss.item()
    return total


@_workload(default_steps=8)
def ddpm_train(*, steps: int, seed: int) -> float:
    """Denoising diffusion (DDPM, Ho et al. 2020) training of a small UNet on 32x32 RGB images,
    batch 32: per sample a timestep drawn from 0-999 (linear beta schedule 1e-4 to 0.02, the
    cumulative alpha products gathered per sample) and Gaussian noise, the noised image
    sqrt(a) x0 + sqrt(1 - a) eps fed to the UNet, the loss the MSE of its noise prediction; the
    UNet a sinusoidal timestep embedding 128 through an MLP 128-256-256 (SiLU), a 3x3 Conv2d 3-64,
    residual blocks with GroupNorm(32), SiLU and the time embedding projected and added per block
    (one per level down, 64 at 32x32, 128 at 16x16, 256 at 8x8; two at 8x8 around a single-head
    self-attention over the 64 positions; one per level up on the skip concatenations, 128, 64,
    64), stride-2 downsampling convs, nearest upsampling, GroupNorm, SiLU and a 3x3 Conv2d 64-3;
    AdamW, and after every update an EMA copy of the weights (decay 0.999, its own set of
    tensors, not trained) updated by torch._foreach_mul_ and torch._foreach_add_ under no_grad;
    x0 drawn from the data generator, fixed shapes, 8 steps."""
    torch.manual_seed(0)
    batch, size, timesteps, decay = 32, 32, 1000, 0.999

    class Block(nn.Module):
        def __init__(self, cin: int, cout: int) -> None:
            super().__init__()
            self.norm1, self.conv1 = nn.GroupNorm(32, cin), nn.Conv2d(cin, cout, 3, padding=1)
            self.time = nn.Linear(256, cout)
            self.norm2, self.conv2 = nn.GroupNorm(32, cout), nn.Conv2d(cout, cout, 3, padding=1)
            self.skip = nn.Identity() if cin == cout else nn.Conv2d(cin, cout, 1)

        def forward(self, x: torch.Tensor, t: torch.Tensor) -> torch.Tensor:
            h = self.conv1(nn.functional.silu(self.norm1(x))) + self.time(t)[:, :, None, None]
            return self.skip(x) + self.conv2(nn.functional.silu(self.norm2(h)))

    class Attention(nn.Module):
        def __init__(self, c: int) -> None:
            super().__init__()
            self.norm, self.qkv, self.proj = nn.GroupNorm(32, c), nn.Conv2d(c, 3 * c, 1), nn.Conv2d(c, c, 1)

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            b, c, h, w = x.shape
            q, k, v = self.qkv(self.norm(x)).view(b, 3, c, h * w).unbind(1)
            att = torch.softmax(q.transpose(1, 2) @ k / c ** 0.5, -1)  # (b, hw, hw)
            return x + self.proj((v @ att.transpose(1, 2)).view(b, c, h, w))

    class UNet(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.time = nn.Sequential(nn.Linear(128, 256), nn.SiLU(), nn.Linear(256, 256))
            self.stem = nn.Conv2d(3, 64, 3, padding=1)
            self.down = nn.ModuleList([Block(64, 64), Block(64, 128), Block(128, 256)])
            self.pool = nn.ModuleList([nn.Conv2d(64, 64, 3, 2, 1), nn.Conv2d(128, 128, 3, 2, 1)])
            self.mid1, self.attn, self.mid2 = Block(256, 256), Attention(256), Block(256, 256)
            self.up = nn.ModuleList([Block(512, 128), Block(256, 64), Block(128, 64)])
            self.out = nn.Sequential(nn.GroupNorm(32, 64), nn.SiLU(), nn.Conv2d(64, 3, 3, padding=1))

        def forward(self, x: torch.Tensor, t: torch.Tensor) -> torch.Tensor:
            freqs = torch.exp(-torch.arange(64) * (torch.log(torch.tensor(10000.0)) / 64))
            angles = t[:, None].float() * freqs
            temb = self.time(torch.cat([angles.sin(), angles.cos()], 1))
            h, skips = self.stem(x), []
            for i, block in enumerate(self.down):
                h = block(h, temb)
                skips.append(h)
                if i < len(self.pool):
                    h = self.pool[i](h)
            h = self.mid2(self.attn(self.mid1(h, temb)), temb)
            for i, block in enumerate(self.up):
                if i > 0:
                    h = nn.functional.interpolate(h, scale_factor=2.0, mode="nearest")
                h = block(torch.cat([h, skips.pop()], 1), temb)
            return self.out(h)

    model = UNet()
    ema = [p.detach().clone() for p in model.parameters()]
    opt = torch.optim.AdamW(model.parameters(), lr=2e-4, weight_decay=0.01)
    alpha_bar = torch.cumprod(1 - torch.linspace(1e-4, 0.02, timesteps), 0)
    gen = torch.Generator().manual_seed(66 + seed)
    total = 0.0
    for _ in range(steps):
        x0 = torch.rand(batch, 3, size, size, generator=gen) * 2 - 1
        t = torch.randint(0, timesteps, (batch,), generator=gen)
        eps = torch.randn(batch, 3, size, size, generator=gen)
        a = alpha_bar[t][:, None, None, None]
        opt.zero_grad(set_to_none=True)
        loss = nn.functional.mse_loss(model(a.sqrt() * x0 + (1 - a).sqrt() * eps, t), eps)
        loss.backward()
        opt.step()
        with torch.no_grad():
            params = [p.detach() for p in model.parameters()]
            torch._foreach_mul_(ema, decay)
            torch._foreach_add_(ema, params, alpha=1 - decay)
        total += loss.item()
    return total


@_workload(default_steps=6)
def longformer_train(*, steps: int, seed: int) -> float:
    """Longformer-style encoder (Beltagy et al. 2020) classifying documents of 4096 tokens, batch 1:
    an embedding 16000 x 256 plus learned positions, 3 pre-norm layers (d_model 256, 4 heads of
    64, MLP 1024 GELU); sliding-window attention of 256 (128 each side) done by chunking: the
    sequence cut into 32 chunks of 128 queries, the keys and values padded by 128 on each side
    and unfolded (Tensor.unfold) into 32 overlapping windows of 384, a 32 x 128 x 384 score
    tensor per head masked to the band |i - j| <= 128 (and the padding), plus 16 global tokens
    (the first 16 positions: every query also scores their keys beside its window, where they
    are masked out; and their rows attend to all 4096 positions in full through query, key and
    value projections of their own, as in Longformer); the CLS token's output through a linear
    256-10 and cross-entropy, the gradient's global norm clipped to 1, then AdamW; tokens and
    labels drawn from the data generator, fixed shapes, 6 steps."""
    torch.manual_seed(0)
    vocab, length, dim, heads, layers, chunk, n_global, classes = 16000, 4096, 256, 4, 3, 128, 16, 10
    hd, n_chunks = dim // heads, length // chunk
    pos = torch.arange(length)
    window_pos = nn.functional.pad(pos, (chunk, chunk), value=-10 ** 6).unfold(0, 3 * chunk, chunk)  # (32, 384)
    query_pos = pos.view(n_chunks, chunk)
    local_mask = (((query_pos[:, :, None] - window_pos[:, None, :]).abs() <= chunk)
                  & (window_pos[:, None, :] >= n_global))  # the band, without the padding and the global keys

    class Layer(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.ln1, self.ln2 = nn.LayerNorm(dim), nn.LayerNorm(dim)
            self.qkv, self.proj = nn.Linear(dim, 3 * dim), nn.Linear(dim, dim)
            self.qkv_global = nn.Linear(dim, 3 * dim)  # the global rows' own projections, as in Longformer
            self.ff = nn.Sequential(nn.Linear(dim, 4 * dim), nn.GELU(), nn.Linear(4 * dim, dim))

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            b = x.shape[0]
            h = self.ln1(x)
            q, k, v = self.qkv(h).view(b, length, 3, heads, hd).permute(2, 0, 3, 1, 4)  # (b, H, L, hd)
            qg, kg, vg = self.qkv_global(h).view(b, length, 3, heads, hd).permute(2, 0, 3, 1, 4)
            pad = lambda t: nn.functional.pad(t, (0, 0, chunk, chunk))  # noqa: E731
            kw = pad(k).unfold(2, 3 * chunk, chunk)  # (b, H, 32, hd, 384)
            vw = pad(v).unfold(2, 3 * chunk, chunk)
            qc = q.reshape(b, heads, n_chunks, chunk, hd) / hd ** 0.5
            local = (qc @ kw).masked_fill(~local_mask, float("-inf"))  # (b, H, 32, 128, 384)
            glob = qc @ k[:, :, None, :n_global].transpose(-1, -2)  # (b, H, 32, 128, 16): the global keys
            att = torch.softmax(torch.cat([local, glob], -1), -1)
            out = att[..., :3 * chunk] @ vw.transpose(-1, -2) + att[..., 3 * chunk:] @ v[:, :, None, :n_global]
            out = out.reshape(b, heads, length, hd)
            full = torch.softmax(qg[:, :, :n_global] @ kg.transpose(-1, -2) / hd ** 0.5, -1) @ vg  # global rows
            out = torch.cat([full, out[:, :, n_global:]], 2)
            x = x + self.proj(out.transpose(1, 2).reshape(b, length, dim))
            return x + self.ff(self.ln2(x))

    class Longformer(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.emb, self.pos = nn.Embedding(vocab, dim), nn.Parameter(0.02 * torch.randn(length, dim))
            self.layers = nn.Sequential(*(Layer() for _ in range(layers)))
            self.norm, self.head = nn.LayerNorm(dim), nn.Linear(dim, classes)

        def forward(self, ids: torch.Tensor) -> torch.Tensor:
            return self.head(self.norm(self.layers(self.emb(ids) + self.pos))[:, 0])

    model = Longformer()
    opt = torch.optim.AdamW(model.parameters(), lr=3e-4, weight_decay=0.01)
    gen = torch.Generator().manual_seed(67 + seed)
    total = 0.0
    for _ in range(steps):
        ids = torch.randint(0, vocab, (1, length), generator=gen)
        labels = torch.randint(0, classes, (1,), generator=gen)
        opt.zero_grad(set_to_none=True)
        loss = nn.functional.cross_entropy(model(ids), labels)
        loss.backward()
        nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        total += loss.item()
    return total


@_workload(default_steps=10)
def detect_varbox_train(*, steps: int, seed: int) -> float:
    """Single-stage anchor-based detector (RetinaNet-like, one level) on 256x256 RGB images,
    batch 16, 20 classes: a backbone (3x3 stride-2 Conv2d 3-32 with BatchNorm and ReLU, residual
    blocks 32-64-128 of stride 2: stride 8, a 32 x 32 grid), two 3x3 Conv2d 128-128 with ReLU,
    and 3x3 Conv2d heads to 9 anchors x 20 class logits and 9 x 4 box offsets per cell (9216
    anchors per image, 3 scales x 3 aspect ratios); each image has a number of ground-truth boxes
    drawn from the data generator (1-24, and their corners and classes), the 9216 x n IoU matrix
    of anchors against them computed per image under no_grad, every anchor assigned to its best
    box (positive at IoU >= 0.5, negative below 0.4, ignored between; each box's best anchor
    forced positive); the focal loss (alpha 0.25, gamma 2) over the positive and negative
    anchors' logits and a smooth L1 loss of the positive anchors' encoded box offsets, both
    gathered by index across the batch, so the numbers of boxes, of kept anchors and of
    positives, and with them the IoU and loss tensors' shapes, follow the data every step by
    design; SGD with momentum and weight decay, 10 steps."""
    torch.manual_seed(0)
    batch, size, classes, stride, max_boxes = 16, 256, 20, 8, 24
    grid = size // stride
    model = nn.Sequential(nn.Conv2d(3, 32, 3, 2, 1, bias=False), nn.BatchNorm2d(32), nn.ReLU(),
                          _ResidualBlock(32, 64, 2), _ResidualBlock(64, 128, 2),
                          nn.Conv2d(128, 128, 3, padding=1), nn.ReLU(), nn.Conv2d(128, 128, 3, padding=1), nn.ReLU())
    cls_head, box_head = nn.Conv2d(128, 9 * classes, 3, padding=1), nn.Conv2d(128, 9 * 4, 3, padding=1)
    nn.init.constant_(cls_head.bias, -4.6)  # prior 0.01
    centers = (torch.arange(grid) + 0.5) * stride
    cy, cx = torch.meshgrid(centers, centers, indexing="ij")
    shapes = torch.tensor([[s * r ** 0.5, s / r ** 0.5] for s in (32, 48, 64) for r in (0.5, 1.0, 2.0)])  # (9, 2) w, h
    anchors = torch.stack([cx[..., None].expand(-1, -1, 9), cy[..., None].expand(-1, -1, 9),
                           shapes[:, 0].expand(grid, grid, 9), shapes[:, 1].expand(grid, grid, 9)], -1).reshape(-1, 4)
    corners = torch.cat([anchors[:, :2] - anchors[:, 2:] / 2, anchors[:, :2] + anchors[:, 2:] / 2], 1)
    area = anchors[:, 2] * anchors[:, 3]
    params = [*model.parameters(), *cls_head.parameters(), *box_head.parameters()]
    opt = torch.optim.SGD(params, lr=0.01, momentum=0.9, weight_decay=1e-4)
    gen = torch.Generator().manual_seed(68 + seed)
    total = 0.0
    for _ in range(steps):
        images = torch.randn(batch, 3, size, size, generator=gen)
        counts = torch.randint(1, max_boxes + 1, (batch,), generator=gen).tolist()
        opt.zero_grad(set_to_none=True)
        feats = model(images)
        logits = cls_head(feats).permute(0, 2, 3, 1).reshape(-1, classes)  # (batch * 9216, classes)
        offsets = box_head(feats).permute(0, 2, 3, 1).reshape(-1, 4)
        kept, targets, positives, encoded = [], [], [], []
        with torch.no_grad():
            for i, n in enumerate(counts):
                xy = torch.rand(n, 2, generator=gen) * size
                wh = 16 + torch.rand(n, 2, generator=gen) * 112
                gt = torch.cat([xy - wh / 2, xy + wh / 2], 1).clamp(0, size)
                labels = torch.randint(0, classes, (n,), generator=gen)
                lt = torch.maximum(corners[:, None, :2], gt[None, :, :2])
                rb = torch.minimum(corners[:, None, 2:], gt[None, :, 2:])
                inter = (rb - lt).clamp(min=0).prod(2)
                gt_area = (gt[:, 2:] - gt[:, :2]).prod(1)
                iou = inter / (area[:, None] + gt_area[None] - inter)  # (9216, n)
                best, match = iou.max(1)
                forced = iou.argmax(0)  # each box's best anchor
                best[forced], match[forced] = 1.0, torch.arange(n)
                pos, keep = best >= 0.5, (best >= 0.5) | (best < 0.4)
                onehot = nn.functional.one_hot(labels[match], classes).float() * pos[:, None]
                base = i * len(anchors)
                kept.append(base + keep.nonzero()[:, 0])
                targets.append(onehot[keep])
                p = pos.nonzero()[:, 0]
                positives.append(base + p)
                g, a = gt[match[p]], anchors[p]
                g_cxcy, g_wh = (g[:, :2] + g[:, 2:]) / 2, (g[:, 2:] - g[:, :2]).clamp(min=1)
                encoded.append(torch.cat([(g_cxcy - a[:, :2]) / a[:, 2:], (g_wh / a[:, 2:]).log()], 1))
        kept_idx, pos_idx = torch.cat(kept), torch.cat(positives)
        n_pos = max(len(pos_idx), 1)
        x, y = logits[kept_idx], torch.cat(targets)
        prob = x.sigmoid()
        ce = nn.functional.binary_cross_entropy_with_logits(x, y, reduction="none")
        p_t = prob * y + (1 - prob) * (1 - y)
        focal = ((0.25 * y + 0.75 * (1 - y)) * (1 - p_t).pow(2) * ce).sum() / n_pos
        box = nn.functional.smooth_l1_loss(offsets[pos_idx], torch.cat(encoded), reduction="sum", beta=1 / 9) / n_pos
        loss = focal + box
        loss.backward()
        opt.step()
        total += loss.item()
    return total


@_workload(default_steps=10)
def stochastic_depth_train(*, steps: int, seed: int) -> float:
    """Deep residual CNN trained with stochastic depth (Huang et al. 2016), batch 32 images of 32x32
    RGB, 100 classes: a 3x3 Conv2d 3-64 stem with BatchNorm and ReLU, three stages of 5 residual
    blocks (ResNet basic blocks, 64 channels at 32x32, 128 at 16x16, 256 at 8x8; the first block of
    the second and third stages of stride 2 with a 1x1 projection), global average pooling and a
    linear 256-100; the 13 blocks whose input and output shapes agree are each dropped whole (the
    block's output is its input: no convolution, no BatchNorm update, nothing kept for the backward)
    or run, independently every step, drawn from the data generator with survival probabilities
    falling linearly with depth to 0.5 at the last block (the paper's rule, 0.74 on average), the
    two downsampling blocks always run; cross-entropy, SGD with momentum 0.9 and weight decay 1e-4.
    Every tensor's shape is fixed, but which blocks run, and so the sequence of allocations and
    frees, changes every step by design (a step is not a fixed-shape step: its allocations follow
    the draw); 10 steps."""
    torch.manual_seed(0)
    batch, size, classes, per_stage = 32, 32, 100, 5
    blocks: list[nn.Module] = []
    cin = 64
    for cout, stride in ((64, 1), (128, 2), (256, 2)):
        blocks += [_ResidualBlock(cin, cout, stride)] + [_ResidualBlock(cout, cout, 1) for _ in range(per_stage - 1)]
        cin = cout
    droppable = [i for i, b in enumerate(blocks) if isinstance(b.skip, nn.Identity)]  # 13 of 15
    survival = torch.tensor([1 - 0.5 * (i + 1) / len(blocks) for i in droppable])

    class Net(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.stem = nn.Sequential(nn.Conv2d(3, 64, 3, 1, 1, bias=False), nn.BatchNorm2d(64), nn.ReLU())
            self.blocks = nn.ModuleList(blocks)
            self.head = nn.Linear(256, classes)

        def forward(self, x: torch.Tensor, skip: set[int]) -> torch.Tensor:
            x = self.stem(x)
            for i, block in enumerate(self.blocks):
                if i not in skip:
                    x = block(x)
            return self.head(x.mean((2, 3)))

    model = Net()
    opt = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9, weight_decay=1e-4)
    gen = torch.Generator().manual_seed(69 + seed)
    total = 0.0
    for _ in range(steps):
        images = torch.randn(batch, 3, size, size, generator=gen)
        labels = torch.randint(0, classes, (batch,), generator=gen)
        alive = torch.rand(len(droppable), generator=gen) < survival
        skip = {i for i, a in zip(droppable, alive.tolist()) if not a}
        opt.zero_grad(set_to_none=True)
        loss = nn.functional.cross_entropy(model(images, skip), labels)
        loss.backward()
        opt.step()
        total += loss.item()
    return total


@_workload(default_steps=6)
def fedavg_train(*, steps: int, seed: int) -> float:
    """Federated averaging (FedAvg, McMahan et al. 2017) of a VGG-style CNN over 4 clients, one
    communication round per step: the global model (three blocks of two 3x3 Conv2d with BatchNorm
    and ReLU and a 2x2 max pooling, 64-128-256 channels, 32x32 to 4x4, then a linear 4096-1024, ReLU
    and a linear 1024-10; 5.4 M weights) is copied to each client by copy.deepcopy (every parameter
    and buffer cloned), and each client in turn runs 2 local steps of SGD with momentum 0.9 (its own
    optimizer, made each round, so its momentum buffers are allocated at its first local step) on
    its own batches of 64 32x32 RGB images, drawn from the data generator with labels from that
    client's own 5 of the 10 classes (non-IID); the four clients' models, gradients and optimizer
    states all stay alive until the round ends, when the global model's state becomes the average of
    the clients' state_dicts (each floating entry the mean of the four stacked, BatchNorm's
    num_batches_tracked taken from the first client) by load_state_dict, and the clients are
    dropped; cross-entropy, fixed shapes, 6 rounds."""
    import copy

    torch.manual_seed(0)
    clients, local_steps, batch, size, classes = 4, 2, 64, 32, 10

    def block(cin: int, cout: int) -> list[nn.Module]:
        return [nn.Conv2d(cin, cout, 3, padding=1, bias=False), nn.BatchNorm2d(cout), nn.ReLU(),
                nn.Conv2d(cout, cout, 3, padding=1, bias=False), nn.BatchNorm2d(cout), nn.ReLU(), nn.MaxPool2d(2)]

    server = nn.Sequential(*block(3, 64), *block(64, 128), *block(128, 256), nn.Flatten(),
                           nn.Linear(256 * 4 * 4, 1024), nn.ReLU(), nn.Linear(1024, classes))
    gen = torch.Generator().manual_seed(70 + seed)
    client_classes = [torch.randperm(classes, generator=gen)[:5] for _ in range(clients)]
    total = 0.0
    for _ in range(steps):
        models = []
        for c in range(clients):
            model = copy.deepcopy(server).train()
            opt = torch.optim.SGD(model.parameters(), lr=0.02, momentum=0.9)
            for _ in range(local_steps):
                images = torch.randn(batch, 3, size, size, generator=gen)
                labels = client_classes[c][torch.randint(0, 5, (batch,), generator=gen)]
                opt.zero_grad(set_to_none=True)
                loss = nn.functional.cross_entropy(model(images), labels)
                loss.backward()
                opt.step()
                total += loss.item()
            models.append((model, opt))
        states = [m.state_dict() for m, _ in models]
        with torch.no_grad():
            avg = {k: torch.stack([s[k] for s in states]).mean(0) if v.is_floating_point() else v
                   for k, v in states[0].items()}
            server.load_state_dict(avg)
        del models, states, avg, model, opt
    return total


@_workload(default_steps=12)
def prune_finetune(*, steps: int, seed: int) -> float:
    """Gradual magnitude pruning while fine-tuning (in the manner of Zhu and Gupta 2017) by
    torch.nn.utils.prune: a VGG-style CNN on 32x32 RGB images, batch 128, 10 classes (three blocks
    of two 3x3 Conv2d with BatchNorm and ReLU and a 2x2 max pooling, 64-128-256 channels, 32x32 to
    4x4, then a linear 4096-1024, ReLU, a linear 1024-1024, ReLU and a linear 1024-10; 6.4 M
    weights), every conv and linear weight pruned by prune.l1_unstructured with amount 0.2 of the
    weights it still has, before every third step (steps 0, 3, 6, 9: sparsity 20%, 36%, 49%, 59%):
    the first call moves each weight to a weight_orig Parameter beside a weight_mask buffer and
    registers a forward pre-hook that recomputes weight = weight_orig * weight_mask before every
    forward (a new tensor per layer per forward, kept for the backward), the later ones stack a
    PruningContainer that gathers the weights still unpruned, takes the top-k smallest of their
    magnitudes (the gathered copy and k shrinking as the sparsity rises) and multiplies the new mask
    into a copy of the old; cross-entropy, SGD with momentum 0.9 and weight decay 5e-4 on the
    weight_orig Parameters (the optimizer made before the first pruning; the pruned entries get zero
    gradient through the mask). A training step's tensors have fixed shapes, but every third step
    begins with a pruning whose tensors change size from one pruning to the next, so steps are not
    all alike (not a fixed-shape step); 12 steps."""
    from torch.nn.utils import prune

    torch.manual_seed(0)
    batch, size, classes, every, amount = 128, 32, 10, 3, 0.2

    def block(cin: int, cout: int) -> list[nn.Module]:
        return [nn.Conv2d(cin, cout, 3, padding=1, bias=False), nn.BatchNorm2d(cout), nn.ReLU(),
                nn.Conv2d(cout, cout, 3, padding=1, bias=False), nn.BatchNorm2d(cout), nn.ReLU(), nn.MaxPool2d(2)]

    model = nn.Sequential(*block(3, 64), *block(64, 128), *block(128, 256), nn.Flatten(),
                          nn.Linear(256 * 4 * 4, 1024), nn.ReLU(), nn.Linear(1024, 1024), nn.ReLU(),
                          nn.Linear(1024, classes))
    prunable = [m for m in model if isinstance(m, (nn.Conv2d, nn.Linear))]
    opt = torch.optim.SGD(model.parameters(), lr=0.02, momentum=0.9, weight_decay=5e-4)
    gen = torch.Generator().manual_seed(71 + seed)
    total = 0.0
    for step in range(steps):
        if step % every == 0:
            for m in prunable:
                prune.l1_unstructured(m, "weight", amount=amount)
        images = torch.randn(batch, 3, size, size, generator=gen)
        labels = torch.randint(0, classes, (batch,), generator=gen)
        opt.zero_grad(set_to_none=True)
        loss = nn.functional.cross_entropy(model(images), labels)
        loss.backward()
        opt.step()
        total += loss.item()
    return total


@_workload(default_steps=10)
def act_ponder_train(*, steps: int, seed: int) -> float:
    """PonderNet-style adaptive computation (Banino et al. 2021) with one weight-tied transformer
    block: sequences of 128 tokens (vocabulary 1000, batch 32; the label the sum of the first 8
    tokens mod 10) embedded (d_model 256) and passed through the same pre-norm encoder block (4
    heads of 64, MLP 1024 GELU) again and again, a learned embedding of the pass number added before
    each pass; after pass n a halting unit (a linear 256-1 on the mean-pooled normalised state,
    sigmoid) gives each sequence its probability lambda_n of halting there and a head (a linear
    256-10 on the same pool) its prediction, p_n = lambda_n times the probability of not having
    halted before; each sequence halts at pass n with probability lambda_n (a Bernoulli draw from
    the data generator, as PonderNet samples halting), and the batch makes passes until every
    sequence has halted, at most 12 (the probability not halted by the last pass put on it); the
    loss is sum_n p_n times the cross-entropy of pass n plus 0.1 times the KL divergence of p from a
    geometric prior (lambda_p 0.25); every pass's activations stay alive until the backward; AdamW.
    The tensors of one pass have fixed shapes, but the number of passes, and so the step's
    allocations, follows the data (the draws) and the halting unit every step by design (not a
    fixed-shape step); 10 steps."""
    torch.manual_seed(0)
    vocab, length, batch, dim, heads, classes, max_passes, prior = 1000, 128, 32, 256, 4, 10, 12, 0.25

    class Ponder(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.emb, self.pos = nn.Embedding(vocab, dim), nn.Parameter(0.02 * torch.randn(length, dim))
            self.passes = nn.Embedding(max_passes, dim)
            self.block = nn.TransformerEncoderLayer(dim, heads, 4 * dim, dropout=0.0, activation="gelu",
                                                    batch_first=True, norm_first=True)
            self.norm, self.halt, self.head = nn.LayerNorm(dim), nn.Linear(dim, 1), nn.Linear(dim, classes)
            nn.init.normal_(self.halt.weight, std=0.03)  # halting starts near sigmoid(-0.4), 0.4
            nn.init.constant_(self.halt.bias, -0.4)

        def forward(self, ids: torch.Tensor, gen: torch.Generator) -> tuple[list[torch.Tensor], list[torch.Tensor]]:
            h = self.emb(ids) + self.pos
            not_halted, halted = torch.ones(len(ids)), torch.zeros(len(ids), dtype=torch.bool)
            probs, logits = [], []
            for n in range(max_passes):
                h = self.block(h + self.passes.weight[n])
                pooled = self.norm(h).mean(1)
                lam = torch.sigmoid(self.halt(pooled))[:, 0]
                halted |= torch.rand(len(ids), generator=gen) < lam.detach()
                logits.append(self.head(pooled))
                if n == max_passes - 1 or bool(halted.all()):
                    probs.append(not_halted)
                    return probs, logits
                probs.append(not_halted * lam)
                not_halted = not_halted * (1 - lam)
            raise AssertionError

    model = Ponder()
    opt = torch.optim.AdamW(model.parameters(), lr=1e-4, weight_decay=0.01)
    gen = torch.Generator().manual_seed(72 + seed)
    geometric = prior * (1 - prior) ** torch.arange(max_passes, dtype=torch.float32)
    total = 0.0
    for _ in range(steps):
        ids = torch.randint(0, vocab, (batch, length), generator=gen)
        labels = ids[:, :8].sum(1) % classes
        opt.zero_grad(set_to_none=True)
        probs, logits = model(ids, gen)
        p = torch.stack(probs, 1)  # (batch, passes)
        ce = torch.stack([nn.functional.cross_entropy(z, labels, reduction="none") for z in logits], 1)
        kl = (p * (p.clamp_min(1e-8).log() - geometric[:p.shape[1]].log())).sum(1)
        loss = ((p * ce).sum(1) + 0.1 * kl).mean()
        loss.backward()
        opt.step()
        total += loss.item()
    return total


@_workload(default_steps=12)
def train_eval_interleave(*, steps: int, seed: int) -> float:
    """A ResNet-style classifier trained at batch 64 with a validation pass after every third
    training step, as a training loop with periodic evaluation runs: 32x32 RGB images, 100 classes,
    a 3x3 Conv2d 3-64 stem with BatchNorm and ReLU, three stages of 2 residual blocks (64 at 32x32,
    128 at 16x16, 256 at 8x8), global average pooling, dropout 0.2 and a linear 256-100; a training
    step is cross-entropy with label smoothing 0.1 and SGD with Nesterov momentum 0.9 and weight
    decay 5e-4; after steps 3, 6, 9, ... the model is put in eval mode (BatchNorm on its running
    statistics, no dropout) and, under torch.no_grad, runs a fixed validation set of 2 batches of
    256 images (drawn once from the data generator before the first step) for their summed
    cross-entropy and top-1 and top-5 accuracy, then goes back to train mode. Every tensor of a
    training step and of a validation pass has a fixed shape, but the stream repeats every three
    steps (three training steps and a validation pass), not every step (not a fixed-shape step); 12
    steps, 4 validation passes."""
    torch.manual_seed(0)
    batch, val_batch, val_batches, size, classes, every = 64, 256, 2, 32, 100, 3
    layers: list[nn.Module] = [nn.Conv2d(3, 64, 3, 1, 1, bias=False), nn.BatchNorm2d(64), nn.ReLU()]
    cin = 64
    for cout, stride in ((64, 1), (128, 2), (256, 2)):
        layers += [_ResidualBlock(cin, cout, stride), _ResidualBlock(cout, cout, 1)]
        cin = cout
    model = nn.Sequential(*layers, nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Dropout(0.2), nn.Linear(256, classes))
    opt = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9, nesterov=True, weight_decay=5e-4)
    gen = torch.Generator().manual_seed(73 + seed)
    val = [(torch.randn(val_batch, 3, size, size, generator=gen),
            torch.randint(0, classes, (val_batch,), generator=gen)) for _ in range(val_batches)]
    total = 0.0
    for step in range(steps):
        images = torch.randn(batch, 3, size, size, generator=gen)
        labels = torch.randint(0, classes, (batch,), generator=gen)
        opt.zero_grad(set_to_none=True)
        loss = nn.functional.cross_entropy(model(images), labels, label_smoothing=0.1)
        loss.backward()
        opt.step()
        total += loss.item()
        if (step + 1) % every == 0:
            model.eval()
            with torch.no_grad():
                val_loss, top1, top5 = 0.0, 0, 0
                for x, y in val:
                    logits = model(x)
                    val_loss += nn.functional.cross_entropy(logits, y, reduction="sum").item()
                    best = logits.topk(5, 1).indices
                    top1 += int((best[:, 0] == y).sum())
                    top5 += int((best == y[:, None]).any(1).sum())
            model.train()
            total += val_loss / (val_batch * val_batches) + (top1 + top5) / (val_batch * val_batches)
    return total


@_workload(default_steps=6)
def superres_train(*, steps: int, seed: int) -> float:
    """ESRGAN-style x4 super-resolution (Wang et al. 2018; the generator's pretraining with a
    perceptual loss, no discriminator) on 32x32 low-resolution patches of 128x128 RGB ones, batch 8:
    a 3x3 Conv2d 3-64, 3 residual-in-residual dense blocks (each 3 dense blocks of five 3x3 convs,
    growth 32, LeakyReLU 0.2, each conv taking the concatenation of the dense block's input and
    every earlier output, residual scaling 0.2 in each dense block and in each RRDB), a 3x3 conv
    64-64 and a long skip, two x2 upsampling stages (a 3x3 Conv2d 64-256 and PixelShuffle(2),
    LeakyReLU), 3x3 convs 64-64 and 64-3 at 128x128; the loss an L1 pixel loss plus a perceptual
    loss, 0.1 times the MSE between the features of the output and of the target by a frozen
    VGG-style extractor (3x3 Conv2d 3-64, 64-64, max pooling, 64-128, 128-128 before its ReLU, as
    ESRGAN takes features before the activation; requires_grad off, so its backward reaches only the
    output; the target's features under no_grad); Adam (lr 2e-4, betas 0.9 and 0.99); the
    high-resolution patches smooth random textures (uniform noise at 16x16 upsampled bicubically
    plus fine noise, clamped to [0, 1], from the data generator), their low-resolution inputs made
    by antialiased bicubic downsampling; fixed shapes, 6 steps."""
    torch.manual_seed(0)
    batch, lr_size, scale, nf, gc, n_rrdb = 8, 32, 4, 64, 32, 3
    hr_size = lr_size * scale
    lrelu = functools.partial(nn.functional.leaky_relu, negative_slope=0.2)

    class DenseBlock(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.convs = nn.ModuleList(nn.Conv2d(nf + i * gc, gc if i < 4 else nf, 3, padding=1) for i in range(5))

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            feats = [x]
            for i, conv in enumerate(self.convs):
                out = conv(torch.cat(feats, 1))
                if i < 4:
                    feats.append(lrelu(out))
            return x + 0.2 * out

    class RRDB(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.blocks = nn.Sequential(DenseBlock(), DenseBlock(), DenseBlock())

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            return x + 0.2 * self.blocks(x)

    class Generator(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.first = nn.Conv2d(3, nf, 3, padding=1)
            self.trunk = nn.Sequential(*(RRDB() for _ in range(n_rrdb)))
            self.trunk_conv = nn.Conv2d(nf, nf, 3, padding=1)
            self.up = nn.ModuleList(nn.Sequential(nn.Conv2d(nf, 4 * nf, 3, padding=1), nn.PixelShuffle(2))
                                    for _ in range(2))
            self.hr_conv, self.last = nn.Conv2d(nf, nf, 3, padding=1), nn.Conv2d(nf, 3, 3, padding=1)

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            feat = self.first(x)
            feat = feat + self.trunk_conv(self.trunk(feat))
            for up in self.up:
                feat = lrelu(up(feat))
            return self.last(lrelu(self.hr_conv(feat)))

    features = nn.Sequential(nn.Conv2d(3, 64, 3, padding=1), nn.ReLU(), nn.Conv2d(64, 64, 3, padding=1), nn.ReLU(),
                             nn.MaxPool2d(2), nn.Conv2d(64, 128, 3, padding=1), nn.ReLU(),
                             nn.Conv2d(128, 128, 3, padding=1)).requires_grad_(False)
    model = Generator()
    opt = torch.optim.Adam(model.parameters(), lr=2e-4, betas=(0.9, 0.99))
    gen = torch.Generator().manual_seed(74 + seed)
    total = 0.0
    for _ in range(steps):
        coarse = torch.rand(batch, 3, hr_size // 8, hr_size // 8, generator=gen)
        hr = (nn.functional.interpolate(coarse, size=(hr_size, hr_size), mode="bicubic", align_corners=False)
              + 0.05 * torch.randn(batch, 3, hr_size, hr_size, generator=gen)).clamp(0, 1)
        lr = nn.functional.interpolate(hr, size=(lr_size, lr_size), mode="bicubic", antialias=True, align_corners=False)
        opt.zero_grad(set_to_none=True)
        sr = model(lr)
        with torch.no_grad():
            target = features(hr)
        loss = nn.functional.l1_loss(sr, hr) + 0.1 * nn.functional.mse_loss(features(sr), target)
        loss.backward()
        opt.step()
        total += loss.item()
    return total


@_workload(default_steps=8)
def llama_train(*, steps: int, seed: int) -> float:
    """A small LLaMA-style decoder-only language model (Touvron et al. 2023) trained on next-token
    prediction, batch 6 sequences of 256 tokens, vocabulary 8000: an embedding 8000 x 384 (not tied
    to the output), 6 pre-norm layers (RMSNorm, eps 1e-6, before attention and before the MLP; 6
    heads of 64 with rotary position embeddings applied to the queries and keys from precomputed
    cos/sin tables, causal scaled_dot_product_attention, no biases; a SwiGLU MLP, silu(x W1) * x W3
    then W2, hidden 1024), a final RMSNorm and a linear 384-8000 (17 M weights); cross-entropy,
    AdamW (betas 0.9 and 0.95, weight decay 0.1), gradients clipped to norm 1.0 by
    clip_grad_norm_ before every update, and the learning rate set every step by a cosine schedule
    (LambdaLR: a linear warmup over the first 2 steps, then a cosine decay toward 10% at the end
    of the run); the tokens drawn from the data generator, fixed shapes, 8 steps."""
    import math

    torch.manual_seed(0)
    vocab, length, batch, dim, heads, layers, hidden, warmup = 8000, 256, 6, 384, 6, 6, 1024, 2
    head_dim = dim // heads
    inv_freq = 1.0 / 10000 ** (torch.arange(0, head_dim, 2).float() / head_dim)
    angles = torch.arange(length).float()[:, None] * inv_freq  # (length, head_dim / 2)
    cos, sin = angles.cos(), angles.sin()

    def rope(x: torch.Tensor) -> torch.Tensor:  # (batch, heads, length, head_dim), pairs interleaved
        x1, x2 = x[..., 0::2], x[..., 1::2]
        return torch.stack([x1 * cos - x2 * sin, x1 * sin + x2 * cos], -1).flatten(-2)

    class Layer(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.attn_norm, self.mlp_norm = nn.RMSNorm(dim, eps=1e-6), nn.RMSNorm(dim, eps=1e-6)
            self.qkv, self.out = nn.Linear(dim, 3 * dim, bias=False), nn.Linear(dim, dim, bias=False)
            self.w1, self.w3 = nn.Linear(dim, hidden, bias=False), nn.Linear(dim, hidden, bias=False)
            self.w2 = nn.Linear(hidden, dim, bias=False)

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            b, t, _ = x.shape
            q, k, v = self.qkv(self.attn_norm(x)).view(b, t, 3, heads, head_dim).permute(2, 0, 3, 1, 4)
            att = nn.functional.scaled_dot_product_attention(rope(q), rope(k), v, is_causal=True)
            x = x + self.out(att.transpose(1, 2).reshape(b, t, dim))
            h = self.mlp_norm(x)
            return x + self.w2(nn.functional.silu(self.w1(h)) * self.w3(h))

    model = nn.Sequential(nn.Embedding(vocab, dim), *(Layer() for _ in range(layers)), nn.RMSNorm(dim, eps=1e-6),
                          nn.Linear(dim, vocab, bias=False))
    opt = torch.optim.AdamW(model.parameters(), lr=3e-4, betas=(0.9, 0.95), weight_decay=0.1)

    def cosine(step: int) -> float:
        if step < warmup:
            return (step + 1) / warmup
        progress = (step - warmup) / max(1, steps - warmup)
        return 0.1 + 0.45 * (1 + math.cos(math.pi * min(1.0, progress)))

    sched = torch.optim.lr_scheduler.LambdaLR(opt, cosine)
    gen = torch.Generator().manual_seed(75 + seed)
    total = 0.0
    for _ in range(steps):
        tokens = torch.randint(0, vocab, (batch, length + 1), generator=gen)
        opt.zero_grad(set_to_none=True)
        logits = model(tokens[:, :-1])
        loss = nn.functional.cross_entropy(logits.reshape(-1, vocab), tokens[:, 1:].reshape(-1))
        loss.backward()
        nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        sched.step()
        total += loss.item()
    return total


@_workload(default_steps=12)
def multiscale_detect_train(*, steps: int, seed: int) -> float:
    """A small YOLO-style anchor-free single-stage detector trained with multi-scale inputs, as
    YOLO training does: every 2 steps the input resolution is drawn from the data generator out of
    160, 192, ..., 320 (step 32), and each batch of 16 RGB images is resized to it (bilinear
    interpolate) from its 320x320 original; 20 classes; a backbone of Conv2d with BatchNorm and
    SiLU (a 3x3 conv 3-32 of stride 2, then stages 64, 128, 256 of a 3x3 stride-2 conv and a
    residual pair, a 1x1 conv to half the channels and a 3x3 back; stride 16: grids of 10x10 to
    20x20), a 3x3 conv 256-256 and a 1x1 head to 5 + 20 outputs per cell (objectness, box centre
    offset and log size, class logits); each image has 6 ground-truth boxes (centres, sizes and classes from the data generator, relative to the
    image), each assigned to the cell holding its centre at the step's resolution; the loss is the
    BCE of the objectness over every cell, and at the assigned cells an MSE of the box terms and a
    cross-entropy of the classes; SGD with Nesterov momentum 0.937 and weight decay 5e-4. A step's
    shapes are fixed within a resolution, but every activation, gradient and target grid changes
    size with the resolution drawn (seven sizes, not a fixed-shape step); 12 steps."""
    torch.manual_seed(0)
    batch, full, classes, n_boxes, stride, every = 16, 320, 20, 6, 16, 2
    sizes = list(range(160, full + 1, 32))

    def conv(cin: int, cout: int, s: int = 1, k: int = 3) -> nn.Sequential:
        return nn.Sequential(nn.Conv2d(cin, cout, k, s, k // 2, bias=False), nn.BatchNorm2d(cout), nn.SiLU())

    class Residual(nn.Module):
        def __init__(self, c: int) -> None:
            super().__init__()
            self.body = nn.Sequential(conv(c, c // 2, k=1), conv(c // 2, c))

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            return x + self.body(x)

    model = nn.Sequential(conv(3, 32, 2), conv(32, 64, 2), Residual(64), conv(64, 128, 2), Residual(128),
                          conv(128, 256, 2), Residual(256), conv(256, 256), nn.Conv2d(256, 5 + classes, 1))
    opt = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.937, nesterov=True, weight_decay=5e-4)
    gen = torch.Generator().manual_seed(76 + seed)
    total, size = 0.0, full
    for step in range(steps):
        if step % every == 0:
            size = sizes[int(torch.randint(0, len(sizes), (1,), generator=gen))]
        images = torch.rand(batch, 3, full, full, generator=gen)
        centres = torch.rand(batch, n_boxes, 2, generator=gen)
        extents = 0.05 + 0.45 * torch.rand(batch, n_boxes, 2, generator=gen)
        labels = torch.randint(0, classes, (batch, n_boxes), generator=gen)
        if size != full:
            images = nn.functional.interpolate(images, size=(size, size), mode="bilinear", align_corners=False)
        grid = size // stride
        cell = (centres * grid).long().clamp(max=grid - 1)  # (batch, n_boxes, 2): x, y
        b_idx = torch.arange(batch)[:, None].expand(-1, n_boxes).reshape(-1)
        cx, cy = cell[..., 0].reshape(-1), cell[..., 1].reshape(-1)
        box_target = torch.cat([centres * grid - cell, extents.log()], -1).reshape(-1, 4)
        obj_target = torch.zeros(batch, grid, grid)
        obj_target[b_idx, cy, cx] = 1.0
        opt.zero_grad(set_to_none=True)
        out = model(images).permute(0, 2, 3, 1)  # (batch, grid, grid, 5 + classes)
        assigned = out[b_idx, cy, cx]  # (batch * n_boxes, 5 + classes)
        loss = (nn.functional.binary_cross_entropy_with_logits(out[..., 0], obj_target)
                + nn.functional.mse_loss(torch.cat([assigned[:, 1:3].sigmoid(), assigned[:, 3:5]], 1), box_target)
                + nn.functional.cross_entropy(assigned[:, 5:], labels.reshape(-1)))
        loss.backward()
        opt.step()
        total += loss.item()
    return total


@_workload(default_steps=3)
def darts_search(*, steps: int, seed: int) -> float:
    """DARTS differentiable architecture search (Liu et al. 2019, the first-order approximation)
    on 32x32 RGB images, batch 16, 10 classes: a 3x3 Conv2d 3-48 stem with BatchNorm, then 2 cells
    (a normal cell at 32x32 with 16 channels, a reduction cell to 16x16 with 32), each with two
    input nodes (the two previous outputs, preprocessed by ReLU-conv-BN) and 3 intermediate nodes,
    node i the sum over its 2 + i predecessors of a mixed operation (9 edges per cell): the softmax
    of that edge's row of the architecture parameters (alphas, 9 x 6 for the normal cell and 9 x 6
    for the reduction one) weighting every candidate operation's output, 6 of the DARTS primitives
    (none: a multiply by zero; 3x3 max and average pooling, each followed by an affine-free
    BatchNorm; skip connection, a factorized reduce on reducing edges; a 3x3 separable convolution,
    two stacks of ReLU, depthwise conv, pointwise conv and BatchNorm; a 3x3 dilated separable
    convolution, dilation 2), all computed and kept for the backward; a cell's output the
    concatenation of its 3 nodes; global average pooling and a linear 96-10. Each step alternates
    an architecture step, a validation batch's cross-entropy backpropagated (through the weights
    too) and Adam (lr 3e-4, betas 0.5 and 0.999, weight decay 1e-3) updating only the alphas, and a
    weight step on a training batch, SGD with momentum 0.9, weight decay 3e-4 and gradients
    clipped to norm 5, updating only the network's weights; both batches drawn from the data
    generator; fixed shapes, 3 steps (6 updates, each a forward and backward through every
    candidate of every edge)."""
    torch.manual_seed(0)
    batch, size, classes, nodes, c0 = 16, 32, 10, 3, 16

    def relu_conv_bn(cin: int, cout: int, k: int, s: int, p: int, affine: bool = False) -> nn.Sequential:
        return nn.Sequential(nn.ReLU(), nn.Conv2d(cin, cout, k, s, p, bias=False), nn.BatchNorm2d(cout, affine=affine))

    class FactorizedReduce(nn.Module):
        def __init__(self, cin: int, cout: int) -> None:
            super().__init__()
            self.a, self.b = nn.Conv2d(cin, cout // 2, 1, 2, bias=False), nn.Conv2d(cin, cout // 2, 1, 2, bias=False)
            self.bn = nn.BatchNorm2d(cout, affine=False)

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            x = torch.relu(x)
            return self.bn(torch.cat([self.a(x), self.b(x[:, :, 1:, 1:])], 1))

    def sep_conv(c: int, k: int, s: int) -> nn.Sequential:
        p = k // 2
        return nn.Sequential(nn.ReLU(), nn.Conv2d(c, c, k, s, p, groups=c, bias=False), nn.Conv2d(c, c, 1, bias=False),
                             nn.BatchNorm2d(c, affine=False),
                             nn.ReLU(), nn.Conv2d(c, c, k, 1, p, groups=c, bias=False), nn.Conv2d(c, c, 1, bias=False),
                             nn.BatchNorm2d(c, affine=False))

    def dil_conv(c: int, k: int, s: int) -> nn.Sequential:
        return nn.Sequential(nn.ReLU(), nn.Conv2d(c, c, k, s, k - 1, dilation=2, groups=c, bias=False),
                             nn.Conv2d(c, c, 1, bias=False), nn.BatchNorm2d(c, affine=False))

    class Zero(nn.Module):
        def __init__(self, s: int) -> None:
            super().__init__()
            self.s = s

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            return x.mul(0.0) if self.s == 1 else x[:, :, ::self.s, ::self.s].mul(0.0)

    def candidates(c: int, s: int) -> list[nn.Module]:
        return [Zero(s), nn.Sequential(nn.MaxPool2d(3, s, 1), nn.BatchNorm2d(c, affine=False)),
                nn.Sequential(nn.AvgPool2d(3, s, 1, count_include_pad=False), nn.BatchNorm2d(c, affine=False)),
                nn.Identity() if s == 1 else FactorizedReduce(c, c), sep_conv(c, 3, s), dil_conv(c, 3, s)]

    n_ops, n_edges = 6, sum(2 + i for i in range(nodes))

    class MixedOp(nn.Module):
        def __init__(self, c: int, s: int) -> None:
            super().__init__()
            self.ops = nn.ModuleList(candidates(c, s))

        def forward(self, x: torch.Tensor, w: torch.Tensor) -> torch.Tensor:
            return sum(wi * op(x) for wi, op in zip(w, self.ops))

    class Cell(nn.Module):
        def __init__(self, c_pp: int, c_p: int, c: int, reduction: bool, reduction_prev: bool) -> None:
            super().__init__()
            self.reduction = reduction
            self.pre0 = FactorizedReduce(c_pp, c) if reduction_prev else relu_conv_bn(c_pp, c, 1, 1, 0)
            self.pre1 = relu_conv_bn(c_p, c, 1, 1, 0)
            self.edges = nn.ModuleList(MixedOp(c, 2 if reduction and j < 2 else 1)
                                       for i in range(nodes) for j in range(2 + i))

        def forward(self, s0: torch.Tensor, s1: torch.Tensor, weights: torch.Tensor) -> torch.Tensor:
            states, offset = [self.pre0(s0), self.pre1(s1)], 0
            for _ in range(nodes):
                s = sum(self.edges[offset + j](h, weights[offset + j]) for j, h in enumerate(states))
                offset += len(states)
                states.append(s)
            return torch.cat(states[-nodes:], 1)

    class Network(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.stem = nn.Sequential(nn.Conv2d(3, 3 * c0, 3, padding=1, bias=False), nn.BatchNorm2d(3 * c0))
            c_pp, c_p, cells, reduction_prev = 3 * c0, 3 * c0, [], False
            for c, reduction in ((c0, False), (2 * c0, True)):
                cells.append(Cell(c_pp, c_p, c, reduction, reduction_prev))
                c_pp, c_p, reduction_prev = c_p, nodes * c, reduction
            self.cells = nn.ModuleList(cells)
            self.head = nn.Linear(c_p, classes)
            self.alphas_normal = nn.Parameter(1e-3 * torch.randn(n_edges, n_ops))
            self.alphas_reduce = nn.Parameter(1e-3 * torch.randn(n_edges, n_ops))

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            s0 = s1 = self.stem(x)
            normal, reduce = self.alphas_normal.softmax(-1), self.alphas_reduce.softmax(-1)
            for cell in self.cells:
                s0, s1 = s1, cell(s0, s1, reduce if cell.reduction else normal)
            return self.head(s1.mean((2, 3)))

    model = Network()
    arch = [model.alphas_normal, model.alphas_reduce]
    weights = [p for n, p in model.named_parameters() if not n.startswith("alphas")]
    w_opt = torch.optim.SGD(weights, lr=0.025, momentum=0.9, weight_decay=3e-4)
    a_opt = torch.optim.Adam(arch, lr=3e-4, betas=(0.5, 0.999), weight_decay=1e-3)
    gen = torch.Generator().manual_seed(77 + seed)
    total = 0.0
    for _ in range(steps):
        x_val = torch.randn(batch, 3, size, size, generator=gen)
        y_val = torch.randint(0, classes, (batch,), generator=gen)
        x_train = torch.randn(batch, 3, size, size, generator=gen)
        y_train = torch.randint(0, classes, (batch,), generator=gen)
        a_opt.zero_grad(set_to_none=True)
        loss = nn.functional.cross_entropy(model(x_val), y_val)
        loss.backward()
        a_opt.step()
        total += loss.item()
        w_opt.zero_grad(set_to_none=True)
        a_opt.zero_grad(set_to_none=True)
        loss = nn.functional.cross_entropy(model(x_train), y_train)
        loss.backward()
        nn.utils.clip_grad_norm_(weights, 5.0)
        w_opt.step()
        total += loss.item()
    return total


@_workload(default_steps=24)
def dqn_replay_train(*, steps: int, seed: int) -> float:
    """DQN (Mnih et al. 2015) on a synthetic Atari-like vector environment with an on-device
    replay buffer: 32 environments whose observations are stacks of 4 84x84 uint8 frames (each
    environment step shifts its stack by one frame and appends a new frame from the data
    generator; rewards and episode ends, probability 0.02, drawn too, an ended episode's stack
    replaced by a new one); the Nature CNN (Conv2d
    4-32 8x8 stride 4, 32-64 4x4 stride 2, 64-64 3x3, ReLU, a linear 3136-512 and 512-6 actions)
    as online network and a target network of the same shape synced to it by load_state_dict
    every 4 steps; the replay buffer preallocated tensors of 2048 transitions (observation and
    next observation, 2 x 2048 x 4 x 84 x 84 uint8, 110 MiB, with action, reward and done)
    written in place as a ring. Each step acts for 4 environment steps (epsilon-greedy, epsilon
    falling from 1.0 to 0.1, the online network's greedy actions under no_grad for the 32
    observations), storing 128 transitions, so the buffer fills up over the first 16 steps and
    wraps after; then one update on a batch of 128 transitions sampled uniformly by index from the
    filled part of the buffer (gathered and scaled to [0, 1] as float), the target max_a Q(s', a)
    from the target network under no_grad, Huber loss, Adam (lr 1e-4), gradients clipped to norm
    10. Fixed shapes; 24 steps."""
    torch.manual_seed(0)
    envs, frames, res, actions, capacity, batch, act_steps, sync, gamma = 32, 4, 84, 6, 2048, 128, 4, 4, 0.99

    def q_net() -> nn.Sequential:
        return nn.Sequential(nn.Conv2d(frames, 32, 8, 4), nn.ReLU(), nn.Conv2d(32, 64, 4, 2), nn.ReLU(),
                             nn.Conv2d(64, 64, 3, 1), nn.ReLU(), nn.Flatten(), nn.Linear(3136, 512), nn.ReLU(),
                             nn.Linear(512, actions))

    online, target = q_net(), q_net()
    target.load_state_dict(online.state_dict())
    target.requires_grad_(False)
    opt = torch.optim.Adam(online.parameters(), lr=1e-4)
    obs_buf = torch.zeros(capacity, frames, res, res, dtype=torch.uint8)
    next_buf = torch.zeros(capacity, frames, res, res, dtype=torch.uint8)
    act_buf = torch.zeros(capacity, dtype=torch.long)
    rew_buf, done_buf = torch.zeros(capacity), torch.zeros(capacity)
    gen = torch.Generator().manual_seed(78 + seed)
    obs = torch.randint(0, 256, (envs, frames, res, res), dtype=torch.uint8, generator=gen)
    ptr, filled, total = 0, 0, 0.0
    for step in range(steps):
        epsilon = max(0.1, 1.0 - 0.9 * step / max(1, steps - 1))
        for _ in range(act_steps):
            with torch.no_grad():
                greedy = online(obs.float() / 255).argmax(1)
            explore = torch.rand(envs, generator=gen) < epsilon
            action = torch.where(explore, torch.randint(0, actions, (envs,), generator=gen), greedy)
            frame = torch.randint(0, 256, (envs, 1, res, res), dtype=torch.uint8, generator=gen)
            next_obs = torch.cat([obs[:, 1:], frame], 1)
            reward = torch.randn(envs, generator=gen)
            done = (torch.rand(envs, generator=gen) < 0.02).float()
            idx = (ptr + torch.arange(envs)) % capacity
            obs_buf[idx], next_buf[idx], act_buf[idx], rew_buf[idx], done_buf[idx] = obs, next_obs, action, reward, done
            ptr, filled = (ptr + envs) % capacity, min(capacity, filled + envs)
            reset = torch.randint(0, 256, (envs, frames, res, res), dtype=torch.uint8, generator=gen)
            obs = torch.where(done.bool()[:, None, None, None], reset, next_obs)
        sample = torch.randint(0, filled, (batch,), generator=gen)
        s, s2 = obs_buf[sample].float() / 255, next_buf[sample].float() / 255
        with torch.no_grad():
            y = rew_buf[sample] + gamma * (1 - done_buf[sample]) * target(s2).max(1).values
        opt.zero_grad(set_to_none=True)
        q = online(s).gather(1, act_buf[sample][:, None])[:, 0]
        loss = nn.functional.smooth_l1_loss(q, y)
        loss.backward()
        nn.utils.clip_grad_norm_(online.parameters(), 10.0)
        opt.step()
        if (step + 1) % sync == 0:
            target.load_state_dict(online.state_dict())
        total += loss.item()
    return total


@_workload(default_steps=8)
def dit_train(*, steps: int, seed: int) -> float:
    """A small class-conditional diffusion transformer (DiT, Peebles and Xie 2023; DiT-S-like
    blocks) trained on noise prediction, batch 16 images of 32x32x4 (latent-sized), 10 classes: the
    input patchified by a 2x2 stride-2 Conv2d 4-256 (256 tokens) plus fixed 2-D sinusoidal
    positions; the conditioning c a sinusoidal timestep embedding (256) through an MLP 256-256-256
    (SiLU) plus a class embedding (11 rows: the 11th the null class, which replaces the label with
    probability 0.1, for classifier-free guidance); 6 blocks (d_model 256, 4 heads of 64, MLP 1024
    GELU-tanh), each with adaLN-Zero: a linear from silu(c) to 6 x 256 (shift, scale and gate for
    the attention and for the MLP, initialised to zero), LayerNorm without affine weights modulated
    by x * (1 + scale) + shift, the branch output multiplied by its gate; a final adaLN layer (2 x
    256 modulation) and a linear 256-16 unpatchified back to 4x32x32; per sample a timestep drawn
    from 0-999 (linear beta schedule 1e-4 to 0.02), the loss the MSE of the predicted noise;
    AdamW (lr 1e-4, no weight decay); data, noise, timesteps and label drops from the data
    generator, fixed shapes, 8 steps."""
    import math

    torch.manual_seed(0)
    batch, size, channels, patch, dim, heads, depth, classes, timesteps = 16, 32, 4, 2, 256, 4, 6, 10, 1000
    grid = size // patch

    def sinusoid(pos: torch.Tensor, d: int) -> torch.Tensor:
        freqs = torch.exp(-math.log(10000.0) * torch.arange(d // 2) / (d // 2))
        angles = pos[:, None].float() * freqs
        return torch.cat([angles.sin(), angles.cos()], 1)

    ys, xs = torch.meshgrid(torch.arange(grid), torch.arange(grid), indexing="ij")
    pos_embed = torch.cat([sinusoid(ys.reshape(-1), dim // 2), sinusoid(xs.reshape(-1), dim // 2)], 1)  # (256, dim)

    def modulate(x: torch.Tensor, shift: torch.Tensor, scale: torch.Tensor) -> torch.Tensor:
        return x * (1 + scale[:, None]) + shift[:, None]

    class Block(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.norm1 = nn.LayerNorm(dim, elementwise_affine=False, eps=1e-6)
            self.norm2 = nn.LayerNorm(dim, elementwise_affine=False, eps=1e-6)
            self.qkv, self.proj = nn.Linear(dim, 3 * dim), nn.Linear(dim, dim)
            self.mlp = nn.Sequential(nn.Linear(dim, 4 * dim), nn.GELU(approximate="tanh"), nn.Linear(4 * dim, dim))
            self.ada = nn.Linear(dim, 6 * dim)
            nn.init.zeros_(self.ada.weight)
            nn.init.zeros_(self.ada.bias)

        def forward(self, x: torch.Tensor, c: torch.Tensor) -> torch.Tensor:
            b, t, _ = x.shape
            shift1, scale1, gate1, shift2, scale2, gate2 = self.ada(nn.functional.silu(c)).chunk(6, 1)
            q, k, v = self.qkv(modulate(self.norm1(x), shift1, scale1)).view(b, t, 3, heads, dim // heads) \
                .permute(2, 0, 3, 1, 4)
            att = nn.functional.scaled_dot_product_attention(q, k, v).transpose(1, 2).reshape(b, t, dim)
            x = x + gate1[:, None] * self.proj(att)
            return x + gate2[:, None] * self.mlp(modulate(self.norm2(x), shift2, scale2))

    class DiT(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.patchify = nn.Conv2d(channels, dim, patch, patch)
            self.time = nn.Sequential(nn.Linear(256, dim), nn.SiLU(), nn.Linear(dim, dim))
            self.label = nn.Embedding(classes + 1, dim)
            self.blocks = nn.ModuleList(Block() for _ in range(depth))
            self.final_norm = nn.LayerNorm(dim, elementwise_affine=False, eps=1e-6)
            self.final_ada, self.final = nn.Linear(dim, 2 * dim), nn.Linear(dim, patch * patch * channels)

        def forward(self, x: torch.Tensor, t: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
            b = len(x)
            h = self.patchify(x).flatten(2).transpose(1, 2) + pos_embed
            c = self.time(sinusoid(t, 256)) + self.label(y)
            for block in self.blocks:
                h = block(h, c)
            shift, scale = self.final_ada(nn.functional.silu(c)).chunk(2, 1)
            h = self.final(modulate(self.final_norm(h), shift, scale))  # (b, 256, patch * patch * channels)
            h = h.view(b, grid, grid, patch, patch, channels).permute(0, 5, 1, 3, 2, 4)
            return h.reshape(b, channels, size, size)

    model = DiT()
    opt = torch.optim.AdamW(model.parameters(), lr=1e-4, weight_decay=0.0)
    alpha_bar = torch.cumprod(1 - torch.linspace(1e-4, 0.02, timesteps), 0)
    gen = torch.Generator().manual_seed(79 + seed)
    total = 0.0
    for _ in range(steps):
        x0 = torch.randn(batch, channels, size, size, generator=gen)
        labels = torch.randint(0, classes, (batch,), generator=gen)
        labels = torch.where(torch.rand(batch, generator=gen) < 0.1, classes, labels)
        t = torch.randint(0, timesteps, (batch,), generator=gen)
        eps = torch.randn(batch, channels, size, size, generator=gen)
        a = alpha_bar[t][:, None, None, None]
        opt.zero_grad(set_to_none=True)
        loss = nn.functional.mse_loss(model(a.sqrt() * x0 + (1 - a).sqrt() * eps, t, labels), eps)
        loss.backward()
        opt.step()
        total += loss.item()
    return total


@_workload(default_steps=8)
def dynamic_token_vit(*, steps: int, seed: int) -> float:
    """A ViT whose tokens are pruned between blocks by a learned score and a data-dependent
    threshold (in the manner of DynamicViT, Rao et al. 2021, and EViT, Liang et al. 2022), on
    128x128 RGB images, batch 16, 100 classes: 8x8 patches (256 tokens and a class token) embedded
    by a Conv2d 3-256 plus learned positions, 8 pre-norm encoder blocks (d_model 256, 4 heads, MLP
    1024 GELU); before blocks 3, 5 and 7 a score predictor (LayerNorm, a linear 256-64, GELU, a
    linear 64-1) scores every patch token still kept, the threshold of each image is the mean of
    its tokens' scores, and the step keeps k tokens per image, k the batch's mean number of tokens
    scoring above their image's threshold (rounded, at least 8): the k best of each image gathered
    by index and multiplied by the sigmoid of their scores (so the predictor gets a gradient), the
    class token always kept; cross-entropy of a linear head on the final class token; AdamW,
    gradients clipped to norm 1; the images are a background of faint noise with 1-6 rectangles of
    strong noise each (corners from the data generator), so the scores, the thresholds and the
    counts follow each image's content. The kept-token counts, and with them every tensor of the
    later blocks, change every step by design (not a fixed-shape step); 8 steps."""
    torch.manual_seed(0)
    batch, size, patch, dim, heads, depth, classes, max_objects = 16, 128, 8, 256, 4, 8, 100, 6
    tokens = (size // patch) ** 2
    prune_before = (2, 4, 6)

    class Net(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.embed = nn.Conv2d(3, dim, patch, patch)
            self.cls = nn.Parameter(torch.zeros(1, 1, dim))
            self.pos = nn.Parameter(0.02 * torch.randn(1, tokens + 1, dim))
            self.blocks = nn.ModuleList(nn.TransformerEncoderLayer(dim, heads, 4 * dim, dropout=0.0, activation="gelu",
                                                                   batch_first=True, norm_first=True)
                                        for _ in range(depth))
            self.scorers = nn.ModuleList(nn.Sequential(nn.LayerNorm(dim), nn.Linear(dim, dim // 4), nn.GELU(),
                                                       nn.Linear(dim // 4, 1)) for _ in prune_before)
            self.norm, self.head = nn.LayerNorm(dim), nn.Linear(dim, classes)

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            h = self.embed(x).flatten(2).transpose(1, 2)
            h = torch.cat([self.cls.expand(len(x), -1, -1), h], 1) + self.pos
            for i, block in enumerate(self.blocks):
                if i in prune_before:
                    score = self.scorers[prune_before.index(i)](h[:, 1:])[..., 0]  # (batch, n)
                    above = (score > score.mean(1, keepdim=True)).sum(1)
                    k = max(8, round(float(above.float().mean())))
                    best, idx = score.topk(k, 1)
                    kept = h[:, 1:].gather(1, idx[..., None].expand(-1, -1, dim)) * torch.sigmoid(best)[..., None]
                    h = torch.cat([h[:, :1], kept], 1)
                h = block(h)
            return self.head(self.norm(h[:, 0]))

    model = Net()
    opt = torch.optim.AdamW(model.parameters(), lr=5e-4, weight_decay=0.05)
    gen = torch.Generator().manual_seed(80 + seed)
    total = 0.0
    for _ in range(steps):
        images = 0.1 * torch.randn(batch, 3, size, size, generator=gen)
        for image in images:
            for _ in range(int(torch.randint(1, max_objects + 1, (1,), generator=gen))):
                x0, y0 = torch.randint(0, size - 16, (2,), generator=gen).tolist()
                w, h = torch.randint(16, 64, (2,), generator=gen).tolist()
                region = image[:, y0:y0 + h, x0:x0 + w]
                region += torch.randn(region.shape, generator=gen)
        labels = torch.randint(0, classes, (batch,), generator=gen)
        opt.zero_grad(set_to_none=True)
        loss = nn.functional.cross_entropy(model(images), labels)
        loss.backward()
        nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        total += loss.item()
    return total


@_workload(default_steps=12)
def gat_padded_train(*, steps: int, seed: int) -> float:
    """Graph attention network (GAT, Velickovic et al. 2018) for graph classification on dense
    padded batches (as graph transformers batch graphs): each step 32 graphs whose node counts are
    drawn from 16-192 by the data generator, padded to the step's largest graph, with 64 node
    features, a dense adjacency (each pair joined with probability 6/n, symmetric, self loops on
    the real nodes) and a padding mask; 3 GAT layers of 4 heads x 64 (a linear 64-256 or 256-256
    without bias, per-head source and target attention vectors, the logits a_src.Wh_i + a_dst.Wh_j
    through LeakyReLU 0.2, masked to the adjacency with -inf, softmax over the neighbours, dropout
    0.1 on the attention weights, heads concatenated, ELU, a residual connection and LayerNorm from
    the second layer on), a masked mean over each graph's real nodes, an MLP 256-256-10;
    cross-entropy, AdamW (weight decay 5e-4). Every tensor of a step is sized by its largest
    graph (the attention is batch x 4 x n x n; n changes every step by design: not a fixed-shape
    step); 12 steps."""
    torch.manual_seed(0)
    batch, features, heads, head_dim, layers, classes, low, high = 32, 64, 4, 64, 3, 10, 16, 192
    width = heads * head_dim

    class GATLayer(nn.Module):
        def __init__(self, cin: int) -> None:
            super().__init__()
            self.lin = nn.Linear(cin, width, bias=False)
            self.a_src, self.a_dst = nn.Parameter(0.1 * torch.randn(heads, head_dim)), \
                nn.Parameter(0.1 * torch.randn(heads, head_dim))
            self.norm = nn.LayerNorm(width) if cin == width else None

        def forward(self, x: torch.Tensor, adj: torch.Tensor) -> torch.Tensor:
            b, n, _ = x.shape
            h = self.lin(x).view(b, n, heads, head_dim).transpose(1, 2)  # (b, heads, n, head_dim)
            src, dst = (h * self.a_src[:, None]).sum(-1), (h * self.a_dst[:, None]).sum(-1)  # (b, heads, n)
            logits = nn.functional.leaky_relu(src[..., :, None] + dst[..., None, :], 0.2)
            logits = logits.masked_fill(~adj[:, None], float("-inf"))
            att = nn.functional.dropout(torch.softmax(logits, -1).nan_to_num(0.0), 0.1, self.training)
            out = nn.functional.elu((att @ h).transpose(1, 2).reshape(b, n, width))
            return out if self.norm is None else self.norm(x + out)

    class GAT(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.layers = nn.ModuleList(GATLayer(features if i == 0 else width) for i in range(layers))
            self.head = nn.Sequential(nn.Linear(width, width), nn.ReLU(), nn.Linear(width, classes))

        def forward(self, x: torch.Tensor, adj: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
            for layer in self.layers:
                x = layer(x, adj)
            pooled = (x * mask[..., None]).sum(1) / mask.sum(1, keepdim=True)
            return self.head(pooled)

    model = GAT()
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3, weight_decay=5e-4)
    gen = torch.Generator().manual_seed(81 + seed)
    total = 0.0
    for _ in range(steps):
        counts = torch.randint(low, high + 1, (batch,), generator=gen)
        n = int(counts.max())
        mask = torch.arange(n)[None] < counts[:, None]  # (batch, n): the real nodes
        pair = mask[:, :, None] & mask[:, None, :]
        edges = torch.rand(batch, n, n, generator=gen) < (6.0 / counts.float())[:, None, None]
        adj = ((edges | edges.transpose(1, 2)) & pair) | torch.diag_embed(mask)
        x = torch.randn(batch, n, features, generator=gen) * mask[..., None]
        labels = torch.randint(0, classes, (batch,), generator=gen)
        opt.zero_grad(set_to_none=True)
        loss = nn.functional.cross_entropy(model(x, adj, mask), labels)
        loss.backward()
        opt.step()
        total += loss.item()
    return total


@_workload(default_steps=6)
def amp_effnet_train(*, steps: int, seed: int) -> float:
    """Mixed-precision training of a small EfficientNet-style CNN (Tan and Le 2019; B0-like
    MBConv blocks) under bfloat16 autocast with loss scaling, on 128x128 RGB images, batch 32, 100
    classes: a 3x3 stride-2 stem 3-32, then MBConv blocks (a 1x1 expansion by 6 except in the
    first, a depthwise 3x3 or 5x5 conv, squeeze-and-excitation at a quarter of the block's input
    channels, a 1x1 projection, BatchNorm and SiLU throughout, a residual where the shapes agree)
    of 16, 24 x 2, 40 x 2, 80 x 2 and 112 channels at strides 1, 2, 2, 2 and 1, a 1x1 head conv
    to 640, global average pooling and a linear 640-100; the forward and the label-smoothed (0.1)
    cross-entropy under torch.autocast("cpu", dtype=torch.bfloat16) (the convolutions and linears
    in bfloat16, their casts of the weights made anew every step); a torch.amp.GradScaler("cpu")
    (initial scale 2 ** 12, growth every 3 steps) multiplies the loss before the backward and
    unscales the gradients with its foreach non-finite check before clip_grad_norm_ (norm 2,
    foreach); AdamW with foreach=True (its update as lists of temporaries, one per parameter) and
    weight decay 0.05. Fixed shapes; 6 steps."""
    torch.manual_seed(0)
    batch, size, classes, head = 32, 128, 100, 640

    def conv_bn(cin: int, cout: int, k: int, s: int = 1, groups: int = 1, act: bool = True) -> nn.Sequential:
        layers: list[nn.Module] = [nn.Conv2d(cin, cout, k, s, k // 2, groups=groups, bias=False), nn.BatchNorm2d(cout)]
        return nn.Sequential(*layers, nn.SiLU()) if act else nn.Sequential(*layers)

    class SqueezeExcite(nn.Module):
        def __init__(self, c: int, squeeze: int) -> None:
            super().__init__()
            self.reduce, self.expand = nn.Conv2d(c, squeeze, 1), nn.Conv2d(squeeze, c, 1)

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            s = self.expand(nn.functional.silu(self.reduce(x.mean((2, 3), keepdim=True))))
            return x * torch.sigmoid(s)

    class MBConv(nn.Module):
        def __init__(self, cin: int, cout: int, k: int, s: int, expand: int) -> None:
            super().__init__()
            mid = cin * expand
            self.body = nn.Sequential(*([conv_bn(cin, mid, 1)] if expand != 1 else []),
                                      conv_bn(mid, mid, k, s, groups=mid), SqueezeExcite(mid, max(1, cin // 4)),
                                      conv_bn(mid, cout, 1, act=False))
            self.residual = s == 1 and cin == cout

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            return x + self.body(x) if self.residual else self.body(x)

    blocks: list[nn.Module] = [conv_bn(3, 32, 3, 2)]
    cin = 32
    for expand, cout, repeats, stride, k in ((1, 16, 1, 1, 3), (6, 24, 2, 2, 3), (6, 40, 2, 2, 5), (6, 80, 2, 2, 3),
                                             (6, 112, 1, 1, 5)):
        for r in range(repeats):
            blocks.append(MBConv(cin, cout, k, stride if r == 0 else 1, expand))
            cin = cout
    model = nn.Sequential(*blocks, conv_bn(cin, head, 1), nn.AdaptiveAvgPool2d(1), nn.Flatten(),
                          nn.Linear(head, classes))
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3, weight_decay=0.05, foreach=True)
    scaler = torch.amp.GradScaler("cpu", init_scale=2.0 ** 12, growth_interval=3)
    gen = torch.Generator().manual_seed(82 + seed)
    total = 0.0
    for _ in range(steps):
        images = torch.randn(batch, 3, size, size, generator=gen)
        labels = torch.randint(0, classes, (batch,), generator=gen)
        opt.zero_grad(set_to_none=True)
        with torch.autocast("cpu", dtype=torch.bfloat16):
            loss = nn.functional.cross_entropy(model(images), labels, label_smoothing=0.1)
        scaler.scale(loss).backward()
        scaler.unscale_(opt)
        nn.utils.clip_grad_norm_(model.parameters(), 2.0, foreach=True)
        scaler.step(opt)
        scaler.update()
        total += loss.item()
    return total


@_workload(default_steps=3)
def chunked_attn_train(*, steps: int, seed: int) -> float:
    """A long-context causal language model trained with memory-efficient attention computed in
    blocks (the tiling of Rabe and Staats 2021 and of FlashAttention, written out in PyTorch), one
    sequence of 8192 tokens per step, vocabulary 4096: an embedding 4096 x 256 plus learned
    positions, 2 pre-norm layers (d_model 256, 4 heads of 64, MLP 1024 GELU), a final LayerNorm and
    a linear 256-4096; each layer's attention is computed query chunk by query chunk (8 chunks of
    1024 queries), each chunk walking over the key and value chunks of 1024 up to its causal limit
    (1 to 8 of them) with a running maximum, a running sum and an output rescaled at every key
    chunk (online softmax, the causal mask built only on the blocks that cross the diagonal), and
    each query chunk wrapped in torch.utils.checkpoint (non-reentrant), so that only its output is
    kept and its blocks are computed again in the backward, chunk by chunk; next-token
    cross-entropy, AdamW. Fixed shapes; a step makes and drops its 72 score blocks of 4 x 1024 x
    1024 one after another, twice (the forward and the recomputation); 3 steps."""
    from torch.utils.checkpoint import checkpoint

    torch.manual_seed(0)
    vocab, length, dim, heads, layers, q_chunk, k_chunk = 4096, 8192, 256, 4, 2, 1024, 1024
    head_dim = dim // heads
    scale = head_dim ** -0.5

    def chunk_attention(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, start: int) -> torch.Tensor:
        """Queries ``start:start + q_chunk`` of (heads, length, head_dim) against their causal keys."""
        end = start + q_chunk
        m = q.new_full((heads, q_chunk, 1), float("-inf"))
        s = q.new_zeros(heads, q_chunk, 1)
        out = q.new_zeros(heads, q_chunk, head_dim)
        q_pos = torch.arange(start, end)[:, None]
        for k0 in range(0, end, k_chunk):
            k1 = min(k0 + k_chunk, end)
            scores = (q * scale) @ k[:, k0:k1].transpose(1, 2)  # (heads, q_chunk, k1 - k0)
            if k1 > start + 1:  # the block crosses the diagonal: mask the keys after each query
                scores = scores.masked_fill(torch.arange(k0, k1)[None] > q_pos, float("-inf"))
            m_new = torch.maximum(m, scores.amax(-1, keepdim=True))
            p = torch.exp(scores - m_new)
            correction = torch.exp(m - m_new)
            s = s * correction + p.sum(-1, keepdim=True)
            out = out * correction + p @ v[:, k0:k1]
            m = m_new
        return out / s

    class Layer(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.norm1, self.norm2 = nn.LayerNorm(dim), nn.LayerNorm(dim)
            self.qkv, self.proj = nn.Linear(dim, 3 * dim), nn.Linear(dim, dim)
            self.mlp = nn.Sequential(nn.Linear(dim, 4 * dim), nn.GELU(), nn.Linear(4 * dim, dim))

        def forward(self, x: torch.Tensor) -> torch.Tensor:  # (length, dim)
            q, k, v = self.qkv(self.norm1(x)).view(length, 3, heads, head_dim).permute(1, 2, 0, 3)
            att = torch.cat([checkpoint(chunk_attention, q[:, i:i + q_chunk], k, v, i, use_reentrant=False)
                             for i in range(0, length, q_chunk)], 1)  # (heads, length, head_dim)
            x = x + self.proj(att.transpose(0, 1).reshape(length, dim))
            return x + self.mlp(self.norm2(x))

    class LM(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.embed, self.pos = nn.Embedding(vocab, dim), nn.Parameter(0.02 * torch.randn(length, dim))
            self.layers = nn.ModuleList(Layer() for _ in range(layers))
            self.norm, self.head = nn.LayerNorm(dim), nn.Linear(dim, vocab)

        def forward(self, tokens: torch.Tensor) -> torch.Tensor:
            x = self.embed(tokens) + self.pos
            for layer in self.layers:
                x = layer(x)
            return self.head(self.norm(x))

    model = LM()
    opt = torch.optim.AdamW(model.parameters(), lr=3e-4)
    gen = torch.Generator().manual_seed(83 + seed)
    total = 0.0
    for _ in range(steps):
        tokens = torch.randint(0, vocab, (length + 1,), generator=gen)
        opt.zero_grad(set_to_none=True)
        loss = nn.functional.cross_entropy(model(tokens[:-1]), tokens[1:])
        loss.backward()
        opt.step()
        total += loss.item()
    return total


@_workload(default_steps=10)
def vmap_ensemble_train(*, steps: int, seed: int) -> float:
    """A deep ensemble (Lakshminarayanan et al. 2017) of 8 small CNNs trained together as one
    batched model with torch.func: the 8 members (each a 3x3 Conv2d 3-32, 32-64 and 64-128 with
    GroupNorm of 8 groups, ReLU and 2x2 max pooling, then a linear 2048-256-10) initialised apart
    and stacked by torch.func.stack_module_state into tensors with a leading dimension of 8 (the
    stacked weights the leaves trained), one functional_call of a meta-device copy run over them
    by torch.func.vmap, each member on its own bootstrap batch of 64 of the step's 256 32x32 RGB
    images (indices from the data generator), so every convolution is a batched (grouped) one over
    the 8 members; the members' cross-entropies summed, backward into the stacked weights, Adam on
    them. Fixed shapes; 10 steps."""
    import copy

    from torch.func import functional_call, stack_module_state, vmap

    torch.manual_seed(0)
    members, pool, batch, size, classes = 8, 256, 64, 32, 10

    def member() -> nn.Sequential:
        def block(cin: int, cout: int) -> list[nn.Module]:
            return [nn.Conv2d(cin, cout, 3, padding=1), nn.GroupNorm(8, cout), nn.ReLU(), nn.MaxPool2d(2)]

        return nn.Sequential(*block(3, 32), *block(32, 64), *block(64, 128), nn.Flatten(),
                             nn.Linear(128 * 4 * 4, 256), nn.ReLU(), nn.Linear(256, classes))

    models = [member() for _ in range(members)]
    params, buffers = stack_module_state(models)  # type: ignore[arg-type]
    base = copy.deepcopy(models[0]).to("meta")
    del models

    def run(p: dict[str, torch.Tensor], b: dict[str, torch.Tensor], x: torch.Tensor) -> torch.Tensor:
        return functional_call(base, (p, b), (x,))

    ensemble = vmap(run)
    opt = torch.optim.Adam(list(params.values()), lr=1e-3)
    gen = torch.Generator().manual_seed(84 + seed)
    total = 0.0
    for _ in range(steps):
        images = torch.randn(pool, 3, size, size, generator=gen)
        labels = torch.randint(0, classes, (pool,), generator=gen)
        idx = torch.randint(0, pool, (members, batch), generator=gen)  # a bootstrap batch per member
        opt.zero_grad(set_to_none=True)
        logits = ensemble(params, buffers, images[idx])  # (members, batch, classes)
        loss = nn.functional.cross_entropy(logits.reshape(-1, classes), labels[idx].reshape(-1)) * members
        loss.backward()
        opt.step()
        total += loss.item()
    return total


@_workload(default_steps=16)
def dkl_gp_train(*, steps: int, seed: int) -> float:
    """Exact Gaussian-process regression with a deep kernel (deep kernel learning, Wilson et al.
    2016) trained on the exact marginal likelihood, in float64: each step draws a minibatch of n
    training points, n from 1024-2048 in steps of 128 (the data generator), of 32 input features
    and a target from a fixed smooth function plus noise, and 512 test points; an MLP 32-256-256-16
    (ReLU, float64) maps the inputs to features, an RBF kernel with 16 ARD lengthscales and an
    output scale (log-parametrised) gives K (n x n) plus the noise variance on its diagonal, and
    the loss is the negative log marginal likelihood per point (0.5 y^T K^-1 y + the sum of log
    diag L + const, L from torch.linalg.cholesky, alpha from cholesky_solve) plus the negative
    predictive log-likelihood of the 512 test points under the posterior (the cross-kernel 512 x
    n, a triangular solve for the variances); Adam on the MLP and the kernel's hyperparameters,
    everything backpropagated through the Cholesky factorisation and the solves. Matrices of 8 to
    32 MiB whose size changes with n every step (not a fixed-shape step); 16 steps."""
    import math

    torch.manual_seed(0)
    features, hidden, latent, test, low, high, step_n = 32, 256, 16, 512, 1024, 2048, 128
    dtype = torch.float64
    net = nn.Sequential(nn.Linear(features, hidden), nn.ReLU(), nn.Linear(hidden, hidden), nn.ReLU(),
                        nn.Linear(hidden, latent)).to(dtype)
    log_lengthscale = nn.Parameter(torch.zeros(latent, dtype=dtype))
    log_outputscale = nn.Parameter(torch.zeros((), dtype=dtype))
    log_noise = nn.Parameter(torch.tensor(-2.0, dtype=dtype))
    opt = torch.optim.Adam([*net.parameters(), log_lengthscale, log_outputscale, log_noise], lr=1e-3)
    direction = torch.randn(features, 4, dtype=dtype)

    def target(x: torch.Tensor) -> torch.Tensor:
        z = x @ direction
        return torch.sin(z[:, 0]) + 0.5 * torch.cos(2 * z[:, 1]) + 0.3 * z[:, 2] * z[:, 3]

    def kernel(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
        a, b = a / log_lengthscale.exp(), b / log_lengthscale.exp()
        sq = (a * a).sum(1)[:, None] + (b * b).sum(1)[None] - 2 * a @ b.T
        return log_outputscale.exp() * torch.exp(-0.5 * sq.clamp_min(0))

    gen = torch.Generator().manual_seed(85 + seed)
    total = 0.0
    for _ in range(steps):
        n = low + step_n * int(torch.randint(0, (high - low) // step_n + 1, (1,), generator=gen))
        x = torch.randn(n, features, dtype=dtype, generator=gen)
        y = target(x) + 0.1 * torch.randn(n, dtype=dtype, generator=gen)
        x_test = torch.randn(test, features, dtype=dtype, generator=gen)
        y_test = target(x_test) + 0.1 * torch.randn(test, dtype=dtype, generator=gen)
        opt.zero_grad(set_to_none=True)
        f, f_test = net(x), net(x_test)
        noise = log_noise.exp()
        k = kernel(f, f) + (noise + 1e-6) * torch.eye(n, dtype=dtype)
        chol = torch.linalg.cholesky(k)
        alpha = torch.cholesky_solve(y[:, None], chol)
        nll = (0.5 * (y[:, None] * alpha).sum() + chol.diagonal().log().sum()) / n + 0.5 * math.log(2 * math.pi)
        k_cross = kernel(f_test, f)  # (test, n)
        mean = (k_cross @ alpha)[:, 0]
        v = torch.linalg.solve_triangular(chol, k_cross.T, upper=False)  # (n, test)
        var = (log_outputscale.exp() - (v * v).sum(0)).clamp_min(1e-6) + noise
        pred_nll = 0.5 * ((y_test - mean) ** 2 / var + var.log()).mean()
        loss = nll + pred_nll
        loss.backward()
        opt.step()
        total += loss.item()
    return total


@_workload(default_steps=10)
def adaptive_softmax_lm(*, steps: int, seed: int) -> float:
    """A word-level language model over a 100000-word vocabulary with an adaptive softmax (Grave et
    al. 2017, nn.AdaptiveLogSoftmaxWithLoss; cutoffs 2000, 10000 and 40000, div_value 4), batch 8
    sequences of 256 tokens: an embedding 100000 x 256, 3 pre-norm causal transformer layers
    (d_model 256, 4 heads, MLP 1024 GELU), a final LayerNorm, and the adaptive softmax: a head of
    the 2000 most frequent words plus one logit per tail cluster over all 2048 positions, and the
    three tail clusters (8000 words through a 256-64 projection, 30000 through 256-16, 60000
    through 256-4) computed only on the positions whose target falls in them, gathered by index;
    the tokens drawn from a Zipf distribution (exponent 1.1) over the vocabulary by the data
    generator, so the number of positions in each cluster, and the shapes of its projection,
    logits and gradients, follow the data every step (not a fixed-shape step); Adam (a dense
    gradient and state for the whole embedding: 98 MiB each); 10 steps."""
    torch.manual_seed(0)
    vocab, length, batch, dim, heads, layers = 100000, 256, 8, 256, 4, 3
    zipf = 1.0 / torch.arange(1, vocab + 1, dtype=torch.float64) ** 1.1

    class LM(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.embed = nn.Embedding(vocab, dim)
            self.pos = nn.Parameter(0.02 * torch.randn(length, dim))
            self.layers = nn.ModuleList(nn.TransformerEncoderLayer(dim, heads, 4 * dim, dropout=0.0, activation="gelu",
                                                                   batch_first=True, norm_first=True)
                                        for _ in range(layers))
            self.norm = nn.LayerNorm(dim)
            self.softmax = nn.AdaptiveLogSoftmaxWithLoss(dim, vocab, [2000, 10000, 40000], div_value=4.0)

        def forward(self, tokens: torch.Tensor, targets: torch.Tensor) -> torch.Tensor:
            mask = nn.Transformer.generate_square_subsequent_mask(length)
            h = self.embed(tokens) + self.pos
            for layer in self.layers:
                h = layer(h, src_mask=mask, is_causal=True)
            return self.softmax(self.norm(h).reshape(-1, dim), targets.reshape(-1)).loss

    model = LM()
    opt = torch.optim.Adam(model.parameters(), lr=3e-4)
    gen = torch.Generator().manual_seed(86 + seed)
    total = 0.0
    for _ in range(steps):
        tokens = torch.multinomial(zipf, batch * (length + 1), replacement=True, generator=gen).view(batch, length + 1)
        opt.zero_grad(set_to_none=True)
        loss = model(tokens[:, :-1], tokens[:, 1:])
        loss.backward()
        opt.step()
        total += loss.item()
    return total


@_workload(default_steps=4)
def fno_train(*, steps: int, seed: int) -> float:
    """A Fourier neural operator (FNO, Li et al. 2021) learning the solution operator of a 2D
    elliptic problem on a 64x64 grid, batch 32: each input a coefficient field (a Gaussian field
    with spectrum (1 + |k|^2)^-1.5 thresholded to the two values 12 and 3) and the two grid
    coordinates, the target its solution of -lap u + u = a on the periodic unit square (both made
    in Fourier space by the data generator); a pointwise lift 3-32, 4 Fourier layers (torch.fft.
    rfft2 of the 32-channel field into a complex64 half-spectrum of 64 x 33, the 12 x 12 lowest
    modes of its two corners mixed by complex weights 32 x 32 x 12 x 12 (cfloat parameters) with
    torch.einsum("bixy,ioxy->boxy") into a zeroed spectrum, torch.fft.irfft2 back to the grid,
    plus a 1x1 convolution, GELU after all but the last), a pointwise projection 32-128-1; the
    relative L2 loss of the FNO paper, Adam (complex state for the spectral weights). Complex
    tensors beside real ones, each layer's spectrum and zeroed spectrum made anew, and the
    einsum's batched matmul over the 144 modes, whose operands are strided with the modes last,
    copying each mode's matrices on its own (thousands of small temporaries a step); fixed
    shapes; 4 steps."""
    torch.manual_seed(0)
    batch, size, width, modes, layers = 32, 64, 32, 12, 4

    class SpectralConv(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            scale = 1.0 / (width * width)
            self.low, self.high = (nn.Parameter(scale * torch.randn(width, width, modes, modes, dtype=torch.cfloat))
                                   for _ in range(2))

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            ft = torch.fft.rfft2(x)  # (batch, width, size, size // 2 + 1), complex64
            out = torch.zeros_like(ft)
            out[:, :, :modes, :modes] = torch.einsum("bixy,ioxy->boxy", ft[:, :, :modes, :modes], self.low)
            out[:, :, -modes:, :modes] = torch.einsum("bixy,ioxy->boxy", ft[:, :, -modes:, :modes], self.high)
            return torch.fft.irfft2(out, s=x.shape[-2:])

    class FNO(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.lift = nn.Conv2d(3, width, 1)
            self.spectral = nn.ModuleList(SpectralConv() for _ in range(layers))
            self.pointwise = nn.ModuleList(nn.Conv2d(width, width, 1) for _ in range(layers))
            self.project = nn.Sequential(nn.Conv2d(width, 128, 1), nn.GELU(), nn.Conv2d(128, 1, 1))

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            x = self.lift(x)
            for i, (spectral, pointwise) in enumerate(zip(self.spectral, self.pointwise)):
                x = spectral(x) + pointwise(x)
                x = nn.functional.gelu(x) if i < layers - 1 else x
            return self.project(x)

    def relative_l2(pred: torch.Tensor, target: torch.Tensor) -> torch.Tensor:
        return ((pred - target).flatten(1).norm(dim=1) / target.flatten(1).norm(dim=1)).mean()

    model = FNO()
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    gen = torch.Generator().manual_seed(87 + seed)
    freq = torch.fft.fftfreq(size) * size
    k2 = freq[:, None] ** 2 + torch.fft.rfftfreq(size)[None] ** 2 * size ** 2  # |k|^2 on the half-spectrum
    grid = torch.stack(torch.meshgrid(torch.linspace(0, 1, size), torch.linspace(0, 1, size), indexing="ij"))

    def batch_fn() -> tuple[torch.Tensor, torch.Tensor]:
        noise = torch.randn(batch, size, size, generator=gen)
        field = torch.fft.irfft2(torch.fft.rfft2(noise) / (1 + k2) ** 1.5, s=(size, size))
        coeff = torch.where(field > 0, 12.0, 3.0)
        solution = torch.fft.irfft2(torch.fft.rfft2(coeff) / (1 + 4 * torch.pi ** 2 * k2), s=(size, size))
        return torch.cat([coeff[:, None], grid.expand(batch, 2, size, size)], 1), solution[:, None]

    return _train(model, batch_fn, steps, relative_l2, opt)


@_workload(default_steps=6)
def revnet_train(*, steps: int, seed: int) -> float:
    """A reversible residual network (RevNet, Gomez et al. 2017) image classifier, batch 64
    images of 64x64 RGB, 100 classes, that keeps no activations inside its reversible stages: a
    3x3 stride-2 stem 3-64 (GroupNorm, ReLU), then 3 stages of 3 reversible blocks (64, 128 and
    256 channels at 32x32, 16x16 and 8x8, a 3x3 stride-2 convolution with GroupNorm between
    them), each block two residual functions F and G (GroupNorm, ReLU, 3x3 convolution, twice)
    over the two channel halves (y1 = x1 + F(x2), y2 = x2 + G(y1)); each stage one
    torch.autograd.Function whose forward runs its blocks under no_grad and saves only the
    stage's output, and whose backward walks the blocks in reverse, reconstructing each block's
    input from its output (x2 = y2 - G(y1), x1 = y1 - F(x2)) without autograd, running the block
    again with autograd on the reconstruction and backpropagating through that one block
    (parameter gradients accumulated by the inner backward); global average pooling, a linear
    256-100, cross-entropy, SGD with momentum. Fixed shapes; 6 steps."""
    torch.manual_seed(0)
    batch, size, classes, depth = 64, 64, 100, 3

    class Coupling(nn.Module):
        def __init__(self, channels: int) -> None:
            super().__init__()
            half = channels // 2

            def residual() -> nn.Sequential:
                return nn.Sequential(nn.GroupNorm(8, half), nn.ReLU(), nn.Conv2d(half, half, 3, padding=1, bias=False),
                                     nn.GroupNorm(8, half), nn.ReLU(), nn.Conv2d(half, half, 3, padding=1, bias=False))

            self.f, self.g = residual(), residual()

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            x1, x2 = x.chunk(2, 1)
            y1 = x1 + self.f(x2)
            return torch.cat([y1, x2 + self.g(y1)], 1)

        def inverse(self, y: torch.Tensor) -> torch.Tensor:
            y1, y2 = y.chunk(2, 1)
            x2 = y2 - self.g(y1)
            return torch.cat([y1 - self.f(x2), x2], 1)

    class ReversibleStage(torch.autograd.Function):
        @staticmethod
        def forward(ctx, x: torch.Tensor, blocks: nn.ModuleList) -> torch.Tensor:  # type: ignore[override]
            for block in blocks:  # autograd is off inside a Function's forward
                x = block(x)
            ctx.blocks = blocks
            ctx.save_for_backward(x)
            return x

        @staticmethod
        def backward(ctx, grad: torch.Tensor) -> tuple[torch.Tensor, None]:  # type: ignore[override]
            (y,) = ctx.saved_tensors
            for block in reversed(ctx.blocks):
                with torch.no_grad():
                    x = block.inverse(y)
                with torch.enable_grad():
                    x.requires_grad_()
                    torch.autograd.backward(block(x), grad)
                grad, y = x.grad, x.detach()
            return grad, None

    class Stage(nn.Module):
        def __init__(self, channels: int) -> None:
            super().__init__()
            self.blocks = nn.ModuleList(Coupling(channels) for _ in range(depth))

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            return cast(torch.Tensor, ReversibleStage.apply(x, self.blocks))

    def down(cin: int, cout: int) -> nn.Sequential:
        return nn.Sequential(nn.Conv2d(cin, cout, 3, 2, 1, bias=False), nn.GroupNorm(8, cout), nn.ReLU())

    model = nn.Sequential(down(3, 64), Stage(64), down(64, 128), Stage(128), down(128, 256), Stage(256),
                          nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(256, classes))
    opt = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9, weight_decay=1e-4)
    gen = torch.Generator().manual_seed(88 + seed)
    batch_fn = lambda: (torch.randn(batch, 3, size, size, generator=gen),  # noqa: E731
                        torch.randint(0, classes, (batch,), generator=gen))
    return _train(model, batch_fn, steps, nn.functional.cross_entropy, opt)


@_workload(default_steps=12)
def ance_retrieval_train(*, steps: int, seed: int) -> float:
    """Dense retrieval trained with hard negatives mined from an index of the whole corpus that is
    rebuilt as training goes (ANCE, Xiong et al. 2021), with two bag-of-words towers (DSSM-like): a
    corpus of 100000 documents of 32 tokens (vocabulary 30000, drawn once by the data generator),
    a query tower and a document tower, each an nn.EmbeddingBag 30000 x 256 (mean) and a residual
    MLP 256-1024-256 (GELU) with a LayerNorm, L2-normalised; every 4 steps the document tower
    encodes the whole corpus under no_grad, 4096 documents at a time, into a new 100000 x 256
    index (98 MiB) while the old one is still held, then replaces it; each step 256 queries
    (12-token windows of their positive documents, 30% of the tokens replaced at random) are
    encoded, scored against the whole index (a 256 x 100000 score matrix, 98 MiB, the positives
    masked out), their 15 hardest negatives taken by torch.topk, and both towers trained on a
    softmax of each query over the 256 positives and 3840 negatives (a 256 x 4096 logit matrix,
    temperature 0.05); AdamW (dense gradients and state for both tables). Fixed shapes; a large
    buffer made anew every 4 steps beside the old one; 12 steps."""
    torch.manual_seed(0)
    vocab, docs, doc_len, query_len, dim = 30000, 100000, 32, 12, 256
    batch, negatives, refresh, chunk = 256, 15, 4, 4096

    class Tower(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.embed = nn.EmbeddingBag(vocab, dim, mode="mean")
            self.mlp = nn.Sequential(nn.Linear(dim, 4 * dim), nn.GELU(), nn.Linear(4 * dim, dim))
            self.norm = nn.LayerNorm(dim)

        def forward(self, ids: torch.Tensor) -> torch.Tensor:
            h = self.embed(ids)
            return nn.functional.normalize(self.norm(h + self.mlp(h)), dim=-1)

    query_tower, doc_tower = Tower(), Tower()
    opt = torch.optim.AdamW([*query_tower.parameters(), *doc_tower.parameters()], lr=1e-3)
    gen = torch.Generator().manual_seed(89 + seed)
    corpus = torch.randint(0, vocab, (docs, doc_len), generator=gen)
    rows = torch.arange(batch)

    def encode_corpus() -> torch.Tensor:
        index = torch.empty(docs, dim)
        with torch.no_grad():
            for start in range(0, docs, chunk):
                index[start:start + chunk] = doc_tower(corpus[start:start + chunk])
        return index

    index = torch.empty(0)
    total = 0.0
    for step in range(steps):
        if step % refresh == 0:
            index = encode_corpus()  # the old index is dropped only once the new one is built
        positives = torch.randint(0, docs, (batch,), generator=gen)
        start = torch.randint(0, doc_len - query_len + 1, (batch, 1), generator=gen)
        queries = corpus[positives[:, None], start + torch.arange(query_len)]
        noisy = torch.rand(batch, query_len, generator=gen) < 0.3
        queries = torch.where(noisy, torch.randint(0, vocab, (batch, query_len), generator=gen), queries)
        opt.zero_grad(set_to_none=True)
        q = query_tower(queries)
        with torch.no_grad():
            scores = q @ index.T  # (batch, docs)
            scores[rows, positives] = float("-inf")
            hard = scores.topk(negatives, 1).indices
            del scores
        d = doc_tower(corpus[torch.cat([positives, hard.reshape(-1)])])  # (batch * (1 + negatives), dim)
        loss = nn.functional.cross_entropy(q @ d.T / 0.05, rows)
        loss.backward()
        opt.step()
        total += loss.item()
    return total


@_workload(default_steps=10)
def graphsage_sampled_train(*, steps: int, seed: int) -> float:
    """GraphSAGE (Hamilton et al. 2017) node classification on one large graph by neighbour
    sampling, the neighbourhood means taken as sparse matrix products: a graph of 100000 nodes
    (out-degrees heavy-tailed, 3-200, about 840000 edges in CSR arrays) with 128 fixed features
    per node (49 MiB) and 47 classes, drawn once by the data generator; each step 1024 target
    nodes and 3 hops outward, each hop sampling 10, 10 and 5 neighbours of every node of the hop
    inside it (with replacement, from the CSR arrays), deduplicating them with those nodes by
    torch.unique(return_inverse=True), and making a coalesced COO adjacency (weights 1/fanout;
    rows the inner hop's nodes, columns the hop's); 3 SAGE layers (256, 256, 47: a linear of each node's
    own features plus a linear of torch.sparse.mm of the adjacency and the layer below, ReLU and
    dropout 0.2 between), cross-entropy on the targets, Adam. The number of nodes of every hop,
    and every tensor sized by it, follows the sampled neighbourhoods (not a fixed-shape step); 10
    steps."""
    torch.manual_seed(0)
    nodes, features, hidden, classes, batch, fanouts = 100000, 128, 256, 47, 1024, (10, 10, 5)
    gen = torch.Generator().manual_seed(90 + seed)
    degree = (3 * torch.rand(nodes, generator=gen).pow(-0.7)).long().clamp(1, 200)
    rowptr = torch.cat([torch.zeros(1, dtype=torch.long), degree.cumsum(0)])
    col = torch.randint(0, nodes, (int(rowptr[-1]),), generator=gen)
    x_all = torch.randn(nodes, features, generator=gen)
    y_all = torch.randint(0, classes, (nodes,), generator=gen)

    class SAGE(nn.Module):
        def __init__(self, cin: int, cout: int) -> None:
            super().__init__()
            self.own, self.neighbours = nn.Linear(cin, cout), nn.Linear(cin, cout, bias=False)

        def forward(self, h: torch.Tensor, adj: torch.Tensor, own: torch.Tensor) -> torch.Tensor:
            return self.own(h[own]) + self.neighbours(torch.sparse.mm(adj, h))

    layers = nn.ModuleList([SAGE(features, hidden), SAGE(hidden, hidden), SAGE(hidden, classes)])
    opt = torch.optim.Adam(layers.parameters(), lr=1e-3)

    def sample(targets: torch.Tensor) -> tuple[torch.Tensor, list[tuple[torch.Tensor, torch.Tensor]]]:
        """Hops from the targets outward: the outermost nodes, and per hop (innermost first) the
        adjacency from its nodes to the hop inside it and where that hop's nodes sit among its own."""
        hops, dst = [], targets
        for fanout in fanouts:
            picks = rowptr[dst, None] + (torch.rand(len(dst), fanout, generator=gen) * degree[dst, None]).long()
            src, inverse = torch.unique(torch.cat([dst, col[picks].reshape(-1)]), return_inverse=True)
            edge_rows = torch.arange(len(dst)).repeat_interleave(fanout)
            adj = torch.sparse_coo_tensor(torch.stack([edge_rows, inverse[len(dst):]]),
                                          torch.full((len(edge_rows),), 1.0 / fanout), (len(dst), len(src)),
                                          check_invariants=False).coalesce()
            hops.append((adj, inverse[:len(dst)]))
            dst = src
        return dst, hops

    total = 0.0
    for _ in range(steps):
        targets = torch.randperm(nodes, generator=gen)[:batch]
        outer, hops = sample(targets)
        h = x_all[outer]
        opt.zero_grad(set_to_none=True)
        for i, (layer, (adj, own)) in enumerate(zip(layers, reversed(hops))):
            h = layer(h, adj, own)
            if i < len(layers) - 1:
                h = nn.functional.dropout(torch.relu(h), 0.2)
        loss = nn.functional.cross_entropy(h, y_all[targets])
        loss.backward()
        opt.step()
        total += loss.item()
    return total


@_workload(default_steps=12)
def shampoo_train(*, steps: int, seed: int) -> float:
    """A causal transformer language model trained with a Shampoo optimizer (Gupta et al. 2018)
    written as a torch.optim.Optimizer: vocabulary 8000, batch 16 sequences of 128 tokens, an
    embedding 8000 x 256 plus learned positions, 4 pre-norm nn.TransformerEncoderLayer (d_model
    256, 4 heads, MLP 1024, no dropout), a LayerNorm and a linear head to the vocabulary;
    next-token cross-entropy. Each of the 17 weight matrices with both sides at most 1024 (the
    learned positions 128 x 256, and per layer the attention's 768 x 256 input and 256 x 256
    output projections and the MLP's 1024 x 256 and 256 x 1024) keeps float64 Kronecker-factor
    statistics L (rows x rows) and R (cols x cols), to which G G^T and G^T G are added every
    step, and their inverse fourth roots in float32, recomputed every 4 steps from
    torch.linalg.eigh of each factor (the new roots replacing the old); its update L^-1/4 G
    R^-1/4 is grafted to the gradient's norm; the embedding, the head and every vector take a
    diagonal Adagrad update; heavy-ball momentum 0.9 on all. Long-lived optimizer state (34
    factors of 128 x 128 to 1024 x 1024, 8 MiB the largest, and their roots), and every 4 steps 34
    eigendecompositions between a backward and the update. Fixed shapes; 12 steps."""
    torch.manual_seed(0)
    vocab, length, batch, dim, heads, layers = 8000, 128, 16, 256, 4, 4

    class Shampoo(torch.optim.Optimizer):
        def __init__(self, params: list[nn.Parameter], lr: float, momentum: float = 0.9, eps: float = 1e-6,
                     every: int = 4, max_dim: int = 1024) -> None:
            super().__init__(params, {"lr": lr, "momentum": momentum, "eps": eps})
            self.every, self.max_dim = every, max_dim

        @torch.no_grad()
        def step(self, closure: None = None) -> None:  # type: ignore[override]
            for group in self.param_groups:
                lr, momentum, eps = group["lr"], group["momentum"], group["eps"]
                for p in group["params"]:
                    if p.grad is None:
                        continue
                    g, state = p.grad, self.state[p]
                    if not state:
                        state["step"], state["momentum"] = 0, torch.zeros_like(p)
                        if p.dim() == 2 and max(p.shape) <= self.max_dim:
                            for key, n in (("L", p.shape[0]), ("R", p.shape[1])):
                                state[key] = eps * torch.eye(n, dtype=torch.float64)
                        else:
                            state["sum_sq"] = torch.zeros_like(p)
                    if "L" in state:
                        g64 = g.double()
                        state["L"].addmm_(g64, g64.T)
                        state["R"].addmm_(g64.T, g64)
                        if state["step"] % self.every == 0:
                            for key in ("L", "R"):
                                vals, vecs = torch.linalg.eigh(state[key])
                                state[key + "_root"] = ((vecs * vals.clamp_min(eps) ** -0.25) @ vecs.T).float()
                        update = state["L_root"] @ g @ state["R_root"]
                        update.mul_(g.norm() / update.norm().clamp_min(1e-12))
                    else:
                        state["sum_sq"].addcmul_(g, g)
                        update = g / (state["sum_sq"].sqrt() + eps)
                    state["step"] += 1
                    state["momentum"].mul_(momentum).add_(update)
                    p.add_(state["momentum"], alpha=-lr)

    class LM(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.embed, self.pos = nn.Embedding(vocab, dim), nn.Parameter(0.02 * torch.randn(length, dim))
            layer = nn.TransformerEncoderLayer(dim, heads, 4 * dim, dropout=0.0, batch_first=True, norm_first=True)
            self.encoder = nn.TransformerEncoder(layer, layers, enable_nested_tensor=False)
            self.norm, self.head = nn.LayerNorm(dim), nn.Linear(dim, vocab)
            self.register_buffer("mask", nn.Transformer.generate_square_subsequent_mask(length))

        def forward(self, ids: torch.Tensor) -> torch.Tensor:
            h = self.encoder(self.embed(ids) + self.pos, mask=self.mask, is_causal=True)
            return self.head(self.norm(h)).reshape(-1, vocab)

    model = LM()
    opt = Shampoo(list(model.parameters()), lr=0.02)
    gen = torch.Generator().manual_seed(91 + seed)

    def batch_fn() -> tuple[torch.Tensor, torch.Tensor]:
        ids = torch.randint(0, vocab, (batch, length + 1), generator=gen)
        return ids[:, :-1], ids[:, 1:].reshape(-1)

    return _train(model, batch_fn, steps, nn.functional.cross_entropy, opt)


@_workload(default_steps=24)
def paged_kv_serve(*, steps: int, seed: int) -> float:
    """Inference only: serving a decoder-only transformer (4 pre-norm layers, d_model 512, 8 heads,
    MLP 2048, vocabulary 16000) with continuous batching over a paged key/value cache (in the
    manner of vLLM's PagedAttention), under torch.no_grad(): each layer's cache one pool of 384
    blocks of 16 positions (2 x 8 heads x 64 each; 24 MiB per layer) made once; requests arrive
    0-5 iterations apart, with prompts of 16-256 tokens and 16-128 tokens to generate (the data
    generator), and wait until fewer than 16 are running and the free list holds the blocks of
    their whole length; an admitted request's prompt runs alone (causal
    scaled_dot_product_attention) and its keys and values are written to its blocks' slots;
    every iteration the running requests (1-16) decode one token together: their new keys and
    values written to their slots by index_copy_, and each one's blocks gathered from the pool by
    its block table (padded to the longest running request) into a contiguous cache attended with
    a mask; greedy tokens; a finished request's blocks go back to the free list. The running set,
    the gathered caches and the prompts' tensors all change size as requests come and go (not a
    fixed-shape step); 24 requests."""
    torch.manual_seed(0)
    vocab, dim, heads, layers, block, pool_blocks, max_running = 16000, 512, 8, 4, 16, 384, 16
    head_dim = dim // heads

    class Layer(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.ln1, self.ln2 = nn.LayerNorm(dim), nn.LayerNorm(dim)
            self.qkv, self.proj = nn.Linear(dim, 3 * dim), nn.Linear(dim, dim)
            self.ff = nn.Sequential(nn.Linear(dim, 4 * dim), nn.GELU(), nn.Linear(4 * dim, dim))
            self.register_buffer("pool", torch.zeros(pool_blocks * block, 2, heads, head_dim), persistent=False)

        def forward(self, x: torch.Tensor, slots: torch.Tensor, tables: torch.Tensor | None,
                    lengths: torch.Tensor | None) -> torch.Tensor:
            """``x`` (requests, positions, dim): a prompt (1, n, dim) when ``tables`` is None, else the
            running requests' new tokens (r, 1, dim) against their cached positions."""
            r, t, _ = x.shape
            q, k, v = self.qkv(self.ln1(x)).view(r, t, 3, heads, head_dim).unbind(2)
            self.pool.index_copy_(0, slots, torch.stack([k, v], 2).view(r * t, 2, heads, head_dim))
            if tables is None:
                att = nn.functional.scaled_dot_product_attention(q.transpose(1, 2), k.transpose(1, 2),
                                                                 v.transpose(1, 2), is_causal=True)
            else:
                cache = self.pool.view(pool_blocks, block, 2, heads, head_dim)[tables]
                cache = cache.view(r, -1, 2, heads, head_dim).permute(2, 0, 3, 1, 4)  # (2, r, heads, n, head_dim)
                mask = (torch.arange(cache.shape[3]) < lengths[:, None])[:, None, None]
                att = nn.functional.scaled_dot_product_attention(q.transpose(1, 2), cache[0], cache[1], attn_mask=mask)
            x = x + self.proj(att.transpose(1, 2).reshape(r, t, dim))
            return x + self.ff(self.ln2(x))

    class Decoder(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.tok, self.pos = nn.Embedding(vocab, dim), nn.Embedding(384, dim)
            self.layers = nn.ModuleList(Layer() for _ in range(layers))
            self.ln, self.head = nn.LayerNorm(dim), nn.Linear(dim, vocab)

        def forward(self, ids: torch.Tensor, positions: torch.Tensor, slots: torch.Tensor,
                    tables: torch.Tensor | None = None, lengths: torch.Tensor | None = None) -> torch.Tensor:
            h = self.tok(ids) + self.pos(positions)
            for layer in self.layers:
                h = layer(h, slots, tables, lengths)
            return self.head(self.ln(h[:, -1]))  # each request's last position

    model = Decoder().eval()
    gen = torch.Generator().manual_seed(92 + seed)
    draw = lambda low, high: int(torch.randint(low, high + 1, (1,), generator=gen))  # noqa: E731
    arrivals = list(itertools.accumulate(draw(0, 5) for _ in range(steps)))
    requests = [(arrival, torch.randint(0, vocab, (draw(16, 256),), generator=gen), draw(16, 128))
                for arrival in arrivals]
    free = list(range(pool_blocks))
    running: list[dict] = []  # each: its blocks, its length so far, tokens still to make, its last token
    waiting: list[tuple[int, torch.Tensor, int]] = []
    total, it = 0.0, 0

    def slot(blocks: list[int], pos: int) -> int:
        return blocks[pos // block] * block + pos % block

    with torch.no_grad():
        while requests or waiting or running:
            while requests and requests[0][0] <= it:
                waiting.append(requests.pop(0))
            while waiting and len(running) < max_running:
                _, prompt, new = waiting[0]
                need = -(-(len(prompt) + new) // block)
                if need > len(free):
                    break
                waiting.pop(0)
                blocks, free = free[:need], free[need:]
                n = len(prompt)
                logits = model(prompt[None], torch.arange(n)[None], torch.tensor([slot(blocks, i) for i in range(n)]))
                token = logits.argmax(-1)
                total += float(logits.max())
                running.append({"blocks": blocks, "length": n, "left": new - 1, "token": token})
            if running:
                ids = torch.cat([r["token"] for r in running])[:, None]
                positions = torch.tensor([[r["length"]] for r in running])
                slots = torch.tensor([slot(r["blocks"], r["length"]) for r in running])
                width = max(len(r["blocks"]) for r in running)
                tables = torch.tensor([r["blocks"] + [0] * (width - len(r["blocks"])) for r in running])
                logits = model(ids, positions, slots, tables, positions[:, 0] + 1)
                total += float(logits.max(-1).values.sum())
                for r, token in zip(running, logits.argmax(-1)):
                    r["token"], r["length"], r["left"] = token[None], r["length"] + 1, r["left"] - 1
                free += [b for r in running if r["left"] <= 0 for b in r["blocks"]]
                running = [r for r in running if r["left"] > 0]
            it += 1
    return total


@_workload(default_steps=4)
def dino_multicrop_train(*, steps: int, seed: int) -> float:
    """DINO-style self-distillation with multi-crop (Caron et al. 2021), batch 16 images of
    128x128 RGB: each step 2 global crops (a random square of 81-128 pixels, 40-100% of the
    image, resized to 96x96 by bilinear interpolation) and 6 local crops (29-81 pixels, 5-40%,
    resized to 48x48), each with a per-image random horizontal flip (all from the data
    generator); a student ViT (8x8 patches by a strided convolution, a class token, learned
    positions on the 12 x 12 global grid interpolated bicubically to the 6 x 6 local grid, 4
    pre-norm nn.TransformerEncoderLayer of width 192, 3 heads, MLP 768, no dropout, a final
    LayerNorm) with a DINO head (MLP 192-512-512-128, L2-normalised, a weight-normalised linear
    128-4096 to the prototypes) runs the two global crops as one batch of 32 (145 tokens) and
    the six local crops as one batch of 96 (37 tokens); an EMA teacher of the same shape
    (requires_grad False) runs the global crops only, under torch.no_grad(); the teacher's
    outputs centred (a centre kept as an EMA of its batch means, made anew every step) and
    sharpened (softmax at temperature 0.04) against the student's log-softmax at 0.1 for every
    teacher / student view pair but the same view (14 cross-entropy terms, each a log_softmax of
    its own); gradient clipping at 3, AdamW, then the teacher's weights moved towards the
    student's (momentum 0.996, a temporary per parameter). Two resolutions through one student,
    a model copy without autograd, 8 views' outputs of 4096 logits each; 4 steps. Not fixed
    shapes: interpolate copies each crop at its drawn side before resizing it, so a few
    allocations a step change size (measured with the seventeenth set)."""
    torch.manual_seed(0)
    batch, size, dim, heads, depth, patch, prototypes = 16, 128, 192, 3, 4, 8, 4096
    global_size, local_size = 96, 48

    class ViT(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            grid = global_size // patch
            self.patch = nn.Conv2d(3, dim, patch, patch)
            self.cls = nn.Parameter(0.02 * torch.randn(1, 1, dim))
            self.pos = nn.Parameter(0.02 * torch.randn(1, dim, grid, grid))
            layer = nn.TransformerEncoderLayer(dim, heads, 4 * dim, dropout=0.0, activation="gelu", batch_first=True,
                                               norm_first=True)
            self.blocks = nn.TransformerEncoder(layer, depth, enable_nested_tensor=False)
            self.norm = nn.LayerNorm(dim)
            self.mlp = nn.Sequential(nn.Linear(dim, 512), nn.GELU(), nn.Linear(512, 512), nn.GELU(),
                                     nn.Linear(512, 128))
            self.last = nn.utils.parametrizations.weight_norm(nn.Linear(128, prototypes, bias=False))

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            x = self.patch(x)
            pos = self.pos if x.shape[-1] == self.pos.shape[-1] else \
                nn.functional.interpolate(self.pos, size=x.shape[-2:], mode="bicubic", align_corners=False)
            x = (x + pos).flatten(2).transpose(1, 2)
            x = self.norm(self.blocks(torch.cat([self.cls.expand(len(x), -1, -1), x], 1)))[:, 0]
            return self.last(nn.functional.normalize(self.mlp(x), dim=-1))

    student, teacher = ViT(), ViT()
    teacher.load_state_dict(student.state_dict())
    teacher.requires_grad_(False)
    opt = torch.optim.AdamW(student.parameters(), lr=5e-4, weight_decay=0.04)
    gen = torch.Generator().manual_seed(93 + seed)
    center = torch.zeros(1, prototypes)

    def crops(images: torch.Tensor, n: int, low: int, high: int, out: int) -> torch.Tensor:
        views = []
        for _ in range(n):
            side = int(torch.randint(low, high + 1, (1,), generator=gen))
            top, left = (int(v) for v in torch.randint(0, size - side + 1, (2,), generator=gen))
            view = nn.functional.interpolate(images[:, :, top:top + side, left:left + side], size=(out, out),
                                             mode="bilinear", align_corners=False)
            flip = torch.rand(batch, 1, 1, 1, generator=gen) < 0.5
            views.append(torch.where(flip, view.flip(3), view))
        return torch.cat(views)

    total = 0.0
    for _ in range(steps):
        images = torch.rand(batch, 3, size, size, generator=gen)
        global_views, local_views = crops(images, 2, 81, 128, global_size), crops(images, 6, 29, 81, local_size)
        with torch.no_grad():
            teacher_out = teacher(global_views)
            targets = nn.functional.softmax((teacher_out - center) / 0.04, dim=-1).chunk(2)
        opt.zero_grad(set_to_none=True)
        student_out = (torch.cat([student(global_views), student(local_views)]) / 0.1).chunk(8)
        loss, terms = torch.zeros(()), 0
        for iq, q in enumerate(targets):
            for v, s in enumerate(student_out):
                if v != iq:
                    loss = loss + torch.sum(-q * nn.functional.log_softmax(s, dim=-1), dim=-1).mean()
                    terms += 1
        loss = loss / terms
        loss.backward()
        nn.utils.clip_grad_norm_(student.parameters(), 3.0)
        opt.step()
        with torch.no_grad():
            for pt, ps in zip(teacher.parameters(), student.parameters()):
                pt.mul_(0.996).add_((1 - 0.996) * ps.detach())
            center = center * 0.9 + teacher_out.mean(0, keepdim=True) * 0.1
        total += loss.item()
    return total


@_workload(default_steps=4)
def slimmable_train(*, steps: int, seed: int) -> float:
    """A slimmable CNN (Yu et al. 2019, universally slimmable networks) trained by the sandwich
    rule with in-place distillation, batch 96 images of 32x32 RGB, 100 classes: 8 3x3
    convolutions (64, 64, 128, 128, 256, 256, 512, 512 channels at full width, stride 2 at the
    third, fifth and seventh) whose weights are sliced to the running width (7 widths, 0.25 to 1
    by 0.125 of each layer's channels; the input and the logits keep theirs), each followed by a
    switchable BatchNorm (a private BatchNorm2d for each width) and ReLU, global average
    pooling, a linear head sliced on its input side. Each step runs the same batch at the full
    width (cross-entropy with the labels, its softened predictions kept detached), the smallest
    width and two widths drawn from the five between (the data generator) against those
    predictions (KL divergence), each forward followed by its backward, gradients accumulated
    (every slice's gradient scattered into a full-size weight gradient) and one SGD-momentum
    step. Activations change size within a step and from step to step; 4 steps."""
    torch.manual_seed(0)
    batch, size, classes = 96, 32, 100
    widths = [0.25 + 0.125 * i for i in range(7)]
    plan = [(64, 1), (64, 1), (128, 2), (128, 1), (256, 2), (256, 1), (512, 2), (512, 1)]

    class SlimConv(nn.Conv2d):
        def forward(self, x: torch.Tensor) -> torch.Tensor:  # type: ignore[override]
            out = int(self.out_channels * self.width)
            return nn.functional.conv2d(x, self.weight[:out, :x.shape[1]], None, self.stride, self.padding)

    class SwitchableNorm(nn.Module):
        def __init__(self, channels: int) -> None:
            super().__init__()
            self.norms = nn.ModuleList(nn.BatchNorm2d(int(channels * w)) for w in widths)

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            return self.norms[widths.index(self.width)](x)

    class SlimHead(nn.Linear):
        def forward(self, x: torch.Tensor) -> torch.Tensor:  # type: ignore[override]
            return nn.functional.linear(x, self.weight[:, :x.shape[1]], self.bias)

    layers: list[nn.Module] = []
    cin = 3
    for cout, stride in plan:
        layers += [SlimConv(cin, cout, 3, stride, 1, bias=False), SwitchableNorm(cout), nn.ReLU()]
        cin = cout
    model = nn.Sequential(*layers, nn.AdaptiveAvgPool2d(1), nn.Flatten(), SlimHead(cin, classes))
    opt = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9, weight_decay=5e-5, nesterov=True)
    gen = torch.Generator().manual_seed(94 + seed)

    def set_width(width: float) -> None:
        for m in model.modules():
            if isinstance(m, (SlimConv, SwitchableNorm)):
                m.width = width

    total = 0.0
    for _ in range(steps):
        images = torch.randn(batch, 3, size, size, generator=gen)
        labels = torch.randint(0, classes, (batch,), generator=gen)
        drawn = [widths[int(i)] for i in torch.randint(1, len(widths) - 1, (2,), generator=gen)]
        opt.zero_grad(set_to_none=True)
        set_width(widths[-1])
        logits = model(images)
        loss = nn.functional.cross_entropy(logits, labels)
        loss.backward()
        soft = logits.detach().log_softmax(-1)
        total += loss.item()
        for width in [widths[0], *drawn]:
            set_width(width)
            loss = nn.functional.kl_div(model(images).log_softmax(-1), soft, reduction="batchmean", log_target=True)
            loss.backward()
            total += loss.item()
        opt.step()
    return total


@_workload(default_steps=4)
def sam_train(*, steps: int, seed: int) -> float:
    """Sharpness-aware minimisation (SAM, Foret et al. 2021) of a ResNet-style CNN, batch 64
    images of 32x32 RGB, 100 classes: a 3x3 stem 3-64 with BatchNorm and ReLU, 3 stages of two
    basic residual blocks (64, 128 and 256 channels at 32x32, 16x16 and 8x8), global average
    pooling, a linear 256-100; SAM written as a torch.optim.Optimizer around SGD with momentum
    0.9 and weight decay 5e-4: each step a forward and backward, then the gradients' global
    norm (a stack of per-parameter norms), every parameter moved by e = rho g / ||g|| (rho 0.05)
    with e kept in the optimizer's state per parameter (replacing the previous step's), the
    gradients cleared, a second forward and backward at the perturbed weights (BatchNorm's
    running statistics frozen for it), the weights moved back by e, and the SGD step on the
    second gradients. Two full forward/backward passes a step beside a long-lived
    weight-sized perturbation and momentum state; fixed shapes; 4 steps."""
    torch.manual_seed(0)
    batch, size, classes = 64, 32, 100

    class SAM(torch.optim.Optimizer):
        def __init__(self, params: list[nn.Parameter], rho: float, **base: float) -> None:
            super().__init__(params, {"rho": rho})
            self.base = torch.optim.SGD(self.param_groups, **base)  # type: ignore[arg-type]
            self.param_groups = self.base.param_groups

        @torch.no_grad()
        def first_step(self) -> None:
            params = [p for group in self.param_groups for p in group["params"] if p.grad is not None]
            norm = torch.norm(torch.stack([p.grad.norm(p=2) for p in params]), p=2)
            for group in self.param_groups:
                scale = group["rho"] / (norm + 1e-12)
                for p in group["params"]:
                    if p.grad is not None:
                        e = p.grad * scale
                        p.add_(e)
                        self.state[p]["e"] = e

        @torch.no_grad()
        def second_step(self) -> None:
            for group in self.param_groups:
                for p in group["params"]:
                    if p.grad is not None:
                        p.sub_(self.state[p]["e"])
            self.base.step()

        def step(self, closure: None = None) -> None:  # type: ignore[override]
            raise RuntimeError("SAM takes first_step and second_step")

    def stage(cin: int, cout: int, stride: int) -> list[nn.Module]:
        return [_ResidualBlock(cin, cout, stride), _ResidualBlock(cout, cout, 1)]

    model = nn.Sequential(nn.Conv2d(3, 64, 3, 1, 1, bias=False), nn.BatchNorm2d(64), nn.ReLU(),
                          *stage(64, 64, 1), *stage(64, 128, 2), *stage(128, 256, 2),
                          nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(256, classes))
    norms = [m for m in model.modules() if isinstance(m, nn.BatchNorm2d)]
    opt = SAM(list(model.parameters()), rho=0.05, lr=0.1, momentum=0.9, weight_decay=5e-4)
    gen = torch.Generator().manual_seed(95 + seed)
    total = 0.0
    for _ in range(steps):
        images = torch.randn(batch, 3, size, size, generator=gen)
        labels = torch.randint(0, classes, (batch,), generator=gen)
        opt.zero_grad(set_to_none=True)
        loss = nn.functional.cross_entropy(model(images), labels)
        loss.backward()
        opt.first_step()
        opt.zero_grad(set_to_none=True)
        for m in norms:
            m.momentum = 0.0
        nn.functional.cross_entropy(model(images), labels).backward()
        for m in norms:
            m.momentum = 0.1
        opt.second_step()
        total += loss.item()
    return total


@_workload(default_steps=6)
def fsdp_gather_train(*, steps: int, seed: int) -> float:
    """A causal transformer language model trained with fully sharded data parallelism (FSDP,
    ZeRO-3) simulated in one process as one rank of 4: vocabulary 8000 (the embedding tied to
    the head), batch 8 sequences of 128 tokens, 6 pre-norm layers of width 512, 8 heads, MLP
    2048, written functionally; each layer's 12 parameters (3.15 M floats) flattened into one
    flat parameter split into 4 shards, this rank's shard the only trained parameter of the
    layer and the other 3 held as buffers standing in for the other ranks'. Before a layer runs
    its flat parameter is gathered whole by a torch.autograd.Function (torch.cat of the 4 shards,
    12 MiB, the all-gather stand-in) and split into views of the layer's parameters; a
    saved-tensor hook (torch.autograd.graph.saved_tensors_hooks) saves any view of it as a
    reference, so the full parameter is freed when the layer's forward ends and gathered again
    in the backward when the layer's first saved weight is unpacked; the Function's backward
    copies this rank's slice of the full flat gradient into the shard's gradient (the
    reduce-scatter stand-in) and drops the re-gathered parameter. The embedding, final LayerNorm
    and positions unsharded; AdamW on the shards and those. Large transient blocks gathered
    and freed layer by layer in both directions beside the activations; fixed shapes; 6
    steps."""
    torch.manual_seed(0)
    vocab, length, batch, dim, heads, layers, world = 8000, 128, 8, 512, 8, 6, 4
    spec = [("ln1.weight", (dim,)), ("ln1.bias", (dim,)), ("qkv.weight", (3 * dim, dim)), ("qkv.bias", (3 * dim,)),
            ("proj.weight", (dim, dim)), ("proj.bias", (dim,)), ("ln2.weight", (dim,)), ("ln2.bias", (dim,)),
            ("fc1.weight", (4 * dim, dim)), ("fc1.bias", (4 * dim,)), ("fc2.weight", (dim, 4 * dim)),
            ("fc2.bias", (dim,))]
    sizes = [int(torch.Size(shape).numel()) for _, shape in spec]

    class Unit(nn.Module):
        """One layer's flat parameter: this rank's shard (trained) and the other ranks' (buffers)."""

        def __init__(self) -> None:
            super().__init__()
            flat = torch.cat([(torch.ones(shape) if name.startswith("ln") and name.endswith("weight") else
                               0.02 * torch.randn(shape) if len(shape) == 2 else torch.zeros(shape)).flatten()
                              for name, shape in spec])
            shards = nn.functional.pad(flat, (0, -len(flat) % world)).chunk(world)
            self.shard = nn.Parameter(shards[0].clone())
            for rank in range(1, world):
                self.register_buffer(f"rank{rank}", shards[rank].clone())
            self.gathered: torch.Tensor | None = None

        def others(self) -> list[torch.Tensor]:
            return [getattr(self, f"rank{rank}") for rank in range(1, world)]

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            full = AllGather.apply(self, self.shard, *self.others())
            self.gathered = full
            p = {name: piece.view(shape) for (name, shape), piece in
                 zip(spec, full[:sum(sizes)].split(sizes))}
            b, t, _ = x.shape
            h = nn.functional.layer_norm(x, (dim,), p["ln1.weight"], p["ln1.bias"])
            q, k, v = nn.functional.linear(h, p["qkv.weight"], p["qkv.bias"]).view(b, t, 3, heads, dim // heads) \
                .permute(2, 0, 3, 1, 4)
            att = nn.functional.scaled_dot_product_attention(q, k, v, is_causal=True)
            x = x + nn.functional.linear(att.transpose(1, 2).reshape(b, t, dim), p["proj.weight"], p["proj.bias"])
            h = nn.functional.layer_norm(x, (dim,), p["ln2.weight"], p["ln2.bias"])
            h = nn.functional.gelu(nn.functional.linear(h, p["fc1.weight"], p["fc1.bias"]))
            x = x + nn.functional.linear(h, p["fc2.weight"], p["fc2.bias"])
            self.gathered = None  # the all-gathered parameter freed: only references to it are saved
            return x

    class AllGather(torch.autograd.Function):
        @staticmethod
        def forward(ctx, unit: Unit, shard: torch.Tensor, *others: torch.Tensor) -> torch.Tensor:  # type: ignore[override]
            ctx.unit = unit
            return torch.cat([shard, *others])

        @staticmethod
        def backward(ctx, grad: torch.Tensor) -> tuple[torch.Tensor | None, ...]:  # type: ignore[override]
            ctx.unit.gathered = None  # the parameter gathered again for the backward freed
            return (None, grad[:len(ctx.unit.shard)].clone(), *(None,) * (world - 1))

    units = nn.ModuleList(Unit() for _ in range(layers))

    def pack(t: torch.Tensor) -> object:
        where = t.untyped_storage().data_ptr()
        for unit in units:
            if unit.gathered is not None and where == unit.gathered.untyped_storage().data_ptr():
                return unit, t.size(), t.stride(), t.storage_offset()
        return t

    def unpack(saved: object) -> torch.Tensor:
        if isinstance(saved, torch.Tensor):
            return saved
        unit, shape, stride, offset = cast(tuple, saved)
        if unit.gathered is None:  # all-gathered again for the layer's backward
            unit.gathered = torch.cat([unit.shard.detach(), *unit.others()])
        return unit.gathered.as_strided(shape, stride, offset)

    class LM(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.embed, self.pos = nn.Embedding(vocab, dim), nn.Parameter(0.02 * torch.randn(length, dim))
            nn.init.normal_(self.embed.weight, std=0.02)
            self.units, self.norm = units, nn.LayerNorm(dim)

        def forward(self, ids: torch.Tensor) -> torch.Tensor:
            h = self.embed(ids) + self.pos
            with torch.autograd.graph.saved_tensors_hooks(pack, unpack):
                for unit in self.units:
                    h = unit(h)
            return nn.functional.linear(self.norm(h), self.embed.weight).reshape(-1, vocab)

    model = LM()
    opt = torch.optim.AdamW(model.parameters(), lr=3e-4, weight_decay=0.1)
    gen = torch.Generator().manual_seed(96 + seed)

    def batch_fn() -> tuple[torch.Tensor, torch.Tensor]:
        ids = torch.randint(0, vocab, (batch, length + 1), generator=gen)
        return ids[:, :-1], ids[:, 1:].reshape(-1)

    return _train(model, batch_fn, steps, nn.functional.cross_entropy, opt)


@_workload(default_steps=6)
def dgcnn_knn_train(*, steps: int, seed: int) -> float:
    """A dynamic graph CNN (DGCNN, Wang et al. 2019) classifying point clouds, batch 16 clouds of
    1024 points (random points on one of 40 drawn ellipsoids, rotated about the vertical axis
    and jittered, all from the data generator), 40 classes: 4 EdgeConv layers (16, 16, 32 and
    32 channels), each recomputing a k-nearest-neighbour graph (k 20) from its input features by
    a pairwise-distance matrix (|x_i|^2 - 2 x_i.x_j + |x_j|^2 by a batched matmul, 16 x 1024 x
    1024, 64 MiB) and torch.topk, gathering the neighbours' features by index into a 16 x 1024
    x 20 x C tensor, concatenating x_j - x_i and x_i (2C channels), a shared MLP (1x1 Conv2d,
    BatchNorm, LeakyReLU 0.2) and a max over the neighbours; the four outputs concatenated (96),
    a Conv1d 96-512 with BatchNorm and LeakyReLU, max and average pooling over points (1024), a
    head 1024-512-256-40 with BatchNorm, LeakyReLU and dropout 0.5; cross-entropy with label
    smoothing 0.2; Adam. A new graph and new edge tensors per layer, their widths growing with
    the layer; fixed shapes; 6 steps."""
    torch.manual_seed(0)
    batch, points, k, classes = 16, 1024, 20, 40

    class EdgeConv(nn.Module):
        def __init__(self, cin: int, cout: int) -> None:
            super().__init__()
            self.mlp = nn.Sequential(nn.Conv2d(2 * cin, cout, 1, bias=False), nn.BatchNorm2d(cout), nn.LeakyReLU(0.2))

        def forward(self, x: torch.Tensor) -> torch.Tensor:  # (B, C, N) -> (B, cout, N)
            b, c, n = x.shape
            inner = -2 * torch.matmul(x.transpose(2, 1), x)
            sq = (x ** 2).sum(1, keepdim=True)
            idx = (-sq - inner - sq.transpose(2, 1)).topk(k, dim=-1)[1]  # (B, N, k): the nearest, itself first
            idx = (idx + torch.arange(b)[:, None, None] * n).view(-1)
            feats = x.transpose(2, 1).contiguous()
            neighbours = feats.view(b * n, c)[idx].view(b, n, k, c)
            centre = feats.view(b, n, 1, c).expand(-1, -1, k, -1)
            edges = torch.cat([neighbours - centre, centre], 3).permute(0, 3, 1, 2).contiguous()
            return self.mlp(edges).max(dim=-1)[0]

    class DGCNN(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.edge = nn.ModuleList([EdgeConv(3, 16), EdgeConv(16, 16), EdgeConv(16, 32), EdgeConv(32, 32)])
            self.embed = nn.Sequential(nn.Conv1d(96, 512, 1, bias=False), nn.BatchNorm1d(512), nn.LeakyReLU(0.2))
            self.head = nn.Sequential(nn.Linear(1024, 512, bias=False), nn.BatchNorm1d(512), nn.LeakyReLU(0.2),
                                      nn.Dropout(0.5), nn.Linear(512, 256), nn.BatchNorm1d(256), nn.LeakyReLU(0.2),
                                      nn.Dropout(0.5), nn.Linear(256, classes))

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            outs = []
            for layer in self.edge:
                x = layer(x)
                outs.append(x)
            x = self.embed(torch.cat(outs, 1))
            return self.head(torch.cat([x.amax(2), x.mean(2)], 1))

    model = DGCNN()
    opt = torch.optim.Adam(model.parameters(), lr=1e-3, weight_decay=1e-4)
    gen = torch.Generator().manual_seed(97 + seed)
    shapes = 0.5 + torch.rand(classes, 3, generator=gen)  # each class an ellipsoid's axes

    def batch_fn() -> tuple[torch.Tensor, torch.Tensor]:
        labels = torch.randint(0, classes, (batch,), generator=gen)
        pts = nn.functional.normalize(torch.randn(batch, 3, points, generator=gen), dim=1) * shapes[labels][:, :, None]
        angle = 2 * torch.pi * torch.rand(batch, generator=gen)
        cos, sin, zero, one = angle.cos(), angle.sin(), torch.zeros(batch), torch.ones(batch)
        rot = torch.stack([cos, -sin, zero, sin, cos, zero, zero, zero, one], 1).view(batch, 3, 3)
        return torch.bmm(rot, pts) + 0.01 * torch.randn(batch, 3, points, generator=gen), labels

    def loss_fn(logits: torch.Tensor, labels: torch.Tensor) -> torch.Tensor:
        return nn.functional.cross_entropy(logits, labels, label_smoothing=0.2)

    return _train(model, batch_fn, steps, loss_fn, opt)


@_workload(default_steps=3)
def snn_bptt_train(*, steps: int, seed: int) -> float:
    """A spiking neural network of leaky integrate-and-fire neurons trained by backpropagation
    through time with a surrogate gradient (in the manner of snnTorch), batch 16 event streams of
    32 time steps of 2 x 32 x 32 frames (Bernoulli events at rates from a per-class pattern,
    drawn by the data generator, DVS-like), 10 classes: per time step a conv front-end (3x3
    Conv2d 2-32, BatchNorm, LIF, 2x2 average pooling; 3x3 Conv2d 32-64, BatchNorm, LIF, 2x2
    average pooling), a linear 4096-256 and LIF, and a linear 256-10 into a non-spiking leaky
    readout; every LIF layer's membrane potential (decay 0.9, threshold 1) carried from step to
    step with a subtractive reset by the previous step's detached spikes, and its spikes made
    by a torch.autograd.Function (a Heaviside step forward, a fast-sigmoid surrogate
    1 / (1 + 25 |v|)^2 backward); the logits the readout's membrane averaged over time,
    cross-entropy, Adam. The graph unrolled over 32 steps keeps each step's small tensors
    (16 KiB to 2 MiB: membranes, spikes, BatchNorm inputs) until the backward walks back through
    time; fixed shapes; 3 steps."""
    torch.manual_seed(0)
    batch, time_steps, size, classes, decay = 16, 32, 32, 10, 0.9

    class Spike(torch.autograd.Function):
        @staticmethod
        def forward(ctx, v: torch.Tensor) -> torch.Tensor:  # type: ignore[override]
            ctx.save_for_backward(v)
            return (v > 0).float()

        @staticmethod
        def backward(ctx, grad: torch.Tensor) -> torch.Tensor:  # type: ignore[override]
            (v,) = ctx.saved_tensors
            return grad / (1 + 25 * v.abs()) ** 2

    def lif(current: torch.Tensor, mem: torch.Tensor | None) -> tuple[torch.Tensor, torch.Tensor]:
        if mem is None:
            mem = torch.zeros_like(current)
        reset = (mem > 1.0).float()  # the previous step's spikes, no gradient through the reset
        mem = decay * mem + current - reset
        return cast(torch.Tensor, Spike.apply(mem - 1.0)), mem

    class SNN(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.conv1, self.bn1 = nn.Conv2d(2, 32, 3, padding=1, bias=False), nn.BatchNorm2d(32)
            self.conv2, self.bn2 = nn.Conv2d(32, 64, 3, padding=1, bias=False), nn.BatchNorm2d(64)
            self.fc1, self.fc2 = nn.Linear(64 * 8 * 8, 256), nn.Linear(256, classes)

        def forward(self, frames: torch.Tensor) -> torch.Tensor:  # (T, B, 2, H, W) -> (B, classes)
            mems: list[torch.Tensor | None] = [None, None, None]
            readout = torch.zeros(frames.shape[1], classes)
            outs = []
            for frame in frames:
                spk, mems[0] = lif(self.bn1(self.conv1(frame)), mems[0])
                spk, mems[1] = lif(self.bn2(self.conv2(nn.functional.avg_pool2d(spk, 2))), mems[1])
                spk, mems[2] = lif(self.fc1(nn.functional.avg_pool2d(spk, 2).flatten(1)), mems[2])
                readout = decay * readout + self.fc2(spk)
                outs.append(readout)
            return torch.stack(outs).mean(0)

    model = SNN()
    opt = torch.optim.Adam(model.parameters(), lr=5e-4)
    gen = torch.Generator().manual_seed(98 + seed)
    patterns = 0.02 + 0.2 * torch.rand(classes, 2, size, size, generator=gen)

    def batch_fn() -> tuple[torch.Tensor, torch.Tensor]:
        labels = torch.randint(0, classes, (batch,), generator=gen)
        frames = (torch.rand(time_steps, batch, 2, size, size, generator=gen) < patterns[labels]).float()
        return frames, labels

    return _train(model, batch_fn, steps, nn.functional.cross_entropy, opt)


@_workload(default_steps=16)
def early_exit_serve(*, steps: int, seed: int) -> float:
    """Serving a text classifier with early exits (in the manner of DeeBERT / BERxiT), one request
    per step, each a batch of 32 sequences whose lengths (48-256 tokens, log-uniform) are drawn
    from the data generator, padded to the longest of the request with a key padding mask: a
    token embedding 16000x384 and learned positions, 6 pre-norm nn.TransformerEncoderLayer of
    width 384, 6 heads, MLP 1536, GELU, no dropout, in eval mode under torch.inference_mode()
    (PyTorch's fused encoder-layer path), each layer followed by an exit head (LayerNorm and a
    linear 384-4 on the first token's state) whose softmax decides, per sequence, whether it
    leaves: a sequence whose top probability is at least 0.45 takes that head's class and is
    dropped from the batch (index_select of the surviving rows of the hidden states and mask),
    the padding is trimmed to the longest survivor, and the rest go on to the next layer (the
    last head answers for whoever is left). The weights are as initialised (no training), so
    which sequences leave where follows the tokens. The batch shrinks layer by layer and each
    request's shapes follow its drawn lengths and how many sequences leave where; 16 requests."""
    torch.manual_seed(0)
    vocab, dim, heads, depth, classes, batch, longest, threshold = 16000, 384, 6, 6, 4, 32, 256, 0.45

    class ExitEncoder(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.embed, self.pos = nn.Embedding(vocab, dim, padding_idx=0), nn.Embedding(longest, dim)
            self.blocks = nn.ModuleList(nn.TransformerEncoderLayer(dim, heads, 4 * dim, dropout=0.0, activation="gelu",
                                                                   batch_first=True, norm_first=True)
                                        for _ in range(depth))
            self.exits = nn.ModuleList(nn.Sequential(nn.LayerNorm(dim), nn.Linear(dim, classes)) for _ in range(depth))

        def forward(self, tokens: torch.Tensor, pad: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
            answers = torch.full((len(tokens),), -1, dtype=torch.long)
            exited_at = torch.full((len(tokens),), depth - 1, dtype=torch.long)
            rows = torch.arange(len(tokens))
            x = self.embed(tokens) + self.pos(torch.arange(tokens.shape[1]))
            for i, (block, head) in enumerate(zip(self.blocks, self.exits)):
                x = block(x, src_key_padding_mask=pad)
                confidence, label = head(x[:, 0]).softmax(-1).max(-1)
                leave = confidence >= threshold if i < depth - 1 else torch.ones_like(confidence, dtype=torch.bool)
                answers[rows[leave]] = label[leave]
                exited_at[rows[leave]] = i
                stay = (~leave).nonzero().squeeze(1)
                if len(stay) == 0:
                    break
                rows, x, pad = rows[stay], x.index_select(0, stay), pad.index_select(0, stay)
                keep = int((~pad).sum(1).max())
                x, pad = x[:, :keep].contiguous(), pad[:, :keep].contiguous()
            return answers, exited_at

    model = ExitEncoder().eval()
    gen = torch.Generator().manual_seed(99 + seed)
    total = 0.0
    with torch.inference_mode():
        for _ in range(steps):
            lengths = (48 * (longest / 48) ** torch.rand(batch, generator=gen)).long()  # log-uniform
            width = int(lengths.max())
            pad = torch.arange(width)[None] >= lengths[:, None]
            tokens = torch.randint(1, vocab, (batch, width), generator=gen).masked_fill(pad, 0)
            answers, exited_at = model(tokens, pad)
            total += float(answers.sum()) + float(exited_at.float().mean())
    return total


@_workload(default_steps=6)
def unet3d_seg_train(*, steps: int, seed: int) -> float:
    """Volumetric segmentation by a 3D U-Net in the manner of nnU-Net, batch 2 single-channel
    patches of 48x48x48 voxels, 4 classes (labels made by quantising smoothed noise, with the
    image a per-class intensity plus noise and random flips along the three axes, all from the
    data generator): an encoder of double 3x3x3 Conv3d blocks (16, 32, 64 and 128 channels at
    48^3, 24^3, 12^3 and 6^3, each conv followed by InstanceNorm3d with affine weights and
    LeakyReLU 0.01, 2x2x2 max pooling between), a decoder of ConvTranspose3d 2x2x2 upsamplings
    concatenated with the encoder's skip and double conv blocks (64, 32, 16 channels), 1x1x1
    heads at the three decoder resolutions (deep supervision: the 12^3 and 24^3 outputs against
    labels subsampled to their grid, weights 0.25, 0.5 and 1); each output's loss is
    cross-entropy plus a soft Dice loss on its softmax and one-hot labels; SGD with Nesterov
    momentum 0.99 and weight decay 3e-5 as nnU-Net, gradient clipping at 12. Large 5-D
    activations at four resolutions, concatenated skips, per-scale one-hot and probability
    volumes; 6 steps. Not a fixed sequence: the tensors' shapes are fixed, but each step flips
    its patches along each axis by a drawn coin and each flip copies the image and the labels,
    so steps allocate 1,086-1,090 blocks (measured with the eighteenth set)."""
    torch.manual_seed(0)
    batch, size, classes = 2, 48, 4
    widths = [16, 32, 64, 128]

    def double(cin: int, cout: int) -> nn.Sequential:
        return nn.Sequential(nn.Conv3d(cin, cout, 3, padding=1, bias=False), nn.InstanceNorm3d(cout, affine=True),
                             nn.LeakyReLU(0.01), nn.Conv3d(cout, cout, 3, padding=1, bias=False),
                             nn.InstanceNorm3d(cout, affine=True), nn.LeakyReLU(0.01))

    class UNet3D(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.down = nn.ModuleList(double(cin, cout) for cin, cout in zip([1, *widths[:-1]], widths))
            self.up = nn.ModuleList(nn.ConvTranspose3d(cin, cout, 2, 2) for cin, cout in
                                    zip(widths[:0:-1], widths[-2::-1]))
            self.merge = nn.ModuleList(double(2 * c, c) for c in widths[-2::-1])
            self.heads = nn.ModuleList(nn.Conv3d(c, classes, 1) for c in widths[-2::-1])

        def forward(self, x: torch.Tensor) -> list[torch.Tensor]:
            skips = []
            for i, block in enumerate(self.down):
                x = block(x if i == 0 else nn.functional.max_pool3d(x, 2))
                skips.append(x)
            outs = []
            for up, merge, head, skip in zip(self.up, self.merge, self.heads, skips[-2::-1]):
                x = merge(torch.cat([up(x), skip], 1))
                outs.append(head(x))
            return outs  # 12^3, 24^3, 48^3

    def seg_loss(logits: torch.Tensor, labels: torch.Tensor) -> torch.Tensor:
        probs = logits.softmax(1)
        onehot = nn.functional.one_hot(labels, classes).permute(0, 4, 1, 2, 3).float()
        dims = (0, 2, 3, 4)
        dice = (2 * (probs * onehot).sum(dims) + 1e-5) / (probs.sum(dims) + onehot.sum(dims) + 1e-5)
        return nn.functional.cross_entropy(logits, labels) + 1 - dice.mean()

    model = UNet3D()
    opt = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.99, nesterov=True, weight_decay=3e-5)
    gen = torch.Generator().manual_seed(100 + seed)
    levels = torch.randn(classes, generator=gen)
    total = 0.0
    for _ in range(steps):
        noise = nn.functional.avg_pool3d(torch.rand(batch, 1, size, size, size, generator=gen), 9, 1, 4)
        flat = noise.flatten(1)
        cuts = torch.quantile(flat, torch.tensor([0.4, 0.7, 0.9]), dim=1).T  # (batch, 3)
        labels = (flat[:, :, None] > cuts[:, None, :]).sum(-1).view(batch, size, size, size)
        image = levels[labels][:, None] + 0.5 * torch.randn(batch, 1, size, size, size, generator=gen)
        for axis in (2, 3, 4):
            if bool(torch.rand((), generator=gen) < 0.5):
                image, labels = image.flip(axis), labels.flip(axis - 1)
        opt.zero_grad(set_to_none=True)
        outs = model(image)
        loss = sum(weight * seg_loss(out, labels[:, ::stride, ::stride, ::stride])
                   for weight, stride, out in zip((0.25, 0.5, 1.0), (4, 2, 1), outs))
        loss = cast(torch.Tensor, loss)
        loss.backward()
        nn.utils.clip_grad_norm_(model.parameters(), 12.0)
        opt.step()
        total += loss.item()
    return total


@_workload(default_steps=4)
def hifigan_vocoder_train(*, steps: int, seed: int) -> float:
    """A neural vocoder's generator in the manner of HiFi-GAN (a small one), trained without its
    discriminators on a multi-resolution STFT loss and a mel-spectrogram L1 loss (as Parallel
    WaveGAN's generator pre-training), batch 8 clips at 22050 Hz whose length (24-64 frames of
    256 samples, so 6,144-16,384 samples) is drawn every step: target waveforms a sum of 8
    harmonics of a drawn pitch (80-400 Hz) with random phases and decaying amplitudes plus
    noise (from the data generator), their 80-band log-mel spectrogram (STFT 1024, hop 256,
    reflect padding, a triangular mel filterbank built in the script) the generator's input,
    made under no_grad. Generator: a Conv1d 80-128 (kernel 7), three ConvTranspose1d upsamplings
    (kernel twice the stride: x8 to 64 channels, x8 to 32, x4 to 16; 256 samples a frame), each followed by a
    multi-receptive-field fusion of two residual blocks (kernels 3 and 7, dilations 1, 3 and 5,
    each a LeakyReLU 0.1 and dilated conv then a LeakyReLU and plain conv, with a skip) whose
    outputs are averaged, all convolutions weight-normalised; a LeakyReLU, Conv1d 16-1 (kernel 7)
    and tanh. Loss: for STFT sizes 512, 1024 and 2048 (hops 128, 256, 512, Hann windows) the
    spectral convergence and log-magnitude L1 of the complex spectra's magnitudes, plus 45 x the
    mel L1; AdamW (betas 0.8, 0.99). One-dimensional activations whose length grows x256 through
    the network and changes every step, complex spectra at three resolutions; 4 steps."""
    torch.manual_seed(0)
    batch, mels, hop, rate, harmonics = 8, 80, 256, 22050, 8

    def mel_filterbank(n_fft: int) -> torch.Tensor:
        def hz_to_mel(f: torch.Tensor) -> torch.Tensor:
            return 2595 * torch.log10(1 + f / 700)

        points = 700 * (10 ** (torch.linspace(0.0, float(hz_to_mel(torch.tensor(rate / 2.0))), mels + 2) / 2595) - 1)
        freqs = torch.linspace(0, rate / 2, n_fft // 2 + 1)
        lower, centre, upper = points[:-2, None], points[1:-1, None], points[2:, None]
        return torch.clamp(torch.minimum((freqs - lower) / (centre - lower), (upper - freqs) / (upper - centre)), min=0)

    fbank, mel_window = mel_filterbank(1024), torch.hann_window(1024)

    def log_mel(wave: torch.Tensor) -> torch.Tensor:  # (B, T) -> (B, mels, T / hop)
        padded = nn.functional.pad(wave[:, None], ((1024 - hop) // 2, (1024 - hop) // 2), mode="reflect")[:, 0]
        spec = torch.stft(padded, 1024, hop, 1024, mel_window, center=False, return_complex=True).abs()
        return torch.log(torch.clamp(fbank @ spec, min=1e-5))

    def wn_conv(cin: int, cout: int, kernel: int, dilation: int = 1) -> nn.Module:
        return nn.utils.parametrizations.weight_norm(
            nn.Conv1d(cin, cout, kernel, dilation=dilation, padding=dilation * (kernel - 1) // 2))

    class ResBlock(nn.Module):
        def __init__(self, channels: int, kernel: int) -> None:
            super().__init__()
            self.dilated = nn.ModuleList(wn_conv(channels, channels, kernel, d) for d in (1, 3, 5))
            self.plain = nn.ModuleList(wn_conv(channels, channels, kernel) for _ in range(3))

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            for c1, c2 in zip(self.dilated, self.plain):
                x = x + c2(nn.functional.leaky_relu(c1(nn.functional.leaky_relu(x, 0.1)), 0.1))
            return x

    class Generator(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.pre = wn_conv(mels, 128, 7)
            chans = [128, 64, 32, 16]
            self.ups = nn.ModuleList(nn.utils.parametrizations.weight_norm(
                nn.ConvTranspose1d(cin, cout, 2 * rate_, rate_, padding=rate_ // 2))
                for cin, cout, rate_ in zip(chans, chans[1:], (8, 8, 4)))
            self.mrf = nn.ModuleList(nn.ModuleList(ResBlock(c, k) for k in (3, 7)) for c in chans[1:])
            self.post = wn_conv(chans[-1], 1, 7)

        def forward(self, mel: torch.Tensor) -> torch.Tensor:
            x = self.pre(mel)
            for up, blocks in zip(self.ups, self.mrf):
                x = up(nn.functional.leaky_relu(x, 0.1))
                x = sum(block(x) for block in blocks) / len(blocks)  # type: ignore[assignment]
            return torch.tanh(self.post(nn.functional.leaky_relu(x))).squeeze(1)

    resolutions = [(512, 128), (1024, 256), (2048, 512)]
    windows = {n: torch.hann_window(n) for n, _ in resolutions}

    def stft_loss(pred: torch.Tensor, target: torch.Tensor) -> torch.Tensor:
        loss = torch.zeros(())
        for n_fft, step in resolutions:
            p = torch.stft(pred, n_fft, step, n_fft, windows[n_fft], return_complex=True).abs().clamp(min=1e-7)
            with torch.no_grad():
                t = torch.stft(target, n_fft, step, n_fft, windows[n_fft], return_complex=True).abs().clamp(min=1e-7)
            loss = loss + torch.linalg.norm(t - p) / torch.linalg.norm(t) + nn.functional.l1_loss(p.log(), t.log())
        return loss / len(resolutions)

    model = Generator()
    opt = torch.optim.AdamW(model.parameters(), lr=2e-4, betas=(0.8, 0.99))
    gen = torch.Generator().manual_seed(101 + seed)
    total = 0.0
    for _ in range(steps):
        frames = int(torch.randint(24, 65, (), generator=gen))
        t = torch.arange(frames * hop) / rate
        f0 = 80 + 320 * torch.rand(batch, 1, 1, generator=gen)
        k = torch.arange(1, harmonics + 1).view(1, -1, 1)
        phase = 2 * torch.pi * torch.rand(batch, harmonics, 1, generator=gen)
        amp = torch.rand(batch, harmonics, 1, generator=gen) / k
        wave = (amp * torch.sin(2 * torch.pi * k * f0 * t + phase)).sum(1)
        wave = 0.5 * wave / wave.abs().amax(1, keepdim=True) + 0.01 * torch.randn(batch, frames * hop, generator=gen)
        with torch.no_grad():
            mel = log_mel(wave)
        opt.zero_grad(set_to_none=True)
        pred = model(mel)
        loss = stft_loss(pred, wave) + 45 * nn.functional.l1_loss(log_mel(pred), mel)
        loss.backward()
        opt.step()
        total += loss.item()
    return total


@_workload(default_steps=6)
def bayes_mc_train(*, steps: int, seed: int) -> float:
    """A Bayesian neural network trained by Bayes by Backprop (Blundell et al. 2015), batch 128
    inputs of 784 features (noisy class prototypes from the data generator), 10 classes: an MLP
    784-1200-1200-10 whose every weight and bias is a Gaussian with a trained mean and a
    trained rho (sigma = softplus(rho), rho initialised to -5), a scale-mixture prior (two
    zero-mean Gaussians of sigma 1 and e^-3, weights 0.5) on each; every step draws 4 Monte Carlo samples of all the weights (epsilon from the data
    generator, w = mu + sigma * epsilon, weight-sized), and for each sample runs the network on
    the batch and computes log q(w) and the prior's log p(w) (a logsumexp over the two mixture
    components, elementwise over the weights); the loss is the mean over samples of (log q -
    log p) / (60 minibatches x 128) plus the mean negative log-likelihood; one backward through the 4
    samples' graphs, Adam. Several weight-sized temporaries per sample and per layer all kept
    until the one backward (the weights, 2.4 M, are larger than the activations); fixed shapes;
    6 steps."""
    torch.manual_seed(0)
    batch, features, hidden, classes, samples, minibatches = 128, 784, 1200, 10, 4, 60
    log_mix, log_s1, log_s2, log_root_2pi = math.log(0.5), 0.0, -3.0, 0.5 * math.log(2 * math.pi)

    def log_normal(x: torch.Tensor, log_sigma: float) -> torch.Tensor:
        return -0.5 * (x * math.exp(-log_sigma)) ** 2 - (log_sigma + log_root_2pi)

    class BayesLinear(nn.Module):
        def __init__(self, cin: int, cout: int) -> None:
            super().__init__()
            self.w_mu = nn.Parameter(torch.empty(cout, cin).uniform_(-0.1, 0.1))
            self.w_rho = nn.Parameter(torch.full((cout, cin), -5.0))
            self.b_mu = nn.Parameter(torch.empty(cout).uniform_(-0.1, 0.1))
            self.b_rho = nn.Parameter(torch.full((cout,), -5.0))

        def forward(self, x: torch.Tensor, gen: torch.Generator) -> tuple[torch.Tensor, torch.Tensor]:
            kl, pairs = torch.zeros(()), []
            for mu, rho in ((self.w_mu, self.w_rho), (self.b_mu, self.b_rho)):
                sigma = nn.functional.softplus(rho)
                eps = torch.randn(mu.shape, generator=gen)
                w = mu + sigma * eps
                log_q = (-0.5 * eps ** 2 - torch.log(sigma) - log_root_2pi).sum()
                log_p = torch.logsumexp(torch.stack([log_mix + log_normal(w, log_s1),
                                                     log_mix + log_normal(w, log_s2)]), 0).sum()
                kl = kl + log_q - log_p
                pairs.append(w)
            return nn.functional.linear(x, pairs[0], pairs[1]), kl

    class BayesMLP(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.layers = nn.ModuleList([BayesLinear(features, hidden), BayesLinear(hidden, hidden),
                                         BayesLinear(hidden, classes)])

        def forward(self, x: torch.Tensor, gen: torch.Generator) -> tuple[torch.Tensor, torch.Tensor]:
            kl = torch.zeros(())
            for i, layer in enumerate(self.layers):
                x, layer_kl = layer(x, gen)
                kl = kl + layer_kl
                if i < len(self.layers) - 1:
                    x = torch.relu(x)
            return x, kl

    model = BayesMLP()
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    gen = torch.Generator().manual_seed(102 + seed)
    prototypes = torch.rand(classes, features, generator=gen)
    total = 0.0
    for _ in range(steps):
        labels = torch.randint(0, classes, (batch,), generator=gen)
        x = prototypes[labels] + 0.3 * torch.randn(batch, features, generator=gen)
        opt.zero_grad(set_to_none=True)
        loss = torch.zeros(())
        for _ in range(samples):
            logits, kl = model(x, gen)
            loss = loss + kl / minibatches / batch + nn.functional.cross_entropy(logits, labels)
        loss = loss / samples
        loss.backward()
        opt.step()
        total += loss.item()
    return total


@_workload(default_steps=5)
def sinkhorn_ot_train(*, steps: int, seed: int) -> float:
    """A point-cloud autoencoder trained on a debiased Sinkhorn divergence (entropic optimal
    transport, in the manner of GeomLoss, here with every iteration unrolled under autograd),
    batch 8 clouds whose point count (192-320, the same within a batch) is drawn every step
    (points on one of 16 drawn superquadric-like shapes, scaled, turned by a random orthogonal
    matrix from a QR decomposition and jittered, all from the data generator): a PointNet-style encoder (shared MLP 3-64-128-256 by 1x1 Conv1d with BatchNorm
    and ReLU, max over points) to a 256-d code and a decoder MLP 256-512-512-768 to 256 points;
    the loss S(x, y) = OT(x, y) - OT(x, x) / 2 - OT(y, y) / 2 with OT the dual value of 15
    log-domain Sinkhorn iterations (blur 0.05: epsilon 0.0025, squared-distance cost by cdist,
    uniform weights), each iteration two logsumexps over a batch of cost matrices (8 x 256 x N),
    the x-x and x-y problems differentiated through all their iterations, the y-y one under
    no_grad; Adam. Dozens of cost-matrix-sized temporaries saved for one backward, their size
    changing with the drawn point count; 5 steps."""
    torch.manual_seed(0)
    batch, out_points, shapes, iters, eps = 8, 256, 16, 15, 0.05 ** 2

    class AutoEncoder(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            layers: list[nn.Module] = []
            for cin, cout in ((3, 64), (64, 128), (128, 256)):
                layers += [nn.Conv1d(cin, cout, 1, bias=False), nn.BatchNorm1d(cout), nn.ReLU()]
            self.encoder = nn.Sequential(*layers)
            self.decoder = nn.Sequential(nn.Linear(256, 512), nn.ReLU(), nn.Linear(512, 512), nn.ReLU(),
                                         nn.Linear(512, 3 * out_points))

        def forward(self, pts: torch.Tensor) -> torch.Tensor:  # (B, N, 3) -> (B, out_points, 3)
            code = self.encoder(pts.transpose(1, 2)).amax(2)
            return self.decoder(code).view(len(pts), out_points, 3)

    def ot(x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:  # (B,) entropic OT between uniform clouds
        cost = torch.cdist(x, y) ** 2 / 2
        log_a = torch.full((1, x.shape[1], 1), -float(torch.log(torch.tensor(float(x.shape[1])))))
        log_b = torch.full((1, 1, y.shape[1]), -float(torch.log(torch.tensor(float(y.shape[1])))))
        f, g = torch.zeros(len(x), x.shape[1]), torch.zeros(len(x), y.shape[1])
        for _ in range(iters):
            f = -eps * torch.logsumexp(log_b + (g[:, None, :] - cost) / eps, dim=2)
            g = -eps * torch.logsumexp(log_a + (f[:, :, None] - cost) / eps, dim=1)
        return f.mean(1) + g.mean(1)

    model = AutoEncoder()
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    gen = torch.Generator().manual_seed(103 + seed)
    exponents = 0.3 + 1.7 * torch.rand(shapes, 3, generator=gen)
    axes = 0.3 + 0.7 * torch.rand(shapes, 3, generator=gen)
    total = 0.0
    for _ in range(steps):
        points = int(torch.randint(192, 321, (), generator=gen))
        kind = torch.randint(0, shapes, (batch,), generator=gen)
        direction = nn.functional.normalize(torch.randn(batch, points, 3, generator=gen), dim=-1)
        pts = direction.sign() * direction.abs() ** exponents[kind][:, None] * axes[kind][:, None]
        q, _ = torch.linalg.qr(torch.randn(batch, 3, 3, generator=gen))
        pts = pts @ q + 0.01 * torch.randn(batch, points, 3, generator=gen)
        opt.zero_grad(set_to_none=True)
        rec = model(pts)
        with torch.no_grad():
            yy = ot(pts, pts)
        loss = (ot(rec, pts) - ot(rec, rec) / 2 - yy / 2).mean()
        loss.backward()
        opt.step()
        total += loss.item()
    return total


@_workload(default_steps=5)
def mixture_of_depths_train(*, steps: int, seed: int) -> float:
    """A mixture-of-depths language model (Raposo et al. 2024), vocabulary 8000 (tied head),
    batch 8 sequences of 256 tokens (random walks over the vocabulary by 8 drawn offsets, from
    the data generator), 6 pre-norm layers of width 384, 6 heads, MLP 1536, learned positions,
    every other layer routed: a router (a linear 384-1) scores every token, the top 12.5 % of
    each sequence (32 tokens, topk, kept in order by a sort) are gathered into an 8 x 32 x 384
    batch, run through the layer's causal attention (scaled_dot_product_attention among the
    chosen tokens) and MLP, and scattered back into a copy of the residual stream with the
    layer's update scaled by the router's sigmoid weight (the other tokens pass unchanged); an
    auxiliary predictor (an MLP 384-96-1 on the detached stream) learns by binary cross-entropy
    which tokens the router chose, as the paper does for causal sampling; the other layers run
    on all 256 tokens; next-token cross-entropy plus 0.1 x the predictors' losses, AdamW with
    gradient clipping at 1. Full-size residual copies from every scatter beside small
    routed-block activations; fixed shapes; 5 steps."""
    torch.manual_seed(0)
    vocab, length, batch, dim, heads, depth, capacity = 8000, 256, 8, 384, 6, 6, 32

    class Block(nn.Module):
        def __init__(self, routed: bool) -> None:
            super().__init__()
            self.ln1, self.ln2 = nn.LayerNorm(dim), nn.LayerNorm(dim)
            self.qkv, self.proj = nn.Linear(dim, 3 * dim), nn.Linear(dim, dim)
            self.mlp = nn.Sequential(nn.Linear(dim, 4 * dim), nn.GELU(), nn.Linear(4 * dim, dim))
            self.routed = routed
            if routed:
                self.router = nn.Linear(dim, 1)
                self.predictor = nn.Sequential(nn.Linear(dim, dim // 4), nn.SiLU(), nn.Linear(dim // 4, 1))

        def update(self, x: torch.Tensor) -> torch.Tensor:
            b, t, _ = x.shape
            q, k, v = self.qkv(self.ln1(x)).view(b, t, 3, heads, dim // heads).permute(2, 0, 3, 1, 4)
            att = self.proj(nn.functional.scaled_dot_product_attention(q, k, v, is_causal=True)
                            .transpose(1, 2).reshape(b, t, dim))
            return att + self.mlp(self.ln2(x + att))

        def forward(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
            if not self.routed:
                return x + self.update(x), torch.zeros(())
            scores = self.router(x).squeeze(-1)  # (B, T)
            chosen = scores.topk(capacity, dim=1).indices.sort(dim=1).values
            index = chosen[..., None].expand(-1, -1, dim)
            picked = x.gather(1, index)
            weight = scores.gather(1, chosen).sigmoid()[..., None]
            out = x.scatter(1, index, picked + weight * self.update(picked))
            target = torch.zeros_like(scores).scatter(1, chosen, 1.0)
            aux = nn.functional.binary_cross_entropy_with_logits(self.predictor(x.detach()).squeeze(-1), target)
            return out, aux

    class MoDLM(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.embed = nn.Embedding(vocab, dim)
            self.pos = nn.Parameter(0.02 * torch.randn(length, dim))
            self.blocks = nn.ModuleList(Block(routed=i % 2 == 1) for i in range(depth))
            self.norm = nn.LayerNorm(dim)

        def forward(self, tokens: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
            x = self.embed(tokens) + self.pos
            aux = torch.zeros(())
            for block in self.blocks:
                x, block_aux = block(x)
                aux = aux + block_aux
            return self.norm(x) @ self.embed.weight.T, aux

    model = MoDLM()
    opt = torch.optim.AdamW(model.parameters(), lr=3e-4, weight_decay=0.1)
    gen = torch.Generator().manual_seed(104 + seed)
    offsets = torch.randint(-64, 65, (8,), generator=gen)  # the walk's steps
    total = 0.0
    for _ in range(steps):
        moves = offsets[torch.randint(0, len(offsets), (batch, length + 1), generator=gen)]
        tokens = (torch.randint(0, vocab, (batch, 1), generator=gen) + moves.cumsum(1)) % vocab
        opt.zero_grad(set_to_none=True)
        logits, aux = model(tokens[:, :-1])
        loss = nn.functional.cross_entropy(logits.reshape(-1, vocab), tokens[:, 1:].reshape(-1)) + 0.1 * aux
        loss.backward()
        nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        total += loss.item()
    return total


@_workload(default_steps=6)
def ft_transformer_train(*, steps: int, seed: int) -> float:
    """FT-Transformer (Gorishniy et al. 2021) on a tabular classification task, batch 256 rows of
    24 numerical and 8 categorical features (cardinalities 3 to 5000), 7 classes (the rows and
    their labels, a fixed random teacher's argmax, from the data generator): every numerical
    feature embedded by periodic embeddings (PLR, Gorishniy et al. 2022: cos and sin of 16
    learned frequencies, a per-feature linear 32-128 done as one einsum over the 24 features'
    stacked weights, ReLU), every categorical feature by its own rows of one shared embedding
    table (6,412 x 128, offsets per feature) plus a per-feature bias, and a [CLS] token appended,
    so each row is 33 tokens of width 128; 3 pre-norm transformer layers (the first without its
    attention LayerNorm, as in the paper; 8 heads with explicit attention and attention dropout
    0.2, a ReGLU feed-forward 128-2x170-128 with dropout 0.1), the [CLS] token's LayerNorm, ReLU
    and a linear 128-7; cross-entropy, AdamW with weight decay on the transformer layers' weight
    matrices only (two parameter groups). Many small per-feature tensors beside batch x tokens x tokens
    attention maps; fixed shapes (every step allocates the same sizes in the same order); 6 steps."""
    torch.manual_seed(0)
    batch, n_num, dim, heads, depth, classes, freqs, ffn = 256, 24, 128, 8, 3, 7, 16, 170
    cards = torch.tensor([3, 5, 12, 40, 100, 252, 1000, 5000])
    n_cat = len(cards)

    class Layer(nn.Module):
        def __init__(self, first: bool) -> None:
            super().__init__()
            self.ln1 = nn.Identity() if first else nn.LayerNorm(dim)
            self.ln2 = nn.LayerNorm(dim)
            self.qkv, self.out = nn.Linear(dim, 3 * dim), nn.Linear(dim, dim)
            self.up, self.down = nn.Linear(dim, 2 * ffn), nn.Linear(ffn, dim)

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            b, t, _ = x.shape
            q, k, v = self.qkv(self.ln1(x)).view(b, t, 3, heads, dim // heads).permute(2, 0, 3, 1, 4)
            att = nn.functional.dropout((q @ k.transpose(-1, -2) / math.sqrt(dim // heads)).softmax(-1), 0.2,
                                        self.training)
            x = x + self.out((att @ v).transpose(1, 2).reshape(b, t, dim))
            a, g = self.up(self.ln2(x)).chunk(2, -1)
            return x + self.down(nn.functional.dropout(a * torch.relu(g), 0.1, self.training))

    class FTTransformer(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.freq = nn.Parameter(0.1 * torch.randn(n_num, freqs))
            self.num_w = nn.Parameter(torch.randn(n_num, 2 * freqs, dim) / math.sqrt(2 * freqs))
            self.num_b = nn.Parameter(torch.zeros(n_num, dim))
            self.register_buffer("offsets", torch.cat([torch.zeros(1, dtype=torch.long), cards.cumsum(0)[:-1]]))
            self.cat_embed = nn.Embedding(int(cards.sum()), dim)
            self.cat_b = nn.Parameter(torch.zeros(n_cat, dim))
            self.cls = nn.Parameter(0.02 * torch.randn(dim))
            self.layers = nn.ModuleList(Layer(i == 0) for i in range(depth))
            self.head = nn.Sequential(nn.LayerNorm(dim), nn.ReLU(), nn.Linear(dim, classes))

        def forward(self, num: torch.Tensor, cat: torch.Tensor) -> torch.Tensor:
            angle = 2 * math.pi * self.freq * num[..., None]  # (B, 24, 16)
            periodic = torch.cat([angle.cos(), angle.sin()], -1)
            num_tokens = torch.relu(torch.einsum("bfk,fkd->bfd", periodic, self.num_w) + self.num_b)
            cat_tokens = self.cat_embed(cat + self.offsets) + self.cat_b
            x = torch.cat([num_tokens, cat_tokens, self.cls.expand(len(num), 1, dim)], 1)
            for layer in self.layers:
                x = layer(x)
            return self.head(x[:, -1])

    model = FTTransformer()
    decay = [p for n, p in model.named_parameters() if n.startswith("layers.") and p.dim() == 2]
    rest = [p for n, p in model.named_parameters() if not (n.startswith("layers.") and p.dim() == 2)]
    opt = torch.optim.AdamW([{"params": decay, "weight_decay": 1e-5}, {"params": rest, "weight_decay": 0.0}],
                            lr=1e-4)
    gen = torch.Generator().manual_seed(105 + seed)
    teacher = torch.randn(n_num + n_cat, classes, generator=gen)
    total = 0.0
    for _ in range(steps):
        num = torch.randn(batch, n_num, generator=gen)
        cat = (torch.rand(batch, n_cat, generator=gen) ** 2 * cards).long()  # skewed towards low ids
        labels = (torch.cat([num, cat.float() / cards], 1) @ teacher).argmax(1)
        opt.zero_grad(set_to_none=True)
        loss = nn.functional.cross_entropy(model(num, cat), labels)
        loss.backward()
        opt.step()
        total += loss.item()
    return total


@_workload(default_steps=6)
def maskrcnn_roi_train(*, steps: int, seed: int) -> float:
    """A two-stage instance-segmentation detector in the manner of Mask R-CNN (He et al. 2017),
    one feature level (no FPN), batch 4 images of 256x256 RGB, 8 classes: each image holds 1-8
    objects (drawn from the data generator: boxes of 24-128 pixels a side, each object an
    ellipse filling its box, painted in its class's colour over noise; the ellipses are the
    instance masks). A backbone of 3x3 convolutions with BatchNorm and ReLU (32, 64 and 128
    channels, three of stride 2, a residual block at the end) to a 32 x 32 map (stride 8); an
    RPN (3x3 conv 128-128, 1x1 convs to 9 anchors' objectness and box deltas: 3 scales x 3 aspect
    ratios, 9,216 anchors per image) trained on 256 anchors sampled per image from the anchor x
    object IoU matrix (at most half positive); proposals: the top 1000 anchors by objectness,
    decoded and clipped, those under 4 pixels a side dropped, suppressed by matrix NMS at IoU
    0.7 (Fast NMS, Bolya et al. 2019: the upper triangle of their IoU matrix), at most 300 kept,
    with the ground-truth boxes added; 128 RoIs sampled per image from the proposal x object IoU
    matrix (at most 25 % foreground at IoU 0.5, as many as there are); RoIAlign written with
    grid_sample (a 14 x 14 sampling grid per RoI averaged to 7 x 7 for the box head, 14 x 14 for
    the mask head), a box head (a linear 6272-512, 512-512, class logits and class-specific box
    deltas), and a mask head on the foreground RoIs only (four 3x3 convs 128-128, a 2x2
    ConvTranspose2d to 28 x 28, a 1x1 conv to 9 class masks; its targets each RoI's object mask
    sampled to 28 x 28 the same way); cross-entropy, smooth L1 and per-pixel BCE losses, SGD with
    momentum. The number of objects, of proposals left after suppression and of foreground RoIs
    follow the data, so the IoU matrices, the sampled index tensors and the mask head's tensors
    change size every step; 6 steps."""
    torch.manual_seed(0)
    batch, size, classes, stride, pre_nms, post_nms, rois_per_image = 4, 256, 8, 8, 1000, 300, 128
    grid = size // stride
    sizes, ratios = torch.tensor([32.0, 64.0, 128.0]), torch.tensor([0.5, 1.0, 2.0])
    base_w = (sizes[:, None] / ratios.sqrt()[None]).flatten()
    base_h = (sizes[:, None] * ratios.sqrt()[None]).flatten()
    centres = (torch.arange(grid, dtype=torch.float32) + 0.5) * stride
    cy, cx = torch.meshgrid(centres, centres, indexing="ij")
    anchors = torch.stack([cx[..., None] - base_w / 2, cy[..., None] - base_h / 2,
                           cx[..., None] + base_w / 2, cy[..., None] + base_h / 2], -1).view(-1, 4)  # (H*W*9, 4)

    def box_iou(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
        area_a = (a[:, 2] - a[:, 0]) * (a[:, 3] - a[:, 1])
        area_b = (b[:, 2] - b[:, 0]) * (b[:, 3] - b[:, 1])
        lt, rb = torch.max(a[:, None, :2], b[None, :, :2]), torch.min(a[:, None, 2:], b[None, :, 2:])
        inter = (rb - lt).clamp(min=0).prod(-1)
        return inter / (area_a[:, None] + area_b[None] - inter)

    def encode(boxes: torch.Tensor, ref: torch.Tensor, w: tuple[float, ...]) -> torch.Tensor:
        rw, rh = ref[:, 2] - ref[:, 0], ref[:, 3] - ref[:, 1]
        bw, bh = boxes[:, 2] - boxes[:, 0], boxes[:, 3] - boxes[:, 1]
        return torch.stack([w[0] * ((boxes[:, 0] + bw / 2) - (ref[:, 0] + rw / 2)) / rw,
                            w[1] * ((boxes[:, 1] + bh / 2) - (ref[:, 1] + rh / 2)) / rh,
                            w[2] * torch.log(bw / rw), w[3] * torch.log(bh / rh)], 1)

    def decode(deltas: torch.Tensor, ref: torch.Tensor) -> torch.Tensor:
        rw, rh = ref[:, 2] - ref[:, 0], ref[:, 3] - ref[:, 1]
        x, y = ref[:, 0] + rw / 2 + deltas[:, 0] * rw, ref[:, 1] + rh / 2 + deltas[:, 1] * rh
        w, h = rw * deltas[:, 2].clamp(max=4).exp(), rh * deltas[:, 3].clamp(max=4).exp()
        return torch.stack([x - w / 2, y - h / 2, x + w / 2, y + h / 2], 1).clamp(0, size)

    def roi_grid(boxes: torch.Tensor, out: int) -> torch.Tensor:  # (R, 4) -> (R, out, out, 2) in [-1, 1]
        at = (torch.arange(out, dtype=torch.float32) + 0.5) / out
        xs = boxes[:, 0, None] + at * (boxes[:, 2] - boxes[:, 0])[:, None]
        ys = boxes[:, 1, None] + at * (boxes[:, 3] - boxes[:, 1])[:, None]
        where = torch.stack([xs[:, None, :].expand(-1, out, -1), ys[:, :, None].expand(-1, -1, out)], -1)
        return where / size * 2 - 1

    def roi_align(feature: torch.Tensor, boxes: torch.Tensor, out: int) -> torch.Tensor:  # (C, H, W) -> (R, C, o, o)
        sampled = nn.functional.grid_sample(feature[None], roi_grid(boxes, out).view(1, -1, out, 2),
                                            align_corners=False)
        return sampled.view(feature.shape[0], len(boxes), out, out).transpose(0, 1)

    def conv(cin: int, cout: int, s: int = 1) -> nn.Sequential:
        return nn.Sequential(nn.Conv2d(cin, cout, 3, s, 1, bias=False), nn.BatchNorm2d(cout), nn.ReLU())

    class MaskRCNN(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.stem = nn.Sequential(conv(3, 32, 2), conv(32, 32), conv(32, 64, 2), conv(64, 64), conv(64, 128, 2))
            self.res = nn.Sequential(conv(128, 128), nn.Conv2d(128, 128, 3, 1, 1, bias=False), nn.BatchNorm2d(128))
            self.rpn = nn.Sequential(nn.Conv2d(128, 128, 3, 1, 1), nn.ReLU())
            self.rpn_obj, self.rpn_box = nn.Conv2d(128, 9, 1), nn.Conv2d(128, 36, 1)
            self.box_head = nn.Sequential(nn.Flatten(), nn.Linear(128 * 49, 512), nn.ReLU(), nn.Linear(512, 512),
                                          nn.ReLU())
            self.cls, self.reg = nn.Linear(512, classes + 1), nn.Linear(512, 4 * (classes + 1))
            layers: list[nn.Module] = []
            for _ in range(4):
                layers += [nn.Conv2d(128, 128, 3, 1, 1), nn.ReLU()]
            self.mask_head = nn.Sequential(*layers, nn.ConvTranspose2d(128, 128, 2, 2), nn.ReLU(),
                                           nn.Conv2d(128, classes + 1, 1))

    model = MaskRCNN()
    opt = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9, weight_decay=1e-4)
    gen = torch.Generator().manual_seed(106 + seed)
    colours = torch.rand(classes + 1, 3, generator=gen)
    pix = torch.arange(size, dtype=torch.float32) + 0.5
    total = 0.0
    for _ in range(steps):
        images, targets = [], []
        for _ in range(batch):
            count = int(torch.randint(1, 9, (), generator=gen))
            wh = 24 + 104 * torch.rand(count, 2, generator=gen)
            xy = torch.rand(count, 2, generator=gen) * (size - wh)
            boxes = torch.cat([xy, xy + wh], 1)
            labels = torch.randint(1, classes + 1, (count,), generator=gen)
            centre, half = (boxes[:, :2] + boxes[:, 2:]) / 2, wh / 2
            masks = ((((pix[None, None, :] - centre[:, 0, None, None]) / half[:, 0, None, None]) ** 2
                      + ((pix[None, :, None] - centre[:, 1, None, None]) / half[:, 1, None, None]) ** 2) <= 1).float()
            image = 0.2 * torch.randn(3, size, size, generator=gen)
            for m, c in zip(masks, labels):
                image = torch.where(m.bool(), colours[c][:, None, None], image)
            images.append(image)
            targets.append((boxes, labels, masks))
        opt.zero_grad(set_to_none=True)
        x = model.stem(torch.stack(images))
        feats = torch.relu(x + model.res(x))
        hidden = model.rpn(feats)
        objectness = model.rpn_obj(hidden).permute(0, 2, 3, 1).reshape(batch, -1)
        rpn_deltas = model.rpn_box(hidden).permute(0, 2, 3, 1).reshape(batch, -1, 4)
        loss = torch.zeros(())
        for i, (boxes, labels, masks) in enumerate(targets):
            # RPN: sample 256 anchors from the anchor x object IoU matrix
            iou = box_iou(anchors, boxes)
            best, matched = iou.max(1)
            label = torch.full((len(anchors),), -1.0)
            label[best < 0.3] = 0.0
            label[best >= 0.7] = 1.0
            label[iou.argmax(0)] = 1.0
            pos = (label == 1).nonzero().squeeze(1)
            neg = (label == 0).nonzero().squeeze(1)
            pos = pos[torch.randperm(len(pos), generator=gen)[:128]]
            neg = neg[torch.randperm(len(neg), generator=gen)[:256 - len(pos)]]
            picked = torch.cat([pos, neg])
            loss = loss + nn.functional.binary_cross_entropy_with_logits(objectness[i, picked], label[picked])
            loss = loss + nn.functional.smooth_l1_loss(rpn_deltas[i, pos], encode(boxes[matched[pos]], anchors[pos],
                                                                                     (1, 1, 1, 1)), beta=1 / 9)
            # proposals: top 1000, decoded, Fast NMS at 0.7, at most 300, plus the objects' boxes
            with torch.no_grad():
                scores, top = objectness[i].topk(pre_nms)
                props = decode(rpn_deltas[i, top], anchors[top])
                big = ((props[:, 2] - props[:, 0]) > 4) & ((props[:, 3] - props[:, 1]) > 4)
                props = props[big]
                keep = box_iou(props, props).triu(1).amax(0) < 0.7
                props = torch.cat([props[keep][:post_nms], boxes])
                # 128 RoIs: at most 25 % foreground (IoU >= 0.5), the rest background
                iou = box_iou(props, boxes)
                best, matched = iou.max(1)
                fg = (best >= 0.5).nonzero().squeeze(1)
                bg = (best < 0.5).nonzero().squeeze(1)
                fg = fg[torch.randperm(len(fg), generator=gen)[:rois_per_image // 4]]
                bg = bg[torch.randperm(len(bg), generator=gen)[:rois_per_image - len(fg)]]
                rois = props[torch.cat([fg, bg])]
                roi_labels = torch.cat([labels[matched[fg]], torch.zeros(len(bg), dtype=torch.long)])
                box_targets = encode(boxes[matched[fg]], rois[:len(fg)], (10, 10, 5, 5))
                mask_targets = nn.functional.grid_sample(masks[matched[fg]][:, None], roi_grid(rois[:len(fg)], 28),
                                                         align_corners=False).squeeze(1).ge(0.5).float()
            # box head on all RoIs (7 x 7 from a 14 x 14 grid), mask head on the foreground ones
            pooled = nn.functional.avg_pool2d(roi_align(feats[i], rois, 14), 2)
            h = model.box_head(pooled)
            loss = loss + nn.functional.cross_entropy(model.cls(h), roi_labels)
            deltas = model.reg(h[:len(fg)]).view(len(fg), classes + 1, 4)
            deltas = deltas[torch.arange(len(fg)), roi_labels[:len(fg)]]
            loss = loss + nn.functional.smooth_l1_loss(deltas, box_targets, beta=1.0)
            mask_logits = model.mask_head(roi_align(feats[i], rois[:len(fg)], 14))
            mask_logits = mask_logits[torch.arange(len(fg)), roi_labels[:len(fg)]]
            loss = loss + nn.functional.binary_cross_entropy_with_logits(mask_logits, mask_targets)
        loss = loss / batch
        loss.backward()
        opt.step()
        total += loss.item()
    return total


@_workload(default_steps=5)
def dpsgd_train(*, steps: int, seed: int) -> float:
    """Differentially private training by DP-SGD (Abadi et al. 2016) with per-sample gradients
    taken by torch.func, in the manner of Opacus with its BatchMemoryManager: a CNN for 32x32 RGB
    images, 10 classes (3x3 Conv2d 3-32, 32-64 and 64-128, each with GroupNorm of 8 groups, ReLU
    and 2x2 max pooling, then a linear 2048-128, ReLU and a linear 128-10; 357 k weights; GroupNorm
    because BatchNorm mixes samples); each step a logical batch of 256 images (noisy class
    prototypes from the data generator) run as 4 physical batches of 64: for each, the per-sample
    gradients by torch.func.vmap(torch.func.grad(...)) over a functional_call of the model (every
    parameter's gradient with a leading batch dimension of 64: 91 MB for the physical batch, and
    the per-sample losses, by grad_and_value), the per-sample norms over all parameters (a stack
    of per-parameter norms), a clipping factor min(1, 1 / norm) per sample (max norm 1), and the
    clipped gradients summed over the batch by einsum and added to a running sum per parameter
    (out of place); then Gaussian noise
    (noise multiplier 1.1, from the data generator) added to the sums, divided by 256, set as
    .grad and an SGD step with momentum 0.9. Batch-times-weights per-sample gradients made and
    dropped four times a step beside the weight-sized accumulators; fixed shapes (every step
    allocates the same sizes in the same order); 5 steps."""
    torch.manual_seed(0)
    logical, physical, classes, max_norm, sigma = 256, 64, 10, 1.0, 1.1

    def block(cin: int, cout: int) -> list[nn.Module]:
        return [nn.Conv2d(cin, cout, 3, padding=1), nn.GroupNorm(8, cout), nn.ReLU(), nn.MaxPool2d(2)]

    model = nn.Sequential(*block(3, 32), *block(32, 64), *block(64, 128), nn.Flatten(), nn.Linear(2048, 128),
                          nn.ReLU(), nn.Linear(128, classes))
    names = [n for n, _ in model.named_parameters()]
    opt = torch.optim.SGD(model.parameters(), lr=0.5, momentum=0.9)

    def sample_loss(params: dict[str, torch.Tensor], x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        logits = torch.func.functional_call(model, params, (x[None],))
        return nn.functional.cross_entropy(logits, y[None])

    per_sample_grads = torch.func.vmap(torch.func.grad_and_value(sample_loss), in_dims=(None, 0, 0))
    gen = torch.Generator().manual_seed(107 + seed)
    prototypes = torch.rand(classes, 3, 32, 32, generator=gen)
    total = 0.0
    for _ in range(steps):
        labels = torch.randint(0, classes, (logical,), generator=gen)
        images = prototypes[labels] + 0.5 * torch.randn(logical, 3, 32, 32, generator=gen)
        opt.zero_grad(set_to_none=True)
        params = {n: p.detach() for n, p in model.named_parameters()}
        sums: dict[str, torch.Tensor] = {}
        for start in range(0, logical, physical):
            x, y = images[start:start + physical], labels[start:start + physical]
            grads, losses = per_sample_grads(params, x, y)
            norms = torch.stack([grads[n].flatten(1).norm(dim=1) for n in names], 1).norm(dim=1)
            factor = (max_norm / (norms + 1e-6)).clamp(max=1.0)
            for n in names:
                clipped = torch.einsum("b,b...->...", factor, grads[n])
                sums[n] = clipped if n not in sums else sums[n] + clipped
            del grads
            total += losses.mean().item()
        for n, p in model.named_parameters():
            p.grad = (sums[n] + sigma * max_norm * torch.randn(p.shape, generator=gen)) / logical
        opt.step()
    return total


@_workload(default_steps=6)
def whisper_beam_serve(*, steps: int, seed: int) -> float:
    """Inference only: speech recognition by a small Whisper-style encoder-decoder (Radford et al.
    2022) with beam search, one request a step, under torch.inference_mode(). Each request an
    utterance of a drawn duration (4-30 s at 16 kHz: a sum of drawn tones and noise from the data
    generator) zero-padded to 30 s as Whisper does, its log-mel spectrogram made in the script
    (torch.stft, window 400, hop 160, a triangular 80-band mel filterbank, Whisper's log clamp
    and scaling: 80 x 3000); an encoder (two Conv1d 80-256 and 256-256 of kernel 3, the second of
    stride 2, with GELU, sinusoidal positions over the 1500 frames, 4 pre-norm layers of width
    256, 4 heads, MLP 1024) run once per request; a decoder (vocabulary 16000, learned
    positions, 4 pre-norm layers with causal self-attention and cross-attention, the head tied to
    the embedding) run with 5 beams: the encoder output repeated per beam and each layer's
    cross-attention keys and values computed once per request (5 x 1500 x 256 each), the
    self-attention keys and values grown by torch.cat at every token and reordered by
    index_select of the surviving beams' rows; the prompt is Whisper's previous-text
    conditioning (0-64 drawn tokens, as after an earlier window) and the start-of-transcript
    tokens, and each request decodes a drawn budget of 2 tokens per second of audio (8-60
    tokens; the weights are as initialised, so the end-of-text token does not end it), each
    token the top 5 of the 5 x 16000 continuations' log-probabilities. Large per-request
    cross-attention caches beside small self-attention caches that grow every token, with a
    prompt and a length that change from request to request; 6 requests."""
    torch.manual_seed(0)
    vocab, dim, heads, depth, beams, frames, rate, hop, mels = 16000, 256, 4, 4, 5, 3000, 16000, 160, 80
    sot = [vocab - 4, vocab - 3, vocab - 2]  # start of transcript, language, task

    def mel_filters() -> torch.Tensor:  # (80, 201) triangular filters on the mel scale
        hz = torch.linspace(0, rate / 2, 201)
        mel = 2595 * torch.log10(1 + hz / 700)
        edges = torch.linspace(0, float(mel[-1]), mels + 2)
        lower, centre, upper = edges[:-2, None], edges[1:-1, None], edges[2:, None]
        return torch.clamp(torch.minimum((mel - lower) / (centre - lower), (upper - mel) / (upper - centre)), min=0)

    def log_mel(audio: torch.Tensor) -> torch.Tensor:
        spec = torch.stft(audio, 400, hop, window=torch.hann_window(400), return_complex=True)[:, :-1]
        logspec = torch.log10(torch.clamp(filters @ spec.abs() ** 2, min=1e-10))
        return (torch.maximum(logspec, logspec.max() - 8.0) + 4.0) / 4.0

    class Attention(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.q, self.k, self.v, self.o = (nn.Linear(dim, dim) for _ in range(4))

        def split(self, x: torch.Tensor) -> torch.Tensor:
            return x.view(x.shape[0], x.shape[1], heads, dim // heads).transpose(1, 2)

        def attend(self, x: torch.Tensor, k: torch.Tensor, v: torch.Tensor, causal: bool = False) -> torch.Tensor:
            out = nn.functional.scaled_dot_product_attention(self.split(self.q(x)), k, v, is_causal=causal)
            return self.o(out.transpose(1, 2).reshape(x.shape[0], x.shape[1], dim))

    class EncoderLayer(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.ln1, self.ln2, self.att = nn.LayerNorm(dim), nn.LayerNorm(dim), Attention()
            self.mlp = nn.Sequential(nn.Linear(dim, 4 * dim), nn.GELU(), nn.Linear(4 * dim, dim))

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            h = self.ln1(x)
            x = x + self.att.attend(h, self.att.split(self.att.k(h)), self.att.split(self.att.v(h)))
            return x + self.mlp(self.ln2(x))

    class DecoderLayer(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.ln1, self.ln2, self.ln3 = nn.LayerNorm(dim), nn.LayerNorm(dim), nn.LayerNorm(dim)
            self.self_att, self.cross_att = Attention(), Attention()
            self.mlp = nn.Sequential(nn.Linear(dim, 4 * dim), nn.GELU(), nn.Linear(4 * dim, dim))

        def forward(self, x: torch.Tensor, cache: dict[str, torch.Tensor]) -> torch.Tensor:
            h = self.ln1(x)
            k, v = self.self_att.split(self.self_att.k(h)), self.self_att.split(self.self_att.v(h))
            first = "k" not in cache
            cache["k"] = k if first else torch.cat([cache["k"], k], 2)
            cache["v"] = v if first else torch.cat([cache["v"], v], 2)
            x = x + self.self_att.attend(h, cache["k"], cache["v"], causal=first and x.shape[1] > 1)
            x = x + self.cross_att.attend(self.ln2(x), cache["xk"], cache["xv"])
            return x + self.mlp(self.ln3(x))

    class Whisper(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.conv1, self.conv2 = nn.Conv1d(mels, dim, 3, padding=1), nn.Conv1d(dim, dim, 3, 2, padding=1)
            scales = torch.exp(-math.log(10000) * torch.arange(dim // 2) / (dim // 2 - 1))
            t = torch.arange(frames // 2)[:, None] * scales
            self.register_buffer("enc_pos", torch.cat([t.sin(), t.cos()], 1))
            self.encoder = nn.ModuleList(EncoderLayer() for _ in range(depth))
            self.enc_ln = nn.LayerNorm(dim)
            self.embed, self.pos = nn.Embedding(vocab, dim), nn.Parameter(0.01 * torch.randn(448, dim))
            self.decoder = nn.ModuleList(DecoderLayer() for _ in range(depth))
            self.dec_ln = nn.LayerNorm(dim)

        def encode(self, mel: torch.Tensor) -> torch.Tensor:
            x = nn.functional.gelu(self.conv2(nn.functional.gelu(self.conv1(mel)))).transpose(1, 2) + self.enc_pos
            for layer in self.encoder:
                x = layer(x)
            return self.enc_ln(x)

        def decode(self, tokens: torch.Tensor, offset: int, caches: list[dict[str, torch.Tensor]]) -> torch.Tensor:
            x = self.embed(tokens) + self.pos[offset:offset + tokens.shape[1]]
            for layer, cache in zip(self.decoder, caches):
                x = layer(x, cache)
            return (self.dec_ln(x[:, -1]) @ self.embed.weight.T).log_softmax(-1)

    model = Whisper().eval()
    filters = mel_filters()
    gen = torch.Generator().manual_seed(108 + seed)
    total = 0.0
    with torch.inference_mode():
        for _ in range(steps):
            seconds = float(4 + 26 * torch.rand((), generator=gen))
            samples = int(seconds * rate)
            t = torch.arange(samples) / rate
            tones = 80 + 900 * torch.rand(6, generator=gen)
            audio = (torch.sin(2 * math.pi * tones[:, None] * t).sum(0) * 0.05
                     + 0.01 * torch.randn(samples, generator=gen))
            audio = nn.functional.pad(audio, (0, frames * hop - samples))
            features = model.encode(log_mel(audio)[None])  # (1, 1500, 256)
            features = features.repeat_interleave(beams, 0)
            caches = []
            for layer in model.decoder:
                xa = layer.cross_att
                caches.append({"xk": xa.split(xa.k(features)), "xv": xa.split(xa.v(features))})
            previous = torch.randint(0, vocab - 4, (int(torch.randint(0, 65, (), generator=gen)),), generator=gen)
            prompt = torch.cat([torch.tensor([vocab - 1]), previous, torch.tensor(sot)]) if len(previous) else \
                torch.tensor(sot)
            logprobs = model.decode(prompt.expand(beams, -1).contiguous(), 0, caches)
            scores = torch.zeros(beams)
            scores[1:] = -float("inf")  # the beams start as one hypothesis
            offset, hypotheses = len(prompt), torch.empty(beams, 0, dtype=torch.long)
            for _ in range(int(2 * seconds)):
                candidates = (scores[:, None] + logprobs).flatten()
                scores, flat = candidates.topk(beams)
                rows, tokens = flat // vocab, flat % vocab
                hypotheses = torch.cat([hypotheses.index_select(0, rows), tokens[:, None]], 1)
                for cache in caches:
                    cache["k"], cache["v"] = cache["k"].index_select(0, rows), cache["v"].index_select(0, rows)
                logprobs = model.decode(tokens[:, None], offset, caches)
                offset += 1
            total += float(scores.max()) / hypotheses.shape[1] + float(hypotheses[0].float().mean()) * 1e-6
    return total


@_workload(default_steps=5)
def reformer_lsh_train(*, steps: int, seed: int) -> float:
    """A Reformer language model (Kitaev et al. 2020) with LSH attention, one sequence of 4096
    tokens a step, vocabulary 1024 (a copy task: a drawn 512-token phrase repeated 8 times, from
    the data generator): an embedding 1024 x 256 plus learned positions, 2 pre-norm layers
    (d_model 256, 4 heads of 64, an MLP 1024 GELU run over 8 chunks of the sequence as the paper's
    chunked feed-forward), a final LayerNorm and a linear 256-1024. Each layer's attention shares
    queries and keys (the keys the L2-normalised queries) and hashes them 2 times into 64 buckets
    by random rotations drawn every forward (argmax over [xR, -xR], from torch's generator); per
    hash round the 4096 positions are sorted by (bucket, position) with argsort, the queries,
    keys and values gathered into that order and cut into 64 chunks of 64, each chunk attending
    to itself and the chunk before it (64 x 128 scores per chunk, causal by the gathered
    positions, a token's own key masked unless it has no other), the outputs and their
    logsumexps gathered back into sequence order by the inverse permutation, and the two rounds
    combined by a softmax over their logsumexps; next-token cross-entropy, AdamW. Sorts, gathers
    and index tensors of sequence size around chunked score tensors, per round and per layer;
    fixed shapes (every step allocates the same sizes in the same order); 5 steps."""
    torch.manual_seed(0)
    vocab, length, batch, dim, heads, depth, rounds, buckets, chunk = 1024, 4096, 1, 256, 4, 2, 2, 64, 64
    head_dim, n_chunks = dim // heads, length // chunk

    def lsh_attention(qk: torch.Tensor, v: torch.Tensor) -> torch.Tensor:  # (B, H, T, D) each
        b, h, t, d = qk.shape
        rotations = torch.randn(d, rounds, buckets // 2)
        rotated = torch.einsum("bhtd,drk->bhrtk", nn.functional.normalize(qk.detach(), dim=-1), rotations)
        bucket = torch.cat([rotated, -rotated], -1).argmax(-1)  # (B, H, R, T)
        pos = torch.arange(t)
        order = (bucket * t + pos).argsort(-1)  # sorted by bucket, then position
        undo = order.argsort(-1)
        keys = nn.functional.normalize(qk, dim=-1)
        outs, lses = [], []
        for r in range(rounds):
            idx = order[:, :, r]  # (B, H, T)
            gather = idx[..., None].expand(-1, -1, -1, d)
            sq = qk.gather(2, gather).view(b, h, n_chunks, chunk, d)
            sk = keys.gather(2, gather).view(b, h, n_chunks, chunk, d)
            sv = v.gather(2, gather).view(b, h, n_chunks, chunk, d)
            spos = idx.view(b, h, n_chunks, chunk)
            k2 = torch.cat([sk, sk.roll(1, 2)], 3)  # each chunk and the one before it
            v2 = torch.cat([sv, sv.roll(1, 2)], 3)
            kpos = torch.cat([spos, spos.roll(1, 2)], 3)
            scores = sq @ k2.transpose(-1, -2) / math.sqrt(d)  # (B, H, C, 64, 128)
            qpos = spos[..., None]
            scores = scores.masked_fill(kpos[..., None, :] > qpos, -1e9)
            scores = scores.masked_fill(kpos[..., None, :] == qpos, -1e5)
            lse = scores.logsumexp(-1, keepdim=True)
            out = (scores - lse).exp() @ v2
            back = undo[:, :, r]
            outs.append(out.view(b, h, t, d).gather(2, back[..., None].expand(-1, -1, -1, d)))
            lses.append(lse.view(b, h, t, 1).gather(2, back[..., None]))
        weights = torch.stack(lses).softmax(0)
        return (torch.stack(outs) * weights).sum(0)

    class Layer(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.ln1, self.ln2 = nn.LayerNorm(dim), nn.LayerNorm(dim)
            self.qk, self.v, self.out = nn.Linear(dim, dim), nn.Linear(dim, dim), nn.Linear(dim, dim)
            self.mlp = nn.Sequential(nn.Linear(dim, 4 * dim), nn.GELU(), nn.Linear(4 * dim, dim))

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            b, t, _ = x.shape
            h = self.ln1(x)
            qk = self.qk(h).view(b, t, heads, head_dim).transpose(1, 2)
            v = self.v(h).view(b, t, heads, head_dim).transpose(1, 2)
            x = x + self.out(lsh_attention(qk, v).transpose(1, 2).reshape(b, t, dim))
            return x + torch.cat([self.mlp(self.ln2(part)) for part in x.chunk(8, 1)], 1)

    class Reformer(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.embed, self.pos = nn.Embedding(vocab, dim), nn.Parameter(0.02 * torch.randn(length, dim))
            self.layers = nn.ModuleList(Layer() for _ in range(depth))
            self.norm, self.head = nn.LayerNorm(dim), nn.Linear(dim, vocab)

        def forward(self, tokens: torch.Tensor) -> torch.Tensor:
            x = self.embed(tokens) + self.pos[:tokens.shape[1]]
            for layer in self.layers:
                x = layer(x)
            return self.head(self.norm(x))

    model = Reformer()
    opt = torch.optim.AdamW(model.parameters(), lr=3e-4)
    gen = torch.Generator().manual_seed(109 + seed)
    total = 0.0
    for _ in range(steps):
        phrase = torch.randint(0, vocab, (batch, length // 8), generator=gen)
        tokens = torch.cat([phrase.repeat(1, 8), phrase[:, :1]], 1)
        opt.zero_grad(set_to_none=True)
        logits = model(tokens[:, :-1])
        loss = nn.functional.cross_entropy(logits.reshape(-1, vocab), tokens[:, 1:].reshape(-1))
        loss.backward()
        opt.step()
        total += loss.item()
    return total


@_workload(default_steps=8)
def treelstm_train(*, steps: int, seed: int) -> float:
    """A binary (constituency) Tree-LSTM (Tai et al. 2015) for fine-grained sentiment in the manner
    of the Stanford Sentiment Treebank, batch 128 sentences of 6-48 tokens (vocabulary 20000, each
    word a drawn sentiment score; every sentence a random binary parse tree built by splitting
    its span at a drawn point, and every node labelled with the 5-way bucket of its leaves' mean
    score, all from the data generator): an embedding 20000 x 300 (dense gradients), leaves'
    states from their words (a linear 300-3x256 to the input, output and update gates), and the
    internal nodes computed level by level as DGL's Tree-LSTM batches them (a node's level one
    more than its higher child's; all of the batch's nodes of a level together): the level's
    children's hidden and cell states gathered by index_select from the states of every level so
    far, which grow by torch.cat after each level, and a linear 2x256-5x256 to the input, output
    and update gates and one forget gate per child; dropout 0.3 on the embeddings and a linear
    256-5 classifying every node (leaves and phrases), cross-entropy over all nodes, Adagrad
    (lr 0.05, as the paper). The number of levels (the deepest tree) and of nodes per level
    follow the drawn trees, so every step allocates a different sequence of sizes, mostly small
    per-level tensors and node-state tensors that grow through the step; 8 steps."""
    torch.manual_seed(0)
    vocab, embed_dim, hidden, classes, batch = 20000, 300, 256, 5, 128

    class TreeLSTM(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.embed = nn.Embedding(vocab, embed_dim)
            self.leaf = nn.Linear(embed_dim, 3 * hidden)
            self.node = nn.Linear(2 * hidden, 5 * hidden)
            self.out = nn.Linear(hidden, classes)

        def forward(self, words: torch.Tensor, levels: list[tuple[torch.Tensor, torch.Tensor]]) -> torch.Tensor:
            i, o, u = self.leaf(nn.functional.dropout(self.embed(words), 0.3, self.training)).chunk(3, -1)
            c = torch.sigmoid(i) * torch.tanh(u)
            h = torch.sigmoid(o) * torch.tanh(c)
            for left, right in levels:  # children's indices into the states so far, one level at a time
                hl, hr = h.index_select(0, left), h.index_select(0, right)
                i, o, u, fl, fr = self.node(torch.cat([hl, hr], 1)).chunk(5, -1)
                new_c = (torch.sigmoid(i) * torch.tanh(u) + torch.sigmoid(fl) * c.index_select(0, left)
                         + torch.sigmoid(fr) * c.index_select(0, right))
                c = torch.cat([c, new_c])
                h = torch.cat([h, torch.sigmoid(o) * torch.tanh(new_c)])
            return self.out(h)

    model = TreeLSTM()
    opt = torch.optim.Adagrad(model.parameters(), lr=0.05)
    gen = torch.Generator().manual_seed(110 + seed)
    sentiment = torch.randn(vocab, generator=gen)
    total = 0.0
    for _ in range(steps):
        # each tree: its words, and a split of every span of two or more at a drawn point
        lengths = torch.randint(6, 49, (batch,), generator=gen).tolist()
        words = torch.randint(0, vocab, (sum(lengths),), generator=gen)
        scores, draws = sentiment[words].tolist(), iter(torch.rand(sum(lengths), generator=gen).tolist())
        phrases: list[tuple[int, int, int, float]] = []  # (level, left id, right id, mean score)

        def build(lo: int, hi: int) -> tuple[int, int]:  # (node id, level); a leaf's id is its word's index
            if hi - lo == 1:
                return lo, 0
            cut = lo + 1 + int(next(draws) * (hi - lo - 1))
            (a, la), (b, lb) = build(lo, cut), build(cut, hi)
            level = 1 + max(la, lb)
            phrases.append((level, a, b, sum(scores[lo:hi]) / (hi - lo)))
            return -len(phrases), level  # a phrase's provisional id: -(its index + 1)

        start = 0
        for n in lengths:
            build(start, start + n)
            start += n
        # number the phrases after the leaves, level by level
        order = sorted(range(len(phrases)), key=lambda k: phrases[k][0])
        ident = {-(k + 1): len(words) + rank for rank, k in enumerate(order)}
        levels, labels = [], [min(4, max(0, int(x * 1.5 + 2.5))) for x in scores]
        for _, group in itertools.groupby(order, key=lambda k: phrases[k][0]):
            members = list(group)
            levels.append((torch.tensor([ident.get(phrases[k][1], phrases[k][1]) for k in members]),
                           torch.tensor([ident.get(phrases[k][2], phrases[k][2]) for k in members])))
            labels += [min(4, max(0, int(phrases[k][3] * 1.5 + 2.5))) for k in members]
        opt.zero_grad(set_to_none=True)
        logits = model(words, levels)
        loss = nn.functional.cross_entropy(logits, torch.tensor(labels))
        loss.backward()
        opt.step()
        total += loss.item()
    return total


@_workload(default_steps=5)
def tacotron2_train(*, steps: int, seed: int) -> float:
    """A Tacotron 2-style text-to-mel model (Shen et al. 2018, as NVIDIA's implementation) trained
    with teacher forcing, batch 16 utterances of 16-64 drawn symbols (an alphabet of 64), each symbol
    held for 1-4 drawn frames of an 80-bin mel spectrogram (a per-symbol template plus noise, from the
    data generator), so each utterance's mel length follows its symbols and durations; the batch is
    padded to its longest text and its longest mel (rounded up to the reduction factor 2). An encoder
    (an embedding 64 x 256, three Conv1d 256-256 of kernel 5 with BatchNorm, ReLU and dropout 0.5, a
    bidirectional LSTM of 128 per direction over the texts packed by pack_padded_sequence and
    unpacked by pad_packed_sequence) and an autoregressive decoder run as a Python loop, one
    iteration per 2 mel frames: a prenet (160-128-128, ReLU, dropout 0.5 kept on) over the previous
    ground-truth frames, an attention LSTMCell (128 + 256 to 512), location-sensitive attention (a
    query projection 512-128, the memory projected once 256-128, a Conv1d over the previous and
    cumulative attention weights to 32 filters of kernel 31 and a linear 32-128, tanh, a linear
    128-1, padded symbols masked, softmax over the text), the context by bmm, a decoder LSTMCell
    (512 + 256 to 512), dropout 0.1 on both cells' outputs, a linear 768-160 to the next 2 frames
    and a linear 768-1 to the stop token; a postnet of five Conv1d of kernel 5 (80-512-512-512-512-80,
    BatchNorm, tanh but the last, dropout 0.5) added as a residual; masked MSE before and after the
    postnet and a stop-token BCE, gradient clipping at 1, Adam. The number of decoder iterations and
    the text and mel sizes follow the data, so every step allocates a different sequence of sizes,
    mostly small per-iteration tensors kept for the backward; 5 steps."""
    torch.manual_seed(0)
    symbols, emb, mels, batch, r = 64, 256, 80, 16, 2
    att_rnn, dec_rnn, att_dim, loc_filters, loc_kernel, pre = 512, 512, 128, 32, 31, 128

    class Encoder(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.embed = nn.Embedding(symbols, emb)
            self.convs = nn.Sequential(*(nn.Sequential(nn.Conv1d(emb, emb, 5, padding=2), nn.BatchNorm1d(emb),
                                                       nn.ReLU(), nn.Dropout(0.5)) for _ in range(3)))
            self.lstm = nn.LSTM(emb, emb // 2, batch_first=True, bidirectional=True)

        def forward(self, text: torch.Tensor, lengths: torch.Tensor) -> torch.Tensor:
            x = self.convs(self.embed(text).transpose(1, 2)).transpose(1, 2)
            packed = nn.utils.rnn.pack_padded_sequence(x, lengths, batch_first=True, enforce_sorted=False)
            return nn.utils.rnn.pad_packed_sequence(self.lstm(packed)[0], batch_first=True,
                                                    total_length=text.shape[1])[0]

    class Decoder(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.prenet = nn.ModuleList([nn.Linear(mels * r, pre, bias=False), nn.Linear(pre, pre, bias=False)])
            self.att_cell = nn.LSTMCell(pre + emb, att_rnn)
            self.query = nn.Linear(att_rnn, att_dim, bias=False)
            self.memory = nn.Linear(emb, att_dim, bias=False)
            self.location_conv = nn.Conv1d(2, loc_filters, loc_kernel, padding=loc_kernel // 2, bias=False)
            self.location = nn.Linear(loc_filters, att_dim, bias=False)
            self.v = nn.Linear(att_dim, 1, bias=False)
            self.dec_cell = nn.LSTMCell(att_rnn + emb, dec_rnn)
            self.proj = nn.Linear(dec_rnn + emb, mels * r)
            self.gate = nn.Linear(dec_rnn + emb, 1)

        def forward(self, memory: torch.Tensor, pad: torch.Tensor, frames: torch.Tensor
                    ) -> tuple[torch.Tensor, torch.Tensor]:
            b, t, _ = memory.shape
            x = torch.cat([frames.new_zeros(b, 1, mels * r), frames[:, :-1]], 1)  # teacher forcing
            for layer in self.prenet:
                x = nn.functional.dropout(torch.relu(layer(x)), 0.5, training=True)
            processed = self.memory(memory)
            h_a, c_a = memory.new_zeros(b, att_rnn), memory.new_zeros(b, att_rnn)
            h_d, c_d = memory.new_zeros(b, dec_rnn), memory.new_zeros(b, dec_rnn)
            weights, cumulative, context = memory.new_zeros(b, t), memory.new_zeros(b, t), memory.new_zeros(b, emb)
            outs, gates = [], []
            for i in range(x.shape[1]):
                h_a, c_a = self.att_cell(torch.cat([x[:, i], context], 1), (h_a, c_a))
                h_a = nn.functional.dropout(h_a, 0.1, self.training)
                loc = self.location(self.location_conv(torch.stack([weights, cumulative], 1)).transpose(1, 2))
                energies = self.v(torch.tanh(self.query(h_a)[:, None] + processed + loc)).squeeze(-1)
                weights = energies.masked_fill(pad, -float("inf")).softmax(1)
                cumulative = cumulative + weights
                context = torch.bmm(weights[:, None], memory).squeeze(1)
                h_d, c_d = self.dec_cell(torch.cat([h_a, context], 1), (h_d, c_d))
                h_d = nn.functional.dropout(h_d, 0.1, self.training)
                out = torch.cat([h_d, context], 1)
                outs.append(self.proj(out))
                gates.append(self.gate(out))
            return torch.stack(outs, 1).view(b, -1, mels), torch.cat(gates, 1)

    class Tacotron2(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.encoder, self.decoder = Encoder(), Decoder()
            chans = [mels, 512, 512, 512, 512, mels]
            self.postnet = nn.ModuleList(nn.Sequential(nn.Conv1d(chans[i], chans[i + 1], 5, padding=2),
                                                       nn.BatchNorm1d(chans[i + 1])) for i in range(5))

        def forward(self, text: torch.Tensor, lengths: torch.Tensor, frames: torch.Tensor
                    ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
            memory = self.encoder(text, lengths)
            pad = torch.arange(text.shape[1])[None] >= lengths[:, None]
            mel, gate = self.decoder(memory, pad, frames)
            x = mel.transpose(1, 2)
            for i, conv in enumerate(self.postnet):
                x = conv(x)
                x = nn.functional.dropout(torch.tanh(x) if i < 4 else x, 0.5, self.training)
            return mel, mel + x.transpose(1, 2), gate

    model = Tacotron2()
    opt = torch.optim.Adam(model.parameters(), lr=1e-3, weight_decay=1e-6)
    gen = torch.Generator().manual_seed(111 + seed)
    templates = torch.randn(symbols, mels, generator=gen).cumsum(1) / 4  # smooth along frequency
    total = 0.0
    for _ in range(steps):
        lengths = torch.randint(16, 65, (batch,), generator=gen)
        texts = [torch.randint(0, symbols, (int(n),), generator=gen) for n in lengths]
        durations = [torch.randint(1, 5, (int(n),), generator=gen) for n in lengths]
        mel_lengths = torch.stack([d.sum() for d in durations])
        width = -(-int(mel_lengths.max()) // r) * r
        text = torch.zeros(batch, int(lengths.max()), dtype=torch.long)
        target = torch.zeros(batch, width, mels)
        for i, (t, d) in enumerate(zip(texts, durations)):
            text[i, :len(t)] = t
            frames = templates[t].repeat_interleave(d, 0)
            target[i, :len(frames)] = frames + 0.1 * torch.randn(frames.shape, generator=gen)
        stop = (torch.arange(width // r)[None] >= (mel_lengths[:, None] - 1) // r).float()
        valid = (torch.arange(width)[None] < mel_lengths[:, None])[..., None].float()
        opt.zero_grad(set_to_none=True)
        mel, post, gate = model(text, lengths, target.view(batch, width // r, mels * r))
        count = valid.sum() * mels
        loss = (((mel - target) ** 2 * valid).sum() + ((post - target) ** 2 * valid).sum()) / count
        loss = loss + nn.functional.binary_cross_entropy_with_logits(gate, stop)
        loss.backward()
        nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        total += loss.item()
    return total


@_workload(default_steps=5)
def t5_adafactor_train(*, steps: int, seed: int) -> float:
    """A T5 v1.1-style encoder-decoder (Raffel et al. 2020) pre-trained on span corruption with
    torch.optim.Adafactor (Shazeer and Stern 2018: a row and a column statistic of the squared
    gradients per weight matrix instead of a full second moment, no first moment), batch 3: each
    example 256 tokens of a drawn random walk over a vocabulary of 16000 (the last 100 ids the
    sentinels), 38 of them (15 %) masked as 13 spans, the noise and the kept tokens each cut into 13
    spans of drawn lengths as T5's random_spans_noise_mask does, so every input is 231 tokens plus
    EOS and every target 51 plus EOS whatever the spans (the data generator). An embedding
    16000 x 384 shared by both stacks and an untied head 384-16000; 4 encoder and 4 decoder layers of
    width 384, 6 heads of 64 without score scaling, pre-norm nn.RMSNorm, a gated-GELU feed-forward
    384-2x1024-384, no biases, dropout 0.1; T5's bucketed relative position bias (32 buckets up to
    distance 128, bidirectional in the encoder, causal in the decoder; an embedding 32 x 6 per stack
    looked up once per forward into a heads x tokens x tokens tensor added in every layer), the
    decoder's cross-attention without it; the decoder reads the targets shifted right;
    cross-entropy, Adafactor at lr 0.01. Heads x tokens x tokens score tensors beside the
    optimizer's small row and column statistics; fixed shapes (every step allocates the same sizes
    in the same order); 5 steps."""
    torch.manual_seed(0)
    vocab, dim, heads, ff, depth, batch, raw, buckets, max_distance = 16000, 384, 6, 1024, 4, 3, 256, 32, 128
    noise = round(raw * 0.15)
    spans = round(noise / 3)
    head_dim = dim // heads

    def relative_bucket(relative: torch.Tensor, bidirectional: bool) -> torch.Tensor:
        n = buckets
        out = torch.zeros_like(relative)
        if bidirectional:
            n //= 2
            out += (relative > 0).long() * n
            relative = relative.abs()
        else:
            relative = -torch.clamp(relative, max=0)
        exact = n // 2
        large = exact + (torch.log(relative.float().clamp(min=1) / exact) / math.log(max_distance / exact)
                         * (n - exact)).long()
        return out + torch.where(relative < exact, relative, large.clamp(max=n - 1))

    class Attention(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.q, self.k, self.v, self.o = (nn.Linear(dim, dim, bias=False) for _ in range(4))

        def forward(self, x: torch.Tensor, kv: torch.Tensor, bias: torch.Tensor | None) -> torch.Tensor:
            b, t, _ = x.shape
            q = self.q(x).view(b, t, heads, head_dim).transpose(1, 2)
            k = self.k(kv).view(b, -1, heads, head_dim).transpose(1, 2)
            v = self.v(kv).view(b, -1, heads, head_dim).transpose(1, 2)
            scores = q @ k.transpose(-1, -2)  # T5 folds the scale into the initialisation
            if bias is not None:
                scores = scores + bias
            att = nn.functional.dropout(scores.softmax(-1), 0.1, self.training)
            return self.o((att @ v).transpose(1, 2).reshape(b, t, dim))

    class FeedForward(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.wi0, self.wi1 = nn.Linear(dim, ff, bias=False), nn.Linear(dim, ff, bias=False)
            self.wo = nn.Linear(ff, dim, bias=False)

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            return self.wo(nn.functional.dropout(nn.functional.gelu(self.wi0(x), approximate="tanh") * self.wi1(x),
                                                 0.1, self.training))

    class Layer(nn.Module):
        def __init__(self, decoder: bool) -> None:
            super().__init__()
            self.ln1, self.att = nn.RMSNorm(dim, eps=1e-6), Attention()
            self.cross = Attention() if decoder else None
            self.ln2 = nn.RMSNorm(dim, eps=1e-6) if decoder else None
            self.ln3, self.ff = nn.RMSNorm(dim, eps=1e-6), FeedForward()

        def forward(self, x: torch.Tensor, bias: torch.Tensor, memory: torch.Tensor | None = None) -> torch.Tensor:
            h = self.ln1(x)
            x = x + nn.functional.dropout(self.att(h, h, bias), 0.1, self.training)
            if self.cross is not None and self.ln2 is not None and memory is not None:
                x = x + nn.functional.dropout(self.cross(self.ln2(x), memory, None), 0.1, self.training)
            return x + nn.functional.dropout(self.ff(self.ln3(x)), 0.1, self.training)

    class T5(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.embed = nn.Embedding(vocab, dim)
            self.enc_bias, self.dec_bias = nn.Embedding(buckets, heads), nn.Embedding(buckets, heads)
            self.encoder = nn.ModuleList(Layer(False) for _ in range(depth))
            self.decoder = nn.ModuleList(Layer(True) for _ in range(depth))
            self.enc_ln, self.dec_ln = nn.RMSNorm(dim, eps=1e-6), nn.RMSNorm(dim, eps=1e-6)
            self.head = nn.Linear(dim, vocab, bias=False)

        def position_bias(self, table: nn.Embedding, t: int, bidirectional: bool) -> torch.Tensor:
            relative = torch.arange(t)[None] - torch.arange(t)[:, None]  # key - query
            return table(relative_bucket(relative, bidirectional)).permute(2, 0, 1)[None]

        def forward(self, src: torch.Tensor, tgt_in: torch.Tensor) -> torch.Tensor:
            x = nn.functional.dropout(self.embed(src), 0.1, self.training)
            bias = self.position_bias(self.enc_bias, src.shape[1], True)
            for layer in self.encoder:
                x = layer(x, bias)
            memory = nn.functional.dropout(self.enc_ln(x), 0.1, self.training)
            t = tgt_in.shape[1]
            causal = torch.full((t, t), -float("inf")).triu(1)
            bias = self.position_bias(self.dec_bias, t, False) + causal
            y = nn.functional.dropout(self.embed(tgt_in), 0.1, self.training)
            for layer in self.decoder:
                y = layer(y, bias, memory)
            return self.head(nn.functional.dropout(self.dec_ln(y), 0.1, self.training))

    model = T5()
    opt = torch.optim.Adafactor(model.parameters(), lr=0.01)
    gen = torch.Generator().manual_seed(112 + seed)
    steps_table = torch.randint(-40, 41, (vocab - 100,), generator=gen)  # each id's usual next step

    def spans_of(total: int, count: int) -> list[int]:  # ``total`` cut into ``count`` positive lengths
        cuts = sorted((torch.randperm(total - 1, generator=gen)[:count - 1] + 1).tolist())
        return [b - a for a, b in zip([0] + cuts, cuts + [total])]

    eos, sentinel = 1, vocab - 1
    total = 0.0
    for _ in range(steps):
        srcs, tgts = [], []
        for _ in range(batch):
            walk = [int(torch.randint(2, vocab - 100, (), generator=gen))]
            jitter = torch.randint(-3, 4, (raw,), generator=gen).tolist()
            for j in range(raw - 1):
                walk.append(2 + (walk[-1] + int(steps_table[walk[-1]]) + jitter[j] - 2) % (vocab - 102))
            src, tgt, at = [], [], 0
            for s, (keep, drop) in enumerate(zip(spans_of(raw - noise, spans), spans_of(noise, spans))):
                src += walk[at:at + keep] + [sentinel - s]
                tgt += [sentinel - s] + walk[at + keep:at + keep + drop]
                at += keep + drop
            srcs.append(src + [eos])
            tgts.append(tgt + [eos])
        src, tgt = torch.tensor(srcs), torch.tensor(tgts)
        tgt_in = torch.cat([torch.zeros(batch, 1, dtype=torch.long), tgt[:, :-1]], 1)
        opt.zero_grad(set_to_none=True)
        logits = model(src, tgt_in)
        loss = nn.functional.cross_entropy(logits.reshape(-1, vocab), tgt.reshape(-1))
        loss.backward()
        opt.step()
        total += loss.item()
    return total


@_workload(default_steps=5)
def wav2vec2_pretrain(*, steps: int, seed: int) -> float:
    """Self-supervised speech pre-training in the manner of wav2vec 2.0 (Baevski et al. 2020, as
    fairseq's Wav2Vec2Model), batch 4 raw waveforms of 2 s at 16 kHz (32000 samples, every utterance
    cropped to the same length as fairseq crops a batch to its shortest; 16 segments of 2000
    samples, each a harmonic tone of a drawn pitch, plus noise, from the data generator): a feature
    encoder of 7 Conv1d of 192 channels without bias (kernels 10, 3, 3, 3, 3, 2, 2; strides 5, 2, 2,
    2, 2, 2, 2; a per-channel GroupNorm after the first; GELU) to 99 frames, LayerNorm, an L2
    feature penalty and a linear 192-384 with dropout 0.1; 4 spans of 10 frames masked per
    utterance (4 of the 9 aligned slots of 10 frames drawn by the data generator, so 40 of the 99
    frames, the same count in every row) and replaced by a learned mask embedding; a context
    network (a convolutional relative position embedding: a weight-normalised grouped Conv1d of
    kernel 32, 16 groups, GELU, added, then LayerNorm, and 4 post-norm nn.TransformerEncoderLayer of
    width 384, 6 heads, FFN 1536, GELU, dropout 0.1); a Gumbel-softmax vector quantizer over the
    unmasked features of the masked frames (2 groups of 320 codes of 128, hard gumbel_softmax with a
    straight-through estimator at a temperature annealed from 2, the codebook diversity loss from
    the softmax's perplexity) and a linear 256-256 on its output; the masked frames' context vectors
    (boolean indexing: 4 x 40) through a linear 384-256 against their quantized targets and 100
    distractors per frame drawn from the other masked frames of the same utterance (4 x 40 x 100 x
    256 gathered), cosine similarities over temperature 0.1 with distractors equal to the target
    masked out, cross-entropy on the target's index, plus 0.1 x the diversity loss and 10 x the
    feature penalty; AdamW. Long early convolution activations, then a wide gathered distractor
    tensor, beside the optimizer's state; fixed shapes (every step allocates the same sizes in the
    same order); 5 steps."""
    torch.manual_seed(0)
    batch, samples, channels, dim, heads, depth, ffn = 4, 32000, 192, 384, 6, 4, 1536
    groups, codes, code_dim, final_dim, distractors, span, masked_spans = 2, 320, 256, 256, 100, 10, 4
    layers = [(10, 5)] + [(3, 2)] * 4 + [(2, 2)] * 2

    class Wav2Vec2(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            convs: list[nn.Module] = []
            cin = 1
            for i, (k, s) in enumerate(layers):
                convs += [nn.Conv1d(cin, channels, k, s, bias=False)]
                if i == 0:
                    convs += [nn.GroupNorm(channels, channels)]
                convs += [nn.GELU()]
                cin = channels
            self.features = nn.Sequential(*convs)
            self.ln = nn.LayerNorm(channels)
            self.proj = nn.Linear(channels, dim)
            self.mask_emb = nn.Parameter(torch.rand(dim))
            self.pos_conv = nn.utils.parametrizations.weight_norm(nn.Conv1d(dim, dim, 32, padding=16, groups=16),
                                                                  dim=2)
            self.enc_ln = nn.LayerNorm(dim)
            layer = nn.TransformerEncoderLayer(dim, heads, ffn, dropout=0.1, activation="gelu", batch_first=True)
            self.encoder = nn.TransformerEncoder(layer, depth, enable_nested_tensor=False)
            self.weight_proj = nn.Linear(channels, groups * codes)
            self.codebook = nn.Parameter(torch.rand(1, groups * codes, code_dim // groups))
            self.project_q = nn.Linear(code_dim, final_dim)
            self.final_proj = nn.Linear(dim, final_dim)

        def quantize(self, y: torch.Tensor, tau: float) -> tuple[torch.Tensor, torch.Tensor]:
            n = y.shape[0]
            logits = self.weight_proj(y).view(n * groups, codes)
            probs = logits.softmax(-1).view(n, groups, codes).mean(0)
            perplexity = torch.exp(-(probs * torch.log(probs + 1e-7)).sum(-1)).sum()
            onehot = nn.functional.gumbel_softmax(logits, tau=tau, hard=True).view(n, groups * codes, 1)
            q = (onehot * self.codebook).view(n, groups, codes, -1).sum(2).reshape(n, -1)
            return self.project_q(q), (groups * codes - perplexity) / (groups * codes)

        def forward(self, wave: torch.Tensor, mask: torch.Tensor, negatives: torch.Tensor, tau: float
                    ) -> torch.Tensor:
            b = wave.shape[0]
            feats = self.ln(self.features(wave[:, None]).transpose(1, 2))  # (B, T, C)
            penalty = feats.pow(2).mean()
            unmasked = nn.functional.dropout(feats, 0.1, self.training)
            x = nn.functional.dropout(self.proj(feats), 0.1, self.training)
            x = torch.where(mask[..., None], self.mask_emb, x)
            pos = nn.functional.gelu(self.pos_conv(x.transpose(1, 2))[:, :, :-1]).transpose(1, 2)
            x = self.encoder(nn.functional.dropout(self.enc_ln(x + pos), 0.1, self.training))
            y, diversity = self.quantize(unmasked[mask], tau)
            y = y.view(b, -1, final_dim)  # (B, M, F) the masked frames' targets
            m = y.shape[1]
            negs = y[torch.arange(b)[:, None, None], negatives]  # (B, M, K, F)
            x = self.final_proj(x[mask]).view(b, m, 1, final_dim)
            candidates = torch.cat([y[:, :, None], negs], 2)  # (B, M, 1 + K, F)
            logits = nn.functional.cosine_similarity(x, candidates, dim=-1) / 0.1
            same = (negs == y[:, :, None]).all(-1)
            logits = torch.cat([logits[..., :1], logits[..., 1:].masked_fill(same, -float("inf"))], -1)
            loss = nn.functional.cross_entropy(logits.view(b * m, -1), torch.zeros(b * m, dtype=torch.long),
                                               reduction="sum") / (b * m)
            return loss + 0.1 * diversity + 10 * penalty

    model = Wav2Vec2()
    frames = samples
    for k, s in layers:
        frames = (frames - k) // s + 1
    slots = frames // span
    opt = torch.optim.AdamW(model.parameters(), lr=5e-4, betas=(0.9, 0.98), eps=1e-6, weight_decay=0.01)
    gen = torch.Generator().manual_seed(113 + seed)
    total = 0.0
    for step in range(steps):
        f0 = (80 + 220 * torch.rand(batch, samples // 2000, generator=gen)).repeat_interleave(2000, 1)
        phase = 2 * math.pi * f0.cumsum(1) / 16000
        amps = torch.rand(batch, 4, 1, generator=gen)
        wave = (amps * torch.sin(torch.arange(1, 5)[:, None] * phase[:, None])).sum(1)
        wave = 0.1 * wave + 0.02 * torch.randn(batch, samples, generator=gen)
        wave = (wave - wave.mean(1, keepdim=True)) / wave.std(1, keepdim=True)
        chosen = torch.rand(batch, slots, generator=gen).argsort(1)[:, :masked_spans]
        mask = torch.zeros(batch, slots, dtype=torch.bool).scatter(1, chosen, True).repeat_interleave(span, 1)
        mask = torch.cat([mask, torch.zeros(batch, frames - slots * span, dtype=torch.bool)], 1)
        m = masked_spans * span
        negatives = torch.randint(0, m - 1, (batch, m, distractors), generator=gen)
        negatives = negatives + (negatives >= torch.arange(m)[None, :, None]).long()  # never the frame itself
        opt.zero_grad(set_to_none=True)
        loss = model(wave, mask, negatives, max(2.0 * 0.999995 ** step, 0.5))
        loss.backward()
        opt.step()
        total += loss.item()
    return total


@_workload(default_steps=6)
def graph_transformer_train(*, steps: int, seed: int) -> float:
    """A graph transformer with edge features (Dwivedi and Bresson 2021, their GraphTransformer layer
    with edge features) regressing a molecular property in the manner of ZINC, batch 64
    molecule-like graphs: each graph 9-37 drawn atoms of 28 types joined as a drawn spanning tree
    (each atom to one of the 4 before it) plus 0-3 drawn ring bonds, 4 bond types, its target a sum
    of per-type contributions less 0.3 per ring (all from the data generator); the graphs batched as
    one disjoint graph, both directions of every bond an edge. Laplacian eigenvector positional
    encodings computed per graph as the batch is made (the symmetric normalised Laplacian, its
    eigenvectors by torch.linalg.eigh, the 8 after the trivial one, zero-padded for small graphs,
    their signs flipped at random every step) through a linear 8-128, added to an atom embedding
    28 x 128; a bond embedding 4 x 128; 6 layers of sparse attention over the edges only (8 heads
    of 16: Q, K, V and an edge projection; each edge's score K[src] * Q[dst] / 4 times its projected
    edge feature, which is also the edge stream's update; the weights exp of the clamped per-head
    sums (-5 to 5), normalised per target node by index_add_ of the weights and of the weighted
    V[src]), node and edge output projections, residuals and BatchNorm, feed-forward networks
    128-256-128 on both streams; mean pooling per graph by index_add_, an MLP 128-64-32-1, L1 loss,
    Adam. The node and edge counts and the eigendecompositions' sizes follow the drawn graphs, so
    every step allocates a different sequence of sizes; 6 steps."""
    torch.manual_seed(0)
    batch, atom_types, bond_types, dim, heads, depth, pe_k = 64, 28, 4, 128, 8, 6, 8
    head_dim = dim // heads

    class Layer(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.q, self.k, self.v, self.e = (nn.Linear(dim, dim) for _ in range(4))
            self.o_h, self.o_e = nn.Linear(dim, dim), nn.Linear(dim, dim)
            self.bn1_h, self.bn1_e, self.bn2_h, self.bn2_e = (nn.BatchNorm1d(dim) for _ in range(4))
            self.ff_h = nn.Sequential(nn.Linear(dim, 2 * dim), nn.ReLU(), nn.Dropout(0.0), nn.Linear(2 * dim, dim))
            self.ff_e = nn.Sequential(nn.Linear(dim, 2 * dim), nn.ReLU(), nn.Dropout(0.0), nn.Linear(2 * dim, dim))

        def forward(self, h: torch.Tensor, e: torch.Tensor, src: torch.Tensor, dst: torch.Tensor
                    ) -> tuple[torch.Tensor, torch.Tensor]:
            n = h.shape[0]
            q, k, v = (f(h).view(n, heads, head_dim) for f in (self.q, self.k, self.v))
            score = k[src] * q[dst] / math.sqrt(head_dim) * self.e(e).view(-1, heads, head_dim)
            weight = torch.exp(score.sum(-1, keepdim=True).clamp(-5, 5))  # (E, heads, 1)
            wv = torch.zeros_like(v).index_add_(0, dst, v[src] * weight)
            z = torch.zeros(n, heads, 1).index_add_(0, dst, weight)
            h_att, e_att = (wv / (z + 1e-6)).view(n, dim), score.view(-1, dim)
            h = self.bn1_h(h + nn.functional.dropout(self.o_h(h_att), 0.0, self.training))
            e = self.bn1_e(e + nn.functional.dropout(self.o_e(e_att), 0.0, self.training))
            return self.bn2_h(h + self.ff_h(h)), self.bn2_e(e + self.ff_e(e))

    class GraphTransformer(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.atom, self.bond, self.pe = nn.Embedding(atom_types, dim), nn.Embedding(bond_types, dim), \
                nn.Linear(pe_k, dim)
            self.layers = nn.ModuleList(Layer() for _ in range(depth))
            self.readout = nn.Sequential(nn.Linear(dim, 64), nn.ReLU(), nn.Linear(64, 32), nn.ReLU(), nn.Linear(32, 1))

        def forward(self, atoms: torch.Tensor, pe: torch.Tensor, bonds: torch.Tensor, src: torch.Tensor,
                    dst: torch.Tensor, graph: torch.Tensor) -> torch.Tensor:
            h, e = self.atom(atoms) + self.pe(pe), self.bond(bonds)
            for layer in self.layers:
                h, e = layer(h, e, src, dst)
            pooled = torch.zeros(batch, dim).index_add_(0, graph, h) / torch.bincount(graph, minlength=batch)[:, None]
            return self.readout(pooled).squeeze(1)

    model = GraphTransformer()
    opt = torch.optim.Adam(model.parameters(), lr=7e-4)
    gen = torch.Generator().manual_seed(114 + seed)
    contribution = torch.randn(atom_types, generator=gen)
    total = 0.0
    for _ in range(steps):
        atoms, pes, bonds, srcs, dsts, graphs, targets, offset = [], [], [], [], [], [], [], 0
        for g in range(batch):
            n = int(torch.randint(9, 38, (), generator=gen))
            kinds = torch.randint(0, atom_types, (n,), generator=gen)
            parents = [int(torch.randint(max(0, i - 4), i, (), generator=gen)) for i in range(1, n)]
            pairs = {(p, i) for i, p in enumerate(parents, 1)}
            rings = 0
            for _ in range(int(torch.randint(0, 4, (), generator=gen))):
                a, b = sorted(torch.randint(0, n, (2,), generator=gen).tolist())
                if a != b and (a, b) not in pairs:
                    pairs.add((a, b))
                    rings += 1
            a_idx, b_idx = torch.tensor([p for p, _ in sorted(pairs)]), torch.tensor([q for _, q in sorted(pairs)])
            adjacency = torch.zeros(n, n)
            adjacency[a_idx, b_idx] = adjacency[b_idx, a_idx] = 1.0
            norm = adjacency.sum(1).rsqrt()
            laplacian = torch.eye(n) - norm[:, None] * adjacency * norm[None]
            vectors = torch.linalg.eigh(laplacian).eigenvectors[:, 1:pe_k + 1]
            signs = torch.randint(0, 2, (vectors.shape[1],), generator=gen) * 2 - 1
            pes.append(nn.functional.pad(vectors * signs, (0, pe_k - vectors.shape[1])))
            kind = torch.randint(0, bond_types, (len(pairs),), generator=gen)
            atoms.append(kinds)
            bonds += [kind, kind]
            srcs += [a_idx + offset, b_idx + offset]
            dsts += [b_idx + offset, a_idx + offset]
            graphs.append(torch.full((n,), g))
            targets.append(float(contribution[kinds].sum()) - 0.3 * rings)
            offset += n
        opt.zero_grad(set_to_none=True)
        pred = model(torch.cat(atoms), torch.cat(pes), torch.cat(bonds), torch.cat(srcs), torch.cat(dsts),
                     torch.cat(graphs))
        loss = nn.functional.l1_loss(pred, torch.tensor(targets))
        loss.backward()
        opt.step()
        total += loss.item()
    return total


@_workload(default_steps=5)
def raft_flow_train(*, steps: int, seed: int) -> float:
    """Optical flow by RAFT (Teed and Deng 2020), its small model (RAFT-S), batch 2 image pairs of
    192x256 RGB: the first image a drawn texture (random gratings plus smoothed noise), the second
    the first warped by grid_sample along a drawn smooth flow field (a 4 x 5 grid of displacements
    of up to 12 pixels upsampled bicubically: the ground truth; all from the data generator). A
    feature encoder (a 7x7 stride-2 conv 3-32, instance norm, ReLU, three stages of two bottleneck
    residual blocks of 32, 64 and 96 channels, the last two stages of stride 2, and a 1x1 conv to
    128) run on both images as one batch of 4 to 1/8 resolution (24 x 32), and a context encoder of
    the same shape without normalisation on the first image to a hidden state of 96 (tanh) and a
    context of 64 (ReLU); the all-pairs correlation volume (a batched matmul of the two feature
    maps over 768 x 768 positions, divided by sqrt(128)) pooled by avg_pool2d into a 4-level
    pyramid; 12 refinement iterations: a lookup of each pixel's 7 x 7 neighbourhood at every level
    around its current match (grid_sample on the 1536 per-pixel correlation maps, 196 channels), a
    motion encoder (a 1x1 conv 196-96 on the correlations, 7x7 and 3x3 convs 2-64-32 on the flow, a
    3x3 conv 128-80 and the flow concatenated), a convolutional GRU (3x3, hidden 96, input 146), a
    flow head (3x3 convs 96-128-2), the match coordinates moved by the predicted delta and
    detached before the next iteration, and the flow upsampled x8 bilinearly; the sequence loss (L1
    at every iteration weighted by 0.8 ** (12 - i)), gradient clipping at 1, AdamW. Gradients flow
    into the correlation volume through every iteration's grid_sample; fixed shapes (every step
    allocates the same sizes in the same order); 5 steps."""
    torch.manual_seed(0)
    batch, height, width, iters, radius, levels, hidden, context = 2, 192, 256, 12, 3, 4, 96, 64
    h8, w8 = height // 8, width // 8

    class Bottleneck(nn.Module):
        def __init__(self, cin: int, planes: int, stride: int, norm: bool) -> None:
            super().__init__()
            make = (lambda c: nn.InstanceNorm2d(c)) if norm else (lambda c: nn.Identity())
            self.body = nn.Sequential(nn.Conv2d(cin, planes // 4, 1), make(planes // 4), nn.ReLU(),
                                      nn.Conv2d(planes // 4, planes // 4, 3, stride, 1), make(planes // 4), nn.ReLU(),
                                      nn.Conv2d(planes // 4, planes, 1), make(planes), nn.ReLU())
            self.skip = nn.Identity() if stride == 1 and cin == planes else \
                nn.Sequential(nn.Conv2d(cin, planes, 1, stride), make(planes))

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            return torch.relu(self.skip(x) + self.body(x))

    def encoder(out: int, norm: bool) -> nn.Sequential:
        return nn.Sequential(nn.Conv2d(3, 32, 7, 2, 3), nn.InstanceNorm2d(32) if norm else nn.Identity(), nn.ReLU(),
                             Bottleneck(32, 32, 1, norm), Bottleneck(32, 32, 1, norm),
                             Bottleneck(32, 64, 2, norm), Bottleneck(64, 64, 1, norm),
                             Bottleneck(64, 96, 2, norm), Bottleneck(96, 96, 1, norm), nn.Conv2d(96, out, 1))

    class RAFT(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.fnet, self.cnet = encoder(128, True), encoder(hidden + context, False)
            planes = levels * (2 * radius + 1) ** 2
            self.convc1 = nn.Conv2d(planes, 96, 1)
            self.convf1, self.convf2 = nn.Conv2d(2, 64, 7, padding=3), nn.Conv2d(64, 32, 3, padding=1)
            self.conv = nn.Conv2d(128, 80, 3, padding=1)
            gru_in = 82 + context
            self.convz, self.convr, self.convq = (nn.Conv2d(hidden + gru_in, hidden, 3, padding=1) for _ in range(3))
            self.flow_head = nn.Sequential(nn.Conv2d(hidden, 128, 3, padding=1), nn.ReLU(),
                                           nn.Conv2d(128, 2, 3, padding=1))

        def lookup(self, pyramid: list[torch.Tensor], coords: torch.Tensor) -> torch.Tensor:
            b, _, h, w = coords.shape
            d = torch.linspace(-radius, radius, 2 * radius + 1)
            side = 2 * radius + 1
            delta = torch.stack(torch.meshgrid(d, d, indexing="ij"), -1).flip(-1).view(1, side, side, 2)
            centre = coords.permute(0, 2, 3, 1).reshape(b * h * w, 1, 1, 2)
            out = []
            for i, corr in enumerate(pyramid):
                where = centre / 2 ** i + delta
                hl, wl = corr.shape[-2:]
                grid = torch.cat([2 * where[..., :1] / (wl - 1) - 1, 2 * where[..., 1:] / (hl - 1) - 1], -1)
                out.append(nn.functional.grid_sample(corr, grid, align_corners=True).view(b, h, w, -1))
            return torch.cat(out, -1).permute(0, 3, 1, 2)

        def forward(self, image1: torch.Tensor, image2: torch.Tensor) -> list[torch.Tensor]:
            b = image1.shape[0]
            fmaps = self.fnet(torch.cat([image1, image2]))
            f1, f2 = fmaps[:b].flatten(2), fmaps[b:].flatten(2)
            corr = (f1.transpose(1, 2) @ f2 / math.sqrt(f1.shape[1])).view(b * h8 * w8, 1, h8, w8)
            pyramid = [corr]
            for _ in range(levels - 1):
                pyramid.append(nn.functional.avg_pool2d(pyramid[-1], 2, 2))
            net, inp = self.cnet(image1).split([hidden, context], 1)
            net, inp = torch.tanh(net), torch.relu(inp)
            ys, xs = torch.meshgrid(torch.arange(h8, dtype=torch.float32), torch.arange(w8, dtype=torch.float32),
                                    indexing="ij")
            coords0 = torch.stack([xs, ys])[None].expand(b, -1, -1, -1)
            coords1 = coords0.clone()
            flows = []
            for _ in range(iters):
                coords1 = coords1.detach()
                corr_feats = self.lookup(pyramid, coords1)
                flow = coords1 - coords0
                cor = torch.relu(self.convc1(corr_feats))
                flo = torch.relu(self.convf2(torch.relu(self.convf1(flow))))
                motion = torch.cat([torch.relu(self.conv(torch.cat([cor, flo], 1))), flow], 1)
                x = torch.cat([inp, motion], 1)
                hx = torch.cat([net, x], 1)
                z, r = torch.sigmoid(self.convz(hx)), torch.sigmoid(self.convr(hx))
                q = torch.tanh(self.convq(torch.cat([r * net, x], 1)))
                net = (1 - z) * net + z * q
                coords1 = coords1 + self.flow_head(net)
                flows.append(8 * nn.functional.interpolate(coords1 - coords0, scale_factor=8, mode="bilinear",
                                                           align_corners=True))
            return flows

    model = RAFT()
    opt = torch.optim.AdamW(model.parameters(), lr=4e-4, weight_decay=1e-4, eps=1e-8)
    gen = torch.Generator().manual_seed(115 + seed)
    ys, xs = torch.meshgrid(torch.linspace(-1, 1, height), torch.linspace(-1, 1, width), indexing="ij")
    base = torch.stack([xs, ys], -1)[None]
    total = 0.0
    for _ in range(steps):
        freq = 2 + 30 * torch.rand(batch, 3, 6, 2, 1, 1, generator=gen)
        phase = 2 * math.pi * torch.rand(batch, 3, 6, 1, 1, generator=gen)
        texture = torch.sin(freq[:, :, :, 0] * xs + freq[:, :, :, 1] * ys + phase).mean(2)
        noise = nn.functional.avg_pool2d(torch.rand(batch, 3, height, width, generator=gen), 5, 1, 2)
        image1 = texture + noise
        coarse = 12 * (2 * torch.rand(batch, 2, 4, 5, generator=gen) - 1)
        gt = nn.functional.interpolate(coarse, size=(height, width), mode="bicubic", align_corners=True)
        scale = torch.tensor([2 / (width - 1), 2 / (height - 1)])
        image2 = nn.functional.grid_sample(image1, base - gt.permute(0, 2, 3, 1) * scale, align_corners=True,
                                           padding_mode="border")
        opt.zero_grad(set_to_none=True)
        flows = model(image1, image2)
        loss = sum(0.8 ** (iters - i - 1) * (f - gt).abs().mean() for i, f in enumerate(flows))
        loss.backward()
        nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        total += loss.item()
    return total


@_workload(default_steps=24)
def concat_batch_serve(*, steps: int, seed: int) -> float:
    """Inference only: serving a GPT-2-style decoder (6 pre-norm layers, d_model 512, 8 heads, MLP
    2048, vocabulary 16000 with the head tied to the embedding, learned positions) with continuous
    batching as Hugging Face's text-generation-inference first did it, on dense left-padded batches
    without a paged cache, under torch.inference_mode(): requests arrive 0-4 iterations apart with
    prompts of 16-200 tokens and 8-128 tokens to generate (the data generator); every iteration the
    waiting requests (while fewer than 12 run) are prefilled together as a new batch (left-padded
    to their longest prompt, positions from the attention mask's cumulative sum, a causal and
    padding mask) and concatenated into the running batch as TGI's CausalLMBatch.concatenate does:
    each layer's keys and values copied into new zeroed tensors of the joint batch size and the
    longer past length, each batch right-aligned, the attention masks likewise; then the running
    batch decodes one token (greedy), every layer's cache grown by torch.cat along the sequence and
    the mask by one column; finished requests leave as CausalLMBatch.filter does: the kept rows
    taken by indexing and the caches cut on the left to the longest remaining past. The batch size,
    the past length and the prompts' shapes follow the arrivals and lengths drawn, so iterations
    allocate different sizes (not a fixed-shape step); 24 requests."""
    torch.manual_seed(0)
    vocab, dim, heads, depth, max_running, max_positions = 16000, 512, 8, 6, 12, 384
    head_dim = dim // heads

    class Layer(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.ln1, self.ln2 = nn.LayerNorm(dim), nn.LayerNorm(dim)
            self.qkv, self.proj = nn.Linear(dim, 3 * dim), nn.Linear(dim, dim)
            self.mlp = nn.Sequential(nn.Linear(dim, 4 * dim), nn.GELU(approximate="tanh"), nn.Linear(4 * dim, dim))

        def forward(self, x: torch.Tensor, past: tuple[torch.Tensor, torch.Tensor] | None, mask: torch.Tensor
                    ) -> tuple[torch.Tensor, tuple[torch.Tensor, torch.Tensor]]:
            b, t, _ = x.shape
            q, k, v = self.qkv(self.ln1(x)).view(b, t, 3, heads, head_dim).permute(2, 0, 3, 1, 4)
            if past is not None:
                k, v = torch.cat([past[0], k], 2), torch.cat([past[1], v], 2)
            att = nn.functional.scaled_dot_product_attention(q, k, v, attn_mask=mask)
            x = x + self.proj(att.transpose(1, 2).reshape(b, t, dim))
            return x + self.mlp(self.ln2(x)), (k, v)

    class GPT(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.tok, self.pos = nn.Embedding(vocab, dim), nn.Embedding(max_positions, dim)
            self.layers = nn.ModuleList(Layer() for _ in range(depth))
            self.ln = nn.LayerNorm(dim)

        def forward(self, ids: torch.Tensor, positions: torch.Tensor, pasts: list | None, mask: torch.Tensor
                    ) -> tuple[torch.Tensor, list[tuple[torch.Tensor, torch.Tensor]]]:
            x = self.tok(ids) + self.pos(positions)
            new = []
            for i, layer in enumerate(self.layers):
                x, kv = layer(x, None if pasts is None else pasts[i], mask)
                new.append(kv)
            return self.ln(x[:, -1]) @ self.tok.weight.T, new

    model = GPT().eval()
    gen = torch.Generator().manual_seed(116 + seed)
    draw = lambda low, high: int(torch.randint(low, high + 1, (), generator=gen))  # noqa: E731
    arrivals = list(itertools.accumulate(draw(0, 4) for _ in range(steps)))
    pending = [(arrival, torch.randint(0, vocab, (draw(16, 200),), generator=gen), draw(8, 128))
               for arrival in arrivals]
    # the running batch: its caches (per layer, (B, heads, T, head_dim) each), its attention mask (B, T),
    # each row's next token, tokens still to make and length so far
    pasts: list[tuple[torch.Tensor, torch.Tensor]] = []
    mask = torch.zeros(0, 0, dtype=torch.bool)
    tokens, left, lengths = torch.zeros(0, dtype=torch.long), [], []
    total, it = 0.0, 0
    with torch.inference_mode():
        while pending or left:
            arrived = [p for p in pending if p[0] <= it][:max_running - len(left)]
            pending = pending[len(arrived):]
            if arrived:  # prefill the arrivals as a batch of their own
                width = max(len(p[1]) for p in arrived)
                ids = torch.zeros(len(arrived), width, dtype=torch.long)
                new_mask = torch.zeros(len(arrived), width, dtype=torch.bool)
                for i, (_, prompt, _) in enumerate(arrived):
                    ids[i, width - len(prompt):] = prompt
                    new_mask[i, width - len(prompt):] = True
                positions = (new_mask.long().cumsum(1) - 1).clamp(min=0)
                causal = torch.ones(width, width, dtype=torch.bool).tril()
                eye = torch.eye(width, dtype=torch.bool)  # a padding position sees itself, so no row is empty
                logits, new_pasts = model(ids, positions, None, ((causal[None] & new_mask[:, None]) | eye)[:, None])
                new_tokens = logits.argmax(-1)
                total += float(logits.max(-1).values.sum())
                if left:  # CausalLMBatch.concatenate: right-align both batches in new zeroed tensors
                    span = max(mask.shape[1], width)
                    rows = len(left) + len(arrived)
                    joined_mask = torch.zeros(rows, span, dtype=torch.bool)
                    joined_mask[:len(left), span - mask.shape[1]:] = mask
                    joined_mask[len(left):, span - width:] = new_mask
                    joined = []
                    for (k_old, v_old), (k_new, v_new) in zip(pasts, new_pasts):
                        pair = []
                        for old, young in ((k_old, k_new), (v_old, v_new)):
                            both = old.new_zeros(rows, heads, span, head_dim)
                            both[:len(left), :, span - old.shape[2]:] = old
                            both[len(left):, :, span - width:] = young
                            pair.append(both)
                        joined.append((pair[0], pair[1]))
                    pasts, mask = joined, joined_mask
                    tokens = torch.cat([tokens, new_tokens])
                else:
                    pasts, mask, tokens = new_pasts, new_mask, new_tokens
                left += [p[2] - 1 for p in arrived]
                lengths += [len(p[1]) for p in arrived]
            if left:  # one decoding iteration of the running batch
                mask = torch.cat([mask, torch.ones(len(left), 1, dtype=torch.bool)], 1)
                positions = torch.tensor(lengths)[:, None]
                logits, pasts = model(tokens[:, None], positions, pasts, mask[:, None, None])
                tokens = logits.argmax(-1)
                total += float(logits.max(-1).values.sum())
                left = [n - 1 for n in left]
                lengths = [n + 1 for n in lengths]
                keep = [i for i, n in enumerate(left) if n > 0]
                if len(keep) < len(left):  # CausalLMBatch.filter
                    past_len = max((lengths[i] for i in keep), default=0)
                    index = torch.tensor(keep, dtype=torch.long)
                    pasts = [(k[index, :, k.shape[2] - past_len:], v[index, :, v.shape[2] - past_len:])
                             for k, v in pasts]
                    mask, tokens = mask[index, mask.shape[1] - past_len:], tokens[index]
                    left, lengths = [left[i] for i in keep], [lengths[i] for i in keep]
            it += 1
    return total


@_workload(default_steps=5)
def dreamer_rssm_train(*, steps: int, seed: int) -> float:
    """A DreamerV2-style agent (Hafner et al. 2021) learning from replayed sequences, batch 6
    sequences of 32 frames of 64x64 RGB with 6-dimensional continuous actions and rewards (a square
    of a drawn colour moving by a drawn velocity and the actions over a drawn background, plus
    noise; its reward its nearness to the centre; from the data generator). The world model: a conv
    encoder of four kernel-4 stride-2 Conv2d 3-32-64-128-256 with ELU to 1024 features per frame;
    an RSSM run as a Python loop over the 32 time steps, each a linear of the previous latent and
    action 1030-512 with ELU into a GRUCell of 512 (the deterministic state), a prior head
    512-512-1024 and a posterior head 1536-512-1024 over the state and the frame's features, the
    stochastic latent 32 one-hot categoricals of 32 sampled by torch.multinomial with
    straight-through gradients; a decoder of a linear 1536-1024 and four ConvTranspose2d
    1024-128-64-32-3 (kernels 5, 5, 6, 6, stride 2) back to 64x64 frames, a reward MLP 1536-400-400-1
    and a discount MLP; Gaussian reconstruction and reward losses, discount BCE and KL balancing
    (0.8) between posterior and prior with a free nat; Adam 3e-4, clipping at 100. Then behaviour
    learning in imagination: the world model and the critic frozen by requires_grad_(False), the
    192 posterior states as starts, a Python loop of 15 imagined steps (a tanh-squashed Gaussian
    actor 1536-400-400-12 sampled with reparameterised noise from the detached features, the RSSM's
    prior step), rewards, discounts and values of the 16 x 192 imagined features, lambda returns
    (0.95) by a backward loop, the actor trained by backpropagating the returns through the
    dynamics (Adam 8e-5) and the critic 1536-400-400-1 regressed on them from detached features
    (Adam 8e-5); three optimizers a step. Fixed shapes (every step allocates the same sizes in the
    same order); 5 steps."""
    torch.manual_seed(0)
    batch, length, horizon, actions, size = 6, 32, 15, 6, 64
    deter, hidden, groups, classes, depth, units = 512, 512, 32, 32, 32, 400
    stoch = groups * classes
    feat, embed = deter + stoch, 8 * depth * 2 * 2

    def mlp(cin: int, cout: int) -> nn.Sequential:
        return nn.Sequential(nn.Linear(cin, units), nn.ELU(), nn.Linear(units, units), nn.ELU(), nn.Linear(units, cout))

    def sample(logits: torch.Tensor) -> torch.Tensor:
        """One one-hot sample per group, with straight-through gradients to the probabilities."""
        probs = logits.view(-1, groups, classes).softmax(-1)
        index = torch.multinomial(probs.view(-1, classes), 1).view(-1, groups)
        one_hot = nn.functional.one_hot(index, classes).to(probs.dtype)
        return (one_hot + probs - probs.detach()).flatten(1)

    class RSSM(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.img_in = nn.Sequential(nn.Linear(stoch + actions, hidden), nn.ELU())
            self.cell = nn.GRUCell(hidden, deter)
            self.prior = nn.Sequential(nn.Linear(deter, hidden), nn.ELU(), nn.Linear(hidden, stoch))
            self.post = nn.Sequential(nn.Linear(deter + embed, hidden), nn.ELU(), nn.Linear(hidden, stoch))

        def img_step(self, h: torch.Tensor, z: torch.Tensor, a: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
            h = self.cell(self.img_in(torch.cat([z, a], -1)), h)
            return h, self.prior(h)

        def observe(self, embeds: torch.Tensor, prev_actions: torch.Tensor
                    ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor]:
            b = embeds.shape[0]
            h, z = embeds.new_zeros(b, deter), embeds.new_zeros(b, stoch)
            hs, zs, priors, posts = [], [], [], []
            for t in range(embeds.shape[1]):
                h, prior = self.img_step(h, z, prev_actions[:, t])
                post = self.post(torch.cat([h, embeds[:, t]], -1))
                z = sample(post)
                hs.append(h)
                zs.append(z)
                priors.append(prior)
                posts.append(post)
            return torch.stack(hs, 1), torch.stack(zs, 1), torch.stack(priors, 1), torch.stack(posts, 1)

    class WorldModel(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            chans = [3, depth, 2 * depth, 4 * depth, 8 * depth]
            self.encoder = nn.Sequential(*(m for i in range(4) for m in (nn.Conv2d(chans[i], chans[i + 1], 4, 2),
                                                                           nn.ELU())), nn.Flatten())
            self.rssm = RSSM()
            self.dec_in = nn.Linear(feat, 32 * depth)
            self.decoder = nn.Sequential(nn.ConvTranspose2d(32 * depth, 4 * depth, 5, 2), nn.ELU(),
                                         nn.ConvTranspose2d(4 * depth, 2 * depth, 5, 2), nn.ELU(),
                                         nn.ConvTranspose2d(2 * depth, depth, 6, 2), nn.ELU(),
                                         nn.ConvTranspose2d(depth, 3, 6, 2))
            self.reward, self.discount = mlp(feat, 1), mlp(feat, 1)

    def kl(lhs: torch.Tensor, rhs: torch.Tensor) -> torch.Tensor:
        """KL(lhs || rhs) of the grouped categoricals given by their logits, summed over the groups."""
        lhs, rhs = lhs.view(*lhs.shape[:-1], groups, classes), rhs.view(*rhs.shape[:-1], groups, classes)
        return (lhs.softmax(-1) * (lhs.log_softmax(-1) - rhs.log_softmax(-1))).sum((-2, -1))

    world, actor, critic = WorldModel(), mlp(feat, 2 * actions), mlp(feat, 1)
    world_opt = torch.optim.Adam(world.parameters(), lr=3e-4, eps=1e-5)
    actor_opt = torch.optim.Adam(actor.parameters(), lr=8e-5, eps=1e-5)
    critic_opt = torch.optim.Adam(critic.parameters(), lr=8e-5, eps=1e-5)
    gen = torch.Generator().manual_seed(117 + seed)
    grid = torch.arange(size, dtype=torch.float32)
    total = 0.0
    for _ in range(steps):
        acts = torch.rand(batch, length, actions, generator=gen) * 2 - 1
        start = torch.rand(batch, 1, 2, generator=gen) * (size - 16) + 8
        velocity = (torch.rand(batch, 1, 2, generator=gen) - 0.5) * 4
        pos = (start + velocity * torch.arange(length)[None, :, None] + acts[..., :2].cumsum(1)).remainder(size)
        inside = (((grid[None, None, :, None] - pos[..., 1, None, None]).abs() < 6)
                  & ((grid[None, None, None, :] - pos[..., 0, None, None]).abs() < 6))
        colour, background = torch.rand(batch, 1, 3, 1, 1, generator=gen), torch.rand(batch, 1, 3, 1, 1, generator=gen)
        frames = (torch.where(inside[:, :, None], colour, 0.3 * background)
                  + 0.05 * torch.randn(batch, length, 3, size, size, generator=gen) - 0.5)
        rewards = 1 - (pos - size / 2).norm(dim=-1) / size
        prev_actions = torch.cat([acts.new_zeros(batch, 1, actions), acts[:, :-1]], 1)

        world_opt.zero_grad(set_to_none=True)
        embeds = world.encoder(frames.view(-1, 3, size, size)).view(batch, length, embed)
        hs, zs, priors, posts = world.rssm.observe(embeds, prev_actions)
        feats = torch.cat([hs, zs], -1)
        recon = world.decoder(world.dec_in(feats.view(-1, feat)).view(-1, 32 * depth, 1, 1))
        image_loss = 0.5 * ((recon.view_as(frames) - frames) ** 2).sum((2, 3, 4)).mean()
        reward_loss = 0.5 * ((world.reward(feats).squeeze(-1) - rewards) ** 2).mean()
        discount_loss = nn.functional.binary_cross_entropy_with_logits(world.discount(feats).squeeze(-1),
                                                                       torch.ones(batch, length))
        kl_loss = (0.8 * kl(posts.detach(), priors).clamp(min=1.0).mean()
                   + 0.2 * kl(posts, priors.detach()).clamp(min=1.0).mean())
        loss = image_loss + reward_loss + discount_loss + kl_loss
        loss.backward()
        nn.utils.clip_grad_norm_(world.parameters(), 100.0)
        world_opt.step()

        world.requires_grad_(False)
        critic.requires_grad_(False)
        actor_opt.zero_grad(set_to_none=True)
        h, z = hs.detach().reshape(-1, deter), zs.detach().reshape(-1, stoch)
        imagined = [torch.cat([h, z], -1)]
        for _ in range(horizon):
            mean, std = actor(imagined[-1].detach()).chunk(2, -1)
            std = nn.functional.softplus(std) + 0.1
            action = torch.tanh(torch.tanh(mean) + std * torch.randn_like(std))
            h, prior = world.rssm.img_step(h, z, action)
            z = sample(prior)
            imagined.append(torch.cat([h, z], -1))
        states = torch.stack(imagined)  # (horizon + 1, starts, feat)
        reward = world.reward(states[1:]).squeeze(-1)
        discount = 0.99 * torch.sigmoid(world.discount(states[1:])).squeeze(-1)
        value = critic(states).squeeze(-1)
        returns, last = [], value[-1]
        for t in reversed(range(horizon)):
            last = reward[t] + discount[t] * (0.05 * value[t + 1] + 0.95 * last)
            returns.append(last)
        target = torch.stack(returns[::-1])
        weight = torch.cat([torch.ones_like(discount[:1]), discount[:-1]]).cumprod(0).detach()
        actor_loss = -(weight * target).mean()
        actor_loss.backward()
        nn.utils.clip_grad_norm_(actor.parameters(), 100.0)
        actor_opt.step()
        world.requires_grad_(True)
        critic.requires_grad_(True)

        critic_opt.zero_grad(set_to_none=True)
        critic_loss = 0.5 * (weight * (critic(states[:-1].detach()).squeeze(-1) - target.detach()) ** 2).mean()
        critic_loss.backward()
        nn.utils.clip_grad_norm_(critic.parameters(), 100.0)
        critic_opt.step()
        total += loss.item() + actor_loss.item() + critic_loss.item()
    return total


def _linear_assignment(cost: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Rows matched to distinct columns at the least total cost: the Hungarian algorithm (the
    shortest augmenting path form of Jonker and Volgenant) in numpy, for rows <= columns; the
    matched row indices (ascending) and their columns."""
    rows, cols = cost.shape
    u, v = np.zeros(rows + 1), np.zeros(cols + 1)
    owner = np.zeros(cols + 1, dtype=np.int64)  # owner[j]: the row (from 1) matched to column j, 0 for none
    way = np.zeros(cols + 1, dtype=np.int64)
    for i in range(1, rows + 1):
        owner[0], j0 = i, 0
        minv = np.full(cols + 1, np.inf)
        used = np.zeros(cols + 1, dtype=bool)
        while True:
            used[j0] = True
            i0 = owner[j0]
            free = ~used[1:]
            reduced = cost[i0 - 1] - u[i0] - v[1:]
            better = free & (reduced < minv[1:])
            minv[1:][better] = reduced[better]
            way[1:][better] = j0
            candidates = np.where(free, minv[1:], np.inf)
            j1 = int(np.argmin(candidates)) + 1
            delta = candidates[j1 - 1]
            taken = np.flatnonzero(used)
            u[owner[taken]] += delta
            v[taken] -= delta
            minv[1:][free] -= delta
            j0 = j1
            if owner[j0] == 0:
                break
        while j0:
            j1 = way[j0]
            owner[j0] = owner[j1]
            j0 = j1
    matched = np.flatnonzero(owner[1:])
    order = np.argsort(owner[1:][matched])
    return owner[1:][matched][order] - 1, matched[order]


@_workload(default_steps=6)
def detr_train(*, steps: int, seed: int) -> float:
    """DETR (Carion et al. 2020) trained end to end on set prediction, batch 4 images of a size drawn
    per image (heights and widths 160-288 in steps of 32) zero-padded to the batch's largest with a
    padding mask, each holding 1-20 drawn boxes of 20 classes painted in class colours over noise
    (the data generator). A ResNet-style backbone with frozen batch norms (a 7x7 stride-2 stem 64
    and a max pool, one basic block per stage 64-128-256-512, strides 4 to 32), a 1x1 projection to
    256 and sine positional encodings from the mask; a post-norm transformer of 6 encoder and 6
    decoder layers (width 256, 8 heads by nn.MultiheadAttention with key padding masks, FFN 1024,
    dropout 0.1) decoding 100 learned object queries, every decoder layer's output normed and
    through the shared class head 256-21 and box MLP 256-256-256-4 (auxiliary losses). For each of
    the 6 outputs the Hungarian matcher builds the batch's (400 x boxes) cost (class probability,
    L1 and generalised IoU of the boxes, weights 1, 5, 2) under no_grad, splits it per image and
    solves each by the Hungarian algorithm in numpy (scipy is not used); the losses: cross-entropy
    over all queries with the no-object class weighted 0.1, L1 and generalised IoU (the diagonal of
    a pairwise matrix) over the matched boxes; clipping at 0.1, AdamW (1e-4, the backbone 1e-5,
    weight decay 1e-4). The image sizes, the number of boxes and every tensor of the matching and
    the box losses follow the data (not a fixed-shape step); 6 steps."""
    torch.manual_seed(0)
    batch, classes, queries, dim, heads, ffn, depth, max_boxes = 4, 20, 100, 256, 8, 1024, 6, 20
    sizes = (160, 192, 224, 256, 288)

    class FrozenBatchNorm2d(nn.Module):
        def __init__(self, n: int) -> None:
            super().__init__()
            self.register_buffer("weight", torch.ones(n))
            self.register_buffer("bias", torch.zeros(n))
            self.register_buffer("running_mean", torch.zeros(n))
            self.register_buffer("running_var", torch.ones(n))

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            scale = self.weight * (self.running_var + 1e-5).rsqrt()
            return x * scale[:, None, None] + (self.bias - self.running_mean * scale)[:, None, None]

    class Block(nn.Module):
        def __init__(self, cin: int, cout: int, stride: int) -> None:
            super().__init__()
            self.conv1, self.bn1 = nn.Conv2d(cin, cout, 3, stride, 1, bias=False), FrozenBatchNorm2d(cout)
            self.conv2, self.bn2 = nn.Conv2d(cout, cout, 3, 1, 1, bias=False), FrozenBatchNorm2d(cout)
            self.down = (nn.Sequential(nn.Conv2d(cin, cout, 1, stride, bias=False), FrozenBatchNorm2d(cout))
                         if stride != 1 or cin != cout else nn.Identity())

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            return torch.relu(self.bn2(self.conv2(torch.relu(self.bn1(self.conv1(x))))) + self.down(x))

    class EncoderLayer(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.attn = nn.MultiheadAttention(dim, heads, dropout=0.1)
            self.ff = nn.Sequential(nn.Linear(dim, ffn), nn.ReLU(), nn.Dropout(0.1), nn.Linear(ffn, dim))
            self.norm1, self.norm2 = nn.LayerNorm(dim), nn.LayerNorm(dim)

        def forward(self, src: torch.Tensor, pos: torch.Tensor, pad: torch.Tensor) -> torch.Tensor:
            q = src + pos
            src = self.norm1(src + nn.functional.dropout(self.attn(q, q, src, key_padding_mask=pad)[0], 0.1,
                                                         self.training))
            return self.norm2(src + nn.functional.dropout(self.ff(src), 0.1, self.training))

    class DecoderLayer(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.self_attn = nn.MultiheadAttention(dim, heads, dropout=0.1)
            self.cross_attn = nn.MultiheadAttention(dim, heads, dropout=0.1)
            self.ff = nn.Sequential(nn.Linear(dim, ffn), nn.ReLU(), nn.Dropout(0.1), nn.Linear(ffn, dim))
            self.norm1, self.norm2, self.norm3 = nn.LayerNorm(dim), nn.LayerNorm(dim), nn.LayerNorm(dim)

        def forward(self, tgt: torch.Tensor, memory: torch.Tensor, pos: torch.Tensor, query_pos: torch.Tensor,
                    pad: torch.Tensor) -> torch.Tensor:
            q = tgt + query_pos
            tgt = self.norm1(tgt + nn.functional.dropout(self.self_attn(q, q, tgt)[0], 0.1, self.training))
            att = self.cross_attn(tgt + query_pos, memory + pos, memory, key_padding_mask=pad)[0]
            tgt = self.norm2(tgt + nn.functional.dropout(att, 0.1, self.training))
            return self.norm3(tgt + nn.functional.dropout(self.ff(tgt), 0.1, self.training))

    class DETR(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.backbone = nn.Sequential(nn.Conv2d(3, 64, 7, 2, 3, bias=False), FrozenBatchNorm2d(64), nn.ReLU(),
                                          nn.MaxPool2d(3, 2, 1), Block(64, 64, 1), Block(64, 128, 2),
                                          Block(128, 256, 2), Block(256, 512, 2))
            self.proj = nn.Conv2d(512, dim, 1)
            self.encoder = nn.ModuleList(EncoderLayer() for _ in range(depth))
            self.decoder = nn.ModuleList(DecoderLayer() for _ in range(depth))
            self.dec_norm = nn.LayerNorm(dim)
            self.query = nn.Embedding(queries, dim)
            self.class_head = nn.Linear(dim, classes + 1)
            self.box_head = nn.Sequential(nn.Linear(dim, dim), nn.ReLU(), nn.Linear(dim, dim), nn.ReLU(),
                                          nn.Linear(dim, 4))

        def forward(self, images: torch.Tensor, pad: torch.Tensor) -> list[tuple[torch.Tensor, torch.Tensor]]:
            x = self.proj(self.backbone(images))
            b, _, fh, fw = x.shape
            mask = nn.functional.interpolate(pad[None].float(), size=(fh, fw))[0].bool()
            pos = sine_positions(mask).flatten(2).permute(2, 0, 1)  # (fh*fw, B, dim)
            src, mask = x.flatten(2).permute(2, 0, 1), mask.flatten(1)
            for layer in self.encoder:
                src = layer(src, pos, mask)
            query_pos = self.query.weight[:, None].repeat(1, b, 1)
            tgt, outs = torch.zeros_like(query_pos), []
            for layer in self.decoder:
                tgt = layer(tgt, src, pos, query_pos, mask)
                h = self.dec_norm(tgt).transpose(0, 1)
                outs.append((self.class_head(h), self.box_head(h).sigmoid()))
            return outs

    def sine_positions(mask: torch.Tensor) -> torch.Tensor:
        """DETR's PositionEmbeddingSine (normalised): 128 features of y and 128 of x from the valid area."""
        valid = ~mask
        y, x = valid.cumsum(1, dtype=torch.float32), valid.cumsum(2, dtype=torch.float32)
        y = y / (y[:, -1:, :] + 1e-6) * 2 * math.pi
        x = x / (x[:, :, -1:] + 1e-6) * 2 * math.pi
        freqs = 10000 ** (2 * (torch.arange(dim // 2) // 2) / (dim // 2))
        px, py = x[..., None] / freqs, y[..., None] / freqs
        px = torch.stack([px[..., 0::2].sin(), px[..., 1::2].cos()], 4).flatten(3)
        py = torch.stack([py[..., 0::2].sin(), py[..., 1::2].cos()], 4).flatten(3)
        return torch.cat([py, px], 3).permute(0, 3, 1, 2)

    def xyxy(boxes: torch.Tensor) -> torch.Tensor:
        cx, cy, w, h = boxes.unbind(-1)
        return torch.stack([cx - w / 2, cy - h / 2, cx + w / 2, cy + h / 2], -1)

    def generalized_iou(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
        """Pairwise generalised IoU of xyxy boxes, (len(a), len(b))."""
        area_a, area_b = (a[:, 2] - a[:, 0]) * (a[:, 3] - a[:, 1]), (b[:, 2] - b[:, 0]) * (b[:, 3] - b[:, 1])
        inter = (torch.min(a[:, None, 2:], b[None, :, 2:]) - torch.max(a[:, None, :2], b[None, :, :2])).clamp(min=0)
        inter = inter[..., 0] * inter[..., 1]
        union = area_a[:, None] + area_b[None] - inter
        hull = (torch.max(a[:, None, 2:], b[None, :, 2:]) - torch.min(a[:, None, :2], b[None, :, :2])).clamp(min=0)
        hull = hull[..., 0] * hull[..., 1]
        return inter / union - (hull - union) / hull

    @torch.no_grad()
    def match(logits: torch.Tensor, boxes: torch.Tensor, labels: list[torch.Tensor], targets: list[torch.Tensor]
              ) -> list[tuple[np.ndarray, np.ndarray]]:
        """DETR's HungarianMatcher: per image, the query matched to each target box."""
        prob = logits.flatten(0, 1).softmax(-1)
        out = boxes.flatten(0, 1)
        tgt_labels, tgt_boxes = torch.cat(labels), torch.cat(targets)
        cost = (5 * torch.cdist(out, tgt_boxes, p=1) - prob[:, tgt_labels]
                - 2 * generalized_iou(xyxy(out), xyxy(tgt_boxes))).view(batch, queries, -1)
        result = []
        for i, part in enumerate(cost.split([len(t) for t in targets], -1)):
            target_idx, query_idx = _linear_assignment(part[i].T.numpy())
            result.append((query_idx, target_idx))
        return result

    model = DETR()
    backbone = list(model.backbone.parameters())
    rest = [p for n, p in model.named_parameters() if not n.startswith("backbone.")]
    opt = torch.optim.AdamW([{"params": rest}, {"params": backbone, "lr": 1e-5}], lr=1e-4, weight_decay=1e-4)
    class_weight = torch.ones(classes + 1)
    class_weight[-1] = 0.1
    gen = torch.Generator().manual_seed(118 + seed)
    palette = torch.rand(classes, 3, generator=gen) * 2 - 1
    total = 0.0
    for _ in range(steps):
        shapes = [(sizes[int(torch.randint(0, len(sizes), (), generator=gen))],
                   sizes[int(torch.randint(0, len(sizes), (), generator=gen))]) for _ in range(batch)]
        height, width = max(h for h, _ in shapes), max(w for _, w in shapes)
        images = torch.zeros(batch, 3, height, width)
        pad = torch.ones(batch, height, width, dtype=torch.bool)
        labels, targets = [], []
        for i, (h, w) in enumerate(shapes):
            n = int(torch.randint(1, max_boxes + 1, (), generator=gen))
            label = torch.randint(0, classes, (n,), generator=gen)
            wh = torch.rand(n, 2, generator=gen) * 0.35 + 0.05
            centre = wh / 2 + torch.rand(n, 2, generator=gen) * (1 - wh)
            box = torch.cat([centre, wh], 1)
            image = 0.2 * torch.randn(3, h, w, generator=gen)
            for (x0, y0, x1, y1), c in zip(xyxy(box).tolist(), label.tolist()):
                image[:, round(y0 * h):round(y1 * h), round(x0 * w):round(x1 * w)] += palette[c][:, None, None]
            images[i, :, :h, :w] = image
            pad[i, :h, :w] = False
            labels.append(label)
            targets.append(box)
        count = sum(len(t) for t in targets)
        opt.zero_grad(set_to_none=True)
        loss = torch.zeros(())
        for logits, boxes in model(images, pad):
            matches = match(logits, boxes, labels, targets)
            image_idx = torch.cat([torch.full((len(q),), i) for i, (q, _) in enumerate(matches)])
            query_idx = torch.cat([torch.from_numpy(q) for q, _ in matches])
            target_classes = torch.full((batch, queries), classes)
            target_classes[image_idx, query_idx] = torch.cat([lab[torch.from_numpy(t)]
                                                              for lab, (_, t) in zip(labels, matches)])
            matched = boxes[image_idx, query_idx]
            wanted = torch.cat([box[torch.from_numpy(t)] for box, (_, t) in zip(targets, matches)])
            loss = (loss + nn.functional.cross_entropy(logits.transpose(1, 2), target_classes, class_weight)
                    + 5 * nn.functional.l1_loss(matched, wanted, reduction="sum") / count
                    + 2 * (1 - torch.diag(generalized_iou(xyxy(matched), xyxy(wanted)))).sum() / count)
        loss.backward()
        nn.utils.clip_grad_norm_(model.parameters(), 0.1)
        opt.step()
        total += loss.item()
    return total


@_workload(default_steps=5)
def rwkv_lm_train(*, steps: int, seed: int) -> float:
    """An RWKV-5-style language model (Peng et al. 2024, "Eagle"), batch 2 x 384 tokens drawn from a
    Zipf distribution over a vocabulary of 8192 (the data generator): an embedding 8192 x 256 and
    its LayerNorm, 6 pre-LayerNorm blocks of width 256, each a time mix (token shift by padding,
    per-channel interpolations with the previous token into receptance, key, value and a SiLU gate,
    256-256 each, 4 heads of 64 with a per-channel decay w = exp(-exp(d)) and a bonus u, a GroupNorm
    per head and an output projection) and a channel mix (token shift, a squared-ReLU key 256-896,
    a value 896-256 gated by a sigmoid receptance); a final LayerNorm and an untied head
    256-8192, next-token cross-entropy, clipping at 1, Adam (betas 0.9, 0.99). The recurrence over
    a 64 x 64 matrix state per head written as a chunked scan: a Python loop over 24 chunks of 16
    tokens per layer, each chunk's outputs the intra-chunk decayed attention (16 x 16 per head,
    masked below the diagonal, with the bonus on it) plus the incoming state, the state then
    decayed and updated, every chunk's small tensors kept for the backward. Fixed shapes (every
    step allocates the same sizes in the same order); 5 steps."""
    torch.manual_seed(0)
    vocab, dim, heads, depth, ffn, batch, length, chunk = 8192, 256, 4, 6, 896, 2, 384, 16
    head_dim = dim // heads

    def shift(x: torch.Tensor) -> torch.Tensor:
        return nn.functional.pad(x, (0, 0, 1, -1))  # (B, T, C): each position gets the previous token's

    class TimeMix(nn.Module):
        def __init__(self, layer: int) -> None:
            super().__init__()
            ratio = layer / (depth - 1)
            self.mix = nn.Parameter(1 - (torch.arange(dim) / dim).pow(1 - ratio / 2).repeat(4, 1))
            self.r, self.k, self.v, self.g, self.o = (nn.Linear(dim, dim, bias=False) for _ in range(5))
            channel = torch.arange(dim) / (dim - 1)
            self.decay = nn.Parameter((-6 + 5 * channel.pow(0.7 + 1.3 * ratio)).view(heads, head_dim))
            self.bonus = nn.Parameter(torch.full((heads, head_dim), 0.5))
            self.norm = nn.GroupNorm(heads, dim, eps=64e-5)

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            b, t, _ = x.shape
            xx = shift(x) - x
            xr, xk, xv, xg = (x + xx * m for m in self.mix)
            r, k, v = (f(y).view(b, t, heads, head_dim).transpose(1, 2)
                       for f, y in ((self.r, xr), (self.k, xk), (self.v, xv)))
            g = nn.functional.silu(self.g(xg))
            log_w = -self.decay.exp()  # (heads, head_dim), each w in (0, 1)
            pos = torch.arange(chunk, dtype=x.dtype)[:, None]
            w_query = (log_w[:, None] * pos).exp()  # w^t at chunk position t
            w_key = (-log_w[:, None] * (pos + 1)).exp()  # w^-(i+1)
            w_state = (log_w[:, None] * (chunk - 1 - pos)).exp()  # w^(L-1-i)
            w_chunk = (log_w * chunk).exp()[..., None]
            below = torch.ones(chunk, chunk, dtype=torch.bool).tril(-1)
            state = x.new_zeros(b, heads, head_dim, head_dim)
            outs = []
            for s in range(0, t, chunk):
                rc, kc, vc = r[:, :, s:s + chunk], k[:, :, s:s + chunk], v[:, :, s:s + chunk]
                rq = rc * w_query
                att = (rq @ (kc * w_key).transpose(-1, -2)).masked_fill(~below, 0.0)
                outs.append(att @ vc + (rc * self.bonus[:, None] * kc).sum(-1, keepdim=True) * vc + rq @ state)
                state = w_chunk * state + (kc * w_state).transpose(-1, -2) @ vc
            y = self.norm(torch.cat(outs, 2).transpose(1, 2).reshape(b * t, dim)).view(b, t, dim)
            return self.o(y * g)

    class ChannelMix(nn.Module):
        def __init__(self, layer: int) -> None:
            super().__init__()
            ratio = layer / (depth - 1)
            self.mix = nn.Parameter(1 - (torch.arange(dim) / dim).pow(1 - ratio).repeat(2, 1))
            self.key, self.value = nn.Linear(dim, ffn, bias=False), nn.Linear(ffn, dim, bias=False)
            self.receptance = nn.Linear(dim, dim, bias=False)

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            xx = shift(x) - x
            xk, xr = x + xx * self.mix[0], x + xx * self.mix[1]
            return torch.sigmoid(self.receptance(xr)) * self.value(torch.relu(self.key(xk)).square())

    class Block(nn.Module):
        def __init__(self, layer: int) -> None:
            super().__init__()
            self.ln1, self.att, self.ln2, self.ffn = nn.LayerNorm(dim), TimeMix(layer), nn.LayerNorm(dim), \
                ChannelMix(layer)

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            x = x + self.att(self.ln1(x))
            return x + self.ffn(self.ln2(x))

    model = nn.Sequential(nn.Embedding(vocab, dim), nn.LayerNorm(dim), *(Block(i) for i in range(depth)),
                          nn.LayerNorm(dim), nn.Linear(dim, vocab, bias=False))
    opt = torch.optim.Adam(model.parameters(), lr=6e-4, betas=(0.9, 0.99), eps=1e-8)
    gen = torch.Generator().manual_seed(119 + seed)
    zipf = 1 / torch.arange(1, vocab + 1, dtype=torch.float32)
    total = 0.0
    for _ in range(steps):
        ids = torch.multinomial(zipf, batch * (length + 1), replacement=True, generator=gen).view(batch, length + 1)
        opt.zero_grad(set_to_none=True)
        loss = nn.functional.cross_entropy(model(ids[:, :-1]).reshape(-1, vocab), ids[:, 1:].reshape(-1))
        loss.backward()
        nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        total += loss.item()
    return total


@_workload(default_steps=6)
def token_budget_mt_train(*, steps: int, seed: int) -> float:
    """A fairseq-style transformer translation model trained on batches made under a token budget
    (fairseq's --max-tokens): a corpus of 6000 sentence pairs, source lengths drawn log-normal
    (median 20, 3-160 tokens) and each target 0.8-1.3 times its source, plus EOS (the data
    generator); the pairs ordered by source then target length and cut greedily into batches whose
    size times their longest sentence stays within 1536 tokens, the sizes rounded down to multiples
    of 8 as --required-batch-size-multiple does, and the batches shuffled: a batch holds 8 to 384
    sentences, fewer the longer they are. Sources left-padded and targets right-padded
    (pad 1, EOS 2), the decoder reading the target with EOS moved to the front. A joined vocabulary
    of 8000 with all embeddings and the output projection shared, embeddings scaled by the square
    root of the width, sinusoidal positions counted past the padding; 3 encoder and 3 decoder
    post-norm layers of width 256, 4 heads (scaled_dot_product_attention with padding and causal
    masks), FFN 1024, dropout 0.1; label-smoothed cross-entropy (0.1) over the non-pad tokens, Adam
    (betas 0.9, 0.98) under an inverse square-root schedule with warmup. The batch size and both
    lengths follow the data, so every step allocates a different sequence of sizes; 6 steps."""
    torch.manual_seed(0)
    vocab, dim, heads, ffn, depth, max_tokens, pairs, pad, eos, multiple = 8000, 256, 4, 1024, 3, 1536, 6000, 1, 2, 8
    head_dim, max_positions = dim // heads, 256

    def sinusoids(n: int) -> torch.Tensor:
        half = dim // 2
        freqs = torch.exp(torch.arange(half) * -(math.log(10000.0) / (half - 1)))
        angles = torch.arange(n, dtype=torch.float32)[:, None] * freqs[None]
        table = torch.cat([angles.sin(), angles.cos()], 1)
        table[pad] = 0
        return table

    class Attention(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.q, self.k, self.v, self.o = (nn.Linear(dim, dim) for _ in range(4))

        def forward(self, x: torch.Tensor, kv: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
            b, t, _ = x.shape
            q = self.q(x).view(b, t, heads, head_dim).transpose(1, 2)
            k, v = (f(kv).view(b, -1, heads, head_dim).transpose(1, 2) for f in (self.k, self.v))
            out = nn.functional.scaled_dot_product_attention(q, k, v, attn_mask=mask,
                                                             dropout_p=0.1 if self.training else 0.0)
            return self.o(out.transpose(1, 2).reshape(b, t, dim))

    class Layer(nn.Module):
        def __init__(self, decoder: bool) -> None:
            super().__init__()
            self.att, self.ln1 = Attention(), nn.LayerNorm(dim)
            self.cross, self.ln2 = (Attention(), nn.LayerNorm(dim)) if decoder else (None, None)
            self.ff, self.ln3 = nn.Sequential(nn.Linear(dim, ffn), nn.ReLU(), nn.Linear(ffn, dim)), nn.LayerNorm(dim)

        def forward(self, x: torch.Tensor, mask: torch.Tensor, memory: torch.Tensor | None = None,
                    memory_mask: torch.Tensor | None = None) -> torch.Tensor:
            drop = lambda y: nn.functional.dropout(y, 0.1, self.training)  # noqa: E731
            x = self.ln1(x + drop(self.att(x, x, mask)))
            if self.cross is not None and self.ln2 is not None and memory is not None and memory_mask is not None:
                x = self.ln2(x + drop(self.cross(x, memory, memory_mask)))
            return self.ln3(x + drop(self.ff(x)))

    class Transformer(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.embed = nn.Embedding(vocab, dim, padding_idx=pad)
            nn.init.normal_(self.embed.weight, 0, dim ** -0.5)
            with torch.no_grad():
                self.embed.weight[pad] = 0
            self.register_buffer("positions", sinusoids(max_positions), persistent=False)
            self.encoder = nn.ModuleList(Layer(False) for _ in range(depth))
            self.decoder = nn.ModuleList(Layer(True) for _ in range(depth))

        def embed_tokens(self, ids: torch.Tensor) -> torch.Tensor:
            keep = ids.ne(pad)
            positions = (keep.long().cumsum(1) * keep) + pad  # fairseq's make_positions
            return nn.functional.dropout(self.embed(ids) * math.sqrt(dim) + self.positions[positions], 0.1,
                                         self.training)

        def forward(self, src: torch.Tensor, prev: torch.Tensor) -> torch.Tensor:
            src_mask = src.ne(pad)[:, None, None]  # (B, 1, 1, S): True where attended
            x = self.embed_tokens(src)
            for layer in self.encoder:
                x = layer(x, src_mask)
            causal = torch.ones(prev.shape[1], prev.shape[1], dtype=torch.bool).tril()
            y = self.embed_tokens(prev)
            for layer in self.decoder:
                y = layer(y, causal, x, src_mask)
            return y @ self.embed.weight.T

    model = Transformer()
    opt = torch.optim.Adam(model.parameters(), lr=5e-4, betas=(0.9, 0.98), eps=1e-8)
    sched = torch.optim.lr_scheduler.LambdaLR(opt, lambda n: min((n + 1) / 4, (4 / (n + 1)) ** 0.5))
    gen = torch.Generator().manual_seed(120 + seed)
    src_len = (torch.randn(pairs, generator=gen) * 0.6 + math.log(20)).exp().round().clamp(3, 160).long()
    tgt_len = (src_len * (0.8 + 0.5 * torch.rand(pairs, generator=gen))).round().clamp(3, 160).long()
    src_len, tgt_len = (src_len + 1).tolist(), (tgt_len + 1).tolist()  # with EOS
    order = sorted(range(pairs), key=lambda i: (src_len[i], tgt_len[i]))
    batches, current, longest = [], [], 0
    for i in order:  # fairseq's batch_by_size
        size = max(src_len[i], tgt_len[i])
        if current and (len(current) + 1) * max(longest, size) > max_tokens:
            cut = max(multiple * (len(current) // multiple), len(current) % multiple)
            batches.append(current[:cut])
            current = current[cut:]
            longest = max((max(src_len[j], tgt_len[j]) for j in current), default=0)
        current.append(i)
        longest = max(longest, size)
    batches.append(current)
    batches = [batches[int(j)] for j in torch.randperm(len(batches), generator=gen)]
    eps = 0.1
    total = 0.0
    for step in range(steps):
        chosen = batches[step % len(batches)]
        s_max, t_max = max(src_len[i] for i in chosen), max(tgt_len[i] for i in chosen)
        src = torch.full((len(chosen), s_max), pad)
        tgt = torch.full((len(chosen), t_max), pad)
        prev = torch.full((len(chosen), t_max), pad)
        for row, i in enumerate(chosen):
            words = torch.randint(4, vocab, (src_len[i] - 1,), generator=gen)
            src[row, s_max - src_len[i]:-1], src[row, -1] = words, eos  # left-padded
            out = torch.randint(4, vocab, (tgt_len[i] - 1,), generator=gen)
            tgt[row, :tgt_len[i] - 1], tgt[row, tgt_len[i] - 1] = out, eos
            prev[row, 0], prev[row, 1:tgt_len[i]] = eos, out
        opt.zero_grad(set_to_none=True)
        lprobs = nn.functional.log_softmax(model(src, prev), -1).view(-1, vocab)
        target = tgt.view(-1)
        is_pad = target.eq(pad)
        nll = -lprobs.gather(-1, target[:, None]).squeeze(-1).masked_fill(is_pad, 0.0)
        smooth = -lprobs.sum(-1).masked_fill(is_pad, 0.0)
        ntokens = int((~is_pad).sum())
        loss = ((1 - eps - eps / (vocab - 1)) * nll.sum() + eps / (vocab - 1) * smooth.sum()) / ntokens
        loss.backward()
        opt.step()
        sched.step()
        total += loss.item()
    return total


@_workload(default_steps=5)
def width_sweep_train(*, steps: int, seed: int) -> float:
    """A hyperparameter sweep run in one process, as a random search does it: 4 trials one after
    another on 32x32 RGB images of 10 classes (class templates plus noise, batch 128; the data
    generator), each drawing its model (a CNN of widths w-w-pool-2w-2w-pool-4w, conv-BN-ReLU, global
    average pooling and a linear head, w from 16, 24, 32 and 48; or an MLP 3072-h-h-10 with ReLU
    and dropout 0.2, h from 1024, 1536, 2048 and 3072), its optimizer (AdamW or SGD with Nesterov
    momentum) and a log-uniform learning rate (1e-4 to 1e-2) from the data generator, building
    them, training 5 steps of cross-entropy and scoring a validation batch of 256 under no_grad,
    then dropping model and optimizer before the next trial. Every trial's weights, optimizer
    state and activations have sizes of their own (not a fixed-shape step); 5 steps a trial."""
    torch.manual_seed(0)
    trials, batch, val_batch, classes = 4, 128, 256, 10
    gen = torch.Generator().manual_seed(121 + seed)
    templates = torch.randn(classes, 3, 32, 32, generator=gen)

    def draw(n: int) -> tuple[torch.Tensor, torch.Tensor]:
        labels = torch.randint(0, classes, (n,), generator=gen)
        return templates[labels] + torch.randn(n, 3, 32, 32, generator=gen), labels

    def cnn(w: int) -> nn.Sequential:
        def block(cin: int, cout: int) -> list[nn.Module]:
            return [nn.Conv2d(cin, cout, 3, padding=1, bias=False), nn.BatchNorm2d(cout), nn.ReLU()]

        return nn.Sequential(*block(3, w), *block(w, w), nn.MaxPool2d(2), *block(w, 2 * w), *block(2 * w, 2 * w),
                             nn.MaxPool2d(2), *block(2 * w, 4 * w), nn.AdaptiveAvgPool2d(1), nn.Flatten(),
                             nn.Linear(4 * w, classes))

    def mlp(h: int) -> nn.Sequential:
        return nn.Sequential(nn.Flatten(), nn.Linear(3 * 32 * 32, h), nn.ReLU(), nn.Dropout(0.2), nn.Linear(h, h),
                             nn.ReLU(), nn.Dropout(0.2), nn.Linear(h, classes))

    def trial(model: nn.Module, adamw: bool, lr: float, val: tuple[torch.Tensor, torch.Tensor]) -> tuple[float, float]:
        opt = (torch.optim.AdamW(model.parameters(), lr=lr, weight_decay=0.05) if adamw
               else torch.optim.SGD(model.parameters(), lr=lr, momentum=0.9, nesterov=True, weight_decay=5e-4))
        total = 0.0
        for _ in range(steps):
            images, labels = draw(batch)
            opt.zero_grad(set_to_none=True)
            loss = nn.functional.cross_entropy(model(images), labels)
            loss.backward()
            opt.step()
            total += loss.item()
        model.eval()
        with torch.no_grad():
            score = nn.functional.cross_entropy(model(val[0]), val[1]).item()
        return total, score

    val = draw(val_batch)
    total, best = 0.0, math.inf
    for _ in range(trials):
        pick = lambda options: options[int(torch.randint(0, len(options), (), generator=gen))]  # noqa: E731
        if bool(torch.rand((), generator=gen) < 0.5):
            model = cnn(pick((16, 24, 32, 48)))
        else:
            model = mlp(pick((1024, 1536, 2048, 3072)))
        adamw = bool(torch.rand((), generator=gen) < 0.5)
        lr = 10 ** float(torch.empty(()).uniform_(-4, -2, generator=gen))
        loss_sum, score = trial(model, adamw, lr, val)
        del model  # the trial's optimizer went with trial(); the model goes before the next is built
        total += loss_sum
        best = min(best, score)
    return total + best


@_workload(default_steps=5)
def evoformer_pair_train(*, steps: int, seed: int) -> float:
    """An AlphaFold 2-style Evoformer trunk (Jumper et al. 2021) trained on distogram and masked-MSA
    losses, one crop a step: a chain of 64 residues of 20 drawn amino acids with coordinates a drawn
    random walk of 3.8 A steps, an MSA of 16 sequences (the query and 15 copies each residue mutated
    with probability 0.2 or gapped with 0.05), 15 % of the MSA masked for prediction (the data
    generator). Input embeddings: the MSA one-hot (23) and the target (21) to an MSA representation
    16 x 64 x 64, and outer sums of the target plus relative positions (clipped at 32) to a pair
    representation 64 x 64 x 64. 3 Evoformer blocks: MSA row attention with pair bias (8 heads of
    32, gated, row-wise dropout 0.15), MSA column attention (8 heads of 32, gated), MSA transition
    (x4), the outer product mean (32 x 32 per residue pair, 64 x 64 x 1024, to 64), triangle
    multiplicative updates outgoing and incoming (64, gated, row-wise dropout 0.25), triangle
    attention around the starting and the ending node (4 heads of 32, gated, 64 x 4 x 64 x 64
    scores with the pair's bias) and a pair transition (x4), all pre-LayerNorm residual. One
    recycling pass first under no_grad, its first MSA row and pair (LayerNormed) added to the next
    pass's embeddings. Distogram head (64 bins over 2-22 A of the symmetrised pair) and masked-MSA
    head (23), cross-entropy weighted 0.3 and 2 (the masked positions by a weight, not by
    indexing), clipping at 0.1, Adam 1e-3. Fixed shapes (every step allocates the same sizes in
    the same order); 5 steps."""
    torch.manual_seed(0)
    residues, seqs, c_m, c_z, depth, bins, msa_classes, max_rel = 64, 16, 64, 64, 3, 64, 23, 32

    def rowwise_dropout(x: torch.Tensor, p: float, dim: int, training: bool) -> torch.Tensor:
        """Dropout with one mask shared along ``dim`` (AlphaFold's row- and column-wise dropout)."""
        shape = list(x.shape)
        shape[dim] = 1
        return x * nn.functional.dropout(x.new_ones(shape), p, training)

    class GatedAttention(nn.Module):
        """Attention along the last-but-one axis of (..., n, c_in), with an optional bias and a sigmoid gate."""

        def __init__(self, c_in: int, heads: int, c: int) -> None:
            super().__init__()
            self.heads, self.c = heads, c
            self.q, self.k, self.v = (nn.Linear(c_in, heads * c, bias=False) for _ in range(3))
            self.g, self.o = nn.Linear(c_in, heads * c), nn.Linear(heads * c, c_in)

        def forward(self, x: torch.Tensor, bias: torch.Tensor | None) -> torch.Tensor:
            *lead, n, _ = x.shape
            q, k, v = (f(x).view(*lead, n, self.heads, self.c).transpose(-2, -3) for f in (self.q, self.k, self.v))
            scores = q @ k.transpose(-1, -2) / math.sqrt(self.c)  # (..., heads, n, n)
            if bias is not None:
                scores = scores + bias
            out = (scores.softmax(-1) @ v).transpose(-2, -3).reshape(*lead, n, self.heads * self.c)
            return self.o(torch.sigmoid(self.g(x)) * out)

    class Transition(nn.Sequential):
        def __init__(self, c: int) -> None:
            super().__init__(nn.LayerNorm(c), nn.Linear(c, 4 * c), nn.ReLU(), nn.Linear(4 * c, c))

    class TriangleMultiplication(nn.Module):
        def __init__(self, outgoing: bool) -> None:
            super().__init__()
            self.outgoing = outgoing
            self.ln_in, self.ln_out = nn.LayerNorm(c_z), nn.LayerNorm(c_z)
            self.a, self.a_gate, self.b, self.b_gate = (nn.Linear(c_z, c_z) for _ in range(4))
            self.gate, self.o = nn.Linear(c_z, c_z), nn.Linear(c_z, c_z)

        def forward(self, z: torch.Tensor) -> torch.Tensor:
            z = self.ln_in(z)
            a, b = torch.sigmoid(self.a_gate(z)) * self.a(z), torch.sigmoid(self.b_gate(z)) * self.b(z)
            x = torch.einsum("ikc,jkc->ijc" if self.outgoing else "kic,kjc->ijc", a, b)
            return torch.sigmoid(self.gate(z)) * self.o(self.ln_out(x))

    class TriangleAttention(nn.Module):
        def __init__(self, starting: bool) -> None:
            super().__init__()
            self.starting = starting
            self.ln, self.bias, self.att = nn.LayerNorm(c_z), nn.Linear(c_z, 4, bias=False), GatedAttention(c_z, 4, 32)

        def forward(self, z: torch.Tensor) -> torch.Tensor:
            if not self.starting:
                z = z.transpose(0, 1)
            z = self.ln(z)
            out = self.att(z, self.bias(z).permute(2, 0, 1)[None])  # rows i attend over k with bias b[j, k]
            return out if self.starting else out.transpose(0, 1)

    class OuterProductMean(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.ln, self.a, self.b, self.o = nn.LayerNorm(c_m), nn.Linear(c_m, 32), nn.Linear(c_m, 32), \
                nn.Linear(32 * 32, c_z)

        def forward(self, m: torch.Tensor) -> torch.Tensor:
            m = self.ln(m)
            outer = torch.einsum("sic,sjd->ijcd", self.a(m), self.b(m))
            return self.o(outer.reshape(residues, residues, 32 * 32)) / m.shape[0]

    class Block(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.row_ln, self.row_bias_ln = nn.LayerNorm(c_m), nn.LayerNorm(c_z)
            self.row_bias, self.row_att = nn.Linear(c_z, 8, bias=False), GatedAttention(c_m, 8, 32)
            self.col_ln, self.col_att = nn.LayerNorm(c_m), GatedAttention(c_m, 8, 32)
            self.msa_transition, self.outer = Transition(c_m), OuterProductMean()
            self.tri_out, self.tri_in = TriangleMultiplication(True), TriangleMultiplication(False)
            self.tri_start, self.tri_end = TriangleAttention(True), TriangleAttention(False)
            self.pair_transition = Transition(c_z)

        def forward(self, m: torch.Tensor, z: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
            bias = self.row_bias(self.row_bias_ln(z)).permute(2, 0, 1)[None]  # (1, heads, i, j)
            m = m + rowwise_dropout(self.row_att(self.row_ln(m), bias), 0.15, 0, self.training)
            m = m + self.col_att(self.col_ln(m).transpose(0, 1), None).transpose(0, 1)
            m = m + self.msa_transition(m)
            z = z + self.outer(m)
            z = z + rowwise_dropout(self.tri_out(z), 0.25, 0, self.training)
            z = z + rowwise_dropout(self.tri_in(z), 0.25, 0, self.training)
            z = z + rowwise_dropout(self.tri_start(z), 0.25, 0, self.training)
            z = z + rowwise_dropout(self.tri_end(z), 0.25, 1, self.training)
            return m, z + self.pair_transition(z)

    class Evoformer(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.msa_in, self.target_m = nn.Linear(msa_classes, c_m), nn.Linear(21, c_m)
            self.left, self.right, self.relpos = nn.Linear(21, c_z), nn.Linear(21, c_z), nn.Linear(2 * max_rel + 1, c_z)
            self.recycle_m, self.recycle_z = nn.LayerNorm(c_m), nn.LayerNorm(c_z)
            self.blocks = nn.ModuleList(Block() for _ in range(depth))
            self.distogram, self.masked_msa = nn.Linear(c_z, bins), nn.Linear(c_m, msa_classes)

        def forward(self, msa: torch.Tensor, target: torch.Tensor, prev: tuple[torch.Tensor, torch.Tensor] | None
                    ) -> tuple[torch.Tensor, torch.Tensor]:
            t = nn.functional.one_hot(target, 21).float()
            m = self.msa_in(nn.functional.one_hot(msa, msa_classes).float()) + self.target_m(t)[None]
            offset = torch.arange(residues)[None] - torch.arange(residues)[:, None]
            rel = nn.functional.one_hot(offset.clamp(-max_rel, max_rel) + max_rel, 2 * max_rel + 1).float()
            z = self.left(t)[:, None] + self.right(t)[None] + self.relpos(rel)
            if prev is not None:
                m = torch.cat([m[:1] + self.recycle_m(prev[0]), m[1:]])
                z = z + self.recycle_z(prev[1])
            for block in self.blocks:
                m, z = block(m, z)
            return m, z

    model = Evoformer()
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    gen = torch.Generator().manual_seed(122 + seed)
    edges = torch.linspace(2, 22, bins - 1)
    total = 0.0
    for _ in range(steps):
        target = torch.randint(0, 20, (residues,), generator=gen)
        direction = torch.randn(residues, 3, generator=gen)
        coords = (3.8 * direction / direction.norm(dim=1, keepdim=True)).cumsum(0)
        distances = torch.bucketize(torch.cdist(coords, coords), edges)
        msa = target.repeat(seqs, 1)
        noise = torch.rand(seqs - 1, residues, generator=gen)
        mutated = torch.randint(0, 20, (seqs - 1, residues), generator=gen)
        msa[1:] = torch.where(noise < 0.2, mutated, torch.where(noise < 0.25, torch.full_like(mutated, 20), msa[1:]))
        masked = (torch.rand(seqs, residues, generator=gen) < 0.15).float()
        inputs = torch.where(masked.bool(), torch.full_like(msa, 22), msa)
        opt.zero_grad(set_to_none=True)
        with torch.no_grad():
            m, z = model(inputs, target, None)
        m, z = model(inputs, target, (m[0].clone(), z.clone()))
        logits = model.distogram(z + z.transpose(0, 1))
        distogram_loss = nn.functional.cross_entropy(logits.view(-1, bins), distances.view(-1))
        msa_loss = ((nn.functional.cross_entropy(model.masked_msa(m).view(-1, msa_classes), msa.view(-1),
                                                 reduction="none") * masked.view(-1)).sum() / masked.sum().clamp(min=1))
        loss = 0.3 * distogram_loss + 2.0 * msa_loss
        loss.backward()
        nn.utils.clip_grad_norm_(model.parameters(), 0.1)
        opt.step()
        total += loss.item()
    return total


@_workload(default_steps=5)
def grpo_rollout_train(*, steps: int, seed: int) -> float:
    """GRPO reinforcement-learning fine-tuning (Shao et al. 2024, as TRL's GRPOTrainer does it with
    num_iterations 2) of a small decoder-only LM on a toy repeat-the-prompt task, vocabulary 512
    (pad 0, EOS 1): learned positions (128), 4 pre-norm layers of width 256, 4 heads of 64
    (scaled_dot_product_attention with an additive mask), GELU MLP 1024, an untied head whose EOS
    bias starts at 4 (as after supervised fine-tuning, so completions stop). Each step draws 4
    prompts of 8-32 tokens (ids 2-511; the data generator), left-pads them to the longest and
    samples K = 4 completions for each (batch 16) under no_grad with a key/value cache grown by
    torch.cat every token (temperature 1, torch.multinomial with the data generator; a sequence is
    done at its EOS, the rest pad), up to 48 new tokens or until all 16 are done, so the cache, the
    completions and every training tensor follow the sampled lengths. Reward (a rule): the fraction
    of the completion's tokens found in its prompt plus 0.5 x (1 - the relative difference of the
    two lengths, at least 0); advantages normalised within each group of 4. Then log-probabilities
    of the completion tokens over the padded prompt+completion batch (positions from the attention
    mask): the old ones by the policy and the reference ones by a frozen deep copy of the initial
    policy, both under no_grad, and 2 iterations of a forward/backward of the clipped policy-ratio
    loss (clip 0.2) plus a KL term (k3 estimator, beta 0.04) averaged over each completion's tokens,
    clipping at 1 and an AdamW step. Shapes follow the data; 5 steps."""
    import copy

    torch.manual_seed(0)
    vocab, dim, heads, depth, max_pos, pad, eos = 512, 256, 4, 4, 128, 0, 1
    prompts_per_step, group, max_new, clip, beta = 4, 4, 48, 0.2, 0.04

    class Block(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.ln1, self.ln2 = nn.LayerNorm(dim), nn.LayerNorm(dim)
            self.qkv, self.proj = nn.Linear(dim, 3 * dim), nn.Linear(dim, dim)
            self.fc1, self.fc2 = nn.Linear(dim, 4 * dim), nn.Linear(4 * dim, dim)

        def forward(self, x: torch.Tensor, mask: torch.Tensor, cache: list[torch.Tensor] | None) -> torch.Tensor:
            b, n, _ = x.shape
            q, k, v = self.qkv(self.ln1(x)).view(b, n, 3, heads, dim // heads).permute(2, 0, 3, 1, 4)
            if cache is not None:
                if cache:
                    k, v = torch.cat([cache[0], k], 2), torch.cat([cache[1], v], 2)
                cache[:] = [k, v]
            att = nn.functional.scaled_dot_product_attention(q, k, v, attn_mask=mask)
            x = x + self.proj(att.transpose(1, 2).reshape(b, n, dim))
            return x + self.fc2(nn.functional.gelu(self.fc1(self.ln2(x))))

    class LM(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.tok, self.pos = nn.Embedding(vocab, dim), nn.Embedding(max_pos, dim)
            self.blocks = nn.ModuleList(Block() for _ in range(depth))
            self.ln, self.head = nn.LayerNorm(dim), nn.Linear(dim, vocab)

        def forward(self, tokens: torch.Tensor, positions: torch.Tensor, mask: torch.Tensor,
                    caches: list[list[torch.Tensor]] | None = None) -> torch.Tensor:
            x = self.tok(tokens) + self.pos(positions)
            for i, block in enumerate(self.blocks):
                x = block(x, mask, None if caches is None else caches[i])
            return self.head(self.ln(x))

    def full_mask(keep: torch.Tensor) -> torch.Tensor:
        """Additive causal mask over the kept (non-pad) keys; a pad query sees itself."""
        n = keep.shape[1]
        allowed = torch.ones(n, n, dtype=torch.bool).tril() & (keep[:, None, :] | torch.eye(n, dtype=torch.bool))
        return torch.zeros(allowed.shape).masked_fill_(~allowed, -math.inf)[:, None]

    policy = LM()
    with torch.no_grad():
        policy.head.bias[eos] = 4.0
    reference = copy.deepcopy(policy).requires_grad_(False).eval()
    opt = torch.optim.AdamW(policy.parameters(), lr=1e-5, weight_decay=0.0)
    gen = torch.Generator().manual_seed(123 + seed)

    def completion_logps(model: LM, seq: torch.Tensor, keep: torch.Tensor, prompt_len: int) -> torch.Tensor:
        positions = (keep.long().cumsum(1) - 1).clamp(min=0)
        logits = model(seq, positions, full_mask(keep))[:, prompt_len - 1:-1]
        return logits.log_softmax(-1).gather(-1, seq[:, prompt_len:, None]).squeeze(-1)

    total = 0.0
    for _ in range(steps):
        lengths = torch.randint(8, 33, (prompts_per_step,), generator=gen)
        width = int(lengths.max())
        prompts = torch.full((prompts_per_step, width), pad)
        for i, n in enumerate(lengths.tolist()):
            prompts[i, width - n:] = torch.randint(2, vocab, (n,), generator=gen)
        prompt = prompts.repeat_interleave(group, 0)
        keep = prompt != pad
        batch = prompt.shape[0]
        with torch.no_grad():  # rollout with a key/value cache
            caches: list[list[torch.Tensor]] = [[] for _ in range(depth)]
            positions = (keep.long().cumsum(1) - 1).clamp(min=0)
            logits = policy(prompt, positions, full_mask(keep), caches)[:, -1]
            position = positions[:, -1]
            done = torch.zeros(batch, dtype=torch.bool)
            tokens, valid = [], []
            for _ in range(max_new):
                token = torch.multinomial(logits.softmax(-1), 1, generator=gen).squeeze(1).masked_fill_(done, pad)
                tokens.append(token)
                valid.append(~done)
                keep = torch.cat([keep, ~done[:, None]], 1)
                done = done | (token == eos)
                if bool(done.all()):
                    break
                position = position + 1
                mask = torch.zeros(batch, 1, 1, keep.shape[1]).masked_fill_(~keep[:, None, None], -math.inf)
                logits = policy(token[:, None], position[:, None], mask, caches)[:, -1]
            del caches, logits
            completion, completion_mask = torch.stack(tokens, 1), torch.stack(valid, 1).float()
            # reward: completion tokens found in the prompt, and a length near the prompt's
            content = completion_mask.bool() & (completion != eos)
            found = ((completion[:, :, None] == prompt[:, None]) & (prompt != pad)[:, None]).any(-1) & content
            n_content, n_prompt = content.sum(1).float(), lengths.repeat_interleave(group).float()
            rewards = found.sum(1) / n_content.clamp(min=1) + \
                0.5 * (1 - (n_content - n_prompt).abs() / n_prompt).clamp(min=0)
            grouped = rewards.view(prompts_per_step, group)
            advantages = ((grouped - grouped.mean(1, keepdim=True)) / (grouped.std(1, keepdim=True) + 1e-4)).view(-1)
            seq = torch.cat([prompt, completion], 1)
            old_logps = completion_logps(policy, seq, keep, width)
            ref_logps = completion_logps(reference, seq, keep, width)
        tokens_per_seq = completion_mask.sum(1).clamp(min=1)
        for _ in range(2):
            logps = completion_logps(policy, seq, keep, width)
            ratio = (logps - old_logps).exp()
            surrogate = torch.min(ratio * advantages[:, None], ratio.clamp(1 - clip, 1 + clip) * advantages[:, None])
            kl = (ref_logps - logps).exp() - (ref_logps - logps) - 1
            loss = (((-surrogate + beta * kl) * completion_mask).sum(1) / tokens_per_seq).mean()
            opt.zero_grad(set_to_none=True)
            loss.backward()
            nn.utils.clip_grad_norm_(policy.parameters(), 1.0)
            opt.step()
            total += loss.item()
        total += float(rewards.mean())
    return total


@_workload(default_steps=6)
def varlen_pack_train(*, steps: int, seed: int) -> float:
    """Sequence-packed causal LM pretraining with variable-length (cu_seqlens) attention, as
    flash-attn's varlen kernels are used with packing (here emulated by splitting): documents of a
    log-normal length (median 160, sigma 1, 8-3000 tokens; tokens Zipf-drawn over a vocabulary of
    4096, each document ending in an EOS; the data generator) are concatenated into a stream and cut
    into batches of 2 rows of 1024 tokens, the remainder of a cut document carried into the next
    batch; every row boundary and document boundary starts a segment. The batch is flattened to 2048
    tokens with cu_seqlens (the segments' offsets) and positions restarting in each segment. Model:
    an embedding 4096 x 256 tied to the head, 4 pre-RMSNorm layers of width 256 with 4 heads of 64
    (fused QKV, rotary embeddings at the segment positions; attention per segment: q, k and v split
    by the segment lengths and scaled_dot_product_attention with is_causal per segment, the outputs
    concatenated back), SwiGLU MLP 688; next-token cross-entropy within each segment (the last token
    of a segment ignored), clipping at 1, AdamW with a cosine schedule. The number of segments and
    their lengths follow the data (every layer's attention tensors change shape each step); 6 steps."""
    torch.manual_seed(0)
    vocab, dim, heads, depth, ffn, rows, row_len, eos = 4096, 256, 4, 4, 688, 2, 1024, 0
    head_dim = dim // heads
    inv_freq = 1.0 / (10000 ** (torch.arange(0, head_dim, 2).float() / head_dim))
    angles = torch.arange(row_len).float()[:, None] * inv_freq[None]
    cos_table, sin_table = angles.cos(), angles.sin()

    def rotate(x: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor) -> torch.Tensor:
        x1, x2 = x[..., : head_dim // 2], x[..., head_dim // 2:]
        return torch.cat([x1 * cos - x2 * sin, x2 * cos + x1 * sin], -1)

    class Layer(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.norm1, self.norm2 = nn.RMSNorm(dim), nn.RMSNorm(dim)
            self.qkv, self.o = nn.Linear(dim, 3 * dim, bias=False), nn.Linear(dim, dim, bias=False)
            self.gate_up, self.down = nn.Linear(dim, 2 * ffn, bias=False), nn.Linear(ffn, dim, bias=False)

        def forward(self, x: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor, seqlens: list[int]) -> torch.Tensor:
            n = x.shape[0]
            q, k, v = self.qkv(self.norm1(x)).view(n, 3, heads, head_dim).unbind(1)  # (tokens, heads, head_dim)
            q, k = rotate(q, cos, sin), rotate(k, cos, sin)
            outs = [nn.functional.scaled_dot_product_attention(qs.transpose(0, 1), ks.transpose(0, 1),
                                                               vs.transpose(0, 1), is_causal=True).transpose(0, 1)
                    for qs, ks, vs in zip(q.split(seqlens), k.split(seqlens), v.split(seqlens))]
            x = x + self.o(torch.cat(outs).reshape(n, dim))
            gate, up = self.gate_up(self.norm2(x)).chunk(2, -1)
            return x + self.down(nn.functional.silu(gate) * up)

    class LM(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.emb = nn.Embedding(vocab, dim)
            self.layers = nn.ModuleList(Layer() for _ in range(depth))
            self.norm = nn.RMSNorm(dim)

        def forward(self, tokens: torch.Tensor, positions: torch.Tensor, seqlens: list[int]) -> torch.Tensor:
            cos, sin = cos_table[positions][:, None], sin_table[positions][:, None]
            x = self.emb(tokens)
            for layer in self.layers:
                x = layer(x, cos, sin, seqlens)
            return self.norm(x) @ self.emb.weight.t()

    model = LM()
    opt = torch.optim.AdamW(model.parameters(), lr=6e-4, betas=(0.9, 0.95), weight_decay=0.1)
    sched = torch.optim.lr_scheduler.CosineAnnealingLR(opt, T_max=steps)
    gen = torch.Generator().manual_seed(124 + seed)
    zipf = 1 / torch.arange(1, vocab, dtype=torch.float32)
    carry: list[torch.Tensor] = []  # the documents (and the rest of a cut one) not yet packed
    total = 0.0
    for _ in range(steps):
        need = rows * row_len
        while sum(len(d) for d in carry) < need:
            n = int(min(3000, max(8, math.exp(math.log(160) + float(torch.randn((), generator=gen))))))
            doc = torch.multinomial(zipf, n - 1, replacement=True, generator=gen) + 1
            carry.append(torch.cat([doc, torch.tensor([eos])]))
        docs, used = [], 0
        while used < need:
            d = carry.pop(0)
            if used + len(d) > need:
                carry.insert(0, d[need - used:])
                d = d[:need - used]
            docs.append(d)
            used += len(d)
        seqlens = []  # segments: the documents, cut again at row boundaries
        start = 0
        for d in docs:
            left, pos = len(d), start
            while left:
                piece = min(left, row_len - pos % row_len)
                seqlens.append(piece)
                left, pos = left - piece, pos + piece
            start += len(d)
        tokens = torch.cat(docs)
        cu_seqlens = torch.tensor([0, *seqlens]).cumsum(0)
        starts = torch.zeros(need, dtype=torch.long).index_fill_(0, cu_seqlens[:-1], 1)
        segment = starts.cumsum(0) - 1
        positions = torch.arange(need) - cu_seqlens[segment]
        labels = torch.cat([tokens[1:], tokens[:1]]).index_fill_(0, cu_seqlens[1:] - 1, -100)
        opt.zero_grad(set_to_none=True)
        logits = model(tokens, positions, seqlens)
        loss = nn.functional.cross_entropy(logits, labels, ignore_index=-100)
        loss.backward()
        nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        sched.step()
        total += loss.item()
    return total


@_workload(default_steps=5)
def muon_train(*, steps: int, seed: int) -> float:
    """A small GPT trained with the Muon optimizer (Jordan et al. 2024, as in modded-nanogpt): batch
    4 sequences of 256 tokens drawn from a Zipf distribution over a vocabulary of 8192 (the data
    generator), an embedding 8192 x 384, 4 pre-RMSNorm layers of width 384 (6 heads of 64, separate
    q, k, v and output projections without bias, rotary embeddings, causal
    scaled_dot_product_attention; a squared-ReLU MLP 1536), a final RMSNorm and an untied head
    384-8192, next-token cross-entropy. Muon, written as a torch.optim.Optimizer, on the 24 hidden
    weight matrices (lr 0.02, momentum 0.95 with Nesterov, weight decay 0.01): the momentum buffer
    lerped towards the gradient, the Nesterov update orthogonalised by 5 Newton-Schulz iterations in
    bfloat16 (quintic coefficients 3.4445, -4.7750, 2.0315; the matrix normalised by its Frobenius
    norm and transposed to be wide first), scaled by sqrt(max(1, rows / cols)); AdamW (lr 3e-3,
    betas 0.9, 0.95) on the embedding, the head and the RMSNorm weights. Fixed shapes (every step
    allocates the same sizes in the same order); 5 steps."""
    torch.manual_seed(0)
    vocab, dim, heads, depth, ffn, batch, length = 8192, 384, 6, 4, 1536, 4, 256
    head_dim = dim // heads

    def newton_schulz(g: torch.Tensor, iterations: int = 5) -> torch.Tensor:
        a, b, c = 3.4445, -4.7750, 2.0315
        x = g.bfloat16()
        tall = g.size(0) > g.size(1)
        if tall:
            x = x.T
        x = x / (x.norm() + 1e-7)
        for _ in range(iterations):
            gram = x @ x.T
            x = a * x + (b * gram + c * gram @ gram) @ x
        return x.T if tall else x

    class Muon(torch.optim.Optimizer):
        def __init__(self, params: list[nn.Parameter], lr: float = 0.02, momentum: float = 0.95,
                     weight_decay: float = 0.0) -> None:
            super().__init__(params, dict(lr=lr, momentum=momentum, weight_decay=weight_decay))

        @torch.no_grad()
        def step(self, closure: None = None) -> None:  # type: ignore[override]
            for group in self.param_groups:
                for p in group["params"]:
                    if p.grad is None:
                        continue
                    state = self.state[p]
                    if "momentum_buffer" not in state:
                        state["momentum_buffer"] = torch.zeros_like(p)
                    buf = state["momentum_buffer"]
                    buf.lerp_(p.grad, 1 - group["momentum"])
                    update = newton_schulz(p.grad.lerp_(buf, group["momentum"]))
                    p.mul_(1 - group["lr"] * group["weight_decay"])
                    p.add_(update, alpha=-group["lr"] * max(1.0, p.size(0) / p.size(1)) ** 0.5)

    inv_freq = 1.0 / (10000 ** (torch.arange(0, head_dim, 2).float() / head_dim))
    angles = torch.arange(length).float()[:, None] * inv_freq[None]
    cos, sin = angles.cos(), angles.sin()

    def rotate(x: torch.Tensor) -> torch.Tensor:
        x1, x2 = x[..., : head_dim // 2], x[..., head_dim // 2:]
        return torch.cat([x1 * cos - x2 * sin, x2 * cos + x1 * sin], -1)

    class Layer(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.norm1, self.norm2 = nn.RMSNorm(dim), nn.RMSNorm(dim)
            self.q, self.k, self.v, self.o = (nn.Linear(dim, dim, bias=False) for _ in range(4))
            self.up, self.down = nn.Linear(dim, ffn, bias=False), nn.Linear(ffn, dim, bias=False)

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            b, t, _ = x.shape
            h = self.norm1(x)
            q, k, v = (f(h).view(b, t, heads, head_dim).transpose(1, 2) for f in (self.q, self.k, self.v))
            att = nn.functional.scaled_dot_product_attention(rotate(q), rotate(k), v, is_causal=True)
            x = x + self.o(att.transpose(1, 2).reshape(b, t, dim))
            return x + self.down(torch.relu(self.up(self.norm2(x))).square())

    model = nn.Sequential(nn.Embedding(vocab, dim), *(Layer() for _ in range(depth)), nn.RMSNorm(dim),
                          nn.Linear(dim, vocab, bias=False))
    hidden = [p for p in model.parameters() if p.ndim == 2 and p is not model[0].weight and p is not model[-1].weight]
    others = [p for p in model.parameters() if all(p is not h for h in hidden)]
    opts = [Muon(hidden, lr=0.02, momentum=0.95, weight_decay=0.01),
            torch.optim.AdamW(others, lr=3e-3, betas=(0.9, 0.95), weight_decay=0.0)]
    gen = torch.Generator().manual_seed(125 + seed)
    zipf = 1 / torch.arange(1, vocab + 1, dtype=torch.float32)
    total = 0.0
    for _ in range(steps):
        ids = torch.multinomial(zipf, batch * (length + 1), replacement=True, generator=gen).view(batch, length + 1)
        for opt in opts:
            opt.zero_grad(set_to_none=True)
        loss = nn.functional.cross_entropy(model(ids[:, :-1]).reshape(-1, vocab), ids[:, 1:].reshape(-1))
        loss.backward()
        for opt in opts:
            opt.step()
        total += loss.item()
    return total


@_workload(default_steps=5)
def stft_enhance_train(*, steps: int, seed: int) -> float:
    """Speech enhancement by a complex-mask convolutional recurrent network in the manner of DCCRN-E
    / CRN (Hu et al. 2020, Tan and Wang 2018), batch 4 noisy waveforms of 2 s at 16 kHz: clean
    voiced signals (a drawn pitch of 90-250 Hz with a drawn vibrato, 12 harmonics rolling off, a
    syllable-rate envelope) plus noise (white noise given a drawn one-pole low-pass response by
    torch.fft) at a drawn SNR of -5 to 15 dB (the data generator). torch.stft (FFT 512, hop 128,
    Hann; 257 bins x 251 frames) to real and imaginary channels; an encoder of 4 Conv2d (3 x 3,
    stride 2 along frequency, 2-16-32-64-128, BatchNorm, PReLU) down to 17 bins, a 2-layer LSTM of
    256 over the 251 frames on the flattened 128 x 17 features with a linear back, a decoder of 4
    ConvTranspose2d with skip connections (concatenated) to a complex ratio mask (its magnitude
    bounded by tanh, DCCRN-E); the masked spectrum back to 32000 samples by torch.istft. Loss:
    negative SI-SDR plus a multi-resolution STFT loss (spectral convergence and log-magnitude L1 at
    FFT sizes 512, 1024 and 2048, hops 50, 120 and 240, Hann windows 240, 600 and 1200, as Parallel
    WaveGAN), clipping at 5, Adam 1e-3. Fixed shapes (every step allocates the same sizes in the
    same order); 5 steps."""
    torch.manual_seed(0)
    batch, samples, rate, n_fft, hop = 4, 32000, 16000, 512, 128
    widths = (2, 16, 32, 64, 128)
    window = torch.hann_window(n_fft)
    resolutions = [(512, 50, 240), (1024, 120, 600), (2048, 240, 1200)]
    loss_windows = {n: torch.hann_window(w) for n, _, w in resolutions}

    class CRN(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.encoder = nn.ModuleList(
                nn.Sequential(nn.Conv2d(cin, cout, 3, stride=(1, 2), padding=1), nn.BatchNorm2d(cout), nn.PReLU())
                for cin, cout in itertools.pairwise(widths))
            self.lstm = nn.LSTM(widths[-1] * 17, 256, num_layers=2, batch_first=True)
            self.project = nn.Linear(256, widths[-1] * 17)
            self.decoder = nn.ModuleList(
                nn.Sequential(nn.ConvTranspose2d(2 * cin, cout, 3, stride=(1, 2), padding=1),
                              *((nn.BatchNorm2d(cout), nn.PReLU()) if cout != 2 else ()))
                for cin, cout in zip(widths[:0:-1], widths[-2::-1]))

        def forward(self, spec: torch.Tensor) -> torch.Tensor:
            x = torch.stack([spec.real, spec.imag], 1).transpose(2, 3)  # (B, 2, frames, bins)
            skips = []
            for layer in self.encoder:
                x = layer(x)
                skips.append(x)
            b, c, t, f = x.shape
            h = self.project(self.lstm(x.permute(0, 2, 1, 3).reshape(b, t, c * f))[0])
            x = h.view(b, t, c, f).permute(0, 2, 1, 3)
            for layer, skip in zip(self.decoder, reversed(skips)):
                x = layer(torch.cat([x, skip], 1))
            real, imag = x.transpose(2, 3).unbind(1)  # (B, bins, frames)
            magnitude = torch.sqrt(real ** 2 + imag ** 2 + 1e-8)
            mask = torch.tanh(magnitude) / magnitude * torch.complex(real, imag)
            return torch.istft(spec * mask, n_fft, hop, window=window, length=samples)

    def si_sdr(estimate: torch.Tensor, clean: torch.Tensor) -> torch.Tensor:
        estimate, clean = estimate - estimate.mean(-1, keepdim=True), clean - clean.mean(-1, keepdim=True)
        target = (estimate * clean).sum(-1, keepdim=True) / (clean.pow(2).sum(-1, keepdim=True) + 1e-8) * clean
        return 10 * torch.log10(target.pow(2).sum(-1) / ((estimate - target).pow(2).sum(-1) + 1e-8) + 1e-8)

    def stft_loss(estimate: torch.Tensor, clean: torch.Tensor) -> torch.Tensor:
        loss = estimate.new_zeros(())
        for n, step, w in resolutions:
            est = torch.stft(estimate, n, step, w, loss_windows[n], return_complex=True).abs().clamp(min=1e-7)
            ref = torch.stft(clean, n, step, w, loss_windows[n], return_complex=True).abs().clamp(min=1e-7)
            loss = loss + torch.linalg.norm(ref - est) / torch.linalg.norm(ref) + \
                nn.functional.l1_loss(est.log(), ref.log())
        return loss / len(resolutions)

    model = CRN()
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    gen = torch.Generator().manual_seed(126 + seed)
    t = torch.arange(samples) / rate
    harmonics = torch.arange(1, 13, dtype=torch.float32)
    freqs = torch.fft.rfftfreq(samples)
    total = 0.0
    for _ in range(steps):
        f0 = 90 + 160 * torch.rand(batch, 1, generator=gen)
        vibrato = 1 + 0.03 * torch.sin(2 * math.pi * (3 + 4 * torch.rand(batch, 1, generator=gen)) * t)
        phase = 2 * math.pi * torch.cumsum(f0 * vibrato, 1) / rate
        voiced = (torch.sin(phase[:, None] * harmonics[:, None]) / harmonics[:, None]).sum(1)
        envelope = torch.sin(math.pi * (2 + 3 * torch.rand(batch, 1, generator=gen)) * t).abs()
        clean = 0.1 * voiced * envelope
        pole = 0.3 + 0.65 * torch.rand(batch, 1, generator=gen)
        white = torch.fft.rfft(torch.randn(batch, samples, generator=gen))
        noise = torch.fft.irfft(white / (1 - pole * torch.exp(-2j * math.pi * freqs)), n=samples)
        snr = -5 + 20 * torch.rand(batch, 1, generator=gen)
        rms = lambda x: x.pow(2).mean(1, keepdim=True).sqrt()  # noqa: E731
        gain = rms(clean) / (rms(noise) * 10 ** (snr / 20))
        noisy = clean + gain * noise
        opt.zero_grad(set_to_none=True)
        enhanced = model(torch.stft(noisy, n_fft, hop, window=window, return_complex=True))
        loss = -si_sdr(enhanced, clean).mean() + stft_loss(enhanced, clean)
        loss.backward()
        nn.utils.clip_grad_norm_(model.parameters(), 5.0)
        opt.step()
        total += loss.item()
    return total


@_workload(default_steps=5)
def siamfc_track_train(*, steps: int, seed: int) -> float:
    """A fully-convolutional Siamese tracker, SiamFC (Bertinetto et al. 2016, as the siamfc-pytorch
    reimplementation trains it), batch 8 pairs of an exemplar crop 3 x 127 x 127 and a search crop 3
    x 255 x 255 of the same object (a drawn 64 x 64 textured object pasted near the centre of a
    drawn smooth background in each crop, its search copy shifted by up to 4 pixels and its
    brightness jittered; the data generator). One AlexNet-style backbone shared by both crops
    (Conv2d 11 x 11 stride 2 to 96, max pooling, 5 x 5 to 256 in 2 groups, max pooling, 3 x 3 to
    384, 384 in 2 groups and 256 in 2 groups, BatchNorm and ReLU after all but the last): exemplar
    features 8 x 256 x 6 x 6, search features 8 x 256 x 22 x 22. The cross-correlation as one
    grouped Conv2d: the search features folded into channels (1 x 2048 x 22 x 22) with the exemplar
    features as 8 per-sample kernels, groups 8, to 8 response maps of 17 x 17, scaled by 0.001. A
    balanced logistic loss (binary cross-entropy with logits, positives within 16 pixels of the
    centre at the total stride 8, positives and negatives weighted to half each), SGD (momentum 0.9,
    weight decay 5e-4) with an exponential learning-rate decay. Fixed shapes (every step allocates
    the same sizes in the same order); 5 steps."""
    torch.manual_seed(0)
    batch, exemplar, search, obj, response, stride = 8, 127, 255, 64, 17, 8

    def conv_bn(cin: int, cout: int, k: int, s: int = 1, groups: int = 1) -> list[nn.Module]:
        return [nn.Conv2d(cin, cout, k, s, groups=groups), nn.BatchNorm2d(cout), nn.ReLU(inplace=True)]

    backbone = nn.Sequential(*conv_bn(3, 96, 11, 2), nn.MaxPool2d(3, 2), *conv_bn(96, 256, 5, groups=2),
                             nn.MaxPool2d(3, 2), *conv_bn(256, 384, 3), *conv_bn(384, 384, 3, groups=2),
                             nn.Conv2d(384, 256, 3, groups=2))

    def track(z: torch.Tensor, x: torch.Tensor) -> torch.Tensor:
        kernels, features = backbone(z), backbone(x)
        b, c, h, w = features.shape
        out = nn.functional.conv2d(features.reshape(1, b * c, h, w), kernels, groups=b)
        return out.view(b, 1, out.shape[-2], out.shape[-1]) * 0.001

    offset = torch.arange(response) - response // 2
    distance = (offset[:, None] ** 2 + offset[None] ** 2).float().sqrt() * stride
    labels = (distance <= 16).float().expand(batch, 1, response, response)
    positives = labels.sum() / batch
    weights = torch.where(labels > 0, 0.5 / positives, 0.5 / (response * response - positives))
    opt = torch.optim.SGD(backbone.parameters(), lr=1e-2, momentum=0.9, weight_decay=5e-4)
    sched = torch.optim.lr_scheduler.ExponentialLR(opt, gamma=0.87)
    gen = torch.Generator().manual_seed(127 + seed)

    def background(size: int) -> torch.Tensor:
        coarse = torch.rand(batch, 3, size // 16 + 1, size // 16 + 1, generator=gen)
        return nn.functional.interpolate(coarse, size=(size, size), mode="bilinear", align_corners=False)

    def paste(canvas: torch.Tensor, objects: torch.Tensor, shift: torch.Tensor) -> torch.Tensor:
        for i, (dy, dx) in enumerate(shift.tolist()):
            top, left = (canvas.shape[-1] - obj) // 2 + dy, (canvas.shape[-1] - obj) // 2 + dx
            canvas[i, :, top:top + obj, left:left + obj] = objects[i]
        return canvas

    total = 0.0
    for _ in range(steps):
        objects = nn.functional.interpolate(torch.rand(batch, 3, 8, 8, generator=gen), size=(obj, obj),
                                            mode="nearest") + 0.2 * torch.randn(batch, 3, obj, obj, generator=gen)
        z = paste(background(exemplar), objects, torch.zeros(batch, 2, dtype=torch.long))
        brightness = 0.8 + 0.4 * torch.rand(batch, 1, 1, 1, generator=gen)
        x = paste(background(search), objects * brightness, torch.randint(-4, 5, (batch, 2), generator=gen))
        backbone.train()
        opt.zero_grad(set_to_none=True)
        loss = nn.functional.binary_cross_entropy_with_logits(track(z, x), labels, weights, reduction="sum") / batch
        loss.backward()
        opt.step()
        sched.step()
        total += loss.item()
    return total


@_workload(default_steps=6)
def schnet_mol_train(*, steps: int, seed: int) -> float:
    """SchNet (Schuett et al. 2018, as schnetpack trains it on MD17-style data) regressing molecular
    energies and forces, batch 32 molecules each step: atom counts drawn from 9-29, 45 % of each
    molecule's atoms heavy (C, N, O or F, drawn) and the rest H, 3D coordinates a drawn chain of
    heavy atoms 1.5 A apart in random directions with hydrogens 1.1 A from drawn heavy atoms (the
    data generator); reference energies and forces from a pairwise Morse potential (its forces by
    autograd.grad). The radius graph (cutoff 5 A) from the pair distances of each batch's atoms
    within a molecule (torch.cdist, a same-molecule mask and nonzero), so the atom and edge counts
    follow the data. Model: atom embeddings of 128, 3 interaction blocks of continuous-filter
    convolutions (50 Gaussian radial basis functions over 0-5 A, a filter network 50-128-128 with
    shifted softplus times a cosine cutoff; the neighbours' features gathered by the edge list,
    multiplied by the filters and summed with index_add_; 128-128-128 atom-wise updates, residual),
    an atom-wise head 128-64-1 summed per molecule by index_add_. Forces are minus the gradient of
    the energy with respect to the positions by torch.autograd.grad with create_graph=True, so the
    backward runs through the force graph. Loss: 0.01 x energy MSE + 0.99 x force MSE, Adam 5e-4.
    Shapes follow the data; 6 steps."""
    torch.manual_seed(0)
    mols, features, rbf_count, cutoff, interactions = 32, 128, 50, 5.0, 3
    # element table: H, C, N, O, F (atomic numbers) with Morse parameters
    numbers = torch.tensor([1, 6, 7, 8, 9])
    radius = torch.tensor([0.35, 0.75, 0.7, 0.65, 0.6])

    def ssp(x: torch.Tensor) -> torch.Tensor:
        return nn.functional.softplus(x) - math.log(2.0)

    class Interaction(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.filter1, self.filter2 = nn.Linear(rbf_count, features), nn.Linear(features, features)
            self.in2f = nn.Linear(features, features, bias=False)
            self.f2out, self.dense = nn.Linear(features, features), nn.Linear(features, features)

        def forward(self, h: torch.Tensor, rbf: torch.Tensor, fcut: torch.Tensor, src: torch.Tensor,
                    dst: torch.Tensor) -> torch.Tensor:
            w = self.filter2(ssp(self.filter1(rbf))) * fcut[:, None]
            messages = self.in2f(h)[src] * w
            agg = torch.zeros_like(h).index_add_(0, dst, messages)
            return h + self.dense(ssp(self.f2out(agg)))

    class SchNet(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.embedding = nn.Embedding(10, features)
            self.interactions = nn.ModuleList(Interaction() for _ in range(interactions))
            self.out1, self.out2 = nn.Linear(features, 64), nn.Linear(64, 1)
            self.register_buffer("centers", torch.linspace(0, cutoff, rbf_count))

        def forward(self, z: torch.Tensor, pos: torch.Tensor, src: torch.Tensor, dst: torch.Tensor,
                    molecule: torch.Tensor) -> torch.Tensor:
            r = (pos[src] - pos[dst]).norm(dim=-1)
            rbf = torch.exp(-10.0 * (r[:, None] - self.centers) ** 2)
            fcut = 0.5 * (torch.cos(r * math.pi / cutoff) + 1)
            h = self.embedding(z)
            for block in self.interactions:
                h = block(h, rbf, fcut, src, dst)
            atom_energy = self.out2(ssp(self.out1(h))).squeeze(-1)
            return torch.zeros(mols).index_add_(0, molecule, atom_energy)

    def morse(pos: torch.Tensor, kind: torch.Tensor, src: torch.Tensor, dst: torch.Tensor,
              molecule: torch.Tensor) -> torch.Tensor:
        r = (pos[src] - pos[dst]).norm(dim=-1)
        r0 = radius[kind[src]] + radius[kind[dst]]
        pair = 0.5 * (1 - torch.exp(-1.5 * (r - r0))) ** 2
        return torch.zeros(mols).index_add_(0, molecule[src], pair)

    model = SchNet()
    opt = torch.optim.Adam(model.parameters(), lr=5e-4)
    gen = torch.Generator().manual_seed(128 + seed)
    total = 0.0
    for _ in range(steps):
        counts = torch.randint(9, 30, (mols,), generator=gen)
        kinds, coords = [], []
        for n in counts.tolist():
            heavy = max(1, int(n * 0.45))
            kind = torch.cat([torch.randint(1, 5, (heavy,), generator=gen), torch.zeros(n - heavy, dtype=torch.long)])
            walk = torch.randn(heavy, 3, generator=gen)
            chain = (1.5 * walk / walk.norm(dim=1, keepdim=True)).cumsum(0)
            bond = torch.randn(n - heavy, 3, generator=gen)
            anchor = chain[torch.randint(0, heavy, (n - heavy,), generator=gen)]
            kinds.append(kind)
            coords.append(torch.cat([chain, anchor + 1.1 * bond / bond.norm(dim=1, keepdim=True)]))
        kind, pos = torch.cat(kinds), torch.cat(coords)
        molecule = torch.repeat_interleave(torch.arange(mols), counts)
        with torch.no_grad():  # radius graph within each molecule
            near = (torch.cdist(pos, pos) < cutoff) & (molecule[:, None] == molecule[None])
            near.fill_diagonal_(False)
            src, dst = near.nonzero().unbind(1)
        pos.requires_grad_(True)
        energy_ref = morse(pos, kind, src, dst, molecule)
        forces_ref = -torch.autograd.grad(energy_ref.sum(), pos)[0]
        energy_ref = energy_ref.detach()
        opt.zero_grad(set_to_none=True)
        energy = model(numbers[kind], pos, src, dst, molecule)
        forces = -torch.autograd.grad(energy.sum(), pos, create_graph=True)[0]
        loss = 0.01 * nn.functional.mse_loss(energy, energy_ref) + 0.99 * nn.functional.mse_loss(forces, forces_ref)
        loss.backward()
        opt.step()
        pos.requires_grad_(False)
        total += loss.item()
    return total


@_workload(default_steps=5)
def fastspeech2_train(*, steps: int, seed: int) -> float:
    """FastSpeech 2 (Ren et al. 2021, as ming024's FastSpeech2 trains it with phoneme-level pitch and
    energy) on drawn utterances, batch 8: each utterance 12-48 phonemes (an inventory of 80, 0 the
    pad) with ground-truth durations (as a forced aligner gives them: a per-phoneme mean of 2-6
    frames times a drawn log-normal factor, 1-16 frames), a phoneme-level pitch and energy (an
    utterance contour plus noise, normalised) and an 80-bin mel target (a per-phoneme template
    moved by the pitch and energy, plus noise, every phoneme held for its duration; the data
    generator), so each utterance's mel length is the sum of its durations and the batch is padded
    to its longest text and its longest mel. Model: a phoneme embedding 80 x 256 plus sinusoidal
    positions, an encoder of 4 FFT blocks (nn.MultiheadAttention of 2 heads with the padding masked,
    residual and LayerNorm, a Conv1d feed-forward 256-1024-256 of kernels 3 and 1, dropout 0.2); a
    variance adaptor of three predictors (duration, pitch, energy: two Conv1d 256-256 of kernel 3
    with ReLU, LayerNorm and dropout 0.5, a linear to 1), the pitch and energy targets bucketised
    into 256 bins and embedded (256 x 256 each) and added to the encoder output; a length regulator
    that repeats each phoneme's hidden state by its ground-truth duration (repeat_interleave per
    utterance, padded by pad_sequence, as ESPnet's LengthRegulator); a decoder of 4 FFT blocks over
    the mel frames, a linear 256-80 and a postnet of 5 Conv1d of kernel 5 (80-512-512-512-512-80,
    BatchNorm, tanh but the last, dropout 0.5) added as a residual. Losses as ming024's: L1 of the
    mel before and after the postnet and MSE of the log durations, pitch and energy, each over the
    valid positions taken by masked_select; Adam (betas 0.9, 0.98, eps 1e-9) under the Noam schedule
    (warm-up 4000), clipping at 1. The text and mel lengths follow the data (every step allocates
    other sizes); 5 steps. Shrunk: ming024's configuration (batch 16, feed-forward kernels 9 and 1,
    a 6-block decoder) on utterances of 16-64 phonemes of 2-7 frames peaked at 1.31 GiB; the
    paper's 4-block decoder, batch 8 and ESPnet's conv1d-linear feed-forward (kernel 3, then 1)
    still gave 552 MiB, so the utterances are 12-48 phonemes of 2-6 frames."""
    torch.manual_seed(0)
    inventory, dim, heads, mels, batch, bins, ffn, kernel = 80, 256, 2, 80, 8, 256, 1024, 3

    def sinusoid(n: int) -> torch.Tensor:
        position = torch.arange(n, dtype=torch.float32)[:, None]
        rate = torch.exp(torch.arange(0, dim, 2, dtype=torch.float32) * (-math.log(10000.0) / dim))
        return torch.cat([torch.sin(position * rate), torch.cos(position * rate)], 1)

    positions = sinusoid(1200)

    class FFTBlock(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.attn = nn.MultiheadAttention(dim, heads, dropout=0.1, batch_first=True)
            self.ln1, self.ln2 = nn.LayerNorm(dim), nn.LayerNorm(dim)
            self.conv1 = nn.Conv1d(dim, ffn, kernel, padding=kernel // 2)
            self.conv2 = nn.Conv1d(ffn, dim, 1)

        def forward(self, x: torch.Tensor, pad: torch.Tensor) -> torch.Tensor:
            a = self.attn(x, x, x, key_padding_mask=pad, need_weights=False)[0]
            x = self.ln1(x + nn.functional.dropout(a, 0.2, self.training)).masked_fill(pad[..., None], 0.0)
            y = self.conv2(torch.relu(self.conv1(x.transpose(1, 2)))).transpose(1, 2)
            return self.ln2(x + nn.functional.dropout(y, 0.2, self.training)).masked_fill(pad[..., None], 0.0)

    class VariancePredictor(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.conv1, self.conv2 = nn.Conv1d(dim, dim, 3, padding=1), nn.Conv1d(dim, dim, 3, padding=1)
            self.ln1, self.ln2 = nn.LayerNorm(dim), nn.LayerNorm(dim)
            self.out = nn.Linear(dim, 1)

        def forward(self, x: torch.Tensor, pad: torch.Tensor) -> torch.Tensor:
            x = nn.functional.dropout(self.ln1(torch.relu(self.conv1(x.transpose(1, 2))).transpose(1, 2)), 0.5,
                                      self.training)
            x = nn.functional.dropout(self.ln2(torch.relu(self.conv2(x.transpose(1, 2))).transpose(1, 2)), 0.5,
                                      self.training)
            return self.out(x).squeeze(-1).masked_fill(pad, 0.0)

    class FastSpeech2(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.embed = nn.Embedding(inventory, dim, padding_idx=0)
            self.encoder = nn.ModuleList(FFTBlock() for _ in range(4))
            self.duration, self.pitch, self.energy = VariancePredictor(), VariancePredictor(), VariancePredictor()
            self.register_buffer("pitch_bins", torch.linspace(-3, 3, bins - 1))
            self.register_buffer("energy_bins", torch.linspace(-3, 3, bins - 1))
            self.pitch_embed, self.energy_embed = nn.Embedding(bins, dim), nn.Embedding(bins, dim)
            self.decoder = nn.ModuleList(FFTBlock() for _ in range(4))
            self.mel = nn.Linear(dim, mels)
            chans = [mels, 512, 512, 512, 512, mels]
            self.postnet = nn.ModuleList(nn.Sequential(nn.Conv1d(chans[i], chans[i + 1], 5, padding=2),
                                                       nn.BatchNorm1d(chans[i + 1])) for i in range(5))

        def forward(self, text: torch.Tensor, src_pad: torch.Tensor, durations: torch.Tensor, pitch: torch.Tensor,
                    energy: torch.Tensor, mel_pad: torch.Tensor) -> tuple[torch.Tensor, ...]:
            x = self.embed(text) + positions[:text.shape[1]]
            for block in self.encoder:
                x = block(x, src_pad)
            log_duration = self.duration(x, src_pad)
            pitch_pred, energy_pred = self.pitch(x, src_pad), self.energy(x, src_pad)
            x = x + self.pitch_embed(torch.bucketize(pitch, self.pitch_bins)) + \
                self.energy_embed(torch.bucketize(energy, self.energy_bins))
            # length regulator: each phoneme's state repeated for its duration, padded to the longest mel
            lengths = (~src_pad).sum(1).tolist()
            x = nn.utils.rnn.pad_sequence([torch.repeat_interleave(h[:n], d[:n], 0)
                                           for h, d, n in zip(x, durations, lengths)], batch_first=True)
            x = x + positions[:x.shape[1]]
            for block in self.decoder:
                x = block(x, mel_pad)
            mel = self.mel(x)
            y = mel.transpose(1, 2)
            for i, conv in enumerate(self.postnet):
                y = conv(y)
                y = nn.functional.dropout(torch.tanh(y) if i < 4 else y, 0.5, self.training)
            return mel, mel + y.transpose(1, 2), log_duration, pitch_pred, energy_pred

    model = FastSpeech2()
    opt = torch.optim.Adam(model.parameters(), lr=1.0, betas=(0.9, 0.98), eps=1e-9)
    warmup = 4000
    sched = torch.optim.lr_scheduler.LambdaLR(opt, lambda s: dim ** -0.5 * min((s + 1) ** -0.5,
                                                                               (s + 1) * warmup ** -1.5))
    gen = torch.Generator().manual_seed(129 + seed)
    templates = torch.randn(inventory, mels, generator=gen).cumsum(1) / 4  # smooth along frequency
    pitch_profile = torch.randn(mels, generator=gen).cumsum(0) / 8
    mean_duration = 2 + 4 * torch.rand(inventory, generator=gen)
    total = 0.0
    for _ in range(steps):
        counts = torch.randint(12, 49, (batch,), generator=gen)
        width = int(counts.max())
        text = torch.zeros(batch, width, dtype=torch.long)
        durations = torch.zeros(batch, width, dtype=torch.long)
        pitch, energy = torch.zeros(batch, width), torch.zeros(batch, width)
        utterances = []
        for i, n in enumerate(counts.tolist()):
            ids = torch.randint(1, inventory, (n,), generator=gen)
            d = (mean_duration[ids] * torch.exp(0.3 * torch.randn(n, generator=gen))).round().clamp(1, 16).long()
            contour = torch.linspace(0.5, -0.5, n) * torch.randn((), generator=gen) + torch.randn((), generator=gen)
            p = contour + 0.3 * torch.randn(n, generator=gen)
            e = 0.5 * torch.randn(n, generator=gen)
            text[i, :n], durations[i, :n], pitch[i, :n], energy[i, :n] = ids, d, p, e
            frames = (templates[ids] + p[:, None] * pitch_profile + e[:, None]).repeat_interleave(d, 0)
            utterances.append(frames + 0.1 * torch.randn(frames.shape, generator=gen))
        target = nn.utils.rnn.pad_sequence(utterances, batch_first=True)
        mel_lengths = durations.sum(1)
        src_pad = torch.arange(width)[None] >= counts[:, None]
        mel_pad = torch.arange(target.shape[1])[None] >= mel_lengths[:, None]
        opt.zero_grad(set_to_none=True)
        mel, post, log_duration, pitch_pred, energy_pred = model(text, src_pad, durations, pitch, energy, mel_pad)
        src_valid, mel_valid = ~src_pad, (~mel_pad)[..., None]
        target_sel = target.masked_select(mel_valid)
        loss = nn.functional.l1_loss(mel.masked_select(mel_valid), target_sel) + \
            nn.functional.l1_loss(post.masked_select(mel_valid), target_sel) + \
            nn.functional.mse_loss(log_duration.masked_select(src_valid),
                                   torch.log(durations.float() + 1).masked_select(src_valid)) + \
            nn.functional.mse_loss(pitch_pred.masked_select(src_valid), pitch.masked_select(src_valid)) + \
            nn.functional.mse_loss(energy_pred.masked_select(src_valid), energy.masked_select(src_valid))
        loss.backward()
        nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        sched.step()
        total += loss.item()
    return total


@_workload(default_steps=5)
def fixmatch_train(*, steps: int, seed: int) -> float:
    """FixMatch semi-supervised classification (Sohn et al. 2020, as kekmodel's FixMatch-pytorch trains
    it) of drawn 32 x 32 RGB images of 10 classes (each class a colour and an oriented sine grating
    of its own, every image jittered in brightness, shifted and noised; the data generator) with a
    labeled pool of 250 images (25 a class) and a stream of unlabeled ones. A WideResNet-28-2
    (pre-activation blocks 16-32-64-128, BatchNorm momentum 0.001, LeakyReLU 0.1 in place, a linear
    128-10). The run starts from a supervised phase: 10 iterations on labeled batches of 64 (weak
    views) with an SGD of its own (lr 0.1, Nesterov momentum 0.9), as when FixMatch starts from a
    supervised checkpoint, so that some pseudo-labels pass the threshold from its first step (from
    a random initialisation none would for many steps); then FixMatch with a new SGD and an EMA
    copy of the model. Each FixMatch step takes a labeled batch of B = 4 and an unlabeled batch of
    mu x B = 28 (mu = 7), drawn anew: weak views (a random horizontal flip and a translation of up to
    4 pixels with reflection, by affine_grid and grid_sample) of the labeled and unlabeled images
    and strong views of the unlabeled ones (RandAugment as FixMatch's RandAugmentMC: 2 of 13
    operations drawn per image with a drawn magnitude, each applied with probability 0.5 to the
    images that drew it, taken and put back by indexing, then a 16 x 16 grey Cutout); all 60 images
    interleaved into one batch (as kekmodel's interleave, so BatchNorm sees them together) and
    de-interleaved after; the labeled cross-entropy plus the unlabeled one over the strong views of
    only the images whose weak-view confidence is at least 0.95, their logits and pseudo-labels
    taken by indexing with that mask (so the number kept follows the data), divided by the 28; SGD
    (lr 0.03, Nesterov momentum 0.9, weight decay 5e-4 but on biases and BatchNorm) under FixMatch's
    cosine decay, and after every update the EMA copy (decay 0.999, as kekmodel's ModelEMA: a deep
    copy whose parameters are set to ema x decay + (1 - decay) x model through state_dict, with
    temporaries per tensor, and whose buffers are copied). The images per augmentation operation and
    the masked part's shapes follow the data; 5 FixMatch steps (after the supervised phase, which
    --steps-factor does not lengthen). Shrunk: the paper's B = 64 (960 images a step) is far beyond
    the held-out sets' size, and B = 8 (120 images) peaked at 467 MiB, so B = 4 (60 images)."""
    import copy

    torch.manual_seed(0)
    classes, labeled_per_class, warm_batch, warm_steps, size = 10, 25, 64, 10, 32
    labeled_batch, mu, threshold = 4, 7, 0.95

    class Block(nn.Module):
        def __init__(self, cin: int, cout: int, stride: int) -> None:
            super().__init__()
            self.bn1, self.relu1 = nn.BatchNorm2d(cin, momentum=0.001), nn.LeakyReLU(0.1, inplace=True)
            self.conv1 = nn.Conv2d(cin, cout, 3, stride, 1, bias=False)
            self.bn2, self.relu2 = nn.BatchNorm2d(cout, momentum=0.001), nn.LeakyReLU(0.1, inplace=True)
            self.conv2 = nn.Conv2d(cout, cout, 3, 1, 1, bias=False)
            self.shortcut = None if cin == cout and stride == 1 else nn.Conv2d(cin, cout, 1, stride, bias=False)

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            o = self.relu1(self.bn1(x))
            y = self.conv2(self.relu2(self.bn2(self.conv1(o))))
            return y + (x if self.shortcut is None else self.shortcut(o))

    widths, per_stage = (16, 32, 64, 128), 4
    layers: list[nn.Module] = [nn.Conv2d(3, widths[0], 3, 1, 1, bias=False)]
    for stage, stride in enumerate((1, 2, 2)):
        for j in range(per_stage):
            cin = widths[stage] if j == 0 else widths[stage + 1]
            layers.append(Block(cin, widths[stage + 1], stride if j == 0 else 1))
    layers += [nn.BatchNorm2d(widths[-1], momentum=0.001), nn.LeakyReLU(0.1, inplace=True), nn.AdaptiveAvgPool2d(1),
               nn.Flatten(), nn.Linear(widths[-1], classes)]
    model = nn.Sequential(*layers)
    for m in model.modules():
        if isinstance(m, nn.Conv2d):
            nn.init.kaiming_normal_(m.weight, mode="fan_out", nonlinearity="leaky_relu")
    no_decay = [p for n, p in model.named_parameters() if "bias" in n or "bn" in n or p.ndim == 1]
    decay = [p for n, p in model.named_parameters() if all(p is not q for q in no_decay)]
    groups = [{"params": decay, "weight_decay": 5e-4}, {"params": no_decay, "weight_decay": 0.0}]
    gen = torch.Generator().manual_seed(130 + seed)
    yy, xx = torch.meshgrid(torch.arange(size), torch.arange(size), indexing="ij")
    colours = torch.rand(classes, 3, 1, 1, generator=gen)
    angles = torch.arange(classes) * math.pi / classes
    freqs = 2.0 + torch.arange(classes) % 3
    along = xx[None] * angles.cos()[:, None, None] + yy[None] * angles.sin()[:, None, None]
    gratings = 0.5 + 0.5 * torch.sin(2 * math.pi * freqs[:, None, None] * along / size)
    templates = 0.4 * colours + 0.6 * gratings[:, None]  # a colour and an oriented grating per class

    def draw(n: int) -> tuple[torch.Tensor, torch.Tensor]:
        labels = torch.randint(0, classes, (n,), generator=gen)
        images = templates[labels] * (0.8 + 0.4 * torch.rand(n, 1, 1, 1, generator=gen))
        shift = torch.randint(-3, 4, (2,), generator=gen).tolist()
        images = images.roll(shift, (2, 3)) + 0.1 * torch.randn(n, 3, size, size, generator=gen)
        return images.clamp(0, 1), labels

    pool_x, pool_y = draw(classes * labeled_per_class)

    def affine(x: torch.Tensor, theta: torch.Tensor, padding: str = "zeros", mode: str = "bilinear") -> torch.Tensor:
        grid = nn.functional.affine_grid(theta, list(x.shape), align_corners=False)
        if padding == "zeros":  # fill with grey, as PIL's fillcolor (128, 128, 128)
            return nn.functional.grid_sample(x - 0.5, grid, mode=mode, padding_mode="zeros", align_corners=False) + 0.5
        return nn.functional.grid_sample(x, grid, mode=mode, padding_mode=padding, align_corners=False)

    def weak(x: torch.Tensor) -> torch.Tensor:
        n = len(x)
        theta = torch.zeros(n, 2, 3)
        theta[:, 0, 0] = torch.where(torch.rand(n, generator=gen) < 0.5, -1.0, 1.0)
        theta[:, 1, 1] = 1.0
        theta[:, :, 2] = torch.randint(-4, 5, (n, 2), generator=gen) * 2.0 / size
        return affine(x, theta, "reflection", "nearest")

    def blend(x: torch.Tensor, other: torch.Tensor, factor: torch.Tensor) -> torch.Tensor:
        return (other + factor[:, None, None, None] * (x - other)).clamp(0, 1)

    def gray(x: torch.Tensor) -> torch.Tensor:
        return (0.299 * x[:, 0] + 0.587 * x[:, 1] + 0.114 * x[:, 2])[:, None]

    smooth = torch.tensor([[1.0, 1, 1], [1, 5, 1], [1, 1, 1]]).div(13).expand(3, 1, 3, 3)

    def geometric(x: torch.Tensor, matrix: torch.Tensor) -> torch.Tensor:
        theta = torch.cat([matrix, torch.zeros(len(x), 2, 1)], 2)
        return affine(x, theta)

    def rotate(x: torch.Tensor, v: torch.Tensor) -> torch.Tensor:
        a = torch.deg2rad(30 * v * torch.where(torch.rand(len(x), generator=gen) < 0.5, -1.0, 1.0))
        return geometric(x, torch.stack([torch.stack([a.cos(), -a.sin()], 1), torch.stack([a.sin(), a.cos()], 1)], 1))

    def shear(x: torch.Tensor, v: torch.Tensor, axis: int) -> torch.Tensor:
        m = torch.eye(2).repeat(len(x), 1, 1)
        m[:, axis, 1 - axis] = 0.3 * v * torch.where(torch.rand(len(x), generator=gen) < 0.5, -1.0, 1.0)
        return geometric(x, m)

    def translate(x: torch.Tensor, v: torch.Tensor, axis: int) -> torch.Tensor:
        theta = torch.eye(2, 3).repeat(len(x), 1, 1)
        theta[:, axis, 2] = 2 * 0.3 * v * torch.where(torch.rand(len(x), generator=gen) < 0.5, -1.0, 1.0)
        return affine(x, theta)

    operations: list[Callable[[torch.Tensor, torch.Tensor], torch.Tensor]] = [
        lambda x, v: x,  # identity
        lambda x, v: (x - x.amin((2, 3), keepdim=True))  # autocontrast
        / (x.amax((2, 3), keepdim=True) - x.amin((2, 3), keepdim=True)).clamp(min=1e-3),
        lambda x, v: blend(x, torch.zeros_like(x), 0.05 + 0.9 * v),  # brightness
        lambda x, v: blend(x, gray(x).expand_as(x), 0.05 + 0.9 * v),  # color
        lambda x, v: blend(x, gray(x).mean((1, 2, 3), keepdim=True).expand_as(x), 0.05 + 0.9 * v),  # contrast
        lambda x, v: torch.floor(x * 2 ** (8 - (4 * v).long())[:, None, None, None]) /
        2 ** (8 - (4 * v).long())[:, None, None, None],  # posterize
        rotate,
        lambda x, v: blend(x, nn.functional.conv2d(nn.functional.pad(x, (1, 1, 1, 1), mode="replicate"), smooth,
                                                   groups=3), 0.05 + 0.9 * v),  # sharpness
        lambda x, v: shear(x, v, 0),
        lambda x, v: shear(x, v, 1),
        lambda x, v: torch.where(x < (1 - v)[:, None, None, None], x, 1 - x),  # solarize
        lambda x, v: translate(x, v, 0),
        lambda x, v: translate(x, v, 1),
    ]

    def strong(x: torch.Tensor) -> torch.Tensor:
        x = x.clone()
        n = len(x)
        for _ in range(2):
            choice = torch.randint(0, len(operations), (n,), generator=gen)
            magnitude = torch.randint(1, 11, (n,), generator=gen) / 10
            apply = torch.rand(n, generator=gen) < 0.5  # RandAugmentMC applies each drawn op with p 0.5
            for k, op in enumerate(operations):
                chosen = ((choice == k) & apply).nonzero().squeeze(1)
                if len(chosen):
                    x[chosen] = op(x[chosen], magnitude[chosen]).clamp(0, 1)
        cy, cx = (torch.randint(0, size, (n,), generator=gen) for _ in range(2))
        hole = ((yy[None] - cy[:, None, None]).abs() <= 8) & ((xx[None] - cx[:, None, None]).abs() <= 8)
        return x.masked_fill(hole[:, None], 0.5)

    def interleave(x: torch.Tensor, k: int) -> torch.Tensor:
        return x.reshape(-1, k, *x.shape[1:]).transpose(0, 1).reshape(-1, *x.shape[1:])

    def de_interleave(x: torch.Tensor, k: int) -> torch.Tensor:
        return x.reshape(k, -1, *x.shape[1:]).transpose(0, 1).reshape(-1, *x.shape[1:])

    total = 0.0
    model.train()
    # the supervised phase on the labeled pool, with its own optimizer
    opt = torch.optim.SGD(groups, lr=0.1, momentum=0.9, nesterov=True)
    for _ in range(warm_steps):
        index = torch.randint(0, len(pool_x), (warm_batch,), generator=gen)
        opt.zero_grad(set_to_none=True)
        loss = nn.functional.cross_entropy(model(weak(pool_x[index])), pool_y[index])
        loss.backward()
        opt.step()
        total += loss.item()
    # FixMatch from that checkpoint: a new optimizer and schedule, and the EMA copy (ModelEMA)
    del opt
    opt = torch.optim.SGD(groups, lr=0.03, momentum=0.9, nesterov=True)
    sched = torch.optim.lr_scheduler.LambdaLR(opt, lambda s: math.cos(7 * math.pi * s / (16 * steps)))
    ema = copy.deepcopy(model)
    ema.requires_grad_(False)
    param_keys = [k for k, _ in model.named_parameters()]
    buffer_keys = [k for k, _ in model.named_buffers()]

    def update_ema() -> None:
        with torch.no_grad():
            msd, esd = model.state_dict(), ema.state_dict()
            for k in param_keys:
                esd[k].copy_(esd[k] * 0.999 + (1.0 - 0.999) * msd[k].detach())
            for k in buffer_keys:
                esd[k].copy_(msd[k])

    k = 2 * mu + 1
    for _ in range(steps):
        index = torch.randint(0, len(pool_x), (labeled_batch,), generator=gen)
        inputs_x, targets_x = weak(pool_x[index]), pool_y[index]
        unlabeled, _ = draw(mu * labeled_batch)
        inputs_u_w, inputs_u_s = weak(unlabeled), strong(unlabeled)
        opt.zero_grad(set_to_none=True)
        logits = de_interleave(model(interleave(torch.cat([inputs_x, inputs_u_w, inputs_u_s]), k)), k)
        logits_x = logits[:labeled_batch]
        logits_u_w, logits_u_s = logits[labeled_batch:].chunk(2)
        loss_x = nn.functional.cross_entropy(logits_x, targets_x)
        max_probs, targets_u = torch.softmax(logits_u_w.detach(), -1).max(-1)
        mask = max_probs >= threshold
        loss_u = nn.functional.cross_entropy(logits_u_s[mask], targets_u[mask], reduction="sum") / len(mask)
        loss = loss_x + loss_u
        loss.backward()
        opt.step()
        sched.step()
        update_ema()
        total += loss.item() + int(mask.sum())
    return total


@_workload(default_steps=5)
def hyena_fft_train(*, steps: int, seed: int) -> float:
    """A Hyena language model (Poli et al. 2023, as HazyResearch's safari HyenaOperator) trained on
    batch 2 sequences of 1024 tokens drawn from a Zipf distribution over a vocabulary of 4096 with
    copied spans (every sequence repeats 8 drawn earlier spans of 16-64 tokens later on, so
    long-range recall pays; the data generator). An embedding 4096 x 256 (initialised at std 0.02)
    tied to the head, 4 pre-norm blocks of width 256: a Hyena operator of order 2 (an input
    projection 256-768, a depthwise short Conv1d of kernel 3 over the three branches x0, x1 and v;
    the long implicit filter of each channel made every forward by a small MLP over positional
    features (t and 16 sine / cosine bands, 33-64-64-64-256, Sin activations with learned
    frequencies) times an exponential decay modulation; v gated by x1, convolved with that filter
    as an FFT convolution of size 2L (torch.fft.rfft of the filter and of the input at n = 2048,
    their product, torch.fft.irfft, the first 1024 kept, plus a per-channel skip), gated by x0, an
    output projection 256-256) and a GELU MLP 256-1024-256; next-token cross-entropy, clipping at
    1, AdamW (lr 6e-4, betas 0.9, 0.98, weight decay 0.1 on the matrices) with a linear warm-up and
    cosine decay. Fixed shapes (every step allocates the same sizes in the same order); 5 steps."""
    torch.manual_seed(0)
    vocab, dim, depth, batch, length, bands, filter_width = 4096, 256, 4, 2, 1024, 16, 64

    def fftconv(u: torch.Tensor, k: torch.Tensor, skip: torch.Tensor) -> torch.Tensor:
        n = u.shape[-1]
        k_f = torch.fft.rfft(k, n=2 * n) / (2 * n)
        u_f = torch.fft.rfft(u, n=2 * n)
        y = torch.fft.irfft(u_f * k_f, n=2 * n, norm="forward")[..., :n]
        return y + u * skip[:, None]

    class Sin(nn.Module):
        def __init__(self, width: int) -> None:
            super().__init__()
            self.freq = nn.Parameter(torch.ones(1, width))

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            return torch.sin(self.freq * x)

    class HyenaFilter(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            t = torch.linspace(0, 1, length)[:, None]
            w = 2 * math.pi * torch.arange(length, dtype=torch.float32)[:, None] / length
            f = torch.linspace(1e-4, bands - 1, bands)[None]
            self.register_buffer("z", torch.cat([t, torch.cos(f * w), torch.sin(f * w)], 1))  # (L, 33)
            self.register_buffer("t", t)
            self.mlp = nn.Sequential(nn.Linear(2 * bands + 1, filter_width), Sin(filter_width),
                                     nn.Linear(filter_width, filter_width), Sin(filter_width),
                                     nn.Linear(filter_width, filter_width), Sin(filter_width),
                                     nn.Linear(filter_width, dim, bias=False))
            max_decay, min_decay = math.log(1e-2) / 0.3, math.log(1e-2) / 1.5
            self.register_buffer("deltas", torch.linspace(min_decay, max_decay, dim)[None])
            self.bias = nn.Parameter(torch.randn(dim))

        def forward(self) -> torch.Tensor:  # the (dim, L) long filter
            h = self.mlp(self.z) * torch.exp(-self.t * self.deltas.abs())
            return h.transpose(0, 1)

    class Hyena(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.in_proj, self.out_proj = nn.Linear(dim, 3 * dim), nn.Linear(dim, dim)
            self.short = nn.Conv1d(3 * dim, 3 * dim, 3, padding=2, groups=3 * dim)
            self.filter = HyenaFilter()

        def forward(self, u: torch.Tensor) -> torch.Tensor:
            n = u.shape[1]
            uc = self.short(self.in_proj(u).transpose(1, 2))[..., :n]
            x0, x1, v = uc.split(dim, 1)
            v = fftconv(v * x1, self.filter(), self.filter.bias)
            return self.out_proj((v * x0).transpose(1, 2))

    class Block(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.ln1, self.ln2, self.mixer = nn.LayerNorm(dim), nn.LayerNorm(dim), Hyena()
            self.mlp = nn.Sequential(nn.Linear(dim, 4 * dim), nn.GELU(approximate="tanh"), nn.Linear(4 * dim, dim))

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            x = x + self.mixer(self.ln1(x))
            return x + self.mlp(self.ln2(x))

    class HyenaLM(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.embed = nn.Embedding(vocab, dim)
            self.blocks = nn.ModuleList(Block() for _ in range(depth))
            self.ln = nn.LayerNorm(dim)

        def forward(self, ids: torch.Tensor) -> torch.Tensor:
            x = self.embed(ids)
            for block in self.blocks:
                x = block(x)
            return self.ln(x) @ self.embed.weight.T

    model = HyenaLM()
    nn.init.normal_(model.embed.weight, std=0.02)
    matrices = [p for n, p in model.named_parameters() if p.ndim == 2 and "freq" not in n and "embed" not in n]
    others = [p for p in model.parameters() if all(p is not m for m in matrices)]
    opt = torch.optim.AdamW([{"params": matrices, "weight_decay": 0.1}, {"params": others, "weight_decay": 0.0}],
                            lr=6e-4, betas=(0.9, 0.98))
    warm = max(1, steps // 5)

    def schedule(s: int) -> float:
        return (s + 1) / warm if s < warm else 0.5 * (1 + math.cos(math.pi * (s - warm) / max(1, steps - warm)))

    sched = torch.optim.lr_scheduler.LambdaLR(opt, schedule)
    gen = torch.Generator().manual_seed(131 + seed)
    zipf = 1 / torch.arange(1, vocab + 1, dtype=torch.float32)
    total = 0.0
    for _ in range(steps):
        ids = torch.multinomial(zipf, batch * (length + 1), replacement=True, generator=gen).view(batch, length + 1)
        for row in ids:
            for _copy in range(8):
                span = int(torch.randint(16, 65, (), generator=gen))
                src = int(torch.randint(0, length // 2 - span, (), generator=gen))
                dst = int(torch.randint(length // 2, length + 1 - span, (), generator=gen))
                row[dst:dst + span] = row[src:src + span]  # the two halves do not overlap
        opt.zero_grad(set_to_none=True)
        loss = nn.functional.cross_entropy(model(ids[:, :-1]).reshape(-1, vocab), ids[:, 1:].reshape(-1))
        loss.backward()
        nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        sched.step()
        total += loss.item()
    return total


@_workload(default_steps=5)
def encodec_rvq_train(*, steps: int, seed: int) -> float:
    """An EnCodec / SoundStream-style neural audio codec (Defossez et al. 2022, as audiocraft's
    CompressionSolver trains it) on batch 4 drawn mono clips of 0.4 s at 24 kHz (9,600 samples: a
    sum of 1-3 harmonic notes of drawn pitch with 8 partials and decaying envelopes plus noise,
    scaled to a drawn loudness; the data generator). SEANet encoder with C = 16: Conv1d 1-16 (kernel
    7), then for strides 2, 4, 5 and 8 a residual unit (ELU, Conv1d c-c/2 of kernel 3, ELU, Conv1d
    c/2-c of kernel 1, a skip) and an ELU and strided Conv1d (kernel 2 x stride) doubling the
    channels to 256, a 2-layer LSTM of 256 with a skip, ELU, Conv1d 256-128 (kernel 7): 30 frames of
    128 (75 Hz). A residual vector quantizer of 8 codebooks of 1024 x 128 (as audiocraft's
    ResidualVectorQuantization with EuclideanCodebook: each stage the nearest codes of the residual
    by the full distance matrix, a commitment MSE, one straight-through estimate for the sum; in
    training each codebook's EMA update (decay 0.99: cluster sizes from a one-hot of the codes, the
    summed vectors by a matmul, Laplace smoothing) and the replacement of codes whose EMA count fell
    below 2 by drawn vectors of the batch). The mirrored SEANet decoder (ConvTranspose1d upsampling
    8, 5, 4, 2, residual units, Conv1d 16-1). A multi-scale STFT discriminator (as EnCodec's
    MS-STFT-D: for FFT sizes 2048, 1024 and 512 with hops of a quarter, the normalised complex
    spectrogram's real and imaginary parts as 2 channels, weight-normalised Conv2d 2-32 (3 x 9),
    three of 32-32 (3 x 9) striding frequency by 2 with time dilations 1, 2 and 4, one 3 x 3,
    LeakyReLU 0.2, and a 3 x 3 to 1 logit map). Each step is one discriminator update (hinge loss on
    the real clips and the detached reconstructions) and then one generator update: 0.1 x the
    waveform L1, the multi-scale mel loss (64-band log-mel spectrograms at windows 2^5 to 2^11 with
    hops of a quarter, L1 plus L2), 3 x the hinge adversarial loss, 3 x the relative
    feature-matching L1 against the real clips' feature maps (taken under no_grad) and the
    commitment losses; Adam (lr 3e-4, betas 0.5, 0.9) for each. Fixed shapes (every step allocates
    the same sizes in the same order); 5 steps. Shrunk: EnCodec's C = 32 on batch 4 of 1 s clips
    peaked at 1.25 GiB (0.36 s still at 593 MiB), and C = 16 on 0.48 s at 475 MiB, so C = 16
    (SoundStream's smaller width) on 0.4 s."""
    torch.manual_seed(0)
    batch, rate, samples, channels, latent, codebooks, bins = 4, 24000, 9600, 16, 128, 8, 1024
    strides = (2, 4, 5, 8)

    def elu_conv(cin: int, cout: int, kernel: int, stride: int = 1, dilation: int = 1) -> nn.Sequential:
        return nn.Sequential(nn.ELU(), nn.Conv1d(cin, cout, kernel, stride, padding=dilation * (kernel - 1) // 2
                                                 if stride == 1 else (stride + 1) // 2, dilation=dilation))

    class ResUnit(nn.Module):
        def __init__(self, c: int) -> None:
            super().__init__()
            self.block = nn.Sequential(elu_conv(c, c // 2, 3), elu_conv(c // 2, c, 1))

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            return x + self.block(x)

    class SLSTM(nn.Module):
        def __init__(self, c: int) -> None:
            super().__init__()
            self.lstm = nn.LSTM(c, c, 2)

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            y = x.permute(2, 0, 1)
            return (self.lstm(y)[0] + y).permute(1, 2, 0)

    def encoder() -> nn.Sequential:
        mods: list[nn.Module] = [nn.Conv1d(1, channels, 7, padding=3)]
        c = channels
        for s in strides:
            mods += [ResUnit(c), elu_conv(c, 2 * c, 2 * s, s)]
            c *= 2
        return nn.Sequential(*mods, SLSTM(c), elu_conv(c, latent, 7))

    def decoder() -> nn.Sequential:
        c = channels * 2 ** len(strides)
        mods: list[nn.Module] = [nn.Conv1d(latent, c, 7, padding=3), SLSTM(c)]
        for s in reversed(strides):
            p = (s + 1) // 2
            mods += [nn.ELU(), nn.ConvTranspose1d(c, c // 2, 2 * s, s, padding=p, output_padding=2 * p - s),
                     ResUnit(c // 2)]
            c //= 2
        return nn.Sequential(*mods, elu_conv(c, 1, 7))

    class Codebook(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.register_buffer("embed", nn.init.kaiming_uniform_(torch.empty(bins, latent)))
            self.register_buffer("embed_avg", self.embed.clone())
            self.register_buffer("cluster_size", torch.zeros(bins))

        def forward(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:  # x (N, latent)
            with torch.no_grad():
                dist = -(x.pow(2).sum(1, keepdim=True) - 2 * x @ self.embed.t() + self.embed.pow(2).sum(1)[None])
                codes = dist.max(-1).indices
            quantized = nn.functional.embedding(codes, self.embed)
            if self.training:
                with torch.no_grad():
                    # expire codes whose EMA count fell below 2: replaced by drawn vectors of the batch
                    expired = self.cluster_size < 2
                    if bool(expired.any()):
                        samples = x.detach()[torch.randint(0, len(x), (bins,))]
                        self.embed.copy_(torch.where(expired[:, None], samples, self.embed))
                    onehot = nn.functional.one_hot(codes, bins).to(x.dtype)
                    self.cluster_size.mul_(0.99).add_(onehot.sum(0), alpha=0.01)
                    self.embed_avg.mul_(0.99).add_((x.detach().t() @ onehot).t(), alpha=0.01)
                    n = self.cluster_size.sum()
                    smoothed = (self.cluster_size + 1e-5) / (n + bins * 1e-5) * n
                    self.embed.copy_(self.embed_avg / smoothed[:, None])
            commit = nn.functional.mse_loss(quantized.detach(), x)
            return x + (quantized - x).detach(), commit

    class Codec(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.encoder, self.decoder = encoder(), decoder()
            self.quantizers = nn.ModuleList(Codebook() for _ in range(codebooks))

        def forward(self, wave: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
            z = self.encoder(wave[:, None])
            b, d, t = z.shape
            x = residual = z.transpose(1, 2).reshape(-1, d)
            out, commit = torch.zeros_like(x), z.new_zeros(())
            for q in self.quantizers:
                quantized, loss = q(residual)
                quantized = quantized.detach()
                residual = residual - quantized
                out = out + quantized
                commit = commit + loss
            out = x + (out - x).detach()  # one straight-through estimate for the sum, as audiocraft
            return self.decoder(out.view(b, t, d).transpose(1, 2)).squeeze(1), commit

    wn = nn.utils.parametrizations.weight_norm

    class STFTDiscriminator(nn.Module):
        def __init__(self, n_fft: int) -> None:
            super().__init__()
            self.n_fft = n_fft
            self.register_buffer("window", torch.hann_window(n_fft))
            self.convs = nn.ModuleList([wn(nn.Conv2d(2, 32, (3, 9), padding=(1, 4)))] + [
                wn(nn.Conv2d(32, 32, (3, 9), stride=(1, 2), dilation=(d, 1), padding=(d, 4))) for d in (1, 2, 4)] + [
                wn(nn.Conv2d(32, 32, (3, 3), padding=(1, 1)))])
            self.post = wn(nn.Conv2d(32, 1, (3, 3), padding=(1, 1)))

        def forward(self, x: torch.Tensor) -> tuple[torch.Tensor, list[torch.Tensor]]:
            spec = torch.stft(x, self.n_fft, self.n_fft // 4, window=self.window, center=False, normalized=True,
                              return_complex=True)
            z = torch.stack([spec.real, spec.imag], 1).transpose(2, 3)  # (B, 2, frames, bins)
            features = []
            for conv in self.convs:
                z = nn.functional.leaky_relu(conv(z), 0.2)
                features.append(z)
            return self.post(z), features

    def mel_filterbank(n_fft: int, mels: int = 64) -> torch.Tensor:
        def hz_to_mel(f: torch.Tensor) -> torch.Tensor:
            return 2595 * torch.log10(1 + f / 700)

        points = 700 * (10 ** (torch.linspace(0.0, float(hz_to_mel(torch.tensor(rate / 2.0))), mels + 2) / 2595) - 1)
        freqs = torch.linspace(0, rate / 2, n_fft // 2 + 1)
        lower, centre, upper = points[:-2, None], points[1:-1, None], points[2:, None]
        return torch.clamp(torch.minimum((freqs - lower) / (centre - lower), (upper - freqs) / (upper - centre)), min=0)

    scales = [2 ** i for i in range(5, 12)]
    mel_banks = {n: mel_filterbank(n) for n in scales}
    mel_windows = {n: torch.hann_window(n) for n in scales}

    def mel_loss(pred: torch.Tensor, target: torch.Tensor) -> torch.Tensor:
        loss = pred.new_zeros(())
        for n in scales:
            p = torch.log10((mel_banks[n] @ torch.stft(pred, n, n // 4, window=mel_windows[n],
                                                       return_complex=True).abs()).clamp(min=1e-5))
            t = torch.log10((mel_banks[n] @ torch.stft(target, n, n // 4, window=mel_windows[n],
                                                       return_complex=True).abs()).clamp(min=1e-5))
            loss = loss + nn.functional.l1_loss(p, t) + nn.functional.mse_loss(p, t)
        return loss / len(scales)

    codec = Codec()
    discriminators = nn.ModuleList(STFTDiscriminator(n) for n in (2048, 1024, 512))
    opt_g = torch.optim.Adam(codec.parameters(), lr=3e-4, betas=(0.5, 0.9))
    opt_d = torch.optim.Adam(discriminators.parameters(), lr=3e-4, betas=(0.5, 0.9))
    gen = torch.Generator().manual_seed(132 + seed)
    t = torch.arange(samples) / rate
    partials = torch.arange(1, 9, dtype=torch.float32)
    total = 0.0
    for _ in range(steps):
        notes = torch.randint(1, 4, (batch,), generator=gen)
        f0 = 110 * 2 ** (3 * torch.rand(batch, 3, generator=gen))
        onset = 0.3 * torch.rand(batch, 3, generator=gen)
        decay = 2 + 8 * torch.rand(batch, 3, generator=gen)
        active = (torch.arange(3)[None] < notes[:, None]).float()
        tone = (torch.sin(2 * math.pi * f0[..., None, None] * partials[:, None] * t) / partials[:, None] ** 1.5).sum(2)
        envelope = torch.exp(-decay[..., None] * (t - onset[..., None]).clamp(min=0)) * (t >= onset[..., None])
        wave = (active[..., None] * tone * envelope).sum(1) + 0.01 * torch.randn(batch, samples, generator=gen)
        wave = wave / wave.abs().amax(1, keepdim=True) * (0.1 + 0.8 * torch.rand(batch, 1, generator=gen))
        recon, commit = codec(wave)
        # discriminator update on the real clips and the detached reconstructions
        opt_d.zero_grad(set_to_none=True)
        loss_d = wave.new_zeros(())
        for disc in discriminators:
            loss_d = loss_d + torch.relu(1 - disc(wave)[0]).mean() + torch.relu(1 + disc(recon.detach())[0]).mean()
        loss_d = loss_d / len(discriminators)
        loss_d.backward()
        opt_d.step()
        # generator update
        opt_g.zero_grad(set_to_none=True)
        adversarial, matching = wave.new_zeros(()), wave.new_zeros(())
        for disc in discriminators:
            with torch.no_grad():
                real_features = disc(wave)[1]
            logits, features = disc(recon)
            adversarial = adversarial + torch.relu(1 - logits).mean()
            for real, fake in zip(real_features, features):
                matching = matching + nn.functional.l1_loss(fake, real) / real.abs().mean()
        adversarial = adversarial / len(discriminators)
        matching = matching / (len(discriminators) * len(real_features))
        loss_g = 0.1 * nn.functional.l1_loss(recon, wave) + mel_loss(recon, wave) + 3 * adversarial + \
            3 * matching + commit
        loss_g.backward()
        opt_g.step()
        total += loss_d.item() + loss_g.item()
    return total


class _Sparsemax(torch.autograd.Function):
    """Sparsemax over the last dimension (Martins and Astudillo 2016), as pytorch-tabnet's
    SparsemaxFunction: the threshold from the sorted input's cumulative sums, a custom backward."""

    @staticmethod
    def forward(ctx, x: torch.Tensor) -> torch.Tensor:  # type: ignore[override]
        x = x - x.max(-1, keepdim=True).values
        srt = torch.sort(x, -1, descending=True).values
        cumsum = srt.cumsum(-1) - 1
        rhos = torch.arange(1, x.shape[-1] + 1, dtype=x.dtype)
        support = rhos * srt > cumsum
        support_size = support.sum(-1, keepdim=True)
        tau = cumsum.gather(-1, support_size - 1) / support_size.to(x.dtype)
        out = torch.clamp(x - tau, min=0)
        ctx.save_for_backward(support_size, out)
        return out

    @staticmethod
    def backward(ctx, grad_output: torch.Tensor) -> torch.Tensor:  # type: ignore[override]
        support_size, out = ctx.saved_tensors
        grad_input = grad_output.clone()
        grad_input[out == 0] = 0
        v_hat = grad_input.sum(-1, keepdim=True) / support_size.to(out.dtype)
        return torch.where(out != 0, grad_input - v_hat, grad_input)


@_workload(default_steps=5)
def tabnet_train(*, steps: int, seed: int) -> float:
    """TabNet (Arik and Pfister 2021, as dreamquark's pytorch-tabnet) classifying drawn tabular rows,
    batch 2048 of 48 numerical features (a drawn mixture of 4 Gaussian clusters, per-feature scales)
    and 8 categorical ones (cardinalities 4-1000, skewed towards low ids), 7 classes from a fixed
    drawn teacher that reads 10 of the numerical features, two products of them and a per-category
    effect of every categorical feature (the data generator). The categorical features embedded
    (its own table each, width 4, as EmbeddingGenerator) beside the numerical ones: 80 inputs, an
    input BatchNorm1d; N_steps = 5 decision steps with n_d = n_a = 64 and gamma 1.5: an initial
    feature transformer, then per step an attentive transformer (a linear 64-80, ghost batch norm,
    times the prior scales, sparsemax as a custom autograd.Function: sort, cumsum, threshold) whose
    mask selects the features for that step's feature transformer (2 GLU layers shared by all steps
    and 2 of its own, each a linear to 2 x 128 without bias, ghost batch norm and a GLU, with
    sqrt(0.5)-scaled residuals after the first), the prior updated to (gamma - M) x prior, each
    step's ReLU of its first 64 outputs summed into a linear 64-7. Ghost batch norm (momentum 0.02)
    runs BatchNorm1d on virtual batches of 512 (the paper's B_v; x.chunk into 4, concatenated
    back). Loss: cross-entropy minus 1e-3 x the masks' sparsity regulariser (the mean over rows and
    steps of sum M log(M + 1e-15)); Adam 2e-2 with a step decay (x 0.95 a step). Fixed shapes (every
    step allocates the same sizes in the same order); 5 steps. Virtual batches of 256 (8 a batch)
    gave 50,870 events, so 512."""
    torch.manual_seed(0)
    batch, virtual, n_num, n_d, n_a, n_steps, gamma, classes, emb = 2048, 512, 48, 64, 64, 5, 1.5, 7, 4
    cards = [4, 7, 12, 30, 60, 150, 400, 1000]
    inputs = n_num + emb * len(cards)

    class GBN(nn.Module):
        def __init__(self, width: int) -> None:
            super().__init__()
            self.bn = nn.BatchNorm1d(width, momentum=0.02)

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            return torch.cat([self.bn(chunk) for chunk in x.chunk(math.ceil(len(x) / virtual), 0)], 0)

    class GLULayer(nn.Module):
        def __init__(self, cin: int, cout: int, fc: nn.Linear | None = None) -> None:
            super().__init__()
            self.cout = cout
            self.fc = fc if fc is not None else nn.Linear(cin, 2 * cout, bias=False)
            nn.init.xavier_normal_(self.fc.weight, gain=math.sqrt((cin + 2 * cout) / math.sqrt(cin)))
            self.bn = GBN(2 * cout)

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            x = self.bn(self.fc(x))
            return x[:, :self.cout] * torch.sigmoid(x[:, self.cout:])

    shared = nn.ModuleList([nn.Linear(inputs, 2 * (n_d + n_a), bias=False),
                            nn.Linear(n_d + n_a, 2 * (n_d + n_a), bias=False)])

    class FeatTransformer(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            width = n_d + n_a
            self.layers = nn.ModuleList([GLULayer(inputs, width, shared[0]), GLULayer(width, width, shared[1]),
                                         GLULayer(width, width), GLULayer(width, width)])

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            x = self.layers[0](x)
            for layer in self.layers[1:]:
                x = (x + layer(x)) * math.sqrt(0.5)
            return x

    class AttentiveTransformer(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.fc, self.bn = nn.Linear(n_a, inputs, bias=False), GBN(inputs)

        def forward(self, prior: torch.Tensor, processed: torch.Tensor) -> torch.Tensor:
            return _Sparsemax.apply(self.bn(self.fc(processed)) * prior)

    class TabNet(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.embeddings = nn.ModuleList(nn.Embedding(c, emb) for c in cards)
            self.initial_bn = nn.BatchNorm1d(inputs, momentum=0.01)
            self.initial = FeatTransformer()
            self.transformers = nn.ModuleList(FeatTransformer() for _ in range(n_steps))
            self.attentive = nn.ModuleList(AttentiveTransformer() for _ in range(n_steps))
            self.final = nn.Linear(n_d, classes, bias=False)

        def forward(self, num: torch.Tensor, cat: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
            x = self.initial_bn(torch.cat([num, *(e(cat[:, i]) for i, e in enumerate(self.embeddings))], 1))
            prior = torch.ones_like(x)
            sparsity = x.new_zeros(())
            att = self.initial(x)[:, n_d:]
            out = x.new_zeros(len(x), n_d)
            for transformer, attentive in zip(self.transformers, self.attentive):
                m = attentive(prior, att)
                sparsity = sparsity + torch.mean(torch.sum(m * torch.log(m + 1e-15), 1))
                prior = (gamma - m) * prior
                h = transformer(m * x)
                out = out + torch.relu(h[:, :n_d])
                att = h[:, n_d:]
            return self.final(out), sparsity / n_steps

    model = TabNet()
    opt = torch.optim.Adam(model.parameters(), lr=2e-2)
    sched = torch.optim.lr_scheduler.StepLR(opt, step_size=1, gamma=0.95)
    gen = torch.Generator().manual_seed(133 + seed)
    centres = 2 * torch.randn(4, n_num, generator=gen)
    scales = torch.exp(torch.randn(n_num, generator=gen))
    read = torch.randperm(n_num, generator=gen)[:10]
    teacher = torch.randn(12, classes, generator=gen)
    effects = [torch.randn(c, classes, generator=gen) for c in cards]
    card_t = torch.tensor(cards, dtype=torch.float32)
    total = 0.0
    for _ in range(steps):
        cluster = torch.randint(0, 4, (batch,), generator=gen)
        num = (centres[cluster] + torch.randn(batch, n_num, generator=gen)) * scales
        cat = (torch.rand(batch, len(cards), generator=gen) ** 3 * card_t).long()
        z = num[:, read] / scales[read] - centres.mean(0)[read]
        signals = torch.cat([z, z[:, :1] * z[:, 1:2], z[:, 2:3] * z[:, 3:4]], 1)
        labels = (signals @ teacher + sum(e[cat[:, i]] for i, e in enumerate(effects))).argmax(1)
        opt.zero_grad(set_to_none=True)
        logits, sparsity = model(num, cat)
        loss = nn.functional.cross_entropy(logits, labels) - 1e-3 * sparsity
        loss.backward()
        opt.step()
        sched.step()
        total += loss.item()
    return total


@_workload(default_steps=16)
def multilora_serve(*, steps: int, seed: int) -> float:
    """Inference only: multi-tenant LoRA serving as S-LoRA / Punica batch it (Sheng et al. 2023, Chen
    et al. 2023), under torch.inference_mode(): one LLaMA-style base decoder (vocabulary 16000, 4
    pre-RMSNorm layers of width 512, 8 heads of 64 with rotary positions, separate q, k, v and o
    projections, SwiGLU MLP 1376, an untied head) and 32 LoRA adapters of rank 16 (alpha 32) on
    every layer's q_proj and v_proj (PEFT's default targets), stored as Punica does: per layer and
    target one stacked A of 32 x 512 x 16 and one B of 32 x 16 x 512. Requests arrive 0-3
    iterations apart, each with an adapter drawn from a power law over the 32 (a few popular ones,
    a long tail), a prompt of 16-200 tokens and 8-48 tokens to generate (the data generator); up to
    12 run at once, first come first served. An admitted request's prompt is prefilled alone (its
    adapter's A and B gathered like a batch of one) and starts its key/value cache, one tensor per
    layer of its own (positions x 2 x heads x 64); every iteration the running requests decode one
    token together: each layer gathers the running requests' adapter weights by index_select on the
    adapter ids (Punica's batched gather-matmul, BGMV, here index_select and two bmm) and adds the
    scaled LoRA delta to the base q and v projections, every request's cache grows by torch.cat of
    its new keys and values, the caches are padded to the longest by pad_sequence and attended with
    a length mask; greedy tokens; a finished request leaves the batch and its caches are dropped.
    The running set, the gathered adapter weights, the caches and the prompts' tensors all follow
    the arrivals and lengths drawn (not a fixed-shape step); 16 requests (one step a request, as
    paged-kv-serve and concat-batch-serve count them). Shrunk: 24 requests of 8-96 new tokens gave
    126,550 events, 24 of 8-48 still 61,210, so 16 requests of 8-48."""
    torch.manual_seed(0)
    vocab, dim, heads, depth, ffn, adapters, rank, alpha, max_running = 16000, 512, 8, 4, 1376, 32, 16, 32, 12
    head_dim, scaling = dim // heads, alpha / rank
    inv_freq = 1.0 / (10000 ** (torch.arange(0, head_dim, 2).float() / head_dim))
    angles = torch.arange(512).float()[:, None] * inv_freq[None]
    cos_table, sin_table = angles.cos(), angles.sin()

    def rotate(x: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor) -> torch.Tensor:  # x (r, t, heads, head_dim)
        x1, x2 = x[..., : head_dim // 2], x[..., head_dim // 2:]
        return torch.cat([x1 * cos - x2 * sin, x2 * cos + x1 * sin], -1)

    class Layer(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.norm1, self.norm2 = nn.RMSNorm(dim), nn.RMSNorm(dim)
            self.q_proj, self.k_proj, self.v_proj, self.o_proj = (nn.Linear(dim, dim, bias=False) for _ in range(4))
            self.gate_up, self.down = nn.Linear(dim, 2 * ffn, bias=False), nn.Linear(ffn, dim, bias=False)
            # the adapters' weights, stacked as Punica keeps them (trained adapters: B not zero)
            self.lora_a = nn.ParameterDict({t: nn.Parameter(torch.randn(adapters, dim, rank) / math.sqrt(dim))
                                            for t in ("q", "v")})
            self.lora_b = nn.ParameterDict({t: nn.Parameter(0.01 * torch.randn(adapters, rank, dim))
                                            for t in ("q", "v")})

        def lora(self, target: str, h: torch.Tensor, ids: torch.Tensor) -> torch.Tensor:
            a = self.lora_a[target].index_select(0, ids)  # (r, dim, rank)
            b = self.lora_b[target].index_select(0, ids)  # (r, rank, dim)
            return torch.bmm(torch.bmm(h, a), b) * scaling

        def forward(self, x: torch.Tensor, ids: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor,
                    caches: list[list[torch.Tensor]]) -> torch.Tensor:
            """``x`` (r, t, dim): a prompt (1, n, dim), or the running requests' new tokens (r, 1, dim);
            ``caches`` each request's one-element list holding its cache of this layer, (length, 2, heads,
            head_dim) with the keys and values side by side, grown here."""
            r, t, _ = x.shape
            h = self.norm1(x)
            q = (self.q_proj(h) + self.lora("q", h, ids)).view(r, t, heads, head_dim)
            k = self.k_proj(h).view(r, t, heads, head_dim)
            v = (self.v_proj(h) + self.lora("v", h, ids)).view(r, t, heads, head_dim)
            q, k = rotate(q, cos, sin), rotate(k, cos, sin)
            kv = torch.stack([k, v], 2)  # (r, t, 2, heads, head_dim)
            for i, cache in enumerate(caches):
                cache[:] = [torch.cat([cache[0], kv[i]]) if cache else kv[i]]
            if t > 1:  # a prompt, alone
                att = nn.functional.scaled_dot_product_attention(q.transpose(1, 2), k.transpose(1, 2),
                                                                 v.transpose(1, 2), is_causal=True)
            else:
                padded = nn.utils.rnn.pad_sequence([c[0] for c in caches], batch_first=True)  # (r, n, 2, heads, hd)
                lengths = torch.tensor([len(c[0]) for c in caches])
                mask = (torch.arange(padded.shape[1])[None] < lengths[:, None])[:, None, None]
                keys, values = padded.permute(2, 0, 3, 1, 4)  # (r, heads, n, head_dim) each
                att = nn.functional.scaled_dot_product_attention(q.transpose(1, 2), keys, values, attn_mask=mask)
            x = x + self.o_proj(att.transpose(1, 2).reshape(r, t, dim))
            gate, up = self.gate_up(self.norm2(x)).chunk(2, -1)
            return x + self.down(nn.functional.silu(gate) * up)

    class Decoder(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.embed = nn.Embedding(vocab, dim)
            self.layers = nn.ModuleList(Layer() for _ in range(depth))
            self.norm, self.head = nn.RMSNorm(dim), nn.Linear(dim, vocab, bias=False)

        def forward(self, ids: torch.Tensor, adapter_ids: torch.Tensor, positions: torch.Tensor,
                    caches: list[list[list[torch.Tensor]]]) -> torch.Tensor:
            x = self.embed(ids)
            cos, sin = cos_table[positions][:, :, None], sin_table[positions][:, :, None]  # once for all layers
            for layer, layer_caches in zip(self.layers, caches):
                x = layer(x, adapter_ids, cos, sin, layer_caches)
            return self.head(self.norm(x[:, -1]))

    model = Decoder().eval()
    gen = torch.Generator().manual_seed(134 + seed)
    draw = lambda low, high: int(torch.randint(low, high + 1, (), generator=gen))  # noqa: E731
    popularity = 1 / torch.arange(1, adapters + 1, dtype=torch.float32) ** 1.2
    arrivals = list(itertools.accumulate(draw(0, 3) for _ in range(steps)))
    pending = [(arrival, int(torch.multinomial(popularity, 1, generator=gen)),
                torch.randint(0, vocab, (draw(16, 200),), generator=gen), draw(8, 48)) for arrival in arrivals]
    running: list[dict] = []  # each: adapter, caches (per layer [keys, values]), length, tokens left, last token
    total, it = 0.0, 0
    with torch.inference_mode():
        while pending or running:
            while pending and pending[0][0] <= it and len(running) < max_running:
                _, adapter, prompt, new = pending.pop(0)
                caches: list[list[list[torch.Tensor]]] = [[[]] for _ in range(depth)]
                n = len(prompt)
                logits = model(prompt[None], torch.tensor([adapter]), torch.arange(n)[None], caches)
                total += float(logits.max())
                running.append({"adapter": adapter, "caches": caches, "length": n, "left": new - 1,
                                "token": logits.argmax(-1)})
            if running:
                ids = torch.cat([r["token"] for r in running])[:, None]
                adapter_ids = torch.tensor([r["adapter"] for r in running])
                positions = torch.tensor([[r["length"]] for r in running])
                caches = [[r["caches"][layer][0] for r in running] for layer in range(depth)]
                logits = model(ids, adapter_ids, positions, caches)
                total += float(logits.max(-1).values.sum())
                for r, token in zip(running, logits.argmax(-1)):
                    r["token"], r["length"], r["left"] = token[None], r["length"] + 1, r["left"] - 1
                running = [r for r in running if r["left"] > 0]
            it += 1
    return total


@_workload(default_steps=5)
def barlow_twins_train(*, steps: int, seed: int) -> float:
    """Barlow Twins self-supervised pre-training (Zbontar et al. 2021, as facebookresearch's
    barlowtwins main.py): two augmented views of a batch of 32 drawn 32 x 32 images (smooth colour
    fields: 8 x 8 noise upsampled bilinearly, plus an oriented grating, from the data generator),
    each view made on the fly with the reference's augmentations in tensor form, drawn per image: a
    random resized crop (scale 0.2-1, aspect 3/4-4/3) and a horizontal flip as one affine_grid /
    grid_sample, colour jitter (brightness 0.4, contrast 0.4, saturation 0.2, p 0.8; hue left out),
    grayscale (p 0.2), a Gaussian blur (a depthwise 5 x 5 convolution, p 1.0 on the first view and
    0.1 on the second) and solarization (p 0 and 0.2), each applied by torch.where on its drawn
    mask; a CIFAR ResNet-18 backbone (3 x 3 stem, no max-pool, 2 basic blocks a stage) of widths 32,
    64, 128 and 256 (half of ResNet-18's), global average pooling; the projector of the reference
    (linear - BatchNorm - ReLU twice, then a linear, no bias) 256-2048-2048-2048; the loss on the
    cross-correlation matrix of the two views' embeddings, each normalised by a BatchNorm1d without
    affine: c = bn(z1).T @ bn(z2) / 32 (2048 x 2048), the on-diagonal (c_ii - 1)^2 summed plus
    lambda 0.0051 times the squared off-diagonal terms (taken by the reference's flatten / view
    off_diagonal); the reference's LARS (eta 0.001, momentum 0.9, weight decay 1.5e-6, biases and
    BatchNorm parameters excluded from decay and adaptation: a norm, a where and a momentum buffer
    per parameter), learning rates 0.2 and 0.0048 times 32 / 256 with a linear warm-up over 10
    steps. Fixed shapes (every step allocates the same sizes in the same order; only the drawn
    augmentation parameters change); 5 steps. Shrunk from the reference's ResNet-50 on 224 x 224
    images, batch 2048 and projector 8192 (whose three 8192-wide weights alone, with gradients and
    LARS momentum, would need about 1.7 GiB): the full-width CIFAR ResNet-18 (64-512) at batch 32
    and projector 2048 gave 531.93 MiB, so half its widths (316.75 MiB)."""
    torch.manual_seed(0)
    batch, side, proj, lambd = 32, 32, 2048, 0.0051
    widths = (32, 64, 128, 256)

    class Block(nn.Module):
        def __init__(self, cin: int, cout: int, stride: int) -> None:
            super().__init__()
            self.c1, self.b1 = nn.Conv2d(cin, cout, 3, stride, 1, bias=False), nn.BatchNorm2d(cout)
            self.c2, self.b2 = nn.Conv2d(cout, cout, 3, 1, 1, bias=False), nn.BatchNorm2d(cout)
            self.short = (nn.Sequential(nn.Conv2d(cin, cout, 1, stride, bias=False), nn.BatchNorm2d(cout))
                          if stride != 1 or cin != cout else nn.Identity())

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            out = torch.relu(self.b1(self.c1(x)))
            return torch.relu(self.b2(self.c2(out)) + self.short(x))

    layers: list[nn.Module] = [nn.Conv2d(3, widths[0], 3, 1, 1, bias=False), nn.BatchNorm2d(widths[0]), nn.ReLU()]
    cin = widths[0]
    for i, w in enumerate(widths):
        layers += [Block(cin, w, 1 if i == 0 else 2), Block(w, w, 1)]
        cin = w
    backbone = nn.Sequential(*layers, nn.AdaptiveAvgPool2d(1), nn.Flatten())
    projector = nn.Sequential(nn.Linear(cin, proj, bias=False), nn.BatchNorm1d(proj), nn.ReLU(),
                              nn.Linear(proj, proj, bias=False), nn.BatchNorm1d(proj), nn.ReLU(),
                              nn.Linear(proj, proj, bias=False))
    model = nn.ModuleDict({"backbone": backbone, "projector": projector, "bn": nn.BatchNorm1d(proj, affine=False)})

    def off_diagonal(x: torch.Tensor) -> torch.Tensor:
        n, m = x.shape
        return x.flatten()[:-1].view(n - 1, n + 1)[:, 1:].flatten()

    class LARS(torch.optim.Optimizer):
        def __init__(self, params: list[dict[str, object]]) -> None:
            super().__init__(params, dict(lr=0.0, weight_decay=1.5e-6, momentum=0.9, eta=0.001,
                                          weight_decay_filter=False, lars_adaptation_filter=False))

        @torch.no_grad()
        def step(self, closure: object = None) -> None:  # type: ignore[override]
            for g in self.param_groups:
                for p in g["params"]:
                    dp = p.grad
                    if dp is None:
                        continue
                    if not g["weight_decay_filter"] or p.ndim != 1:
                        dp = dp.add(p, alpha=g["weight_decay"])
                    if not g["lars_adaptation_filter"] or p.ndim != 1:
                        param_norm, update_norm = torch.norm(p), torch.norm(dp)
                        one = torch.ones_like(param_norm)
                        q = torch.where(param_norm > 0.0,
                                        torch.where(update_norm > 0, (g["eta"] * param_norm / update_norm), one), one)
                        dp = dp.mul(q)
                    state = self.state[p]
                    if "mu" not in state:
                        state["mu"] = torch.zeros_like(p)
                    mu = state["mu"]
                    mu.mul_(g["momentum"]).add_(dp)
                    p.add_(mu, alpha=-g["lr"])

    weights = [p for p in model.parameters() if p.ndim != 1]
    biases = [p for p in model.parameters() if p.ndim == 1]
    opt = LARS([{"params": weights}, {"params": biases, "weight_decay_filter": True, "lars_adaptation_filter": True}])
    gen = torch.Generator().manual_seed(140 + seed)
    blur = torch.exp(-((torch.arange(5) - 2.0) ** 2) / 2.0)
    blur = (blur[:, None] * blur[None, :] / blur.sum() ** 2).expand(3, 1, 5, 5).contiguous()
    grey = torch.tensor([0.299, 0.587, 0.114]).view(1, 3, 1, 1)
    yy, xx = torch.meshgrid(torch.linspace(-1, 1, side), torch.linspace(-1, 1, side), indexing="ij")

    def images() -> torch.Tensor:
        base = nn.functional.interpolate(torch.rand(batch, 3, 8, 8, generator=gen), size=(side, side),
                                         mode="bilinear", align_corners=False)
        angle = torch.rand(batch, 1, 1, generator=gen) * math.pi
        freq = 2 + 6 * torch.rand(batch, 1, 1, generator=gen)
        grating = torch.sin(freq * (xx * torch.cos(angle) + yy * torch.sin(angle)) * math.pi)
        return (0.7 * base + 0.3 * (grating[:, None] + 1) / 2).clamp(0, 1)

    def view(x: torch.Tensor, p_blur: float, p_solar: float) -> torch.Tensor:
        scale = torch.sqrt(0.2 + 0.8 * torch.rand(batch, generator=gen))
        aspect = torch.exp((torch.rand(batch, generator=gen) - 0.5) * 2 * math.log(4 / 3))
        sx, sy = (scale * aspect.sqrt()).clamp(max=1), (scale / aspect.sqrt()).clamp(max=1)
        flip = torch.where(torch.rand(batch, generator=gen) < 0.5, -1.0, 1.0)
        tx, ty = (1 - sx) * (2 * torch.rand(batch, generator=gen) - 1), (1 - sy) * (2 * torch.rand(batch, generator=gen) - 1)
        zero = torch.zeros(batch)
        theta = torch.stack([torch.stack([sx * flip, zero, tx], 1), torch.stack([zero, sy, ty], 1)], 1)
        x = nn.functional.grid_sample(x, nn.functional.affine_grid(theta, [batch, 3, side, side], align_corners=False),
                                      mode="bilinear", padding_mode="reflection", align_corners=False)
        jitter = (torch.rand(batch, 1, 1, 1, generator=gen) < 0.8)
        bright = 1 + 0.4 * (2 * torch.rand(batch, 1, 1, 1, generator=gen) - 1)
        contrast = 1 + 0.4 * (2 * torch.rand(batch, 1, 1, 1, generator=gen) - 1)
        satur = 1 + 0.2 * (2 * torch.rand(batch, 1, 1, 1, generator=gen) - 1)
        y = (x * bright).clamp(0, 1)
        mean = (y * grey).sum(1, keepdim=True).mean((2, 3), keepdim=True)
        y = ((y - mean) * contrast + mean).clamp(0, 1)
        g = (y * grey).sum(1, keepdim=True)
        y = ((y - g) * satur + g).clamp(0, 1)
        x = torch.where(jitter, y, x)
        x = torch.where(torch.rand(batch, 1, 1, 1, generator=gen) < 0.2, (x * grey).sum(1, keepdim=True).expand_as(x), x)
        blurred = nn.functional.conv2d(nn.functional.pad(x, (2, 2, 2, 2), mode="reflect"), blur, groups=3)
        x = torch.where(torch.rand(batch, 1, 1, 1, generator=gen) < p_blur, blurred, x)
        solar = (torch.rand(batch, 1, 1, 1, generator=gen) < p_solar) & (x >= 0.5)
        x = torch.where(solar, 1 - x, x)
        return (x - 0.45) / 0.25

    total = 0.0
    for step in range(steps):
        x = images()
        y1, y2 = view(x, 1.0, 0.0), view(x, 0.1, 0.2)
        warm = min(1.0, (step + 1) / 10)
        opt.param_groups[0]["lr"] = 0.2 * batch / 256 * warm
        opt.param_groups[1]["lr"] = 0.0048 * batch / 256 * warm
        opt.zero_grad(set_to_none=True)
        z1 = model["projector"](model["backbone"](y1))
        z2 = model["projector"](model["backbone"](y2))
        c = model["bn"](z1).T @ model["bn"](z2)
        c.div_(batch)
        on_diag = torch.diagonal(c).add_(-1).pow_(2).sum()
        off_diag = off_diagonal(c).pow_(2).sum()
        loss = on_diag + lambd * off_diag
        loss.backward()
        opt.step()
        total += loss.item()
    return total


@_workload(default_steps=5)
def convlstm_predict_train(*, steps: int, seed: int) -> float:
    """ConvLSTM video prediction (Shi et al. 2015) on drawn Moving-MNIST-style clips, trained as
    thuml's predrnn-pytorch trains its recurrent predictors: batch 8 clips (predrnn-pytorch's batch)
    of 20 frames of 64 x 64 (two drawn 16 x 16 glyphs, each a blurred random stroke pattern of 10
    fixed ones, bouncing off the borders with drawn positions and velocities; the data generator, in
    numpy), reshaped into 4 x 4 patches (reshape_patch: 16 channels of 16 x 16); a stack of 3
    ConvLSTM cells of 128, 64 and 64 channels (kernel 5, as ndrplz's ConvLSTM_pytorch: one Conv2d
    over the concatenated input and hidden state to the four gates, chunk, sigmoid and tanh) run
    over the 19 transitions, the frame fed at t >= 10 mixed by scheduled sampling (a per-clip,
    per-frame Bernoulli mask, the true frame where it is 1 and the last prediction where it is 0,
    its probability falling by 0.1 a step from 1), a 1 x 1 Conv2d from the top hidden state to the
    next frame's patches; MSE against frames 1-19, Adam 1e-3, gradients clipped at 1. Every state
    and gate of the 19 x 3 cell steps waits for the backward. Fixed shapes (every step allocates the
    same sizes in the same order); 5 steps. predrnn-pytorch's own stacks (4 layers of 128) at batch
    8 gave 796.69 MiB and 30,802 events, so 3 cells of 128, 64 and 64 (374.56 MiB)."""
    torch.manual_seed(0)
    batch, frames, t_in, side, patch, glyph = 8, 20, 10, 64, 4, 16
    hidden = (128, 64, 64)
    ch, small = patch * patch, side // patch

    class Cell(nn.Module):
        def __init__(self, cin: int, hid: int) -> None:
            super().__init__()
            self.conv = nn.Conv2d(cin + hid, 4 * hid, 5, padding=2)

        def forward(self, x: torch.Tensor, h: torch.Tensor, c: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
            i, f, g, o = self.conv(torch.cat([x, h], 1)).chunk(4, 1)
            c = torch.sigmoid(f) * c + torch.sigmoid(i) * torch.tanh(g)
            return torch.sigmoid(o) * torch.tanh(c), c

    class Predictor(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.cells = nn.ModuleList(Cell(ch if i == 0 else hidden[i - 1], h) for i, h in enumerate(hidden))
            self.last = nn.Conv2d(hidden[-1], ch, 1, bias=False)

        def forward(self, seq: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
            hs = [seq.new_zeros(batch, h, small, small) for h in hidden]
            cs = [seq.new_zeros(batch, h, small, small) for h in hidden]
            out, x_gen = [], seq[:, 0]
            for t in range(frames - 1):
                net = seq[:, t] if t < t_in else mask[:, t - t_in] * seq[:, t] + (1 - mask[:, t - t_in]) * x_gen
                for i, cell in enumerate(self.cells):
                    hs[i], cs[i] = cell(net if i == 0 else hs[i - 1], hs[i], cs[i])
                x_gen = self.last(hs[-1])
                out.append(x_gen)
            return torch.stack(out, 1)

    model = Predictor()
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    rng = np.random.default_rng(141 + seed)
    shapes = np.zeros((10, glyph, glyph), np.float32)
    for k in range(10):
        pts = np.cumsum(rng.integers(-1, 2, size=(40, 2)), 0) + glyph // 2
        pts = np.clip(pts, 2, glyph - 3)
        shapes[k, pts[:, 0], pts[:, 1]] = 1.0
        shapes[k] = np.clip(shapes[k] + 0.5 * (np.roll(shapes[k], 1, 0) + np.roll(shapes[k], 1, 1)), 0, 1)

    def clips() -> torch.Tensor:
        video = np.zeros((batch, frames, side, side), np.float32)
        for b in range(batch):
            for _ in range(2):
                g = shapes[rng.integers(10)]
                pos = rng.uniform(0, side - glyph, 2)
                vel = rng.uniform(-3, 3, 2)
                for t in range(frames):
                    for a in range(2):
                        if not 0 <= pos[a] + vel[a] <= side - glyph:
                            vel[a] = -vel[a]
                        pos[a] += vel[a]
                    y, x = int(pos[0]), int(pos[1])
                    video[b, t, y:y + glyph, x:x + glyph] = np.maximum(video[b, t, y:y + glyph, x:x + glyph], g)
        patches = video.reshape(batch, frames, small, patch, small, patch).transpose(0, 1, 3, 5, 2, 4)
        return torch.from_numpy(np.ascontiguousarray(patches.reshape(batch, frames, ch, small, small)))

    total = 0.0
    for step in range(steps):
        seq = clips()
        eta = max(0.0, 1.0 - 0.1 * step)
        mask = torch.from_numpy((rng.random((batch, frames - 1 - t_in, 1, 1, 1)) < eta).astype(np.float32))
        opt.zero_grad(set_to_none=True)
        pred = model(seq, mask)
        loss = nn.functional.mse_loss(pred, seq[:, 1:])
        loss.backward()
        nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        total += loss.item()
    return total


@_workload(default_steps=5)
def dcnv2_ctr_train(*, steps: int, seed: int) -> float:
    """DCN-V2 click-through-rate model (Wang et al. 2021) with the mixture of low-rank cross experts
    (DCN-Mix, as DeepCTR-Torch's CrossNetMix and DCNMix, parallel structure) on drawn Criteo-layout
    rows: batch 2048 of 13 count features (drawn from exponentials, log(1 + x) as the reference
    preprocessing does) and 26 categorical fields whose raw ids are drawn from per-field power laws
    over vocabularies of 10^3-10^7 values and mapped by the hashing trick (a multiplicative hash of
    the raw id salted by its field, modulo 2^19) into one shared embedding table of 2^19 x 16 (dense
    gradients); clicks drawn from a fixed drawn teacher (a logistic over the counts and per-field
    hashed effects; the data generator). x0 = the 13 counts beside the 26 embeddings (429); a cross
    network of 3 layers (DeepCTR's default 2), each 4 experts of rank 64 (its default 32) (x0 * (U
    tanh(C tanh(V^T x)) + b), gated by a softmax over 4 linear gates, plus x), beside a deep network
    429-1024-1024-512 (ReLU, BatchNorm), both concatenated into a logit; binary cross-entropy plus
    the reference's L2 on the cross weights, Adam 1e-3. Fixed shapes (every step allocates the same
    sizes in the same order); 5 steps. The hashed table stands for the per-field vocabularies of
    tens of millions of rows a real Criteo model holds (one shared table of 2^19 rows is 32 MiB, 128
    MiB with its gradient and Adam's state); batch 4096 gave 450.38 MiB, so 2048 (291.40 MiB)."""
    torch.manual_seed(0)
    batch, n_dense, n_cat, dim, rows = 2048, 13, 26, 16, 1 << 19
    d0, experts, rank, depth = n_dense + n_cat * dim, 4, 64, 3

    class CrossNetMix(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.U = nn.Parameter(nn.init.xavier_normal_(torch.empty(depth, experts, d0, rank)))
            self.V = nn.Parameter(nn.init.xavier_normal_(torch.empty(depth, experts, d0, rank)))
            self.C = nn.Parameter(nn.init.xavier_normal_(torch.empty(depth, experts, rank, rank)))
            self.gating = nn.ModuleList(nn.Linear(d0, 1, bias=False) for _ in range(experts))
            self.bias = nn.Parameter(torch.zeros(depth, d0, 1))

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            x0 = x.unsqueeze(2)
            xl = x0
            for i in range(depth):
                outs, gates = [], []
                for e in range(experts):
                    gates.append(self.gating[e](xl.squeeze(2)))
                    v = torch.tanh(torch.matmul(self.V[i, e].t(), xl))
                    v = torch.tanh(torch.matmul(self.C[i, e], v))
                    uv = torch.matmul(self.U[i, e], v)
                    outs.append((x0 * (uv + self.bias[i])).squeeze(2))
                out = torch.stack(outs, 2)
                gate = torch.softmax(torch.stack(gates, 1), 1)
                xl = torch.matmul(out, gate) + xl
            return xl.squeeze(2)

    class DCNMix(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.table = nn.Embedding(rows, dim)
            nn.init.normal_(self.table.weight, std=1e-4)
            self.cross = CrossNetMix()
            deep: list[nn.Module] = []
            for cin, cout in ((d0, 1024), (1024, 1024), (1024, 512)):
                deep += [nn.Linear(cin, cout), nn.BatchNorm1d(cout), nn.ReLU()]
            self.deep = nn.Sequential(*deep)
            self.out = nn.Linear(d0 + 512, 1, bias=False)

        def forward(self, dense: torch.Tensor, hashed: torch.Tensor) -> torch.Tensor:
            x = torch.cat([dense, self.table(hashed).flatten(1)], 1)
            return self.out(torch.cat([self.cross(x), self.deep(x)], 1)).squeeze(1)

    model = DCNMix()
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    gen = torch.Generator().manual_seed(142 + seed)
    vocab = torch.round(10 ** (3 + 4 * torch.rand(n_cat, generator=gen)))
    power = 2 + 4 * torch.rand(n_cat, generator=gen)
    rate = torch.exp(2 * torch.randn(n_dense, generator=gen))
    w_dense = torch.randn(n_dense, generator=gen) / 2
    effects = torch.randn(n_cat, 4096, generator=gen) / 3
    salt = torch.arange(1, n_cat + 1, dtype=torch.long) * 0x9E3779B1
    field = torch.arange(n_cat)
    total = 0.0
    for _ in range(steps):
        counts = torch.floor(-torch.log(torch.rand(batch, n_dense, generator=gen)) * rate)
        raw = torch.floor(torch.rand(batch, n_cat, generator=gen) ** power * vocab).long()
        hashed = ((raw * 2654435761 + salt) % 2147483647) % rows
        dense = torch.log1p(counts)
        z = (dense - dense.mean(0)) @ w_dense + effects[field, raw % 4096].sum(1) - 1.0
        clicks = (torch.rand(batch, generator=gen) < torch.sigmoid(z)).float()
        opt.zero_grad(set_to_none=True)
        logits = model(dense, hashed)
        reg = sum((w ** 2).sum() for w in (model.cross.U, model.cross.V, model.cross.C))
        loss = nn.functional.binary_cross_entropy_with_logits(logits, clicks) + 1e-5 * reg
        loss.backward()
        opt.step()
        total += loss.item()
    return total


@_workload(default_steps=5)
def set_transformer_train(*, steps: int, seed: int) -> float:
    """Set Transformer amortized clustering (Lee et al. 2019, as juho-lee's set_transformer,
    mixture_of_mvn.py and modules.py): each step a batch of 16 sets, each of N 2-d points drawn from
    its own mixture of 4 Gaussians (centres uniform in [-4, 4], drawn mixture weights, scale 0.3-1),
    N drawn per step in 500-2000 and shared by the batch's sets (the data generator); the model of
    the reference, width 128, 4 heads, LayerNorm on: an encoder of two ISABs (32 learned inducing
    points attend to the set, then the set attends to those 32; the heads split by Q.split and
    torch.cat along the batch, as modules.py does), a decoder of PMA (4 seeds), two SABs and a
    linear to 4 x (1 + 2 + 2): mixture logits, means and softplus scales; loss the negative mean
    log-likelihood of the set's points under the predicted mixture (logsumexp over the 4 components
    of a diagonal Gaussian), Adam 1e-3. Every per-point tensor (B x N x 128, the B*heads x N x 32
    attention maps) follows the drawn N; 5 steps. Grown, not shrunk: the reference's batch of 10
    sets of 300-600 points peaks at 67.76 MiB, below the held-out range, so 16 sets of 500-2000
    (374.79 MiB)."""
    torch.manual_seed(0)
    batch, dim, heads, inds, k = 16, 128, 4, 32, 4
    n_min, n_max = 500, 2000

    class MAB(nn.Module):
        def __init__(self, dim_q: int, dim_k: int) -> None:
            super().__init__()
            self.fc_q, self.fc_k, self.fc_v = nn.Linear(dim_q, dim), nn.Linear(dim_k, dim), nn.Linear(dim_k, dim)
            self.ln0, self.ln1, self.fc_o = nn.LayerNorm(dim), nn.LayerNorm(dim), nn.Linear(dim, dim)

        def forward(self, q: torch.Tensor, key: torch.Tensor) -> torch.Tensor:
            q = self.fc_q(q)
            kk, v = self.fc_k(key), self.fc_v(key)
            split = dim // heads
            q_, k_, v_ = (torch.cat(t.split(split, 2), 0) for t in (q, kk, v))
            a = torch.softmax(q_.bmm(k_.transpose(1, 2)) / math.sqrt(dim), 2)
            o = self.ln0(torch.cat((q_ + a.bmm(v_)).split(q.size(0), 0), 2))
            return self.ln1(o + torch.relu(self.fc_o(o)))

    class ISAB(nn.Module):
        def __init__(self, dim_in: int) -> None:
            super().__init__()
            self.points = nn.Parameter(nn.init.xavier_uniform_(torch.empty(1, inds, dim)))
            self.mab0, self.mab1 = MAB(dim, dim_in), MAB(dim_in, dim)

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            return self.mab1(x, self.mab0(self.points.repeat(x.size(0), 1, 1), x))

    class SetTransformer(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.enc = nn.Sequential(ISAB(2), ISAB(dim))
            self.seeds = nn.Parameter(nn.init.xavier_uniform_(torch.empty(1, k, dim)))
            self.pma, self.sab1, self.sab2 = MAB(dim, dim), MAB(dim, dim), MAB(dim, dim)
            self.out = nn.Linear(dim, 1 + 2 + 2)

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            h = self.enc(x)
            s = self.pma(self.seeds.repeat(x.size(0), 1, 1), h)
            s = self.sab1(s, s)
            return self.out(self.sab2(s, s))

    model = SetTransformer()
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    gen = torch.Generator().manual_seed(143 + seed)
    total = 0.0
    for _ in range(steps):
        n = int(torch.randint(n_min, n_max + 1, (1,), generator=gen))
        centres = 8 * torch.rand(batch, k, 2, generator=gen) - 4
        weights = torch.softmax(torch.randn(batch, k, generator=gen), 1)
        scale = 0.3 + 0.7 * torch.rand(batch, k, 1, generator=gen)
        comp = torch.multinomial(weights, n, replacement=True, generator=gen)
        pick = comp[..., None].expand(-1, -1, 2)
        x = centres.gather(1, pick) + scale.expand(-1, -1, 2).gather(1, pick) * torch.randn(batch, n, 2, generator=gen)
        opt.zero_grad(set_to_none=True)
        params = model(x)
        logits, mu, sigma = params[..., 0], params[..., 1:3], nn.functional.softplus(params[..., 3:5]) + 1e-3
        diff = (x[:, :, None, :] - mu[:, None]) / sigma[:, None]
        logp = (-0.5 * diff ** 2 - torch.log(sigma[:, None]) - 0.5 * math.log(2 * math.pi)).sum(-1)
        ll = torch.logsumexp(torch.log_softmax(logits, -1)[:, None] + logp, -1)
        loss = -ll.mean()
        loss.backward()
        opt.step()
        total += loss.item()
    return total


@_workload(default_steps=5)
def glow_tts_train(*, steps: int, seed: int) -> float:
    """Glow-TTS (Kim et al. 2020, as jaywalnut310's glow-tts, base.json with mean_only) trained with
    monotonic alignment search: batch 8 utterances of 10-30 drawn phonemes (80 symbols) with drawn
    durations (a per-phoneme mean of 2-6 frames times a log-normal factor, 1-16 frames), an 80-bin
    mel target (a drawn template per symbol held for its frames, plus noise; the data generator);
    the mel lengths follow the draws, trimmed to even (n_sqz 2). Text encoder: embedding 192 x
    sqrt(192), the reference's prenet (3 ConvReluNorm layers, kernel 5), 3 encoder layers of 2-head
    self-attention with a key mask (the reference's relative-position window left out) and a conv
    feed-forward 768 of kernel 3, post-LayerNorm, a 1 x 1 projection to the 80 means (log-scales 0:
    mean_only), a duration predictor (2 conv layers 256, kernel 3, ReLU, LayerNorm) on the detached
    encoder output. Flow decoder over the mel squeezed to 160 channels at half the frames: 4 blocks
    of ActNorm (data-dependent init on the first batch), InvConvNear (invertible 1 x 1 convolution
    over groups of 4 channels, conv2d, logdet) and an affine coupling layer whose WaveNet (WN) has 4
    layers of width 192, kernel 5, weight-normalised convolutions
    (torch.nn.utils.parametrizations.weight_norm), gated tanh/sigmoid units, residual and skip
    outputs, a zero-initialised end convolution. Monotonic alignment search under no_grad: the
    log-likelihood of every frame under every phoneme's Gaussian (B x T_text x T_mel, by a matmul
    and two sums), then the most likely monotonic path by a pure-PyTorch port of Coqui TTS's
    maximum_path_numpy: a Python loop over the mel frames (pad, compare, where, add on B x T_text
    tensors, the directions stored), then a backtracking loop writing the path frame by frame. The
    path expands the means to the frames; loss the flow's negative log-likelihood (with the logdets)
    plus the MSE of log durations; Adam (0.9, 0.98) under the Noam schedule (warm-up 4000, scale 1),
    gradient values clipped at 5. The text and mel lengths (and so every tensor of the encoder, the
    flow, the search's loops and their count) follow the data; 5 steps. Shrunk from base.json (6
    encoder layers, 12 flow blocks; the paper's batch 32) on 16-48 phonemes, which gave 124,960
    events and 640.51 MiB; 4 encoder layers and 8 blocks on 12-36 phonemes 88,080 events (392.78
    MiB), 3 and 6 on 10-30 70,316 (287.11 MiB), on 8-24 66,208: each flow block costs about 1,270
    events a step (weight norm recomputes 9 weights a block), so 3 encoder layers and 4 blocks on
    10-30 phonemes (57,604 events, 213.83 MiB)."""
    torch.manual_seed(0)
    batch, n_sym, hid, filt, n_mel, heads = 8, 80, 192, 768, 80, 2
    enc_layers, dec_blocks, wn_layers, sqz = 3, 4, 4, 2
    t_min, t_max = 10, 30
    wn = nn.utils.parametrizations.weight_norm

    class ChanLN(nn.Module):
        def __init__(self, c: int) -> None:
            super().__init__()
            self.ln = nn.LayerNorm(c)

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            return self.ln(x.transpose(1, 2)).transpose(1, 2)

    class EncLayer(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.attn = nn.MultiheadAttention(hid, heads, dropout=0.1, batch_first=True)
            self.norm1, self.norm2 = ChanLN(hid), ChanLN(hid)
            self.ff1, self.ff2 = nn.Conv1d(hid, filt, 3, padding=1), nn.Conv1d(filt, hid, 3, padding=1)
            self.drop = nn.Dropout(0.1)

        def forward(self, x: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
            xt = x.transpose(1, 2)
            y = self.attn(xt, xt, xt, key_padding_mask=~mask[:, 0].bool(), need_weights=False)[0].transpose(1, 2)
            x = self.norm1(x + self.drop(y)) * mask
            y = self.ff2(self.drop(torch.relu(self.ff1(x * mask))) * mask) * mask
            return self.norm2(x + self.drop(y)) * mask

    class TextEncoder(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.emb = nn.Embedding(n_sym, hid)
            nn.init.normal_(self.emb.weight, 0.0, hid ** -0.5)
            self.pre = nn.ModuleList(nn.Conv1d(hid, hid, 5, padding=2) for _ in range(3))
            self.pre_norm = nn.ModuleList(ChanLN(hid) for _ in range(3))
            self.pre_proj = nn.Conv1d(hid, hid, 1)
            nn.init.zeros_(self.pre_proj.weight)
            nn.init.zeros_(self.pre_proj.bias)
            self.layers = nn.ModuleList(EncLayer() for _ in range(enc_layers))
            self.proj_m = nn.Conv1d(hid, n_mel, 1)
            self.dp1, self.dp2 = nn.Conv1d(hid, 256, 3, padding=1), nn.Conv1d(256, 256, 3, padding=1)
            self.dp_n1, self.dp_n2, self.dp_out = ChanLN(256), ChanLN(256), nn.Conv1d(256, 1, 1)

        def forward(self, tokens: torch.Tensor, mask: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
            x = self.emb(tokens).transpose(1, 2) * math.sqrt(hid) * mask
            y = x
            for conv, norm in zip(self.pre, self.pre_norm):
                y = nn.functional.dropout(torch.relu(norm(conv(y * mask))), 0.5, self.training)
            x = (x + self.pre_proj(y)) * mask
            for layer in self.layers:
                x = layer(x, mask)
            d = x.detach()
            d = self.dp_n1(torch.relu(self.dp1(d * mask)))
            d = self.dp_n2(torch.relu(self.dp2(nn.functional.dropout(d, 0.1, self.training) * mask)))
            logw = self.dp_out(nn.functional.dropout(d, 0.1, self.training) * mask) * mask
            return self.proj_m(x) * mask, logw

    class ActNorm(nn.Module):
        def __init__(self, c: int) -> None:
            super().__init__()
            self.logs, self.bias = nn.Parameter(torch.zeros(1, c, 1)), nn.Parameter(torch.zeros(1, c, 1))
            self.initialized = False

        def forward(self, x: torch.Tensor, mask: torch.Tensor, length: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
            if not self.initialized:
                with torch.no_grad():
                    denom = mask.sum((0, 2))
                    m = (x * mask).sum((0, 2)) / denom
                    v = (x * x * mask).sum((0, 2)) / denom - m ** 2
                    logs = 0.5 * torch.log(torch.clamp_min(v, 1e-6))
                    self.bias.copy_((-m * torch.exp(-logs)).view(1, -1, 1))
                    self.logs.copy_((-logs).view(1, -1, 1))
                self.initialized = True
            return (self.bias + torch.exp(self.logs) * x) * mask, torch.sum(self.logs) * length

    class InvConvNear(nn.Module):
        def __init__(self, c: int, n_split: int = 4) -> None:
            super().__init__()
            self.c, self.n_split = c, n_split
            w = torch.linalg.qr(torch.randn(n_split, n_split))[0]
            if torch.det(w) < 0:
                w[:, 0] = -w[:, 0]
            self.weight = nn.Parameter(w)

        def forward(self, x: torch.Tensor, mask: torch.Tensor, length: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
            b, c, t = x.shape
            ns = self.n_split
            x = x.view(b, 2, c // ns, ns // 2, t).permute(0, 1, 3, 2, 4).contiguous().view(b, ns, c // ns, t)
            logdet = torch.logdet(self.weight) * (c / ns) * length
            z = nn.functional.conv2d(x, self.weight.view(ns, ns, 1, 1))
            z = z.view(b, 2, ns // 2, c // ns, t).permute(0, 1, 3, 2, 4).contiguous().view(b, c, t) * mask
            return z, logdet

    class Coupling(nn.Module):
        def __init__(self, c: int) -> None:
            super().__init__()
            self.start = wn(nn.Conv1d(c // 2, hid, 1))
            self.ins = nn.ModuleList(wn(nn.Conv1d(hid, 2 * hid, 5, padding=2)) for _ in range(wn_layers))
            self.res_skip = nn.ModuleList(wn(nn.Conv1d(hid, 2 * hid if i < wn_layers - 1 else hid, 1))
                                          for i in range(wn_layers))
            self.end = nn.Conv1d(hid, c, 1)
            nn.init.zeros_(self.end.weight)
            nn.init.zeros_(self.end.bias)

        def forward(self, x: torch.Tensor, mask: torch.Tensor, length: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
            half = x.size(1) // 2
            x0, x1 = x[:, :half], x[:, half:]
            h = self.start(x0) * mask
            output = torch.zeros_like(h)
            for i in range(wn_layers):
                x_in = self.ins[i](h)
                acts = nn.functional.dropout(torch.tanh(x_in[:, :hid]) * torch.sigmoid(x_in[:, hid:]), 0.05, self.training)
                rs = self.res_skip[i](acts)
                if i < wn_layers - 1:
                    h = (h + rs[:, :hid]) * mask
                    output = output + rs[:, hid:]
                else:
                    output = output + rs
            out = self.end(output * mask)
            m, logs = out[:, :half], out[:, half:]
            z1 = (m + torch.exp(logs) * x1) * mask
            return torch.cat([x0, z1], 1), torch.sum(logs * mask, [1, 2])

    class Decoder(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            c = n_mel * sqz
            self.flows = nn.ModuleList()
            for _ in range(dec_blocks):
                self.flows.extend([ActNorm(c), InvConvNear(c), Coupling(c)])

        def forward(self, y: torch.Tensor, mask: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
            b, c, t = y.shape
            x = y.view(b, c, t // sqz, sqz).permute(0, 3, 1, 2).contiguous().view(b, c * sqz, t // sqz)
            m = mask[:, :, sqz - 1::sqz]
            x = x * m
            length = m.sum([1, 2])
            logdet = torch.zeros(b)
            for flow in self.flows:
                x, ld = flow(x, m, length)
                logdet = logdet + ld
            z = x.view(b, sqz, c, t // sqz).permute(0, 2, 3, 1).contiguous().view(b, c, t) * mask
            return z, logdet

    def maximum_path(value: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
        value = value * mask
        b, t_x, t_y = value.shape
        neg = -1e9
        direction = torch.zeros(b, t_x, t_y, dtype=torch.long)
        v = torch.zeros(b, t_x)
        x_range = torch.arange(t_x).view(1, -1)
        for j in range(t_y):
            v0 = nn.functional.pad(v, (1, 0), value=neg)[:, :-1]
            max_mask = v >= v0
            v_max = torch.where(max_mask, v, v0)
            direction[:, :, j] = max_mask
            v = torch.where(x_range <= j, v_max + value[:, :, j], neg)
        direction = torch.where(mask.bool(), direction, 1)
        path = torch.zeros(b, t_x, t_y)
        index = mask[:, :, 0].sum(1).long() - 1
        rows = torch.arange(b)
        for j in reversed(range(t_y)):
            path[rows, index, j] = 1
            index = index + direction[rows, index, j] - 1
        return path * mask

    encoder, decoder = TextEncoder(), Decoder()
    model = nn.ModuleList([encoder, decoder])
    opt = torch.optim.Adam(model.parameters(), lr=1.0, betas=(0.9, 0.98), eps=1e-9)
    sched = torch.optim.lr_scheduler.LambdaLR(
        opt, lambda s: hid ** -0.5 * min((s + 1) ** -0.5, (s + 1) * 4000 ** -1.5))
    gen = torch.Generator().manual_seed(144 + seed)
    templates = torch.randn(n_sym, n_mel, generator=gen)
    mean_dur = 2 + 4 * torch.rand(n_sym, generator=gen)
    total = 0.0
    for _ in range(steps):
        t_len = torch.randint(t_min, t_max + 1, (batch,), generator=gen)
        texts = [torch.randint(1, n_sym, (int(n),), generator=gen) for n in t_len]
        durs = [torch.clamp(torch.round(mean_dur[t] * torch.exp(0.3 * torch.randn(len(t), generator=gen))), 1, 16).long()
                for t in texts]
        mels = []
        for t, d in zip(texts, durs):
            frames = templates[t].repeat_interleave(d, 0)
            frames = frames[:len(frames) // sqz * sqz]
            mels.append(frames + 0.3 * torch.randn(frames.shape, generator=gen))
        y_len = torch.tensor([len(m) for m in mels])
        tokens = nn.utils.rnn.pad_sequence(texts, batch_first=True)
        y = nn.utils.rnn.pad_sequence(mels, batch_first=True).transpose(1, 2)
        x_mask = (torch.arange(tokens.size(1))[None] < t_len[:, None]).float()[:, None]
        y_mask = (torch.arange(y.size(2))[None] < y_len[:, None]).float()[:, None]
        opt.zero_grad(set_to_none=True)
        x_m, logw = encoder(tokens, x_mask)
        z, logdet = decoder(y, y_mask)
        attn_mask = x_mask.transpose(1, 2) * y_mask
        with torch.no_grad():
            logp = (torch.matmul(x_m.transpose(1, 2), z) - 0.5 * (x_m ** 2).sum(1)[..., None]
                    - 0.5 * (z ** 2).sum(1)[:, None] - 0.5 * n_mel * math.log(2 * math.pi))
            attn = maximum_path(logp, attn_mask)
        z_m = torch.matmul(attn.transpose(1, 2), x_m.transpose(1, 2)).transpose(1, 2)
        logw_ = torch.log(1e-8 + attn.sum(-1))[:, None] * x_mask
        l_mle = (0.5 * torch.sum((z - z_m) ** 2 * y_mask) - logdet.sum()) / (y_mask.sum() * n_mel) \
            + 0.5 * math.log(2 * math.pi)
        l_dur = torch.sum((logw - logw_) ** 2) / t_len.sum()
        loss = l_mle + l_dur
        loss.backward()
        nn.utils.clip_grad_value_(model.parameters(), 5.0)
        opt.step()
        sched.step()
        total += loss.item()
    return total


@_workload(default_steps=5)
def spacebyte_lm_train(*, steps: int, seed: int) -> float:
    """A tokenizer-free byte-level language model with dynamic patches, SpaceByte (Slagle 2024, as
    kjslag's spacebyte): batch 4 rows of 1024 bytes cut from a drawn text stream (words of 1-12
    letters from a 4000-word lexicon drawn under a power law, some capitalised, separated by spaces,
    punctuation and newlines; the data generator); byte embedding to width 192 and learned
    positions, 2 local pre-norm transformer blocks (causal scaled_dot_product_attention, 4 heads,
    GELU MLP 4x), then global blocks only at the patch boundaries SpaceByte uses: the bytes that are
    "spacelike" (not a letter, digit or UTF-8 continuation byte) following one that is not, plus the
    first byte. Those positions are gathered (nonzero, cumsum, an index tensor padded to the batch's
    largest patch count), zero-padded from 192 to 384, run through 4 causal blocks of width 384 (8
    heads, MLP 4x) with a key-padding mask, cut back to 192 and added into the byte stream by
    scatter_add, then 2 more local blocks, a final LayerNorm and a head to the 256 bytes tied to the
    embedding; next-byte cross-entropy, AdamW (0.9, 0.98; weight decay 0.01) with warm-up, gradients
    clipped at 1. The patch count (the global blocks' sequence length, their attention masks and the
    gather and scatter indices) follows the text drawn; 5 steps. The published models are far
    larger; here batch 8 x 512 bytes with widths 256 and 512 gave 538.15 MiB, widths 256 and 384
    457.83 MiB (4 x 1024 bytes 457.16 MiB), so 4 x 1024 bytes with widths 192 and 384 (372.21 MiB;
    17,006 events in each)."""
    torch.manual_seed(0)
    batch, seq, d_local, d_global = 4, 1024, 192, 384
    n_local_a, n_local_b, n_global = 2, 2, 4

    class Block(nn.Module):
        def __init__(self, width: int, heads: int) -> None:
            super().__init__()
            self.heads = heads
            self.n1, self.n2 = nn.LayerNorm(width), nn.LayerNorm(width)
            self.qkv, self.proj = nn.Linear(width, 3 * width), nn.Linear(width, width)
            self.fc1, self.fc2 = nn.Linear(width, 4 * width), nn.Linear(4 * width, width)

        def forward(self, x: torch.Tensor, mask: torch.Tensor | None = None) -> torch.Tensor:
            b, t, w = x.shape
            q, k, v = self.qkv(self.n1(x)).view(b, t, 3, self.heads, w // self.heads).permute(2, 0, 3, 1, 4)
            if mask is None:
                a = nn.functional.scaled_dot_product_attention(q, k, v, is_causal=True)
            else:
                a = nn.functional.scaled_dot_product_attention(q, k, v, attn_mask=mask)
            x = x + self.proj(a.transpose(1, 2).reshape(b, t, w))
            return x + self.fc2(nn.functional.gelu(self.fc1(self.n2(x))))

    class SpaceByte(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.emb, self.pos = nn.Embedding(256, d_local), nn.Parameter(torch.randn(seq, d_local) * 0.02)
            self.local_a = nn.ModuleList(Block(d_local, 4) for _ in range(n_local_a))
            self.glob = nn.ModuleList(Block(d_global, 8) for _ in range(n_global))
            self.local_b = nn.ModuleList(Block(d_local, 4) for _ in range(n_local_b))
            self.norm = nn.LayerNorm(d_local)

        def forward(self, data: torch.Tensor) -> torch.Tensor:
            b, t = data.shape
            x = self.emb(data) + self.pos[:t]
            for block in self.local_a:
                x = block(x)
            letter = ((data >= 48) & (data <= 57)) | ((data >= 65) & (data <= 90)) | ((data >= 97) & (data <= 122))
            spacelike = ~letter & ((data < 128) | (data >= 192))
            starts = spacelike.clone()
            starts[:, 1:] &= ~spacelike[:, :-1]
            starts[:, 0] = True
            counts = starts.sum(1)
            patches = int(counts.max())
            rows, cols = starts.nonzero(as_tuple=True)
            rank = starts.cumsum(1) - 1
            index = torch.zeros(b, patches, dtype=torch.long)
            index[rows, rank[rows, cols]] = cols
            valid = torch.arange(patches)[None] < counts[:, None]
            gathered = x.gather(1, index[..., None].expand(-1, -1, d_local))
            g = nn.functional.pad(gathered, (0, d_global - d_local))
            causal = torch.ones(patches, patches, dtype=torch.bool).tril()
            mask = (causal[None] & valid[:, None, :])[:, None]
            for block in self.glob:
                g = block(g, mask)
            back = g[..., :d_local] * valid[..., None]
            x = x.scatter_add(1, index[..., None].expand(-1, -1, d_local), back)
            for block in self.local_b:
                x = block(x)
            return self.norm(x) @ self.emb.weight.t()

    model = SpaceByte()
    decay = [p for p in model.parameters() if p.ndim >= 2]
    no_decay = [p for p in model.parameters() if p.ndim < 2]
    opt = torch.optim.AdamW([{"params": decay, "weight_decay": 0.01}, {"params": no_decay, "weight_decay": 0.0}],
                            lr=1e-3, betas=(0.9, 0.98))
    sched = torch.optim.lr_scheduler.LambdaLR(opt, lambda s: min(1.0, (s + 1) / 4))
    rng = np.random.default_rng(145 + seed)
    letters = np.frombuffer(b"etaoinshrdlcumwfgypbvkjxqz", dtype=np.uint8)
    letter_p = 1.0 / np.arange(1, 27) ** 0.9
    letter_p /= letter_p.sum()
    lexicon = [bytes(rng.choice(letters, size=int(rng.integers(1, 13)), p=letter_p)) for _ in range(4000)]
    word_p = 1.0 / np.arange(1, 4001) ** 1.1
    word_p /= word_p.sum()
    seps = [b" "] * 12 + [b", ", b". ", b"\n", b"; ", b" (", b") ", b" - ", b"? ", b"\n\n"]

    def text(n: int) -> np.ndarray:
        out, size = [], 0
        while size < n:
            w = lexicon[int(rng.choice(4000, p=word_p))]
            if rng.random() < 0.08:
                w = w[:1].upper() + w[1:]
            piece = w + seps[int(rng.integers(len(seps)))]
            out.append(piece)
            size += len(piece)
        return np.frombuffer(b"".join(out)[:n], dtype=np.uint8).astype(np.int64)

    total = 0.0
    for _ in range(steps):
        data = torch.from_numpy(np.stack([text(seq + 1) for _ in range(batch)]))
        x, y = data[:, :-1], data[:, 1:]
        opt.zero_grad(set_to_none=True)
        logits = model(x)
        loss = nn.functional.cross_entropy(logits.reshape(-1, 256), y.reshape(-1))
        loss.backward()
        nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        sched.step()
        total += loss.item()
    return total


@_workload(default_steps=5)
def conv_tasnet_train(*, steps: int, seed: int) -> float:
    """Conv-TasNet two-speaker separation (Luo and Mesgarani 2019, as kaituoxu's Conv-TasNet,
    conv_tasnet.py and pit_criterion.py): batch 2 mixtures of 1 s at 8 kHz (16,000 samples) of two
    drawn voiced sources (a drawn f0 of 80-300 Hz with glide and vibrato, 6 harmonics of drawn
    amplitudes and phases under a syllable-rate envelope, plus noise; unit RMS, the second scaled by
    a drawn -5 to 5 dB; the data generator); the reference's model with N 256 filters of length L 16
    (stride 8: 1,999 frames), a ReLU'd Conv1d encoder, a separator of channel-wise LayerNorm, a 1 x 1
    bottleneck to B 128 and R 2 repeats of X 8 temporal blocks (1 x 1 conv to H 256, PReLU, global
    LayerNorm, depthwise dilated conv of kernel 3 with dilations 1-128, PReLU, global LayerNorm, 1 x 1
    conv back to 128, residual), a 1 x 1 conv to 2 x 256 ReLU masks, the masked encodings through
    the reference's basis Linear(256, 16) and an overlap-add (nn.functional.fold); loss the
    reference's utterance-level PIT over scale-invariant SNR (zero-mean, the pairwise B x 2 x 2 x T
    projections and noise terms, both permutations by one-hot einsum, the best kept); Adam 1e-3,
    gradients clipped at 5. Fixed shapes (every step allocates the same sizes in the same order);
    5 steps. Shrunk from the paper's best (N 512, B 128, H 512, X 8, R 3) on kaituoxu's batch 3 of
    4 s segments (not run: several times the limit): with N 256, H 256, R 2, batch 2 of 2 s gave
    722.66 MiB (42,972 events), so 1 s (367.94 MiB, the same events)."""
    torch.manual_seed(0)
    batch, rate, secs, n_spk = 2, 8000, 1, 2
    n_filt, win, b_ch, h_ch, kernel, x_blocks, repeats = 256, 16, 128, 256, 3, 8, 2
    length, hop, eps = rate * secs, win // 2, 1e-8

    class GlobalLayerNorm(nn.Module):
        def __init__(self, c: int) -> None:
            super().__init__()
            self.gamma, self.beta = nn.Parameter(torch.ones(1, c, 1)), nn.Parameter(torch.zeros(1, c, 1))

        def forward(self, y: torch.Tensor) -> torch.Tensor:
            mean = y.mean(dim=1, keepdim=True).mean(dim=2, keepdim=True)
            var = (torch.pow(y - mean, 2)).mean(dim=1, keepdim=True).mean(dim=2, keepdim=True)
            return self.gamma * (y - mean) / torch.pow(var + eps, 0.5) + self.beta

    class ChannelwiseLayerNorm(nn.Module):
        def __init__(self, c: int) -> None:
            super().__init__()
            self.gamma, self.beta = nn.Parameter(torch.ones(1, c, 1)), nn.Parameter(torch.zeros(1, c, 1))

        def forward(self, y: torch.Tensor) -> torch.Tensor:
            mean = torch.mean(y, dim=1, keepdim=True)
            var = torch.var(y, dim=1, keepdim=True, unbiased=False)
            return self.gamma * (y - mean) / torch.pow(var + eps, 0.5) + self.beta

    class TemporalBlock(nn.Module):
        def __init__(self, dilation: int) -> None:
            super().__init__()
            pad = (kernel - 1) * dilation // 2
            self.net = nn.Sequential(
                nn.Conv1d(b_ch, h_ch, 1, bias=False), nn.PReLU(), GlobalLayerNorm(h_ch),
                nn.Conv1d(h_ch, h_ch, kernel, padding=pad, dilation=dilation, groups=h_ch, bias=False),
                nn.PReLU(), GlobalLayerNorm(h_ch), nn.Conv1d(h_ch, b_ch, 1, bias=False))

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            return x + self.net(x)

    class ConvTasNet(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.encoder = nn.Conv1d(1, n_filt, win, stride=hop, bias=False)
            blocks = [TemporalBlock(2 ** x) for _ in range(repeats) for x in range(x_blocks)]
            self.separator = nn.Sequential(ChannelwiseLayerNorm(n_filt), nn.Conv1d(n_filt, b_ch, 1, bias=False),
                                           *blocks, nn.Conv1d(b_ch, n_spk * n_filt, 1, bias=False))
            self.basis = nn.Linear(n_filt, win, bias=False)

        def forward(self, mixture: torch.Tensor) -> torch.Tensor:
            m = mixture.size(0)
            mixture_w = torch.relu(self.encoder(mixture.unsqueeze(1)))
            k = mixture_w.size(2)
            est_mask = torch.relu(self.separator(mixture_w).view(m, n_spk, n_filt, k))
            source_w = torch.transpose(mixture_w.unsqueeze(1) * est_mask, 2, 3)
            frames = self.basis(source_w).view(m * n_spk, k, win).transpose(1, 2)
            out = nn.functional.fold(frames, output_size=(1, (k - 1) * hop + win), kernel_size=(1, win), stride=(1, hop))
            return out.view(m, n_spk, -1)

    def si_snr_pit(source: torch.Tensor, estimate: torch.Tensor) -> torch.Tensor:
        source = source - torch.mean(source, dim=-1, keepdim=True)
        estimate = estimate - torch.mean(estimate, dim=-1, keepdim=True)
        s_target, s_estimate = torch.unsqueeze(source, dim=1), torch.unsqueeze(estimate, dim=2)
        pair_wise_dot = torch.sum(s_estimate * s_target, dim=3, keepdim=True)
        s_target_energy = torch.sum(s_target ** 2, dim=3, keepdim=True) + eps
        pair_wise_proj = pair_wise_dot * s_target / s_target_energy
        e_noise = s_estimate - pair_wise_proj
        pair_wise_si_snr = torch.sum(pair_wise_proj ** 2, dim=3) / (torch.sum(e_noise ** 2, dim=3) + eps)
        pair_wise_si_snr = 10 * torch.log10(pair_wise_si_snr + eps)
        perms = source.new_tensor(list(itertools.permutations(range(n_spk))), dtype=torch.long)
        perms_one_hot = source.new_zeros((*perms.size(), n_spk)).scatter_(2, perms.unsqueeze(2), 1)
        snr_set = torch.einsum("bij,pij->bp", [pair_wise_si_snr, perms_one_hot])
        max_snr, _ = torch.max(snr_set, dim=1, keepdim=True)
        return 0 - torch.mean(max_snr / n_spk)

    model = ConvTasNet()
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    gen = torch.Generator().manual_seed(146 + seed)
    t = torch.arange(length) / rate
    harmonics = torch.arange(1, 7, dtype=torch.float32).view(6, 1, 1, 1)

    def utterances() -> tuple[torch.Tensor, torch.Tensor]:
        f0 = 80 + 220 * torch.rand(batch, n_spk, 1, generator=gen)
        glide = 1 + 0.3 * (torch.rand(batch, n_spk, 1, generator=gen) - 0.5) * t
        vibrato = 1 + 0.02 * torch.sin(2 * math.pi * (4 + 3 * torch.rand(batch, n_spk, 1, generator=gen)) * t)
        phase = 2 * math.pi * torch.cumsum(f0 * glide * vibrato / rate, -1)
        amps = 0.7 ** harmonics * (0.5 + torch.rand(6, batch, n_spk, 1, generator=gen))
        offs = 2 * math.pi * torch.rand(6, batch, n_spk, 1, generator=gen)
        voiced = (amps * torch.sin(harmonics * phase + offs)).sum(0)
        syll = 3 + 3 * torch.rand(batch, n_spk, 1, generator=gen)
        env = torch.sin(math.pi * (syll * t + torch.rand(batch, n_spk, 1, generator=gen))) ** 2
        src = voiced * env + 0.02 * torch.randn(batch, n_spk, length, generator=gen)
        src = src / src.pow(2).mean(-1, keepdim=True).sqrt()
        gain = 10 ** ((10 * torch.rand(batch, 1, 1, generator=gen) - 5) / 20)
        src = src * torch.cat([torch.ones(batch, 1, 1), gain], 1)
        return src.sum(1), src

    total = 0.0
    for _ in range(steps):
        mixture, sources = utterances()
        opt.zero_grad(set_to_none=True)
        loss = si_snr_pit(sources, model(mixture))
        loss.backward()
        nn.utils.clip_grad_norm_(model.parameters(), 5.0)
        opt.step()
        total += loss.item()
    return total


@_workload(default_steps=5)
def meshgraphnet_train(*, steps: int, seed: int) -> float:
    """MeshGraphNets (Pfaff et al. 2021, as deepmind's meshgraphnets, cfd_model.py / core_model.py /
    normalization.py) one-step training on a fixed cylinder-flow-style mesh: a 40 x 20 grid over the
    1.6 x 0.41 channel (interior nodes jittered once, by a generator of its own, the same for every
    seed) triangulated by its right, up
    and one diagonal edges, the nodes inside the cylinder (centre 0.33, 0.2, radius 0.05) removed,
    both directions of every edge kept; node types as the reference's NodeType (NORMAL, OBSTACLE
    round the cylinder, WALL_BOUNDARY, INFLOW, OUTFLOW; 9-way one-hot). Each step a drawn velocity
    field (a parabolic inflow profile of drawn speed plus 4 drawn sine modes, zero on the obstacle
    and walls) and its next frame by a fixed stand-in solver (a mesh Laplacian plus a quadratic
    drift); the reference's training noise (std 0.02 on NORMAL nodes only, the target corrected for
    it); node features velocity and node type, edge features the relative mesh position and its norm,
    each through the reference's online Normalizer (sums and squared sums accumulated every step, up
    to 10^6 accumulations); encoder MLPs (2 hidden layers of 128, ReLU, LayerNorm) for nodes and
    edges, 15 GraphNetBlocks (edge MLP over the gathered sender and receiver latents and the edge
    latent, 384 wide; the messages summed into the receivers by index_add, the reference's
    unsorted_segment_sum; node MLP over the node latent and that sum; residual on both), a decoder
    MLP to 2 without LayerNorm; loss the squared error to the normalised target acceleration, meaned
    over the NORMAL and OUTFLOW nodes (a boolean mask); Adam 1e-4 with the reference's exponential
    decay. Fixed shapes (the mesh is fixed; every step allocates the same sizes in the same order);
    5 steps. The reference's cylinder_flow meshes have about 1,900 nodes and 11,000 edges; the first
    size tried here, the 40 x 20 grid (790 nodes, 4,476 directed edges), gave 299.77 MiB and 39,474
    events, within the limits, so it was kept."""
    torch.manual_seed(0)
    nx, ny, latent, mp_steps, noise_std = 40, 20, 128, 15, 0.02
    normal, obstacle, inflow, outflow, wall, n_types = 0, 1, 4, 5, 6, 9
    gen = torch.Generator().manual_seed(147 + seed)
    lx, ly, cx, cy, radius = 1.6, 0.41, 0.33, 0.2, 0.05
    gx, gy = torch.meshgrid(torch.linspace(0, lx, nx), torch.linspace(0, ly, ny), indexing="ij")
    interior = (gx > 0) & (gx < lx) & (gy > 0) & (gy < ly)
    mesh_gen = torch.Generator().manual_seed(147)  # the mesh is the same for every seed; the frames are the data
    jitter = (torch.rand(nx, ny, 2, generator=mesh_gen) - 0.5) * torch.tensor([lx / nx, ly / ny]) * 0.4
    pos = torch.stack([gx, gy], -1) + jitter * interior[..., None]
    inside = (pos[..., 0] - cx) ** 2 + (pos[..., 1] - cy) ** 2 < radius ** 2
    keep = ~inside.flatten()
    new_id = torch.full((nx * ny,), -1, dtype=torch.long)
    new_id[keep] = torch.arange(int(keep.sum()))
    grid = torch.arange(nx * ny).view(nx, ny)
    pairs = torch.cat([torch.stack([grid[:-1, :].flatten(), grid[1:, :].flatten()], 1),
                       torch.stack([grid[:, :-1].flatten(), grid[:, 1:].flatten()], 1),
                       torch.stack([grid[:-1, :-1].flatten(), grid[1:, 1:].flatten()], 1)])
    pairs = new_id[pairs]
    pairs = pairs[(pairs >= 0).all(1)]
    senders = torch.cat([pairs[:, 0], pairs[:, 1]])
    receivers = torch.cat([pairs[:, 1], pairs[:, 0]])
    mesh_pos = pos.view(-1, 2)[keep]
    n_nodes = mesh_pos.size(0)
    near = ((mesh_pos[:, 0] - cx) ** 2 + (mesh_pos[:, 1] - cy) ** 2 < (radius + 1.5 * lx / nx) ** 2)
    node_type = torch.full((n_nodes,), normal, dtype=torch.long)
    node_type[near] = obstacle
    node_type[(mesh_pos[:, 1] <= 0) | (mesh_pos[:, 1] >= ly)] = wall
    node_type[mesh_pos[:, 0] <= 0] = inflow
    node_type[mesh_pos[:, 0] >= lx] = outflow
    one_hot = nn.functional.one_hot(node_type, n_types).float()
    loss_mask = (node_type == normal) | (node_type == outflow)
    rel = mesh_pos[senders] - mesh_pos[receivers]
    edge_raw = torch.cat([rel, rel.norm(dim=1, keepdim=True)], 1)

    class Normalizer(nn.Module):
        def __init__(self, size: int, max_accumulations: int = 10 ** 6) -> None:
            super().__init__()
            self.max_accumulations, self.std_epsilon = max_accumulations, 1e-8
            self.register_buffer("acc_count", torch.zeros(()))
            self.register_buffer("num_accumulations", torch.zeros(()))
            self.register_buffer("acc_sum", torch.zeros(size))
            self.register_buffer("acc_sum_squared", torch.zeros(size))

        def forward(self, batched: torch.Tensor, accumulate: bool = True) -> torch.Tensor:
            if accumulate and float(self.num_accumulations) < self.max_accumulations:
                self.acc_sum += batched.sum(0)
                self.acc_sum_squared += (batched ** 2).sum(0)
                self.acc_count += batched.size(0)
                self.num_accumulations += 1
            return (batched - self.mean()) / self.std()

        def inverse(self, normalized: torch.Tensor) -> torch.Tensor:
            return normalized * self.std() + self.mean()

        def mean(self) -> torch.Tensor:
            return self.acc_sum / self.acc_count.clamp(min=1)

        def std(self) -> torch.Tensor:
            var = self.acc_sum_squared / self.acc_count.clamp(min=1) - self.mean() ** 2
            return torch.sqrt(var.clamp(min=0)).clamp(min=self.std_epsilon)

    def mlp(cin: int, cout: int, norm: bool = True) -> nn.Sequential:
        layers: list[nn.Module] = [nn.Linear(cin, latent), nn.ReLU(), nn.Linear(latent, latent), nn.ReLU(),
                                   nn.Linear(latent, cout)]
        if norm:
            layers.append(nn.LayerNorm(cout))
        return nn.Sequential(*layers)

    class GraphNetBlock(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.edge_mlp, self.node_mlp = mlp(3 * latent, latent), mlp(2 * latent, latent)

        def forward(self, node: torch.Tensor, edge: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
            new_edge = self.edge_mlp(torch.cat([node[senders], node[receivers], edge], 1))
            agg = node.new_zeros(node.size(0), latent).index_add(0, receivers, new_edge)
            new_node = self.node_mlp(torch.cat([node, agg], 1))
            return node + new_node, edge + new_edge

    class MeshGraphNet(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.node_norm, self.edge_norm, self.out_norm = Normalizer(2 + n_types), Normalizer(3), Normalizer(2)
            self.node_enc, self.edge_enc = mlp(2 + n_types, latent), mlp(3, latent)
            self.blocks = nn.ModuleList(GraphNetBlock() for _ in range(mp_steps))
            self.decoder = mlp(latent, 2, norm=False)

        def forward(self, velocity: torch.Tensor) -> torch.Tensor:
            node = self.node_enc(self.node_norm(torch.cat([velocity, one_hot], 1), self.training))
            edge = self.edge_enc(self.edge_norm(edge_raw, self.training))
            for block in self.blocks:
                node, edge = block(node, edge)
            return self.decoder(node)

    model = MeshGraphNet()
    opt = torch.optim.Adam(model.parameters(), lr=1e-4)
    sched = torch.optim.lr_scheduler.ExponentialLR(opt, gamma=0.1 ** (1 / 5e6))
    xs, ys = mesh_pos[:, 0:1], mesh_pos[:, 1:2]
    profile = 4 * ys * (ly - ys) / ly ** 2
    fixed = (node_type == obstacle) | (node_type == wall)
    deg = torch.zeros(n_nodes).index_add(0, receivers, torch.ones(senders.size(0)))[:, None]

    def frame() -> tuple[torch.Tensor, torch.Tensor]:
        speed = 0.5 + torch.rand(1, generator=gen)
        kx = torch.randint(1, 5, (4, 1), generator=gen).float().t() * math.pi / lx
        ky = torch.randint(1, 4, (4, 1), generator=gen).float().t() * math.pi / ly
        amp = 0.2 * torch.randn(2, 4, generator=gen)
        ph = 2 * math.pi * torch.rand(1, 4, generator=gen)
        wave = torch.sin(kx * xs + ph) * torch.sin(ky * ys)
        vel = speed * torch.cat([profile, torch.zeros_like(profile)], 1) + wave @ amp.t()
        vel = torch.where(fixed[:, None], torch.zeros_like(vel), vel)
        lap = torch.zeros(n_nodes, 2).index_add(0, receivers, vel[senders]) / deg - vel
        drift = torch.stack([-0.3 * vel[:, 1] * vel[:, 0], 0.3 * vel[:, 0] ** 2 - 0.1 * vel[:, 1]], 1)
        nxt = vel + 0.5 * lap + 0.05 * drift
        nxt = torch.where(fixed[:, None], torch.zeros_like(nxt), nxt)
        return vel, nxt

    total = 0.0
    for _ in range(steps):
        vel, nxt = frame()
        noise = noise_std * torch.randn(vel.shape, generator=gen)
        noise = torch.where((node_type == normal)[:, None], noise, torch.zeros_like(noise))
        noisy = vel + noise
        opt.zero_grad(set_to_none=True)
        out = model(noisy)
        target = model.out_norm(nxt - noisy, True)
        error = torch.sum((target - out) ** 2, dim=1)
        loss = torch.mean(error[loss_mask])
        loss.backward()
        opt.step()
        sched.step()
        total += loss.item()
    return total


@_workload(default_steps=5)
def gaussian_splat_train(*, steps: int, seed: int) -> float:
    """3D Gaussian splatting fitted to a drawn scene (Kerbl et al. 2023, as graphdeco-inria's
    gaussian-splatting train.py, with its rasteriser written in dense PyTorch as hbb1's
    torch-splatting does, without tiles): 1,024 anisotropic Gaussians initialised from random points
    (log scales from the mean squared distance to the 3 nearest, identity rotations, opacity 0.1,
    spherical harmonics of degree 1); each step a camera drawn on a sphere of radius 4 looking at
    the origin (50 degree field of view, 64 x 64 pixels), the target image rendered under no_grad from
    a drawn scene of 384 Gaussians on three spheres and a ground disc (the data generator), then the
    model's render: view transform, covariance R S S^T R^T from normalised quaternions, the EWA
    Jacobian to a 2-D covariance plus 0.3 I and its conic, colours from the SH coefficients and the
    view directions, the Gaussians sorted by depth (argsort, gathers), and alpha compositing over
    every pixel and every Gaussian (4,096 x 1,024 tensors: offsets, the quadratic form, exp, the
    clamped and masked alpha, the cumprod of 1 - alpha shifted to exclusive transmittance, the
    weights, a matmul with the colours); loss 0.8 L1 + 0.2 (1 - SSIM) with the reference's 11 x 11
    Gaussian window; Adam (eps 1e-15) with the reference's per-parameter learning rates (position
    decayed log-linearly, features, features_rest / 20, opacity, scaling, rotation).
    Densification, pruning and the opacity reset are left out, so the Gaussian count is fixed: fixed
    shapes (every step allocates the same sizes in the same order); 5 steps. The reference's
    tile-based CUDA rasteriser over 10^5-10^6 Gaussians has no CPU form; the first size tried here,
    1,024 Gaussians at 64 x 64, gave 248.78 MiB and 9,216 events, so it was kept."""
    torch.manual_seed(0)
    n_gauss, n_true, side, fov, radius = 1024, 384, 64, math.radians(50), 4.0
    focal = side / (2 * math.tan(fov / 2))
    sh_c0, sh_c1 = 0.28209479177387814, 0.4886025119029199
    gen = torch.Generator().manual_seed(148 + seed)

    def quat_to_rot(q: torch.Tensor) -> torch.Tensor:
        q = q / q.norm(dim=1, keepdim=True)
        r, x, y, z = q.unbind(1)
        return torch.stack([1 - 2 * (y * y + z * z), 2 * (x * y - r * z), 2 * (x * z + r * y),
                            2 * (x * y + r * z), 1 - 2 * (x * x + z * z), 2 * (y * z - r * x),
                            2 * (x * z - r * y), 2 * (y * z + r * x), 1 - 2 * (x * x + y * y)], 1).view(-1, 3, 3)

    py, px = torch.meshgrid(torch.arange(side, dtype=torch.float32) + 0.5,
                            torch.arange(side, dtype=torch.float32) + 0.5, indexing="ij")
    pix = torch.stack([px.flatten(), py.flatten()], 1)

    def render(xyz: torch.Tensor, dc: torch.Tensor, rest: torch.Tensor, log_scale: torch.Tensor,
               rot: torch.Tensor, opacity_logit: torch.Tensor, view: torch.Tensor, campos: torch.Tensor) -> torch.Tensor:
        p_view = xyz @ view[:3, :3].t() + view[:3, 3]
        z = p_view[:, 2].clamp(min=0.2)
        u = focal * p_view[:, 0] / z + side / 2
        v = focal * p_view[:, 1] / z + side / 2
        m = quat_to_rot(rot) * torch.exp(log_scale)[:, None, :]
        cov3d = m @ m.transpose(1, 2)
        zeros = torch.zeros_like(z)
        jac = torch.stack([focal / z, zeros, -focal * p_view[:, 0] / z ** 2,
                           zeros, focal / z, -focal * p_view[:, 1] / z ** 2], 1).view(-1, 2, 3)
        t = jac @ view[:3, :3]
        cov2d = t @ cov3d @ t.transpose(1, 2) + 0.3 * torch.eye(2)
        a, b, c = cov2d[:, 0, 0], cov2d[:, 0, 1], cov2d[:, 1, 1]
        det = (a * c - b * b).clamp(min=1e-6)
        conic = torch.stack([c / det, -b / det, a / det], 1)
        dirs = xyz - campos
        dirs = dirs / dirs.norm(dim=1, keepdim=True)
        x, y, zz = dirs[:, 0:1], dirs[:, 1:2], dirs[:, 2:3]
        rgb = sh_c0 * dc[:, 0] - sh_c1 * y * rest[:, 0] + sh_c1 * zz * rest[:, 1] - sh_c1 * x * rest[:, 2]
        rgb = torch.clamp_min(rgb + 0.5, 0.0)
        order = torch.argsort(p_view[:, 2])
        mean2d = torch.stack([u, v], 1)[order]
        conic, rgb, opac = conic[order], rgb[order], torch.sigmoid(opacity_logit)[order, 0]
        d = pix[:, None, :] - mean2d[None]
        power = (-0.5 * (conic[:, 0] * d[..., 0] ** 2 + conic[:, 2] * d[..., 1] ** 2)
                 - conic[:, 1] * d[..., 0] * d[..., 1])
        alpha = torch.clamp(opac * torch.exp(power), max=0.99)
        alpha = torch.where((power <= 0) & (alpha >= 1 / 255) & (z[order] > 0.2), alpha, torch.zeros_like(alpha))
        trans = torch.cumprod(1 - alpha, dim=1)
        trans = torch.cat([torch.ones_like(trans[:, :1]), trans[:, :-1]], 1)
        weights = alpha * trans
        image = weights @ rgb + (1 - weights.sum(1, keepdim=True)) * 0.0
        return image.t().reshape(3, side, side)

    def look_at(campos: torch.Tensor) -> torch.Tensor:
        forward = -campos / campos.norm()
        right = torch.linalg.cross(forward, torch.tensor([0.0, 0.0, 1.0]))
        right = right / right.norm()
        down = torch.linalg.cross(forward, right)
        rot = torch.stack([right, down, forward])
        view = torch.eye(4)
        view[:3, :3] = rot
        view[:3, 3] = -rot @ campos
        return view

    window = torch.exp(-((torch.arange(11) - 5.0) ** 2) / (2 * 1.5 ** 2))
    window = (window / window.sum())
    window = (window[:, None] * window[None, :]).expand(3, 1, 11, 11).contiguous()

    def ssim(img1: torch.Tensor, img2: torch.Tensor) -> torch.Tensor:
        img1, img2 = img1[None], img2[None]
        mu1 = nn.functional.conv2d(img1, window, padding=5, groups=3)
        mu2 = nn.functional.conv2d(img2, window, padding=5, groups=3)
        mu1_sq, mu2_sq, mu1_mu2 = mu1.pow(2), mu2.pow(2), mu1 * mu2
        sigma1_sq = nn.functional.conv2d(img1 * img1, window, padding=5, groups=3) - mu1_sq
        sigma2_sq = nn.functional.conv2d(img2 * img2, window, padding=5, groups=3) - mu2_sq
        sigma12 = nn.functional.conv2d(img1 * img2, window, padding=5, groups=3) - mu1_mu2
        c1, c2 = 0.01 ** 2, 0.03 ** 2
        ssim_map = ((2 * mu1_mu2 + c1) * (2 * sigma12 + c2)) / ((mu1_sq + mu2_sq + c1) * (sigma1_sq + sigma2_sq + c2))
        return ssim_map.mean()

    # the scene to fit (the data): gaussians on three drawn spheres and a ground disc
    centres = 1.2 * (torch.rand(3, 3, generator=gen) - 0.5)
    which = torch.randint(0, 4, (n_true,), generator=gen)
    dirs = torch.randn(n_true, 3, generator=gen)
    dirs = dirs / dirs.norm(dim=1, keepdim=True)
    on_sphere = centres[which.clamp(max=2)] + 0.5 * dirs
    disc = torch.cat([2 * (torch.rand(n_true, 2, generator=gen) - 0.5), torch.full((n_true, 1), -0.8)], 1)
    true_xyz = torch.where((which < 3)[:, None], on_sphere, disc)
    true_dc = (torch.rand(4, 1, 3, generator=gen)[which] - 0.5) / sh_c0
    true_rest = 0.1 * torch.randn(n_true, 3, 3, generator=gen)
    true_scale = torch.log(0.04 + 0.08 * torch.rand(n_true, 3, generator=gen))
    true_rot = torch.randn(n_true, 4, generator=gen)
    true_opac = torch.full((n_true, 1), 2.0)

    class GaussianModel(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            pts = 2 * (torch.rand(n_gauss, 3) - 0.5)
            dist2 = torch.cdist(pts, pts).pow(2).topk(4, dim=1, largest=False).values[:, 1:].mean(1).clamp(min=1e-7)
            self.xyz = nn.Parameter(pts)
            self.features_dc = nn.Parameter(torch.zeros(n_gauss, 1, 3))
            self.features_rest = nn.Parameter(torch.zeros(n_gauss, 3, 3))
            self.scaling = nn.Parameter(torch.log(torch.sqrt(dist2))[:, None].repeat(1, 3))
            self.rotation = nn.Parameter(torch.tensor([[1.0, 0.0, 0.0, 0.0]]).repeat(n_gauss, 1))
            self.opacity = nn.Parameter(torch.logit(torch.full((n_gauss, 1), 0.1)))

    model = GaussianModel()
    extent = 1.5
    opt = torch.optim.Adam([
        {"params": [model.xyz], "lr": 0.00016 * extent, "name": "xyz"},
        {"params": [model.features_dc], "lr": 0.0025, "name": "f_dc"},
        {"params": [model.features_rest], "lr": 0.0025 / 20.0, "name": "f_rest"},
        {"params": [model.opacity], "lr": 0.05, "name": "opacity"},
        {"params": [model.scaling], "lr": 0.005, "name": "scaling"},
        {"params": [model.rotation], "lr": 0.001, "name": "rotation"}], lr=0.0, eps=1e-15)
    total = 0.0
    for step in range(steps):
        d = torch.randn(3, generator=gen)
        d[2] = d[2].abs() * 0.6 + 0.2
        campos = radius * d / d.norm()
        view = look_at(campos)
        with torch.no_grad():
            gt = render(true_xyz, true_dc, true_rest, true_scale, true_rot, true_opac, view, campos)
        t = min(step / 30000, 1.0)
        opt.param_groups[0]["lr"] = math.exp((1 - t) * math.log(0.00016 * extent) + t * math.log(0.0000016 * extent))
        opt.zero_grad(set_to_none=True)
        image = render(model.xyz, model.features_dc, model.features_rest, model.scaling, model.rotation,
                       model.opacity, view, campos)
        loss = 0.8 * (image - gt).abs().mean() + 0.2 * (1.0 - ssim(image, gt))
        loss.backward()
        opt.step()
        total += loss.item()
    return total


@_workload(default_steps=5)
def pointpillars_train(*, steps: int, seed: int) -> float:
    """PointPillars LiDAR detection (Lang et al. 2019, as open-mmlab's OpenPCDet pointpillar.yaml:
    PillarVFE, PointPillarScatter, BaseBEVBackbone, AnchorHeadSingle): batch 2 drawn scenes in a
    40.96 m x 40.96 m range in front of the sensor, each a ground of 6,000-12,000 points denser near
    the sensor and 3-15 drawn cars (boxes of about 3.9 x 1.6 x 1.56 m, drawn yaw) whose sides are
    sampled by a number of points falling with distance (the data generator); voxelised into 0.32 m
    pillars (a 128 x 128 grid) by torch.unique with return_inverse, a stable argsort and a cumsum
    rank, at most 20 points a pillar; the reference's 10 point features (x, y, z, r, offsets from
    the pillar's point mean and from the pillar centre), PFN Linear(10, 64) - BatchNorm1d - ReLU and
    a max over the points; scattered back per sample into a 64 x 128 x 128 canvas by index assignment
    (as PointPillarScatter); the backbone's three stages (3, 5, 5 convs after a stride-2 conv; 64, 128,
    256 channels) each upsampled by a transposed conv to 128 and concatenated; the head's 1 x 1 convs
    for 2 anchors a location (yaw 0 and pi/2, car size) to class, 7 box residuals and 2 direction
    bins; targets by the reference's nearest-BEV (axis-aligned) IoU of every anchor with every drawn
    box (an anchors x boxes matrix), positives at 0.6, negatives under 0.45, each box's best anchor
    positive; the reference's losses: sigmoid focal loss (alpha 0.25, gamma 2) over the cared
    anchors, smooth L1 (beta 1/9) with the sine-difference yaw on the positives (gathered by nonzero)
    and direction cross-entropy, each over the positive count; AdamW (0.95, 0.85; decay 0.01),
    clipping at 10. The pillar count (first run 9,743-12,760 a step, second run 8,049-12,139), the
    box count and the positive anchors follow the data; 5 steps. Shrunk from the KITTI config (0.16 m
    pillars, a 432 x 496 grid, 32 points a pillar, up to 16,000 pillars): 0.32 m pillars with 32
    points gave 489.99 MiB, so 20 points a pillar (the reference's nuScenes count; 334.62 MiB)."""
    torch.manual_seed(0)
    batch, vsize, x_max, y_half, max_pts, pfn_ch = 2, 0.32, 40.96, 20.48, 20, 64
    grid = int(round(x_max / vsize))
    layer_nums, strides, filters, up_strides, up_filters = (3, 5, 5), (2, 2, 2), (64, 128, 256), (1, 2, 4), 128
    anchor_dims = (3.9, 1.6, 1.56)
    gen = torch.Generator().manual_seed(149 + seed)

    class PillarVFE(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.linear = nn.Linear(10, pfn_ch, bias=False)
            self.norm = nn.BatchNorm1d(pfn_ch, eps=1e-3, momentum=0.01)

        def forward(self, feats: torch.Tensor) -> torch.Tensor:
            x = self.linear(feats)
            x = torch.relu(self.norm(x.permute(0, 2, 1)).permute(0, 2, 1))
            return torch.max(x, dim=1)[0]

    def conv_bn(cin: int, cout: int, stride: int) -> list[nn.Module]:
        return [nn.Conv2d(cin, cout, 3, stride, 1, bias=False), nn.BatchNorm2d(cout, eps=1e-3, momentum=0.01), nn.ReLU()]

    class BEVBackbone(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.blocks, self.deblocks = nn.ModuleList(), nn.ModuleList()
            cin = pfn_ch
            for n, s, f, u in zip(layer_nums, strides, filters, up_strides):
                layers = conv_bn(cin, f, s)
                for _ in range(n):
                    layers += conv_bn(f, f, 1)
                self.blocks.append(nn.Sequential(*layers))
                self.deblocks.append(nn.Sequential(nn.ConvTranspose2d(f, up_filters, u, u, bias=False),
                                                   nn.BatchNorm2d(up_filters, eps=1e-3, momentum=0.01), nn.ReLU()))
                cin = f

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            ups = []
            for block, deblock in zip(self.blocks, self.deblocks):
                x = block(x)
                ups.append(deblock(x))
            return torch.cat(ups, 1)

    class PointPillars(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.vfe, self.backbone = PillarVFE(), BEVBackbone()
            c = up_filters * len(up_strides)
            self.conv_cls, self.conv_box, self.conv_dir = nn.Conv2d(c, 2, 1), nn.Conv2d(c, 2 * 7, 1), nn.Conv2d(c, 2 * 2, 1)
            nn.init.constant_(self.conv_cls.bias, -math.log((1 - 0.01) / 0.01))
            nn.init.normal_(self.conv_box.weight, mean=0, std=0.001)

        def forward(self, feats: torch.Tensor, coords: torch.Tensor) -> tuple[torch.Tensor, ...]:
            pillar = self.vfe(feats)
            canvases = []
            for b in range(batch):
                mask = coords[:, 0] == b
                this = coords[mask]
                indices = (this[:, 1] * grid + this[:, 2]).long()
                spatial = torch.zeros(pfn_ch, grid * grid, dtype=pillar.dtype)
                spatial[:, indices] = pillar[mask].t()
                canvases.append(spatial)
            x = self.backbone(torch.stack(canvases, 0).view(batch, pfn_ch, grid, grid))
            flat = lambda t, k: t.permute(0, 2, 3, 1).reshape(batch, -1, k)  # noqa: E731
            return flat(self.conv_cls(x), 1), flat(self.conv_box(x), 7), flat(self.conv_dir(x), 2)

    fmap = grid // strides[0]
    cell = x_max / fmap
    ay, ax = torch.meshgrid((torch.arange(fmap) + 0.5) * cell - y_half, (torch.arange(fmap) + 0.5) * cell, indexing="ij")
    anchors = torch.stack([ax.flatten(), ay.flatten()], 1)[:, None, :].expand(-1, 2, -1).reshape(-1, 2)
    anchor_yaw = torch.tensor([0.0, math.pi / 2]).repeat(fmap * fmap)
    anchors = torch.cat([anchors, torch.full((anchors.size(0), 1), -1.0),
                         torch.tensor(anchor_dims).expand(anchors.size(0), 3), anchor_yaw[:, None]], 1)

    def bev_rect(boxes: torch.Tensor) -> torch.Tensor:
        swap = (torch.remainder(boxes[:, 6] + math.pi / 4, math.pi) > math.pi / 2)[:, None]
        dims = torch.where(swap, boxes[:, [4, 3]], boxes[:, [3, 4]])
        return torch.cat([boxes[:, :2] - dims / 2, boxes[:, :2] + dims / 2], 1)

    anchor_rect = bev_rect(anchors)

    def scene() -> tuple[torch.Tensor, torch.Tensor]:
        n_ground = int(torch.randint(6000, 12000, (1,), generator=gen))
        r = x_max * torch.sqrt(torch.rand(n_ground, generator=gen)) ** 1.5
        th = (torch.rand(n_ground, generator=gen) - 0.5) * math.pi
        ground = torch.stack([r * torch.cos(th), r * torch.sin(th), -1.7 + 0.05 * torch.randn(n_ground, generator=gen),
                              0.3 * torch.rand(n_ground, generator=gen)], 1)
        n_obj = int(torch.randint(3, 16, (1,), generator=gen))
        boxes, parts = [], [ground]
        for _ in range(n_obj):
            cxy = torch.stack([3 + (x_max - 6) * torch.rand((), generator=gen),
                               (2 * torch.rand((), generator=gen) - 1) * (y_half - 3)])
            dims = torch.tensor(anchor_dims) * (0.9 + 0.2 * torch.rand(3, generator=gen))
            yaw = (2 * torch.rand((), generator=gen) - 1) * math.pi
            boxes.append(torch.cat([cxy, torch.tensor([-1.7 + dims[2] / 2]), dims, yaw[None]]))
            n_pts = int(4000 / (4 + float(cxy.norm())))
            local = (torch.rand(n_pts, 3, generator=gen) - 0.5) * dims
            face = torch.randint(0, 2, (n_pts,), generator=gen)
            local[:, 0] = torch.where(face == 0, torch.sign(local[:, 0]) * dims[0] / 2, local[:, 0])
            local[:, 1] = torch.where(face == 1, torch.sign(local[:, 1]) * dims[1] / 2, local[:, 1])
            cs, sn = torch.cos(yaw), torch.sin(yaw)
            world = torch.stack([cs * local[:, 0] - sn * local[:, 1] + cxy[0], sn * local[:, 0] + cs * local[:, 1] + cxy[1],
                                 local[:, 2] - 1.7 + dims[2] / 2, 0.2 + 0.6 * torch.rand(n_pts, generator=gen)], 1)
            parts.append(world)
        pts = torch.cat(parts)
        keep = (pts[:, 0] >= 0) & (pts[:, 0] < x_max) & (pts[:, 1] >= -y_half) & (pts[:, 1] < y_half)
        return pts[keep], torch.stack(boxes)

    def voxelize(clouds: list[torch.Tensor]) -> tuple[torch.Tensor, torch.Tensor]:
        pts = torch.cat(clouds)
        bidx = torch.cat([torch.full((c.size(0),), b, dtype=torch.long) for b, c in enumerate(clouds)])
        ix = ((pts[:, 0]) / vsize).long().clamp(0, grid - 1)
        iy = ((pts[:, 1] + y_half) / vsize).long().clamp(0, grid - 1)
        key = (bidx * grid + iy) * grid + ix
        uniq, inv = torch.unique(key, return_inverse=True)
        order = torch.argsort(inv, stable=True)
        counts = torch.bincount(inv, minlength=uniq.size(0))
        first = torch.cumsum(counts, 0) - counts
        rank = torch.empty_like(inv)
        rank[order] = torch.arange(inv.size(0)) - first[inv[order]]
        ok = rank < max_pts
        voxels = torch.zeros(uniq.size(0), max_pts, 4)
        voxels[inv[ok], rank[ok]] = pts[ok]
        num = counts.clamp(max=max_pts)
        coords = torch.stack([uniq // (grid * grid), (uniq // grid) % grid, uniq % grid], 1)
        mean = voxels[:, :, :3].sum(1, keepdim=True) / num.view(-1, 1, 1)
        f_cluster = voxels[:, :, :3] - mean
        centre = torch.stack([(coords[:, 2].float() + 0.5) * vsize, (coords[:, 1].float() + 0.5) * vsize - y_half,
                              torch.full((coords.size(0),), -1.0)], 1)
        f_center = voxels[:, :, :3] - centre[:, None, :]
        feats = torch.cat([voxels, f_cluster, f_center], -1)
        valid = torch.arange(max_pts)[None] < num[:, None]
        return feats * valid[..., None], coords

    def targets(boxes: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        g = bev_rect(boxes)
        lt = torch.max(anchor_rect[:, None, :2], g[None, :, :2])
        rb = torch.min(anchor_rect[:, None, 2:], g[None, :, 2:])
        inter = (rb - lt).clamp(min=0).prod(-1)
        area_a = (anchor_rect[:, 2:] - anchor_rect[:, :2]).prod(-1)
        area_g = (g[:, 2:] - g[:, :2]).prod(-1)
        iou = inter / (area_a[:, None] + area_g[None] - inter)
        best, arg = iou.max(1)
        labels = torch.full((anchors.size(0),), -1.0)
        labels[best < 0.45] = 0.0
        labels[best >= 0.6] = 1.0
        labels[iou.argmax(0)] = 1.0
        return labels, arg, iou

    def encode(gt: torch.Tensor, an: torch.Tensor) -> torch.Tensor:
        diag = torch.sqrt(an[:, 3] ** 2 + an[:, 4] ** 2)
        return torch.stack([(gt[:, 0] - an[:, 0]) / diag, (gt[:, 1] - an[:, 1]) / diag, (gt[:, 2] - an[:, 2]) / an[:, 5],
                            torch.log(gt[:, 3] / an[:, 3]), torch.log(gt[:, 4] / an[:, 4]), torch.log(gt[:, 5] / an[:, 5]),
                            gt[:, 6] - an[:, 6]], 1)

    model = PointPillars()
    opt = torch.optim.AdamW(model.parameters(), lr=3e-3, betas=(0.95, 0.85), weight_decay=0.01)
    total = 0.0
    for _ in range(steps):
        scenes = [scene() for _ in range(batch)]
        feats, coords = voxelize([s[0] for s in scenes])
        opt.zero_grad(set_to_none=True)
        cls, box, direction = model(feats, coords)
        loss = cls.new_zeros(())
        for b, (_, gt_boxes) in enumerate(scenes):
            labels, arg, _ = targets(gt_boxes)
            cared = (labels >= 0).float()
            pos = labels > 0
            n_pos = pos.sum().clamp(min=1.0)
            p = torch.sigmoid(cls[b, :, 0])
            tgt = labels.clamp(min=0)
            pt = tgt * (1 - p) + (1 - tgt) * p
            focal_w = (tgt * 0.25 + (1 - tgt) * 0.75) * pt.pow(2.0)
            bce = nn.functional.binary_cross_entropy_with_logits(cls[b, :, 0], tgt, reduction="none")
            cls_loss = (focal_w * bce * cared).sum() / n_pos
            idx = pos.nonzero(as_tuple=True)[0]
            gt_pos, an_pos = gt_boxes[arg[idx]], anchors[idx]
            reg_t = encode(gt_pos, an_pos)
            pred = box[b, idx]
            sin_p = torch.sin(pred[:, 6:7]) * torch.cos(reg_t[:, 6:7])
            sin_t = torch.cos(pred[:, 6:7]) * torch.sin(reg_t[:, 6:7])
            pred = torch.cat([pred[:, :6], sin_p], 1)
            reg_t = torch.cat([reg_t[:, :6], sin_t], 1)
            diff = (pred - reg_t).abs()
            beta = 1.0 / 9.0
            loc = torch.where(diff < beta, 0.5 * diff ** 2 / beta, diff - 0.5 * beta).sum() / n_pos
            rot = torch.remainder(gt_pos[:, 6] - an_pos[:, 6] + math.pi / 4, 2 * math.pi)
            dir_t = (rot > math.pi).long()
            dir_loss = nn.functional.cross_entropy(direction[b, idx], dir_t, reduction="sum") / n_pos
            loss = loss + (cls_loss + 2.0 * loc + 0.2 * dir_loss) / batch
        loss.backward()
        nn.utils.clip_grad_norm_(model.parameters(), 10.0)
        opt.step()
        total += loss.item()
    return total


@_workload(default_steps=5)
def fid_rag_train(*, steps: int, seed: int) -> float:
    """Fusion-in-Decoder retrieval-augmented reading (Izacard and Grave 2021, as facebookresearch's
    FiD, FiDT5 / EncoderWrapper in src/model.py): batch 2 questions, each with n retrieved passages,
    n drawn per step in 4-10 and shared by the batch (the passages whose retrieval score passes a
    threshold; first run 8, 7, 9, 6, 5; second run 4-10), each passage "question + passage" of 6-15
    question tokens and 40-80 drawn passage tokens from a Zipf vocabulary of 8,000, padded to the
    step's longest (first run 87-94 tokens; FiD pads to a fixed text_maxlength); the answer a span
    of 2-11 tokens of one gold passage preceded there by the question (the data generator). A T5
    encoder-decoder of width 256 (4 heads, relative-position buckets 32 computed in the first layer
    and shared, RMS LayerNorm, ReLU feed-forward 1024, dropout 0.1, 4 encoder and 4 decoder layers,
    tied and rescaled embeddings): the encoder runs the B*n passages independently (B*n x heads x L x
    L attention maps), their outputs are concatenated to B x n*L as EncoderWrapper does, and the
    decoder cross-attends over all of them with the passages' padding masked; cross-entropy on the
    answer plus EOS, AdamW 1e-4 with linear warm-up, clipping at 1. The passage count and the padded
    length (every encoder tensor and the decoder's cross-attention) follow the data; 5 steps. Shrunk
    from FiD-base (T5-base, 100 passages of 200 tokens): this model on 6-14 passages of 60-160
    tokens gave 772.40 MiB, on 4-10 of 40-120 455.16 MiB, of 40-100 328.86 MiB (its second run
    would reach 10 passages of 115 tokens), so 4-10 of 40-80 (341.43 MiB; second run 347.21)."""
    torch.manual_seed(0)
    batch, vocab, d_model, heads, d_ff, n_enc, n_dec = 2, 8000, 256, 4, 1024, 4, 4
    buckets, max_dist, pad, eos = 32, 128, 0, 1
    n_min, n_max, len_min, len_max, ans_max = 4, 10, 40, 80, 12
    d_kv = d_model // heads

    class T5LayerNorm(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.weight = nn.Parameter(torch.ones(d_model))

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            variance = x.pow(2).mean(-1, keepdim=True)
            return self.weight * (x * torch.rsqrt(variance + 1e-6))

    def rel_bucket(rel: torch.Tensor, bidirectional: bool) -> torch.Tensor:
        n = buckets
        ret = torch.zeros_like(rel)
        if bidirectional:
            n //= 2
            ret = ret + (rel > 0).long() * n
            rel = rel.abs()
        else:
            rel = -torch.min(rel, torch.zeros_like(rel))
        max_exact = n // 2
        is_small = rel < max_exact
        large = max_exact + (torch.log(rel.float().clamp(min=1) / max_exact) / math.log(max_dist / max_exact)
                             * (n - max_exact)).long()
        large = torch.min(large, torch.full_like(large, n - 1))
        return ret + torch.where(is_small, rel, large)

    class Attention(nn.Module):
        def __init__(self, bias: bool, bidirectional: bool) -> None:
            super().__init__()
            self.q, self.k = nn.Linear(d_model, d_model, bias=False), nn.Linear(d_model, d_model, bias=False)
            self.v, self.o = nn.Linear(d_model, d_model, bias=False), nn.Linear(d_model, d_model, bias=False)
            self.bidirectional = bidirectional
            self.rel = nn.Embedding(buckets, heads) if bias else None

        def position_bias(self, q_len: int, k_len: int) -> torch.Tensor:
            assert self.rel is not None
            rel = torch.arange(k_len)[None, :] - torch.arange(q_len)[:, None]
            return self.rel(rel_bucket(rel, self.bidirectional)).permute(2, 0, 1).unsqueeze(0)

        def forward(self, x: torch.Tensor, kv: torch.Tensor, bias: torch.Tensor) -> torch.Tensor:
            b = x.size(0)
            shape = lambda t: t.view(b, -1, heads, d_kv).transpose(1, 2)  # noqa: E731
            q, k, v = shape(self.q(x)), shape(self.k(kv)), shape(self.v(kv))
            scores = torch.matmul(q, k.transpose(3, 2)) + bias
            attn = nn.functional.dropout(torch.softmax(scores.float(), dim=-1), 0.1, self.training)
            return self.o(torch.matmul(attn, v).transpose(1, 2).reshape(b, -1, d_model))

    class FF(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.wi, self.wo = nn.Linear(d_model, d_ff, bias=False), nn.Linear(d_ff, d_model, bias=False)

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            return self.wo(nn.functional.dropout(torch.relu(self.wi(x)), 0.1, self.training))

    class Block(nn.Module):
        def __init__(self, first: bool, decoder: bool) -> None:
            super().__init__()
            self.self_attn, self.n1 = Attention(first, not decoder), T5LayerNorm()
            self.cross = Attention(False, True) if decoder else None
            self.n2, self.ff, self.n3 = T5LayerNorm(), FF(), T5LayerNorm()

        def forward(self, x: torch.Tensor, bias: torch.Tensor, mem: torch.Tensor | None = None,
                    mem_bias: torch.Tensor | None = None) -> torch.Tensor:
            drop = lambda t: nn.functional.dropout(t, 0.1, self.training)  # noqa: E731
            h = self.n1(x)
            x = x + drop(self.self_attn(h, h, bias))
            if self.cross is not None:
                assert mem is not None and mem_bias is not None
                x = x + drop(self.cross(self.n2(x), mem, mem_bias))
            return x + drop(self.ff(self.n3(x)))

    class FiDT5(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.shared = nn.Embedding(vocab, d_model)
            nn.init.normal_(self.shared.weight, std=1.0)
            self.encoder = nn.ModuleList(Block(i == 0, False) for i in range(n_enc))
            self.decoder = nn.ModuleList(Block(i == 0, True) for i in range(n_dec))
            self.enc_norm, self.dec_norm = T5LayerNorm(), T5LayerNorm()

        def forward(self, ids: torch.Tensor, mask: torch.Tensor, dec_in: torch.Tensor) -> torch.Tensor:
            b, n, length = ids.shape
            ids, mask = ids.view(b * n, length), mask.view(b * n, length)
            x = nn.functional.dropout(self.shared(ids), 0.1, self.training)
            first = self.encoder[0].self_attn
            bias = first.position_bias(length, length) + (1.0 - mask[:, None, None, :].float()) * -1e9
            for block in self.encoder:
                x = block(x, bias)
            mem = nn.functional.dropout(self.enc_norm(x), 0.1, self.training).view(b, n * length, d_model)
            mem_bias = (1.0 - mask.view(b, 1, 1, n * length).float()) * -1e9
            t = dec_in.size(1)
            causal = torch.triu(torch.full((t, t), -1e9), 1)
            dbias = self.decoder[0].self_attn.position_bias(t, t) + causal
            y = nn.functional.dropout(self.shared(dec_in), 0.1, self.training)
            for block in self.decoder:
                y = block(y, dbias, mem, mem_bias)
            y = nn.functional.dropout(self.dec_norm(y), 0.1, self.training) * d_model ** -0.5
            return y @ self.shared.weight.t()

    model = FiDT5()
    opt = torch.optim.AdamW(model.parameters(), lr=1e-4, weight_decay=0.01)
    sched = torch.optim.lr_scheduler.LambdaLR(opt, lambda s: min(1.0, (s + 1) / 1000))
    gen = torch.Generator().manual_seed(150 + seed)
    zipf = 1.0 / torch.arange(1, vocab - 1, dtype=torch.float64) ** 1.05
    zipf = (zipf / zipf.sum()).float()

    def example(n: int) -> tuple[list[torch.Tensor], torch.Tensor, torch.Tensor]:
        q_len = int(torch.randint(6, 16, (1,), generator=gen))
        question = torch.multinomial(zipf, q_len, replacement=True, generator=gen) + 2
        lengths = torch.randint(len_min, len_max + 1, (n,), generator=gen)
        gold = int(torch.randint(0, n, (1,), generator=gen))
        a_len = int(torch.randint(2, ans_max, (1,), generator=gen))
        passages = []
        answer = question.new_zeros(0)
        for i in range(n):
            body = torch.multinomial(zipf, int(lengths[i]), replacement=True, generator=gen) + 2
            if i == gold:
                at = int(torch.randint(0, int(lengths[i]) - a_len, (1,), generator=gen))
                if at >= q_len:
                    body[at - q_len:at] = question
                answer = body[at:at + a_len].clone()
            passages.append(torch.cat([question, body]))
        return passages, answer, lengths

    total = 0.0
    for _ in range(steps):
        n = int(torch.randint(n_min, n_max + 1, (1,), generator=gen))
        items = [example(n) for _ in range(batch)]
        longest = max(int(p.size(0)) for ps, _, _ in items for p in ps)
        ids = torch.full((batch, n, longest), pad, dtype=torch.long)
        for b, (ps, _, _) in enumerate(items):
            for i, p in enumerate(ps):
                ids[b, i, :p.size(0)] = p
        mask = ids != pad
        a_long = max(int(a.size(0)) for _, a, _ in items) + 1
        labels = torch.full((batch, a_long), -100, dtype=torch.long)
        for b, (_, a, _) in enumerate(items):
            labels[b, :a.size(0)] = a
            labels[b, a.size(0)] = eos
        dec_in = torch.cat([torch.full((batch, 1), pad, dtype=torch.long), labels[:, :-1].clamp(min=0)], 1)
        opt.zero_grad(set_to_none=True)
        logits = model(ids, mask, dec_in)
        loss = nn.functional.cross_entropy(logits.reshape(-1, vocab), labels.reshape(-1), ignore_index=-100)
        loss.backward()
        nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        sched.step()
        total += loss.item()
    return total


@_workload(default_steps=5)
def rgcn_link_train(*, steps: int, seed: int) -> float:
    """R-GCN link prediction (Schlichtkrull et al. 2018, as the DGL example
    examples/pytorch/rgcn/link.py with its block-diagonal decomposition, RelGraphConv regularizer
    "bdd", and DistMult decoder) on a drawn knowledge graph of FB15k-237's sizes (14,541 entities,
    237 relations, 272,115 triples; power-law entity popularity, tails tied to the relation and the
    head; the data generator): each step the reference's edge sampling, 4,000 triples drawn uniformly,
    their entities relabelled by torch.unique (the subgraph's node count follows the draw: first run
    4,676-4,780, second run 4,696-4,810), half of the edges kept as the graph and their inverses added
    under relation + 237, in-degree normalisation; 10 negatives a positive by corrupting the head or
    the tail with a random subgraph node (44,000 triples scored); node embeddings gathered from an
    Embedding of all entities, 2 RelGraphConv layers of width 200 with 40 blocks of 5 x 5 (each
    message a bmm of the source's blocks with the relation's gathered block-diagonal weight, E x 40 x
    5 x 5, scaled by the norm, summed into the destinations by index_add, plus a self-loop matmul and
    a bias; ReLU after the first, dropout 0.2), the DistMult score of every triple (three gathers of
    44,000 x 200), binary cross-entropy plus 0.01 x the mean squares of the node states and relation
    vectors, Adam 1e-2, clipping at 1. The subgraph's node count (every node tensor, the embedding
    gather, the degree vector) follows the data; 5 steps. Shrunk from the reference's graph batch of
    30,000 edges, 500 hidden units and 100 bases: width 200 with 40 blocks on 8,000 sampled edges gave
    593.07 MiB, 5,000 397.49 MiB, so 4,000 (331.32 MiB; 2,602 events)."""
    torch.manual_seed(0)
    n_ent, n_rel, n_triples, hidden, n_bases = 14541, 237, 272115, 200, 40
    sample_size, split, neg_rate, reg = 4000, 0.5, 10, 0.01
    sub = hidden // n_bases
    gen = torch.Generator().manual_seed(151 + seed)
    # a drawn knowledge graph of FB15k-237's sizes: power-law entity popularity, per-relation type constraints
    pop = 1.0 / torch.arange(1, n_ent + 1, dtype=torch.float64) ** 0.8
    pop = (pop / pop.sum()).float()
    perm = torch.randperm(n_ent, generator=gen)
    heads_ = perm[torch.multinomial(pop, n_triples, replacement=True, generator=gen)]
    rels = torch.multinomial(1.0 / torch.arange(1, n_rel + 1).float(), n_triples, replacement=True, generator=gen)
    offset = torch.randint(0, n_ent, (n_rel,), generator=gen)
    tails = (perm[torch.multinomial(pop, n_triples, replacement=True, generator=gen)] // 8 * 8
             + offset[rels] % 8 + heads_ % 3) % n_ent
    triples = torch.stack([heads_, rels, tails], 1)

    class RelGraphConv(nn.Module):
        def __init__(self, cin: int, cout: int, act: bool) -> None:
            super().__init__()
            self.weight = nn.Parameter(torch.empty(2 * n_rel, n_bases, cin // n_bases, cout // n_bases))
            nn.init.xavier_uniform_(self.weight, gain=nn.init.calculate_gain("relu"))
            self.loop_weight = nn.Parameter(torch.empty(cin, cout))
            nn.init.xavier_uniform_(self.loop_weight, gain=nn.init.calculate_gain("relu"))
            self.bias = nn.Parameter(torch.zeros(cout))
            self.act = act

        def forward(self, h: torch.Tensor, src: torch.Tensor, dst: torch.Tensor, etype: torch.Tensor,
                    norm: torch.Tensor) -> torch.Tensor:
            weight = self.weight[etype].view(-1, sub, sub)
            node = h[src].view(-1, 1, sub)
            msg = torch.bmm(node, weight).view(-1, hidden) * norm
            agg = h.new_zeros(h.size(0), hidden).index_add(0, dst, msg)
            out = agg + h @ self.loop_weight + self.bias
            out = torch.relu(out) if self.act else out
            return nn.functional.dropout(out, 0.2, self.training)

    class LinkPredict(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.emb = nn.Embedding(n_ent, hidden)
            self.layers = nn.ModuleList([RelGraphConv(hidden, hidden, True), RelGraphConv(hidden, hidden, False)])
            self.w_relation = nn.Parameter(torch.empty(n_rel, hidden))
            nn.init.xavier_uniform_(self.w_relation, gain=nn.init.calculate_gain("relu"))

        def forward(self, nodes: torch.Tensor, src: torch.Tensor, dst: torch.Tensor, etype: torch.Tensor,
                    norm: torch.Tensor) -> torch.Tensor:
            h = self.emb(nodes)
            for layer in self.layers:
                h = layer(h, src, dst, etype, norm)
            return h

        def score(self, h: torch.Tensor, trip: torch.Tensor) -> torch.Tensor:
            return torch.sum(h[trip[:, 0]] * self.w_relation[trip[:, 1]] * h[trip[:, 2]], dim=1)

    model = LinkPredict()
    opt = torch.optim.Adam(model.parameters(), lr=1e-2)
    total = 0.0
    for _ in range(steps):
        edges = triples[torch.randint(0, n_triples, (sample_size,), generator=gen)]
        uniq, inv = torch.unique(torch.cat([edges[:, 0], edges[:, 2]]), return_inverse=True)
        n_nodes = uniq.size(0)
        rel_trip = torch.stack([inv[:sample_size], edges[:, 1], inv[sample_size:]], 1)
        n_neg = sample_size * neg_rate
        neg = rel_trip.repeat(neg_rate, 1)
        corrupt = torch.randint(0, n_nodes, (n_neg,), generator=gen)
        head_side = torch.rand(n_neg, generator=gen) > 0.5
        neg[:, 0] = torch.where(head_side, corrupt, neg[:, 0])
        neg[:, 2] = torch.where(head_side, neg[:, 2], corrupt)
        samples = torch.cat([rel_trip, neg])
        labels = torch.cat([torch.ones(sample_size), torch.zeros(n_neg)])
        kept = torch.randperm(sample_size, generator=gen)[:int(sample_size * split)]
        g_src, g_rel, g_dst = rel_trip[kept, 0], rel_trip[kept, 1], rel_trip[kept, 2]
        src, dst = torch.cat([g_src, g_dst]), torch.cat([g_dst, g_src])
        etype = torch.cat([g_rel, g_rel + n_rel])
        in_deg = torch.zeros(n_nodes).index_add(0, dst, torch.ones(dst.size(0)))
        norm = (1.0 / in_deg.clamp(min=1))[dst][:, None]
        opt.zero_grad(set_to_none=True)
        h = model(uniq, src, dst, etype, norm)
        score = model.score(h, samples)
        predict_loss = nn.functional.binary_cross_entropy_with_logits(score, labels)
        reg_loss = torch.mean(h.pow(2)) + torch.mean(model.w_relation.pow(2))
        loss = predict_loss + reg * reg_loss
        loss.backward()
        nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        total += loss.item()
    return total


@_workload(default_steps=5)
def segformer_seg_train(*, steps: int, seed: int) -> float:
    """SegFormer semantic segmentation (Xie et al. 2021, as NVlabs' SegFormer, mmseg/models/backbones/
    mix_transformer.py and decode_heads/segformer_head.py, the Cityscapes schedule) with the MiT-B0 encoder:
    batch 1 crop of 512 x 512 of a drawn street-like scene (a sky / road split at a drawn horizon and 10
    drawn ellipses and boxes of the 19 classes over it, some of them the ignore label 255; colours per
    class, brightness and noise; the data generator); four stages of overlapping patch embeddings
    (7 x 7 stride 4, then 3 x 3 stride 2; widths 32, 64, 160, 256) with 2 blocks each of efficient
    self-attention (1, 2, 5, 8 heads; keys and values from a strided conv reduction by 8, 4, 2, 1 and a
    LayerNorm; attention maps of 16,384 x 256 in stage 1) and Mix-FFN (Linear, 3 x 3 depthwise conv,
    GELU, Linear; ratio 4), stochastic depth to 0.1; the all-MLP head (a Linear to 256 per stage,
    bilinear upsampling to 128 x 128, concatenation, a 1 x 1 conv with BatchNorm and ReLU, dropout,
    the classifier), logits upsampled to 512 x 512 for the cross-entropy with ignore index 255; AdamW
    6e-5 (weight decay 0.01, none on norms and biases, the head at 10x) with the poly schedule. Fixed
    shapes (every step allocates the same sizes in the same order); 5 steps. Batch 2 of 512 x 512
    gave 887.46 MiB, so batch 1, the reference's per-GPU batch (of 1,024 x 1,024 crops, not run)
    (461.14 MiB, 33,826 events)."""
    torch.manual_seed(0)
    batch, size, n_cls, ignore = 1, 512, 19, 255
    dims, heads, depths, srs, mlp_ratio, dec_dim = (32, 64, 160, 256), (1, 2, 5, 8), (2, 2, 2, 2), (8, 4, 2, 1), 4, 256
    gen = torch.Generator().manual_seed(152 + seed)

    class OverlapPatchEmbed(nn.Module):
        def __init__(self, patch: int, stride: int, cin: int, dim: int) -> None:
            super().__init__()
            self.proj = nn.Conv2d(cin, dim, patch, stride, patch // 2)
            self.norm = nn.LayerNorm(dim)

        def forward(self, x: torch.Tensor) -> tuple[torch.Tensor, int, int]:
            x = self.proj(x)
            h, w = x.shape[2:]
            return self.norm(x.flatten(2).transpose(1, 2)), h, w

    class Attention(nn.Module):  # efficient self-attention: keys and values from a strided reduction
        def __init__(self, dim: int, nh: int, sr: int) -> None:
            super().__init__()
            self.nh, self.scale, self.sr_ratio = nh, (dim // nh) ** -0.5, sr
            self.q, self.kv, self.proj = nn.Linear(dim, dim), nn.Linear(dim, 2 * dim), nn.Linear(dim, dim)
            if sr > 1:
                self.sr, self.norm = nn.Conv2d(dim, dim, sr, sr), nn.LayerNorm(dim)

        def forward(self, x: torch.Tensor, h: int, w: int) -> torch.Tensor:
            b, n, c = x.shape
            q = self.q(x).reshape(b, n, self.nh, c // self.nh).permute(0, 2, 1, 3)
            if self.sr_ratio > 1:
                x_ = self.norm(self.sr(x.permute(0, 2, 1).reshape(b, c, h, w)).reshape(b, c, -1).permute(0, 2, 1))
            else:
                x_ = x
            kv = self.kv(x_).reshape(b, -1, 2, self.nh, c // self.nh).permute(2, 0, 3, 1, 4)
            k, v = kv[0], kv[1]
            attn = ((q @ k.transpose(-2, -1)) * self.scale).softmax(dim=-1)
            return self.proj((attn @ v).transpose(1, 2).reshape(b, n, c))

    class MixFFN(nn.Module):
        def __init__(self, dim: int, hidden: int) -> None:
            super().__init__()
            self.fc1, self.fc2 = nn.Linear(dim, hidden), nn.Linear(hidden, dim)
            self.dwconv = nn.Conv2d(hidden, hidden, 3, 1, 1, groups=hidden)

        def forward(self, x: torch.Tensor, h: int, w: int) -> torch.Tensor:
            x = self.fc1(x)
            b, n, c = x.shape
            x = self.dwconv(x.transpose(1, 2).reshape(b, c, h, w)).flatten(2).transpose(1, 2)
            return self.fc2(nn.functional.gelu(x))

    class Block(nn.Module):
        def __init__(self, dim: int, nh: int, sr: int, drop_path: float) -> None:
            super().__init__()
            self.norm1, self.norm2 = nn.LayerNorm(dim), nn.LayerNorm(dim)
            self.attn, self.mlp, self.drop_path = Attention(dim, nh, sr), MixFFN(dim, dim * mlp_ratio), drop_path

        def dp(self, x: torch.Tensor) -> torch.Tensor:  # timm's DropPath (per-sample stochastic depth)
            if not self.training or self.drop_path == 0.0:
                return x
            keep = 1 - self.drop_path
            mask = (keep + torch.rand((x.shape[0], 1, 1), dtype=x.dtype)).floor_()
            return x.div(keep) * mask

        def forward(self, x: torch.Tensor, h: int, w: int) -> torch.Tensor:
            x = x + self.dp(self.attn(self.norm1(x), h, w))
            return x + self.dp(self.mlp(self.norm2(x), h, w))

    class MixVisionTransformer(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            dpr = torch.linspace(0, 0.1, sum(depths)).tolist()
            self.embeds = nn.ModuleList(OverlapPatchEmbed(7 if i == 0 else 3, 4 if i == 0 else 2, 3 if i == 0 else dims[i - 1],
                                                          dims[i]) for i in range(4))
            self.stages = nn.ModuleList(nn.ModuleList(Block(dims[i], heads[i], srs[i], dpr[sum(depths[:i]) + j])
                                                      for j in range(depths[i])) for i in range(4))
            self.norms = nn.ModuleList(nn.LayerNorm(d) for d in dims)

        def forward(self, x: torch.Tensor) -> list[torch.Tensor]:
            outs = []
            for embed, blocks, norm in zip(self.embeds, self.stages, self.norms):
                x, h, w = embed(x)
                for blk in blocks:
                    x = blk(x, h, w)
                x = norm(x).reshape(x.size(0), h, w, -1).permute(0, 3, 1, 2).contiguous()
                outs.append(x)
            return outs

    class SegFormerHead(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.linear_c = nn.ModuleList(nn.Linear(d, dec_dim) for d in dims)
            self.linear_fuse = nn.Sequential(nn.Conv2d(4 * dec_dim, dec_dim, 1, bias=False), nn.BatchNorm2d(dec_dim), nn.ReLU())
            self.dropout, self.linear_pred = nn.Dropout2d(0.1), nn.Conv2d(dec_dim, n_cls, 1)

        def forward(self, feats: list[torch.Tensor]) -> torch.Tensor:
            h1, w1 = feats[0].shape[2:]
            ups = []
            for c, lin in zip(feats, self.linear_c):
                n, _, h, w = c.shape
                y = lin(c.flatten(2).transpose(1, 2)).permute(0, 2, 1).reshape(n, -1, h, w)
                ups.append(y if h == h1 else nn.functional.interpolate(y, size=(h1, w1), mode="bilinear", align_corners=False))
            return self.linear_pred(self.dropout(self.linear_fuse(torch.cat(ups[::-1], dim=1))))

    backbone, head = MixVisionTransformer(), SegFormerHead()
    no_decay = [p for n, p in backbone.named_parameters() if "norm" in n or p.ndim == 1]
    decay = [p for n, p in backbone.named_parameters() if not ("norm" in n or p.ndim == 1)]
    opt = torch.optim.AdamW([{"params": decay}, {"params": no_decay, "weight_decay": 0.0},
                             {"params": list(head.parameters()), "lr": 6e-4}], lr=6e-5, betas=(0.9, 0.999), weight_decay=0.01)
    sched = torch.optim.lr_scheduler.LambdaLR(opt, lambda it: (1 - it / 160000) ** 1.0)
    palette = torch.rand(n_cls, 3, generator=torch.Generator().manual_seed(152))
    yy, xx = torch.meshgrid(torch.arange(size, dtype=torch.float32), torch.arange(size, dtype=torch.float32), indexing="ij")
    n_shapes = 10

    def scenes() -> tuple[torch.Tensor, torch.Tensor]:
        horizon = size * (0.3 + 0.3 * torch.rand(batch, 1, 1, generator=gen))
        label = torch.where(yy < horizon, torch.tensor(10), torch.tensor(0)).long()  # sky above, road below
        centre = torch.rand(batch, n_shapes, 2, 1, 1, generator=gen) * size
        half = (0.04 + 0.2 * torch.rand(batch, n_shapes, 2, 1, 1, generator=gen)) * size
        cls = torch.randint(1, n_cls, (batch, n_shapes, 1, 1), generator=gen)
        cls = torch.where(torch.rand(batch, n_shapes, 1, 1, generator=gen) < 0.1, torch.tensor(ignore), cls)
        dx, dy = (xx - centre[:, :, 0]) / half[:, :, 0], (yy - centre[:, :, 1]) / half[:, :, 1]
        ellipse = torch.rand(batch, n_shapes, 1, 1, generator=gen) < 0.5
        inside = torch.where(ellipse, dx ** 2 + dy ** 2 < 1, (dx.abs() < 1) & (dy.abs() < 1))
        order = inside * torch.arange(1, n_shapes + 1).view(1, n_shapes, 1, 1)
        top = order.argmax(1, keepdim=True)
        label = torch.where(inside.any(1), cls.expand(-1, -1, size, size).gather(1, top).squeeze(1), label)
        colour = palette[label.clamp(max=n_cls - 1)].permute(0, 3, 1, 2)
        img = colour * (0.6 + 0.4 * torch.rand(batch, 1, 1, 1, generator=gen)) + 0.08 * torch.randn(batch, 3, size, size, generator=gen)
        img = (img - 0.45) / 0.25
        return img, label

    total = 0.0
    for _ in range(steps):
        img, label = scenes()
        opt.zero_grad(set_to_none=True)
        logits = head(backbone(img))
        logits = nn.functional.interpolate(logits, size=(size, size), mode="bilinear", align_corners=False)
        loss = nn.functional.cross_entropy(logits, label, ignore_index=ignore)
        loss.backward()
        opt.step()
        sched.step()
        total += loss.item()
    return total


@_workload(default_steps=5)
def diffusion_policy_train(*, steps: int, seed: int) -> float:
    """Diffusion Policy (Chi et al. 2023, as real-stanford's diffusion_policy, the vision Push-T
    notebook and model/diffusion/conditional_unet1d.py): batch 16 samples of 2 observation frames of
    96 x 96 (a drawn T block pose and agent disc on the board; the data generator) with the agent
    position and a drawn smooth 16-step action sequence; a ResNet-18 with every BatchNorm replaced by
    GroupNorm(C / 16) and no fc encodes the 32 frames to 512 features, concatenated with the agent
    positions into a 1,028-wide global condition; the ConditionalUnet1D (a sinusoidal diffusion-step
    embedding of 256 through Linear-Mish-Linear, conditional residual blocks of two Conv1d(kernel 5)-
    GroupNorm(8)-Mish blocks with FiLM scale and bias from the condition, down_dims 64, 128, 256 with
    strided Conv1d downsampling, two middle blocks, ConvTranspose1d upsampling with skip
    concatenations, a final conv); DDPM training with 100 squaredcos_cap_v2 steps, a timestep drawn per
    sample, epsilon-prediction MSE; AdamW 1e-4 (weight decay 1e-6) with 500 warm-up steps and a cosine
    schedule, and the EMAModel update (warm-up power 0.75) of a copy of every parameter after each
    step. Fixed shapes (every step allocates the same sizes in the same order); 5 steps. The reference
    uses down_dims 256, 512, 1024 and batch 64 (not run: far over the limit); down_dims 128, 256, 512
    gave 929.49 MiB at batch 32 and 806.69 MiB at 16, down_dims 64, 128, 256 623.43 MiB at batch 32, so
    batch 16 (500.63 MiB, 50,696 events)."""
    torch.manual_seed(0)
    batch, obs_h, pred_h, act_dim, img, agent_dim = 16, 2, 16, 2, 96, 2
    down_dims, dsed, kernel, n_groups, n_train_t = (64, 128, 256), 256, 5, 8, 100
    gen = torch.Generator().manual_seed(153 + seed)

    class Mish(nn.Module):
        def forward(self, x: torch.Tensor) -> torch.Tensor:
            return nn.functional.mish(x)

    class BasicBlock(nn.Module):  # torchvision's resnet18 block, BatchNorm replaced by GroupNorm(C // 16)
        def __init__(self, cin: int, cout: int, stride: int) -> None:
            super().__init__()
            self.conv1, self.bn1 = nn.Conv2d(cin, cout, 3, stride, 1, bias=False), nn.GroupNorm(cout // 16, cout)
            self.conv2, self.bn2 = nn.Conv2d(cout, cout, 3, 1, 1, bias=False), nn.GroupNorm(cout // 16, cout)
            self.down = (nn.Sequential(nn.Conv2d(cin, cout, 1, stride, bias=False), nn.GroupNorm(cout // 16, cout))
                         if stride != 1 or cin != cout else None)

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            out = torch.relu(self.bn1(self.conv1(x)))
            out = self.bn2(self.conv2(out))
            return torch.relu(out + (x if self.down is None else self.down(x)))

    class ResNet18(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.stem = nn.Sequential(nn.Conv2d(3, 64, 7, 2, 3, bias=False), nn.GroupNorm(4, 64), nn.ReLU(), nn.MaxPool2d(3, 2, 1))
            chans, layers, cin = (64, 128, 256, 512), [], 64
            for i, c in enumerate(chans):
                layers += [BasicBlock(cin, c, 1 if i == 0 else 2), BasicBlock(c, c, 1)]
                cin = c
            self.layers = nn.Sequential(*layers)

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            return torch.flatten(nn.functional.adaptive_avg_pool2d(self.layers(self.stem(x)), 1), 1)  # fc = Identity

    class SinusoidalPosEmb(nn.Module):
        def __init__(self, dim: int) -> None:
            super().__init__()
            self.dim = dim

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            half = self.dim // 2
            emb = torch.exp(torch.arange(half) * -(math.log(10000) / (half - 1)))
            emb = x[:, None] * emb[None, :]
            return torch.cat((emb.sin(), emb.cos()), dim=-1)

    def conv1d_block(cin: int, cout: int, k: int) -> nn.Sequential:
        return nn.Sequential(nn.Conv1d(cin, cout, k, padding=k // 2), nn.GroupNorm(n_groups, cout), Mish())

    class ConditionalResidualBlock1D(nn.Module):
        def __init__(self, cin: int, cout: int, cond_dim: int) -> None:
            super().__init__()
            self.blocks = nn.ModuleList([conv1d_block(cin, cout, kernel), conv1d_block(cout, cout, kernel)])
            self.out_channels = cout
            self.cond_encoder = nn.Sequential(Mish(), nn.Linear(cond_dim, 2 * cout), nn.Unflatten(-1, (-1, 1)))
            self.residual_conv = nn.Conv1d(cin, cout, 1) if cin != cout else nn.Identity()

        def forward(self, x: torch.Tensor, cond: torch.Tensor) -> torch.Tensor:
            out = self.blocks[0](x)
            embed = self.cond_encoder(cond).reshape(cond.shape[0], 2, self.out_channels, 1)
            out = embed[:, 0, ...] * out + embed[:, 1, ...]  # FiLM
            out = self.blocks[1](out)
            return out + self.residual_conv(x)

    class ConditionalUnet1D(nn.Module):
        def __init__(self, input_dim: int, global_cond_dim: int) -> None:
            super().__init__()
            all_dims = [input_dim, *down_dims]
            start_dim = down_dims[0]
            self.diffusion_step_encoder = nn.Sequential(SinusoidalPosEmb(dsed), nn.Linear(dsed, dsed * 4), Mish(),
                                                        nn.Linear(dsed * 4, dsed))
            cond_dim = dsed + global_cond_dim
            in_out = list(zip(all_dims[:-1], all_dims[1:]))
            mid = all_dims[-1]
            self.mid_modules = nn.ModuleList([ConditionalResidualBlock1D(mid, mid, cond_dim),
                                              ConditionalResidualBlock1D(mid, mid, cond_dim)])
            self.down_modules = nn.ModuleList()
            for ind, (din, dout) in enumerate(in_out):
                is_last = ind >= len(in_out) - 1
                self.down_modules.append(nn.ModuleList([
                    ConditionalResidualBlock1D(din, dout, cond_dim), ConditionalResidualBlock1D(dout, dout, cond_dim),
                    nn.Conv1d(dout, dout, 3, 2, 1) if not is_last else nn.Identity()]))
            self.up_modules = nn.ModuleList()
            for ind, (din, dout) in enumerate(reversed(in_out[1:])):
                is_last = ind >= len(in_out) - 1
                self.up_modules.append(nn.ModuleList([
                    ConditionalResidualBlock1D(dout * 2, din, cond_dim), ConditionalResidualBlock1D(din, din, cond_dim),
                    nn.ConvTranspose1d(din, din, 4, 2, 1) if not is_last else nn.Identity()]))
            self.final_conv = nn.Sequential(conv1d_block(start_dim, start_dim, kernel), nn.Conv1d(start_dim, input_dim, 1))

        def forward(self, sample: torch.Tensor, timesteps: torch.Tensor, global_cond: torch.Tensor) -> torch.Tensor:
            x = sample.moveaxis(-1, -2)
            feature = torch.cat([self.diffusion_step_encoder(timesteps), global_cond], dim=-1)
            h = []
            for resnet, resnet2, downsample in self.down_modules:  # type: ignore[misc]
                x = resnet2(resnet(x, feature), feature)
                h.append(x)
                x = downsample(x)
            for mid_module in self.mid_modules:
                x = mid_module(x, feature)
            for resnet, resnet2, upsample in self.up_modules:  # type: ignore[misc]
                x = torch.cat((x, h.pop()), dim=1)
                x = upsample(resnet2(resnet(x, feature), feature))
            return self.final_conv(x).moveaxis(-1, -2)

    nets = nn.ModuleDict({"vision_encoder": ResNet18(),
                          "noise_pred_net": ConditionalUnet1D(act_dim, obs_h * (512 + agent_dim))})
    ema = [p.detach().clone() for p in nets.parameters()]  # diffusers' EMAModel over the same parameters
    opt = torch.optim.AdamW(nets.parameters(), lr=1e-4, weight_decay=1e-6)
    warmup, total_iters = 500, 200 * 100
    sched = torch.optim.lr_scheduler.LambdaLR(
        opt, lambda it: it / warmup if it < warmup else 0.5 * (1 + math.cos(math.pi * (it - warmup) / (total_iters - warmup))))
    ts = torch.arange(n_train_t + 1, dtype=torch.float64) / n_train_t  # squaredcos_cap_v2
    alpha_bar = torch.cos((ts + 0.008) / 1.008 * math.pi / 2) ** 2
    betas = torch.clamp(1 - alpha_bar[1:] / alpha_bar[:-1], max=0.999).float()
    alphas_cumprod = torch.cumprod(1.0 - betas, dim=0)
    coords = (torch.arange(img, dtype=torch.float32) + 0.5) / img * 2 - 1

    def pusht_batch() -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        """Push-T-like frames: a grey T block at a drawn pose and the agent's disc on a light board."""
        block = torch.rand(batch, 1, 2, generator=gen) * 1.2 - 0.6 + 0.05 * torch.randn(batch, obs_h, 2, generator=gen)
        theta = 2 * math.pi * torch.rand(batch, 1, generator=gen) + 0.1 * torch.randn(batch, obs_h, generator=gen)
        start = torch.rand(batch, 1, 2, generator=gen) * 1.6 - 0.8
        vel = 0.08 * torch.randn(batch, 1, 2, generator=gen) + 0.03 * torch.randn(batch, obs_h + pred_h, 2, generator=gen)
        path = (start + torch.cumsum(vel, 1)).clamp(-1, 1)
        agent, action = path[:, :obs_h], path[:, obs_h - 1:obs_h - 1 + pred_h]
        gx, gy = coords.view(1, 1, 1, img), coords.view(1, 1, img, 1)
        c, s = torch.cos(theta)[..., None, None], torch.sin(theta)[..., None, None]
        u = c * (gx - block[..., 0, None, None]) + s * (gy - block[..., 1, None, None])
        v = -s * (gx - block[..., 0, None, None]) + c * (gy - block[..., 1, None, None])
        tee = ((u.abs() < 0.24) & (v > 0.12) & (v < 0.24)) | ((u.abs() < 0.06) & (v > -0.24) & (v <= 0.12))
        disc = (gx - agent[..., 0, None, None]) ** 2 + (gy - agent[..., 1, None, None]) ** 2 < 0.07 ** 2
        board = torch.tensor([0.94, 0.94, 0.94]).view(1, 1, 3, 1, 1)
        frame = torch.where(tee[:, :, None], torch.tensor([0.47, 0.53, 0.6]).view(1, 1, 3, 1, 1), board)
        frame = torch.where(disc[:, :, None], torch.tensor([0.25, 0.4, 0.88]).view(1, 1, 3, 1, 1), frame)
        return frame, agent, action

    total = 0.0
    for it in range(steps):
        nimage, nagent_pos, naction = pusht_batch()
        b = nagent_pos.shape[0]
        image_features = nets["vision_encoder"](nimage.flatten(end_dim=1)).reshape(*nimage.shape[:2], -1)
        obs_cond = torch.cat([image_features, nagent_pos], dim=-1).flatten(start_dim=1)
        noise = torch.randn(naction.shape, generator=gen)
        timesteps = torch.randint(0, n_train_t, (b,), generator=gen).long()
        sqrt_ab = alphas_cumprod[timesteps].sqrt().view(b, 1, 1)
        sqrt_1mab = (1 - alphas_cumprod[timesteps]).sqrt().view(b, 1, 1)
        noisy_actions = sqrt_ab * naction + sqrt_1mab * noise
        noise_pred = nets["noise_pred_net"](noisy_actions, timesteps, global_cond=obs_cond)
        loss = nn.functional.mse_loss(noise_pred, noise)
        loss.backward()
        opt.step()
        opt.zero_grad()
        sched.step()
        step = it  # EMAModel.get_decay: warm-up with inv_gamma 1, power 0.75, max 0.9999
        decay = 0.0 if step <= 0 else min(max(1 - (1 + step) ** -0.75, 0.0), 0.9999)
        with torch.no_grad():
            for e, p in zip(ema, nets.parameters()):
                e.sub_((1 - decay) * (e - p))
        total += loss.item()
    return total


@_workload(default_steps=5)
def xlstm_lm_train(*, steps: int, seed: int) -> float:
    """An xLSTM[7:1] language model (Beck et al. 2024, as NX-AI's xlstm, the README's
    xLSTMBlockStack configuration in an xLSTMLMModel: mlstm/layer.py, mlstm/cell.py, mlstm/backends.py
    parallel_stabilized_simple, slstm/layer.py with the vanilla PyTorch backend): batch 4 rows of 256
    tokens (Zipf over 4,096 with a drawn 32-token span repeated later in the row; the data generator),
    embedding 128, 7 blocks with an sLSTM block at position 1. Each mLSTM block: a LayerNorm, an
    up-projection to 2 x 256 (the cell branch and the output gate), a causal depthwise conv of kernel 4
    with SiLU, headwise block-diagonal q / k / v projections (blocks of 4), input and forget gates from
    their concatenation, the stabilised parallel form over 4 heads (cumulative log-sigmoid forget
    gates repeated into a 257 x 257 matrix, the causal decay matrix D with its row maximum, q k^T * D,
    the normaliser), a multi-head LayerNorm, the learnable skip, the SiLU output gate, a
    down-projection. The sLSTM block: a causal conv with SiLU, headwise gate projections, the
    recurrence as a Python loop over the 256 time steps (block-diagonal recurrent weights of 4 heads,
    exponential input and forget gates with the max stabiliser), a multi-head LayerNorm, then a gated
    GELU feed-forward of 192 (proj factor 1.3). Next-token cross-entropy; AdamW 1e-3 (weight decay 0.1
    on the projection matrices) with warm-up and cosine decay. Fixed shapes (every step allocates the
    same sizes in the same order); 5 steps. Batch 8 gave 577.11 MiB, so batch 4 (298.98 MiB, 174,795
    events, most of them the sLSTM loop's)."""
    torch.manual_seed(0)
    batch, ctx, vocab, emb, n_blocks, slstm_at, nh = 4, 256, 4096, 128, 7, (1,), 4
    inner, conv_k, blocksize, eps = 2 * emb, 4, 4, 1e-6
    ff_dim = 64 * math.ceil(1.3 * emb / 64)
    gen = torch.Generator().manual_seed(154 + seed)

    class LayerNorm(nn.Module):  # xlstm's LayerNorm: weight as 1 + a residual weight, no bias
        def __init__(self, dim: int) -> None:
            super().__init__()
            self.weight = nn.Parameter(torch.zeros(dim))

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            return nn.functional.layer_norm(x, (x.size(-1),), 1.0 + self.weight, None, 1e-5)

    class MultiHeadLayerNorm(LayerNorm):
        def forward(self, x: torch.Tensor) -> torch.Tensor:  # (B, NH, S, DH)
            b, h, s, d = x.shape
            gn = nn.functional.group_norm(x.transpose(1, 2).reshape(b * s, h * d), num_groups=h,
                                          weight=1.0 + self.weight, bias=None, eps=1e-5)
            return gn.view(b, s, h, d).transpose(1, 2)

    class LinearHeadwiseExpand(nn.Module):
        def __init__(self, dim: int, heads: int) -> None:
            super().__init__()
            self.heads = heads
            self.weight = nn.Parameter(torch.randn(heads, dim // heads, dim // heads) * math.sqrt(2 / 5 / (dim // heads)))

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            shape = x.shape
            x = x.view(*shape[:-1], self.heads, -1)
            return torch.einsum("...hd,hod->...ho", x, self.weight).reshape(*shape[:-1], -1)

    class CausalConv1d(nn.Module):
        def __init__(self, dim: int) -> None:
            super().__init__()
            self.conv = nn.Conv1d(dim, dim, conv_k, padding=conv_k - 1, groups=dim)

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            return self.conv(x.transpose(2, 1))[..., :-(conv_k - 1)].transpose(2, 1)

    causal = torch.tril(torch.ones(ctx, ctx, dtype=torch.bool))

    def parallel_stabilized_simple(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, igate: torch.Tensor,
                                   fgate: torch.Tensor) -> torch.Tensor:
        b, h, s, d = q.shape
        log_fgates = nn.functional.logsigmoid(fgate)
        log_fgates_cumsum = torch.cat([torch.zeros((b, h, 1, 1)), torch.cumsum(log_fgates, dim=-2)], dim=-2)
        rep = log_fgates_cumsum.repeat(1, 1, 1, s + 1)
        _log_fg_matrix = rep - rep.transpose(-2, -1)
        log_fg_matrix = torch.where(causal[:s, :s], _log_fg_matrix[:, :, 1:, 1:], -float("inf"))
        log_d_matrix = log_fg_matrix + igate.transpose(-2, -1)
        max_log_d, _ = torch.max(log_d_matrix, dim=-1, keepdim=True)
        d_matrix = torch.exp(log_d_matrix - max_log_d)
        qk_matrix = q @ (k / math.sqrt(d)).transpose(-2, -1)
        c_matrix = qk_matrix * d_matrix
        normalizer = torch.maximum(c_matrix.sum(dim=-1, keepdim=True).abs(), torch.exp(-max_log_d))
        return (c_matrix / (normalizer + eps)) @ v

    class MLSTMLayer(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.proj_up = nn.Linear(emb, 2 * inner, bias=False)
            n_proj = round(inner // blocksize)
            self.q_proj, self.k_proj, self.v_proj = (LinearHeadwiseExpand(inner, n_proj) for _ in range(3))
            self.conv1d = CausalConv1d(inner)
            self.igate, self.fgate = nn.Linear(3 * inner, nh), nn.Linear(3 * inner, nh)
            nn.init.zeros_(self.fgate.weight)
            with torch.no_grad():
                self.fgate.bias.copy_(torch.linspace(3.0, 6.0, nh))
                self.igate.bias.normal_(0, 0.1)
            self.outnorm = MultiHeadLayerNorm(inner)
            self.learnable_skip = nn.Parameter(torch.ones(inner))
            self.proj_down = nn.Linear(inner, emb, bias=False)

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            b, s, _ = x.shape
            x_mlstm, z = torch.split(self.proj_up(x), inner, dim=-1)
            conv_act = nn.functional.silu(self.conv1d(x_mlstm))
            q, k, v = self.q_proj(conv_act), self.k_proj(conv_act), self.v_proj(x_mlstm)
            if_in = torch.cat([q, k, v], dim=-1)
            q, k, v = (t.view(b, s, nh, -1).transpose(1, 2) for t in (q, k, v))
            ig = self.igate(if_in).transpose(-1, -2).unsqueeze(-1)
            fg = self.fgate(if_in).transpose(-1, -2).unsqueeze(-1)
            h = self.outnorm(parallel_stabilized_simple(q, k, v, ig, fg)).transpose(1, 2).reshape(b, s, -1)
            h = (h + self.learnable_skip * conv_act) * nn.functional.silu(z)
            return self.proj_down(h)

    class SLSTMLayer(nn.Module):  # the vanilla (PyTorch) backend: a loop over time steps
        def __init__(self) -> None:
            super().__init__()
            self.dh = emb // nh
            self.conv1d = CausalConv1d(emb)
            self.igate, self.fgate, self.zgate, self.ogate = (LinearHeadwiseExpand(emb, nh) for _ in range(4))
            self.recurrent_kernel = nn.Parameter(torch.randn(nh, self.dh, 4 * self.dh) / math.sqrt(self.dh))
            bias = torch.zeros(nh, 4, self.dh)
            bias[:, 1] = torch.linspace(3.0, 6.0, self.dh)  # forget gate: "powerlaw_blockdependent"-like
            self.bias = nn.Parameter(bias)
            self.group_norm = MultiHeadLayerNorm(emb)

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            b, s, _ = x.shape
            x_conv = nn.functional.silu(self.conv1d(x))
            i, f = self.igate(x_conv), self.fgate(x_conv)
            z, o = self.zgate(x), self.ogate(x)
            wx = torch.cat([t.view(b, s, nh, 1, self.dh) for t in (i, f, z, o)], dim=3).transpose(0, 1)
            bias = self.bias.view(1, nh, 4, self.dh)
            y, c, n, m = (x.new_zeros(b, nh, self.dh) for _ in range(4))
            ys = []
            for t in range(s):
                ry = (y.transpose(0, 1) @ self.recurrent_kernel).transpose(0, 1).view(b, nh, 4, self.dh)
                raw = wx[t] + ry + bias
                iraw, fraw, zraw, oraw = torch.unbind(raw, dim=2)
                logfplusm = m + nn.functional.logsigmoid(fraw)
                mnew = iraw if t == 0 else torch.max(iraw, logfplusm)
                ogate, igate = torch.sigmoid(oraw), torch.exp(iraw - mnew)
                fgate = torch.exp(logfplusm - mnew)
                c = fgate * c + igate * torch.tanh(zraw)
                n = fgate * n + igate
                y = ogate * c / n
                m = mnew
                ys.append(y)
            hs = torch.stack(ys, dim=2)  # (B, NH, S, DH)
            return self.group_norm(hs).transpose(1, 2).reshape(b, s, -1)

    class GatedFeedForward(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.proj_up, self.proj_down = nn.Linear(emb, 2 * ff_dim, bias=False), nn.Linear(ff_dim, emb, bias=False)

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            gate, z = torch.split(self.proj_up(x), ff_dim, dim=-1)
            return self.proj_down(nn.functional.gelu(gate) * z)

    class XLSTMBlock(nn.Module):
        def __init__(self, slstm: bool) -> None:
            super().__init__()
            self.xlstm_norm, self.xlstm = LayerNorm(emb), (SLSTMLayer() if slstm else MLSTMLayer())
            self.ffn_norm, self.ffn = (LayerNorm(emb), GatedFeedForward()) if slstm else (None, None)

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            x = x + self.xlstm(self.xlstm_norm(x))
            if self.ffn is not None:
                x = x + self.ffn(self.ffn_norm(x))
            return x

    class XLSTMLMModel(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.token_embedding = nn.Embedding(vocab, emb)
            self.blocks = nn.ModuleList(XLSTMBlock(i in slstm_at) for i in range(n_blocks))
            self.post_blocks_norm = LayerNorm(emb)
            self.lm_head = nn.Linear(emb, vocab, bias=False)

        def forward(self, idx: torch.Tensor) -> torch.Tensor:
            x = self.token_embedding(idx)
            for block in self.blocks:
                x = block(x)
            return self.lm_head(self.post_blocks_norm(x))

    model = XLSTMLMModel()
    decay = [p for n, p in model.named_parameters() if p.ndim >= 2 and "embedding" not in n]
    no_decay = [p for n, p in model.named_parameters() if not (p.ndim >= 2 and "embedding" not in n)]
    opt = torch.optim.AdamW([{"params": decay, "weight_decay": 0.1}, {"params": no_decay, "weight_decay": 0.0}], lr=1e-3)
    warmup, decay_until = 500, 20000
    sched = torch.optim.lr_scheduler.LambdaLR(opt, lambda it: (it + 1) / warmup if it < warmup else max(
        0.1, 0.5 * (1 + math.cos(math.pi * (it - warmup) / (decay_until - warmup)))))
    zipf = 1.0 / torch.arange(1, vocab + 1, dtype=torch.float64) ** 1.1

    def sequences() -> torch.Tensor:
        """Zipf tokens with a drawn span of each row repeated later (something to recall)."""
        toks = torch.multinomial(zipf.expand(batch, -1), ctx + 1, replacement=True, generator=gen)
        start = torch.randint(0, ctx // 2 - 32, (batch, 1), generator=gen)
        offset = torch.randint(ctx // 4, ctx // 2, (batch, 1), generator=gen)
        pos = start + torch.arange(32)
        return toks.scatter(1, pos + offset, toks.gather(1, pos))

    total = 0.0
    for _ in range(steps):
        seq = sequences()
        opt.zero_grad(set_to_none=True)
        logits = model(seq[:, :-1])
        loss = nn.functional.cross_entropy(logits.reshape(-1, vocab), seq[:, 1:].reshape(-1))
        loss.backward()
        opt.step()
        sched.step()
        total += loss.item()
    return total


@_workload(default_steps=5)
def din_ctr_train(*, steps: int, seed: int) -> float:
    """Deep Interest Network click-through-rate model (Zhou et al. 2018, as zhougr1993's
    DeepInterestNetwork, din/model.py and input.py) on drawn Amazon-Electronics-sized data (63,001
    items, 801 categories, a fixed drawn item-to-category list): batch 512 users whose review
    histories have drawn lengths (1 + an exponential of mean 20, at most 400; Zipf-drawn items) padded
    to the batch's longest, as the reference's DataInput pads to the batch's max_sl (first run 106-174
    a step, second run 96-161), and a target item (the next item or a random one, labelled 1 or 0).
    Item and category embeddings of 64 each concatenated; the local activation unit over the
    history (the query tiled over the padded length, [q, k, q - k, q * k] through 80-40-1 sigmoid
    layers, padding masked to -2^32 + 1, scaled by sqrt(128), softmax, the weighted sum of the
    histories), BatchNorm and a Linear, then [user, item, user * item], BatchNorm, 80-40-1 layers with
    Dice activations, plus the item bias; sigmoid cross-entropy, SGD at the reference's lr 1.0,
    gradients clipped at 5 (global norm). The padded length (every attention tensor) follows the
    histories drawn; 5 steps. The reference's batch is 32; batch 512 (481.82 MiB, 2,551 events) was
    the first size tried."""
    torch.manual_seed(0)
    batch, hidden, n_items, n_cates, mean_len, max_len = 512, 128, 63001, 801, 20, 400
    gen = torch.Generator().manual_seed(155 + seed)
    cate_list = torch.randint(0, n_cates, (n_items,), generator=torch.Generator().manual_seed(155))
    item_pop = 1.0 / torch.arange(1, n_items + 1, dtype=torch.float64) ** 0.9

    class Dice(nn.Module):
        def __init__(self, dim: int) -> None:
            super().__init__()
            self.bn = nn.BatchNorm1d(dim, eps=1e-9, affine=False)
            self.alpha = nn.Parameter(torch.zeros(dim))

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            p = torch.sigmoid(self.bn(x))
            return self.alpha * (1.0 - p) * x + p * x

    class DIN(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.item_emb = nn.Embedding(n_items, hidden // 2)
            self.cate_emb = nn.Embedding(n_cates, hidden // 2)
            self.item_b = nn.Embedding(n_items, 1)
            nn.init.zeros_(self.item_b.weight)
            self.att = nn.Sequential(nn.Linear(4 * hidden, 80), nn.Sigmoid(), nn.Linear(80, 40), nn.Sigmoid(), nn.Linear(40, 1))
            self.hist_bn, self.hist_fcn = nn.BatchNorm1d(hidden), nn.Linear(hidden, hidden)
            self.din_bn = nn.BatchNorm1d(3 * hidden)
            self.f1, self.dice1 = nn.Linear(3 * hidden, 80), Dice(80)
            self.f2, self.dice2 = nn.Linear(80, 40), Dice(40)
            self.f3 = nn.Linear(40, 1)

        def embed(self, items: torch.Tensor) -> torch.Tensor:
            return torch.cat([self.item_emb(items), self.cate_emb(cate_list[items])], dim=-1)

        def attention(self, queries: torch.Tensor, keys: torch.Tensor, keys_length: torch.Tensor) -> torch.Tensor:
            t = keys.size(1)
            queries = queries.unsqueeze(1).expand(-1, t, -1)
            din_all = torch.cat([queries, keys, queries - keys, queries * keys], dim=-1)
            outputs = self.att(din_all).view(-1, 1, t)
            key_masks = (torch.arange(t)[None, :] < keys_length[:, None]).unsqueeze(1)
            outputs = torch.where(key_masks, outputs, torch.full_like(outputs, -2.0 ** 32 + 1))
            outputs = torch.softmax(outputs / hidden ** 0.5, dim=-1)
            return torch.matmul(outputs, keys).squeeze(1)

        def forward(self, i: torch.Tensor, hist: torch.Tensor, sl: torch.Tensor) -> torch.Tensor:
            i_emb, h_emb = self.embed(i), self.embed(hist)
            u_emb = self.hist_fcn(self.hist_bn(self.attention(i_emb, h_emb, sl)))
            din = self.din_bn(torch.cat([u_emb, i_emb, u_emb * i_emb], dim=-1))
            d = self.dice2(self.f2(self.dice1(self.f1(din))))
            return self.item_b(i).squeeze(1) + self.f3(d).squeeze(1)

    model = DIN()
    opt = torch.optim.SGD(model.parameters(), lr=1.0)

    def batch_input() -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor]:
        """Users' review histories of drawn lengths, padded to the batch's longest (the reference's DataInput)."""
        sl = (1 + torch.empty(batch).exponential_(1.0 / mean_len, generator=gen).long()).clamp(max=max_len)
        t = int(sl.max())
        hist = torch.multinomial(item_pop, batch * t, replacement=True, generator=gen).view(batch, t)
        hist = torch.where(torch.arange(t)[None, :] < sl[:, None], hist, torch.zeros_like(hist))
        last = hist.gather(1, (sl - 1)[:, None]).squeeze(1)
        pos = torch.where(torch.rand(batch, generator=gen) < 0.5, last, (last + 1) % n_items)
        neg = torch.randint(0, n_items, (batch,), generator=gen)
        y = (torch.rand(batch, generator=gen) < 0.5).float()
        i = torch.where(y > 0, pos, neg)
        return i, hist, sl, y

    total = 0.0
    for _ in range(steps):
        i, hist, sl, y = batch_input()
        opt.zero_grad(set_to_none=True)
        logits = model(i, hist, sl)
        loss = nn.functional.binary_cross_entropy_with_logits(logits, y)
        loss.backward()
        nn.utils.clip_grad_norm_(model.parameters(), 5.0)
        opt.step()
        total += loss.item()
    return total


@_workload(default_steps=5)
def pointnet2_seg_train(*, steps: int, seed: int) -> float:
    """PointNet++ (SSG) semantic segmentation (Qi et al. 2017, as yanx27's Pointnet_Pointnet2_pytorch,
    models/pointnet2_utils.py and pointnet2_sem_seg.py, the S3DIS recipe): batch 4 drawn 1 m x 1 m room
    blocks (floor, ceiling, two walls and furniture-like surfaces of the 13 classes; 9 features: the
    block-centred xyz, RGB and the room-normalised xyz; the data generator) of n points, n drawn each
    step in 2,048-3,584 (first run 2,263, 2,302, 2,898, 3,203, 3,162; second run 2,176-3,458) where the
    reference resamples to 4,096; four set-abstraction layers (1,024, 256, 64, 16 centroids by the
    reference's farthest point sampling, a Python loop per centroid with a boolean-masked distance
    update; ball query of 32 within 0.1, 0.2, 0.4, 0.8 by a centroid-by-point distance matrix, a
    masked fill, a sort and a masked replace; grouped features through shared 1 x 1 Conv2d-BatchNorm-
    ReLU MLPs and a max), four feature-propagation layers (3-nearest inverse-distance interpolation
    by sort, concatenation with the skip features, Conv1d-BatchNorm-ReLU MLPs), a 128 head with
    dropout 0.5 and log-softmax; class-weighted NLL, Adam 1e-3 (weight decay 1e-4). The point count
    (the first set abstraction's distance matrix and sort, the propagation back to every point) and
    the masked updates' sizes follow the data; 5 steps. The reference's batch 16 of 4,096 points was
    not run; batch 4 of 2,048-4,096 gave 574.65 MiB, so 2,048-3,584 (519.28 MiB, 155,592 events, most
    of them the sampling loops')."""
    torch.manual_seed(0)
    batch, n_cls, n_lo, n_hi = 4, 13, 2048, 3584
    gen = torch.Generator().manual_seed(156 + seed)

    def square_distance(src: torch.Tensor, dst: torch.Tensor) -> torch.Tensor:
        b, n, _ = src.shape
        m = dst.shape[1]
        dist = -2 * torch.matmul(src, dst.permute(0, 2, 1))
        dist += torch.sum(src ** 2, -1).view(b, n, 1)
        dist += torch.sum(dst ** 2, -1).view(b, 1, m)
        return dist

    def index_points(points: torch.Tensor, idx: torch.Tensor) -> torch.Tensor:
        b = points.shape[0]
        view_shape = [b] + [1] * (idx.dim() - 1)
        repeat_shape = [1, *idx.shape[1:]]
        batch_indices = torch.arange(b, dtype=torch.long).view(view_shape).repeat(repeat_shape)
        return points[batch_indices, idx, :]

    def farthest_point_sample(xyz: torch.Tensor, npoint: int) -> torch.Tensor:
        b, n, _ = xyz.shape
        centroids = torch.zeros(b, npoint, dtype=torch.long)
        distance = torch.ones(b, n) * 1e10
        farthest = torch.randint(0, n, (b,), dtype=torch.long, generator=gen)
        batch_indices = torch.arange(b, dtype=torch.long)
        for i in range(npoint):
            centroids[:, i] = farthest
            centroid = xyz[batch_indices, farthest, :].view(b, 1, 3)
            dist = torch.sum((xyz - centroid) ** 2, -1)
            mask = dist < distance
            distance[mask] = dist[mask]
            farthest = torch.max(distance, -1)[1]
        return centroids

    def query_ball_point(radius: float, nsample: int, xyz: torch.Tensor, new_xyz: torch.Tensor) -> torch.Tensor:
        b, n, _ = xyz.shape
        s = new_xyz.shape[1]
        group_idx = torch.arange(n, dtype=torch.long).view(1, 1, n).repeat([b, s, 1])
        sqrdists = square_distance(new_xyz, xyz)
        group_idx[sqrdists > radius ** 2] = n
        group_idx = group_idx.sort(dim=-1)[0][:, :, :nsample]
        group_first = group_idx[:, :, 0].view(b, s, 1).repeat([1, 1, nsample])
        mask = group_idx == n
        group_idx[mask] = group_first[mask]
        return group_idx

    class SetAbstraction(nn.Module):
        def __init__(self, npoint: int, radius: float, nsample: int, cin: int, mlp: list[int]) -> None:
            super().__init__()
            self.npoint, self.radius, self.nsample = npoint, radius, nsample
            self.convs, self.bns = nn.ModuleList(), nn.ModuleList()
            for cout in mlp:
                self.convs.append(nn.Conv2d(cin, cout, 1))
                self.bns.append(nn.BatchNorm2d(cout))
                cin = cout

        def forward(self, xyz: torch.Tensor, points: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
            xyz, points = xyz.permute(0, 2, 1), points.permute(0, 2, 1)
            b, _, c = xyz.shape
            with torch.no_grad():
                fps_idx = farthest_point_sample(xyz, self.npoint)
            new_xyz = index_points(xyz, fps_idx)
            idx = query_ball_point(self.radius, self.nsample, xyz, new_xyz)
            grouped_xyz_norm = index_points(xyz, idx) - new_xyz.view(b, self.npoint, 1, c)
            new_points = torch.cat([grouped_xyz_norm, index_points(points, idx)], dim=-1).permute(0, 3, 2, 1)
            for conv, bn in zip(self.convs, self.bns):
                new_points = torch.relu(bn(conv(new_points)))
            return new_xyz.permute(0, 2, 1), torch.max(new_points, 2)[0]

    class FeaturePropagation(nn.Module):
        def __init__(self, cin: int, mlp: list[int]) -> None:
            super().__init__()
            self.convs, self.bns = nn.ModuleList(), nn.ModuleList()
            for cout in mlp:
                self.convs.append(nn.Conv1d(cin, cout, 1))
                self.bns.append(nn.BatchNorm1d(cout))
                cin = cout

        def forward(self, xyz1: torch.Tensor, xyz2: torch.Tensor, points1: torch.Tensor | None,
                    points2: torch.Tensor) -> torch.Tensor:
            xyz1, xyz2, points2 = xyz1.permute(0, 2, 1), xyz2.permute(0, 2, 1), points2.permute(0, 2, 1)
            b, n, _ = xyz1.shape
            dists, idx = square_distance(xyz1, xyz2).sort(dim=-1)
            dists, idx = dists[:, :, :3], idx[:, :, :3]
            dist_recip = 1.0 / (dists + 1e-8)
            weight = dist_recip / torch.sum(dist_recip, dim=2, keepdim=True)
            interpolated = torch.sum(index_points(points2, idx) * weight.view(b, n, 3, 1), dim=2)
            new_points = interpolated if points1 is None else torch.cat([points1.permute(0, 2, 1), interpolated], dim=-1)
            new_points = new_points.permute(0, 2, 1)
            for conv, bn in zip(self.convs, self.bns):
                new_points = torch.relu(bn(conv(new_points)))
            return new_points

    class PointNet2SemSeg(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.sa1 = SetAbstraction(1024, 0.1, 32, 9 + 3, [32, 32, 64])
            self.sa2 = SetAbstraction(256, 0.2, 32, 64 + 3, [64, 64, 128])
            self.sa3 = SetAbstraction(64, 0.4, 32, 128 + 3, [128, 128, 256])
            self.sa4 = SetAbstraction(16, 0.8, 32, 256 + 3, [256, 256, 512])
            self.fp4 = FeaturePropagation(768, [256, 256])
            self.fp3 = FeaturePropagation(384, [256, 256])
            self.fp2 = FeaturePropagation(320, [256, 128])
            self.fp1 = FeaturePropagation(128, [128, 128, 128])
            self.conv1, self.bn1, self.drop1 = nn.Conv1d(128, 128, 1), nn.BatchNorm1d(128), nn.Dropout(0.5)
            self.conv2 = nn.Conv1d(128, n_cls, 1)

        def forward(self, xyz: torch.Tensor) -> torch.Tensor:
            l0_points, l0_xyz = xyz, xyz[:, :3, :]
            l1_xyz, l1_points = self.sa1(l0_xyz, l0_points)
            l2_xyz, l2_points = self.sa2(l1_xyz, l1_points)
            l3_xyz, l3_points = self.sa3(l2_xyz, l2_points)
            l4_xyz, l4_points = self.sa4(l3_xyz, l3_points)
            l3_points = self.fp4(l3_xyz, l4_xyz, l3_points, l4_points)
            l2_points = self.fp3(l2_xyz, l3_xyz, l2_points, l3_points)
            l1_points = self.fp2(l1_xyz, l2_xyz, l1_points, l2_points)
            l0_points = self.fp1(l0_xyz, l1_xyz, None, l1_points)
            x = self.drop1(torch.relu(self.bn1(self.conv1(l0_points))))
            return nn.functional.log_softmax(self.conv2(x), dim=1).permute(0, 2, 1)

    model = PointNet2SemSeg()
    opt = torch.optim.Adam(model.parameters(), lr=1e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=1e-4)
    label_weights = torch.rand(n_cls, generator=torch.Generator().manual_seed(156))
    label_weights = (label_weights.max() / label_weights) ** (1 / 3)
    palette = torch.rand(n_cls, 3, generator=torch.Generator().manual_seed(157))

    def room_blocks() -> tuple[torch.Tensor, torch.Tensor]:
        """1 m x 1 m blocks of a drawn room: floor, ceiling, two walls and drawn boxes of furniture classes."""
        n = int(torch.randint(n_lo, n_hi + 1, (1,), generator=gen))
        u = torch.rand(batch, n, 3, generator=gen)
        surface = torch.randint(0, 8, (batch, n), generator=gen)
        height = 2.5 + 0.8 * torch.rand(batch, 1, generator=gen)
        xyz = u.clone()
        xyz[..., 2] = torch.where(surface == 0, 0.0, torch.where(surface == 1, height, u[..., 2] * height))
        xyz[..., 0] = torch.where(surface == 2, 0.0, xyz[..., 0])
        xyz[..., 1] = torch.where(surface == 3, 0.0, xyz[..., 1])
        label = torch.where(surface <= 1, surface, torch.where(surface <= 3, torch.tensor(2), 3 + (surface - 4) * 2
                                                                + (u[..., 2] > 0.5).long()))
        xyz = xyz + 0.005 * torch.randn(batch, n, 3, generator=gen)
        rgb = (palette[label] + 0.1 * torch.randn(batch, n, 3, generator=gen)).clamp(0, 1)
        room_max = torch.tensor([3.0, 3.0, 1.0]) * torch.cat([torch.ones(batch, 1, 2), height[:, :, None]], -1)
        feats = torch.cat([xyz - torch.tensor([0.5, 0.5, 0.0]), rgb, xyz / room_max], -1)
        return feats.permute(0, 2, 1).contiguous(), label

    total = 0.0
    for _ in range(steps):
        points, target = room_blocks()
        opt.zero_grad(set_to_none=True)
        seg_pred = model(points).contiguous().view(-1, n_cls)
        loss = nn.functional.nll_loss(seg_pred, target.view(-1), weight=label_weights)
        loss.backward()
        opt.step()
        total += loss.item()
    return total


@_workload(default_steps=5)
def sam_prompt_train(*, steps: int, seed: int) -> float:
    """Segment Anything's promptable mask training (Kirillov et al. 2023, as facebookresearch's
    segment-anything, modeling/image_encoder.py, prompt_encoder.py, mask_decoder.py and
    transformer.py, with the paper's training recipe for the first interaction): batch 2 images of
    256 x 256 each with a drawn number of overlapping ellipses and boxes (4-20 drawn, those left with
    over 64 visible pixels kept: first run 20-27 masks a step, second run 10-37; the data
    generator); a ViT image encoder (16 x 16 patches, width 256, 4 blocks with 8 x 8 windowed
    attention and global attention at blocks 1 and 3, decomposed relative positions, the conv and
    LayerNorm2d neck to 256); per mask, with equal probability, a foreground point drawn from the mask
    or its box jittered by 10% of its side (at most 20 px), each kind through the prompt encoder
    (random Fourier positions, point and corner embeddings set by boolean masks over the labels) and
    the mask decoder in one call per image and kind, so the image embedding is repeat-interleaved to
    the drawn prompt count: the two-way transformer (2 blocks, 8 heads, MLP 2048, token-to-image and
    image-to-token attention at half width), the transposed-conv upscaling to 64 x 64, hypernetwork
    MLPs per mask token and the IoU head; 3 masks for a point and 1 for a box, bilinearly upsampled to
    256 x 256; loss 20 x focal + dice on the lowest-loss mask and the MSE of the predicted IoUs,
    AdamW 8e-4 (weight decay 0.1) with linear warm-up. The prompt counts (every decoder tensor) follow
    the data; 5 steps. The reference's ViT-H at 1,024 with up to 64 masks an image and 11 interactions
    was not run; 4-32 objects gave 718.61 MiB, so 4-20 (417.82 MiB, 61,422 events)."""
    torch.manual_seed(0)
    batch, img, patch, enc_dim, enc_depth, enc_heads, window, global_at = 2, 256, 16, 256, 4, 4, 8, (1, 3)
    dim, dec_heads, mlp_dim, n_mask_tokens, obj_lo, obj_hi = 256, 8, 2048, 4, 4, 20
    grid = img // patch
    gen = torch.Generator().manual_seed(157 + seed)

    class LayerNorm2d(nn.Module):
        def __init__(self, c: int) -> None:
            super().__init__()
            self.weight, self.bias = nn.Parameter(torch.ones(c)), nn.Parameter(torch.zeros(c))

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            u = x.mean(1, keepdim=True)
            s = (x - u).pow(2).mean(1, keepdim=True)
            x = (x - u) / torch.sqrt(s + 1e-6)
            return self.weight[:, None, None] * x + self.bias[:, None, None]

    def get_rel_pos(q_size: int, k_size: int, rel_pos: torch.Tensor) -> torch.Tensor:
        q_coords = torch.arange(q_size)[:, None] * max(k_size / q_size, 1.0)
        k_coords = torch.arange(k_size)[None, :] * max(q_size / k_size, 1.0)
        return rel_pos[((q_coords - k_coords) + (k_size - 1) * max(q_size / k_size, 1.0)).long()]

    class EncAttention(nn.Module):
        def __init__(self, size: int) -> None:
            super().__init__()
            self.qkv, self.proj = nn.Linear(enc_dim, 3 * enc_dim), nn.Linear(enc_dim, enc_dim)
            hd = enc_dim // enc_heads
            self.scale = hd ** -0.5
            self.rel_pos_h, self.rel_pos_w = nn.Parameter(torch.zeros(2 * size - 1, hd)), nn.Parameter(torch.zeros(2 * size - 1, hd))

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            b, h, w, _ = x.shape
            qkv = self.qkv(x).reshape(b, h * w, 3, enc_heads, -1).permute(2, 0, 3, 1, 4)
            q, k, v = qkv.reshape(3, b * enc_heads, h * w, -1).unbind(0)
            attn = (q * self.scale) @ k.transpose(-2, -1)
            r_q = q.reshape(b * enc_heads, h, w, -1)
            rel_h = torch.einsum("bhwc,hkc->bhwk", r_q, get_rel_pos(h, h, self.rel_pos_h))
            rel_w = torch.einsum("bhwc,wkc->bhwk", r_q, get_rel_pos(w, w, self.rel_pos_w))
            attn = (attn.view(-1, h, w, h, w) + rel_h[:, :, :, :, None] + rel_w[:, :, :, None, :]).view(-1, h * w, h * w)
            x = (attn.softmax(dim=-1) @ v).view(b, enc_heads, h, w, -1).permute(0, 2, 3, 1, 4).reshape(b, h, w, -1)
            return self.proj(x)

    class EncBlock(nn.Module):
        def __init__(self, ws: int) -> None:
            super().__init__()
            self.ws = ws
            self.norm1, self.norm2 = nn.LayerNorm(enc_dim, eps=1e-6), nn.LayerNorm(enc_dim, eps=1e-6)
            self.attn = EncAttention(ws if ws > 0 else grid)
            self.mlp = nn.Sequential(nn.Linear(enc_dim, 4 * enc_dim), nn.GELU(), nn.Linear(4 * enc_dim, enc_dim))

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            shortcut = x
            x = self.norm1(x)
            if self.ws > 0:  # window_partition / window_unpartition (the grid is a multiple of the window: no pad)
                b, h, w, c = x.shape
                ws = self.ws
                x = x.view(b, h // ws, ws, w // ws, ws, c).permute(0, 1, 3, 2, 4, 5).reshape(-1, ws, ws, c)
                x = self.attn(x)
                x = x.view(b, h // ws, w // ws, ws, ws, -1).permute(0, 1, 3, 2, 4, 5).reshape(b, h, w, -1)
            else:
                x = self.attn(x)
            x = shortcut + x
            return x + self.mlp(self.norm2(x))

    class ImageEncoderViT(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.patch_embed = nn.Conv2d(3, enc_dim, patch, patch)
            self.pos_embed = nn.Parameter(torch.zeros(1, grid, grid, enc_dim))
            self.blocks = nn.ModuleList(EncBlock(0 if i in global_at else window) for i in range(enc_depth))
            self.neck = nn.Sequential(nn.Conv2d(enc_dim, dim, 1, bias=False), LayerNorm2d(dim),
                                      nn.Conv2d(dim, dim, 3, padding=1, bias=False), LayerNorm2d(dim))

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            x = self.patch_embed(x).permute(0, 2, 3, 1) + self.pos_embed
            for blk in self.blocks:
                x = blk(x)
            return self.neck(x.permute(0, 3, 1, 2))

    class PromptEncoder(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.register_buffer("gaussian", torch.randn(2, dim // 2))  # PositionEmbeddingRandom, scale 1
            self.point_embeddings = nn.ModuleList(nn.Embedding(1, dim) for _ in range(4))
            self.not_a_point_embed, self.no_mask_embed = nn.Embedding(1, dim), nn.Embedding(1, dim)

        def pe_encoding(self, coords: torch.Tensor) -> torch.Tensor:
            coords = 2 * math.pi * ((2 * coords - 1) @ self.gaussian)
            return torch.cat([torch.sin(coords), torch.cos(coords)], dim=-1)

        def dense_pe(self) -> torch.Tensor:
            g = torch.ones((grid, grid))
            y_embed, x_embed = (g.cumsum(dim=0) - 0.5) / grid, (g.cumsum(dim=1) - 0.5) / grid
            return self.pe_encoding(torch.stack([x_embed, y_embed], dim=-1)).permute(2, 0, 1).unsqueeze(0)

        def with_coords(self, coords_input: torch.Tensor) -> torch.Tensor:
            coords = coords_input.clone()
            coords[:, :, 0] = coords[:, :, 0] / img
            coords[:, :, 1] = coords[:, :, 1] / img
            return self.pe_encoding(coords.float())

        def forward(self, points: tuple[torch.Tensor, torch.Tensor] | None, boxes: torch.Tensor | None
                    ) -> tuple[torch.Tensor, torch.Tensor]:
            bs = points[0].shape[0] if points is not None else boxes.shape[0]  # type: ignore[union-attr]
            sparse = torch.empty((bs, 0, dim))
            if points is not None:
                coords, labels = points
                coords = torch.cat([coords + 0.5, torch.zeros((bs, 1, 2))], dim=1)  # pad: no box with the points
                labels = torch.cat([labels, -torch.ones((bs, 1))], dim=1)
                pe = self.with_coords(coords)
                pe[labels == -1] = 0.0
                pe[labels == -1] += self.not_a_point_embed.weight
                pe[labels == 0] += self.point_embeddings[0].weight
                pe[labels == 1] += self.point_embeddings[1].weight
                sparse = torch.cat([sparse, pe], dim=1)
            if boxes is not None:
                corner = self.with_coords((boxes + 0.5).reshape(-1, 2, 2))
                corner[:, 0, :] += self.point_embeddings[2].weight
                corner[:, 1, :] += self.point_embeddings[3].weight
                sparse = torch.cat([sparse, corner], dim=1)
            dense = self.no_mask_embed.weight.reshape(1, -1, 1, 1).expand(bs, -1, grid, grid)
            return sparse, dense

    class Attention(nn.Module):
        def __init__(self, downsample: int = 1) -> None:
            super().__init__()
            internal = dim // downsample
            self.q_proj, self.k_proj, self.v_proj = (nn.Linear(dim, internal) for _ in range(3))
            self.out_proj = nn.Linear(internal, dim)

        def forward(self, q: torch.Tensor, k: torch.Tensor, v: torch.Tensor) -> torch.Tensor:
            q, k, v = self.q_proj(q), self.k_proj(k), self.v_proj(v)
            b = q.shape[0]
            q, k, v = (t.reshape(b, t.shape[1], dec_heads, -1).transpose(1, 2) for t in (q, k, v))
            attn = torch.softmax(q @ k.permute(0, 1, 3, 2) / math.sqrt(q.shape[-1]), dim=-1)
            out = (attn @ v).transpose(1, 2)
            return self.out_proj(out.reshape(b, out.shape[1], -1))

    class TwoWayAttentionBlock(nn.Module):
        def __init__(self, skip_first_layer_pe: bool) -> None:
            super().__init__()
            self.self_attn, self.cross_t2i, self.cross_i2t = Attention(), Attention(2), Attention(2)
            self.norm1, self.norm2, self.norm3, self.norm4 = (nn.LayerNorm(dim) for _ in range(4))
            self.mlp = nn.Sequential(nn.Linear(dim, mlp_dim), nn.ReLU(), nn.Linear(mlp_dim, dim))
            self.skip_first_layer_pe = skip_first_layer_pe

        def forward(self, queries: torch.Tensor, keys: torch.Tensor, query_pe: torch.Tensor, key_pe: torch.Tensor
                    ) -> tuple[torch.Tensor, torch.Tensor]:
            if self.skip_first_layer_pe:
                queries = self.self_attn(queries, queries, queries)
            else:
                q = queries + query_pe
                queries = queries + self.self_attn(q, q, queries)
            queries = self.norm1(queries)
            q, k = queries + query_pe, keys + key_pe
            queries = self.norm2(queries + self.cross_t2i(q, k, keys))
            queries = self.norm3(queries + self.mlp(queries))
            q, k = queries + query_pe, keys + key_pe
            keys = self.norm4(keys + self.cross_i2t(k, q, queries))
            return queries, keys

    class MaskDecoder(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.layers = nn.ModuleList(TwoWayAttentionBlock(i == 0) for i in range(2))
            self.final_attn, self.norm_final = Attention(2), nn.LayerNorm(dim)
            self.iou_token, self.mask_tokens = nn.Embedding(1, dim), nn.Embedding(n_mask_tokens, dim)
            self.output_upscaling = nn.Sequential(nn.ConvTranspose2d(dim, dim // 4, 2, 2), LayerNorm2d(dim // 4), nn.GELU(),
                                                  nn.ConvTranspose2d(dim // 4, dim // 8, 2, 2), nn.GELU())

            def mlp(cout: int) -> nn.Sequential:
                return nn.Sequential(nn.Linear(dim, dim), nn.ReLU(), nn.Linear(dim, dim), nn.ReLU(), nn.Linear(dim, cout))
            self.hypernetworks = nn.ModuleList(mlp(dim // 8) for _ in range(n_mask_tokens))
            self.iou_head = mlp(n_mask_tokens)

        def forward(self, image_embeddings: torch.Tensor, image_pe: torch.Tensor, sparse: torch.Tensor,
                    dense: torch.Tensor, multimask: bool) -> tuple[torch.Tensor, torch.Tensor]:
            output_tokens = torch.cat([self.iou_token.weight, self.mask_tokens.weight], dim=0)
            tokens = torch.cat((output_tokens.unsqueeze(0).expand(sparse.size(0), -1, -1), sparse), dim=1)
            src = torch.repeat_interleave(image_embeddings, tokens.shape[0], dim=0) + dense
            pos_src = torch.repeat_interleave(image_pe, tokens.shape[0], dim=0)
            b, c, h, w = src.shape
            keys, key_pe, queries = src.flatten(2).permute(0, 2, 1), pos_src.flatten(2).permute(0, 2, 1), tokens
            for layer in self.layers:
                queries, keys = layer(queries, keys, tokens, key_pe)
            q, k = queries + tokens, keys + key_pe
            hs = self.norm_final(queries + self.final_attn(q, k, keys))
            upscaled = self.output_upscaling(keys.transpose(1, 2).view(b, c, h, w))
            hyper_in = torch.stack([mlp(hs[:, 1 + i, :]) for i, mlp in enumerate(self.hypernetworks)], dim=1)
            b, c, h, w = upscaled.shape
            masks = (hyper_in @ upscaled.view(b, c, h * w)).view(b, -1, h, w)
            iou_pred = self.iou_head(hs[:, 0, :])
            sl = slice(1, None) if multimask else slice(0, 1)
            return masks[:, sl], iou_pred[:, sl]

    image_encoder, prompt_encoder, mask_decoder = ImageEncoderViT(), PromptEncoder(), MaskDecoder()
    params = [*image_encoder.parameters(), *prompt_encoder.parameters(), *mask_decoder.parameters()]
    opt = torch.optim.AdamW(params, lr=8e-4, betas=(0.9, 0.999), weight_decay=0.1)
    sched = torch.optim.lr_scheduler.LambdaLR(opt, lambda it: min(1.0, (it + 1) / 250))
    pixel_mean, pixel_std = torch.tensor([123.675, 116.28, 103.53]).view(3, 1, 1), torch.tensor([58.395, 57.12, 57.375]).view(3, 1, 1)
    yy, xx = torch.meshgrid(torch.arange(img, dtype=torch.float32), torch.arange(img, dtype=torch.float32), indexing="ij")

    def scene() -> tuple[torch.Tensor, torch.Tensor]:
        """A drawn number of overlapping ellipses and boxes; each object's mask is its visible part."""
        k = int(torch.randint(obj_lo, obj_hi + 1, (1,), generator=gen))
        centre = torch.rand(k, 2, 1, 1, generator=gen) * img
        half = (0.03 + 0.15 * torch.rand(k, 2, 1, 1, generator=gen)) * img
        dx, dy = (xx - centre[:, 0]) / half[:, 0], (yy - centre[:, 1]) / half[:, 1]
        ellipse = torch.rand(k, 1, 1, generator=gen) < 0.5
        inside = torch.where(ellipse, dx ** 2 + dy ** 2 < 1, (dx.abs() < 1) & (dy.abs() < 1))
        top = (inside * torch.arange(1, k + 1).view(k, 1, 1)).argmax(0)
        masks = inside & (top[None] == torch.arange(k).view(k, 1, 1))
        masks = masks[masks.flatten(1).sum(1) > 64]  # objects left visible
        colour = torch.rand(k + 1, 3, generator=gen) * 255
        image = torch.where(inside.any(0), colour[top].permute(2, 0, 1), colour[k].view(3, 1, 1) * (0.5 + yy / img / 2))
        image = (image + 12 * torch.randn(3, img, img, generator=gen) - pixel_mean) / pixel_std
        return image, masks

    def prompts(masks: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        """SAM's first interaction: a foreground point or a noisy box, with equal probability, per mask."""
        is_point = torch.rand(masks.shape[0], generator=gen) < 0.5
        pick = torch.multinomial(masks.flatten(1).float(), 1, generator=gen).squeeze(1)
        point = torch.stack([pick % img, pick // img], dim=1).float()
        ys, xs = masks.any(2), masks.any(1)
        ar = torch.arange(img, dtype=torch.float32)
        x0, x1 = torch.where(xs, ar, float(img)).min(1)[0], torch.where(xs, ar, -1.0).max(1)[0]
        y0, y1 = torch.where(ys, ar, float(img)).min(1)[0], torch.where(ys, ar, -1.0).max(1)[0]
        box = torch.stack([x0, y0, x1, y1], dim=1)
        side = torch.stack([x1 - x0, y1 - y0, x1 - x0, y1 - y0], dim=1)
        box = (box + (0.1 * side * torch.randn(box.shape, generator=gen)).clamp(-20, 20)).clamp(0, img - 1)
        return is_point, point, box

    def mask_loss(logits: torch.Tensor, gt: torch.Tensor) -> torch.Tensor:
        """20 x focal + dice per mask (SAM's recipe), (n, m) for m outputs."""
        prob = logits.sigmoid()
        ce = nn.functional.binary_cross_entropy_with_logits(logits, gt, reduction="none")
        p_t = prob * gt + (1 - prob) * (1 - gt)
        focal = (ce * (1 - p_t) ** 2 * (0.25 * gt + 0.75 * (1 - gt))).flatten(2).mean(-1)
        inter = (prob * gt).flatten(2).sum(-1)
        dice = 1 - (2 * inter + 1) / (prob.flatten(2).sum(-1) + gt.flatten(2).sum(-1) + 1)
        return 20 * focal + dice

    total = 0.0
    for _ in range(steps):
        scenes = [scene() for _ in range(batch)]
        opt.zero_grad(set_to_none=True)
        image_embeddings = image_encoder(torch.stack([s[0] for s in scenes]))
        image_pe = prompt_encoder.dense_pe()
        losses = []
        for emb_i, (_, gt) in zip(image_embeddings, scenes):
            is_point, point, box = prompts(gt)
            for multimask, sel in ((True, is_point), (False, ~is_point)):
                if not bool(sel.any()):
                    continue
                if multimask:
                    pts = (point[sel][:, None, :], torch.ones(int(sel.sum()), 1))
                    sparse, dense = prompt_encoder(pts, None)
                else:
                    sparse, dense = prompt_encoder(None, box[sel])
                low_res, iou_pred = mask_decoder(emb_i.unsqueeze(0), image_pe, sparse, dense, multimask)
                logits = nn.functional.interpolate(low_res, (img, img), mode="bilinear", align_corners=False)
                target = gt[sel].unsqueeze(1).float()
                per_mask = mask_loss(logits, target.expand_as(logits))
                with torch.no_grad():
                    pred = logits > 0
                    inter = (pred & (target > 0)).flatten(2).sum(-1).float()
                    iou = inter / (pred | (target > 0)).flatten(2).sum(-1).float().clamp(min=1)
                losses.append(per_mask.min(dim=1)[0].sum() + nn.functional.mse_loss(iou_pred, iou, reduction="sum"))
        n_masks = sum(int(s[1].shape[0]) for s in scenes)
        loss = torch.stack(losses).sum() / n_masks
        loss.backward()
        opt.step()
        sched.step()
        total += loss.item()
    return total


@_workload(default_steps=5)
def timesformer_video_train(*, steps: int, seed: int) -> float:
    """TimeSformer video classification with divided space-time attention (Bertasius et al. 2021, as
    facebookresearch's TimeSformer, timesformer/models/vit.py with attention_type 'divided_space_time',
    the Kinetics-400 TimeSformer_divST_8x32_224 recipe): batch 8 clips of 8 frames of 128 x 128 (drawn
    clips of 1-3 coloured discs and boxes moving along drawn straight paths over a drawn textured
    background, a drawn label of 400 classes; the data generator); a 16 x 16 patch embedding Conv2d
    per frame (8 x 8 patches), a class token, learned spatial and temporal position embeddings (the
    reference's '(b t) n m -> (b n) t m' rearrangements), tokens ordered as '(h w t)'; 6 blocks of width
    192 with 3 heads (ViT-Ti's width where the reference has ViT-B's 768 x 12 blocks): each block a
    temporal attention over the 8 frames of every patch position ((b h w) x 8 tokens, LayerNorm,
    qkv with bias, softmax, the projection) through the temporal_fc (zero-initialised after the
    first block) added to the tokens, then a spatial attention over each frame's 64 patches with the
    class token repeated to every frame ((b t) x 65 tokens) and averaged back over the frames, the
    residual sums as the reference writes them with torch.cat, an MLP of 4x with GELU, stochastic
    depth to 0.1; the final LayerNorm, the class token to a Linear 192-400; cross-entropy, SGD 0.005
    with momentum 0.9 and weight decay 1e-4 (the reference's steps schedule at its first rate). Fixed
    shapes (every step allocates the same sizes in the same order); 5 steps. 8 blocks gave 671.63 MiB,
    so 6 (516.20 MiB, 15,236 events); the reference's ViT-B at 224 x 224 was not run."""
    torch.manual_seed(0)
    batch, frames, size, patch, dim, depth, nh, n_cls = 8, 8, 128, 16, 192, 6, 3, 400
    gen = torch.Generator().manual_seed(158 + seed)
    side = size // patch
    n_patch = side * side

    class Attention(nn.Module):  # the reference's Attention (qkv_bias=True, no dropout)
        def __init__(self) -> None:
            super().__init__()
            self.scale = (dim // nh) ** -0.5
            self.qkv, self.proj = nn.Linear(dim, 3 * dim), nn.Linear(dim, dim)

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            b, n, c = x.shape
            qkv = self.qkv(x).reshape(b, n, 3, nh, c // nh).permute(2, 0, 3, 1, 4)
            q, k, v = qkv[0], qkv[1], qkv[2]
            attn = ((q @ k.transpose(-2, -1)) * self.scale).softmax(dim=-1)
            return self.proj((attn @ v).transpose(1, 2).reshape(b, n, c))

    class Block(nn.Module):  # divided space-time attention
        def __init__(self, drop_path: float) -> None:
            super().__init__()
            self.temporal_norm1, self.temporal_attn, self.temporal_fc = nn.LayerNorm(dim), Attention(), nn.Linear(dim, dim)
            self.norm1, self.attn, self.norm2 = nn.LayerNorm(dim), Attention(), nn.LayerNorm(dim)
            self.mlp = nn.Sequential(nn.Linear(dim, 4 * dim), nn.GELU(), nn.Linear(4 * dim, dim))
            self.drop_path = drop_path

        def dp(self, x: torch.Tensor) -> torch.Tensor:  # timm's DropPath
            if not self.training or self.drop_path == 0.0:
                return x
            keep = 1 - self.drop_path
            mask = (keep + torch.rand((x.shape[0], 1, 1), dtype=x.dtype)).floor_()
            return x.div(keep) * mask

        def forward(self, x: torch.Tensor, b: int, t: int) -> torch.Tensor:
            hw = (x.size(1) - 1) // t
            # temporal: 'b (h w t) m -> (b h w) t m'
            xt = x[:, 1:, :].reshape(b * hw, t, dim)
            res_temporal = self.dp(self.temporal_attn(self.temporal_norm1(xt)))
            res_temporal = self.temporal_fc(res_temporal.reshape(b, hw * t, dim))
            xt = x[:, 1:, :] + res_temporal
            # spatial: 'b (h w t) m -> (b t) (h w) m', the class token repeated to every frame
            init_cls_token = x[:, 0, :].unsqueeze(1)
            cls_token = init_cls_token.repeat(1, t, 1).reshape(b * t, dim).unsqueeze(1)
            xs = xt.reshape(b, hw, t, dim).permute(0, 2, 1, 3).reshape(b * t, hw, dim)
            xs = torch.cat((cls_token, xs), 1)
            res_spatial = self.dp(self.attn(self.norm1(xs)))
            cls_token = res_spatial[:, 0, :].reshape(b, t, dim).mean(1, True)
            res_spatial = res_spatial[:, 1:, :].reshape(b, t, hw, dim).permute(0, 2, 1, 3).reshape(b, hw * t, dim)
            x = torch.cat((init_cls_token, xt), 1) + torch.cat((cls_token, res_spatial), 1)
            return x + self.dp(self.mlp(self.norm2(x)))

    class TimeSformer(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.patch_embed = nn.Conv2d(3, dim, patch, patch)
            self.cls_token = nn.Parameter(torch.zeros(1, 1, dim))
            self.pos_embed = nn.Parameter(torch.zeros(1, n_patch + 1, dim))
            self.time_embed = nn.Parameter(torch.zeros(1, frames, dim))
            nn.init.trunc_normal_(self.pos_embed, std=0.02)
            nn.init.trunc_normal_(self.cls_token, std=0.02)
            dpr = torch.linspace(0, 0.1, depth).tolist()
            self.blocks = nn.ModuleList(Block(dpr[i]) for i in range(depth))
            for i, blk in enumerate(self.blocks):
                if i > 0:
                    nn.init.zeros_(blk.temporal_fc.weight)
                    nn.init.zeros_(blk.temporal_fc.bias)
            self.norm, self.head = nn.LayerNorm(dim), nn.Linear(dim, n_cls)

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            b, _, t, h, w = x.shape
            x = x.permute(0, 2, 1, 3, 4).reshape(b * t, 3, h, w)  # 'b c t h w -> (b t) c h w'
            x = self.patch_embed(x).flatten(2).transpose(1, 2)
            x = torch.cat((self.cls_token.expand(x.size(0), -1, -1), x), dim=1) + self.pos_embed
            cls_tokens = x[:b, 0, :].unsqueeze(1)
            x = x[:, 1:].reshape(b, t, n_patch, dim).permute(0, 2, 1, 3).reshape(b * n_patch, t, dim)  # '(b t) n m -> (b n) t m'
            x = x + self.time_embed
            x = torch.cat((cls_tokens, x.reshape(b, n_patch * t, dim)), dim=1)  # '(b n) t m -> b (n t) m'
            for blk in self.blocks:
                x = blk(x, b, t)
            return self.head(self.norm(x)[:, 0])

    model = TimeSformer()
    opt = torch.optim.SGD(model.parameters(), lr=0.005, momentum=0.9, weight_decay=1e-4)
    coords = torch.arange(size, dtype=torch.float32)
    tt = torch.arange(frames, dtype=torch.float32).view(1, frames, 1, 1)

    def clips() -> tuple[torch.Tensor, torch.Tensor]:
        """Drawn clips: moving discs and boxes over a drawn texture, normalised as the reference's loader."""
        out = 0.3 * torch.rand(batch, 3, 1, 1, 1, generator=gen) + 0.1 * torch.randn(batch, 3, 1, size, size, generator=gen)
        out = out.expand(-1, -1, frames, -1, -1).clone()
        for _ in range(3):
            present = (torch.rand(batch, generator=gen) < 0.7).float().view(batch, 1, 1, 1)
            start = torch.rand(batch, 2, generator=gen) * size
            vel = (torch.rand(batch, 2, generator=gen) - 0.5) * 12
            radius = 8 + 16 * torch.rand(batch, 1, 1, 1, generator=gen)
            cx = (start[:, 0].view(batch, 1, 1, 1) + vel[:, 0].view(batch, 1, 1, 1) * tt)
            cy = (start[:, 1].view(batch, 1, 1, 1) + vel[:, 1].view(batch, 1, 1, 1) * tt)
            dx, dy = coords.view(1, 1, 1, size) - cx, coords.view(1, 1, size, 1) - cy
            disc = torch.rand(batch, 1, 1, 1, generator=gen) < 0.5
            inside = torch.where(disc, dx ** 2 + dy ** 2 < radius ** 2, (dx.abs() < radius) & (dy.abs() < radius)).float() * present
            colour = torch.rand(batch, 3, 1, 1, 1, generator=gen)
            out = out * (1 - inside.unsqueeze(1)) + colour * inside.unsqueeze(1)
        out = (out - 0.45) / 0.225
        return out, torch.randint(0, n_cls, (batch,), generator=gen)

    total = 0.0
    for _ in range(steps):
        x, y = clips()
        opt.zero_grad(set_to_none=True)
        loss = nn.functional.cross_entropy(model(x), y)
        loss.backward()
        opt.step()
        total += loss.item()
    return total


@_workload(default_steps=5)
def centernet_detect_train(*, steps: int, seed: int) -> float:
    """CenterNet object detection as points (Zhou et al. 2019, "Objects as Points", as xingyizhou's
    CenterNet, src/lib/models/networks/msra_resnet.py, datasets/sample/ctdet.py, utils/image.py,
    models/losses.py and trains/ctdet.py, the ctdet COCO recipe with the res_18 backbone): batch 6
    drawn 256 x 256 images of 1-24 objects each (boxes of the 80 classes drawn as filled rectangles
    and ellipses of per-class colours over a textured background; the data generator), their targets
    made per image in numpy as ctdet.py makes them and stacked as the default collate does: a
    64 x 64 x 80 heatmap with a Gaussian splatted per object (gaussian_radius with min_overlap 0.7,
    draw_umich_gaussian), and the box sizes, centre offsets, flat centre indices and a mask padded to
    max_objs 128 (so the shapes do not follow the object count); the MSRA ResNet-18 (BasicBlocks 2,
    2, 2, 2 to stride 32) with three ConvTranspose2d 4 x 4 stride 2 layers of 256 channels with
    BatchNorm and ReLU back to stride 4, and three heads (3 x 3 conv to head_conv 64, ReLU, 1 x 1 conv
    to 80 heatmap logits with the bias at -2.19, to 2 sizes, to 2 offsets); the reference's losses:
    the penalty-reduced focal loss over the clamped sigmoid heatmap (alpha 2, beta 4, normalised by
    the object count) and the RegL1Loss of the size (weight 0.1) and offset (weight 1) heads at the
    128 indices (_transpose_and_gather_feat, masked sums); Adam 1.25e-4 (the reference's rate for
    batch 32; no flips or affine crops). Fixed shapes (every step allocates the same sizes in the same
    order); 5 steps. The reference's 512 x 512 input was not run; batch 8 of 384 x 384 gave 1.21 GiB and
    batch 8 of 256 x 256 650.66 MiB, so batch 6 of 256 x 256 (533.28 MiB, 16,926 events)."""
    torch.manual_seed(0)
    batch, size, down, n_cls, max_objs, head_conv = 6, 256, 4, 80, 128, 64
    out_size = size // down
    rng = np.random.default_rng(159 + seed)
    palette = np.random.default_rng(159).random((n_cls, 3)).astype(np.float32)

    class BasicBlock(nn.Module):
        def __init__(self, cin: int, cout: int, stride: int) -> None:
            super().__init__()
            self.conv1, self.bn1 = nn.Conv2d(cin, cout, 3, stride, 1, bias=False), nn.BatchNorm2d(cout, momentum=0.1)
            self.conv2, self.bn2 = nn.Conv2d(cout, cout, 3, 1, 1, bias=False), nn.BatchNorm2d(cout, momentum=0.1)
            self.downsample = (nn.Sequential(nn.Conv2d(cin, cout, 1, stride, bias=False), nn.BatchNorm2d(cout, momentum=0.1))
                               if stride != 1 or cin != cout else None)

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            out = torch.relu(self.bn1(self.conv1(x)))
            out = self.bn2(self.conv2(out))
            return torch.relu(out + (x if self.downsample is None else self.downsample(x)))

    class PoseResNet(nn.Module):  # msra_resnet.py's get_pose_net(18, heads, head_conv=64)
        def __init__(self) -> None:
            super().__init__()
            self.stem = nn.Sequential(nn.Conv2d(3, 64, 7, 2, 3, bias=False), nn.BatchNorm2d(64, momentum=0.1), nn.ReLU(),
                                      nn.MaxPool2d(3, 2, 1))
            layers, cin = [], 64
            for i, c in enumerate((64, 128, 256, 512)):
                layers += [BasicBlock(cin, c, 1 if i == 0 else 2), BasicBlock(c, c, 1)]
                cin = c
            self.layers = nn.Sequential(*layers)
            deconv = []
            for _ in range(3):
                deconv += [nn.ConvTranspose2d(cin, 256, 4, 2, 1, 0, bias=False), nn.BatchNorm2d(256, momentum=0.1), nn.ReLU()]
                cin = 256
            self.deconv_layers = nn.Sequential(*deconv)
            self.heads = nn.ModuleDict({h: nn.Sequential(nn.Conv2d(256, head_conv, 3, padding=1), nn.ReLU(), nn.Conv2d(head_conv, c, 1))
                                        for h, c in (("hm", n_cls), ("wh", 2), ("reg", 2))})
            nn.init.constant_(self.heads["hm"][-1].bias, -2.19)

        def forward(self, x: torch.Tensor) -> dict[str, torch.Tensor]:
            x = self.deconv_layers(self.layers(self.stem(x)))
            return {h: head(x) for h, head in self.heads.items()}

    def gaussian_radius(height: float, width: float, min_overlap: float = 0.7) -> float:
        b1, c1 = height + width, width * height * (1 - min_overlap) / (1 + min_overlap)
        r1 = (b1 + math.sqrt(b1 ** 2 - 4 * c1)) / 2
        b2, c2 = 2 * (height + width), (1 - min_overlap) * width * height
        r2 = (b2 + math.sqrt(b2 ** 2 - 16 * c2)) / 2
        a3, b3, c3 = 4 * min_overlap, -2 * min_overlap * (height + width), (min_overlap - 1) * width * height
        r3 = (b3 + math.sqrt(b3 ** 2 - 4 * a3 * c3)) / 2
        return min(r1, r2, r3)

    def draw_umich_gaussian(heatmap: np.ndarray, cx: int, cy: int, radius: int) -> None:
        diameter = 2 * radius + 1
        sigma = diameter / 6
        yy, xx = np.ogrid[-radius:radius + 1, -radius:radius + 1]
        gaussian = np.exp(-(xx * xx + yy * yy) / (2 * sigma * sigma))
        gaussian[gaussian < np.finfo(gaussian.dtype).eps * gaussian.max()] = 0
        height, width = heatmap.shape
        left, right = min(cx, radius), min(width - cx, radius + 1)
        top, bottom = min(cy, radius), min(height - cy, radius + 1)
        masked_heatmap = heatmap[cy - top:cy + bottom, cx - left:cx + right]
        masked_gaussian = gaussian[radius - top:radius + bottom, radius - left:radius + right]
        if min(masked_gaussian.shape) > 0 and min(masked_heatmap.shape) > 0:
            np.maximum(masked_heatmap, masked_gaussian, out=masked_heatmap)

    yy_img, xx_img = np.mgrid[0:size, 0:size].astype(np.float32)

    def sample() -> dict[str, np.ndarray]:
        """One drawn image and its ctdet targets, as ctdet.py's __getitem__ returns them."""
        img = (0.2 + 0.3 * rng.random((3, 1, 1)) + 0.08 * rng.standard_normal((3, size, size))).astype(np.float32)
        hm = np.zeros((n_cls, out_size, out_size), dtype=np.float32)
        wh = np.zeros((max_objs, 2), dtype=np.float32)
        reg = np.zeros((max_objs, 2), dtype=np.float32)
        ind = np.zeros((max_objs,), dtype=np.int64)
        reg_mask = np.zeros((max_objs,), dtype=np.uint8)
        for k in range(int(rng.integers(1, 25))):
            w, h = rng.uniform(12, 160, 2)
            x0, y0 = rng.uniform(0, size - w), rng.uniform(0, size - h)
            cls = int(rng.integers(0, n_cls))
            if rng.random() < 0.5:
                inside = (xx_img >= x0) & (xx_img < x0 + w) & (yy_img >= y0) & (yy_img < y0 + h)
            else:
                inside = ((xx_img - x0 - w / 2) / (w / 2)) ** 2 + ((yy_img - y0 - h / 2) / (h / 2)) ** 2 < 1
            img[:, inside] = palette[cls][:, None] * (0.7 + 0.3 * rng.random())
            bw, bh = w / down, h / down
            radius = max(0, int(gaussian_radius(math.ceil(bh), math.ceil(bw))))
            ct = np.array([(x0 + w / 2) / down, (y0 + h / 2) / down], dtype=np.float32)
            ct_int = ct.astype(np.int32)
            draw_umich_gaussian(hm[cls], int(ct_int[0]), int(ct_int[1]), radius)
            wh[k] = bw, bh
            ind[k] = ct_int[1] * out_size + ct_int[0]
            reg[k] = ct - ct_int
            reg_mask[k] = 1
        img = (img - 0.408) / 0.289
        return {"input": img, "hm": hm, "reg_mask": reg_mask, "ind": ind, "wh": wh, "reg": reg}

    def collate(samples: list[dict[str, np.ndarray]]) -> dict[str, torch.Tensor]:
        return {k: torch.stack([torch.from_numpy(s[k]) for s in samples]) for k in samples[0]}

    def _sigmoid(x: torch.Tensor) -> torch.Tensor:
        return torch.clamp(x.sigmoid_(), min=1e-4, max=1 - 1e-4)

    def _neg_loss(pred: torch.Tensor, gt: torch.Tensor) -> torch.Tensor:  # losses.py's FocalLoss
        pos_inds = gt.eq(1).float()
        neg_inds = gt.lt(1).float()
        neg_weights = torch.pow(1 - gt, 4)
        pos_loss = (torch.log(pred) * torch.pow(1 - pred, 2) * pos_inds).sum()
        neg_loss = (torch.log(1 - pred) * torch.pow(pred, 2) * neg_weights * neg_inds).sum()
        num_pos = pos_inds.float().sum()
        if num_pos == 0:
            return -neg_loss
        return -(pos_loss + neg_loss) / num_pos

    def _transpose_and_gather_feat(feat: torch.Tensor, ind: torch.Tensor) -> torch.Tensor:
        feat = feat.permute(0, 2, 3, 1).contiguous()
        feat = feat.view(feat.size(0), -1, feat.size(3))
        index = ind.unsqueeze(2).expand(ind.size(0), ind.size(1), feat.size(2))
        return feat.gather(1, index)

    def reg_l1_loss(output: torch.Tensor, mask: torch.Tensor, ind: torch.Tensor, target: torch.Tensor) -> torch.Tensor:
        pred = _transpose_and_gather_feat(output, ind)
        mask = mask.unsqueeze(2).expand_as(pred).float()
        loss = nn.functional.l1_loss(pred * mask, target * mask, reduction="sum")
        return loss / (mask.sum() + 1e-4)

    model = PoseResNet()
    opt = torch.optim.Adam(model.parameters(), lr=1.25e-4)

    total = 0.0
    for _ in range(steps):
        b = collate([sample() for _ in range(batch)])
        opt.zero_grad(set_to_none=True)
        out = model(b["input"])
        hm_loss = _neg_loss(_sigmoid(out["hm"]), b["hm"])
        wh_loss = reg_l1_loss(out["wh"], b["reg_mask"], b["ind"], b["wh"])
        off_loss = reg_l1_loss(out["reg"], b["reg_mask"], b["ind"], b["reg"])
        loss = hm_loss + 0.1 * wh_loss + off_loss
        loss.backward()
        opt.step()
        total += loss.item()
    return total


@_workload(default_steps=5)
def patchtst_forecast_train(*, steps: int, seed: int) -> float:
    """PatchTST long-horizon forecasting (Nie et al. 2023, "A Time Series is Worth 64 Words", as
    yuqinie98's PatchTST, PatchTST_supervised/models/PatchTST.py, layers/PatchTST_backbone.py and
    layers/RevIN.py, the scripts/PatchTST/weather.sh recipe): a drawn weather-like series of 21
    channels (daily and yearly cycles of drawn phases and amplitudes at 10-minute steps, drawn
    trends, AR(1) noise; 52,696 time steps drawn once by the data generator), batch 12 windows of
    336 steps drawn at random starts each step to forecast the next 96; RevIN without affine
    parameters (the run_longExp.py defaults), each channel an independent sequence (batch x 21 of
    them), padded at the end by ReplicationPad1d(8) and unfolded into 42 patches of 16 with stride 8,
    a Linear 16-128 and learned positional encodings (uniform in +-0.02), dropout 0.2; 3 encoder
    layers of 16 heads (d_k 8) with residual attention (every layer's pre-softmax scores passed on
    and added to the next layer's), post-norm BatchNorm1d over the transposed tokens after the
    attention and after the feed-forward (128-256-128 with GELU), dropout 0.2; the flatten head
    (42 x 128 to 96), RevIN's denormalisation; MSE, Adam 1e-4 with OneCycleLR (pct_start 0.3,
    stepped every batch as the 'TST' schedule is). Fixed shapes (every step allocates the same sizes
    in the same order); 5 steps. The reference's batch is 128 (not run); batch 16 gave 618.09 MiB, so
    12 (467.26 MiB, 10,104 events)."""
    torch.manual_seed(0)
    batch, n_vars, seq_len, pred_len, patch_len, stride = 12, 21, 336, 96, 16, 8
    d_model, n_heads, d_ff, e_layers, dropout, total_len = 128, 16, 256, 3, 0.2, 52696
    patch_num = (seq_len - patch_len) // stride + 1 + 1  # padding_patch 'end'
    gen = torch.Generator().manual_seed(160 + seed)
    series_gen = torch.Generator().manual_seed(160)

    t_axis = torch.arange(total_len, dtype=torch.float32)
    phase = torch.rand(2, n_vars, generator=series_gen) * 2 * math.pi
    amp = torch.rand(2, n_vars, generator=series_gen) * torch.tensor([[2.0], [6.0]])
    trend = (torch.rand(n_vars, generator=series_gen) - 0.5) * 4 / total_len
    series = (amp[0] * torch.sin(2 * math.pi * t_axis[:, None] / 144 + phase[0])
              + amp[1] * torch.sin(2 * math.pi * t_axis[:, None] / 52560 + phase[1]) + trend * t_axis[:, None])
    noise = torch.randn(total_len, n_vars, generator=series_gen) * 0.3
    for i in range(1, 64):  # AR(1)-like coloured noise, a few taps
        noise[i:] += 0.9 ** i * 0.3 * torch.randn(total_len - i, n_vars, generator=series_gen) / 8
    series = series + noise + 10 * torch.rand(n_vars, generator=series_gen)
    train_end = int(total_len * 0.7)
    mean_, std_ = series[:train_end].mean(0), series[:train_end].std(0)
    series = (series - mean_) / std_  # the Dataset_Custom StandardScaler, fit on the train split
    del t_axis, noise

    class RevIN(nn.Module):  # affine=False, subtract_last=False
        def __init__(self, eps: float = 1e-5) -> None:
            super().__init__()
            self.eps = eps
            self.mean: torch.Tensor | None = None
            self.stdev: torch.Tensor | None = None

        def forward(self, x: torch.Tensor, mode: str) -> torch.Tensor:
            if mode == "norm":
                self.mean = torch.mean(x, dim=1, keepdim=True).detach()
                self.stdev = torch.sqrt(torch.var(x, dim=1, keepdim=True, unbiased=False) + self.eps).detach()
                return (x - self.mean) / self.stdev
            assert self.mean is not None and self.stdev is not None
            return x * self.stdev + self.mean

    class ScaledDotProductAttention(nn.Module):  # res_attention=True, lsa=False
        def __init__(self) -> None:
            super().__init__()
            self.scale = nn.Parameter(torch.tensor((d_model // n_heads) ** -0.5), requires_grad=False)

        def forward(self, q: torch.Tensor, k: torch.Tensor, v: torch.Tensor,
                    prev: torch.Tensor | None) -> tuple[torch.Tensor, torch.Tensor]:
            attn_scores = torch.matmul(q, k) * self.scale
            if prev is not None:
                attn_scores = attn_scores + prev
            attn_weights = nn.functional.softmax(attn_scores, dim=-1)
            return torch.matmul(attn_weights, v), attn_scores

    class MultiheadAttention(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            d_k = d_model // n_heads
            self.W_Q, self.W_K, self.W_V = nn.Linear(d_model, d_k * n_heads), nn.Linear(d_model, d_k * n_heads), nn.Linear(d_model, d_k * n_heads)
            self.sdp_attn = ScaledDotProductAttention()
            self.to_out = nn.Sequential(nn.Linear(n_heads * d_k, d_model), nn.Dropout(dropout))

        def forward(self, x: torch.Tensor, prev: torch.Tensor | None) -> tuple[torch.Tensor, torch.Tensor]:
            bs, d_k = x.size(0), d_model // n_heads
            q_s = self.W_Q(x).view(bs, -1, n_heads, d_k).transpose(1, 2)
            k_s = self.W_K(x).view(bs, -1, n_heads, d_k).permute(0, 2, 3, 1)
            v_s = self.W_V(x).view(bs, -1, n_heads, d_k).transpose(1, 2)
            output, scores = self.sdp_attn(q_s, k_s, v_s, prev)
            output = output.transpose(1, 2).contiguous().view(bs, -1, n_heads * d_k)
            return self.to_out(output), scores

    class Transpose(nn.Module):
        def forward(self, x: torch.Tensor) -> torch.Tensor:
            return x.transpose(1, 2)

    class TSTEncoderLayer(nn.Module):  # norm='BatchNorm', pre_norm=False
        def __init__(self) -> None:
            super().__init__()
            self.self_attn = MultiheadAttention()
            self.dropout_attn = nn.Dropout(dropout)
            self.norm_attn = nn.Sequential(Transpose(), nn.BatchNorm1d(d_model), Transpose())
            self.ff = nn.Sequential(nn.Linear(d_model, d_ff), nn.GELU(), nn.Dropout(dropout), nn.Linear(d_ff, d_model))
            self.dropout_ffn = nn.Dropout(dropout)
            self.norm_ffn = nn.Sequential(Transpose(), nn.BatchNorm1d(d_model), Transpose())

        def forward(self, src: torch.Tensor, prev: torch.Tensor | None) -> tuple[torch.Tensor, torch.Tensor]:
            src2, scores = self.self_attn(src, prev)
            src = self.norm_attn(src + self.dropout_attn(src2))
            src = self.norm_ffn(src + self.dropout_ffn(self.ff(src)))
            return src, scores

    class PatchTSTBackbone(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.revin_layer = RevIN()
            self.padding_patch_layer = nn.ReplicationPad1d((0, stride))
            self.W_P = nn.Linear(patch_len, d_model)
            self.W_pos = nn.Parameter(torch.empty(patch_num, d_model))
            nn.init.uniform_(self.W_pos, -0.02, 0.02)
            self.dropout = nn.Dropout(dropout)
            self.layers = nn.ModuleList(TSTEncoderLayer() for _ in range(e_layers))
            self.head = nn.Sequential(nn.Flatten(start_dim=-2), nn.Linear(d_model * patch_num, pred_len), nn.Dropout(0.0))

        def forward(self, z: torch.Tensor) -> torch.Tensor:  # z: [bs, nvars, seq_len]
            z = self.revin_layer(z.permute(0, 2, 1), "norm").permute(0, 2, 1)
            z = self.padding_patch_layer(z)
            z = z.unfold(dimension=-1, size=patch_len, step=stride)  # [bs, nvars, patch_num, patch_len]
            z = z.permute(0, 1, 3, 2)
            # TSTiEncoder
            nv = z.shape[1]
            x = self.W_P(z.permute(0, 1, 3, 2))
            u = torch.reshape(x, (x.shape[0] * x.shape[1], x.shape[2], x.shape[3]))
            u = self.dropout(u + self.W_pos)
            scores = None
            for mod in self.layers:
                u, scores = mod(u, scores)
            z = torch.reshape(u, (-1, nv, u.shape[-2], u.shape[-1])).permute(0, 1, 3, 2)  # [bs, nvars, d_model, patch_num]
            z = self.head(z)
            return self.revin_layer(z.permute(0, 2, 1), "denorm").permute(0, 2, 1)

    class PatchTST(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.model = PatchTSTBackbone()

        def forward(self, x: torch.Tensor) -> torch.Tensor:  # x: [bs, seq_len, nvars]
            return self.model(x.permute(0, 2, 1)).permute(0, 2, 1)

    model = PatchTST()
    opt = torch.optim.Adam(model.parameters(), lr=1e-4)
    sched = torch.optim.lr_scheduler.OneCycleLR(opt, max_lr=1e-4, steps_per_epoch=(train_end - seq_len - pred_len + 1) // batch,
                                                pct_start=0.3, epochs=100)

    total = 0.0
    for _ in range(steps):
        starts = torch.randint(0, train_end - seq_len - pred_len + 1, (batch,), generator=gen)
        window = series[starts[:, None] + torch.arange(seq_len + pred_len)[None, :]]
        batch_x, batch_y = window[:, :seq_len], window[:, seq_len:]
        opt.zero_grad(set_to_none=True)
        outputs = model(batch_x)
        loss = nn.functional.mse_loss(outputs[:, -pred_len:, :], batch_y)
        loss.backward()
        opt.step()
        sched.step()
        total += loss.item()
    return total


@_workload(default_steps=5)
def gin_virtual_mol_train(*, steps: int, seed: int) -> float:
    """GIN with a virtual node on molecule batches (Xu et al. 2019, "How Powerful are Graph Neural
    Networks?", with the virtual node of Gilmer et al. 2017, as snap-stanford's OGB example
    examples/graphproppred/mol: main_pyg.py with --gnn gin-virtual, gnn.py and conv.py, on
    ogbg-molpcba): batch 128 drawn molecule-like graphs a step, each of n atoms, n drawn as 6 + a
    Poisson of mean 20, at most 90 (a drawn spanning tree, each atom bonded to one of the 4 before
    it, plus up to 3 drawn ring closures; OGB's 9 atom features and 3 bond features drawn with the
    degree and ring flags taken from the graph; 128 tasks, each label present with probability 0.2
    and drawn from the atom-type counts; the data generator), batched as one disjoint graph as PyG's
    DataLoader does (first run 3,338, 3,305, 3,305, 3,263 and 3,411 atoms, 6,550-6,914 directed edges and
    3,204-3,317 labelled entries a step; second run 3,191-3,395 atoms): the
    AtomEncoder (the sum of 9 embeddings of width 300), 5 GINConv layers (each with its own
    BondEncoder; messages relu(x_j + edge embedding) summed into the targets by index_add_ as PyG's
    'add' aggregation, (1 + eps) x + the sum through Linear 300-600, BatchNorm1d, ReLU, Linear
    600-300), BatchNorm1d, ReLU but after the last, dropout 0.5; before each layer the virtual node's
    embedding (an Embedding of one row, zero-initialised) added to every atom of its graph, and after
    each but the last the virtual node updated by the global add pool of the atoms plus itself
    through Linear 300-600, BatchNorm1d, ReLU, Linear 600-300, BatchNorm1d, ReLU and dropout; mean
    pooling per graph, a Linear 300-128; BCE-with-logits on the labelled entries only (pred[y == y],
    so its size follows the drawn labels too), Adam 1e-3. The atom and bond counts (every node and
    edge tensor) follow the drawn molecules; 5 steps. The reference's batch is 32; batch 128 (271.43
    MiB, 20,730 events) was the first size tried. A first version that drew the molecules with torch
    ops made over 134,000 events, most of them the generator's, so they are drawn in numpy as
    smiles2graph gives them."""
    torch.manual_seed(0)
    batch, emb_dim, num_layer, drop, n_tasks = 128, 300, 5, 0.5, 128
    atom_dims, bond_dims = (119, 5, 12, 12, 10, 6, 6, 2, 2), (5, 6, 2)
    rng = np.random.default_rng(161 + seed)
    heavy = np.array([5, 6, 7, 8, 15, 16, 8, 5, 5, 5, 34])  # atomic numbers - 1 (OGB's index): C-heavy
    task_w = np.random.default_rng(161).standard_normal((n_tasks, 11)).astype(np.float32)

    def molecule() -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor]:
        """A drawn molecule-like graph as OGB's smiles2graph gives it (numpy arrays, made tensors by from_numpy)."""
        n = int(min(90, 6 + rng.poisson(20)))
        parent = np.maximum(0, np.arange(n - 1) - (rng.random(n - 1) * np.minimum(np.arange(1, n), 4)).astype(np.int64))
        src, dst = np.arange(1, n), parent
        a, b = rng.integers(0, n, 3), rng.integers(0, n, 3)
        keep = np.abs(a - b) > 2
        keep &= rng.random(3) < 0.5
        src, dst = np.concatenate([src, a[keep]]), np.concatenate([dst, b[keep]])
        in_ring = np.zeros(n, dtype=np.int64)
        in_ring[a[keep]] = 1
        in_ring[b[keep]] = 1
        kind = rng.integers(0, 11, n)
        degree = np.minimum(np.bincount(np.concatenate([src, dst]), minlength=n), 10)
        x = np.stack([heavy[kind], rng.random(n) < 0.05, degree, 5 + (rng.random(n) < 0.03), rng.integers(0, 4, n),
                      np.zeros(n, dtype=np.int64), rng.integers(0, 4, n), rng.random(n) < 0.3, in_ring], 1).astype(np.int64)
        ne = src.size
        bond = np.stack([rng.integers(0, 4, ne), np.zeros(ne, dtype=np.int64), rng.random(ne) < 0.4], 1).astype(np.int64)
        edge_index = np.stack([np.concatenate([src, dst]), np.concatenate([dst, src])])
        counts = np.bincount(kind, minlength=11).astype(np.float32)
        y = (task_w @ counts / n ** 0.5 > 0).astype(np.float32)
        y = np.where(rng.random(n_tasks) < 0.2, y, np.float32("nan")).astype(np.float32)
        return (torch.from_numpy(x), torch.from_numpy(edge_index), torch.from_numpy(np.concatenate([bond, bond])),
                torch.from_numpy(y))

    def collate(mols: list[tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor]]) -> tuple[torch.Tensor, ...]:
        """PyG's Batch.from_data_list: node features and edges concatenated, each graph's edge indices offset."""
        sizes = [m[0].shape[0] for m in mols]
        offsets = np.cumsum(sizes) - sizes
        x = torch.cat([m[0] for m in mols])
        edge_index = torch.cat([m[1] + int(o) for m, o in zip(mols, offsets)], 1)
        edge_attr = torch.cat([m[2] for m in mols])
        node_batch = torch.repeat_interleave(torch.arange(len(mols)), torch.tensor(sizes))
        return x, edge_index, edge_attr, node_batch, torch.stack([m[3] for m in mols])

    class Encoder(nn.Module):  # ogb.graphproppred.mol_encoder's AtomEncoder / BondEncoder
        def __init__(self, dims: tuple[int, ...]) -> None:
            super().__init__()
            self.embeddings = nn.ModuleList(nn.Embedding(d, emb_dim) for d in dims)
            for e in self.embeddings:
                nn.init.xavier_uniform_(e.weight)

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            out = 0
            for i, e in enumerate(self.embeddings):
                out = out + e(x[:, i])
            return cast(torch.Tensor, out)

    class GINConv(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.mlp = nn.Sequential(nn.Linear(emb_dim, 2 * emb_dim), nn.BatchNorm1d(2 * emb_dim), nn.ReLU(), nn.Linear(2 * emb_dim, emb_dim))
            self.eps = nn.Parameter(torch.zeros(1))
            self.bond_encoder = Encoder(bond_dims)

        def forward(self, x: torch.Tensor, edge_index: torch.Tensor, edge_attr: torch.Tensor) -> torch.Tensor:
            edge_embedding = self.bond_encoder(edge_attr)
            msg = nn.functional.relu(x[edge_index[0]] + edge_embedding)  # message(x_j, edge_attr)
            aggr = torch.zeros(x.shape[0], emb_dim).index_add_(0, edge_index[1], msg)  # aggr='add'
            return self.mlp((1 + self.eps) * x + aggr)

    class GNNVirtualNode(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.atom_encoder = Encoder(atom_dims)
            self.virtualnode_embedding = nn.Embedding(1, emb_dim)
            nn.init.constant_(self.virtualnode_embedding.weight, 0)
            self.convs = nn.ModuleList(GINConv() for _ in range(num_layer))
            self.batch_norms = nn.ModuleList(nn.BatchNorm1d(emb_dim) for _ in range(num_layer))
            self.mlp_virtualnode_list = nn.ModuleList(
                nn.Sequential(nn.Linear(emb_dim, 2 * emb_dim), nn.BatchNorm1d(2 * emb_dim), nn.ReLU(),
                              nn.Linear(2 * emb_dim, emb_dim), nn.BatchNorm1d(emb_dim), nn.ReLU()) for _ in range(num_layer - 1))
            self.graph_pred_linear = nn.Linear(emb_dim, n_tasks)

        def forward(self, x: torch.Tensor, edge_index: torch.Tensor, edge_attr: torch.Tensor, node_batch: torch.Tensor) -> torch.Tensor:
            n_graphs = int(node_batch[-1].item()) + 1
            virtualnode_embedding = self.virtualnode_embedding(torch.zeros(n_graphs, dtype=edge_index.dtype))
            h_list = [self.atom_encoder(x)]
            for layer in range(num_layer):
                h_list[layer] = h_list[layer] + virtualnode_embedding[node_batch]
                h = self.batch_norms[layer](self.convs[layer](h_list[layer], edge_index, edge_attr))
                if layer == num_layer - 1:
                    h = nn.functional.dropout(h, drop, training=self.training)
                else:
                    h = nn.functional.dropout(nn.functional.relu(h), drop, training=self.training)
                h_list.append(h)
                if layer < num_layer - 1:
                    pooled = torch.zeros(n_graphs, emb_dim).index_add_(0, node_batch, h_list[layer])  # global_add_pool
                    virtualnode_embedding = nn.functional.dropout(self.mlp_virtualnode_list[layer](pooled + virtualnode_embedding),
                                                                  drop, training=self.training)
            node_representation = h_list[-1]  # JK 'last'
            count = torch.zeros(n_graphs).index_add_(0, node_batch, torch.ones(node_batch.shape[0]))
            h_graph = torch.zeros(n_graphs, emb_dim).index_add_(0, node_batch, node_representation) / count[:, None]
            return self.graph_pred_linear(h_graph)

    model = GNNVirtualNode()
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)

    total = 0.0
    for _ in range(steps):
        x, edge_index, edge_attr, node_batch, y = collate([molecule() for _ in range(batch)])
        opt.zero_grad(set_to_none=True)
        pred = model(x, edge_index, edge_attr, node_batch)
        is_labeled = y == y
        loss = nn.functional.binary_cross_entropy_with_logits(pred.to(torch.float32)[is_labeled], y.to(torch.float32)[is_labeled])
        loss.backward()
        opt.step()
        total += loss.item()
    return total


@_workload(default_steps=5)
def show_attend_tell_train(*, steps: int, seed: int) -> float:
    """Show, Attend and Tell image captioning with soft attention (Xu et al. 2015, as sgrvinod's
    a-PyTorch-Tutorial-to-Image-Captioning, models.py and train.py, on MSCOCO's word map of 9,490
    tokens): batch 16 drawn 256 x 256 images (coloured shapes over a texture; the data generator)
    each with a caption of w drawn Zipf words, w drawn as 6 + a Poisson of mean 5, at most 50, encoded
    as <start>, the words, <end> and padding to the reference's 52 (the batch's longest decode
    length, the loop's count, first run 16, 15, 15, 16, 15, second run 13-18); the encoder a
    ResNet-18 (BasicBlocks, no pooling or fc) in place of the reference's ResNet-101, so encoder_dim
    512 for 2,048, its output adaptive-average-pooled to 14 x 14 and frozen (fine_tune_encoder False:
    no parameter asks for gradients, the BatchNorms in train mode); the decoder as the reference's
    DecoderWithAttention: the batch sorted by caption length, h and c from Linears of the mean
    encoding, then a Python loop over the longest decode length where step t runs only the
    batch_size_t captions still longer than t: the attention (encoder_att of the 196 pixels
    recomputed every step, decoder_att, ReLU, full_att, softmax over the pixels), the f_beta sigmoid
    gate, an LSTMCell 1,024-512 over the embedding (512) and the gated context, the fc to the vocabulary
    after dropout 0.5 written into a zeroed predictions tensor; cross-entropy over
    pack_padded_sequence's data plus the doubly stochastic attention penalty (alpha_c 1); Adam 4e-4
    and the reference's clip_gradient (every gradient clamped to +-5). The batch's longest caption
    (the loop's length, the predictions and alphas tensors, the packed scores) and the per-step
    batch sizes follow the drawn captions; 5 steps. The reference's batch 32 gave 668.39 MiB (longest
    decode lengths 16-21), so 16 (461.46 MiB, 18,952 events)."""
    torch.manual_seed(0)
    batch, size, vocab, emb_dim, att_dim, dec_dim, enc_dim, enc_size, max_len = 16, 256, 9490, 512, 512, 512, 512, 14, 50
    gen = torch.Generator().manual_seed(162 + seed)
    start_tok, end_tok, pad_tok = vocab - 3, vocab - 2, 0  # the word map's <start>, <end>, <pad> (and <unk> at vocab - 4)
    word_p = 1.0 / torch.arange(1, vocab - 4, dtype=torch.float64) ** 1.1

    class BasicBlock(nn.Module):
        def __init__(self, cin: int, cout: int, stride: int) -> None:
            super().__init__()
            self.conv1, self.bn1 = nn.Conv2d(cin, cout, 3, stride, 1, bias=False), nn.BatchNorm2d(cout)
            self.conv2, self.bn2 = nn.Conv2d(cout, cout, 3, 1, 1, bias=False), nn.BatchNorm2d(cout)
            self.downsample = (nn.Sequential(nn.Conv2d(cin, cout, 1, stride, bias=False), nn.BatchNorm2d(cout))
                               if stride != 1 or cin != cout else None)

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            out = torch.relu(self.bn1(self.conv1(x)))
            out = self.bn2(self.conv2(out))
            return torch.relu(out + (x if self.downsample is None else self.downsample(x)))

    class Encoder(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            layers: list[nn.Module] = [nn.Conv2d(3, 64, 7, 2, 3, bias=False), nn.BatchNorm2d(64), nn.ReLU(), nn.MaxPool2d(3, 2, 1)]
            cin = 64
            for i, c in enumerate((64, 128, 256, 512)):
                layers += [BasicBlock(cin, c, 1 if i == 0 else 2), BasicBlock(c, c, 1)]
                cin = c
            self.resnet = nn.Sequential(*layers)  # resnet children()[:-2]
            self.adaptive_pool = nn.AdaptiveAvgPool2d((enc_size, enc_size))
            for p in self.parameters():  # fine_tune(False)
                p.requires_grad = False

        def forward(self, images: torch.Tensor) -> torch.Tensor:
            return self.adaptive_pool(self.resnet(images)).permute(0, 2, 3, 1)

    class Attention(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.encoder_att, self.decoder_att = nn.Linear(enc_dim, att_dim), nn.Linear(dec_dim, att_dim)
            self.full_att = nn.Linear(att_dim, 1)

        def forward(self, encoder_out: torch.Tensor, decoder_hidden: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
            att1 = self.encoder_att(encoder_out)
            att2 = self.decoder_att(decoder_hidden)
            att = self.full_att(torch.relu(att1 + att2.unsqueeze(1))).squeeze(2)
            alpha = torch.softmax(att, dim=1)
            return (encoder_out * alpha.unsqueeze(2)).sum(dim=1), alpha

    class DecoderWithAttention(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.attention = Attention()
            self.embedding = nn.Embedding(vocab, emb_dim)
            self.dropout = nn.Dropout(0.5)
            self.decode_step = nn.LSTMCell(emb_dim + enc_dim, dec_dim, bias=True)
            self.init_h, self.init_c = nn.Linear(enc_dim, dec_dim), nn.Linear(enc_dim, dec_dim)
            self.f_beta = nn.Linear(dec_dim, enc_dim)
            self.fc = nn.Linear(dec_dim, vocab)
            self.embedding.weight.data.uniform_(-0.1, 0.1)
            self.fc.bias.data.fill_(0)
            self.fc.weight.data.uniform_(-0.1, 0.1)

        def forward(self, encoder_out: torch.Tensor, encoded_captions: torch.Tensor,
                    caption_lengths: torch.Tensor) -> tuple[torch.Tensor, ...]:
            batch_size = encoder_out.size(0)
            encoder_out = encoder_out.view(batch_size, -1, enc_dim)
            num_pixels = encoder_out.size(1)
            caption_lengths, sort_ind = caption_lengths.squeeze(1).sort(dim=0, descending=True)
            encoder_out = encoder_out[sort_ind]
            encoded_captions = encoded_captions[sort_ind]
            embeddings = self.embedding(encoded_captions)
            mean_encoder_out = encoder_out.mean(dim=1)
            h, c = self.init_h(mean_encoder_out), self.init_c(mean_encoder_out)
            decode_lengths = (caption_lengths - 1).tolist()
            predictions = torch.zeros(batch_size, max(decode_lengths), vocab)
            alphas = torch.zeros(batch_size, max(decode_lengths), num_pixels)
            for t in range(max(decode_lengths)):
                batch_size_t = sum([length > t for length in decode_lengths])
                attention_weighted_encoding, alpha = self.attention(encoder_out[:batch_size_t], h[:batch_size_t])
                gate = torch.sigmoid(self.f_beta(h[:batch_size_t]))
                attention_weighted_encoding = gate * attention_weighted_encoding
                h, c = self.decode_step(torch.cat([embeddings[:batch_size_t, t, :], attention_weighted_encoding], dim=1),
                                        (h[:batch_size_t], c[:batch_size_t]))
                preds = self.fc(self.dropout(h))
                predictions[:batch_size_t, t, :] = preds
                alphas[:batch_size_t, t, :] = alpha
            return predictions, encoded_captions, decode_lengths, alphas

    encoder, decoder = Encoder(), DecoderWithAttention()
    encoder.train()
    decoder.train()
    opt = torch.optim.Adam([p for p in decoder.parameters() if p.requires_grad], lr=4e-4)
    coords = torch.arange(size, dtype=torch.float32)

    def batch_input() -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        """Drawn images and captions, encoded as the reference's create_input_files does."""
        img = 0.4 * torch.rand(batch, 3, 1, 1, generator=gen) + 0.1 * torch.randn(batch, 3, size, size, generator=gen)
        for _ in range(4):
            centre = torch.rand(batch, 2, 1, 1, generator=gen) * size
            half = 10 + 60 * torch.rand(batch, 2, 1, 1, generator=gen)
            inside = (((coords.view(1, 1, size) - centre[:, 0]) / half[:, 0]).abs() < 1) & \
                     (((coords.view(1, size, 1) - centre[:, 1]) / half[:, 1]).abs() < 1)
            img = torch.where(inside.unsqueeze(1), torch.rand(batch, 3, 1, 1, generator=gen), img)
        img = (img - 0.45) / 0.226
        words = (6 + torch.poisson(torch.full((batch,), 5.0), generator=gen)).long().clamp(max=max_len)
        caps = torch.full((batch, max_len + 2), pad_tok, dtype=torch.long)
        drawn = 1 + torch.multinomial(word_p, batch * max_len, replacement=True, generator=gen).view(batch, max_len)
        pos = torch.arange(max_len + 2)[None, :]
        caps[:, 1:max_len + 1] = torch.where(pos[:, 1:max_len + 1] <= words[:, None], drawn, caps[:, 1:max_len + 1])
        caps[:, 0] = start_tok
        caps.scatter_(1, (words + 1)[:, None], end_tok)
        return img, caps, (words + 2)[:, None]

    total = 0.0
    for _ in range(steps):
        imgs, caps, caplens = batch_input()
        opt.zero_grad(set_to_none=True)
        scores, caps_sorted, decode_lengths, alphas = decoder(encoder(imgs), caps, caplens)
        targets = caps_sorted[:, 1:]
        scores = nn.utils.rnn.pack_padded_sequence(scores, decode_lengths, batch_first=True).data
        targets = nn.utils.rnn.pack_padded_sequence(targets, decode_lengths, batch_first=True).data
        loss = nn.functional.cross_entropy(scores, targets) + 1.0 * ((1.0 - alphas.sum(dim=1)) ** 2).mean()
        loss.backward()
        for group in opt.param_groups:  # clip_gradient(decoder_optimizer, 5.)
            for param in group["params"]:
                if param.grad is not None:
                    param.grad.data.clamp_(-5.0, 5.0)
        opt.step()
        total += loss.item()
    return total


@_workload(default_steps=12)
def srgnn_session_train(*, steps: int, seed: int) -> float:
    """SR-GNN session-based recommendation (Wu et al. 2019, "Session-based Recommendation with Graph
    Neural Networks", as CRIPAC-DIG's SR-GNN, pytorch_code/model.py and utils.py, the diginetica
    defaults): 43,097 items (n_node 43,098) and 60,000 drawn training sequences (from sessions of 2 + a
    geometric of mean 4 clicks, at most 70, items Zipf-drawn with a third of the clicks revisiting an
    earlier item of the session, each prefix's next click the target as the reference's
    preprocessing makes them; drawn once by the data generator) padded to the data set's longest
    (len_max 44, the reference's data_masks); batch 100 sessions a step drawn from the shuffled order,
    made by the reference's Data.get_slice: each session's unique items (np.unique) padded to the
    batch's largest count (max_n_node, first run 21, 12, 15, 13, 12, 13, 13, 11, 18, 10, 24, 12, second run 10-31), its
    in and out adjacency normalised by degree (batch x max_n_node x 2 max_n_node) and its alias
    indices; an item Embedding of 100, one step of the gated graph cell (linear_edge_in and
    linear_edge_out through the adjacency's two halves, biases b_iah and b_oah, the GRU-style
    gates from w_ih and w_hh), the sequence's hidden states gathered per session by a Python list
    of batch indexings stacked (the reference's forward), the soft-attention readout (linear_one of
    the last click, linear_two, sigmoid, linear_three, masked sum) and linear_transform of the
    hybrid [a, last] to 100, scores against every item's embedding (batch x 43,097), cross-entropy,
    Adam 1e-3 (weight decay 1e-5; the reference's StepLR every 3 epochs is not reached, so not made). The padded unique-item count
    (the embedding lookup, the adjacency, the graph cell's tensors) follows the drawn sessions; 12
    steps (the reference's batch of 100: 136.99 MiB, 14,620 events)."""
    torch.manual_seed(0)
    hidden_size, n_node, n_sessions, batch_size, max_sess = 100, 43098, 60000, 100, 69
    rng = np.random.default_rng(163)  # the data set, drawn once
    order_rng = np.random.default_rng(163 + seed)  # Data.generate_batch's shuffle
    item_p = 1.0 / np.arange(1, n_node, dtype=np.float64) ** 0.8
    item_p /= item_p.sum()

    lengths = np.minimum(max_sess + 1, 2 + rng.geometric(1 / 4, size=n_sessions))
    pool = (1 + rng.choice(n_node - 1, size=int(lengths.sum()), p=item_p)).tolist()
    revisit = rng.random(int(lengths.sum())) < 1 / 3
    seqs: list[list[int]] = []
    at = 0
    for k in lengths.tolist():  # a session of k clicks gives k - 1 (prefix, next click) pairs
        clicks = pool[at:at + k]
        for j in range(1, k):
            if revisit[at + j]:
                clicks[j] = clicks[int(rng.integers(0, j))]
        at += k
        seqs += [clicks[:j + 1] for j in range(1, k)]
        if len(seqs) >= n_sessions:
            break
    seqs = seqs[:n_sessions]
    inputs_raw, targets_all = [s[:-1] for s in seqs], [s[-1] for s in seqs]
    len_max = max(len(s) for s in inputs_raw)
    inputs_all = np.asarray([s + [0] * (len_max - len(s)) for s in inputs_raw])  # data_masks
    mask_all = np.asarray([[1] * len(s) + [0] * (len_max - len(s)) for s in inputs_raw])
    targets_np = np.asarray(targets_all)

    def get_slice(idx: np.ndarray) -> tuple[list[list[int]], list[np.ndarray], list[list[int]], np.ndarray, np.ndarray]:
        inputs, mask, targets = inputs_all[idx], mask_all[idx], targets_np[idx]
        items, n_nodes, adj, alias_inputs = [], [], [], []
        for u_input in inputs:
            n_nodes.append(len(np.unique(u_input)))
        max_n_node = np.max(n_nodes)
        for u_input in inputs:
            node = np.unique(u_input)
            items.append(node.tolist() + (max_n_node - len(node)) * [0])
            u_a = np.zeros((max_n_node, max_n_node))
            for i in np.arange(len(u_input) - 1):
                if u_input[i + 1] == 0:
                    break
                u = np.where(node == u_input[i])[0][0]
                v = np.where(node == u_input[i + 1])[0][0]
                u_a[u][v] = 1
            u_sum_in = np.sum(u_a, 0)
            u_sum_in[np.where(u_sum_in == 0)] = 1
            u_a_in = np.divide(u_a, u_sum_in)
            u_sum_out = np.sum(u_a, 1)
            u_sum_out[np.where(u_sum_out == 0)] = 1
            u_a_out = np.divide(u_a.transpose(), u_sum_out)
            adj.append(np.concatenate([u_a_in, u_a_out]).transpose())
            alias_inputs.append([int(np.where(node == i)[0][0]) for i in u_input])
        return alias_inputs, adj, items, mask, targets

    class GNN(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.input_size, self.gate_size = hidden_size * 2, 3 * hidden_size
            self.w_ih = nn.Parameter(torch.empty(self.gate_size, self.input_size))
            self.w_hh = nn.Parameter(torch.empty(self.gate_size, hidden_size))
            self.b_ih, self.b_hh = nn.Parameter(torch.empty(self.gate_size)), nn.Parameter(torch.empty(self.gate_size))
            self.b_iah, self.b_oah = nn.Parameter(torch.empty(hidden_size)), nn.Parameter(torch.empty(hidden_size))
            self.linear_edge_in, self.linear_edge_out = nn.Linear(hidden_size, hidden_size), nn.Linear(hidden_size, hidden_size)
            self.linear_edge_f = nn.Linear(hidden_size, hidden_size)  # defined and unused, as in the reference

        def forward(self, a: torch.Tensor, hidden: torch.Tensor) -> torch.Tensor:  # step 1: one GNNCell
            n = a.shape[1]
            input_in = torch.matmul(a[:, :, :n], self.linear_edge_in(hidden)) + self.b_iah
            input_out = torch.matmul(a[:, :, n:2 * n], self.linear_edge_out(hidden)) + self.b_oah
            inputs = torch.cat([input_in, input_out], 2)
            gi = nn.functional.linear(inputs, self.w_ih, self.b_ih)
            gh = nn.functional.linear(hidden, self.w_hh, self.b_hh)
            i_r, i_i, i_n = gi.chunk(3, 2)
            h_r, h_i, h_n = gh.chunk(3, 2)
            resetgate = torch.sigmoid(i_r + h_r)
            inputgate = torch.sigmoid(i_i + h_i)
            newgate = torch.tanh(i_n + resetgate * h_n)
            return newgate + inputgate * (hidden - newgate)

    class SessionGraph(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.embedding = nn.Embedding(n_node, hidden_size)
            self.gnn = GNN()
            self.linear_one, self.linear_two = nn.Linear(hidden_size, hidden_size), nn.Linear(hidden_size, hidden_size)
            self.linear_three = nn.Linear(hidden_size, 1, bias=False)
            self.linear_transform = nn.Linear(hidden_size * 2, hidden_size)
            stdv = 1.0 / math.sqrt(hidden_size)
            for weight in self.parameters():
                weight.data.uniform_(-stdv, stdv)

        def compute_scores(self, hidden: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
            ht = hidden[torch.arange(mask.shape[0]).long(), torch.sum(mask, 1) - 1]
            q1 = self.linear_one(ht).view(ht.shape[0], 1, ht.shape[1])
            q2 = self.linear_two(hidden)
            alpha = self.linear_three(torch.sigmoid(q1 + q2))
            a = torch.sum(alpha * hidden * mask.view(mask.shape[0], -1, 1).float(), 1)
            a = self.linear_transform(torch.cat([a, ht], 1))
            b = self.embedding.weight[1:]
            return torch.matmul(a, b.transpose(1, 0))

        def forward(self, inputs: torch.Tensor, a: torch.Tensor) -> torch.Tensor:
            return self.gnn(a, self.embedding(inputs))

    model = SessionGraph()
    opt = torch.optim.Adam(model.parameters(), lr=1e-3, weight_decay=1e-5)
    shuffled = order_rng.permutation(n_sessions)

    total = 0.0
    for step in range(steps):
        alias_inputs_l, adj_l, items_l, mask_np, targets_b = get_slice(shuffled[step * batch_size:(step + 1) * batch_size])
        alias_inputs = torch.Tensor(alias_inputs_l).long()
        items = torch.Tensor(items_l).long()
        adj = torch.Tensor(np.array(adj_l)).float()
        mask = torch.Tensor(mask_np).long()
        opt.zero_grad(set_to_none=True)
        hidden = model(items, adj)
        seq_hidden = torch.stack([hidden[i][alias_inputs[i]] for i in torch.arange(len(alias_inputs)).long()])
        scores = model.compute_scores(seq_hidden, mask)
        loss = nn.functional.cross_entropy(scores, torch.Tensor(targets_b).long() - 1)
        loss.backward()
        opt.step()
        total += loss.item()
    return total


@_workload(default_steps=3)
def cyclegan_train(*, steps: int, seed: int) -> float:
    """CycleGAN unpaired image-to-image translation (Zhu et al. 2017, as junyanz's
    pytorch-CycleGAN-and-pix2pix, models/cycle_gan_model.py, models/networks.py and
    util/image_pool.py, the horse2zebra recipe with the resnet_6blocks generator, the paper's
    choice for 128 x 128 images): batch 1 (the reference's) of a drawn 128 x 128 image of each domain a
    step, unpaired (domain A a plain brown four-legged animal, domain B a striped one at another
    drawn place and size, over drawn grass and sky, flipped at random; drawn in numpy and made
    tensors as ToTensor and Normalize(0.5, 0.5) make them; the data generator); two ResnetGenerators
    (ngf 64: ReflectionPad2d(3), a 7 x 7 conv, two stride-2 convs to 256 channels at 32 x 32, 6
    residual blocks of reflection-padded 3 x 3 convs, two ConvTranspose2d back to 128 x 128, a 7 x 7
    conv and tanh; InstanceNorm2d without affine weights or running statistics, so every conv has a
    bias; in-place ReLUs) and two 70 x 70 PatchGAN discriminators (NLayerDiscriminator, ndf 64, 3
    layers, in-place LeakyReLU 0.2), weights drawn normal(0, 0.02); each step the reference's
    optimize_parameters: fake_B, rec_A, fake_A and rec_B (generator passes kept as the model's
    attributes, so each step's outputs stay alive until the next step replaces them), the
    discriminators' requires_grad switched off, the identity passes idt_A and idt_B
    (lambda_identity 0.5), the LSGAN losses (MSE against a target expanded to the patch map) and the
    cycle L1 losses (lambda 10), one backward through all six generator passes and an Adam step,
    then each discriminator on its real image and on an image from its ImagePool of 50 (the pool
    keeps every generated image, a view of that step's whole fake tensor, until it holds 50), the
    0.5 x (real + fake) losses backward one after the other and the discriminators' Adam step (both
    Adams 2e-4, betas 0.5 and 0.999). Fixed shapes (every step allocates the same sizes in the same
    order; the pools only grow); 3 steps: 5 steps gave 46,778 events, so 3 (690.77 MiB, 28,362
    events); the reference's 256 x 256 crops with 9 residual blocks were not run."""
    torch.manual_seed(0)
    size, ngf, ndf, n_blocks, pool_size = 128, 64, 64, 6, 50
    lambda_a, lambda_b, lambda_idt = 10.0, 10.0, 0.5
    rng = np.random.default_rng(164 + seed)
    yy, xx = np.mgrid[0:size, 0:size].astype(np.float32)
    norm_layer = functools.partial(nn.InstanceNorm2d, affine=False, track_running_stats=False)

    def init_weights(net: nn.Module) -> nn.Module:  # networks.init_weights, init_type 'normal', gain 0.02
        for m in net.modules():
            if isinstance(m, (nn.Conv2d, nn.ConvTranspose2d)):
                nn.init.normal_(m.weight, 0.0, 0.02)
                if m.bias is not None:
                    nn.init.constant_(m.bias, 0.0)
        return net

    class ResnetBlock(nn.Module):  # padding_type 'reflect', no dropout
        def __init__(self, dim: int) -> None:
            super().__init__()
            self.conv_block = nn.Sequential(nn.ReflectionPad2d(1), nn.Conv2d(dim, dim, 3, bias=True), norm_layer(dim), nn.ReLU(True),
                                            nn.ReflectionPad2d(1), nn.Conv2d(dim, dim, 3, bias=True), norm_layer(dim))

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            return x + self.conv_block(x)

    def resnet_generator() -> nn.Module:
        model: list[nn.Module] = [nn.ReflectionPad2d(3), nn.Conv2d(3, ngf, 7, bias=True), norm_layer(ngf), nn.ReLU(True)]
        for i in range(2):  # n_downsampling
            mult = 2 ** i
            model += [nn.Conv2d(ngf * mult, ngf * mult * 2, 3, 2, 1, bias=True), norm_layer(ngf * mult * 2), nn.ReLU(True)]
        model += [ResnetBlock(ngf * 4) for _ in range(n_blocks)]
        for i in range(2):
            mult = 2 ** (2 - i)
            model += [nn.ConvTranspose2d(ngf * mult, ngf * mult // 2, 3, 2, 1, output_padding=1, bias=True),
                      norm_layer(ngf * mult // 2), nn.ReLU(True)]
        model += [nn.ReflectionPad2d(3), nn.Conv2d(ngf, 3, 7), nn.Tanh()]
        return init_weights(nn.Sequential(*model))

    def n_layer_discriminator() -> nn.Module:
        seq: list[nn.Module] = [nn.Conv2d(3, ndf, 4, 2, 1), nn.LeakyReLU(0.2, True)]
        nf_mult = 1
        for n in range(1, 3):
            nf_mult_prev, nf_mult = nf_mult, min(2 ** n, 8)
            seq += [nn.Conv2d(ndf * nf_mult_prev, ndf * nf_mult, 4, 2, 1, bias=True), norm_layer(ndf * nf_mult),
                    nn.LeakyReLU(0.2, True)]
        nf_mult_prev, nf_mult = nf_mult, min(2 ** 3, 8)
        seq += [nn.Conv2d(ndf * nf_mult_prev, ndf * nf_mult, 4, 1, 1, bias=True), norm_layer(ndf * nf_mult),
                nn.LeakyReLU(0.2, True), nn.Conv2d(ndf * nf_mult, 1, 4, 1, 1)]
        return init_weights(nn.Sequential(*seq))

    class ImagePool:
        def __init__(self) -> None:
            self.num_imgs, self.images = 0, cast(list[torch.Tensor], [])

        def query(self, images: torch.Tensor) -> torch.Tensor:
            return_images = []
            for image in images:
                image = torch.unsqueeze(image.data, 0)
                if self.num_imgs < pool_size:  # not full: keep inserting the current images
                    self.num_imgs += 1
                    self.images.append(image)
                    return_images.append(image)
                elif rng.uniform(0, 1) > 0.5:  # an earlier image, the current one put in its place
                    random_id = int(rng.integers(0, pool_size))
                    tmp = self.images[random_id].clone()
                    self.images[random_id] = image
                    return_images.append(tmp)
                else:
                    return_images.append(image)
            return torch.cat(return_images, 0)

    real_label, fake_label = torch.tensor(1.0), torch.tensor(0.0)

    def criterion_gan(prediction: torch.Tensor, target_is_real: bool) -> torch.Tensor:  # GANLoss('lsgan')
        return nn.functional.mse_loss(prediction, (real_label if target_is_real else fake_label).expand_as(prediction))

    def draw(striped: bool) -> torch.Tensor:
        """One drawn image of domain A (plain) or B (striped), as the unaligned dataset's transform gives it."""
        horizon = size * (0.3 + 0.3 * rng.random())
        sky = np.array([0.5, 0.7, 0.95], dtype=np.float32) * (0.8 + 0.2 * rng.random())
        grass = np.array([0.25, 0.55, 0.2], dtype=np.float32) * (0.8 + 0.4 * rng.random())
        img = np.where(yy[None] < horizon, sky[:, None, None], grass[:, None, None]) + 0.05 * rng.standard_normal((3, size, size))
        cx, cy = size * (0.3 + 0.4 * rng.random()), horizon + size * 0.15 * rng.random()
        ax, ay = size * (0.18 + 0.12 * rng.random()), size * (0.1 + 0.06 * rng.random())
        shape = ((xx - cx) / ax) ** 2 + ((yy - cy) / ay) ** 2 < 1
        shape |= ((xx - (cx + 1.1 * ax)) / (0.35 * ax)) ** 2 + ((yy - (cy - 0.8 * ay)) / (0.5 * ay)) ** 2 < 1
        for f in (-0.7, -0.4, 0.4, 0.7):
            shape |= (np.abs(xx - (cx + f * ax)) < 0.08 * ax + 1) & (yy > cy) & (yy < cy + 1.8 * ay)
        if striped:
            angle = math.pi / 2 + 0.6 * rng.random() - 0.3
            period = 6 + 4 * rng.random()
            coat = np.where(np.sin(2 * math.pi * (xx * math.cos(angle) + yy * math.sin(angle)) / period) > 0, 0.95, 0.05)[None]
        else:
            coat = (np.array([0.45, 0.28, 0.12]) * (0.7 + 0.6 * rng.random()))[:, None, None]
        img = np.where(shape[None], coat, img)
        if rng.random() < 0.5:  # RandomHorizontalFlip
            img = img[:, :, ::-1]
        img = np.ascontiguousarray(np.clip(img, 0, 1), dtype=np.float32)
        return ((torch.from_numpy(img) - 0.5) / 0.5).unsqueeze(0)

    def set_requires_grad(nets: list[nn.Module], requires_grad: bool) -> None:
        for net in nets:
            for param in net.parameters():
                param.requires_grad = requires_grad

    class CycleGANModel:  # the reference's attributes: each step's tensors replace the last step's
        def __init__(self) -> None:
            self.netG_A, self.netG_B = resnet_generator(), resnet_generator()
            self.netD_A, self.netD_B = n_layer_discriminator(), n_layer_discriminator()
            self.fake_A_pool, self.fake_B_pool = ImagePool(), ImagePool()
            self.optimizer_G = torch.optim.Adam(itertools.chain(self.netG_A.parameters(), self.netG_B.parameters()),
                                                lr=2e-4, betas=(0.5, 0.999))
            self.optimizer_D = torch.optim.Adam(itertools.chain(self.netD_A.parameters(), self.netD_B.parameters()),
                                                lr=2e-4, betas=(0.5, 0.999))

        def set_input(self, a: torch.Tensor, b: torch.Tensor) -> None:
            self.real_A, self.real_B = a, b

        def forward(self) -> None:
            self.fake_B = self.netG_A(self.real_A)
            self.rec_A = self.netG_B(self.fake_B)
            self.fake_A = self.netG_B(self.real_B)
            self.rec_B = self.netG_A(self.fake_A)

        def backward_D_basic(self, net_d: nn.Module, real: torch.Tensor, fake: torch.Tensor) -> torch.Tensor:
            loss_d = (criterion_gan(net_d(real), True) + criterion_gan(net_d(fake.detach()), False)) * 0.5
            loss_d.backward()
            return loss_d

        def backward_G(self) -> None:
            self.idt_A = self.netG_A(self.real_B)
            self.loss_idt_A = nn.functional.l1_loss(self.idt_A, self.real_B) * lambda_b * lambda_idt
            self.idt_B = self.netG_B(self.real_A)
            self.loss_idt_B = nn.functional.l1_loss(self.idt_B, self.real_A) * lambda_a * lambda_idt
            self.loss_G_A = criterion_gan(self.netD_A(self.fake_B), True)
            self.loss_G_B = criterion_gan(self.netD_B(self.fake_A), True)
            self.loss_cycle_A = nn.functional.l1_loss(self.rec_A, self.real_A) * lambda_a
            self.loss_cycle_B = nn.functional.l1_loss(self.rec_B, self.real_B) * lambda_b
            self.loss_G = (self.loss_G_A + self.loss_G_B + self.loss_cycle_A + self.loss_cycle_B
                           + self.loss_idt_A + self.loss_idt_B)
            self.loss_G.backward()

        def optimize_parameters(self) -> float:
            self.forward()
            set_requires_grad([self.netD_A, self.netD_B], False)
            self.optimizer_G.zero_grad()
            self.backward_G()
            self.optimizer_G.step()
            set_requires_grad([self.netD_A, self.netD_B], True)
            self.optimizer_D.zero_grad()
            self.loss_D_A = self.backward_D_basic(self.netD_A, self.real_B, self.fake_B_pool.query(self.fake_B))
            self.loss_D_B = self.backward_D_basic(self.netD_B, self.real_A, self.fake_A_pool.query(self.fake_A))
            self.optimizer_D.step()
            return self.loss_G.item() + self.loss_D_A.item() + self.loss_D_B.item()

    model = CycleGANModel()
    total = 0.0
    for _ in range(steps):
        model.set_input(draw(False), draw(True))
        total += model.optimize_parameters()
    return total


@_workload(default_steps=4)
def tft_forecast_train(*, steps: int, seed: int) -> float:
    """Temporal Fusion Transformer (Lim et al. 2021, as jdb78's pytorch-forecasting,
    models/temporal_fusion_transformer/__init__.py and sub_modules.py, models/nn/rnn.py and
    embeddings.py, metrics' QuantileLoss, with the paper's electricity hyperparameters): a drawn
    hourly electricity-like data set of 370 customers over 6,000 hours (a drawn level, daily profile,
    weekend factor and multiplicative noise per customer; drawn once, the same for every seed), the
    target standardised per customer (the GroupNormalizer's centre and scale, passed as the target
    scale), batch 64 windows of 168 encoder and 24 decoder hours at drawn customers and starts (the
    data generator), laid out as TimeSeriesDataSet with its defaults gives them (encoder_cat /
    decoder_cat of the customer id, hour and day of week; encoder_cont / decoder_cont of hours from
    start and the standardised target; lengths; target scales; no relative time index, target
    scales or encoder length added as reals); the model of from_dataset with hidden size 160, 4
    attention heads, one LSTM layer, dropout 0.1, hidden_continuous_size 8: MultiEmbedding (44, 9
    and 5 wide, by from_dataset's get_embedding_size), a Linear 1-8 prescaler per real, three variable
    selection networks (static over the id alone, so its encoding only; encoder over 4 inputs,
    decoder over 3) whose every variable has its own GatedResidualNetwork or ResampleNorm (the
    interpolation up to 160 wide) and whose weights come from a flattened GRN with the static
    context, the static context GRNs, LSTM encoder and decoder over packed sequences
    (enforce_sorted=False) started from the static state, the shared gated skip and AddNorm, static
    enrichment, interpretable multi-head attention (a q and k layer per head in a Python loop, one
    shared v layer, heads averaged) of the 24 decoder queries over all 192 steps under the causal
    mask, the position-wise GRN and the output gate, a Linear to the 3 quantiles rescaled by the
    target scale; the QuantileLoss at 0.1, 0.5 and 0.9 (the paper's), masked by the decoder lengths
    (the logging metrics not computed); Adam 1e-3, gradients clipped to norm 0.01 (the paper's).
    Fixed shapes (every step allocates the same sizes in the same order); 4 steps: a first version
    with pytorch-forecasting's tutorial reals (relative time index, target scales and encoder
    length) gave 43,314 events in 5 steps, and this one 31,012 in 5, so 4 (471.02 MiB, 25,080
    events)."""
    torch.manual_seed(0)
    batch, enc_len, dec_len, hidden, n_heads, hcs, dropout = 64, 168, 24, 160, 4, 8, 0.1
    n_ids, total_hours, quantiles = 370, 6000, (0.1, 0.5, 0.9)
    rng = np.random.default_rng(165 + seed)
    data_rng = np.random.default_rng(165)  # the data set, drawn once
    hours = np.arange(total_hours)
    hour_of_day, day_of_week = hours % 24, (hours // 24) % 7
    level = np.exp(data_rng.normal(5.0, 1.2, n_ids))
    profile = 1 + 0.5 * np.sin(2 * math.pi * (np.arange(24)[None] - data_rng.uniform(8, 20, (n_ids, 1))) / 24)
    profile += 0.1 * data_rng.standard_normal((n_ids, 24))
    weekly = np.where(np.arange(7)[None] >= 5, data_rng.uniform(0.6, 1.1, (n_ids, 1)), 1.0)
    power = (level[:, None] * profile[:, hour_of_day] * weekly[:, day_of_week]
             * np.exp(0.1 * data_rng.standard_normal((n_ids, total_hours)))).astype(np.float32)
    train_end = int(total_hours * 0.8)
    center, scale = power[:, :train_end].mean(1), power[:, :train_end].std(1)
    norm_power = (power - center[:, None]) / scale[:, None]
    emb_sizes = {"id": (n_ids, 44), "hour": (24, 9), "day_of_week": (7, 5)}
    x_categoricals = ["id", "hour", "day_of_week"]
    x_reals = ["hours_from_start", "power_usage"]
    static_categoricals, static_reals = ["id"], cast(list[str], [])
    known_categoricals, known_reals, unknown_reals = ["hour", "day_of_week"], ["hours_from_start"], ["power_usage"]
    encoder_variables = known_categoricals + known_reals + unknown_reals
    decoder_variables = known_categoricals + known_reals
    reals = static_reals + known_reals + unknown_reals

    class TimeDistributedInterpolation(nn.Module):
        def __init__(self, output_size: int, trainable: bool = False) -> None:
            super().__init__()
            self.output_size, self.trainable = output_size, trainable
            if trainable:
                self.mask = nn.Parameter(torch.zeros(output_size))

        def interpolate(self, x: torch.Tensor) -> torch.Tensor:
            upsampled = nn.functional.interpolate(x.unsqueeze(1), self.output_size, mode="linear", align_corners=True).squeeze(1)
            if self.trainable:
                upsampled = upsampled * torch.sigmoid(self.mask.unsqueeze(0)) * 2.0
            return upsampled

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            if x.dim() <= 2:
                return self.interpolate(x)
            y = self.interpolate(x.contiguous().view(-1, x.size(-1)))
            return y.contiguous().view(x.size(0), -1, y.size(-1))  # batch_first

    class GatedLinearUnit(nn.Module):
        def __init__(self, input_size: int, hidden_size: int | None = None, dropout_p: float | None = None) -> None:
            super().__init__()
            self.dropout = nn.Dropout(dropout_p) if dropout_p is not None else None
            self.fc = nn.Linear(input_size, (hidden_size or input_size) * 2)
            nn.init.xavier_uniform_(self.fc.weight)
            nn.init.zeros_(self.fc.bias)

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            if self.dropout is not None:
                x = self.dropout(x)
            return nn.functional.glu(self.fc(x), dim=-1)

    class ResampleNorm(nn.Module):
        def __init__(self, input_size: int, output_size: int | None = None, trainable_add: bool = True) -> None:
            super().__init__()
            self.input_size, self.output_size, self.trainable_add = input_size, output_size or input_size, trainable_add
            if self.input_size != self.output_size:
                self.resample = TimeDistributedInterpolation(self.output_size)
            if trainable_add:
                self.mask = nn.Parameter(torch.zeros(self.output_size))
            self.norm = nn.LayerNorm(self.output_size)

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            if self.input_size != self.output_size:
                x = self.resample(x)
            if self.trainable_add:
                x = x * torch.sigmoid(self.mask) * 2.0
            return cast(torch.Tensor, self.norm(x))

    class AddNorm(nn.Module):
        def __init__(self, input_size: int, skip_size: int | None = None, trainable_add: bool = True) -> None:
            super().__init__()
            self.input_size, self.skip_size, self.trainable_add = input_size, skip_size or input_size, trainable_add
            if self.input_size != self.skip_size:
                self.resample = TimeDistributedInterpolation(self.input_size)
            if trainable_add:
                self.mask = nn.Parameter(torch.zeros(self.input_size))
            self.norm = nn.LayerNorm(self.input_size)

        def forward(self, x: torch.Tensor, skip: torch.Tensor) -> torch.Tensor:
            if self.input_size != self.skip_size:
                skip = self.resample(skip)
            if self.trainable_add:
                skip = skip * torch.sigmoid(self.mask) * 2.0
            return cast(torch.Tensor, self.norm(x + skip))

    class GateAddNorm(nn.Module):
        def __init__(self, input_size: int, hidden_size: int | None = None, skip_size: int | None = None,
                     trainable_add: bool = False, dropout_p: float | None = None) -> None:
            super().__init__()
            hidden_size = hidden_size or input_size
            self.glu = GatedLinearUnit(input_size, hidden_size=hidden_size, dropout_p=dropout_p)
            self.add_norm = AddNorm(hidden_size, skip_size=skip_size or hidden_size, trainable_add=trainable_add)

        def forward(self, x: torch.Tensor, skip: torch.Tensor) -> torch.Tensor:
            return cast(torch.Tensor, self.add_norm(self.glu(x), skip))

    class GatedResidualNetwork(nn.Module):
        def __init__(self, input_size: int, hidden_size: int, output_size: int, dropout_p: float = 0.1,
                     context_size: int | None = None, residual: bool = False) -> None:
            super().__init__()
            self.input_size, self.output_size, self.residual = input_size, output_size, residual
            residual_size = input_size if input_size != output_size and not residual else output_size
            if output_size != residual_size:
                self.resample_norm = ResampleNorm(residual_size, output_size)
            self.fc1 = nn.Linear(input_size, hidden_size)
            self.elu = nn.ELU()
            self.context = nn.Linear(context_size, hidden_size, bias=False) if context_size is not None else None
            self.fc2 = nn.Linear(hidden_size, hidden_size)
            for name, p in self.named_parameters():
                if "bias" in name:
                    nn.init.zeros_(p)
                elif "fc1" in name or "fc2" in name:
                    nn.init.kaiming_normal_(p, a=0, mode="fan_in", nonlinearity="leaky_relu")
                elif "context" in name:
                    nn.init.xavier_uniform_(p)
            self.gate_norm = GateAddNorm(hidden_size, skip_size=output_size, hidden_size=output_size, dropout_p=dropout_p)

        def forward(self, x: torch.Tensor, context: torch.Tensor | None = None) -> torch.Tensor:
            residual = x
            if self.input_size != self.output_size and not self.residual:
                residual = self.resample_norm(residual)
            x = self.fc1(x)
            if context is not None:
                assert self.context is not None
                x = x + self.context(context)
            x = self.fc2(self.elu(x))
            return cast(torch.Tensor, self.gate_norm(x, residual))

    class VariableSelectionNetwork(nn.Module):
        def __init__(self, input_sizes: dict[str, int], embedded: set[str], prescalers: nn.ModuleDict,
                     context_size: int | None = None) -> None:
            super().__init__()
            self.input_sizes = input_sizes
            if len(input_sizes) > 1:
                self.flattened_grn = GatedResidualNetwork(sum(input_sizes.values()), min(hidden, len(input_sizes)),
                                                          len(input_sizes), dropout, context_size)
            self.single_variable_grns = nn.ModuleDict()
            self.prescalers = nn.ModuleDict()
            for name, size_ in input_sizes.items():
                if name in embedded:
                    self.single_variable_grns[name] = ResampleNorm(size_, hidden)
                else:
                    self.single_variable_grns[name] = GatedResidualNetwork(size_, min(size_, hidden), hidden, dropout)
                    self.prescalers[name] = prescalers[name]

        def forward(self, x: dict[str, torch.Tensor], context: torch.Tensor | None = None) -> tuple[torch.Tensor, torch.Tensor]:
            if len(self.input_sizes) == 1:  # one input: no selection, only its encoding
                name = next(iter(self.input_sizes))
                embedding = x[name] if name not in self.prescalers else self.prescalers[name](x[name])
                outputs = self.single_variable_grns[name](embedding)
                if outputs.ndim == 3:
                    return outputs, torch.ones(outputs.size(0), outputs.size(1), 1, 1)
                return outputs, torch.ones(outputs.size(0), 1, 1)
            var_outputs, weight_inputs = [], []
            for name in self.input_sizes:
                variable_embedding = x[name]
                if name in self.prescalers:
                    variable_embedding = self.prescalers[name](variable_embedding)
                weight_inputs.append(variable_embedding)
                var_outputs.append(self.single_variable_grns[name](variable_embedding))
            stacked = torch.stack(var_outputs, dim=-1)
            sparse_weights = torch.softmax(self.flattened_grn(torch.cat(weight_inputs, dim=-1), context), dim=-1).unsqueeze(-2)
            return (stacked * sparse_weights).sum(dim=-1), sparse_weights

    class InterpretableMultiHeadAttention(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            d_k = hidden // n_heads
            self.dropout = nn.Dropout(dropout)
            self.v_layer = nn.Linear(hidden, d_k)
            self.q_layers = nn.ModuleList(nn.Linear(hidden, d_k) for _ in range(n_heads))
            self.k_layers = nn.ModuleList(nn.Linear(hidden, d_k) for _ in range(n_heads))
            self.w_h = nn.Linear(d_k, hidden, bias=False)
            for name, p in self.named_parameters():
                if "bias" not in name:
                    nn.init.xavier_uniform_(p)
                else:
                    nn.init.zeros_(p)

        def forward(self, q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, mask: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
            heads, attns = [], []
            vs = self.v_layer(v)
            for i in range(n_heads):
                qs, ks = self.q_layers[i](q), self.k_layers[i](k)
                attn = torch.bmm(qs, ks.permute(0, 2, 1))  # ScaledDotProductAttention (no dropout, scale)
                attn = attn / torch.sqrt(torch.tensor(ks.shape[-1]).to(torch.float32))
                attn = torch.softmax(attn.masked_fill(mask, -1e30), dim=2)
                heads.append(self.dropout(torch.bmm(attn, vs)))
                attns.append(attn)
            head, attn_all = torch.stack(heads, dim=2), torch.stack(attns, dim=2)
            return self.dropout(self.w_h(torch.mean(head, dim=2))), attn_all

    class LSTM(nn.LSTM):  # models/nn/rnn.py: packed by the lengths
        def forward(self, x: torch.Tensor, hx: tuple[torch.Tensor, torch.Tensor],  # type: ignore[override]
                    lengths: torch.Tensor) -> tuple[torch.Tensor, tuple[torch.Tensor, torch.Tensor]]:
            pack_lengths = lengths.where(lengths > 0, torch.ones_like(lengths))
            packed_out, hidden_state = super().forward(
                nn.utils.rnn.pack_padded_sequence(x, pack_lengths.cpu(), enforce_sorted=False, batch_first=True), hx)
            out, _ = nn.utils.rnn.pad_packed_sequence(packed_out, batch_first=True, total_length=x.size(1))
            return out, hidden_state

    def create_mask(size: int, lengths: torch.Tensor) -> torch.Tensor:
        return torch.arange(size).unsqueeze(0) >= lengths.unsqueeze(-1)

    class TemporalFusionTransformer(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.input_embeddings = nn.ModuleDict({n: nn.Embedding(*emb_sizes[n]) for n in x_categoricals})
            self.prescalers = nn.ModuleDict({n: nn.Linear(1, hcs) for n in reals})
            size_of = {n: emb_sizes[n][1] for n in x_categoricals} | {n: hcs for n in reals}
            embedded = set(x_categoricals)
            self.static_variable_selection = VariableSelectionNetwork(
                {n: size_of[n] for n in static_categoricals + static_reals}, embedded, self.prescalers)
            self.encoder_variable_selection = VariableSelectionNetwork(
                {n: size_of[n] for n in encoder_variables}, embedded, self.prescalers, hidden)
            self.decoder_variable_selection = VariableSelectionNetwork(
                {n: size_of[n] for n in decoder_variables}, embedded, self.prescalers, hidden)
            grn = functools.partial(GatedResidualNetwork, hidden, hidden, hidden, dropout)
            self.static_context_variable_selection, self.static_context_initial_hidden_lstm = grn(), grn()
            self.static_context_initial_cell_lstm, self.static_context_enrichment = grn(), grn()
            self.lstm_encoder = LSTM(hidden, hidden, num_layers=1, batch_first=True)
            self.lstm_decoder = LSTM(hidden, hidden, num_layers=1, batch_first=True)
            self.post_lstm_gate_encoder = GatedLinearUnit(hidden, dropout_p=dropout)
            self.post_lstm_add_norm_encoder = AddNorm(hidden, trainable_add=False)
            self.static_enrichment = GatedResidualNetwork(hidden, hidden, hidden, dropout, context_size=hidden)
            self.multihead_attn = InterpretableMultiHeadAttention()
            self.post_attn_gate_norm = GateAddNorm(hidden, dropout_p=dropout, trainable_add=False)
            self.pos_wise_ff = grn()
            self.pre_output_gate_norm = GateAddNorm(hidden, dropout_p=None, trainable_add=False)
            self.output_layer = nn.Linear(hidden, len(quantiles))

        def forward(self, x: dict[str, torch.Tensor]) -> torch.Tensor:
            encoder_lengths, decoder_lengths = x["encoder_lengths"], x["decoder_lengths"]
            x_cat = torch.cat([x["encoder_cat"], x["decoder_cat"]], dim=1)
            x_cont = torch.cat([x["encoder_cont"], x["decoder_cont"]], dim=1)
            timesteps = x_cont.size(1)
            max_encoder_length = int(encoder_lengths.max())
            input_vectors = {n: self.input_embeddings[n](x_cat[..., i]) for i, n in enumerate(x_categoricals)}
            input_vectors.update({n: x_cont[..., i].unsqueeze(-1) for i, n in enumerate(x_reals)})
            static_embedding, _ = self.static_variable_selection(
                {n: input_vectors[n][:, 0] for n in static_categoricals + static_reals})
            static_context_variable_selection = self.static_context_variable_selection(static_embedding)[:, None].expand(-1, timesteps, -1)
            embeddings_varying_encoder, _ = self.encoder_variable_selection(
                {n: input_vectors[n][:, :max_encoder_length] for n in encoder_variables},
                static_context_variable_selection[:, :max_encoder_length])
            embeddings_varying_decoder, _ = self.decoder_variable_selection(
                {n: input_vectors[n][:, max_encoder_length:] for n in decoder_variables},
                static_context_variable_selection[:, max_encoder_length:])
            input_hidden = self.static_context_initial_hidden_lstm(static_embedding).expand(1, -1, -1)
            input_cell = self.static_context_initial_cell_lstm(static_embedding).expand(1, -1, -1)
            encoder_output, (h, c) = self.lstm_encoder(embeddings_varying_encoder, (input_hidden, input_cell), encoder_lengths)
            decoder_output, _ = self.lstm_decoder(embeddings_varying_decoder, (h, c), decoder_lengths)
            lstm_output_encoder = self.post_lstm_add_norm_encoder(self.post_lstm_gate_encoder(encoder_output), embeddings_varying_encoder)
            lstm_output_decoder = self.post_lstm_add_norm_encoder(self.post_lstm_gate_encoder(decoder_output), embeddings_varying_decoder)
            lstm_output = torch.cat([lstm_output_encoder, lstm_output_decoder], dim=1)
            static_context_enrichment = self.static_context_enrichment(static_embedding)
            attn_input = self.static_enrichment(lstm_output, static_context_enrichment[:, None].expand(-1, timesteps, -1))
            decoder_length = int(decoder_lengths.max())  # get_attention_mask, causal_attention=True
            attend_step = torch.arange(decoder_length)
            predict_step = torch.arange(0, decoder_length)[:, None]
            decoder_mask = (attend_step >= predict_step).unsqueeze(0).expand(encoder_lengths.size(0), -1, -1)
            encoder_mask = create_mask(int(encoder_lengths.max()), encoder_lengths).unsqueeze(1).expand(-1, decoder_length, -1)
            mask = torch.cat((encoder_mask, decoder_mask), dim=2)
            attn_output, _ = self.multihead_attn(attn_input[:, max_encoder_length:], attn_input, attn_input, mask)
            attn_output = self.post_attn_gate_norm(attn_output, attn_input[:, max_encoder_length:])
            output = self.pre_output_gate_norm(self.pos_wise_ff(attn_output), lstm_output[:, max_encoder_length:])
            output = self.output_layer(output)
            target_scale = x["target_scale"]
            return output * target_scale[:, 1].view(-1, 1, 1) + target_scale[:, 0].view(-1, 1, 1)  # transform_output

    def quantile_loss(y_pred: torch.Tensor, target: torch.Tensor, lengths: torch.Tensor) -> torch.Tensor:
        losses = []
        for i, q in enumerate(quantiles):
            errors = target - y_pred[..., i]
            losses.append(torch.max((q - 1) * errors, q * errors).unsqueeze(-1))
        loss = 2 * torch.cat(losses, dim=2)
        loss = loss.masked_fill(create_mask(loss.size(1), lengths).unsqueeze(-1), 0.0)  # MultiHorizonMetric.mask_losses
        return loss.sum() / (lengths.sum() * len(quantiles))

    def sample_batch() -> tuple[dict[str, torch.Tensor], torch.Tensor]:
        """Windows as TimeSeriesDataSet's __getitem__ and collate give them (numpy rows, then tensors)."""
        ids = rng.integers(0, n_ids, batch)
        starts = rng.integers(0, train_end - enc_len - dec_len, batch)
        t = starts[:, None] + np.arange(enc_len + dec_len)[None]
        cat = np.stack([np.broadcast_to(ids[:, None], t.shape), hour_of_day[t], day_of_week[t]], -1).astype(np.int64)
        cont = np.stack([(t - total_hours / 2) / (total_hours / 3.5), norm_power[ids[:, None], t]], -1).astype(np.float32)
        x = {"encoder_cat": torch.from_numpy(np.ascontiguousarray(cat[:, :enc_len])),
             "decoder_cat": torch.from_numpy(np.ascontiguousarray(cat[:, enc_len:])),
             "encoder_cont": torch.from_numpy(np.ascontiguousarray(cont[:, :enc_len])),
             "decoder_cont": torch.from_numpy(np.ascontiguousarray(cont[:, enc_len:])),
             "encoder_lengths": torch.full((batch,), enc_len, dtype=torch.long),
             "decoder_lengths": torch.full((batch,), dec_len, dtype=torch.long),
             "target_scale": torch.from_numpy(np.stack([center[ids], scale[ids]], 1).astype(np.float32))}
        return x, torch.from_numpy(np.ascontiguousarray(power[ids[:, None], t[:, enc_len:]]))

    model = TemporalFusionTransformer()
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    total = 0.0
    for _ in range(steps):
        x, y = sample_batch()
        opt.zero_grad(set_to_none=True)
        loss = quantile_loss(model(x), y, x["decoder_lengths"])
        loss.backward()
        nn.utils.clip_grad_norm_(model.parameters(), 0.01)
        opt.step()
        total += loss.item()
    return total


@_workload(default_steps=5)
def xdeepfm_ctr_train(*, steps: int, seed: int) -> float:
    """xDeepFM click-through-rate model (Lian et al. 2018, as shenweichen's DeepCTR-Torch,
    deepctr_torch/models/xdeepfm.py, layers/interaction.py's CIN, layers/core.py's DNN and
    PredictionLayer, models/basemodel.py's Linear, fit and regularisation, the
    examples/run_classification_criteo.py layout) on drawn Criteo-layout rows: 26 categorical
    fields label-encoded into per-field vocabularies of drawn sizes (11 to 329,876 ids, 1,264,029
    in all; drawn once, the same for every seed) with ids drawn from per-field power laws, 13 count
    features MinMax-scaled to [0, 1], clicks from a fixed drawn teacher (the data generator); batch
    1024 of fit's float64 rows cast to float32 as fit does; 26 nn.Embedding tables of width 10 (the
    paper's field embedding size; the library's example takes 4; init std 1e-4, dense gradients) and
    the linear part's 26 tables of width 1 beside a 13 x 1 dense weight, each field's ids cut from the row by a slice and .long() (52 lookups a step); the CIN of
    the library's defaults (layer sizes 256 and 128, split_half, in-place ReLU): each layer the outer
    product einsum('bhd,bmd->bhmd') of the last hidden maps with the 26 field embeddings, reshaped
    to batch x (h x 26) x 10 and compressed by a 1 x 1 Conv1d, half of the first layer's maps carried
    on, the kept maps summed over the embedding dimension to 256 features and a Linear 256-1; the
    DNN (256, 256) with ReLU over the flattened embeddings and the 13 counts and a Linear 256-1; the
    three logits summed, PredictionLayer's bias added in place and a sigmoid; the binary
    cross-entropy summed over the batch plus the library's L2 regularisation (1e-5) of every
    embedding table and the linear weights, squared whole every step; Adam 1e-3 (compile('adam')).
    Fixed shapes (every step allocates the same sizes in the same order); 5 steps. Batch 1024
    (662.84 MiB, 16,474 events) was the first size tried; the library's example trains batch 256."""
    torch.manual_seed(0)
    batch, n_dense, n_sparse, emb_dim, init_std = 1024, 13, 26, 10, 1e-4
    cin_layer_size, dnn_hidden_units, l2_reg = (256, 128), (256, 256), 1e-5
    rng = np.random.default_rng(166 + seed)
    vocab_rng = np.random.default_rng(166)  # the vocabularies and the teacher, drawn once
    vocab = np.round(10 ** vocab_rng.uniform(1, 5.7, n_sparse)).astype(np.int64)
    power_law = vocab_rng.uniform(1.5, 4.0, n_sparse)
    rate = np.exp(2 * vocab_rng.standard_normal(n_dense))
    w_dense = vocab_rng.standard_normal(n_dense) / 2
    effects = vocab_rng.standard_normal((n_sparse, 4096)) / 3
    dense_max = np.log1p(rate * 12)  # the MinMaxScaler's range, fit on the whole drawn set

    class CIN(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.field_nums = [n_sparse]
            self.conv1ds = nn.ModuleList()
            for i, size in enumerate(cin_layer_size):
                self.conv1ds.append(nn.Conv1d(self.field_nums[-1] * self.field_nums[0], size, 1))
                self.field_nums.append(size // 2 if i != len(cin_layer_size) - 1 else size)
            self.activation = nn.ReLU(inplace=True)

        def forward(self, inputs: torch.Tensor) -> torch.Tensor:
            batch_size, dim = inputs.shape[0], inputs.shape[-1]
            hidden_nn_layers, final_result = [inputs], []
            for i, size in enumerate(cin_layer_size):
                x = torch.einsum("bhd,bmd->bhmd", hidden_nn_layers[-1], hidden_nn_layers[0])
                x = x.reshape(batch_size, hidden_nn_layers[-1].shape[1] * hidden_nn_layers[0].shape[1], dim)
                curr_out = self.activation(self.conv1ds[i](x))
                if i != len(cin_layer_size) - 1:
                    next_hidden, direct_connect = torch.split(curr_out, 2 * [size // 2], 1)
                else:
                    direct_connect, next_hidden = curr_out, None
                final_result.append(direct_connect)
                if next_hidden is not None:
                    hidden_nn_layers.append(next_hidden)
            return torch.sum(torch.cat(final_result, dim=1), -1)

    class XDeepFM(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.embedding_dict = nn.ModuleDict({f"C{i + 1}": nn.Embedding(int(v), emb_dim) for i, v in enumerate(vocab)})
            self.linear_embedding_dict = nn.ModuleDict({f"C{i + 1}": nn.Embedding(int(v), 1) for i, v in enumerate(vocab)})
            for table in itertools.chain(self.embedding_dict.values(), self.linear_embedding_dict.values()):
                nn.init.normal_(cast(nn.Embedding, table).weight, mean=0, std=init_std)
            self.linear_weight = nn.Parameter(torch.empty(n_dense, 1))
            nn.init.normal_(self.linear_weight, mean=0, std=init_std)
            dims = [n_sparse * emb_dim + n_dense, *dnn_hidden_units]
            self.linears = nn.ModuleList(nn.Linear(dims[i], dims[i + 1]) for i in range(len(dnn_hidden_units)))
            for name, tensor in self.linears.named_parameters():
                if "weight" in name:
                    nn.init.normal_(tensor, mean=0, std=init_std)
            self.activation_layers = nn.ModuleList(nn.ReLU(inplace=True) for _ in dnn_hidden_units)
            self.dnn_dropout = nn.Dropout(0.0)
            self.dnn_linear = nn.Linear(dnn_hidden_units[-1], 1, bias=False)
            self.cin = CIN()
            self.cin_linear = nn.Linear(sum(cin_layer_size[:-1]) // 2 + cin_layer_size[-1], 1, bias=False)
            self.out_bias = nn.Parameter(torch.zeros((1,)))

        def linear_model(self, x: torch.Tensor) -> torch.Tensor:  # basemodel.Linear
            sparse_embedding_list = [self.linear_embedding_dict[f"C{i + 1}"](x[:, i:i + 1].long()) for i in range(n_sparse)]
            dense_value_list = [x[:, n_sparse + j:n_sparse + j + 1] for j in range(n_dense)]
            linear_logit = torch.zeros([x.shape[0], 1])
            linear_logit += torch.sum(torch.cat(sparse_embedding_list, dim=-1), dim=-1, keepdim=False)
            linear_logit += torch.cat(dense_value_list, dim=-1).matmul(self.linear_weight)
            return linear_logit

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            sparse_embedding_list = [self.embedding_dict[f"C{i + 1}"](x[:, i:i + 1].long()) for i in range(n_sparse)]
            dense_value_list = [x[:, n_sparse + j:n_sparse + j + 1] for j in range(n_dense)]
            linear_logit = self.linear_model(x)
            cin_logit = self.cin_linear(self.cin(torch.cat(sparse_embedding_list, dim=1)))
            deep_input = torch.cat([torch.flatten(torch.cat(sparse_embedding_list, dim=-1), start_dim=1),
                                    torch.flatten(torch.cat(dense_value_list, dim=-1), start_dim=1)], dim=-1)  # combined_dnn_input
            for linear, act in zip(self.linears, self.activation_layers):
                deep_input = self.dnn_dropout(act(linear(deep_input)))
            dnn_logit = self.dnn_linear(deep_input)
            output = linear_logit + dnn_logit + cin_logit
            output += self.out_bias  # PredictionLayer(use_bias=True), task 'binary'
            return torch.sigmoid(output)

    model = XDeepFM()
    optim = torch.optim.Adam(model.parameters())
    regularization_weight = [list(model.embedding_dict.parameters()),
                             list(model.linear_embedding_dict.parameters()) + [model.linear_weight]]
    aux_loss = torch.zeros((1,))

    def get_regularization_loss() -> torch.Tensor:
        total_reg_loss = torch.zeros((1,))
        for weight_list in regularization_weight:
            for parameter in weight_list:
                total_reg_loss += torch.sum(l2_reg * torch.square(parameter))
        return total_reg_loss

    field = np.arange(n_sparse)
    total = 0.0
    for _ in range(steps):
        ids = np.floor(rng.random((batch, n_sparse)) ** power_law * vocab).astype(np.int64)
        counts = np.floor(-np.log(rng.random((batch, n_dense))) * rate)
        dense = np.minimum(np.log1p(counts), dense_max) / dense_max
        z = (dense - 0.3) @ w_dense + effects[field, ids % 4096].sum(1) - 1.0
        clicks = (rng.random(batch) < 1 / (1 + np.exp(-z))).astype(np.float64)
        x_train = torch.from_numpy(np.concatenate([ids.astype(np.float64), dense], axis=-1))
        x, y = x_train.float(), torch.from_numpy(clicks).float()
        y_pred = model(x).squeeze()
        optim.zero_grad()
        loss = nn.functional.binary_cross_entropy(y_pred, y.squeeze(), reduction="sum")
        total_loss = loss + get_regularization_loss() + aux_loss
        total_loss.backward()
        optim.step()
        total += total_loss.item()
    return total


@_workload(default_steps=2)
def graph_unet_train(*, steps: int, seed: int) -> float:
    """Graph U-Nets graph classification (Gao and Ji 2019, as HongyangGao's Graph-U-Nets,
    src/network.py, src/utils/ops.py, src/trainer.py, src/utils/dataset.py and data_loader.py, the
    configs/DD recipe but its batch): batch 16 drawn protein-like graphs a step (D&D-like: residue
    counts drawn log-normal around 240, 30-1,000; residues a persistent drawn chain of 3.8 A steps in
    3-D, joined within 6 A, about 5 neighbours each; 89 node tags one-hot; 2 classes from a fixed
    drawn teacher; the data generator; first run 52-858 residues, 5,477 and 3,970 a step, second
    run 85-832), each kept as the data loader keeps it, a dense n x n adjacency with self loops and
    one-hot features, and run one graph at a time as GNet.embed runs them: the adjacency normalised
    by its degrees, a GCN (dropout 0.3, A @ h, Linear 89-128, ELU), the Graph U-Net of 3 levels (ks
    0.9, 0.8 and 0.7): a GCN, then gPool's sigmoid scores by a Linear 128-1, topk of int(k n) nodes,
    features gated by their scores and the pooled graph's adjacency taken from the two-hop A @ A
    (bool, float, rows and columns by the kept indices, normalised), a bottom GCN, then gUnpool
    scattering back into zeros at the kept indices, a GCN and the skip added, back to the input's
    size; readout of the 4 outputs by max, sum and mean, stacked over the batch; dropout 0.3, Linear
    1,536-512, ELU, Linear 512-2, log-softmax, NLL loss and the accuracy, Adam 1e-3 (amsgrad,
    weight decay 8e-4); the trainer's lists of loss x batch and accuracy x batch kept over the
    epoch. Every adjacency and feature tensor is sized by its graph's drawn residue count (and the
    pooled counts that follow from it); 2 steps. The reference's batch of 32 gave 33,272 events in
    2 steps, so 16 (115.43 MiB, 17,464 events)."""
    torch.manual_seed(0)
    batch, l_dim, h_dim, ks, drop_n, drop_c, n_tags = 16, 128, 512, (0.9, 0.8, 0.7), 0.3, 0.3, 89
    rng = np.random.default_rng(167 + seed)
    teacher_rng = np.random.default_rng(167)
    tag_p = teacher_rng.dirichlet(np.full(n_tags, 0.5))
    tag_w = teacher_rng.standard_normal(n_tags)

    def protein() -> tuple[torch.Tensor, torch.Tensor, int]:
        """A drawn graph as data_loader.py's process_g leaves it: A + I dense, one-hot tags, the label."""
        n = int(np.clip(np.round(np.exp(rng.normal(math.log(240), 0.6))), 30, 1000))
        radius = (3 * n / (4 * math.pi * 0.004)) ** (1 / 3)
        steps_ = rng.standard_normal((n, 3))
        pts, direction = np.zeros((n, 3)), np.zeros(3)
        for i in range(1, n):  # a persistent chain of 3.8 A steps pulled back towards a ball
            d = steps_[i] + 1.5 * direction - 0.4 * pts[i - 1] / radius
            direction = d / np.linalg.norm(d)
            pts[i] = pts[i - 1] + 3.8 * direction
        d2 = ((pts[:, None, :] - pts[None, :, :]) ** 2).sum(-1)
        adj = (d2 < 36.0).astype(np.float32)
        np.fill_diagonal(adj, 0.0)
        tags = rng.choice(n_tags, n, p=tag_p)
        label = int(tag_w[tags].mean() + 0.3 * rng.standard_normal() > 0)
        a = torch.from_numpy(adj) + torch.eye(n)
        return a, nn.functional.one_hot(torch.from_numpy(tags), n_tags), label

    class GCN(nn.Module):
        def __init__(self, in_dim: int, out_dim: int) -> None:
            super().__init__()
            self.proj, self.act, self.drop = nn.Linear(in_dim, out_dim), nn.ELU(), nn.Dropout(p=drop_n)

        def forward(self, g: torch.Tensor, h: torch.Tensor) -> torch.Tensor:
            return cast(torch.Tensor, self.act(self.proj(torch.matmul(g, self.drop(h)))))

    def norm_g(g: torch.Tensor) -> torch.Tensor:
        return g / torch.sum(g, 1)

    def top_k_graph(scores: torch.Tensor, g: torch.Tensor, h: torch.Tensor, k: float) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        values, idx = torch.topk(scores, max(2, int(k * g.shape[0])))
        new_h = torch.mul(h[idx, :], torch.unsqueeze(values, -1))
        un_g = g.bool().float()
        un_g = torch.matmul(un_g, un_g).bool().float()
        un_g = un_g[idx, :][:, idx]
        return norm_g(un_g), new_h, idx

    class Pool(nn.Module):
        def __init__(self, k: float) -> None:
            super().__init__()
            self.k, self.proj, self.drop = k, nn.Linear(l_dim, 1), nn.Dropout(p=drop_n)

        def forward(self, g: torch.Tensor, h: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
            scores = torch.sigmoid(self.proj(self.drop(h)).squeeze())
            return top_k_graph(scores, g, h, self.k)

    class GraphUnet(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.bottom_gcn = GCN(l_dim, l_dim)
            self.down_gcns = nn.ModuleList(GCN(l_dim, l_dim) for _ in ks)
            self.up_gcns = nn.ModuleList(GCN(l_dim, l_dim) for _ in ks)
            self.pools = nn.ModuleList(Pool(k) for k in ks)

        def forward(self, g: torch.Tensor, h: torch.Tensor) -> list[torch.Tensor]:
            adj_ms, indices_list, down_outs, hs = [], [], [], []
            org_h = h
            for i in range(len(ks)):
                h = self.down_gcns[i](g, h)
                adj_ms.append(g)
                down_outs.append(h)
                g, h, idx = self.pools[i](g, h)
                indices_list.append(idx)
            h = self.bottom_gcn(g, h)
            for i in range(len(ks)):
                up_idx = len(ks) - i - 1
                g, idx = adj_ms[up_idx], indices_list[up_idx]
                new_h = h.new_zeros([g.shape[0], h.shape[1]])  # Unpool
                new_h[idx] = h
                h = self.up_gcns[i](g, new_h).add(down_outs[up_idx])
                hs.append(h)
            hs.append(h.add(org_h))
            return hs

    class GNet(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.s_gcn = GCN(n_tags, l_dim)
            self.g_unet = GraphUnet()
            self.out_l_1 = nn.Linear(3 * l_dim * (len(ks) + 1), h_dim)
            self.out_l_2 = nn.Linear(h_dim, 2)
            self.out_drop = nn.Dropout(p=drop_c)
            for m in self.modules():  # Initializer.weights_init: glorot uniform, zero biases
                if isinstance(m, nn.Linear):
                    fan_in, fan_out = m.weight.size()
                    limit = math.sqrt(6.0 / (fan_in + fan_out))
                    m.weight.data.uniform_(-limit, limit)
                    m.bias.data.zero_()

        def embed_one(self, g: torch.Tensor, h: torch.Tensor) -> torch.Tensor:
            g = norm_g(g)
            hs = self.g_unet(g, self.s_gcn(g, h))
            h_max = [torch.max(x, 0)[0] for x in hs]
            h_sum = [torch.sum(x, 0) for x in hs]
            h_mean = [torch.mean(x, 0) for x in hs]
            return torch.cat(h_max + h_sum + h_mean)

        def forward(self, gs: list[torch.Tensor], hs: list[torch.Tensor], labels: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
            h = torch.stack([self.embed_one(g, x) for g, x in zip(gs, hs)], 0)
            h = self.out_l_2(self.out_drop(nn.functional.elu(self.out_l_1(self.out_drop(h)))))
            logits = nn.functional.log_softmax(h, dim=1)
            loss = nn.functional.nll_loss(logits, labels)
            _, preds = torch.max(logits, 1)
            return loss, torch.mean((preds == labels).float())

    model = GNet()
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-3, amsgrad=True, weight_decay=0.0008)
    losses, accs = [], []
    total = 0.0
    for _ in range(steps):
        graphs = [protein() for _ in range(batch)]
        gs, hs = [g for g, _, _ in graphs], [f.float() for _, f, _ in graphs]  # GraphData.__getitem__
        ys = torch.LongTensor([y for _, _, y in graphs])
        loss, acc = model(gs, hs, ys)
        losses.append(loss * len(gs))
        accs.append(acc * len(gs))
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        total += loss.item()
    return total


@_workload(default_steps=3)
def thp_event_train(*, steps: int, seed: int) -> float:
    """Transformer Hawkes Process (Zuo et al. 2020, as SimiaoZuo's Transformer-Hawkes-Process at
    9f2e563, Main.py, Utils.py, preprocess/Dataset.py and transformer/Models.py, Layers.py,
    SubLayers.py and Modules.py, its run.sh recipe for data_so): a drawn StackOverflow-like data set
    of 4,000 event sequences of 22 event types (lengths 41 + a geometric of mean 40, at most 736;
    types from a drawn per-sequence mixture with repeats, gaps from drawn exponential rates; drawn
    once) and batch 4 sequences a step from a seeded shuffle, padded to the batch's longest as
    collate_fn pads them (times and types, PAD 0; first run 142, 192 and 116 events, second run
    62-226); the model of run.sh: d_model 512, 4 post-norm encoder layers of 4 heads with d_k = d_v =
    512 (so 2,048-wide queries, keys and values), d_inner 1,024 with GELU, dropout 0.1, the temporal
    encoding of the event times by sin and cos written into alternate columns, added before every
    layer, the masks of padding and the future, the optional LSTM of 64 over the packed sequences
    (enforce_sorted=False) and a Linear back to 512; the loss of train_epoch: the event
    log-likelihood (per-type intensities by softplus with a trainable beta, a type mask filled by a
    Python loop over the 22 types) minus the non-event integral by Monte Carlo (100 uniform samples
    between consecutive events, the trainable alpha on the elapsed time), plus the label-smoothed
    (0.1) type loss and the squared time-gap error / 100; Adam 1e-4 (eps 1e-5). Every activation of
    a step is sized by its batch's longest drawn sequence (attention batch x 4 x L x L, samples
    batch x (L - 1) x 100); 3 steps: 16 steps gave 142,702 events, so 3 (454.94 MiB, 28,008
    events)."""
    torch.manual_seed(0)
    batch, num_types, d_model, d_rnn, d_inner, n_layers, n_head, d_k, d_v = 4, 22, 512, 64, 1024, 4, 4, 512, 512
    dropout, n_seqs, num_samples = 0.1, 4000, 100
    data_rng = np.random.default_rng(168)  # the data set, drawn once
    order_rng = np.random.default_rng(168 + seed)  # the DataLoader's shuffle
    type_p = data_rng.dirichlet(np.full(num_types, 0.3))
    seqs_time, seqs_type = [], []
    for _ in range(n_seqs):
        length = int(min(736, 41 + data_rng.geometric(1 / 40)))
        mix = 0.5 * type_p + 0.5 * data_rng.dirichlet(np.full(num_types, 0.2))
        types = data_rng.choice(num_types, length, p=mix / mix.sum())
        repeat = data_rng.random(length) < 0.3
        types[1:][repeat[1:]] = types[:-1][repeat[1:]]
        gaps = data_rng.exponential(1.0 / data_rng.gamma(2.0, 1.0), length)
        seqs_time.append(np.cumsum(gaps).tolist())
        seqs_type.append((types + 1).tolist())  # plus 1: type 0 is PAD
    order = order_rng.permutation(n_seqs)

    def pad(insts: list[list[float]], dtype: torch.dtype) -> torch.Tensor:  # Dataset.pad_time / pad_type
        max_len = max(len(inst) for inst in insts)
        return torch.tensor(np.array([inst + [0] * (max_len - len(inst)) for inst in insts]), dtype=dtype)

    def get_non_pad_mask(seq: torch.Tensor) -> torch.Tensor:
        return seq.ne(0).type(torch.float).unsqueeze(-1)

    class MultiHeadAttention(nn.Module):  # normalize_before=False
        def __init__(self) -> None:
            super().__init__()
            self.w_qs = nn.Linear(d_model, n_head * d_k, bias=False)
            self.w_ks = nn.Linear(d_model, n_head * d_k, bias=False)
            self.w_vs = nn.Linear(d_model, n_head * d_v, bias=False)
            self.fc = nn.Linear(d_v * n_head, d_model)
            for lin in (self.w_qs, self.w_ks, self.w_vs, self.fc):
                nn.init.xavier_uniform_(lin.weight)
            self.attn_dropout, self.layer_norm, self.dropout = nn.Dropout(dropout), nn.LayerNorm(d_model, eps=1e-6), nn.Dropout(dropout)

        def forward(self, q: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
            sz_b, len_q = q.size(0), q.size(1)
            residual = q
            qs = self.w_qs(q).view(sz_b, len_q, n_head, d_k).transpose(1, 2)
            ks = self.w_ks(q).view(sz_b, len_q, n_head, d_k).transpose(1, 2)
            vs = self.w_vs(q).view(sz_b, len_q, n_head, d_v).transpose(1, 2)
            attn = torch.matmul(qs / d_k ** 0.5, ks.transpose(2, 3)).masked_fill(mask.unsqueeze(1), -1e9)
            output = torch.matmul(self.attn_dropout(nn.functional.softmax(attn, dim=-1)), vs)
            output = self.dropout(self.fc(output.transpose(1, 2).contiguous().view(sz_b, len_q, -1)))
            output += residual
            return cast(torch.Tensor, self.layer_norm(output))

    class EncoderLayer(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.slf_attn = MultiHeadAttention()
            self.w_1, self.w_2 = nn.Linear(d_model, d_inner), nn.Linear(d_inner, d_model)
            self.ffn_norm, self.ffn_dropout = nn.LayerNorm(d_model, eps=1e-6), nn.Dropout(dropout)

        def forward(self, enc_input: torch.Tensor, non_pad_mask: torch.Tensor, slf_attn_mask: torch.Tensor) -> torch.Tensor:
            enc_output = self.slf_attn(enc_input, slf_attn_mask)
            enc_output *= non_pad_mask
            residual = enc_output  # PositionwiseFeedForward
            x = self.ffn_dropout(self.w_2(self.ffn_dropout(nn.functional.gelu(self.w_1(enc_output)))))
            enc_output = self.ffn_norm(x + residual)
            enc_output *= non_pad_mask
            return enc_output

    class Transformer(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.position_vec = torch.tensor([math.pow(10000.0, 2.0 * (i // 2) / d_model) for i in range(d_model)])
            self.event_emb = nn.Embedding(num_types + 1, d_model, padding_idx=0)
            self.layer_stack = nn.ModuleList(EncoderLayer() for _ in range(n_layers))
            self.linear = nn.Linear(d_model, num_types)
            self.alpha, self.beta = nn.Parameter(torch.tensor(-0.1)), nn.Parameter(torch.tensor(1.0))
            self.rnn = nn.LSTM(d_model, d_rnn, num_layers=1, batch_first=True)
            self.projection = nn.Linear(d_rnn, d_model)
            self.time_predictor = nn.Linear(d_model, 1, bias=False)
            self.type_predictor = nn.Linear(d_model, num_types, bias=False)
            nn.init.xavier_normal_(self.time_predictor.weight)
            nn.init.xavier_normal_(self.type_predictor.weight)

        def temporal_enc(self, time: torch.Tensor, non_pad_mask: torch.Tensor) -> torch.Tensor:
            result = time.unsqueeze(-1) / self.position_vec
            result[:, :, 0::2] = torch.sin(result[:, :, 0::2])
            result[:, :, 1::2] = torch.cos(result[:, :, 1::2])
            return result * non_pad_mask

        def forward(self, event_type: torch.Tensor, event_time: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
            non_pad_mask = get_non_pad_mask(event_type)
            sz_b, len_s = event_type.size()
            subseq = torch.triu(torch.ones((len_s, len_s), dtype=torch.uint8), diagonal=1).unsqueeze(0).expand(sz_b, -1, -1)
            keypad = event_type.eq(0).unsqueeze(1).expand(-1, len_s, -1).type_as(subseq)
            slf_attn_mask = (keypad + subseq).gt(0)
            tem_enc = self.temporal_enc(event_time, non_pad_mask)
            enc_output = self.event_emb(event_type)
            for enc_layer in self.layer_stack:
                enc_output += tem_enc
                enc_output = enc_layer(enc_output, non_pad_mask, slf_attn_mask)
            lengths = non_pad_mask.squeeze(2).long().sum(1).cpu()  # RNN_layers
            packed = nn.utils.rnn.pack_padded_sequence(enc_output, lengths, batch_first=True, enforce_sorted=False)
            enc_output = self.projection(nn.utils.rnn.pad_packed_sequence(self.rnn(packed)[0], batch_first=True)[0])
            return enc_output, self.type_predictor(enc_output) * non_pad_mask, self.time_predictor(enc_output) * non_pad_mask

    def softplus(x: torch.Tensor, beta: torch.Tensor) -> torch.Tensor:
        temp = beta * x
        temp[temp > 20] = 20
        return 1.0 / beta * torch.log(1 + torch.exp(temp))

    def log_likelihood(model: Transformer, data: torch.Tensor, time: torch.Tensor, types: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        non_pad_mask = get_non_pad_mask(types).squeeze(2)
        type_mask = torch.zeros([*types.size(), num_types])
        for i in range(num_types):
            type_mask[:, :, i] = (types == i + 1).bool()
        all_lambda = softplus(model.linear(data), model.beta)
        type_lambda = torch.sum(all_lambda * type_mask, dim=2)
        type_lambda += math.pow(10, -9)  # compute_event
        type_lambda.masked_fill_(~non_pad_mask.bool(), 1.0)
        event_ll = torch.sum(torch.log(type_lambda), dim=-1)
        diff_time = (time[:, 1:] - time[:, :-1]) * non_pad_mask[:, 1:]  # compute_integral_unbiased
        temp_time = diff_time.unsqueeze(2) * torch.rand([*diff_time.size(), num_samples])
        temp_time /= (time[:, :-1] + 1).unsqueeze(2)
        temp_hid = torch.sum(model.linear(data)[:, 1:, :] * type_mask[:, 1:, :], dim=2, keepdim=True)
        all_lambda = torch.sum(softplus(temp_hid + model.alpha * temp_time, model.beta), dim=2) / num_samples
        return event_ll, torch.sum(all_lambda * diff_time, dim=-1)

    def type_loss(prediction: torch.Tensor, types: torch.Tensor) -> torch.Tensor:  # LabelSmoothingLoss(0.1, 22, -1)
        truth = types[:, 1:] - 1
        prediction = prediction[:, :-1, :]
        non_pad = truth.ne(-1).float()
        truth[truth.eq(-1)] = 0
        one_hot = nn.functional.one_hot(truth, num_classes=num_types).float()
        one_hot = one_hot * (1 - 0.1) + (1 - one_hot) * 0.1 / num_types
        loss = -(one_hot * nn.functional.log_softmax(prediction, dim=-1)).sum(dim=-1)
        return torch.sum(loss * non_pad)

    def time_loss(prediction: torch.Tensor, event_time: torch.Tensor) -> torch.Tensor:
        prediction.squeeze_(-1)
        diff = prediction[:, :-1] - (event_time[:, 1:] - event_time[:, :-1])
        return torch.sum(diff * diff)

    model = Transformer()
    optimizer = torch.optim.Adam(model.parameters(), 1e-4, betas=(0.9, 0.999), eps=1e-05)
    total = 0.0
    for step in range(steps):
        idx = order[(step * batch) % n_seqs:(step * batch) % n_seqs + batch]
        event_time = pad([seqs_time[i] for i in idx], torch.float32)
        event_type = pad([seqs_type[i] for i in idx], torch.long)
        optimizer.zero_grad()
        enc_out, type_pred, time_pred = model(event_type, event_time)
        event_ll, non_event_ll = log_likelihood(model, enc_out, event_time, event_type)
        event_loss = -torch.sum(event_ll - non_event_ll)
        loss = event_loss + type_loss(type_pred, event_type) + time_loss(time_pred, event_time) / 100
        loss.backward()
        optimizer.step()
        total += loss.item()
    return total


@_workload(default_steps=8)
def egnn_mol_train(*, steps: int, seed: int) -> float:
    """E(n)-equivariant graph network on QM9-like molecules (Satorras et al. 2021, as vgsatorras's
    egnn, main_qm9.py, qm9/models.py, models/gcl.py, qm9/utils.py and qm9/data/collate.py, the homo
    property): batch 24 drawn molecules a step (3-9 heavy atoms, mostly 9, of C, N, O and F bonded as
    a drawn tree 1.5 A apart, hydrogens 1.1 A from drawn heavy atoms, at most 29 atoms; one-hot
    types, charges and positions; a property from a fixed drawn teacher, standardised by the mean
    and mean absolute deviation of a drawn reference set; the data generator) collated as the
    reference collates them: each property padded to the batch's largest molecule by pad_sequence,
    atom and edge masks (the diagonal masked), so n_nodes (first run 26, 27, 29, 24, 25, 25, 26
    and 29, second run 24-29) and the batch x n x n fully connected edges follow the data; the node
    features (one-hot x charge powers 0-2, 15 wide, preprocess_input), the edge lists rebuilt by
    get_adj_matrix's Python loops every step (its cache never keeps them), the EGNN of main_qm9's
    defaults: a Linear 15-128, 7 E_GCL_mask layers (edge MLP over [h_i, h_j, |x_i - x_j|^2]
    257-128-128 with SiLU, the sigmoid attention gate, edge mask, unsorted_segment_sum by
    scatter_add_ into the nodes, node MLP 256-128-128 with the residual; the coordinates not
    updated, as the reference's QM9 model leaves them), node decoder 128-128-128, masked sum per
    molecule, graph decoder 128-128-1; L1 loss, Adam 1e-3 (weight decay 1e-16; the cosine
    schedule's first epoch, not stepped). n_nodes and every edge tensor follow the drawn molecules;
    8 steps: 20 steps gave 52,280 events, so 8 (462.56 MiB, 21,296 events); the reference's batch
    of 96 (edge tensors four times as large) was not run."""
    torch.manual_seed(0)
    batch, nf, n_layers, charge_power, charge_scale = 24, 128, 7, 2, 9.0
    rng = np.random.default_rng(169 + seed)
    teacher_rng = np.random.default_rng(169)
    charges_of = np.array([6, 7, 8, 9])

    def molecule(r: np.random.Generator) -> tuple[np.ndarray, np.ndarray, float]:
        heavy = int(r.choice([9, 8, 7, 6, 5, 4, 3], p=[0.62, 0.22, 0.09, 0.04, 0.015, 0.01, 0.005]))
        kinds = r.choice(4, heavy, p=[0.70, 0.12, 0.16, 0.02])
        pos = np.zeros((heavy, 3))
        for i in range(1, heavy):
            d = r.standard_normal(3)
            pos[i] = pos[int(r.integers(0, i))] + 1.5 * d / np.linalg.norm(d)
        n_h = int(min(29 - heavy, sum(int(r.integers(0, 4 - k)) if k < 3 else 0 for k in kinds) + 1))
        at = r.integers(0, heavy, n_h)
        d = r.standard_normal((n_h, 3))
        h_pos = pos[at] + 1.1 * d / np.linalg.norm(d, axis=1, keepdims=True)
        charges = np.concatenate([charges_of[kinds], np.ones(n_h, dtype=np.int64)])
        positions = np.concatenate([pos, h_pos])
        homo = -0.25 + 0.01 * (kinds == 1).sum() + 0.015 * (kinds == 2).sum() - 0.002 * n_h + 0.005 * np.linalg.norm(pos, axis=1).mean()
        return charges, positions, float(homo)

    ref = np.array([molecule(teacher_rng)[2] for _ in range(2000)])
    meann, mad = float(ref.mean()), float(np.abs(ref - ref.mean()).mean())

    def collate(mols: list[tuple[np.ndarray, np.ndarray, float]]) -> dict[str, torch.Tensor]:
        one_hot = [torch.from_numpy(c[:, None] == np.array([1, 6, 7, 8, 9])[None]) for c, _, _ in mols]
        batch_ = {"charges": nn.utils.rnn.pad_sequence([torch.from_numpy(c) for c, _, _ in mols], batch_first=True),
                  "positions": nn.utils.rnn.pad_sequence([torch.from_numpy(p) for _, p, _ in mols], batch_first=True),
                  "one_hot": nn.utils.rnn.pad_sequence(one_hot, batch_first=True),
                  "homo": torch.tensor([h for _, _, h in mols])}
        to_keep = batch_["charges"].sum(0) > 0
        batch_ = {k: v[:, to_keep, ...] if v.dim() > 1 else v for k, v in batch_.items()}
        atom_mask = batch_["charges"] > 0
        batch_["atom_mask"] = atom_mask
        b, n = atom_mask.size()
        edge_mask = atom_mask.unsqueeze(1) * atom_mask.unsqueeze(2)
        edge_mask *= ~torch.eye(n, dtype=torch.bool).unsqueeze(0)
        batch_["edge_mask"] = edge_mask.view(b * n * n, 1)
        return batch_

    def get_adj_matrix(n_nodes: int, batch_size: int) -> list[torch.Tensor]:
        rows, cols = [], []
        for batch_idx in range(batch_size):
            for i in range(n_nodes):
                for j in range(n_nodes):
                    rows.append(i + batch_idx * n_nodes)
                    cols.append(j + batch_idx * n_nodes)
        return [torch.LongTensor(rows), torch.LongTensor(cols)]

    def unsorted_segment_sum(data: torch.Tensor, segment_ids: torch.Tensor, num_segments: int) -> torch.Tensor:
        result = data.new_full((num_segments, data.size(1)), 0)
        return result.scatter_add_(0, segment_ids.unsqueeze(-1).expand(-1, data.size(1)), data)

    class EGCLMask(nn.Module):  # E_GCL_mask: recurrent, attention, no coordinate update
        def __init__(self) -> None:
            super().__init__()
            act = nn.SiLU()
            self.edge_mlp = nn.Sequential(nn.Linear(nf * 2 + 1, nf), act, nn.Linear(nf, nf), act)
            self.node_mlp = nn.Sequential(nn.Linear(nf + nf, nf), act, nn.Linear(nf, nf))
            self.att_mlp = nn.Sequential(nn.Linear(nf, 1), nn.Sigmoid())

        def forward(self, h: torch.Tensor, edges: list[torch.Tensor], coord: torch.Tensor, edge_mask: torch.Tensor) -> torch.Tensor:
            row, col = edges
            coord_diff = coord[row] - coord[col]
            radial = torch.sum(coord_diff ** 2, 1).unsqueeze(1)
            out = self.edge_mlp(torch.cat([h[row], h[col], radial], dim=1))
            edge_feat = out * self.att_mlp(out)
            edge_feat = edge_feat * edge_mask
            agg = unsorted_segment_sum(edge_feat, row, num_segments=h.size(0))
            return h + self.node_mlp(torch.cat([h, agg], dim=1))

    class EGNN(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            act = nn.SiLU()
            self.embedding = nn.Linear(15, nf)
            self.gcls = nn.ModuleList(EGCLMask() for _ in range(n_layers))
            self.node_dec = nn.Sequential(nn.Linear(nf, nf), act, nn.Linear(nf, nf))
            self.graph_dec = nn.Sequential(nn.Linear(nf, nf), act, nn.Linear(nf, 1))

        def forward(self, h0: torch.Tensor, x: torch.Tensor, edges: list[torch.Tensor], node_mask: torch.Tensor,
                    edge_mask: torch.Tensor, n_nodes: int) -> torch.Tensor:
            h = self.embedding(h0)
            for gcl in self.gcls:
                h = gcl(h, edges, x, edge_mask)
            h = self.node_dec(h) * node_mask
            h = torch.sum(h.view(-1, n_nodes, nf), dim=1)
            return self.graph_dec(h).squeeze(1)

    model = EGNN()
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-3, weight_decay=1e-16)
    total = 0.0
    for _ in range(steps):
        data = collate([molecule(rng) for _ in range(batch)])
        optimizer.zero_grad()
        batch_size, n_nodes, _ = data["positions"].size()
        atom_positions = data["positions"].view(batch_size * n_nodes, -1).to(torch.float32)
        atom_mask = data["atom_mask"].view(batch_size * n_nodes, -1).to(torch.float32)
        edge_mask = data["edge_mask"].to(torch.float32)
        one_hot, charges = data["one_hot"].to(torch.float32), data["charges"].to(torch.float32)
        charge_tensor = (charges.unsqueeze(-1) / charge_scale).pow(torch.arange(charge_power + 1.0, dtype=torch.float32))
        charge_tensor = charge_tensor.view(charges.shape + (1, charge_power + 1))
        nodes = (one_hot.unsqueeze(-1) * charge_tensor).view(charges.shape[:2] + (-1,)).view(batch_size * n_nodes, -1)
        edges = get_adj_matrix(n_nodes, batch_size)
        label = data["homo"].to(torch.float32)
        pred = model(nodes, atom_positions, edges, atom_mask, edge_mask, n_nodes)
        loss = nn.functional.l1_loss(pred, (label - meann) / mad)
        loss.backward()
        optimizer.step()
        total += loss.item()
    return total


@_workload(default_steps=4)
def attention_tsp_train(*, steps: int, seed: int) -> float:
    """Attention model for the travelling salesman problem trained by REINFORCE with a greedy
    rollout baseline (Kool et al. 2019, as wouterkool's attention-learn-to-route,
    nets/attention_model.py, nets/graph_encoder.py, problems/tsp/state_tsp.py and problem_tsp.py,
    train.py's train_batch and clip_grad_norms, reinforce_baselines.py's RolloutBaseline with
    --baseline rollout, options.py's defaults: TSP20, batch 512, embedding 128, 3 encoder layers,
    batch norm, tanh clipping 10, Adam 1e-4, max_grad_norm 1.0; the model's 8 heads and feed-forward
    512) on batch 512 of 20 cities drawn uniform in the unit square a step (the TSPDataset's; the
    data generator): the encoder's multi-head attention with per-head W_query / W_key / W_val /
    W_out parameters (n_heads x batch x 20 x 20 compatibilities) and BatchNorm1d over the flattened
    nodes, the fixed context, glimpse and logit keys precomputed once, then the decoder looped over
    the 20 cities: the step context (the placeholder, then the first and current node's embeddings
    gathered), the masked glimpse over heads (the visited mask made from StateTSP's uint8 visited_
    rebuilt by scatter every step, written into the compatibilities by boolean indexing),
    tanh-clipped masked logits, log_softmax and a multinomial sample; the tour cost from the
    gathered coordinates, the log-likelihood of the sampled tour, the baseline's greedy rollout of
    the same batch without autograd in eval mode (a deep copy of the policy made before the run, as
    RolloutBaseline keeps one; the reference rolls the baseline out over the epoch's whole dataset
    before the epoch, in batches of 1,024, and keeps the costs, here each batch is rolled out just
    before its step), ((cost - bl_val) * log_likelihood).mean(), gradient clipping per parameter
    group and an Adam step. Fixed shapes (every step allocates the same sizes in the same order); 4
    steps (482.75 MiB, 28,802 events). TSP50 (one of the paper's sizes) gave 60,482 events and 1.99
    GiB in 4 steps, so the options' default TSP20."""
    torch.manual_seed(0)
    batch, graph_size, embed_dim, n_heads, n_layers, ff_hidden = 512, 20, 128, 8, 3, 512
    tanh_clipping, max_grad_norm = 10.0, 1.0
    rng = np.random.default_rng(170 + seed)

    class SkipConnection(nn.Module):
        def __init__(self, module: nn.Module) -> None:
            super().__init__()
            self.module = module

        def forward(self, input: torch.Tensor) -> torch.Tensor:
            return input + self.module(input)

    class MultiHeadAttention(nn.Module):  # nets/graph_encoder.py
        def __init__(self, n_heads: int, input_dim: int, embed_dim: int) -> None:
            super().__init__()
            val_dim = key_dim = embed_dim // n_heads
            self.n_heads, self.input_dim, self.embed_dim, self.val_dim, self.key_dim = n_heads, input_dim, embed_dim, val_dim, key_dim
            self.norm_factor = 1 / math.sqrt(key_dim)
            self.W_query = nn.Parameter(torch.Tensor(n_heads, input_dim, key_dim))
            self.W_key = nn.Parameter(torch.Tensor(n_heads, input_dim, key_dim))
            self.W_val = nn.Parameter(torch.Tensor(n_heads, input_dim, val_dim))
            self.W_out = nn.Parameter(torch.Tensor(n_heads, val_dim, embed_dim))
            for param in self.parameters():
                stdv = 1. / math.sqrt(param.size(-1))
                param.data.uniform_(-stdv, stdv)

        def forward(self, q: torch.Tensor) -> torch.Tensor:
            h = q  # self-attention
            batch_size, graph_size, input_dim = h.size()
            n_query = q.size(1)
            hflat = h.contiguous().view(-1, input_dim)
            qflat = q.contiguous().view(-1, input_dim)
            shp = (self.n_heads, batch_size, graph_size, -1)
            shp_q = (self.n_heads, batch_size, n_query, -1)
            Q = torch.matmul(qflat, self.W_query).view(shp_q)
            K = torch.matmul(hflat, self.W_key).view(shp)
            V = torch.matmul(hflat, self.W_val).view(shp)
            compatibility = self.norm_factor * torch.matmul(Q, K.transpose(2, 3))
            attn = torch.softmax(compatibility, dim=-1)
            heads = torch.matmul(attn, V)
            out = torch.mm(heads.permute(1, 2, 0, 3).contiguous().view(-1, self.n_heads * self.val_dim),
                           self.W_out.view(-1, self.embed_dim)).view(batch_size, n_query, self.embed_dim)
            return out

    class Normalization(nn.Module):
        def __init__(self, embed_dim: int) -> None:
            super().__init__()
            self.normalizer = nn.BatchNorm1d(embed_dim, affine=True)

        def forward(self, input: torch.Tensor) -> torch.Tensor:
            return self.normalizer(input.view(-1, input.size(-1))).view(*input.size())

    def attention_layer() -> nn.Sequential:  # MultiHeadAttentionLayer
        return nn.Sequential(
            SkipConnection(MultiHeadAttention(n_heads, input_dim=embed_dim, embed_dim=embed_dim)),
            Normalization(embed_dim),
            SkipConnection(nn.Sequential(nn.Linear(embed_dim, ff_hidden), nn.ReLU(), nn.Linear(ff_hidden, embed_dim))),
            Normalization(embed_dim))

    class StateTSP:  # problems/tsp/state_tsp.py
        def __init__(self, loc: torch.Tensor) -> None:
            batch_size, n_loc, _ = loc.size()
            prev_a = torch.zeros(batch_size, 1, dtype=torch.long)
            self.loc = loc
            self.dist = (loc[:, :, None, :] - loc[:, None, :, :]).norm(p=2, dim=-1)
            self.ids = torch.arange(batch_size, dtype=torch.int64)[:, None]
            self.first_a, self.prev_a = prev_a, prev_a
            self.visited_ = torch.zeros(batch_size, 1, n_loc, dtype=torch.uint8)
            self.lengths = torch.zeros(batch_size, 1)
            self.cur_coord: torch.Tensor | None = None
            self.i = torch.zeros(1, dtype=torch.int64)

        def update(self, selected: torch.Tensor) -> None:
            prev_a = selected[:, None]
            cur_coord = self.loc[self.ids, prev_a]
            lengths = self.lengths
            if self.cur_coord is not None:
                lengths = self.lengths + (cur_coord - self.cur_coord).norm(p=2, dim=-1)
            first_a = prev_a if self.i.item() == 0 else self.first_a
            self.visited_ = self.visited_.scatter(-1, prev_a[:, :, None], 1)
            self.first_a, self.prev_a, self.lengths, self.cur_coord, self.i = first_a, prev_a, lengths, cur_coord, self.i + 1

        def all_finished(self) -> bool:
            return self.i.item() >= self.loc.size(-2)

    class AttentionModel(nn.Module):  # nets/attention_model.py, the TSP branch
        def __init__(self) -> None:
            super().__init__()
            self.decode_type = "sampling"
            self.W_placeholder = nn.Parameter(torch.Tensor(2 * embed_dim))
            self.W_placeholder.data.uniform_(-1, 1)
            self.init_embed = nn.Linear(2, embed_dim)
            self.embedder = nn.Sequential(*(attention_layer() for _ in range(n_layers)))  # GraphAttentionEncoder
            self.project_node_embeddings = nn.Linear(embed_dim, 3 * embed_dim, bias=False)
            self.project_fixed_context = nn.Linear(embed_dim, embed_dim, bias=False)
            self.project_step_context = nn.Linear(2 * embed_dim, embed_dim, bias=False)
            self.project_out = nn.Linear(embed_dim, embed_dim, bias=False)

        def _make_heads(self, v: torch.Tensor, num_steps: int) -> torch.Tensor:
            return (v.contiguous().view(v.size(0), v.size(1), v.size(2), n_heads, -1)
                    .expand(v.size(0), num_steps, v.size(2), n_heads, -1).permute(3, 0, 1, 2, 4))

        def forward(self, input: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
            embeddings = self.embedder(self.init_embed(input))
            _log_p, pi = self._inner(input, embeddings)
            cost = self.get_costs(input, pi)
            log_p = _log_p.gather(2, pi.unsqueeze(-1)).squeeze(-1)  # _calc_log_likelihood
            assert (log_p > -1000).data.all(), "Logprobs should not be -inf, check sampling procedure!"
            return cost, log_p.sum(1)

        @staticmethod
        def get_costs(dataset: torch.Tensor, pi: torch.Tensor) -> torch.Tensor:  # problems/tsp/problem_tsp.py
            assert (torch.arange(pi.size(1), out=pi.data.new()).view(1, -1).expand_as(pi) == pi.data.sort(1)[0]).all(), "Invalid tour"
            d = dataset.gather(1, pi.unsqueeze(-1).expand_as(dataset))
            return (d[:, 1:] - d[:, :-1]).norm(p=2, dim=2).sum(1) + (d[:, 0] - d[:, -1]).norm(p=2, dim=1)

        def _inner(self, input: torch.Tensor, embeddings: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
            outputs, sequences = [], []
            state = StateTSP(input)
            # _precompute
            graph_embed = embeddings.mean(1)
            fixed_context = self.project_fixed_context(graph_embed)[:, None, :]
            glimpse_key_fixed, glimpse_val_fixed, logit_key_fixed = self.project_node_embeddings(embeddings[:, None, :, :]).chunk(3, dim=-1)
            glimpse_K, glimpse_V = self._make_heads(glimpse_key_fixed, 1), self._make_heads(glimpse_val_fixed, 1)
            logit_K = logit_key_fixed.contiguous()
            while not state.all_finished():
                log_p, mask = self._get_log_p(embeddings, fixed_context, glimpse_K, glimpse_V, logit_K, state)
                selected = self._select_node(log_p.exp()[:, 0, :], mask[:, 0, :])
                state.update(selected)
                outputs.append(log_p[:, 0, :])
                sequences.append(selected)
            return torch.stack(outputs, 1), torch.stack(sequences, 1)

        def _select_node(self, probs: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
            assert (probs == probs).all(), "Probs should not contain any nans"
            if self.decode_type == "greedy":
                _, selected = probs.max(1)
                assert not mask.gather(1, selected.unsqueeze(-1)).data.any()
            else:
                selected = probs.multinomial(1).squeeze(1)
                while mask.gather(1, selected.unsqueeze(-1)).data.any():
                    selected = probs.multinomial(1).squeeze(1)
            return selected

        def _get_log_p(self, embeddings: torch.Tensor, fixed_context: torch.Tensor, glimpse_K: torch.Tensor,
                       glimpse_V: torch.Tensor, logit_K: torch.Tensor, state: StateTSP) -> tuple[torch.Tensor, torch.Tensor]:
            batch_size = embeddings.size(0)
            if state.i.item() == 0:  # _get_parallel_step_context, TSP
                step_context = self.W_placeholder[None, None, :].expand(batch_size, 1, self.W_placeholder.size(-1))
            else:
                step_context = embeddings.gather(
                    1, torch.cat((state.first_a, state.prev_a), 1)[:, :, None].expand(batch_size, 2, embeddings.size(-1))
                ).view(batch_size, 1, -1)
            query = fixed_context + self.project_step_context(step_context)
            mask = state.visited_ > 0
            log_p = self._one_to_many_logits(query, glimpse_K, glimpse_V, logit_K, mask)
            log_p = torch.log_softmax(log_p, dim=-1)  # temp 1
            assert not torch.isnan(log_p).any()
            return log_p, mask

        def _one_to_many_logits(self, query: torch.Tensor, glimpse_K: torch.Tensor, glimpse_V: torch.Tensor,
                                logit_K: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
            batch_size, num_steps, embed = query.size()
            key_size = val_size = embed // n_heads
            glimpse_Q = query.view(batch_size, num_steps, n_heads, 1, key_size).permute(2, 0, 1, 3, 4)
            compatibility = torch.matmul(glimpse_Q, glimpse_K.transpose(-2, -1)) / math.sqrt(glimpse_Q.size(-1))
            compatibility[mask[None, :, :, None, :].expand_as(compatibility)] = -math.inf  # mask_inner
            heads = torch.matmul(torch.softmax(compatibility, dim=-1), glimpse_V)
            glimpse = self.project_out(heads.permute(1, 2, 3, 0, 4).contiguous().view(-1, num_steps, 1, n_heads * val_size))
            logits = torch.matmul(glimpse, logit_K.transpose(-2, -1)).squeeze(-2) / math.sqrt(glimpse.size(-1))
            logits = torch.tanh(logits) * tanh_clipping
            logits[mask] = -math.inf  # mask_logits
            return logits

    model = AttentionModel()
    optimizer = torch.optim.Adam([{"params": model.parameters(), "lr": 1e-4}])
    baseline_model = copy.deepcopy(model)  # RolloutBaseline._update_model
    total = 0.0
    for _ in range(steps):
        x = torch.from_numpy(rng.random((batch, graph_size, 2), dtype=np.float32))  # TSPDataset: uniform in the unit square
        baseline_model.decode_type = "greedy"  # rollout(): greedy, eval mode, no grad
        baseline_model.eval()
        with torch.no_grad():
            bl_val, _ = baseline_model(x)
        model.train()
        model.decode_type = "sampling"
        cost, log_likelihood = model(x)
        reinforce_loss = ((cost - bl_val) * log_likelihood).mean()
        loss = reinforce_loss
        optimizer.zero_grad()
        loss.backward()
        grad_norms = [torch.nn.utils.clip_grad_norm_(group["params"], max_grad_norm, norm_type=2)
                      for group in optimizer.param_groups]  # clip_grad_norms
        optimizer.step()
        total += loss.item() + 0.0 * float(grad_norms[0])
    return total


@_workload(default_steps=5)
def lightweight_openpose_train(*, steps: int, seed: int) -> float:
    """Lightweight OpenPose bottom-up multi-person pose estimation (Osokin 2018, as Daniil-Osokin's
    lightweight-human-pose-estimation.pytorch, models/with_mobilenet.py, modules/conv.py,
    modules/loss.py, modules/get_parameters.py, train.py, datasets/coco.py's CocoTrainDataset): a
    MobileNet v1 trunk to conv5_5 (a 3 x 3 conv to 32 channels at stride 2, 11 depthwise-separable
    blocks with BatchNorm and in-place ReLU, conv4_2 onward at stride 8, one dilated), the CPM
    (1 x 1 align, three depthwise-separable blocks with in-place ELU and no BatchNorm, a residual sum
    and a 3 x 3 conv), the initial stage (three 3 x 3 convs, 1 x 1 heads to 512 then to 19
    keypoint heatmaps and 38 part affinity fields) and one refinement stage (five blocks of a 1 x 1
    conv and two 3 x 3 convs with BatchNorm, the second dilated, summed with the block's input) over
    the concatenation of the CPM features and the initial stage's heatmaps and PAFs; train.py's loss:
    l2_loss ((output - target) * mask, squared, halved, divided by the batch size and summed) of
    the heatmaps and the PAFs of each of the two stages, the four losses' items read and summed in
    place, batches_per_iter 1; Adam with train.py's 13 parameter groups (learning rates 4e-5 to
    3.2e-4, weight decay 5e-4 on the non-depthwise conv weights only); weights drawn (the reference
    starts from an ImageNet MobileNet). Batch 2 of drawn 368 x 368 crops a step (1 to 4 people of
    drawn size and place, 18 keypoints each of drawn visibility, drawn as limb strokes over a drawn
    background, normalised (img - 128) / 256; the keypoint maps, PAFs and masks at stride 8 (46 x 46)
    made in numpy as the dataset makes them, a drawn unannotated person masked out; the data
    generator). Fixed shapes (every step allocates the same sizes in the same order); 5 steps
    (507.64 MiB, 26,896 events). The reference's batch of 80 not run: batch 8 gave 1.85 GiB.
    HRNet-W32 (leoxiaobin's deep-high-resolution-net.pytorch, pose_hrnet.py) was tried first and
    dropped: 138,312 events in 4 steps at batch 8 (34,578 a step); so was that repository's
    SimpleBaseline pose_resnet (ResNet-50 with three deconvolutions: 26,136 events in 4 steps but
    1.22 GiB at batch 8; its about 34 million parameters with their gradients and Adam state come
    to about 520 MiB whatever the batch)."""
    torch.manual_seed(0)
    batch, input_size, stride, sigma, path_thickness, base_lr = 2, 368, 8, 7, 1, 4e-5
    num_heatmaps, num_pafs, num_channels, num_refinement_stages, batches_per_iter = 19, 38, 128, 1, 1
    rng = np.random.default_rng(171 + seed)

    def conv(in_channels: int, out_channels: int, kernel_size: int = 3, padding: int = 1, bn: bool = True, dilation: int = 1,
             stride: int = 1, relu: bool = True, bias: bool = True) -> nn.Sequential:  # modules/conv.py
        modules: list[nn.Module] = [nn.Conv2d(in_channels, out_channels, kernel_size, stride, padding, dilation, bias=bias)]
        if bn:
            modules.append(nn.BatchNorm2d(out_channels))
        if relu:
            modules.append(nn.ReLU(inplace=True))
        return nn.Sequential(*modules)

    def conv_dw(in_channels: int, out_channels: int, kernel_size: int = 3, padding: int = 1, stride: int = 1,
                dilation: int = 1) -> nn.Sequential:
        return nn.Sequential(
            nn.Conv2d(in_channels, in_channels, kernel_size, stride, padding, dilation=dilation, groups=in_channels, bias=False),
            nn.BatchNorm2d(in_channels), nn.ReLU(inplace=True),
            nn.Conv2d(in_channels, out_channels, 1, 1, 0, bias=False), nn.BatchNorm2d(out_channels), nn.ReLU(inplace=True))

    def conv_dw_no_bn(in_channels: int, out_channels: int, kernel_size: int = 3, padding: int = 1, stride: int = 1,
                      dilation: int = 1) -> nn.Sequential:
        return nn.Sequential(
            nn.Conv2d(in_channels, in_channels, kernel_size, stride, padding, dilation=dilation, groups=in_channels, bias=False),
            nn.ELU(inplace=True), nn.Conv2d(in_channels, out_channels, 1, 1, 0, bias=False), nn.ELU(inplace=True))

    class Cpm(nn.Module):  # models/with_mobilenet.py
        def __init__(self, in_channels: int, out_channels: int) -> None:
            super().__init__()
            self.align = conv(in_channels, out_channels, kernel_size=1, padding=0, bn=False)
            self.trunk = nn.Sequential(*(conv_dw_no_bn(out_channels, out_channels) for _ in range(3)))
            self.conv = conv(out_channels, out_channels, bn=False)

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            x = self.align(x)
            return self.conv(x + self.trunk(x))

    class InitialStage(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.trunk = nn.Sequential(*(conv(num_channels, num_channels, bn=False) for _ in range(3)))
            self.heatmaps = nn.Sequential(conv(num_channels, 512, kernel_size=1, padding=0, bn=False),
                                          conv(512, num_heatmaps, kernel_size=1, padding=0, bn=False, relu=False))
            self.pafs = nn.Sequential(conv(num_channels, 512, kernel_size=1, padding=0, bn=False),
                                      conv(512, num_pafs, kernel_size=1, padding=0, bn=False, relu=False))

        def forward(self, x: torch.Tensor) -> list[torch.Tensor]:
            trunk_features = self.trunk(x)
            return [self.heatmaps(trunk_features), self.pafs(trunk_features)]

    class RefinementStageBlock(nn.Module):
        def __init__(self, in_channels: int, out_channels: int) -> None:
            super().__init__()
            self.initial = conv(in_channels, out_channels, kernel_size=1, padding=0, bn=False)
            self.trunk = nn.Sequential(conv(out_channels, out_channels), conv(out_channels, out_channels, dilation=2, padding=2))

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            initial_features = self.initial(x)
            return initial_features + self.trunk(initial_features)

    class RefinementStage(nn.Module):
        def __init__(self, in_channels: int, out_channels: int) -> None:
            super().__init__()
            self.trunk = nn.Sequential(RefinementStageBlock(in_channels, out_channels),
                                       *(RefinementStageBlock(out_channels, out_channels) for _ in range(4)))
            self.heatmaps = nn.Sequential(conv(out_channels, out_channels, kernel_size=1, padding=0, bn=False),
                                          conv(out_channels, num_heatmaps, kernel_size=1, padding=0, bn=False, relu=False))
            self.pafs = nn.Sequential(conv(out_channels, out_channels, kernel_size=1, padding=0, bn=False),
                                      conv(out_channels, num_pafs, kernel_size=1, padding=0, bn=False, relu=False))

        def forward(self, x: torch.Tensor) -> list[torch.Tensor]:
            trunk_features = self.trunk(x)
            return [self.heatmaps(trunk_features), self.pafs(trunk_features)]

    class PoseEstimationWithMobileNet(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.model = nn.Sequential(
                conv(3, 32, stride=2, bias=False), conv_dw(32, 64), conv_dw(64, 128, stride=2), conv_dw(128, 128),
                conv_dw(128, 256, stride=2), conv_dw(256, 256), conv_dw(256, 512), conv_dw(512, 512, dilation=2, padding=2),
                conv_dw(512, 512), conv_dw(512, 512), conv_dw(512, 512), conv_dw(512, 512))
            self.cpm = Cpm(512, num_channels)
            self.initial_stage = InitialStage()
            self.refinement_stages = nn.ModuleList(RefinementStage(num_channels + num_heatmaps + num_pafs, num_channels)
                                                   for _ in range(num_refinement_stages))

        def forward(self, x: torch.Tensor) -> list[torch.Tensor]:
            backbone_features = self.cpm(self.model(x))
            stages_output = self.initial_stage(backbone_features)
            for refinement_stage in self.refinement_stages:
                stages_output.extend(refinement_stage(torch.cat([backbone_features, stages_output[-2], stages_output[-1]], dim=1)))
            return stages_output

    def get_parameters(model: nn.Module, predicate: Callable[[nn.Module, str], bool]) -> list[nn.Parameter]:  # modules/get_parameters.py
        return [param for module in model.modules() for param_name, param in module.named_parameters() if predicate(module, param_name)]

    def get_parameters_conv(model: nn.Module, name: str) -> list[nn.Parameter]:
        return get_parameters(model, lambda m, p: isinstance(m, nn.Conv2d) and m.groups == 1 and p == name)

    def get_parameters_conv_depthwise(model: nn.Module, name: str) -> list[nn.Parameter]:
        return get_parameters(model, lambda m, p: isinstance(m, nn.Conv2d) and m.groups == m.in_channels
                              and m.in_channels == m.out_channels and p == name)

    def get_parameters_bn(model: nn.Module, name: str) -> list[nn.Parameter]:
        return get_parameters(model, lambda m, p: isinstance(m, nn.BatchNorm2d) and p == name)

    def l2_loss(input: torch.Tensor, target: torch.Tensor, mask: torch.Tensor, batch_size: int) -> torch.Tensor:  # modules/loss.py
        loss = (input - target) * mask
        loss = (loss * loss) / 2 / batch_size
        return loss.sum()

    # drawn COCO-like crops (CocoTrainDataset after Scale, Rotate, CropPad and Flip): 1 to 4 people
    # of drawn size and place, each with 18 keypoints (COCO's 17 and the neck) of drawn visibility,
    # drawn as limb strokes over a drawn background; the keypoint maps (a Gaussian of sigma 7 per
    # keypoint at stride 8, the background channel 1 minus their max), the part affinity fields
    # (unit limb vectors within path_thickness of each of 19 limbs) and the masks (0 over a drawn
    # unannotated person) made in numpy as the dataset makes them
    n_kpts = 18
    template = np.array([[0, -0.42], [0, -0.3], [-0.15, -0.28], [-0.2, -0.08], [-0.22, 0.1], [0.15, -0.28], [0.2, -0.08],
                         [0.22, 0.1], [-0.1, 0.05], [-0.11, 0.27], [-0.12, 0.47], [0.1, 0.05], [0.11, 0.27], [0.12, 0.47],
                         [-0.03, -0.45], [0.03, -0.45], [-0.07, -0.43], [0.07, -0.43]])
    limbs = [(1, 8), (8, 9), (9, 10), (1, 11), (11, 12), (12, 13), (1, 2), (2, 3), (3, 4), (2, 16), (1, 5), (5, 6), (6, 7),
             (5, 17), (1, 0), (0, 14), (0, 15), (14, 16), (15, 17)]
    grid = np.arange(input_size // stride) * stride + stride / 2 - 0.5
    gx, gy = np.meshgrid(grid, grid)
    yy, xx = np.mgrid[0:input_size, 0:input_size]

    def draw_sample() -> tuple[np.ndarray, ...]:
        img = rng.uniform(0.2, 0.8, (3, 1, 1)) * 255 + 12 * rng.standard_normal((3, input_size, input_size))
        keypoint_maps = np.zeros((num_heatmaps, input_size // stride, input_size // stride), dtype=np.float32)
        paf_maps = np.zeros((num_pafs, input_size // stride, input_size // stride), dtype=np.float32)
        mask = np.ones((input_size // stride, input_size // stride), dtype=np.float32)
        for person in range(int(rng.integers(1, 5))):
            scale = rng.uniform(0.25, 0.9) * input_size
            centre = rng.uniform(0.2, 0.8, 2) * input_size
            kpts = centre + (template + rng.normal(0, 0.02, template.shape)) * scale
            vis = rng.random(n_kpts) > 0.2
            colour = rng.uniform(0, 255, (3, 1))
            for a, b in limbs[:14]:
                seg = kpts[b] - kpts[a]
                t = np.clip(((xx - kpts[a, 0]) * seg[0] + (yy - kpts[a, 1]) * seg[1]) / max(1e-6, (seg ** 2).sum()), 0, 1)
                d2 = (xx - kpts[a, 0] - t * seg[0]) ** 2 + (yy - kpts[a, 1] - t * seg[1]) ** 2
                img[:, d2 < (0.03 * scale) ** 2] = colour
            if person > 0 and rng.random() < 0.3:  # an unannotated person: masked out
                mask[(gx - centre[0]) ** 2 + (gy - centre[1]) ** 2 < (0.3 * scale) ** 2] = 0
                continue
            for k in range(n_kpts):
                if vis[k]:
                    exponent = ((gx - kpts[k, 0]) ** 2 + (gy - kpts[k, 1]) ** 2) / 2 / sigma / sigma
                    keypoint_maps[k] = np.maximum(keypoint_maps[k], np.where(exponent > 4.6052, 0, np.exp(-exponent)))
            for i, (a, b) in enumerate(limbs):
                if not (vis[a] and vis[b]):
                    continue
                seg = (kpts[b] - kpts[a]) / stride
                norm = np.linalg.norm(seg)
                if norm < 1e-6:
                    continue
                unit = seg / norm
                px, py = gx / stride - kpts[a, 0] / stride, gy / stride - kpts[a, 1] / stride
                along = px * unit[0] + py * unit[1]
                across = np.abs(px * unit[1] - py * unit[0])
                on = (along >= 0) & (along <= norm) & (across <= path_thickness)
                paf_maps[2 * i][on] = unit[0]
                paf_maps[2 * i + 1][on] = unit[1]
        keypoint_maps[-1] = 1 - keypoint_maps[:-1].max(0)
        keypoint_mask = np.broadcast_to(mask, keypoint_maps.shape).copy()
        paf_mask = np.broadcast_to(mask, paf_maps.shape).copy()
        image = ((img - 128) / 256).astype(np.float32)
        return image, keypoint_maps, paf_maps, keypoint_mask, paf_mask

    net = PoseEstimationWithMobileNet()
    optimizer = torch.optim.Adam([
        {"params": get_parameters_conv(net.model, "weight")},
        {"params": get_parameters_conv_depthwise(net.model, "weight"), "weight_decay": 0},
        {"params": get_parameters_bn(net.model, "weight"), "weight_decay": 0},
        {"params": get_parameters_bn(net.model, "bias"), "lr": base_lr * 2, "weight_decay": 0},
        {"params": get_parameters_conv(net.cpm, "weight"), "lr": base_lr},
        {"params": get_parameters_conv(net.cpm, "bias"), "lr": base_lr * 2, "weight_decay": 0},
        {"params": get_parameters_conv_depthwise(net.cpm, "weight"), "weight_decay": 0},
        {"params": get_parameters_conv(net.initial_stage, "weight"), "lr": base_lr},
        {"params": get_parameters_conv(net.initial_stage, "bias"), "lr": base_lr * 2, "weight_decay": 0},
        {"params": get_parameters_conv(net.refinement_stages, "weight"), "lr": base_lr * 4},
        {"params": get_parameters_conv(net.refinement_stages, "bias"), "lr": base_lr * 8, "weight_decay": 0},
        {"params": get_parameters_bn(net.refinement_stages, "weight"), "weight_decay": 0},
        {"params": get_parameters_bn(net.refinement_stages, "bias"), "lr": base_lr * 2, "weight_decay": 0},
    ], lr=base_lr, weight_decay=5e-4)
    net.train()
    total = 0.0
    total_losses = [0.0, 0.0] * (num_refinement_stages + 1)
    for _ in range(steps):  # train.py, batches_per_iter 1
        optimizer.zero_grad()
        samples = [draw_sample() for _ in range(batch)]
        images, keypoint_maps, paf_maps, keypoint_masks, paf_masks = (torch.from_numpy(np.stack([s[i] for s in samples]))
                                                                      for i in range(5))
        stages_output = net(images)
        losses = []
        for loss_idx in range(len(total_losses) // 2):
            losses.append(l2_loss(stages_output[loss_idx * 2], keypoint_maps, keypoint_masks, images.shape[0]))
            losses.append(l2_loss(stages_output[loss_idx * 2 + 1], paf_maps, paf_masks, images.shape[0]))
            total_losses[loss_idx * 2] += losses[-2].item() / batches_per_iter
            total_losses[loss_idx * 2 + 1] += losses[-1].item() / batches_per_iter
        loss = losses[0]
        for loss_idx in range(1, len(losses)):
            loss += losses[loss_idx]
        loss /= batches_per_iter
        loss.backward()
        optimizer.step()
        total += loss.item()
    return total


@_workload(default_steps=3)
def dcrnn_traffic_train(*, steps: int, seed: int) -> float:
    """Diffusion convolutional recurrent network for traffic forecasting (Li et al. 2018, as chnsh's
    DCRNN_PyTorch, model/pytorch/dcrnn_cell.py, dcrnn_model.py, dcrnn_supervisor.py's _train and
    _prepare_data, loss.py's masked_mae_loss, lib/utils.py's calculate_random_walk_matrix; the
    METR-LA config: 207 sensors, 12 steps in and 12 out, 2 DCGRU layers of 64 units, max diffusion
    step 2, dual_random_walk, curriculum learning with cl_decay_steps 2000, Adam 0.01 with eps 1e-3,
    max_grad_norm 5) on a drawn METR-LA-like sensor graph (207 sensors along 9 drawn freeway lines,
    road distances, the thresholded Gaussian kernel of liyaguang's DCRNN, scripts/gen_adj_mx.py; its
    two random-walk supports as sparse COO tensors; drawn once, the same for every seed) and batch
    12 of drawn 24-reading windows a step (speeds with rush-hour dips per sensor, 3% missing as 0,
    scaled by a StandardScaler, time of day as the second input; the data generator): the encoder
    run over 12 steps and the decoder over 12, each of the 48 DCGRU cell calls running two graph
    convolutions (_gconv: inputs and state concatenated, permuted and reshaped to 207 x (input x
    batch), four torch.sparse.mm diffusion products each concatenated onto the stack by torch.cat,
    permuted and reshaped to (batch x 207) x (5 x input), a matmul and an in-place bias), the gates,
    the candidate and the update; the parameters made lazily by LayerParams in the first forward and
    the Adam optimizer made after it (the supervisor's workaround); the decoder fed the ground truth
    at each step with the curriculum's probability (nearly always this early, a drawn coin each
    step); the predictions and labels inverse-scaled and the masked MAE taken (the mask divided by
    its mean in place, NaNs zeroed by boolean indexing). Fixed shapes (every step allocates the same
    sizes in the same order); 3 steps (664.06 MiB, 40,418 events). The reference's batch of 64 not
    run: batch 16 gave 883.82 MiB and 53,848 events in 4 steps."""
    torch.manual_seed(0)
    batch, num_nodes, rnn_units, num_rnn_layers, max_diffusion_step = 12, 207, 64, 2, 2
    seq_len, horizon, input_dim, output_dim = 12, 12, 2, 1
    cl_decay_steps, max_grad_norm = 2000, 5.0
    rng = np.random.default_rng(172 + seed)
    graph_rng = np.random.default_rng(172)  # the sensor graph, drawn once

    # a METR-LA-like sensor graph: 207 sensors along drawn freeway polylines, road distances (a
    # little longer one way than the other), gen_adj_mx.py's thresholded Gaussian kernel
    n_roads = 9
    road = graph_rng.integers(0, n_roads, num_nodes)
    starts = graph_rng.uniform(0, 20, (n_roads, 2))
    headings = graph_rng.uniform(0, 2 * np.pi, n_roads)
    along = graph_rng.uniform(0, 15, num_nodes)
    pos = starts[road] + along[:, None] * np.stack([np.cos(headings[road]), np.sin(headings[road])], 1)
    dist = np.sqrt(((pos[:, None, :] - pos[None, :, :]) ** 2).sum(-1))
    dist = dist * np.where(road[:, None] == road[None, :], 1.0, 1.6) * graph_rng.uniform(1.0, 1.2, dist.shape)
    std_d = dist[np.isfinite(dist)].std()
    adj_mx = np.exp(-np.square(dist / (0.2 * std_d))).astype(np.float32)
    adj_mx[adj_mx < 0.1] = 0

    def calculate_random_walk_matrix(adj: np.ndarray) -> np.ndarray:  # lib/utils.py
        d = adj.sum(1)
        d_inv = np.power(d, -1.0)
        d_inv[np.isinf(d_inv)] = 0.
        return (d_inv[:, None] * adj).astype(np.float32)

    def build_sparse_matrix(L: np.ndarray) -> torch.Tensor:  # DCGRUCell._build_sparse_matrix
        row, col = np.nonzero(L)
        indices = np.column_stack((row, col))
        indices = indices[np.lexsort((indices[:, 0], indices[:, 1]))]
        return torch.sparse_coo_tensor(indices.T, L[indices[:, 0], indices[:, 1]], L.shape, check_invariants=False)

    support_mats = [calculate_random_walk_matrix(adj_mx).T, calculate_random_walk_matrix(adj_mx.T).T]  # dual_random_walk

    class LayerParams:  # model/pytorch/dcrnn_cell.py: parameters made on first use
        def __init__(self, rnn_network: nn.Module, layer_type: str) -> None:
            self._rnn_network, self._type = rnn_network, layer_type
            self._params_dict: dict[tuple[int, int], nn.Parameter] = {}
            self._biases_dict: dict[int, nn.Parameter] = {}

        def get_weights(self, shape: tuple[int, int]) -> nn.Parameter:
            if shape not in self._params_dict:
                nn_param = nn.Parameter(torch.empty(*shape))
                nn.init.xavier_normal_(nn_param)
                self._params_dict[shape] = nn_param
                self._rnn_network.register_parameter(f"{self._type}_weight_{shape}", nn_param)
            return self._params_dict[shape]

        def get_biases(self, length: int, bias_start: float = 0.0) -> nn.Parameter:
            if length not in self._biases_dict:
                biases = nn.Parameter(torch.empty(length))
                nn.init.constant_(biases, bias_start)
                self._biases_dict[length] = biases
                self._rnn_network.register_parameter(f"{self._type}_biases_{length}", biases)
            return self._biases_dict[length]

    class DCGRUCell(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self._supports = [build_sparse_matrix(s) for s in support_mats]
            self._gconv_params = LayerParams(self, "gconv")

        def forward(self, inputs: torch.Tensor, hx: torch.Tensor) -> torch.Tensor:
            output_size = 2 * rnn_units
            value = torch.sigmoid(self._gconv(inputs, hx, output_size, bias_start=1.0))
            value = torch.reshape(value, (-1, num_nodes, output_size))
            r, u = torch.split(tensor=value, split_size_or_sections=rnn_units, dim=-1)
            r = torch.reshape(r, (-1, num_nodes * rnn_units))
            u = torch.reshape(u, (-1, num_nodes * rnn_units))
            c = torch.tanh(self._gconv(inputs, r * hx, rnn_units))
            return u * hx + (1.0 - u) * c

        @staticmethod
        def _concat(x: torch.Tensor, x_: torch.Tensor) -> torch.Tensor:
            return torch.cat([x, x_.unsqueeze(0)], dim=0)

        def _gconv(self, inputs: torch.Tensor, state: torch.Tensor, output_size: int, bias_start: float = 0.0) -> torch.Tensor:
            batch_size = inputs.shape[0]
            inputs = torch.reshape(inputs, (batch_size, num_nodes, -1))
            state = torch.reshape(state, (batch_size, num_nodes, -1))
            inputs_and_state = torch.cat([inputs, state], dim=2)
            input_size = inputs_and_state.size(2)
            x0 = inputs_and_state.permute(1, 2, 0)
            x0 = torch.reshape(x0, shape=[num_nodes, input_size * batch_size])
            x = torch.unsqueeze(x0, 0)
            for support in self._supports:
                x1 = torch.sparse.mm(support, x0)
                x = self._concat(x, x1)
                for _k in range(2, max_diffusion_step + 1):
                    x2 = 2 * torch.sparse.mm(support, x1) - x0
                    x = self._concat(x, x2)
                    x1, x0 = x2, x1
            num_matrices = len(self._supports) * max_diffusion_step + 1
            x = torch.reshape(x, shape=[num_matrices, num_nodes, input_size, batch_size])
            x = x.permute(3, 1, 2, 0)
            x = torch.reshape(x, shape=[batch_size * num_nodes, input_size * num_matrices])
            weights = self._gconv_params.get_weights((input_size * num_matrices, output_size))
            x = torch.matmul(x, weights)
            biases = self._gconv_params.get_biases(output_size, bias_start)
            x += biases
            return torch.reshape(x, [batch_size, num_nodes * output_size])

    class EncoderModel(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.dcgru_layers = nn.ModuleList(DCGRUCell() for _ in range(num_rnn_layers))

        def forward(self, inputs: torch.Tensor, hidden_state: torch.Tensor | None = None) -> tuple[torch.Tensor, torch.Tensor]:
            batch_size, _ = inputs.size()
            if hidden_state is None:
                hidden_state = torch.zeros((num_rnn_layers, batch_size, num_nodes * rnn_units))
            hidden_states = []
            output = inputs
            for layer_num, dcgru_layer in enumerate(self.dcgru_layers):
                next_hidden_state = dcgru_layer(output, hidden_state[layer_num])
                hidden_states.append(next_hidden_state)
                output = next_hidden_state
            return output, torch.stack(hidden_states)

    class DecoderModel(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.projection_layer = nn.Linear(rnn_units, output_dim)
            self.dcgru_layers = nn.ModuleList(DCGRUCell() for _ in range(num_rnn_layers))

        def forward(self, inputs: torch.Tensor, hidden_state: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
            hidden_states = []
            output = inputs
            for layer_num, dcgru_layer in enumerate(self.dcgru_layers):
                next_hidden_state = dcgru_layer(output, hidden_state[layer_num])
                hidden_states.append(next_hidden_state)
                output = next_hidden_state
            projected = self.projection_layer(output.view(-1, rnn_units))
            return projected.view(-1, num_nodes * output_dim), torch.stack(hidden_states)

    class DCRNNModel(nn.Module):  # model/pytorch/dcrnn_model.py
        def __init__(self) -> None:
            super().__init__()
            self.encoder_model = EncoderModel()
            self.decoder_model = DecoderModel()

        def forward(self, inputs: torch.Tensor, labels: torch.Tensor, batches_seen: int) -> torch.Tensor:
            encoder_hidden_state = None
            for t in range(seq_len):
                _, encoder_hidden_state = self.encoder_model(inputs[t], encoder_hidden_state)
            assert encoder_hidden_state is not None
            batch_size = encoder_hidden_state.size(1)
            decoder_input = torch.zeros((batch_size, num_nodes * output_dim))  # go_symbol
            decoder_hidden_state = encoder_hidden_state
            outputs = []
            for t in range(horizon):
                decoder_output, decoder_hidden_state = self.decoder_model(decoder_input, decoder_hidden_state)
                decoder_input = decoder_output
                outputs.append(decoder_output)
                if self.training:  # use_curriculum_learning
                    c = rng.uniform(0, 1)
                    if c < cl_decay_steps / (cl_decay_steps + np.exp(batches_seen / cl_decay_steps)):
                        decoder_input = labels[t]
            return torch.stack(outputs)

    # drawn METR-LA-like speeds (mph, 5-minute readings): free flow per sensor with rush-hour dips
    # and incidents, a few readings missing (0, masked out of the loss); time of day as the
    # second input feature
    free_flow = graph_rng.uniform(55, 70, num_nodes)
    rush_depth = graph_rng.uniform(0.1, 0.6, num_nodes)
    speed_mean, speed_std = 58.0, 13.0  # the StandardScaler of the training split

    def draw_window() -> np.ndarray:
        t0 = rng.integers(0, 288)
        tod = ((t0 + np.arange(seq_len + horizon)) % 288) / 288.0
        rush = np.exp(-((tod - 0.33) / 0.05) ** 2) + np.exp(-((tod - 0.72) / 0.06) ** 2)
        speed = free_flow[None, :] * (1 - rush_depth[None, :] * rush[:, None]) + rng.normal(0, 2.5, (seq_len + horizon, num_nodes))
        speed[rng.random(speed.shape) < 0.03] = 0.0
        return np.stack([speed, np.broadcast_to(tod[:, None], speed.shape)], -1)

    def masked_mae_loss(y_pred: torch.Tensor, y_true: torch.Tensor) -> torch.Tensor:  # model/pytorch/loss.py
        mask = (y_true != 0).float()
        mask /= mask.mean()
        loss = torch.abs(y_pred - y_true)
        loss = loss * mask
        loss[loss != loss] = 0
        return loss.mean()

    model = DCRNNModel()
    model.train()
    optimizer: torch.optim.Optimizer | None = None
    total = 0.0
    for batches_seen in range(steps):  # dcrnn_supervisor.py _train
        windows = np.stack([draw_window() for _ in range(batch)])
        x_np = windows[:, :seq_len].copy()
        x_np[..., 0] = (x_np[..., 0] - speed_mean) / speed_std
        y_np = windows[:, seq_len:].copy()
        y_np[..., 0] = (y_np[..., 0] - speed_mean) / speed_std
        x = torch.from_numpy(x_np).float().permute(1, 0, 2, 3)  # _get_x_y
        y = torch.from_numpy(y_np).float().permute(1, 0, 2, 3)
        x = x.view(seq_len, batch, num_nodes * input_dim)  # _get_x_y_in_correct_dims
        y = y[..., :output_dim].view(horizon, batch, num_nodes * output_dim)
        if optimizer is not None:
            optimizer.zero_grad()
        output = model(x, y, batches_seen)
        if batches_seen == 0:  # the parameters are made in the first forward
            optimizer = torch.optim.Adam(model.parameters(), lr=0.01, eps=1e-3)
        y_true = y * speed_std + speed_mean  # standard_scaler.inverse_transform
        y_predicted = output * speed_std + speed_mean
        loss = masked_mae_loss(y_predicted, y_true)
        total += loss.item()
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), max_grad_norm)
        assert optimizer is not None
        optimizer.step()
    return total


@_workload(default_steps=2)
def pointer_gen_train(*, steps: int, seed: int) -> float:
    """Pointer-generator summarisation network (See et al. 2017, as atulkum's pointer_summarizer,
    training_ptr_gen/model.py, train.py's train_one_batch, train_util.py's get_input_from_batch and
    get_output_from_batch, data_util/batcher.py's Example and Batch and its bucketing, data.py's
    article2ids and abstract2ids, config.py: hidden 256, embedding 128, vocabulary 50,000,
    max_enc_steps 400, max_dec_steps 100, pointer_gen on, coverage off, Adagrad 0.15 with initial
    accumulator 0.1, max_grad_norm 2.0) on drawn CNN / Daily Mail-like stories (article and abstract
    lengths log-normal around the dataset's 780 and 56 tokens, words of a Zipf law over 400,000
    types, about 3% of tokens out of the vocabulary, abstracts copying most words from their
    article; the data generator), batch 3 a step: the bucketing batcher (a cache of 100 batches'
    examples sorted by article length, cut into batches, the batches shuffled), articles cut to 400
    tokens and padded to the batch's longest, abstracts to 100; the encoder's embedding (shared
    with the decoder) packed by the article lengths through a bidirectional LSTM, unpacked, and
    W_h over every encoder state; the decoder looped over the batch's longest abstract (teacher
    forcing): embedding, x_context, a one-step LSTM, attention over the encoder states (the decoder
    feature expanded to batch x t_k x 512 by contiguous, tanh, softmax masked and renormalised),
    p_gen, the 50,000-way vocabulary softmax scaled by p_gen and concatenated with zeros for the
    batch's article OOVs, the attention added in by scatter_add at the articles' extended ids, the
    gold probability gathered; the step losses masked, summed, divided by the abstract lengths and
    averaged; clip_grad_norm_ on the encoder, decoder and reduce-state parameters and an Adagrad
    step (the shared embedding listed twice, as the reference lists it, so torch warns of a
    duplicate parameter in the group). Shapes follow the data: the encoder length (the batch's
    longest article up to 400; when the lengths differ, the packed LSTM runs its batch-size
    changes step by step), the decoder steps (the batch's longest abstract, up to 100) and the
    extended vocabulary (50,000 plus the batch's largest OOV count): first run 400 / 100 / 12 and
    400 / 57 / 12, second run 370 / 58 / 16, 400 / 64 / 16, 318 / 63 / 13 and 400 / 100 / 18 (a batch of
    unequal article lengths costs many events: a 1-step dry run of the second run's first batch,
    58 decoder steps, gave 46,338 events, one of the first run's first batch, 100, gave 23,230); 2 steps (747.95 MiB,
    36,648 events). The reference's batch 8 gave 1.39 GiB and 62,162 events in 3 steps, batch 4
    845.21 MiB in 2; so batch 3 and 2 steps."""
    torch.manual_seed(0)
    batch, hidden_dim, emb_dim, vocab_size = 3, 256, 128, 50000
    max_enc_steps, max_dec_steps, lr, adagrad_init_acc = 400, 100, 0.15, 0.1
    rand_unif_init_mag, trunc_norm_init_std, max_grad_norm, eps = 0.02, 1e-4, 2.0, 1e-12
    bucketing_cache_size = 100
    unk_id, pad_id, start_id, stop_id = 0, 1, 2, 3  # data.py: [UNK], [PAD], [START], [STOP]
    rng = np.random.default_rng(173 + seed)

    def init_lstm_wt(lstm: nn.LSTM) -> None:
        for names in lstm._all_weights:
            for name in names:
                if name.startswith("weight_"):
                    getattr(lstm, name).data.uniform_(-rand_unif_init_mag, rand_unif_init_mag)
                elif name.startswith("bias_"):
                    bias = getattr(lstm, name)
                    n = bias.size(0)
                    bias.data.fill_(0.)
                    bias.data[n // 4:n // 2].fill_(1.)

    def init_linear_wt(linear: nn.Linear) -> None:
        linear.weight.data.normal_(std=trunc_norm_init_std)
        if linear.bias is not None:
            linear.bias.data.normal_(std=trunc_norm_init_std)

    class Encoder(nn.Module):  # training_ptr_gen/model.py
        def __init__(self) -> None:
            super().__init__()
            self.embedding = nn.Embedding(vocab_size, emb_dim)
            self.embedding.weight.data.normal_(std=trunc_norm_init_std)
            self.lstm = nn.LSTM(emb_dim, hidden_dim, num_layers=1, batch_first=True, bidirectional=True)
            init_lstm_wt(self.lstm)
            self.W_h = nn.Linear(hidden_dim * 2, hidden_dim * 2, bias=False)

        def forward(self, input: torch.Tensor, seq_lens: np.ndarray) -> tuple[torch.Tensor, torch.Tensor, tuple[torch.Tensor, torch.Tensor]]:
            embedded = self.embedding(input)
            packed = nn.utils.rnn.pack_padded_sequence(embedded, torch.from_numpy(seq_lens), batch_first=True)
            output, hidden = self.lstm(packed)
            encoder_outputs, _ = nn.utils.rnn.pad_packed_sequence(output, batch_first=True)
            encoder_outputs = encoder_outputs.contiguous()
            encoder_feature = encoder_outputs.view(-1, 2 * hidden_dim)
            encoder_feature = self.W_h(encoder_feature)
            return encoder_outputs, encoder_feature, hidden

    class ReduceState(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.reduce_h = nn.Linear(hidden_dim * 2, hidden_dim)
            init_linear_wt(self.reduce_h)
            self.reduce_c = nn.Linear(hidden_dim * 2, hidden_dim)
            init_linear_wt(self.reduce_c)

        def forward(self, hidden: tuple[torch.Tensor, torch.Tensor]) -> tuple[torch.Tensor, torch.Tensor]:
            h, c = hidden
            h_in = h.transpose(0, 1).contiguous().view(-1, hidden_dim * 2)
            hidden_reduced_h = nn.functional.relu(self.reduce_h(h_in))
            c_in = c.transpose(0, 1).contiguous().view(-1, hidden_dim * 2)
            hidden_reduced_c = nn.functional.relu(self.reduce_c(c_in))
            return hidden_reduced_h.unsqueeze(0), hidden_reduced_c.unsqueeze(0)

    class Attention(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.decode_proj = nn.Linear(hidden_dim * 2, hidden_dim * 2)
            self.v = nn.Linear(hidden_dim * 2, 1, bias=False)

        def forward(self, s_t_hat: torch.Tensor, encoder_outputs: torch.Tensor, encoder_feature: torch.Tensor,
                    enc_padding_mask: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
            b, t_k, n = list(encoder_outputs.size())
            dec_fea = self.decode_proj(s_t_hat)
            dec_fea_expanded = dec_fea.unsqueeze(1).expand(b, t_k, n).contiguous()
            dec_fea_expanded = dec_fea_expanded.view(-1, n)
            att_features = encoder_feature + dec_fea_expanded
            e = torch.tanh(att_features)
            scores = self.v(e)
            scores = scores.view(-1, t_k)
            attn_dist_ = nn.functional.softmax(scores, dim=1) * enc_padding_mask
            normalization_factor = attn_dist_.sum(1, keepdim=True)
            attn_dist = attn_dist_ / normalization_factor
            attn_dist = attn_dist.unsqueeze(1)
            c_t = torch.bmm(attn_dist, encoder_outputs)
            c_t = c_t.view(-1, hidden_dim * 2)
            attn_dist = attn_dist.view(-1, t_k)
            return c_t, attn_dist

    class Decoder(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.attention_network = Attention()
            self.embedding = nn.Embedding(vocab_size, emb_dim)
            self.x_context = nn.Linear(hidden_dim * 2 + emb_dim, emb_dim)
            self.lstm = nn.LSTM(emb_dim, hidden_dim, num_layers=1, batch_first=True, bidirectional=False)
            init_lstm_wt(self.lstm)
            self.p_gen_linear = nn.Linear(hidden_dim * 4 + emb_dim, 1)
            self.out1 = nn.Linear(hidden_dim * 3, hidden_dim)
            self.out2 = nn.Linear(hidden_dim, vocab_size)
            init_linear_wt(self.out2)

        def forward(self, y_t_1: torch.Tensor, s_t_1: tuple[torch.Tensor, torch.Tensor], encoder_outputs: torch.Tensor,
                    encoder_feature: torch.Tensor, enc_padding_mask: torch.Tensor, c_t_1: torch.Tensor,
                    extra_zeros: torch.Tensor | None, enc_batch_extend_vocab: torch.Tensor
                    ) -> tuple[torch.Tensor, tuple[torch.Tensor, torch.Tensor], torch.Tensor]:
            y_t_1_embd = self.embedding(y_t_1)
            x = self.x_context(torch.cat((c_t_1, y_t_1_embd), 1))
            lstm_out, s_t = self.lstm(x.unsqueeze(1), s_t_1)
            h_decoder, c_decoder = s_t
            s_t_hat = torch.cat((h_decoder.view(-1, hidden_dim), c_decoder.view(-1, hidden_dim)), 1)
            c_t, attn_dist = self.attention_network(s_t_hat, encoder_outputs, encoder_feature, enc_padding_mask)
            p_gen_input = torch.cat((c_t, s_t_hat, x), 1)
            p_gen = torch.sigmoid(self.p_gen_linear(p_gen_input))
            output = torch.cat((lstm_out.view(-1, hidden_dim), c_t), 1)
            output = self.out1(output)
            output = self.out2(output)
            vocab_dist = nn.functional.softmax(output, dim=1)
            vocab_dist_ = p_gen * vocab_dist
            attn_dist_ = (1 - p_gen) * attn_dist
            if extra_zeros is not None:
                vocab_dist_ = torch.cat([vocab_dist_, extra_zeros], 1)
            final_dist = vocab_dist_.scatter_add(1, enc_batch_extend_vocab, attn_dist_)
            return final_dist, s_t, c_t

    encoder, decoder, reduce_state = Encoder(), Decoder(), ReduceState()
    decoder.embedding.weight = encoder.embedding.weight  # shared
    params = list(encoder.parameters()) + list(decoder.parameters()) + list(reduce_state.parameters())
    optimizer = torch.optim.Adagrad(params, lr=lr, initial_accumulator_value=adagrad_init_acc)

    # drawn CNN / Daily Mail-like stories: article and abstract lengths log-normal around the
    # dataset's (about 780 and 56 tokens), words of a Zipf law over 400,000 types (types past the
    # 50,000-word vocabulary are OOV: about 3% of tokens), abstracts copying most words from
    # their article; batcher.py's Example and Batch, its bucketing (a cache of 100 batches'
    # examples sorted by article length, cut into batches, the batches shuffled)
    def zipf_words(n: int) -> np.ndarray:
        return (rng.zipf(1.3, n) - 1) % 400000

    def word2id(ranks: np.ndarray) -> np.ndarray:
        return np.where(ranks < vocab_size - 4, ranks + 4, unk_id)

    def make_example(enc_len: int) -> dict[str, object]:
        article = zipf_words(enc_len)
        abs_len = int(np.clip(rng.lognormal(math.log(56), 0.35), 8, 160))
        copied = rng.random(abs_len) < 0.7
        abstract = np.where(copied, article[rng.integers(0, enc_len, abs_len)], zipf_words(abs_len))
        article_oovs = list(dict.fromkeys(int(w) for w in article if w >= vocab_size - 4))
        oov_index = {w: i for i, w in enumerate(article_oovs)}
        enc_input_extend_vocab = np.array([vocab_size + oov_index[int(w)] if w >= vocab_size - 4 else w + 4 for w in article])
        abs_ids = word2id(abstract)
        abs_ids_extend_vocab = np.array([vocab_size + oov_index[int(w)] if w >= vocab_size - 4 and int(w) in oov_index
                                         else (unk_id if w >= vocab_size - 4 else w + 4) for w in abstract])
        dec_input = np.concatenate([[start_id], abs_ids])  # get_dec_inp_targ_seqs
        target = abs_ids_extend_vocab
        if len(dec_input) > max_dec_steps:
            dec_input, target = dec_input[:max_dec_steps], target[:max_dec_steps]
        else:
            target = np.concatenate([target, [stop_id]])
        return {"enc_input": word2id(article), "enc_len": enc_len, "enc_input_extend_vocab": enc_input_extend_vocab,
                "article_oovs": article_oovs, "dec_input": dec_input, "target": target, "dec_len": len(dec_input)}

    def bucket_batches() -> list[np.ndarray]:
        art_lens = np.minimum(np.round(rng.lognormal(math.log(780), 0.5, batch * bucketing_cache_size)).astype(int), max_enc_steps)
        art_lens = np.maximum(art_lens, 30)
        art_lens = np.sort(art_lens)[::-1]
        batches = [art_lens[i:i + batch] for i in range(0, len(art_lens), batch)]
        order = rng.permutation(len(batches))
        return [batches[i] for i in order]

    pending: list[np.ndarray] = []
    total = 0.0
    encoder.train(), decoder.train(), reduce_state.train()
    for _ in range(steps):
        if not pending:
            pending = bucket_batches()
        examples = [make_example(int(n)) for n in pending.pop(0)]
        max_enc_seq_len = max(int(cast(int, ex["enc_len"])) for ex in examples)  # Batch.init_encoder_seq
        enc_batch_np = np.full((batch, max_enc_seq_len), pad_id, dtype=np.int32)
        enc_extend_np = np.full((batch, max_enc_seq_len), pad_id, dtype=np.int32)
        enc_padding_np = np.zeros((batch, max_enc_seq_len), dtype=np.float32)
        dec_batch_np = np.full((batch, max_dec_steps), pad_id, dtype=np.int32)  # init_decoder_seq
        target_np = np.full((batch, max_dec_steps), pad_id, dtype=np.int32)
        dec_padding_np = np.zeros((batch, max_dec_steps), dtype=np.float32)
        for i, ex in enumerate(examples):
            n_enc, n_dec = cast(int, ex["enc_len"]), cast(int, ex["dec_len"])
            enc_batch_np[i, :n_enc] = cast(np.ndarray, ex["enc_input"])
            enc_extend_np[i, :n_enc] = cast(np.ndarray, ex["enc_input_extend_vocab"])
            enc_padding_np[i, :n_enc] = 1
            dec_batch_np[i, :n_dec] = cast(np.ndarray, ex["dec_input"])
            target_np[i, :n_dec] = cast(np.ndarray, ex["target"])
            dec_padding_np[i, :n_dec] = 1
        enc_lens = np.array([ex["enc_len"] for ex in examples], dtype=np.int32)
        dec_lens = np.array([ex["dec_len"] for ex in examples], dtype=np.int32)
        max_art_oovs = max(len(cast(list, ex["article_oovs"])) for ex in examples)
        # train_util.get_input_from_batch / get_output_from_batch
        enc_batch = torch.from_numpy(enc_batch_np).long()
        enc_padding_mask = torch.from_numpy(enc_padding_np).float()
        enc_batch_extend_vocab = torch.from_numpy(enc_extend_np).long()
        extra_zeros = torch.zeros((batch, max_art_oovs)) if max_art_oovs > 0 else None
        c_t_1 = torch.zeros((batch, 2 * hidden_dim))
        dec_batch = torch.from_numpy(dec_batch_np).long()
        dec_padding_mask = torch.from_numpy(dec_padding_np).float()
        max_dec_len = int(np.max(dec_lens))
        dec_lens_var = torch.from_numpy(dec_lens).float()
        target_batch = torch.from_numpy(target_np).long()
        optimizer.zero_grad()  # train.py train_one_batch
        encoder_outputs, encoder_feature, encoder_hidden = encoder(enc_batch, enc_lens)
        s_t_1 = reduce_state(encoder_hidden)
        step_losses = []
        for di in range(min(max_dec_len, max_dec_steps)):
            y_t_1 = dec_batch[:, di]  # teacher forcing
            final_dist, s_t_1, c_t_1 = decoder(y_t_1, s_t_1, encoder_outputs, encoder_feature, enc_padding_mask, c_t_1,
                                               extra_zeros, enc_batch_extend_vocab)
            target = target_batch[:, di]
            gold_probs = torch.gather(final_dist, 1, target.unsqueeze(1)).squeeze()
            step_loss = -torch.log(gold_probs + eps)
            step_mask = dec_padding_mask[:, di]
            step_loss = step_loss * step_mask
            step_losses.append(step_loss)
        sum_losses = torch.sum(torch.stack(step_losses, 1), 1)
        batch_avg_loss = sum_losses / dec_lens_var
        loss = torch.mean(batch_avg_loss)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(encoder.parameters(), max_grad_norm)
        torch.nn.utils.clip_grad_norm_(decoder.parameters(), max_grad_norm)
        torch.nn.utils.clip_grad_norm_(reduce_state.parameters(), max_grad_norm)
        optimizer.step()
        total += loss.item()
    return total


@_workload(default_steps=6)
def navit_train(*, steps: int, seed: int) -> float:
    """NaViT, a vision transformer over images at their native resolutions packed into sequences
    (Dehghani et al. 2023, as lucidrains's vit-pytorch, vit_pytorch/na_vit.py: group_images_by_max_seq_len
    with token dropout, the bias-free LayerNorm, RMSNorm query / key normalisation per head, the
    per-sequence attention mask from image ids, factorised height and width position embeddings
    looked up by each kept patch's position, attention pooling by one query per image); the README's
    example configuration (patch 32, 1,000 classes, depth 6, MLP 2 x dim, dropout 0.1, embedding
    dropout 0.1, token dropout 0.1) at dim 512 and 8 heads (the README's dim 1024 and 16 heads not
    run), sequences packed up to 128 tokens (group_max_seq_len); the repository has no training loop,
    so cross-entropy and Adam 3e-4. 32 drawn images a step at their own sizes (each side a
    multiple of 32 from 64 to 256, the short side drawn and the long side from a drawn aspect ratio,
    smooth colour fields with noise; labels drawn; the data generator): each image cut into patches
    by a permute and reshape, its positions by meshgrid and stack, a drawn 90% of its patches kept
    by topk over torch.randn, its image ids grown by F.pad, the groups concatenated and padded by
    pad_sequence, the batch x 1 x n x n mask by comparing image ids, the pooled queries masked per
    image, the padded query slots dropped by boolean indexing. Shapes follow the data: the number of
    sequences, their padded length and the images per sequence (first run 8 to 11 sequences of up
    to 122-128 tokens a step, 1 to 7 images each; second run 7 to 12 sequences of up to 115-128
    tokens, 1 to 9 images each); 6 steps (754.12 MiB, 25,838 events). 64 images a step gave
    1.12 GiB."""
    torch.manual_seed(0)
    n_images, patch_size, num_classes, dim, depth, heads, dim_head, mlp_dim = 32, 32, 1000, 512, 6, 8, 64, 1024
    dropout, emb_dropout, token_dropout_prob, group_max_seq_len, channels = 0.1, 0.1, 0.1, 128, 3
    image_size = 256
    rng = np.random.default_rng(174 + seed)

    class LayerNorm(nn.Module):  # layernorm without bias
        def __init__(self, dim: int) -> None:
            super().__init__()
            self.gamma = nn.Parameter(torch.ones(dim))
            self.register_buffer("beta", torch.zeros(dim))

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            return nn.functional.layer_norm(x, x.shape[-1:], self.gamma, cast(torch.Tensor, self.beta))

    class RMSNorm(nn.Module):  # query-key normalisation
        def __init__(self, heads: int, dim: int) -> None:
            super().__init__()
            self.scale = dim ** 0.5
            self.gamma = nn.Parameter(torch.ones(heads, 1, dim))

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            normed = nn.functional.normalize(x, dim=-1)
            return normed * self.scale * self.gamma

    def feed_forward(dim: int, hidden_dim: int) -> nn.Sequential:
        return nn.Sequential(LayerNorm(dim), nn.Linear(dim, hidden_dim), nn.GELU(), nn.Dropout(dropout),
                             nn.Linear(hidden_dim, dim), nn.Dropout(dropout))

    class Attention(nn.Module):
        def __init__(self, dim: int, heads: int, dim_head: int, dropout: float = 0.) -> None:
            super().__init__()
            inner_dim = dim_head * heads
            self.heads = heads
            self.norm = LayerNorm(dim)
            self.q_norm = RMSNorm(heads, dim_head)
            self.k_norm = RMSNorm(heads, dim_head)
            self.attend = nn.Softmax(dim=-1)
            self.dropout = nn.Dropout(dropout)
            self.to_q = nn.Linear(dim, inner_dim, bias=False)
            self.to_kv = nn.Linear(dim, inner_dim * 2, bias=False)
            self.to_out = nn.Sequential(nn.Linear(inner_dim, dim, bias=False), nn.Dropout(dropout))

        def forward(self, x: torch.Tensor, context: torch.Tensor | None = None, attn_mask: torch.Tensor | None = None) -> torch.Tensor:
            x = self.norm(x)
            kv_input = context if context is not None else x
            qkv = (self.to_q(x), *self.to_kv(kv_input).chunk(2, dim=-1))
            q, k, v = (t.view(t.shape[0], t.shape[1], self.heads, -1).transpose(1, 2) for t in qkv)  # b n (h d) -> b h n d
            q = self.q_norm(q)
            k = self.k_norm(k)
            dots = torch.matmul(q, k.transpose(-1, -2))
            if attn_mask is not None:
                dots = dots.masked_fill(~attn_mask, -torch.finfo(dots.dtype).max)
            attn = self.dropout(self.attend(dots))
            out = torch.matmul(attn, v)
            out = out.transpose(1, 2).reshape(out.shape[0], out.shape[2], -1)  # b h n d -> b n (h d)
            return self.to_out(out)

    class Transformer(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.layers = nn.ModuleList(nn.ModuleList([Attention(dim, heads, dim_head, dropout), feed_forward(dim, mlp_dim)])
                                        for _ in range(depth))
            self.norm = LayerNorm(dim)

        def forward(self, x: torch.Tensor, attn_mask: torch.Tensor) -> torch.Tensor:
            for attn, ff in cast(list[tuple[nn.Module, nn.Module]], self.layers):
                x = attn(x, attn_mask=attn_mask) + x
                x = ff(x) + x
            return self.norm(x)

    def group_images_by_max_seq_len(images: list[torch.Tensor]) -> list[list[torch.Tensor]]:
        groups, group, seq_len = [], [], 0
        for image in images:
            ph, pw = (d // patch_size for d in image.shape[-2:])
            image_seq_len = int(ph * pw * (1 - token_dropout_prob))
            assert image_seq_len <= group_max_seq_len
            if seq_len + image_seq_len > group_max_seq_len:
                groups.append(group)
                group, seq_len = [], 0
            group.append(image)
            seq_len += image_seq_len
        if group:
            groups.append(group)
        return groups

    class NaViT(nn.Module):  # vit_pytorch/na_vit.py
        def __init__(self) -> None:
            super().__init__()
            patch_dim = channels * patch_size ** 2
            self.to_patch_embedding = nn.Sequential(LayerNorm(patch_dim), nn.Linear(patch_dim, dim), LayerNorm(dim))
            self.pos_embed_height = nn.Parameter(torch.randn(image_size // patch_size, dim))
            self.pos_embed_width = nn.Parameter(torch.randn(image_size // patch_size, dim))
            self.dropout = nn.Dropout(emb_dropout)
            self.transformer = Transformer()
            self.attn_pool_queries = nn.Parameter(torch.randn(dim))
            self.attn_pool = Attention(dim=dim, dim_head=dim_head, heads=heads)
            self.mlp_head = nn.Sequential(LayerNorm(dim), nn.Linear(dim, num_classes, bias=False))

        def forward(self, images: list[torch.Tensor]) -> torch.Tensor:
            p, c = patch_size, channels
            batched_images = group_images_by_max_seq_len(images)
            num_images, batched_sequences, batched_positions, batched_image_ids = [], [], [], []
            for group in batched_images:
                num_images.append(len(group))
                sequences, positions = [], []
                image_ids = torch.empty((0,), dtype=torch.long)
                for image_id, image in enumerate(group):
                    assert image.ndim == 3 and image.shape[0] == c
                    ph, pw = (d // p for d in image.shape[-2:])
                    pos = torch.stack(torch.meshgrid((torch.arange(ph), torch.arange(pw)), indexing="ij"), dim=-1)
                    pos = pos.reshape(ph * pw, 2)  # h w c -> (h w) c
                    seq = image.view(c, ph, p, pw, p).permute(1, 3, 0, 2, 4).reshape(ph * pw, c * p * p)
                    seq_len = seq.shape[-2]
                    num_keep = max(1, int(seq_len * (1 - token_dropout_prob)))
                    keep_indices = torch.randn((seq_len,)).topk(num_keep, dim=-1).indices
                    seq = seq[keep_indices]
                    pos = pos[keep_indices]
                    image_ids = nn.functional.pad(image_ids, (0, seq.shape[-2]), value=image_id)
                    sequences.append(seq)
                    positions.append(pos)
                batched_image_ids.append(image_ids)
                batched_sequences.append(torch.cat(sequences, dim=0))
                batched_positions.append(torch.cat(positions, dim=0))
            lengths = torch.tensor([seq.shape[-2] for seq in batched_sequences], dtype=torch.long)
            max_length = torch.arange(int(lengths.amax().item()))
            key_pad_mask = lengths[:, None] > max_length[None, :]  # True where a token is
            image_ids_padded = nn.utils.rnn.pad_sequence(batched_image_ids, batch_first=True)
            attn_mask = image_ids_padded[:, None, :, None] == image_ids_padded[:, None, None, :]
            attn_mask = attn_mask & key_pad_mask[:, None, None, :]
            patches = nn.utils.rnn.pad_sequence(batched_sequences, batch_first=True)
            patch_positions = nn.utils.rnn.pad_sequence(batched_positions, batch_first=True)
            num_images_t = torch.tensor(num_images, dtype=torch.long)
            x = self.to_patch_embedding(patches)
            h_indices, w_indices = patch_positions.unbind(dim=-1)
            x = x + self.pos_embed_height[h_indices] + self.pos_embed_width[w_indices]
            x = self.dropout(x)
            x = self.transformer(x, attn_mask=attn_mask)
            max_queries = int(num_images_t.amax().item())
            queries = self.attn_pool_queries.expand(x.shape[0], max_queries, dim)  # repeat 'd -> b n d'
            image_id_arange = torch.arange(max_queries)
            attn_pool_mask = image_id_arange[:, None] == image_ids_padded[:, None, :]
            attn_pool_mask = attn_pool_mask & key_pad_mask[:, None, :]
            attn_pool_mask = attn_pool_mask[:, None]
            x = self.attn_pool(queries, context=x, attn_mask=attn_pool_mask) + queries
            x = x.reshape(-1, dim)  # b n d -> (b n) d
            is_images = (image_id_arange < num_images_t[:, None]).reshape(-1)
            x = x[is_images]
            return self.mlp_head(x)

    # drawn ImageNet-like photos at their own resolutions and aspect ratios (each side a multiple
    # of the patch size, 64 to 256 pixels: the short side drawn, the long side from a drawn aspect
    # ratio), smooth colour fields with noise, normalised to zero mean; labels drawn
    sides = np.arange(64, image_size + 1, patch_size)

    def draw_image() -> tuple[np.ndarray, int]:
        short = int(rng.choice(sides))
        long = int(min(image_size, patch_size * round(short * rng.choice([1.0, 4 / 3, 3 / 2, 16 / 9]) / patch_size)))
        h, w = (short, long) if rng.random() < 0.6 else (long, short)
        yy, xx = np.mgrid[0:h, 0:w] / max(h, w)
        base = rng.normal(0, 1, (3, 1, 1)) * np.cos(2 * np.pi * (rng.uniform(0.5, 3) * xx + rng.uniform(0.5, 3) * yy))[None]
        img = (base + 0.3 * rng.standard_normal((3, h, w))).astype(np.float32)
        return img, int(rng.integers(0, num_classes))

    model = NaViT()
    optimizer = torch.optim.Adam(model.parameters(), lr=3e-4)
    model.train()
    total = 0.0
    for _ in range(steps):
        drawn = [draw_image() for _ in range(n_images)]
        images = [torch.from_numpy(img) for img, _ in drawn]
        labels = torch.tensor([label for _, label in drawn])
        preds = model(images)
        loss = nn.functional.cross_entropy(preds, labels)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        total += loss.item()
    return total


@_workload(default_steps=3)
def superglue_match_train(*, steps: int, seed: int) -> float:
    """SuperGlue feature matching trained on synthetic homographies (Sarlin et al. 2020, as
    HeatherJiaZG's SuperGlue-pytorch: models/superglue.py of magicleap's SuperGluePretrainedNetwork
    with its forward taken to float64 and the training loss added, train.py, load_data.py's
    SparseDataset; descriptor_dim 128 for SIFT descriptors, keypoint encoder 32-64-128, 9 self /
    cross layer pairs of 4 heads, 20 Sinkhorn iterations, match threshold 0.2, max_keypoints 1024,
    batch 1, Adam 1e-4, the model made float64 by superglue.double()): each step a drawn 640 x 480
    image's SIFT-like keypoints (their count drawn, log-normal around 190; positions, responses and
    128-d descriptors drawn), a perspective warp of the corners by up to 224 pixels drawn as the
    reference draws it, the keypoints of the warped image (those of the first still inside it and
    re-detected, with pixel noise and perturbed descriptors, and some new ones), both capped at the
    strongest 1,024; the reference's ground truth (mutual nearest neighbours within 3 pixels of the
    projected keypoints as matches, the rest matched to the dustbin) as all_matches; the
    DataLoader's collation of the item's lists (one small tensor per score, descriptor row and
    coordinate array, stacked), then SuperGlue: the keypoint encoder, 18 attentional propagation
    layers (4-head attention maps of n0 x n0, n0 x n1 and so on), the final projection, the score
    matrix with dustbins, log-space Sinkhorn with autograd through all 20 iterations, the mutual
    matches, and the loss as the reference writes it: a Python loop over all_matches indexing
    scores[0][x][y] one entry at a time (-log(exp(.)), each entry's backward a full-size gradient),
    stacked and averaged; zero_grad, backward, Adam step. Shapes follow the data: the two keypoint
    counts and the number of loss entries (first run 207 / 129 / 262, 121 / 148 / 181 and
    122 / 150 / 220; second run 110-317 keypoints and 184-393 entries); 3 steps (177.84 MiB,
    46,198 events). Keypoint counts around 430 gave 70,980 events and 678.34 MiB in 3 steps,
    around 230 49,614 events."""
    torch.manual_seed(0)
    descriptor_dim, keypoint_encoder, gnn_layers = 128, [32, 64, 128], ["self", "cross"] * 9
    sinkhorn_iterations, match_threshold, nfeatures, lr = 20, 0.2, 1024, 1e-4
    img_h, img_w = 480, 640
    rng = np.random.default_rng(175 + seed)

    def MLP(channels: list[int], do_bn: bool = True) -> nn.Sequential:
        n = len(channels)
        layers: list[nn.Module] = []
        for i in range(1, n):
            layers.append(nn.Conv1d(channels[i - 1], channels[i], kernel_size=1, bias=True))
            if i < (n - 1):
                if do_bn:
                    layers.append(nn.BatchNorm1d(channels[i]))
                layers.append(nn.ReLU())
        return nn.Sequential(*layers)

    def normalize_keypoints(kpts: torch.Tensor, image_shape: torch.Size) -> torch.Tensor:
        _, _, height, width = image_shape
        one = kpts.new_tensor(1)
        size = torch.stack([one * width, one * height])[None]
        center = size / 2
        scaling = size.max(1, keepdim=True).values * 0.7
        return (kpts - center[:, None, :]) / scaling[:, None, :]

    class KeypointEncoder(nn.Module):
        def __init__(self, feature_dim: int, layers: list[int]) -> None:
            super().__init__()
            self.encoder = MLP([3] + layers + [feature_dim])
            nn.init.constant_(self.encoder[-1].bias, 0.0)

        def forward(self, kpts: torch.Tensor, scores: torch.Tensor) -> torch.Tensor:
            inputs = [kpts.transpose(1, 2), scores.unsqueeze(1)]
            return self.encoder(torch.cat(inputs, dim=1))

    def attention(query: torch.Tensor, key: torch.Tensor, value: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        dim = query.shape[1]
        scores = torch.einsum("bdhn,bdhm->bhnm", query, key) / dim ** .5
        prob = torch.nn.functional.softmax(scores, dim=-1)
        return torch.einsum("bhnm,bdhm->bdhn", prob, value), prob

    class MultiHeadedAttention(nn.Module):
        def __init__(self, num_heads: int, d_model: int) -> None:
            super().__init__()
            self.dim = d_model // num_heads
            self.num_heads = num_heads
            self.merge = nn.Conv1d(d_model, d_model, kernel_size=1)
            self.proj = nn.ModuleList([copy.deepcopy(self.merge) for _ in range(3)])

        def forward(self, query: torch.Tensor, key: torch.Tensor, value: torch.Tensor) -> torch.Tensor:
            batch_dim = query.size(0)
            query, key, value = [proj(x).view(batch_dim, self.dim, self.num_heads, -1)
                                 for proj, x in zip(self.proj, (query, key, value))]
            x, _ = attention(query, key, value)
            return self.merge(x.contiguous().view(batch_dim, self.dim * self.num_heads, -1))

    class AttentionalPropagation(nn.Module):
        def __init__(self, feature_dim: int, num_heads: int) -> None:
            super().__init__()
            self.attn = MultiHeadedAttention(num_heads, feature_dim)
            self.mlp = MLP([feature_dim * 2, feature_dim * 2, feature_dim])
            nn.init.constant_(self.mlp[-1].bias, 0.0)

        def forward(self, x: torch.Tensor, source: torch.Tensor) -> torch.Tensor:
            message = self.attn(x, source, source)
            return self.mlp(torch.cat([x, message], dim=1))

    class AttentionalGNN(nn.Module):
        def __init__(self, feature_dim: int, layer_names: list[str]) -> None:
            super().__init__()
            self.layers = nn.ModuleList([AttentionalPropagation(feature_dim, 4) for _ in range(len(layer_names))])
            self.names = layer_names

        def forward(self, desc0: torch.Tensor, desc1: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
            for layer, name in zip(self.layers, self.names):
                if name == "cross":
                    src0, src1 = desc1, desc0
                else:
                    src0, src1 = desc0, desc1
                delta0, delta1 = layer(desc0, src0), layer(desc1, src1)
                desc0, desc1 = (desc0 + delta0), (desc1 + delta1)
            return desc0, desc1

    def log_sinkhorn_iterations(Z: torch.Tensor, log_mu: torch.Tensor, log_nu: torch.Tensor, iters: int) -> torch.Tensor:
        u, v = torch.zeros_like(log_mu), torch.zeros_like(log_nu)
        for _ in range(iters):
            u = log_mu - torch.logsumexp(Z + v.unsqueeze(1), dim=2)
            v = log_nu - torch.logsumexp(Z + u.unsqueeze(2), dim=1)
        return Z + u.unsqueeze(2) + v.unsqueeze(1)

    def log_optimal_transport(scores: torch.Tensor, alpha: torch.Tensor, iters: int) -> torch.Tensor:
        b, m, n = scores.shape
        one = scores.new_tensor(1)
        ms, ns = (m * one).to(scores), (n * one).to(scores)
        bins0 = alpha.expand(b, m, 1)
        bins1 = alpha.expand(b, 1, n)
        alpha = alpha.expand(b, 1, 1)
        couplings = torch.cat([torch.cat([scores, bins0], -1), torch.cat([bins1, alpha], -1)], 1)
        norm = - (ms + ns).log()
        log_mu = torch.cat([norm.expand(m), ns.log()[None] + norm])
        log_nu = torch.cat([norm.expand(n), ms.log()[None] + norm])
        log_mu, log_nu = log_mu[None].expand(b, -1), log_nu[None].expand(b, -1)
        Z = log_sinkhorn_iterations(couplings, log_mu, log_nu, iters)
        return Z - norm

    def arange_like(x: torch.Tensor, dim: int) -> torch.Tensor:
        return x.new_ones(x.shape[dim]).cumsum(0) - 1

    class SuperGlue(nn.Module):  # models/superglue.py of the training fork
        def __init__(self) -> None:
            super().__init__()
            self.kenc = KeypointEncoder(descriptor_dim, keypoint_encoder)
            self.gnn = AttentionalGNN(descriptor_dim, gnn_layers)
            self.final_proj = nn.Conv1d(descriptor_dim, descriptor_dim, kernel_size=1, bias=True)
            self.register_parameter("bin_score", nn.Parameter(torch.tensor(1.)))

        def forward(self, data: dict[str, torch.Tensor]) -> dict[str, object]:
            desc0, desc1 = data["descriptors0"].double(), data["descriptors1"].double()
            kpts0, kpts1 = data["keypoints0"].double(), data["keypoints1"].double()
            desc0 = desc0.transpose(0, 1)
            desc1 = desc1.transpose(0, 1)
            kpts0 = torch.reshape(kpts0, (1, -1, 2))
            kpts1 = torch.reshape(kpts1, (1, -1, 2))
            all_matches = data["all_matches"].permute(1, 2, 0)
            kpts0 = normalize_keypoints(kpts0, data["image0"].shape)
            kpts1 = normalize_keypoints(kpts1, data["image1"].shape)
            desc0 = desc0 + self.kenc(kpts0, torch.transpose(data["scores0"], 0, 1))
            desc1 = desc1 + self.kenc(kpts1, torch.transpose(data["scores1"], 0, 1))
            desc0, desc1 = self.gnn(desc0, desc1)
            mdesc0, mdesc1 = self.final_proj(desc0), self.final_proj(desc1)
            scores = torch.einsum("bdn,bdm->bnm", mdesc0, mdesc1)
            scores = scores / descriptor_dim ** .5
            scores = log_optimal_transport(scores, cast(torch.Tensor, self.bin_score), iters=sinkhorn_iterations)
            max0, max1 = scores[:, :-1, :-1].max(2), scores[:, :-1, :-1].max(1)
            indices0, indices1 = max0.indices, max1.indices
            mutual0 = arange_like(indices0, 1)[None] == indices1.gather(1, indices0)
            mutual1 = arange_like(indices1, 1)[None] == indices0.gather(1, indices1)
            zero = scores.new_tensor(0)
            mscores0 = torch.where(mutual0, max0.values.exp(), zero)
            mscores1 = torch.where(mutual1, mscores0.gather(1, indices1), zero)
            valid0 = mutual0 & (mscores0 > match_threshold)
            valid1 = mutual1 & valid0.gather(1, indices1)
            indices0 = torch.where(valid0, indices0, indices0.new_tensor(-1))
            indices1 = torch.where(valid1, indices1, indices1.new_tensor(-1))
            loss = []
            for i in range(len(all_matches[0])):
                x = all_matches[0][i][0]
                y = all_matches[0][i][1]
                loss.append(-torch.log(scores[0][x][y].exp()))
            loss_mean = torch.mean(torch.stack(loss))
            loss_mean = torch.reshape(loss_mean, (1, -1))
            return {"matches0": indices0[0], "matches1": indices1[0], "matching_scores0": mscores0[0],
                    "matching_scores1": mscores1[0], "loss": loss_mean[0], "skip_train": False}

    def get_perspective_transform(src: np.ndarray, dst: np.ndarray) -> np.ndarray:  # cv2.getPerspectiveTransform
        a, b = np.zeros((8, 8)), np.zeros(8)
        for i, ((x, y), (u, v)) in enumerate(zip(src, dst)):
            a[2 * i] = [x, y, 1, 0, 0, 0, -u * x, -u * y]
            a[2 * i + 1] = [0, 0, 0, x, y, 1, -v * x, -v * y]
            b[2 * i], b[2 * i + 1] = u, v
        return np.append(np.linalg.solve(a, b), 1).reshape(3, 3)

    def perspective(pts: np.ndarray, m: np.ndarray) -> np.ndarray:
        q = np.concatenate([pts, np.ones((len(pts), 1))], 1) @ m.T
        return q[:, :2] / q[:, 2:]

    def sift_descriptors(n: int) -> np.ndarray:
        d = rng.gamma(0.6, 1.0, (n, 128))
        d = np.minimum(d / np.linalg.norm(d, axis=1, keepdims=True), 0.2)
        return np.round(512 * d / np.linalg.norm(d, axis=1, keepdims=True)).astype(np.float32)

    def sparse_dataset_item() -> dict[str, object]:  # load_data.py SparseDataset.__getitem__
        image = rng.random((img_h, img_w))
        width, height = image.shape[:2]
        corners = np.array([[0, 0], [0, height], [width, 0], [width, height]], dtype=np.float32)
        warp = rng.integers(-224, 224, size=(4, 2)).astype(np.float32)
        M = get_perspective_transform(corners, corners + warp)
        n_found = int(rng.lognormal(math.log(190), 0.3))  # SIFT's detections in the image
        kp1_np = np.stack([rng.uniform(0, img_w, n_found), rng.uniform(0, img_h, n_found)], 1)
        response1 = rng.exponential(0.02, n_found)
        descs1 = sift_descriptors(n_found)
        proj = perspective(kp1_np, M)
        seen = (proj[:, 0] >= 0) & (proj[:, 0] < img_w) & (proj[:, 1] >= 0) & (proj[:, 1] < img_h) & (rng.random(n_found) < 0.75)
        n_new = int(rng.lognormal(math.log(60), 0.4))
        kp2_np = np.concatenate([proj[seen] + rng.normal(0, 1.2, (int(seen.sum()), 2)),
                                 np.stack([rng.uniform(0, img_w, n_new), rng.uniform(0, img_h, n_new)], 1)])
        descs2 = np.concatenate([np.clip(descs1[seen] + rng.normal(0, 12, (int(seen.sum()), 128)), 0, 255), sift_descriptors(n_new)]).astype(np.float32)
        response2 = np.concatenate([response1[seen] * rng.uniform(0.7, 1.3, int(seen.sum())), rng.exponential(0.02, n_new)])
        order1, order2 = np.argsort(-response1), np.argsort(-response2)  # SIFT keeps the strongest nfeatures
        kp1_np, descs1, scores1_np = kp1_np[order1][:nfeatures], descs1[order1][:nfeatures], response1[order1][:nfeatures]
        kp2_np, descs2, scores2_np = kp2_np[order2][:nfeatures], descs2[order2][:nfeatures], response2[order2][:nfeatures]
        kp1_projected = perspective(kp1_np, M)
        dists = np.sqrt(((kp1_projected[:, None, :] - kp2_np[None, :, :]) ** 2).sum(-1))  # cdist
        min1 = np.argmin(dists, axis=0)
        min2 = np.argmin(dists, axis=1)
        min1v = np.min(dists, axis=1)
        min1f = min2[min1v < 3]
        xx = np.where(min2[min1] == np.arange(min1.shape[0]))[0]
        matches = np.intersect1d(min1f, xx)
        missing1 = np.setdiff1d(np.arange(kp1_np.shape[0]), min1[matches])
        missing2 = np.setdiff1d(np.arange(kp2_np.shape[0]), matches)
        MN = np.concatenate([min1[matches][np.newaxis, :], matches[np.newaxis, :]])
        MN2 = np.concatenate([missing1[np.newaxis, :], (len(kp2_np)) * np.ones((1, len(missing1)), dtype=np.int64)])
        MN3 = np.concatenate([(len(kp1_np)) * np.ones((1, len(missing2)), dtype=np.int64), missing2[np.newaxis, :]])
        all_matches = np.concatenate([MN, MN2, MN3], axis=1)
        kp1_np, kp2_np = kp1_np.reshape((1, -1, 2)), kp2_np.reshape((1, -1, 2))
        descs1, descs2 = np.transpose(descs1 / 256.), np.transpose(descs2 / 256.)
        warped = rng.random((img_h, img_w))
        return {"keypoints0": list(kp1_np), "keypoints1": list(kp2_np), "descriptors0": list(descs1),
                "descriptors1": list(descs2), "scores0": list(scores1_np), "scores1": list(scores2_np),
                "image0": torch.from_numpy(image / 255.).double()[None], "image1": torch.from_numpy(warped / 255.).double()[None],
                "all_matches": list(all_matches)}

    def default_collate(item: dict[str, object]) -> dict[str, object]:  # DataLoader(batch_size=1)
        out: dict[str, object] = {}
        for k, v in item.items():
            if isinstance(v, torch.Tensor):
                out[k] = torch.stack([v], 0)
            else:
                out[k] = [torch.as_tensor([e]) if np.ndim(e) == 0 else torch.stack([torch.as_tensor(e)], 0)
                          for e in cast(list, v)]
        return out

    superglue = SuperGlue()
    optimizer = torch.optim.Adam(superglue.parameters(), lr=lr)
    mean_loss = []
    superglue.double().train()
    total = 0.0
    for _ in range(steps):  # train.py
        pred = default_collate(sparse_dataset_item())
        for k in pred:
            if k != "image0" and k != "image1":
                if not isinstance(pred[k], torch.Tensor):
                    pred[k] = torch.stack(cast(list, pred[k]))
        data = superglue(pred)
        for k, v in pred.items():
            pred[k] = cast(torch.Tensor, v)[0]
        pred = {**pred, **data}
        Loss = cast(torch.Tensor, pred["loss"])
        total += Loss.item()
        mean_loss.append(Loss)
        superglue.zero_grad()
        Loss.backward()
        optimizer.step()
    return total


WORKLOADS: dict[str, Workload] = {
    "mlp-train": mlp_train,
    "cnn-train": cnn_train,
    "transformer-train": transformer_train,
}
#: a check on traces memtune was not tuned on (benchmarks/heldout; see its README)
HELDOUT: dict[str, Workload] = {
    "gru-lm-train": gru_lm_train,
    "vgg-train": vgg_train,
    "vit-train": vit_train,
    # a second set, captured after the first set's results were reported: other model families,
    # steps that change shape, and inference
    "resnet-train": resnet_train,
    "lstm-varlen-train": lstm_varlen_train,
    "unet-train": unet_train,
    "gpt-accum-train": gpt_accum_train,
    "encoder-serve": encoder_serve,
    # a third set, captured after the growth and trim_large rules of the online policy were
    # found (looking at vgg, unet and encoder-serve of the sets above) and measured once as it
    # came: other model families, two optimizers, data-dependent shapes, an inference loop
    "mobilenet-train": mobilenet_train,
    "gan-train": gan_train,
    "vae-train": vae_train,
    "bert-mlm-train": bert_mlm_train,
    "moe-train": moe_train,
    "diffusion-sample": diffusion_sample,
    # a fourth set, captured after the third set's results were reported and committed before
    # it was measured, to check any change made after looking at the third set: other model
    # families (encoder-decoder, recommender, dilated convolutions, a graph network),
    # recomputation in backward, data-dependent graph sizes, a growing cache
    "seq2seq-train": seq2seq_train,
    "dlrm-train": dlrm_train,
    "wavenet-train": wavenet_train,
    "gnn-train": gnn_train,
    "checkpoint-train": checkpoint_train,
    "kvcache-generate": kvcache_generate,
    # a fifth set, captured after the fourth set's results were reported and committed before
    # it was measured, to check the changes made after looking at the fourth set: frozen
    # weights with trained low-rank adapters under bfloat16 autocast, a contrastive loss over
    # two augmented views, shifted-window attention with patch merging, a feature pyramid
    # with per-level detection heads, CTC speech recognition with data-dependent lengths
    "lora-finetune": lora_finetune,
    "simclr-train": simclr_train,
    "swin-train": swin_train,
    "fpn-detect-train": fpn_detect_train,
    "ctc-speech-train": ctc_speech_train,
    # a sixth set, captured after the fifth set's results were reported and committed before
    # it was measured, to check the changes made after looking at the fifth set: 7x7 depthwise
    # convolutions with channels-last LayerNorm and inverted bottlenecks, a frozen teacher run
    # without autograd beside a trained student, segment memories that outlive their step and
    # are replaced each step, data-dependent point counts, a sequence length that grows as the
    # run goes on
    "convnext-train": convnext_train,
    "distill-train": distill_train,
    "txl-train": txl_train,
    "pointnet-train": pointnet_train,
    "curriculum-lm-train": curriculum_lm_train,
    # a seventh set, captured after the sixth set's results were reported and committed before
    # it was measured, to check the changes made after looking at the sixth set: a fixed number
    # of kept patches whose choice changes every step with a light decoder over all of them,
    # two MLPs over samples along rays with the second pass's samples drawn from the first's
    # weights, a four-dimensional joint tensor and a per-frame loss recursion over
    # data-dependent lengths, key/value caches reordered by index_select every token and
    # dropped after each request, flat bucket-sized gradient, master-weight and optimizer
    # buffers filled by hooks during backward
    "mae-pretrain": mae_pretrain,
    "nerf-train": nerf_train,
    "transducer-train": transducer_train,
    "beam-decode": beam_decode,
    "flat-adam-train": flat_adam_train,
    # an eighth set, captured after the seventh set's results were reported and committed before
    # it was measured, to check the changes made after looking at the seventh set: two towers
    # trained together on an in-batch contrastive loss, convolution and attention modules
    # interleaved in each block, a state-space scan written as a Python loop over time steps,
    # pipeline micro-batches whose activations all stay alive until their backwards run in
    # reverse, reinforcement-learning rollouts of a drawn length followed by minibatch epochs,
    # draft and target key/value caches truncated to each round's accepted prefix
    "clip-train": clip_train,
    "conformer-train": conformer_train,
    "ssm-train": ssm_train,
    "pipeline-microbatch-train": pipeline_microbatch_train,
    "ppo-train": ppo_train,
    "speculative-decode": speculative_decode,
    # the ninth set, captured after the eighth set's results were reported and committed before
    # it was measured, to check the changes made after looking at the eighth set: factored
    # spatial and temporal 3D convolutions over video clips, a vector quantizer's full
    # latents-by-codes distance matrix with a straight-through estimator, a small latent array
    # cross-attending twice to a large input array, an ODE integrated by a fixed-step RK4 solver
    # in Python with backpropagation through every step, masked convolutions with a 256-way
    # softmax per pixel, a large dense embedding table with dense Adam state and negative sampling
    "video-r2plus1d-train": video_r2plus1d_train,
    "vqvae-train": vqvae_train,
    "perceiver-train": perceiver_train,
    "neural-ode-train": neural_ode_train,
    "pixelcnn-train": pixelcnn_train,
    "transe-train": transe_train,
    # the tenth set, captured after the ninth set was measured and committed (in tenth/) before
    # it was measured, to check the next change: a critic's gradient penalty taken with
    # create_graph=True and backpropagated through (double backward), second-order MAML with every
    # task's inner-loop graph alive until the outer backward, a normalizing flow of affine
    # couplings accumulating log-determinants, a momentum key encoder run without autograd and a
    # large queue of keys overwritten in place, batches of length buckets under a token budget
    # (shapes change every step), dense blocks whose concatenated inputs grow layer by layer
    "wgan-gp-train": wgan_gp_train,
    "maml-train": maml_train,
    "realnvp-train": realnvp_train,
    "moco-train": moco_train,
    "textcnn-bucket-train": textcnn_bucket_train,
    "densenet-train": densenet_train,
    # the eleventh set, captured after the tenth set was measured and committed (in eleventh/)
    # before it is measured, to check the next change: a fixed-point solve run without autograd
    # (Anderson history buffers overwritten in place) followed by one attached step, dynamic
    # routing iterations over a large prediction tensor, a CRF forward algorithm and Viterbi
    # decode as Python loops over time steps, token- and channel-mixing MLPs with stochastic
    # depth, mixup and gradient clipping, a hypernetwork generating a target network's weights
    # every step for functional calls, online triplet mining whose number of triplets follows
    # the data (shapes change every step)
    "deq-train": deq_train,
    "capsnet-train": capsnet_train,
    "bilstm-crf-train": bilstm_crf_train,
    "mlp-mixer-train": mlp_mixer_train,
    "hypernet-train": hypernet_train,
    "triplet-mining-train": triplet_mining_train,
    # the twelfth set, captured after the eleventh set was measured and committed (in twelfth/)
    # before it is measured, to check the next change: an input image optimised by L-BFGS whose
    # closure runs several forward and backward passes per step beside a rolling history of flat
    # direction pairs, quantization-aware training with a fake-quantize copy of every activation
    # and weight and BatchNorm folded into fused convolutions, sparse embedding gradients with
    # SparseAdam over two large tables, diffusion training with per-sample timesteps and an EMA
    # copy of the weights updated by foreach ops, sliding-window attention by chunking and
    # unfold over a long sequence with global tokens, a detector whose number of boxes per image
    # follows the data (IoU matrices and loss tensors change shape every step)
    "style-transfer-lbfgs": style_transfer_lbfgs,
    "qat-train": qat_train,
    "word2vec-sparse-train": word2vec_sparse_train,
    "ddpm-train": ddpm_train,
    "longformer-train": longformer_train,
    "detect-varbox-train": detect_varbox_train,
    # the thirteenth set, captured after the twelfth set was measured and committed (in
    # thirteenth/) before it is measured, to check the next change: residual blocks skipped
    # whole at random every step (stochastic depth: fixed shapes, a different sequence of
    # allocations every step), federated rounds whose four deep-copied client models and
    # optimizers stay alive until their state_dicts are averaged, magnitude pruning raised every
    # few steps through weight_orig / weight_mask reparametrisation, a weight-tied block run a
    # number of times the sampled halting decides (PonderNet), validation passes at a larger
    # batch under no_grad interleaved with training steps, x4 super-resolution by dense blocks
    # and PixelShuffle with a frozen feature extractor's perceptual loss
    "stochastic-depth-train": stochastic_depth_train,
    "fedavg-train": fedavg_train,
    "prune-finetune": prune_finetune,
    "act-ponder-train": act_ponder_train,
    "train-eval-interleave": train_eval_interleave,
    "superres-train": superres_train,
    # the fourteenth set, captured after the thirteenth set was measured and committed (in
    # fourteenth/) before it is measured, to check the next change: a LLaMA-style decoder with
    # rotary embeddings, RMSNorm and SwiGLU under gradient clipping and a cosine schedule, a
    # detector trained on an input resolution drawn anew every few steps (multi-scale training),
    # a differentiable architecture search whose mixed operations keep every candidate's
    # output and whose architecture and weight steps alternate, DQN with a preallocated replay
    # ring filled as the run goes and a target network synced every few steps, a diffusion
    # transformer with adaLN-Zero conditioning, a ViT whose kept-token counts follow a learned
    # score every step
    "llama-train": llama_train,
    "multiscale-detect-train": multiscale_detect_train,
    "darts-search": darts_search,
    "dqn-replay-train": dqn_replay_train,
    "dit-train": dit_train,
    "dynamic-token-vit": dynamic_token_vit,
    # the fifteenth set, captured after the fourteenth and committed (in fifteenth/) before it
    # is measured, to check a later change: graph attention over dense padded batches sized by
    # each step's largest graph, an EfficientNet-style CNN under bfloat16 autocast with a
    # gradient scaler's unscale and foreach clipping and AdamW, causal attention over a long
    # sequence computed block by block with an online softmax inside checkpointed query chunks,
    # an ensemble of CNNs stacked by torch.func and trained as one vmapped model, a deep-kernel
    # Gaussian process whose Cholesky factor and solves change size with the minibatch drawn
    # every step, an adaptive softmax whose tail clusters are computed on the positions the data
    # routes to them
    "gat-padded-train": gat_padded_train,
    "amp-effnet-train": amp_effnet_train,
    "chunked-attn-train": chunked_attn_train,
    "vmap-ensemble-train": vmap_ensemble_train,
    "dkl-gp-train": dkl_gp_train,
    "adaptive-softmax-lm": adaptive_softmax_lm,
    # the sixteenth set, captured after the fifteenth and committed (in sixteenth/) before it
    # is measured, to check a later change: a Fourier neural operator whose complex spectra and
    # per-mode matmul temporaries sit beside real activations, reversible stages that keep no
    # activations and rebuild each block's input in a custom backward, a retrieval index of the
    # whole corpus rebuilt every few steps beside the old one with hard negatives taken by topk
    # over a large score matrix, neighbour-sampled subgraphs of one large graph aggregated by
    # sparse matrix products (sizes follow the sampling), a Shampoo optimizer's Kronecker factors
    # and eigendecompositions every few steps, serving with continuous batching over a paged
    # key/value pool whose running set and gathered caches change every iteration
    "fno-train": fno_train,
    "revnet-train": revnet_train,
    "ance-retrieval-train": ance_retrieval_train,
    "graphsage-sampled-train": graphsage_sampled_train,
    "shampoo-train": shampoo_train,
    "paged-kv-serve": paged_kv_serve,
    # the seventeenth set, captured after the sixteenth and committed (in seventeenth/) before
    # it is measured, to check a later change: self-distillation with multi-crop views at two
    # resolutions through one student beside an EMA teacher run without autograd, a slimmable
    # network run at four widths on the same batch each step (the full one, the smallest and two
    # drawn) with gradients accumulated, sharpness-aware minimisation's two forward/backward
    # passes a step around a kept weight-sized perturbation, FSDP-style flat parameters gathered
    # whole and freed layer by layer in forward and again in backward, dynamic graph convolutions
    # recomputing a k-nearest-neighbour graph and gathered edge tensors in every layer, a spiking
    # network unrolled over 32 time steps whose small per-step tensors all wait for the backward
    "dino-multicrop-train": dino_multicrop_train,
    "slimmable-train": slimmable_train,
    "sam-train": sam_train,
    "fsdp-gather-train": fsdp_gather_train,
    "dgcnn-knn-train": dgcnn_knn_train,
    "snn-bptt-train": snn_bptt_train,
    # the eighteenth set, captured after the seventeenth and committed (in eighteenth/) before
    # it is measured, to check a later change: a served classifier with an exit head after every
    # layer whose batch shrinks as sequences leave (and whose padding is trimmed to the longest
    # left), a 3D U-Net's five-dimensional activations at four resolutions with deep supervision,
    # a vocoder's transposed-convolution upsampling to a waveform of a length drawn every step
    # under multi-resolution STFT losses, Bayes by Backprop's Monte Carlo weight samples (several
    # weight-sized temporaries per sample) kept for one backward, Sinkhorn iterations unrolled
    # under autograd over cost matrices sized by a drawn point count, mixture-of-depths layers
    # that gather the routed tokens and scatter them back into a copy of the residual stream
    "early-exit-serve": early_exit_serve,
    "unet3d-seg-train": unet3d_seg_train,
    "hifigan-vocoder-train": hifigan_vocoder_train,
    "bayes-mc-train": bayes_mc_train,
    "sinkhorn-ot-train": sinkhorn_ot_train,
    "mixture-of-depths-train": mixture_of_depths_train,
    # the nineteenth set, captured after the eighteenth was measured and committed (in nineteenth/)
    # before it is measured, to check a later change: a tabular transformer whose rows are 33
    # feature tokens (periodic numerical embeddings by a per-feature einsum, categorical rows of
    # one shared table) under batch x heads x tokens x tokens attention maps, a two-stage detector
    # whose proposals are suppressed by a matrix NMS and sampled into RoIs aligned by grid_sample,
    # with a mask head on however many are foreground, DP-SGD's per-sample gradients by vmap over
    # physical batches (batch-times-weights tensors made and dropped four times a step), a speech
    # encoder-decoder's beam search with large per-request cross-attention caches beside
    # self-attention caches grown and reordered every token, LSH attention's sorts, gathers and
    # chunked scores over a long sequence, a Tree-LSTM computed level by level over drawn parse
    # trees with node states grown by torch.cat after every level
    "ft-transformer-train": ft_transformer_train,
    "maskrcnn-roi-train": maskrcnn_roi_train,
    "dpsgd-train": dpsgd_train,
    "whisper-beam-serve": whisper_beam_serve,
    "reformer-lsh-train": reformer_lsh_train,
    "treelstm-train": treelstm_train,
    # the twentieth set, captured after the nineteenth was measured and committed (in twentieth/)
    # before it is measured, to check a later change: an autoregressive spectrogram decoder run
    # frame by frame with location-sensitive attention over packed texts of drawn lengths, an
    # encoder-decoder under Adafactor's factored row and column statistics with relative position
    # biases shared by every layer, a raw-waveform feature encoder's long convolution activations
    # beside a Gumbel quantizer and a gathered distractor tensor, attention over the edges of a
    # batch of drawn graphs with per-graph Laplacian eigendecompositions, RAFT's all-pairs
    # correlation pyramid looked up by grid_sample in every refinement iteration, dense
    # left-padded serving batches concatenated into new zeroed caches and filtered as requests
    # come and go
    "tacotron2-train": tacotron2_train,
    "t5-adafactor-train": t5_adafactor_train,
    "wav2vec2-pretrain": wav2vec2_pretrain,
    "graph-transformer-train": graph_transformer_train,
    "raft-flow-train": raft_flow_train,
    "concat-batch-serve": concat_batch_serve,
    # the twenty-first set, captured after the twentieth was measured and committed (in
    # twentyfirst/) before it is measured, to check a later change: a world model's recurrent
    # state-space loop over frames of a conv encoder and decoder followed by an imagined rollout
    # with three optimizers a step, set prediction whose Hungarian matching per decoder layer sizes
    # the box losses by the drawn boxes, a linear-attention recurrence as a chunked scan whose
    # per-chunk tensors all wait for the backward, translation batches cut under a token budget
    # (batch size against length), a sweep building and dropping models of drawn widths in one
    # process, an Evoformer's pair representation with outer-product and triangle updates after a
    # recycling pass without autograd
    "dreamer-rssm-train": dreamer_rssm_train,
    "detr-train": detr_train,
    "rwkv-lm-train": rwkv_lm_train,
    "token-budget-mt-train": token_budget_mt_train,
    "width-sweep-train": width_sweep_train,
    "evoformer-pair-train": evoformer_pair_train,
    # the twenty-second set, captured after the twenty-first was measured and committed (in
    # twentysecond/) before it is measured, to check a later change: RL fine-tuning of an LM whose
    # sampled rollouts grow key/value caches to a drawn length before policy, old-policy and
    # reference passes over the padded batch, packed documents attended segment by segment
    # (cu_seqlens) so each layer's attention follows the drawn document boundaries, Muon's
    # Newton-Schulz iterations on every hidden matrix's momentum in bfloat16, STFT-domain speech
    # enhancement with istft and a multi-resolution STFT loss, a Siamese tracker's cross-correlation
    # as a grouped convolution with per-sample kernels, a radius graph of drawn molecules under
    # continuous-filter convolutions with forces by a double backward
    "grpo-rollout-train": grpo_rollout_train,
    "varlen-pack-train": varlen_pack_train,
    "muon-train": muon_train,
    "stft-enhance-train": stft_enhance_train,
    "siamfc-track-train": siamfc_track_train,
    "schnet-mol-train": schnet_mol_train,
    # the twenty-third set, captured after the twenty-second was measured and committed (in
    # twentythird/) before it was measured, and measured once with unchanged code: a non-autoregressive TTS model
    # whose length regulator repeats each phoneme's state by its drawn duration, so the decoder's
    # length follows the data, semi-supervised steps with weak and strong views of an unlabeled
    # batch interleaved with the labeled one and a loss over only the confident pseudo-labels
    # (taken by a mask) beside an EMA copy, long convolutions by rfft/irfft at twice the sequence
    # length with filters made by an MLP every forward, an audio codec's residual vector quantizer
    # (8 distance matrices and EMA codebook updates) between a SEANet encoder and decoder with
    # alternating multi-scale STFT discriminator and generator updates, TabNet's sequential
    # sparsemax attention with ghost batch norm over virtual batches, batched serving of many LoRA
    # adapters gathered per request by index_select beside per-request caches grown by torch.cat
    "fastspeech2-train": fastspeech2_train,
    "fixmatch-train": fixmatch_train,
    "hyena-fft-train": hyena_fft_train,
    "encodec-rvq-train": encodec_rvq_train,
    "tabnet-train": tabnet_train,
    "multilora-serve": multilora_serve,
    # the twenty-fourth set, captured after the twenty-third was measured and committed (in
    # twentyfourth/) before it was measured, and measured once with unchanged code: a redundancy-reduction loss
    # over the 2048 x 2048 cross-correlation of two augmented views' embeddings under LARS's
    # per-parameter norms, a ConvLSTM stack unrolled over 19 frames with scheduled sampling whose
    # every gate waits for the backward, a click model's mixture of low-rank cross experts over
    # hashed ids of one shared table, set attention through learned inducing points over sets of a
    # drawn size, a flow TTS model whose monotonic alignment search loops over the drawn mel frames
    # under no_grad, a byte-level LM whose global blocks run only at the patch boundaries the text
    # draws (gathered and scattered back)
    "barlow-twins-train": barlow_twins_train,
    "convlstm-predict-train": convlstm_predict_train,
    "dcnv2-ctr-train": dcnv2_ctr_train,
    "set-transformer-train": set_transformer_train,
    "glow-tts-train": glow_tts_train,
    "spacebyte-lm-train": spacebyte_lm_train,
    # the twenty-fifth set, captured after the twenty-fourth was committed (in twentyfifth/) before
    # it was measured, and measured once with unchanged code: a time-domain speech separator's
    # dilated depthwise temporal blocks over 2,000 frames under a permutation-invariant SI-SNR loss, a mesh simulator's
    # 15 message-passing blocks over a fixed mesh with gathered edge inputs summed by index_add,
    # Gaussian splatting's dense pixel-by-Gaussian alpha compositing after a depth sort, LiDAR points
    # voxelised into a drawn number of pillars by unique and scattered into a BEV canvas before a
    # three-stage CNN and anchor matching against drawn boxes, a reader encoding a drawn number of
    # retrieved passages separately and decoding over their concatenation, relational graph
    # convolutions over a sampled subgraph of a drawn node count with per-edge gathered block weights
    "conv-tasnet-train": conv_tasnet_train,
    "meshgraphnet-train": meshgraphnet_train,
    "gaussian-splat-train": gaussian_splat_train,
    "pointpillars-train": pointpillars_train,
    "fid-rag-train": fid_rag_train,
    "rgcn-link-train": rgcn_link_train,
    # the twenty-sixth set, captured after the twenty-fifth was committed (in twentysixth/) before
    # it was measured, and measured once with unchanged code: efficient self-attention over 16,384 queries against
    # strided-reduced keys with depthwise convs in the feed-forward and an all-MLP decoder at a quarter
    # resolution, a 1D conditional U-Net with FiLM over short action sequences beside a GroupNorm
    # ResNet encoding stacked frames and an EMA copy updated parameter by parameter, an mLSTM's
    # stabilised parallel decay matrices beside an sLSTM recurrence looped over 256 time steps,
    # attention over user histories padded to each batch's drawn longest, farthest point sampling
    # loops and ball-query sorts over a drawn point count, a promptable mask decoder run on an image
    # embedding repeated to each image's drawn prompt count
    "segformer-seg-train": segformer_seg_train,
    "diffusion-policy-train": diffusion_policy_train,
    "xlstm-lm-train": xlstm_lm_train,
    "din-ctr-train": din_ctr_train,
    "pointnet2-seg-train": pointnet2_seg_train,
    "sam-prompt-train": sam_prompt_train,
    # the twenty-seventh set, captured after the twenty-sixth was measured and committed (in
    # twentyseventh/) before it was measured, and measured once with unchanged policy: divided space-time attention
    # reshaping the same tokens into (b h w) x t and (b t) x (h w) copies with a class token repeated
    # to every frame, a detector of centre points whose Gaussian heatmap targets are collated beside
    # 128 padded object slots under a focal loss over the whole heatmap, channel-independent patch
    # attention passing each layer's pre-softmax scores on to the next, GIN layers with a virtual
    # node over a disjoint batch of drawn molecules (gathers and index_add over drawn atom and bond
    # counts, a loss over the drawn labelled entries), a captioning decoder looped over the batch's
    # longest drawn caption with a batch that shrinks as captions end, session graphs padded to each
    # batch's drawn unique-item count with hidden states gathered by a Python list of indexings
    "timesformer-video-train": timesformer_video_train,
    "centernet-detect-train": centernet_detect_train,
    "patchtst-forecast-train": patchtst_forecast_train,
    "gin-virtual-mol-train": gin_virtual_mol_train,
    "show-attend-tell-train": show_attend_tell_train,
    "srgnn-session-train": srgnn_session_train,
    # the twenty-eighth set, captured after the twenty-seventh was captured (before it was measured)
    # and committed (in twentyeighth/) before it was measured, and measured once with unchanged
    # policy: an unpaired
    # translation GAN's six generator passes kept for one backward beside discriminators fed from
    # pools that keep every generated image, a forecaster whose variable selection runs a gated
    # residual network per input variable and whose attention loops over heads, a click model's
    # compressed interaction network of batch x maps x fields x embedding outer products beside
    # per-field tables squared whole for their L2 every step, graph U-Nets run one drawn protein
    # graph at a time with dense two-hop adjacencies pooled by topk, a Hawkes process transformer
    # over event sequences padded to the batch's drawn longest with a Monte Carlo intensity integral,
    # an equivariant network over fully connected edge lists of molecules padded to the batch's
    # largest drawn one
    "cyclegan-train": cyclegan_train,
    "tft-forecast-train": tft_forecast_train,
    "xdeepfm-ctr-train": xdeepfm_ctr_train,
    "graph-unet-train": graph_unet_train,
    "thp-event-train": thp_event_train,
    "egnn-mol-train": egnn_mol_train,
    # the twenty-ninth set, captured after the twenty-eighth was captured (before it was measured)
    # and committed (in twentyninth/) before it was measured, and measured once after room for a
    # later climb (7ebe783): a REINFORCE policy over TSP tours decoded city by city (a glimpse and
    # masked logits per step, boolean-indexed masks)
    # beside a greedy baseline rollout without autograd, a bottom-up pose network's MobileNet trunk
    # at stride 8 with heatmap and part-affinity stages under masked L2 losses, a diffusion
    # convolutional GRU whose 48 cell calls a step each stack sparse diffusion products by torch.cat,
    # a pointer-generator decoder looped over the batch's drawn longest abstract with a
    # 50,000-word softmax extended by the batch's drawn OOV count and scatter_add, a vision
    # transformer over images of drawn sizes packed into a drawn number of sequences, a feature
    # matcher over drawn keypoint counts with 20 Sinkhorn iterations under autograd and a loss
    # indexed one ground-truth match at a time
    "attention-tsp-train": attention_tsp_train,
    "lightweight-openpose-train": lightweight_openpose_train,
    "dcrnn-traffic-train": dcrnn_traffic_train,
    "pointer-gen-train": pointer_gen_train,
    "navit-train": navit_train,
    "superglue-match-train": superglue_match_train,
}


def _int_at_least(low: int) -> Callable[[str], int]:
    """An argparse ``type``: a whole number >= ``low`` (argparse names the option in its error)."""

    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            value = None
        if value is None or value < low:
            raise argparse.ArgumentTypeError(f"got {text!r}; expected a whole number >= {low}")
        return value

    return parse


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--out", type=Path, default=None,
                        help=f"directory (default {DEFAULT_OUT}, with --heldout {HELDOUT_OUT})")
    parser.add_argument("--heldout", action="store_true", help=f"capture the held-out set: {', '.join(HELDOUT)}")
    parser.add_argument("names", nargs="*", help=f"workloads to capture (default all of the set): "
                                                 f"{', '.join(WORKLOADS)}; with --heldout {', '.join(HELDOUT)}")
    parser.add_argument("--dry-run", action="store_true", help="record and summarize, write nothing")
    parser.add_argument("--steps-factor", type=_int_at_least(1), default=1, metavar="K",
                        help="run K times each workload's default number of steps (default 1)")
    parser.add_argument("--seed", type=_int_at_least(0), default=0, metavar="S",
                        help="add S to the seed of each workload's data generator, not to its model's "
                             "(default 0: the data of the committed traces)")
    args = parser.parse_args(argv)
    chosen = HELDOUT if args.heldout else WORKLOADS
    out = args.out or (HELDOUT_OUT if args.heldout else DEFAULT_OUT)
    unknown = [n for n in args.names if n not in chosen]
    if unknown:
        parser.error(f"unknown workload(s) {', '.join(unknown)}; choose from {', '.join(chosen)}")
    torch.set_num_threads(1)  # one thread: the same op sequence on any machine
    out.mkdir(parents=True, exist_ok=True)
    for name in args.names or list(chosen):
        fn = chosen[name]
        path = out / f"{name}.jsonl.gz"
        metadata: dict[str, object] = {"workload": name, "description": fn.__doc__}
        if args.steps_factor != 1:
            metadata["steps_factor"] = args.steps_factor
        if args.seed != 0:
            metadata["seed"] = args.seed
        steps = None if args.steps_factor == 1 else args.steps_factor * fn.default_steps
        with memtune.record(None if args.dry_run else path, metadata=metadata) as rec:
            loss = fn(steps=steps, seed=args.seed)
        dev = rec.trace.devices[0]
        allocs = sum(1 for e in dev.events if e.action is Action.ALLOC)
        print(f"{path.name}: {len(dev.events)} events ({allocs} allocations), peak requested "
              f"{memtune.units.format_bytes(dev.peak_requested_bytes())}, {'-' if args.dry_run else path.stat().st_size} B on disk, "
              f"loss sum {loss:.4f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
