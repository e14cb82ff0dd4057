"""Arrays and tensors whose memory comes from a memtune allocator on host memory.

- :mod:`memtune.interop.numpy`: ``memtune.empty / zeros / empty_like``, ``memtune.empty_cache``,
  ``memtune.memory_stats`` and the default host allocator (configured by ``MEMTUNE_HOST_*``).
- :mod:`memtune.interop.torch`: ``memtune.torch.empty / zeros / ...`` CPU tensors (imports torch;
  reached lazily as ``memtune.torch``, so ``import memtune`` never imports torch).
"""
