import io

from harp_lib.progress import progress, progress_mode


def test_modes(monkeypatch):
    monkeypatch.setenv("HARP_PROGRESS", "off")
    assert progress_mode() == "off"
    assert list(progress(range(4))) == [0, 1, 2, 3]
    monkeypatch.setenv("HARP_PROGRESS", "auto")
    assert progress_mode() in ("text", "tty")  # plain pytest: not a notebook


def test_text_mode_writes_plain_lines():
    buf = io.StringIO()
    out = list(progress(range(50), desc="work", mode="text", file=buf, mininterval=0))
    assert out == list(range(50))
    text = buf.getvalue()
    assert "work" in text and "50/50" in text and "\x1b[" not in text
