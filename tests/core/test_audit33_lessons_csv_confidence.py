"""A csv export of step memories gives back the confidence it was given, int or float.

`confidence` takes an int (`0`, `1`) or a float in [0, 1], and json keeps which. The csv
export writes an int as `1` and a float as `1.0`, but the import read every confidence as a
float: a step graded with confidence 1 came back from csv with 1.0, so its json export,
and the payload stored again from it, differed from the original's. An int cell now reads
back as an int, a float cell as a float, so both exports round-trip alike.
"""

from __future__ import annotations

import pytest
from episodex import StepMemory, export_memories, import_memories


def _step(confidence: float | None) -> StepMemory:
    return StepMemory.parse(
        {
            "step_id": "s1",
            "user_id": "u1",
            "agent_id": "web",
            "session_id": "ticket-7",
            "run_id": "r1",
            "rep": 1,
            "step_num": 1,
            "env_pre": {"url": "/tickets/7"},
            "internal_state": "set the priority",
            "action": "click('12')",
            "outcome": "success",
            "confidence": confidence,
        }
    )


@pytest.mark.parametrize("confidence", [0, 1, 0.0, 1.0, 0.5, 5e-324, None])
@pytest.mark.parametrize("fmt", ["json", "csv"])
def test_an_exported_confidence_comes_back_with_its_type(
    confidence: float | None, fmt: str
) -> None:
    step = _step(confidence)
    (back,) = import_memories(export_memories([step], fmt), fmt)  # pyright: ignore[reportArgumentType]
    assert type(back.confidence) is type(step.confidence)
    assert back.confidence == step.confidence
    assert export_memories([back], "json") == export_memories([step], "json")
    assert export_memories([back], "csv") == export_memories([step], "csv")


@pytest.mark.parametrize("cell", ["1_0", "\uff11", "01x", " 1", "-1"])
def test_a_confidence_cell_that_is_no_exported_number_is_refused(cell: str) -> None:
    exported = export_memories([_step(0.5)], "csv").replace(",0.5,", f",{cell},")
    with pytest.raises(Exception, match="confidence") as info:
        import_memories(exported, "csv")
    assert type(info.value).__name__ == "ImportFileError"
