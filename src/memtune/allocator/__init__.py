"""memtune.allocator"""
