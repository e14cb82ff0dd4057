"""memtune.config"""
