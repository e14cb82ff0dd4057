"""memtune.allocator.presets"""
