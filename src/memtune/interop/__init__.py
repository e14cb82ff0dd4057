"""memtune.interop"""
