"""memtune.devices"""
