"""memtune.trace.formats"""
