"""memtune.cli"""
