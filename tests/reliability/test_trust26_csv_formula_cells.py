"""A csv export never hands a spreadsheet a formula, and still reads back exactly.

`export_memories(..., "csv")` wrote every text verbatim, so a step whose outcome reason was
`=HYPERLINK("http://evil.test", "click")` (text a web page can put in front of an agent)
became a cell that Excel, LibreOffice and Google Sheets run as a formula when the file is
opened. A cell that starts with `=`, `+`, `-`, `@`, a tab or a carriage return is now written
with a `'` in front (OWASP's advice: the app shows it as text), and `import_memories` takes
that quote off again, so the round trip keeps every text exactly.
"""

from __future__ import annotations

import csv
import io
from typing import Any

from episodex import StepMemory, export_memories, import_memories
from hypothesis import given, settings
from hypothesis import strategies as st

TRIGGERS = ("=", "+", "-", "@", "\t", "\r")


def make(**changes: Any) -> StepMemory:
    data: dict[str, Any] = {
        "step_id": "rep1-step1",
        "user_id": "u1",
        "agent_id": "web",
        "session_id": "ticket-7",
        "run_id": "run-1",
        "rep": 1,
        "step_num": 1,
        "env_pre": {"url": "https://app.test/tickets?id=7", "elements": []},
        "internal_state": "Goal: set ticket 7 to High",
        "action": "click('12')",
    }
    data.update(changes)
    return StepMemory.parse(data)


DANGEROUS = [
    make(
        step_id=f"=step{i}",
        user_id="@alice",
        session_id="+s",
        run_id="-r",
        internal_state=f"{t}cmd|' /C calc'!A0",
        action=f'{t}HYPERLINK("http://evil.test", "click")',
        think=f"{t}1+1",
        outcome_reason=f"{t}SUM(A1:A9)",
        correction=f"{t}{t}twice",
        task_incomplete=f"{t}",
        action_element_text="-",
        metadata={"note": "=not a cell start: inside JSON"},
    )
    for i, t in enumerate(TRIGGERS)
]
# Texts that already start with a quote must come back with exactly their own quotes.
QUOTED = [
    make(step_id=f"q{i}", think=text, outcome_reason=text, correction=text)
    for i, text in enumerate(["'=1+1", "''-2", "'plain", "''", "'", "'\t", "it's =fine"])
]


def _cells(text: str) -> list[str]:
    return [cell for row in csv.reader(io.StringIO(text, newline="")) for cell in row]


def test_no_cell_of_a_csv_export_starts_a_formula() -> None:
    text = export_memories([*DANGEROUS, *QUOTED], "csv")
    starts = [cell for cell in _cells(text) if cell.startswith(TRIGGERS)]
    assert starts == []
    # The escaped cells are shown as the text itself, after the quote a spreadsheet hides.
    assert "'=SUM(A1:A9)" in _cells(text)


def test_the_csv_round_trip_stays_exact() -> None:
    memories = [*DANGEROUS, *QUOTED]
    back = import_memories(export_memories(memories, "csv"), "csv")
    assert [m.model_dump() for m in back] == [m.model_dump() for m in memories]


def test_an_earlier_export_with_quoted_text_reads_as_before() -> None:
    # Written before cells were escaped: a leading quote before ordinary text is kept.
    memory = make(think="'plain", outcome_reason="'tis so")
    text = export_memories([memory], "csv")
    assert "'plain" in _cells(text)  # not escaped: no formula follows the quote
    assert import_memories(text, "csv")[0].think == "'plain"


@settings(max_examples=200, deadline=None)
@given(
    st.text(alphabet=st.sampled_from(["=", "+", "-", "@", "\t", "\r", "\n", "'", "a", " ", '"']))
)
def test_any_text_round_trips_through_csv(text: str) -> None:
    memory = make(think=text or None, correction=text or None, action=f"act{text}")
    back = import_memories(export_memories([memory], "csv"), "csv")[0]
    assert back.model_dump() == memory.model_dump()
    assert not [c for c in _cells(export_memories([memory], "csv")) if c.startswith(TRIGGERS)]
