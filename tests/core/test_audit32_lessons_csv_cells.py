"""A step-memory csv reads its number cells as plain numbers only, and any size of text back.

`import_memories` read the `rep`, `step_num` and `confidence` cells with Python's `int()` and
`float()`, which take far more than a number as written: `1_0` (digit grouping) was read as
rep 10, `0_5` as confidence 5, full-width or Arabic-Indic digits and padded cells as numbers.
A cell a spreadsheet or a hand edit mangled was imported as another number without a word.
And a text longer than the csv module's field limit (128 KiB), which `export_memories` wrote
without complaint, failed the import with the csv module's own error, not an `ImportFileError`.
"""

from __future__ import annotations

from typing import Any, Literal

import pytest
from episodex import ImportFileError, StepMemory, export_memories, import_memories


def _step(**changes: Any) -> StepMemory:
    data: dict[str, Any] = {
        "step_id": "rep1-step1",
        "user_id": "u1",
        "agent_id": "web",
        "session_id": "ticket-7",
        "run_id": "run-1",
        "rep": 3,
        "step_num": 4,
        "env_pre": {"url": "https://app.test/tickets", "elements": ["[12] button 'Save'"]},
        "internal_state": "Goal: set ticket 7 to High",
        "action": "click('12')",
        "outcome": "success",
        "confidence": 0.5,
    }
    return StepMemory.parse({**data, **changes})


def _with_cell(column: str, cell: str) -> str:
    """An export of one step whose `column` cell is replaced by `cell`."""
    header, row = export_memories([_step()], "csv").splitlines()
    names = header.split(",")
    cells = row.split(",")
    # The env_pre cell holds commas: a cell after it is counted from the row's end.
    index = names.index(column)
    if index > names.index("env_pre"):
        index = len(cells) - (len(names) - index)
    cells[index] = cell
    return header + "\r\n" + ",".join(cells) + "\r\n"


@pytest.mark.parametrize("column", ["rep", "step_num"])
@pytest.mark.parametrize("cell", ["1_0", "\uff11", "\u0661", " 2", "2 ", "+2", "2\u00a0"])
def test_a_count_cell_is_a_plain_number_or_refused(column: str, cell: str) -> None:
    text = _with_cell(column, cell)
    with pytest.raises(ImportFileError) as caught:
        import_memories(text, "csv")
    assert caught.value.errors[0][0] == 1
    assert column in str(caught.value)


@pytest.mark.parametrize("cell", ["0_5", "\uff11", "\u0660.5", " 0.5", "0.5 ", "+0.5", "1_0e-1"])
def test_a_confidence_cell_is_a_plain_number_or_refused(cell: str) -> None:
    text = _with_cell("confidence", cell)
    with pytest.raises(ImportFileError) as caught:
        import_memories(text, "csv")
    assert caught.value.errors[0][0] == 1
    assert "confidence" in str(caught.value)


@pytest.mark.parametrize("cell", ["nan", "NaN", "inf", "-Infinity"])
def test_a_confidence_that_is_no_number_is_refused(cell: str) -> None:
    with pytest.raises(ImportFileError, match="confidence"):
        import_memories(_with_cell("confidence", cell), "csv")


@pytest.mark.parametrize("confidence", [0.0, 1.0, 0.1, 1e-05, 0.30000000000000004, 1])
def test_every_exported_number_reads_back(confidence: float) -> None:
    step = _step(confidence=confidence, rep=12, step_num=130)
    assert import_memories(export_memories([step], "csv"), "csv") == [step]


def test_a_very_long_text_round_trips_through_csv() -> None:
    long = 'Goal, "quoted" and\nnew lines: ' + "ש😀x" * 120_000
    step = _step(internal_state=long, think=long, correction=long)
    text = export_memories([step], "csv")
    assert import_memories(text, "csv") == [step]


@pytest.mark.parametrize("fmt", ["json", "csv"])
@pytest.mark.parametrize("model", ["", "  "])
def test_a_blank_embedding_model_reads_back_the_same(
    fmt: Literal["json", "csv"], model: str
) -> None:
    # An empty csv cell is an absent value: "" came back as None, another step than the one
    # exported; a blank model id names no model and is absent in every format.
    step = _step(embedding_model=model)
    assert step.embedding_model is None
    assert import_memories(export_memories([step], fmt), fmt) == [step]
