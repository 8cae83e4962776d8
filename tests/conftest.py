import pytest

from specializer.capture import capture
from specializer.examples import example_path


@pytest.fixture(scope="session")
def captured(tmp_path_factory):
    """Capture each example once per session: name -> Captured."""
    cache = {}

    def get(name):
        if name not in cache:
            cache[name] = capture(example_path(name), name, tmp_path_factory.mktemp(name))
        return cache[name]

    return get
