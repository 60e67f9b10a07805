"""Ray workers for ``study.optimize(..., backend="ray")``: the trials run as Ray tasks, on one machine or a cluster.

The study stays in the driver process; each trial is one Ray task (``num_cpus=1`` unless
``RayWorkers(W, num_gpus=..., ...)`` says otherwise; at most W at once). ``trial.report(value, step)`` in a
task goes through a small async actor (``ReportChannel``) that the driver polls; the task waits there
for the pruner's decision. A task whose worker dies (``WorkerCrashedError``, a killed node) is a
``crash`` of its trial only: run again or recorded as failed (``nas.host.workers``). Ray's own task
retries are off (``max_retries=0``) so that the study decides. ``RayWorkers(W, trial_timeout=seconds)``: a task
running longer than that (counted from when its objective started) is cancelled with ``force=True``, which kills its Ray
worker process (Ray starts another), and comes back as a ``timeout`` event, recorded as a failed trial.

Ray is imported only here, when the backend starts: ``pip install "ray[default]"``. Without a running
Ray, ``ray.init()`` starts a local one; connect to a cluster first with ``ray.init(address=...)``.
"""

from __future__ import annotations

import asyncio
import time

from nas.host.trials import Trial
from nas.host.workers.events import Event, call_objective


def _import_ray():
    try:
        import ray
    except ImportError:
        raise ImportError('backend="ray" needs Ray: pip install "ray[default]"') from None
    return ray


class ReportChannel:
    """Reports from running tasks to the driver, and the driver's decisions back (a Ray async actor)."""

    def __init__(self):
        self.reports: list[tuple] = []
        self.started: list[int] = []  # trials whose objective started since the last take
        self.waiting: dict[int, asyncio.Event] = {}
        self.answers: dict[int, bool] = {}

    async def report(self, number: int, step: float, value: float) -> bool:
        done = asyncio.Event()
        self.waiting[number] = done
        self.reports.append((number, step, value))
        await done.wait()
        return self.answers.pop(number)

    async def start(self, number: int) -> None:
        self.started.append(number)

    async def take(self) -> tuple[list[tuple], list[int]]:
        out, started, self.reports, self.started = self.reports, self.started, [], []
        return out, started

    async def answer(self, number: int, prune: bool) -> None:
        self.answers[number] = bool(prune)
        self.waiting.pop(number).set()


class _Reporter:
    def __init__(self, channel):
        self.channel, self.stopped = channel, False

    def report(self, number: int, step: float, value: float) -> bool:
        import ray

        self.stopped = ray.get(self.channel.report.remote(number, float(step), value))
        return self.stopped

    def should_prune(self, number: int) -> bool:
        return self.stopped


def run_trial(fn, payload: dict, pass_trial: bool, channel) -> tuple:
    """The body of one Ray task: ``(kind, value, elapsed, user_attrs)`` of the trial (``events.call_objective``)."""
    channel.start.remote(payload["number"])  # its time limit counts from here, not from a worker's start-up
    event = call_objective(fn, Trial(**payload, _study=_Reporter(channel)), pass_trial)
    return event.kind, event.value, event.elapsed, event.user_attrs


class RayWorkers:
    """At most ``n_workers`` trials as Ray tasks at once; ``remote_options`` go to ``ray.remote`` (module doc)."""

    def __init__(self, n_workers: int, trial_timeout: float | None = None, **remote_options):
        self.n_workers, self.trial_timeout = int(n_workers), trial_timeout
        self.remote_options = {"num_cpus": 1, **remote_options, "max_retries": 0}

    def start(self, fn, pass_trial: bool) -> None:
        ray = self.ray = _import_ray()
        if not ray.is_initialized():
            ray.init()
        self.channel = ray.remote(num_cpus=0)(ReportChannel).remote()
        self.task = ray.remote(**self.remote_options)(run_trial)
        self.fn, self.pass_trial = ray.put(fn), pass_trial
        self.refs: dict = {}  # object ref -> trial number
        self.since: dict = {}  # object ref -> when its objective started (time.monotonic)
        self.events: list[Event] = []

    def free(self) -> bool:
        return len(self.refs) < self.n_workers

    def submit(self, trial) -> None:
        ref = self.task.remote(self.fn, trial.payload(), self.pass_trial, self.channel)
        self.refs[ref] = trial.number

    def next_event(self) -> Event:
        ray = self.ray
        while not self.events:
            reports, started = ray.get(self.channel.take.remote())
            if started:
                now, refs = time.monotonic(), {n: r for r, n in self.refs.items()}
                self.since.update({refs[n]: now for n in started if n in refs})
            for number, step, value in reports:
                reply = lambda prune, n=number: self.channel.answer.remote(n, prune)  # noqa: E731
                self.events.append(Event("report", number, value, step=step, reply=reply))
            self._stop_late()
            if self.events:
                break
            ready, _ = ray.wait(list(self.refs), num_returns=1, timeout=0.05)
            for ref in ready:
                number = self.refs.pop(ref)
                self.since.pop(ref, None)
                try:
                    kind, value, elapsed, attrs = ray.get(ref)
                except (ray.exceptions.WorkerCrashedError, ray.exceptions.NodeDiedError,
                        ray.exceptions.LocalRayletDiedError) as e:  # fmt: skip
                    self.events.append(Event("crash", number, type(e).__name__))
                except ray.exceptions.RayError as e:  # the task could not run (e.g. the objective did not unpickle)
                    self.events.append(Event("error", number, e))
                else:
                    self.events.append(Event(kind, number, value, elapsed=elapsed, user_attrs=attrs))
        return self.events.pop(0)

    def _stop_late(self) -> None:
        """Cancels (kills) the tasks that ran past ``trial_timeout``: a ``timeout`` event each."""
        if self.trial_timeout is None:
            return
        now = time.monotonic()
        for ref in [r for r, t in self.since.items() if now - t >= self.trial_timeout]:
            self.ray.cancel(ref, force=True)
            number, ran = self.refs.pop(ref), now - self.since.pop(ref)
            self.events.append(Event("timeout", number, f"it ran longer than trial_timeout={self.trial_timeout:g} s "
                                     "and its Ray worker process was killed", elapsed=ran))  # fmt: skip

    def close(self) -> None:
        for ref in list(self.refs):
            self.ray.cancel(ref, force=True)
        self.refs, self.since = {}, {}
        self.ray.kill(self.channel)
