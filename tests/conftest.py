from __future__ import annotations


def pytest_configure(config):
    config.addinivalue_line("markers", "xdist_group(name): tests sharing one slow run, kept on one xdist worker")
