def pytest_configure(config):
    # tests that share one slow run carry it: `nox` runs pytest-xdist with --dist loadgroup, which keeps a
    # group on one worker; registered here so a plain pytest without xdist knows the mark too
    config.addinivalue_line("markers", "xdist_group(name): tests sharing one slow run, kept on one xdist worker")
