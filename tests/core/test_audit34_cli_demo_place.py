"""`episodex demo` refuses `--path` and `--url` instead of ignoring them.

The demo makes its own store (a temporary folder, or `--keep DIR`). Given `--path X` or
`--url U`, it ran in a temporary folder all the same and said nothing: a user who asked for
the demo in X (or on their server) then found nothing there. Both are now refused (exit 2),
naming `--keep`, before anything runs.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from episodex.cli import main


@pytest.mark.parametrize("place", ["--path", "--url"])
@pytest.mark.parametrize("before", [True, False], ids=["before", "after"])
def test_demo_refuses_a_store_place_it_would_ignore(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, place: str, before: bool
) -> None:
    where = str(tmp_path / "store") if place == "--path" else "http://127.0.0.1:9"
    argv = [place, where, "demo"] if before else ["demo", place, where]
    with pytest.raises(SystemExit) as stopped:
        main(argv)
    assert stopped.value.code == 2
    captured = capsys.readouterr()
    assert f"demo does not take {place}" in captured.err and "--keep" in captured.err
    assert captured.out == ""
    assert list(tmp_path.iterdir()) == []
