"""memtune.trace"""
