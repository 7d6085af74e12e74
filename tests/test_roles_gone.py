"""A host's worker counts as gone only when the scheduler has missed it in several
polls in a row (#41: a healthy cluster's scheduler_info() listed no worker in 1 of
9,907 calls, and one missing poll ended a study). No Dask cluster: a fake client."""

from __future__ import annotations

from typing import Any

import pytest

from assay.errors import StudyError
from assay.execute import roles
from assay.execute.roles import GONE_CHECKS, HostSlot, RoleExecutor
from assay.execute.trial import TrialRequest
from assay.store import HostRun


class FakeFuture:
    def __init__(self, done_after: int, value: Any) -> None:
        self.left, self.value = done_after, value

    def done(self) -> bool:
        return self.left <= 0

    def result(self) -> Any:
        if isinstance(self.value, BaseException):
            raise self.value
        return self.value


class FakeClient:
    """scheduler_info() answers from a script of worker sets, one per poll; each poll
    also brings every future one step nearer to done."""

    def __init__(self, polls: list[set[str]], futures: list[FakeFuture]) -> None:
        self.polls, self.futures, self.cancelled = polls, futures, []
        self.status = "running"  # what distributed.Client.status says while connected

    def scheduler_info(self) -> dict[str, Any]:
        for f in self.futures:
            f.left -= 1
        workers = self.polls.pop(0) if len(self.polls) > 1 else self.polls[0]
        return {"workers": {w: {} for w in workers}}

    def cancel(self, futures: list[Any]) -> None:
        self.cancelled.extend(futures)


def _executor(client: FakeClient) -> RoleExecutor:
    import threading

    from assay.execute.roles import RolePlan, _Group

    ex = object.__new__(RoleExecutor)  # no cluster: only what _wait and status use
    ex.client = client  # type: ignore[misc]
    ex._stop, ex._lock, ex._running = threading.Event(), threading.Lock(), set()
    ex._worker_at, ex._restarted, ex._reviving, ex._revived = {}, [], set(), []
    ex._workers_lock, ex._benchmark_setup = threading.Lock(), False
    ex.groups = [_Group(0, RolePlan({"client": ["a"]}, None, {}, {}, {}))]
    return ex


@pytest.fixture(autouse=True)
def no_dask_wait(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(roles, "_first_done", lambda futures, timeout: None)


def _slot(host: str) -> HostSlot:
    return HostSlot(role="server", host=host, index=0, worker=0)


def test_one_poll_without_the_worker_is_not_a_lost_host() -> None:
    slot = _slot("s0")
    fut = FakeFuture(done_after=4, value="ok")
    client = FakeClient([{"tcp://a"}, set(), {"tcp://a"}], [fut])
    out = _executor(client)._wait({slot: fut}, {slot: "tcp://a"}, limit_s=60)  # type: ignore[dict-item]
    assert out == {slot: "ok"}


def test_a_worker_missing_poll_after_poll_is_gone() -> None:
    slot = _slot("s0")
    fut = FakeFuture(done_after=10**6, value="never")
    client = FakeClient([{"tcp://a"}] + [set()] * (GONE_CHECKS + 1), [fut])
    out = _executor(client)._wait({slot: fut}, {slot: "tcp://a"}, limit_s=60)  # type: ignore[dict-item]
    assert isinstance(out[slot], roles._Lost) and "is gone" in out[slot].why
    assert client.cancelled == [fut]


def _bare_assertion() -> AssertionError:
    try:
        raise AssertionError  # a bare one, as distributed's Future._result raised in CI
    except AssertionError as exc:
        return exc


def test_a_future_that_raises_as_its_worker_dies_is_a_lost_host() -> None:
    """CI, #42's group test: the killed host's future ended in a bare AssertionError
    one poll before the scheduler dropped its worker; the trial was kept failed
    instead of running on the other group."""
    slot = _slot("s0")
    fut = FakeFuture(done_after=1, value=_bare_assertion())
    client = FakeClient([{"tcp://a"}, {"tcp://a"}, set()], [fut])
    out = _executor(client)._wait({slot: fut}, {slot: "tcp://a"}, limit_s=60)  # type: ignore[dict-item]
    lost = out[slot]
    assert isinstance(lost, roles._Lost) and "its Dask worker tcp://a is gone" in lost.why
    run = roles._lost_run("trial", slot, lost.why)
    record = roles._failed_record(TrialRequest(0, ["true"]), slot, [run], lost.why)
    assert roles._hosts_left(record) == [run]  # so it runs on another group
    assert "AssertionError (at test_roles_gone.py:" in lost.why  # where, as it says nothing


def test_a_future_that_raises_while_its_worker_stays_is_the_tasks_failure() -> None:
    slot = _slot("s0")
    fut = FakeFuture(done_after=1, value=RuntimeError("boom"))
    client = FakeClient([{"tcp://a"}], [fut])
    out = _executor(client)._wait({slot: fut}, {slot: "tcp://a"}, limit_s=60)  # type: ignore[dict-item]
    lost = out[slot]
    assert isinstance(lost, roles._Lost) and lost.why == "its task failed: RuntimeError: boom"
    assert client.polls == [{"tcp://a"}]  # and it was asked GONE_CHECKS times: not at once


def test_a_lost_scheduler_ends_the_wait_in_one_line_without_asking_it() -> None:
    slot = _slot("s0")
    client = FakeClient([{"tcp://a"}], [FakeFuture(done_after=10**6, value="never")])
    client.status = "connecting"  # what Client.status says once the scheduler is gone
    client.scheduler = type("S", (), {"address": "tcp://10.0.0.1:8786"})()  # type: ignore[attr-defined]
    lost = r"connection to the Dask scheduler tcp://10\.0\.0\.1:8786 was lost"
    with pytest.raises(StudyError, match=lost):
        _executor(client)._wait({slot: client.futures[0]}, {slot: "tcp://a"}, limit_s=60)  # type: ignore[dict-item]
    assert client.futures[0].left == 10**6  # scheduler_info was never asked


def test_the_live_line_has_one_trial_in_flight_as_every_host_runs_it() -> None:
    import time

    ex = _executor(FakeClient([set()], []))
    ex._batch, ex._n_workers = (18, 4, time.monotonic() - 8.0), 4  # 4 of 18 done
    s = ex.status()
    assert (s.workers, s.busy, s.in_flight) == (4, 4, 1)  # before: "18 in flight"
    assert s.left_s is not None and s.left_s > 0
    ex._batch = (18, 18, time.monotonic())
    assert ex.status().in_flight == 0 and ex.status().busy == 0


def test_a_lost_scheduler_says_what_was_left_set_up_and_where() -> None:
    """#61: a killed scheduler left redis-servers running on 4 hosts, unsaid."""
    from assay.execute.roles import RolePlan, _Group

    slot = _slot("s0")
    client = FakeClient([{"tcp://a"}], [FakeFuture(done_after=10**6, value="never")])
    client.status = "connecting"
    client.scheduler = type("S", (), {"address": "tcp://10.0.0.1:8786"})()  # type: ignore[attr-defined]
    ex = _executor(client)
    steps = {"server": {"setup": ["start"], "teardown": ["stop"]}}
    plan = RolePlan({"server": ["s0", "s1"], "client": ["c"]}, None, steps, {}, {})  # type: ignore[arg-type]
    ex.groups = [_Group(0, plan)]
    ex.groups[0].configured["server"] = (None, {})  # type: ignore[assignment]
    ex.groups[0].configured["client"] = (None, {})  # type: ignore[assignment]  # no steps: not said
    with pytest.raises(StudyError) as err:
        ex._wait({slot: client.futures[0]}, {slot: "tcp://a"}, limit_s=60)  # type: ignore[dict-item]
    text = str(err.value)
    assert (
        "was lost" in text and "left set up, their teardown not run: role server on s0, s1" in text
    )
    assert "the same command run again tears them down" in text


def test_a_step_that_failed_while_a_host_of_its_group_is_gone_is_a_host_failure() -> None:
    """#61: a primary's teardown timed out waiting on its cut-off replica; the trial was
    kept failed on a healthy host instead of running on another group.  With a host of
    the group gone, the failure is that host's (lost): the study's host-failure rule
    then moves the trial."""
    from assay.execute.roles import RolePlan, _Group, host_failures
    from assay.execute.trial import TrialJob, TrialRequest

    plan = RolePlan({"server": ["s0"], "client": ["c"]}, None, {}, {}, {})
    ex = _executor(FakeClient([set()], []))
    ex.groups = [_Group(0, plan)]
    slots = plan.slots
    teardown = HostRun("teardown", "server", "s0", 0, "timeout", error="timed out after 10 s")
    ex._rejoined = lambda slots_=None, limit_s=0.0: {s: "tcp://x" for s in slots}  # type: ignore[method-assign]
    ex._reconfigure = lambda g, job, setting: [teardown]  # type: ignore[method-assign]
    gone = {s: "tcp://x" for s in slots if s.host != "c"}  # the client's host is cut off
    ex._addresses = lambda slots_=None: gone  # type: ignore[method-assign]
    rec = ex._trial(ex.groups[0], TrialJob(pis=(), timeout=10), TrialRequest(0, ["true"]))
    assert rec.status == "failed"
    lost = [h for h in host_failures(rec, "client") if h.status == "lost"]
    assert [h.host for h in lost] == ["c"] and "has no Dask worker" in rec.error
    # all hosts there: the step's own failure, as before
    ex._addresses = lambda slots_=None: {s: "tcp://x" for s in slots}  # type: ignore[method-assign]
    rec = ex._trial(ex.groups[0], TrialJob(pis=(), timeout=10), TrialRequest(1, ["true"]))
    assert "timed out after 10 s" in rec.error and all(h.status != "lost" for h in rec.host_runs)


def test_a_worker_back_at_a_new_address_is_said_restarted_unless_revived() -> None:
    """#61: a nanny's restarted worker was used again without a word in the report."""
    from assay.execute.roles import RolePlan, _Group

    ex = _executor(FakeClient([set()], []))
    plan = RolePlan({"server": ["s0"], "client": ["c"]}, None, {}, {}, {})
    ex.plan, ex.groups = plan, [_Group(0, plan)]
    at = {"tcp://1": {"name": 0}, "tcp://2": {"name": 1}}
    ex._scheduler_workers = lambda: at  # type: ignore[method-assign]
    assert set(ex._addresses().values()) == {"tcp://1", "tcp://2"}
    assert ex._addresses() and ex._restarted == []  # the same addresses: nothing
    at.pop("tcp://1")
    at["tcp://9"] = {"name": 0}  # the server's worker died; its nanny started another
    ex._addresses()
    (restarted,) = ex._restarted
    assert restarted["host"] == "s0 (server[0])" and restarted["worker"] == "tcp://9"
    server = next(s for s in plan.slots if s.role == "server")
    ex._reviving.add(str(server.worker))  # a revive started the next one: said as revived, not here
    at.pop("tcp://9")
    at["tcp://10"] = {"name": 0}
    ex._addresses()
    assert len(ex._restarted) == 1 and not ex._reviving


def test_a_plain_dask_study_says_a_worker_its_nanny_restarted() -> None:
    """The same for a study without roles: the killed worker is listed lost, and the one
    its nanny started in its place (same name, new address) as restarted, by its host."""
    import threading

    from assay.execute.dask_executor import DaskExecutor

    info = {"tcp://1": {"name": 0}, "tcp://2": {"name": 1}}
    ex = object.__new__(DaskExecutor)
    ex.client = type("C", (), {"scheduler_info": lambda self: {"workers": info}})()
    ex._known = {"tcp://1": "vm (10.0.0.2)", "tcp://2": "vm (10.0.0.3)"}
    ex._lost, ex._worker_at, ex._restarted, ex._reviving = [], {}, [], set()
    ex._workers_lock = threading.Lock()
    ex._note_lost(set(info))
    assert ex._lost == [] and ex._restarted == []
    del info["tcp://2"]
    info["tcp://7"] = {"name": 1}
    ex._note_lost(set(info))
    assert [w["host"] for w in ex._lost] == ["vm (10.0.0.3)"]
    assert [(w["host"], w["worker"]) for w in ex._restarted] == [("vm (10.0.0.3)", "tcp://7")]
