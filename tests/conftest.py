import shutil
import tempfile

import jax
import pytest

from specializer.capture.capture import capture
from specializer.driver.examples import example_path

# XLA compiles of programs this test process compiled before (the same model quantized, calibrated
# or run again by another test, a second quantize() of it) are read back from a per-process
# persistent cache instead: host-side JAX work took a third of some tests' time. Per process (each
# xdist worker its own, removed at exit): nothing shared, nothing carried between runs. Capture
# workers never see it (a jax.config setting, not the environment): their compile must dump the IR.
_JAX_CACHE = tempfile.mkdtemp(prefix="specializer-tests-xla-")
jax.config.update("jax_compilation_cache_dir", _JAX_CACHE)
jax.config.update("jax_persistent_cache_min_compile_time_secs", 0.0)
jax.config.update("jax_persistent_cache_min_entry_size_bytes", 0)


def pytest_unconfigure(config):
    shutil.rmtree(_JAX_CACHE, ignore_errors=True)


def pytest_addoption(parser):
    parser.addoption("--slow", action="store_true",
                     help="also run the tests marked slow (whole int8 networks on QEMU, minutes each)")


def pytest_collection_modifyitems(config, items):
    if config.getoption("--slow"):
        return
    skip = pytest.mark.skip(reason="slow (a whole int8 network captured and run on QEMU): run with --slow")
    for item in items:
        if "slow" in item.keywords:
            item.add_marker(skip)


@pytest.fixture(scope="session")
def captured(tmp_path_factory):
    """Capture each example once per session: name -> Captured."""
    cache = {}

    def get(name):
        if name not in cache:
            cache[name] = capture(example_path(name), name, tmp_path_factory.mktemp(name))
        return cache[name]

    return get
