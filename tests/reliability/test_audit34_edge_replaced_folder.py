"""The embedded engine changes nothing in a store folder that replaced the one it opened.

Every write path checks that the folder is still the one it opened (its lock file) before it
changes anything; `drop_collection` and `ensure_collection` did not, so a store folder replaced
under an open engine (a backup restored in its place) lost a collection folder to a drop, or got
a new collection made in it without its lock.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from episodex import StoreClosedError, open_engine
from episodex.plan import CollectionSpec

_STAGING = "episodes_reindex_0123456789abcdef"


def _replace_folder(folder: Path) -> None:
    """Put another store in `folder`'s place, as a restore from a backup does."""
    shutil.move(folder, folder.with_name("moved-aside"))
    shutil.copytree(folder.with_name("moved-aside"), folder)


def test_drop_collection_in_a_replaced_folder_is_refused_and_deletes_nothing(
    tmp_path: Path,
) -> None:
    folder = tmp_path / "store"
    engine = open_engine(path=str(folder))
    try:
        engine.ensure_collection(CollectionSpec(name=_STAGING, dense={"v": 2}))
        _replace_folder(folder)
        with pytest.raises(StoreClosedError, match="deleted or replaced"):
            engine.drop_collection(_STAGING)  # pyright: ignore[reportAttributeAccessIssue]
        assert (folder / _STAGING / "episodex.json").is_file()
    finally:
        engine.close()


def test_a_collection_is_not_made_in_a_replaced_folder(tmp_path: Path) -> None:
    folder = tmp_path / "store"
    engine = open_engine(path=str(folder))
    try:
        engine.ensure_collection(CollectionSpec(name="first", dense={"v": 2}))
        _replace_folder(folder)
        with pytest.raises(StoreClosedError, match="deleted or replaced"):
            engine.ensure_collection(CollectionSpec(name="second", dense={"v": 2}))
        assert not (folder / "second").exists()
    finally:
        engine.close()
