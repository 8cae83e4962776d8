"""specializer/capture/again.py: a capture kept in its directory is taken again only while the
tool, the model file, the files beside it and the options are the ones it was made from."""

import shutil

import pytest

from specializer.capture import again
from specializer.tools import repo_root


@pytest.fixture
def model(tmp_path):
    d = tmp_path / "models"
    d.mkdir()
    shutil.copy(repo_root() / "examples" / "quadratic.py", d / "quadratic.py")
    return d / "quadratic.py"


def test_taken_again_until_something_that_determines_it_changes(model, tmp_path, monkeypatch):
    out = tmp_path / "out"
    first = again.capture_again(model, "quadratic", out)
    made = (out / "model.ll").read_bytes()
    assert (out / again.KEY).read_text() == again.key(model, "quadratic", 1)

    calls = []
    real = again.capture
    monkeypatch.setattr(again, "capture", lambda *a, **k: calls.append(a) or real(*a, **k))
    second = again.capture_again(model, "quadratic", out)
    assert calls == []  # nothing ran
    assert second.model_ll == first.model_ll and second.manifest == first.manifest and second.log == first.log

    again.capture_again(model, "quadratic", out, reuse=False)  # --no-cache
    assert len(calls) == 1
    (model.parent / "helper.py").write_text("SCALE = 2\n")  # a file the model could import
    again.capture_again(model, "quadratic", out)
    assert len(calls) == 2
    model.write_text(model.read_text() + "\n# edited\n")
    again.capture_again(model, "quadratic", out)
    assert len(calls) == 3
    assert (out / "model.ll").read_bytes() == made  # the same model: the same capture


def test_a_capture_that_fails_leaves_no_key(model, tmp_path, monkeypatch):
    out = tmp_path / "out"
    again.capture_again(model, "quadratic", out)
    model.write_text(model.read_text() + "\n# edited\n")

    def dies(*a, **k):
        raise RuntimeError("killed half-way")

    monkeypatch.setattr(again, "capture", dies)
    with pytest.raises(RuntimeError):
        again.capture_again(model, "quadratic", out)
    assert not (out / again.KEY).exists()  # the old files are never taken for the edited model
