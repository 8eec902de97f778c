"""Step-lesson storage and retrieval, on Qdrant Edge and on qdrant-client `:memory:`.

The ranking rules are checked on exact vectors with `rank_lessons`; the lifecycle (reps,
grades, isolation by user, agent and session) runs on the real engines and embedder.
"""

from __future__ import annotations

import logging
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from episodex import (
    ConfigurationError,
    Embedder,
    EmbedderMismatchError,
    Engine,
    EnvState,
    EpisodicMemory,
    ProgrammaticGrader,
    StepLessonMemory,
    StepMemory,
    SyncStepLessonMemory,
    ValidationError,
    open_engine,
)
from episodex._lessons.ranking import jaccard, rank_lessons
from episodex.testing import HashEmbedder

TICKET = [
    "[12] button 'Priority'",
    "[13] button 'Delete'",
    "[14] link 'Back'",
    "[15] textbox 'Comment'",
]
DROPDOWN = [*TICKET, "[30] option 'High'"]  # Jaccard with TICKET: 4/5 = 0.8
OTHER = ["[1] link 'Inbox'", "[2] link 'Settings'"]


def memory(
    action: str,
    outcome: str,
    elements: list[str],
    vector: list[float] | None = None,
    *,
    rep: int = 1,
    step_num: int = 1,
    element_text: str | None = None,
) -> StepMemory:
    return StepMemory.parse(
        {
            "step_id": f"rep{rep}-step{step_num}",
            "user_id": "u",
            "agent_id": "a",
            "session_id": "s",
            "run_id": f"run{rep}",
            "rep": rep,
            "step_num": step_num,
            "env_pre": {"url": "https://app.test/tickets/7", "elements": elements},
            "internal_state": "state",
            "internal_state_embedding": vector or [1.0, 0.0],
            "action": action,
            "action_element_text": element_text,
            "outcome": outcome,
        }
    )


# -- ranking rules on exact vectors ----------------------------------------------------


def test_jaccard_of_elements_and_empty_pages() -> None:
    assert jaccard(EnvState(elements=TICKET), EnvState(elements=DROPDOWN)) == pytest.approx(0.8)
    assert jaccard(EnvState(elements=TICKET), EnvState(elements=OTHER)) == 0.0
    assert jaccard(EnvState(url="/a"), EnvState(url="https://x/a")) == 1.0
    assert jaccard(EnvState(url="/a"), EnvState(url="/b")) == 0.0


def test_threshold_drops_pages_that_do_not_match_and_pending_steps() -> None:
    cands = [
        memory("click('12')", "success", TICKET),
        memory("click('1')", "failure", OTHER, step_num=2),
        memory("click('14')", "pending", TICKET, step_num=3),
    ]
    out = rank_lessons(cands, EnvState(elements=TICKET), [1.0, 0.0], final_k=5)
    assert [r.memory.action for r in out] == ["click('12')"]
    assert out[0].env_score == 1.0 and out[0].state_score == pytest.approx(1.0)
    assert out[0].score == pytest.approx(0.65 + 0.35)


def test_rerank_mixes_env_and_state_scores_with_the_given_weights() -> None:
    same_page_other_state = memory("click('12')", "success", TICKET, [0.0, 1.0])
    near_page_same_state = memory("click('30')", "success", DROPDOWN, [1.0, 0.0], step_num=2)
    current = EnvState(elements=TICKET)
    default = rank_lessons(
        [same_page_other_state, near_page_same_state], current, [1.0, 0.0], final_k=2
    )
    # 0.65*0.8 + 0.35*1 = 0.87 beats 0.65*1 + 0.35*0 = 0.65
    assert [r.memory.action for r in default] == ["click('30')", "click('12')"]
    assert [round(r.score, 4) for r in default] == [0.87, 0.65]
    env_only = rank_lessons(
        [same_page_other_state, near_page_same_state],
        current,
        [1.0, 0.0],
        env_weight=1.0,
        state_weight=0.0,
        final_k=2,
    )
    assert [r.memory.action for r in env_only] == ["click('12')", "click('30')"]
    strict = rank_lessons(
        [same_page_other_state, near_page_same_state], current, [1.0, 0.0], env_threshold=0.9
    )
    assert [r.memory.action for r in strict] == ["click('12')"]


def test_top_k_keeps_the_best_page_matches_before_the_rerank() -> None:
    exact_page_far_state = memory("click('12')", "success", TICKET, [0.0, 1.0])
    near_page_same_state = memory("click('30')", "success", DROPDOWN, [1.0, 0.0], step_num=2)
    out = rank_lessons(
        [exact_page_far_state, near_page_same_state], EnvState(elements=TICKET), [1.0, 0.0], top_k=1
    )
    assert [r.memory.action for r in out] == ["click('12')"]


def test_duplicates_of_action_target_and_value_are_dropped() -> None:
    cands = [
        memory("click('12')", "success", TICKET, rep=1, element_text="Priority"),
        memory("click( '12' )", "success", TICKET, rep=2, element_text="priority"),
        memory("fill('15', 'urgent')", "success", TICKET, rep=1, step_num=2),
        memory("fill('15', 'later')", "success", TICKET, rep=1, step_num=3),
    ]
    out = rank_lessons(cands, EnvState(elements=TICKET), [1.0, 0.0], final_k=10)
    assert [(r.memory.action, r.memory.rep) for r in out] == [
        ("click( '12' )", 2),
        ("fill('15', 'urgent')", 1),
        ("fill('15', 'later')", 1),
    ]


def test_final_k_includes_an_avoid_and_a_repeat_when_both_exist() -> None:
    repeats = [memory(f"click('{i}')", "success", TICKET, step_num=i) for i in range(1, 5)]
    avoid = memory("click('13')", "failure", DROPDOWN, [0.0, 1.0], step_num=9)  # the lowest score
    out = rank_lessons([*repeats, avoid], EnvState(elements=TICKET), [1.0, 0.0])
    assert [r.kind for r in out] == ["REPEAT", "AVOID"]
    assert out[1].memory.action == "click('13')"
    three = rank_lessons([*repeats, avoid], EnvState(elements=TICKET), [1.0, 0.0], final_k=3)
    assert [r.kind for r in three] == ["REPEAT", "REPEAT", "AVOID"]
    one = rank_lessons([*repeats, avoid], EnvState(elements=TICKET), [1.0, 0.0], final_k=1)
    assert [r.kind for r in one] == ["REPEAT"]
    only_repeats = rank_lessons(repeats, EnvState(elements=TICKET), [1.0, 0.0])
    assert [r.kind for r in only_repeats] == ["REPEAT", "REPEAT"]
    assert rank_lessons(repeats, EnvState(elements=TICKET), [1.0, 0.0], final_k=0) == []


@pytest.mark.parametrize(
    ("option", "value"),
    [
        ("env_threshold", 1.5),
        ("top_k", 0),
        ("final_k", -1),
        ("env_weight", -0.1),
        ("state_weight", float("inf")),
        ("top_k", True),
    ],
)
def test_bad_ranking_options_raise(option: str, value: Any) -> None:
    with pytest.raises(ValidationError, match=option):
        rank_lessons([], EnvState(), [1.0], **{option: value})


# -- the lifecycle on real engines -------------------------------------------------------


@pytest.fixture(scope="module", params=["edge", "memory"])
def engine(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Engine]:
    # One engine per backend for the module (creating a shard costs seconds on a busy machine);
    # each test works in its own session, which is exactly the isolation under test.
    if request.param == "edge":
        eng = open_engine(path=str(tmp_path_factory.mktemp("lessons") / "store"))
    else:
        eng = open_engine(location=":memory:")
    yield eng
    eng.close()


@pytest.fixture
def sid() -> str:
    return f"session-{uuid.uuid4().hex[:8]}"


GRADER = ProgrammaticGrader(["click('12')", "click('30')"])


@pytest.fixture
def lessons(engine: Engine, embedder: Embedder) -> StepLessonMemory:
    return StepLessonMemory(engine, embedder, grader=GRADER)


async def attempt(
    lessons: StepLessonMemory, session: str, *actions: str, user: str = "u", agent: str = "a"
) -> None:
    await lessons.init_episode(session, user_id=user, agent_id=agent, task="set priority")
    for action in actions:
        env = DROPDOWN if action == "click('13')" else TICKET
        await lessons.record_step_start(
            env_pre={"url": "/tickets/7", "elements": env},
            internal_state="Set ticket 7 priority to High",
            action=action,
        )
    await lessons.end_episode(final_env={"url": "/tickets/7/deleted"})


async def test_rep_one_gets_nothing_rep_two_gets_graded_steps_of_rep_one(
    lessons: StepLessonMemory, sid: str
) -> None:
    ep = await lessons.init_episode(sid, user_id="u", agent_id="a")
    assert (ep.rep, ep.resumed) == (1, False)
    assert (
        await lessons.retrieve_memories({"elements": TICKET}, "Set ticket 7 priority to High") == []
    )
    await lessons.record_step_start(
        env_pre={"elements": TICKET},
        internal_state="Set ticket 7 priority to High",
        action="click('12')",
        action_element_text="Priority",
    )
    await lessons.record_step_start(
        env_pre={"elements": DROPDOWN}, internal_state="Pick High", action="click('13')"
    )
    result = await lessons.end_episode(final_env={"url": "/deleted"})
    assert result is not None and result.task_success is False

    ep2 = await lessons.init_episode(sid, user_id="u", agent_id="a")
    assert (ep2.rep, ep2.resumed) == (2, True) and ep2.run_id != ep.run_id
    found = await lessons.retrieve_memories({"elements": TICKET}, "Set ticket 7 priority to High")
    assert [(r.kind, r.memory.action) for r in found] == [
        ("REPEAT", "click('12')"),
        ("AVOID", "click('13')"),
    ]
    assert found[0].env_score == 1.0 and found[0].state_score == pytest.approx(1.0, abs=1e-5)
    assert found[1].env_score == pytest.approx(0.8) and 0 < found[1].state_score < 1
    assert found[1].memory.correction == "click('30')"
    assert found[1].memory.task_incomplete == "1 expected action(s) not done: click('30')"
    assert found[0].memory.env_post is not None and found[0].memory.env_post.elements == DROPDOWN
    assert found[1].memory.env_post is not None and found[1].memory.env_post.url == "/deleted"
    block = await lessons.lessons_block({"elements": TICKET}, "Set ticket 7 priority to High")
    assert block.startswith("# Lessons From Previous Attempt\n")
    assert "1. REPEAT: [/ 100%] click: 'Priority'" in block


async def test_never_the_current_run(lessons: StepLessonMemory, sid: str) -> None:
    await attempt(lessons, sid, "click('12')")
    await lessons.init_episode(sid, user_id="u", agent_id="a")
    await lessons.record_step_start(
        env_pre={"elements": TICKET}, internal_state="x", action="click('14')"
    )
    await lessons.persist_memories()
    current = lessons.episode
    assert current is not None
    await lessons.add_grades(
        {"grades": [{"step_id": f"rep{current.rep}-step1", "correct": True}], "task_success": True}
    )
    found = await lessons.retrieve_memories({"elements": TICKET}, "x", final_k=10)
    assert [r.memory.rep for r in found] == [1]
    assert len(await lessons.load_all_memories_for_session()) == 2


async def test_isolated_by_user_agent_and_session(lessons: StepLessonMemory, sid: str) -> None:
    await attempt(lessons, sid, "click('12')", "click('13')")
    for user, agent, session in (("u2", "a", sid), ("u", "a2", sid), ("u", "a", sid + "-2")):
        ep = await lessons.init_episode(session, user_id=user, agent_id=agent)
        assert ep.rep == 1 and not ep.resumed
        await lessons.record_step_start(
            env_pre={"elements": TICKET}, internal_state="x", action="click('14')"
        )
        await lessons.end_episode()
        await lessons.init_episode(session, user_id=user, agent_id=agent)
        found = await lessons.retrieve_memories(
            {"elements": TICKET}, "Set ticket 7 priority to High", final_k=10
        )
        assert [r.memory.action for r in found] == ["click('14')"]
        assert [m.action for m in await lessons.load_all_memories_for_session()] == ["click('14')"]
        assert await lessons.count(session, user_id=user, agent_id=agent) == 1
    assert await lessons.count(sid, user_id="u", agent_id="a") == 2
    assert await lessons.forget_session(sid, user_id="u2", agent_id="a") == 1
    assert await lessons.count(sid, user_id="u", agent_id="a") == 2


async def test_no_grader_no_lessons_said_plainly(
    engine: Engine, embedder: Embedder, caplog: pytest.LogCaptureFixture, sid: str
) -> None:
    plain = StepLessonMemory(engine, embedder)
    assert plain.lessons_enabled is False
    await plain.init_episode(sid, user_id="u", agent_id="a")
    await plain.record_step_start(
        env_pre={"elements": TICKET}, internal_state="x", action="click('12')"
    )
    with caplog.at_level(logging.WARNING, logger="episodex.lessons"):
        assert await plain.end_episode() is None
    assert "no grader" in caplog.text and "never become lessons" in caplog.text
    stored = await plain.load_all_memories_for_session()
    assert [m.outcome for m in stored] == ["pending"]
    await plain.init_episode(sid, user_id="u", agent_id="a")
    assert await plain.retrieve_memories({"elements": TICKET}, "x") == []
    # A grader given to end_episode grades this attempt.
    await plain.record_step_start(
        env_pre={"elements": TICKET}, internal_state="x", action="click('12')"
    )
    result = await plain.end_episode(grader=GRADER)
    assert result is not None and result.grades[0].correct


async def test_bad_grades_change_nothing(lessons: StepLessonMemory, sid: str) -> None:
    await lessons.init_episode(sid, user_id="u", agent_id="a")
    await lessons.record_step_start(
        env_pre={"elements": TICKET}, internal_state="x", action="click('12')"
    )
    await lessons.persist_memories()
    before = await lessons.load_all_memories_for_session()
    with pytest.raises(ValidationError, match=r"not in this attempt: \['nope'\]"):
        await lessons.add_grades(
            {"grades": [{"step_id": "nope", "correct": True}], "task_success": True}
        )
    with pytest.raises(ValidationError, match="grading_result: invalid grading result"):
        await lessons.add_grades({"grades": [], "task_success": "yes"})
    with pytest.raises(ValidationError, match="no stored attempt"):
        await lessons.add_grades({"task_success": True}, run_id="ghost")
    assert await lessons.load_all_memories_for_session() == before
    assert [m.outcome for m in lessons.steps] == ["pending"]


async def test_grades_for_an_earlier_run_by_run_id(lessons: StepLessonMemory, sid: str) -> None:
    await lessons.init_episode(sid, user_id="u", agent_id="a")
    await lessons.record_step_start(
        env_pre={"elements": TICKET}, internal_state="x", action="click('12')"
    )
    await lessons.persist_memories()
    first = lessons.episode
    assert first is not None
    await lessons.init_episode(sid, user_id="u", agent_id="a")
    graded = await lessons.add_grades(
        {
            "grades": [{"step_id": "rep1-step1", "correct": False, "correction": "c"}],
            "task_success": False,
        },
        run_id=first.run_id,
    )
    assert [(m.outcome, m.correction) for m in graded] == [("failure", "c")]
    assert lessons.steps == []


async def test_resume_a_run_by_id_continues_its_steps(lessons: StepLessonMemory, sid: str) -> None:
    ep = await lessons.init_episode(sid, user_id="u", agent_id="a", run_id="run-A")
    await lessons.record_step_start(
        env_pre={"elements": TICKET}, internal_state="x", action="click('12')"
    )
    await lessons.persist_memories()
    again = await lessons.init_episode(sid, user_id="u", agent_id="a", run_id="run-A")
    assert (again.rep, again.run_id, again.resumed) == (ep.rep, "run-A", True)
    second = await lessons.record_step_start(
        env_pre={"elements": DROPDOWN}, internal_state="y", action="click('30')"
    )
    assert (second.step_num, second.step_id) == (2, "rep1-step2")
    result = await lessons.end_episode()
    assert result is not None and result.task_success is True


async def test_step_recording_rules(lessons: StepLessonMemory, sid: str) -> None:
    with pytest.raises(ValidationError, match="call init_episode"):
        await lessons.record_step_start(env_pre={}, internal_state="x", action="a()")
    with pytest.raises(ValidationError, match="session_id must be a non-empty string"):
        await lessons.init_episode("", user_id="u", agent_id="a")
    with pytest.raises(ValidationError, match="user_id must be a non-empty string"):
        await lessons.init_episode(sid, user_id="", agent_id="a")
    await lessons.init_episode(sid, user_id="u", agent_id="a")
    with pytest.raises(ValidationError, match="no step recorded yet"):
        await lessons.record_step_end({"url": "/x"})
    await lessons.record_step_start(
        env_pre={"url": "/a"}, internal_state="x", action="a()", step_id="first"
    )
    with pytest.raises(ValidationError, match="already used"):
        await lessons.record_step_start(
            env_pre={"url": "/b"}, internal_state="x", action="b()", step_id="first"
        )
    with pytest.raises(ValidationError, match="env_pre: invalid environment state"):
        await lessons.record_step_start(env_pre={"url": 1}, internal_state="x", action="b()")
    with pytest.raises(ValidationError, match="action: must contain text"):
        await lessons.record_step_start(env_pre={"url": "/b"}, internal_state="x", action=" ")
    ended = await lessons.record_step_end({"url": "/after"}, step_id="first")
    assert ended.env_post is not None and ended.env_post.url == "/after"
    with pytest.raises(ValidationError, match="top_k must be an integer >= 1"):
        await lessons.retrieve_memories({}, "x", top_k=0)  # checked even on rep 1
    with pytest.raises(ValidationError, match="current_state must be a string"):
        await lessons.retrieve_memories({}, None)  # type: ignore[arg-type]
    assert [s.step_id for s in lessons.steps] == ["first"]


async def test_stored_embedding_is_the_embedders_vector(
    lessons: StepLessonMemory, embedder: Embedder, sid: str
) -> None:
    await lessons.init_episode(sid, user_id="u", agent_id="a")
    await lessons.record_step_start(
        env_pre={"url": "/a"}, internal_state="Find the invoice", action="a()"
    )
    ids = await lessons.persist_memories()
    again = await lessons.persist_memories()  # idempotent: same points replaced
    assert ids == again
    (stored,) = await lessons.load_all_memories_for_session()
    assert stored.id == ids[0]
    vec = np.asarray(stored.internal_state_embedding)
    assert vec.shape == (embedder.dimension,)
    assert np.allclose(vec, embedder.embed_documents(["Find the invoice"])[0], atol=1e-6)


async def test_store_memories_imports_and_checks_dimension(
    lessons: StepLessonMemory, sid: str
) -> None:
    m = memory("click('12')", "success", TICKET).model_copy(
        update={"internal_state_embedding": None}
    )
    m = StepMemory.parse({**m.model_dump(), "session_id": sid})
    await lessons.store_memories([m])
    (back,) = await lessons.load_all_memories_for_session(sid, user_id="u", agent_id="a")
    made = {"internal_state_embedding", "embedding_model"}  # what the store fills in
    assert back.internal_state_embedding is not None and back.model_dump(
        exclude=made
    ) == m.model_dump(exclude=made)
    assert back.embedding_model == lessons.embedder.model_id
    with pytest.raises(ValidationError, match="embedding of length 2"):
        await lessons.store_memories([memory("click('12')", "success", TICKET)])
    with pytest.raises(ValidationError, match="not a single one"):
        await lessons.store_memories(m.model_dump())  # type: ignore[arg-type]


def test_other_embedder_on_the_same_collection_is_refused(
    engine: Engine, embedder: Embedder
) -> None:
    StepLessonMemory(engine, embedder)

    with pytest.raises(EmbedderMismatchError, match="step-lesson collection"):
        StepLessonMemory(engine, HashEmbedder(dimension=3, model_id="tiny"))


def test_configuration_errors(engine: Engine, embedder: Embedder) -> None:
    with pytest.raises(ConfigurationError, match="engine must be"):
        StepLessonMemory("nowhere", embedder)  # type: ignore[arg-type]
    with pytest.raises(ConfigurationError, match="grader must have"):
        StepLessonMemory(engine, embedder, grader=object())  # type: ignore[arg-type]
    with pytest.raises(ValidationError, match="env_threshold"):
        StepLessonMemory(engine, embedder, env_threshold=2)


async def test_from_memory_shares_the_episodic_store(
    tmp_path: Path, embedder: Embedder, sid: str
) -> None:
    mem = EpisodicMemory(path=tmp_path / "m", embedder=embedder)
    try:
        lessons = StepLessonMemory.from_memory(mem, grader=GRADER, final_k=1)
        assert lessons.engine is mem.engine and lessons.embedder is mem.embedder
        await attempt(lessons, sid, "click('12')", "click('13')")
        await lessons.init_episode(sid, user_id="u", agent_id="a")
        assert (
            len(
                await lessons.retrieve_memories(
                    {"elements": TICKET}, "Set ticket 7 priority to High"
                )
            )
            == 1
        )
        assert sorted(p.name for p in (tmp_path / "m").iterdir() if p.is_dir()) == [
            "episodes",
            "step_lessons",
        ]
    finally:
        mem.close()


def test_sync_twin(engine: Engine, embedder: Embedder, sid: str) -> None:
    with SyncStepLessonMemory(StepLessonMemory(engine, embedder, grader=GRADER)) as lessons:
        lessons.init_episode(sid, user_id="u", agent_id="a")
        lessons.record_step_start(
            env_pre={"elements": TICKET},
            internal_state="x",
            action="click('12')",
            action_element_text="Priority",
        )
        assert lessons.end_episode().task_success is False  # pyright: ignore[reportOptionalMemberAccess]
        assert lessons.lessons_enabled is True
        lessons.init_episode(sid, user_id="u", agent_id="a")
        assert "1. REPEAT: [/ " in lessons.lessons_block({"elements": TICKET}, "x")
