import pytest

from specializer.capture.capture import capture
from specializer.driver.examples import example_path


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
