"""Backends (array modules) and devices."""
