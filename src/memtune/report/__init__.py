"""memtune.report"""
