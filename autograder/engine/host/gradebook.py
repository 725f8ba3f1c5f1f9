"""Scores into nbgrader's ``gradebook.db``, through nbgrader's own API.

nbgrader stays the system of record: after ``autograder grade`` the course's gradebook
holds each submission with the automatic score of every grade cell, exactly the rows
``nbgrader autograde`` would have written, so ``nbgrader formgrader`` (manual grading of
the written answers), ``generate_feedback`` and ``export`` work unchanged. When the
gradebook does not know the assignment yet, it is created from the manifest's copy of
the rows ``generate_assignment`` made. A batch is written by one thread of one process,
as its submissions are graded, in one transaction committed at the end; each submission
in a savepoint of its own, so one whose rows cannot be written is rolled back alone and
reported (:attr:`GradebookWriter.failed`), and the batch goes on.
"""

from __future__ import annotations

import contextlib
import logging
import warnings
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path

from ...errors import CourseError
from .gradebook_cells import CREATE, agree, plan
from .manifest import Manifest

__all__ = ["GradebookWriter", "open_gradebook", "write_gradebook", "check_gradebook"]

log = logging.getLogger("autograder.engine")


def _alembic_head() -> str:
    """The schema version ``nbgrader`` stamps on a new gradebook (it asks the ``alembic``
    command in a subprocess; the same scripts answer in-process)."""
    import nbgrader.api
    from alembic.config import Config
    from alembic.script import ScriptDirectory

    config = Config()
    config.set_main_option("script_location", str(Path(nbgrader.api.__file__).parent / "alembic"))
    return ScriptDirectory.from_config(config).get_current_head()


def open_gradebook(path: Path):
    """nbgrader's ``Gradebook`` on ``path``; a new file gets nbgrader's own schema first."""
    from nbgrader.api import Base, Gradebook
    from sqlalchemy import create_engine, inspect, text

    url = f"sqlite:///{path}"
    engine = create_engine(url)
    try:
        if not inspect(engine).get_table_names():
            Base.metadata.create_all(bind=engine)
            with engine.begin() as conn:
                conn.execute(text("CREATE TABLE alembic_version (version_num VARCHAR(32) NOT NULL)"))
                conn.execute(text("INSERT INTO alembic_version (version_num) VALUES (:v)"),
                             {"v": _alembic_head()})
    finally:
        engine.dispose()
    gb = Gradebook(url)
    gb.db.remove()  # nbgrader's own connection goes; the next ones are made as below
    gb.engine.dispose()
    _sqlite_transactions(gb.engine)
    return gb


def _sqlite_transactions(engine) -> None:
    """pysqlite begins a transaction only before it writes, so a SAVEPOINT after a
    commit is a transaction of its own, which RELEASE commits (one submission's rows
    would then outlive an aborted batch). SQLAlchemy's recipe for savepoints on SQLite:
    the driver leaves transactions alone and every SQLAlchemy transaction is SQLite's."""
    from sqlalchemy import event

    @event.listens_for(engine, "connect")
    def _connect(dbapi_connection, _record) -> None:
        dbapi_connection.isolation_level = None

    @event.listens_for(engine, "begin")
    def _begin(connection) -> None:
        connection.exec_driver_sql("BEGIN")


@contextlib.contextmanager
def _savepoint(gb) -> Iterator[None]:
    """One submission's rows: kept when the block ends, rolled back alone when it raises.
    nbgrader's API rolls the whole session back on a database error before raising; in
    here that rollback only marks the failure, and the savepoint is what is undone."""
    nested = gb.db.begin_nested()
    gb.db.rollback = lambda: None
    try:
        yield
    except BaseException:
        nested.rollback()
        raise
    else:
        nested.commit()
    finally:
        del gb.db.rollback


@contextlib.contextmanager
def _deferred_commits(gb) -> Iterator[Callable[[], None]]:
    """nbgrader's API commits after every call, an fsync each (hundreds for one assignment):
    inside the block they only flush, and the block commits when it calls what it gets.
    An error rolls back to the last of those commits."""
    commit = gb.db.commit
    gb.db.commit = gb.db.flush
    try:
        yield commit
    except BaseException:
        gb.db.rollback()
        raise
    finally:
        del gb.db.commit


class GradebookWriter:
    """Writes a batch into ``gradebook.db`` from one thread of its own, started while the
    workers grade: each submission is recorded as it arrives, so the batch does not end
    waiting for the database.

    ``add(graded)`` hands one graded submission over; ``drain()`` waits until every one
    handed over is written (or in :attr:`failed`); ``close()`` commits the batch and
    raises whatever went wrong outside one submission; ``abort()`` rolls it back: the
    gradebook gets the whole batch or none of it (see :func:`_deferred_commits`).
    :attr:`failed` maps (student, assignment) to why that submission's rows were not
    written (each is rolled back alone, see :func:`_savepoint`).
    """

    _COMMIT, _ABORT = object(), object()

    def __init__(self, path: Path, manifests: dict[str, Manifest]) -> None:
        import queue
        import threading

        self.path, self.manifests = path, manifests
        self._inbox: queue.Queue = queue.Queue()
        self._error: BaseException | None = None
        self.written = 0
        self.failed: dict[tuple[str, str], str] = {}
        self._thread = threading.Thread(target=self._run, name="gradebook", daemon=True)

    def start(self) -> None:
        self._thread.start()

    def _run(self) -> None:
        try:
            with open_gradebook(self.path) as gb, warnings.catch_warnings():
                # nbgrader's add_submission builds rows before adding them: SQLAlchemy's
                # autoflush warnings about it are nbgrader's, and harmless
                warnings.simplefilter("ignore")
                with _deferred_commits(gb) as commit:
                    for manifest in self.manifests.values():
                        agree(gb, manifest)
                    commit()
                    self._batch(gb, commit)
        except BaseException as err:  # handed to close(), in the caller's thread
            self._error = err

    def _batch(self, gb, commit: Callable[[], None]) -> None:
        while (item := self._inbox.get()) not in (self._COMMIT, self._ABORT):
            try:
                self._one(gb, item)
            finally:
                self._inbox.task_done()
        self._inbox.task_done()
        if item is self._COMMIT:
            commit()
        else:
            gb.db.rollback()

    def _one(self, gb, graded) -> None:
        """One submission's rows in a savepoint: a failure costs that submission alone."""
        key = (graded.task.student, graded.task.assignment)
        try:
            with _savepoint(gb):
                _record(gb, graded, self.manifests[graded.task.assignment])
        except Exception as err:  # logged, and reported in that submission's row
            log.exception("gradebook: %s/%s not written", *key)
            self.failed[key] = f"{type(err).__name__}: {str(err)[:200]}"
        else:
            self.written += 1

    def add(self, graded) -> None:
        """Record ``graded`` (a ``pool.Graded``) unless it could not be run."""
        if graded is not None and graded.notebook is not None and not graded.crashed:
            self._inbox.put(graded)

    def record(self, graded: Iterable) -> None:
        for g in graded:
            self.add(g)

    def drain(self) -> dict[tuple[str, str], str]:
        """Wait until everything added so far is written; returns :attr:`failed`. Raises
        what stopped the writer's thread, if anything did."""
        if self._thread.ident is None:
            self.start()
        while self._thread.is_alive() and self._inbox.unfinished_tasks:
            self._thread.join(timeout=0.05)
        if self._error is not None:
            raise self._error
        return dict(self.failed)

    def close(self) -> int:
        """Commit everything added; raise what went wrong in the writer's thread."""
        return self._finish(self._COMMIT)

    def abort(self) -> None:
        """Write nothing of this batch (the grading around it failed)."""
        if self._thread.ident is not None:  # never started: the gradebook is not touched
            self._finish(self._ABORT)

    def _finish(self, last: object) -> int:
        if self._thread.ident is None:  # never started: do it all now
            self.start()
        self._inbox.put(last)
        self._thread.join()
        if self._error is not None:
            raise self._error
        if last is self._COMMIT:
            log.info("gradebook: %d submission(s) written to %s", self.written, self.path)
        return self.written


def check_gradebook(path: Path, manifests: dict[str, Manifest]) -> dict[str, str]:
    """What the writer will do to each assignment's rows in ``path`` (see
    :func:`.gradebook_cells.plan`), or the :class:`CourseError` it would raise; read
    before any student code runs. No file is made, and no assignment's rows change
    (nbgrader's ``Gradebook`` records its course id when it opens a file)."""
    from sqlalchemy.exc import DatabaseError

    if not path.is_file():
        return {a: CREATE for a in manifests}
    try:
        with open_gradebook(path) as gb, warnings.catch_warnings():
            warnings.simplefilter("ignore")
            try:
                return {a: plan(gb, manifest) for a, manifest in manifests.items()}
            finally:
                gb.db.rollback()
    except DatabaseError as err:
        raise CourseError(f"{path} is not a gradebook nbgrader can read "
                          f"({type(err.orig).__name__}): move it aside and grade again "
                          "(a new one is made)") from None


def write_gradebook(path: Path, graded: Iterable, manifests: dict[str, Manifest]) -> int:
    """Record every graded submission (``pool.Graded`` with a notebook) in ``path``.

    Submissions that could not be run (a broken file) are not recorded, as
    ``nbgrader autograde`` records none.
    """
    writer = GradebookWriter(path, manifests)
    writer.start()
    writer.record(graded)
    return writer.close()


def _record(gb, g, manifest: Manifest) -> None:
    a, student = g.task.assignment, g.task.student
    gb.update_or_create_student(student)
    timestamp = g.timestamp  # read and checked by the pipeline (screening.ReadTimestamp)
    submission = gb.update_or_create_submission(
        a, student, **({"timestamp": timestamp} if timestamp else {}))
    # the submission's own rows, through its relationships: one query for all of them
    # (a find_grade per cell costs a query and a flush each)
    notebook = next(nb for nb in submission.notebooks if nb.name == a)
    grades = {grade.name: grade for grade in notebook.grades}
    for cell in g.cells:
        grade = grades[cell.grade_id]
        grade.auto_score = cell.score
        grade.needs_manual_grade = grade.manual_score is not None or cell.score is None
    comments = {comment.name: comment for comment in notebook.comments}
    for name in (row["name"] for row in manifest.gradebook["solution_cells"]):
        comments[name].auto_comment = "No response." if name in g.unanswered else None
