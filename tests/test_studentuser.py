"""Without namespaces, a root grader runs each child as a separate user (any deployment:
``autograder grade`` as much as Gradescope's bundle).

The ids and their bookkeeping are tested here in the test process (as root); the
children themselves in a subprocess on a Python every user may read
(``gradescope_env.readable_python``), with namespaces turned off.
"""

from __future__ import annotations

import json
import logging
import os
import signal
import subprocess
import time
from pathlib import Path

import pytest
from gradescope_env import NOBODY, readable_python, require_root, student_base

from autograder.engine.child import studentuser
from autograder.engine.child.studentuser import StudentUser, Users, readable_by
from autograder.engine.host import pool
from autograder.settings import STUDENT_SLOTS, STUDENT_UID

REPO = Path(__file__).resolve().parent.parent


@pytest.fixture(scope="module")
def base(tmp_path_factory):
    with student_base(tmp_path_factory, "studentuser-") as folder:
        yield folder


def _in_fork(job) -> str:
    """Run ``job()`` in a fork; its returned text comes back through a pipe."""
    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:
        os.close(r)
        try:
            os.write(w, str(job()).encode())
        finally:
            os._exit(0)
    os.close(w)
    with os.fdopen(r) as fh:
        text = fh.read()
    os.waitpid(pid, 0)
    return text


def _sleeper(user: StudentUser) -> int:
    pid = os.fork()
    if pid == 0:
        os.setresgid(user.gid, user.gid, user.gid)
        os.setresuid(user.uid, user.uid, user.uid)
        os.execv("/bin/sleep", ["sleep", "30"])
    return pid


def test_readable_by_follows_the_mode_bits_of_every_folder_on_the_way(base):
    user = StudentUser(STUDENT_UID, STUDENT_UID)
    (base / "open").mkdir(mode=0o755)
    (base / "closed").mkdir(mode=0o700)
    for folder in ("open", "closed"):
        (base / folder / "public").write_text("x")
        (base / folder / "public").chmod(0o644)
    (base / "open" / "secret").write_text("x")
    (base / "open" / "secret").chmod(0o600)
    assert readable_by(base / "open" / "public", user)
    assert not readable_by(base / "open" / "secret", user)
    assert not readable_by(base / "closed" / "public", user)  # the folder stops it
    os.chown(base / "open" / "secret", user.uid, user.gid)
    assert readable_by(base / "open" / "secret", user)  # its owner's bits


def test_ids_are_found_only_for_a_root_grader():
    require_root()
    users, why = Users.find()
    assert users is not None and why == ""
    uids = {u.uid for u in users.candidates}
    named = uids - set(range(STUDENT_UID, STUDENT_UID + STUDENT_SLOTS))
    assert len(named) <= 1 and 0 not in uids  # at most setup.sh's account besides the range
    text = _in_fork(lambda: (os.setresuid(NOBODY, NOBODY, NOBODY), Users.find())[1])
    assert text == "(None, 'the grader does not run as root')"


def test_ids_another_account_or_group_claims_are_never_used(monkeypatch):
    require_root()
    claimed = {STUDENT_UID: "someone", STUDENT_UID + 1: None, STUDENT_UID + 2: "somegroup"}

    def lookup(kind):
        def find(number):
            name = claimed.get(number)
            if name is None or (kind == "group") != (name == "somegroup"):
                raise KeyError(number)
            return (name,)
        return find

    monkeypatch.setattr(studentuser.pwd, "getpwuid", lookup("user"))
    monkeypatch.setattr(studentuser.grp, "getgrgid", lookup("group"))
    users, _ = Users.find()
    uids = {u.uid for u in users.candidates}
    assert STUDENT_UID not in uids and STUDENT_UID + 2 not in uids
    assert STUDENT_UID + 1 in uids


def test_an_id_in_use_is_not_handed_out_until_its_processes_are_ended(base):
    users, _ = Users.find()
    first = users.take()
    sleeper = _sleeper(first)
    try:
        time.sleep(0.2)
        second = users.take()
        assert second is not None and second != first  # a process runs under it
        users.hold(second, os.getpid())  # held while its reaper (here: us) lives
        assert users.take() not in (first, second)
        assert studentuser.end_processes(first)  # a zombie left for us to reap counts as gone
        assert os.waitpid(sleeper, 0)[1] & 0x7F == signal.SIGKILL
        assert users.take() == first
    finally:
        studentuser.end_processes(first)


def test_two_graders_never_hand_out_the_same_id_at_once():
    """Two zygotes on one machine (two graders, or Gradescope runs side by side) each
    scan for a free id before either child has become it: without the locks, both took
    the first one, so one student could signal or read the other's processes (seen as a
    flaky test_gradescope_hostile: the killer's and the quiet tricks' children shared an
    id)."""
    require_root()
    r, w = os.pipe()
    go_r, go_w = os.pipe()
    pid = os.fork()
    if pid == 0:  # the other grader: takes an id and holds it until told
        try:
            other, _ = Users.find()
            taken = other.take()
            os.write(w, str(taken.uid if taken else -1).encode())
            os.read(go_r, 1)
        finally:
            os._exit(0)
    try:
        theirs = int(os.read(r, 32))
        users, _ = Users.find()
        mine = users.take()
        assert theirs >= 0 and mine is not None and mine.uid != theirs
    finally:
        os.write(go_w, b"x")
        os.waitpid(pid, 0)
    assert users.take() is not None  # the other grader's lock went with it


def test_what_the_student_left_in_a_shared_folder_goes_and_nothing_else(base):
    user = StudentUser(STUDENT_UID + STUDENT_SLOTS - 1, STUDENT_UID + STUDENT_SLOTS - 1)
    shared, outside = base / "shared", base / "outside"
    for folder in (shared, outside):
        folder.mkdir(mode=0o1777)
    (outside / "kept").write_text("kept")
    (shared / "theirs").write_text("another user's")
    (shared / "mine" / "deep").mkdir(parents=True)
    (shared / "mine" / "deep" / "f").write_text("x")
    (shared / "mine" / "out").symlink_to(outside)
    (shared / "link").symlink_to(outside / "kept")
    for path in (shared / "mine", shared / "mine" / "deep", shared / "mine" / "deep" / "f",
                 shared / "mine" / "out", shared / "link"):
        os.chown(path, user.uid, user.gid, follow_symlinks=False)
    (shared / "mine" / "deep").chmod(0)
    (shared / "mine").chmod(0)
    assert studentuser.remove_owned(user, (str(shared),)) == []
    assert sorted(p.name for p in shared.iterdir()) == ["theirs"]
    assert (outside / "kept").read_text() == "kept"


def test_becoming_the_student_leaves_no_way_back(base):
    user = StudentUser(STUDENT_UID + 1, STUDENT_UID + 1)

    def job():
        studentuser.become(user)
        status = Path("/proc/self/status").read_text()
        fields = {k: v.split() for k, _, v in (line.partition(":") for line in status.splitlines())}
        try:
            os.setuid(0)
            back = "became root again"
        except PermissionError:
            back = "refused"
        import ctypes
        dumpable = ctypes.CDLL(None).prctl(3, 0, 0, 0, 0)  # PR_GET_DUMPABLE
        return json.dumps({"ids": [os.getresuid(), os.getresgid(), os.getgroups()],
                           "caps": [fields["CapEff"], fields["CapPrm"], fields["CapBnd"]],
                           "nnp": fields["NoNewPrivs"], "back": back, "dumpable": dumpable})

    got = json.loads(_in_fork(job))
    u = user.uid
    assert got["ids"] == [[u, u, u], [u, u, u], []]
    assert got["caps"] == [["0000000000000000"]] * 3
    assert got["nnp"] == ["1"] and got["back"] == "refused" and got["dumpable"] == 0


def test_the_protection_is_logged_once_per_batch(caplog):
    said: set[str] = set()
    with caplog.at_level(logging.INFO, logger="autograder.engine"):
        for _worker in range(3):
            pool._say_protection("separate-user", "each child runs as a separate user", said)
    assert [r.message for r in caplog.records] == [
        "sandbox (separate-user): each child runs as a separate user"]


CHILDREN = r'''
import json, os, signal, sys, time
from autograder.engine.host.zygote_link import Zygote
from autograder.engine.child.sandbox import SandboxLimits

secret, host, target = sys.argv[1], int(sys.argv[2]), sys.argv[3]
z = Zygote(figures=False, warm=False, tokenizer=False, isolate=False)
a, b = z.spawn(SandboxLimits()), z.spawn(SandboxLimits())
probe = f"""
import json, os, signal, subprocess, sys
out = {{"uid": os.getuid(), "home": os.getcwd(), "home_owner": os.stat(".").st_uid,
       "home_mode": oct(os.stat(".").st_mode & 0o777)}}
try:
    open({secret!r}).read()
    out["secret"] = "read"
except OSError as e:
    out["secret"] = e.errno
try:
    os.kill({host}, 0)  # permission to signal, without a signal
    out["signal"] = "sent"
except OSError as e:
    out["signal"] = e.errno
out["writable_path"] = [p for p in sys.path if p and os.path.isdir(p) and os.access(p, os.W_OK)]
open("/tmp/left-by-" + str(os.getuid()), "w").write("x")
subprocess.Popen(["sleep", "60"], start_new_session=True)
print(json.dumps(out))
"""
swap = f"""
import os
home = os.getcwd()
os.rename(home, home + ".moved")
os.symlink({target!r}, home)  # hoping the grader's clean-up follows it
"""
replies = [json.loads("".join(o.get("text", "") for o in c.run(probe, seconds=30)["outputs"]))
           for c in (a, b)]
b.run(swap, seconds=30)
print(json.dumps({"isolation": z.isolation.protection, "replies": replies}))
for c in (a, b):
    c.close()
z.close()
'''


def test_children_without_namespaces_run_as_separate_users(base):
    """Two children at once: two uids, neither root; a root-only file and the grader are
    out of reach; nothing on sys.path is theirs to write (a planted module would run
    in the next child); their homes, files in /tmp and detached processes go with them.
    A home swapped for a link leads the root clean-up nowhere."""
    python = readable_python(base)
    secret = base / "secret"
    secret.write_text("salt")
    secret.chmod(0o600)
    target = base / "roots-own"
    (target / "sub").mkdir(parents=True)
    (target / "sub").chmod(0o755)
    done = subprocess.run([str(python), "-c", CHILDREN, str(secret), str(os.getpid()),
                           str(target)],
                          capture_output=True, text=True, timeout=120, cwd=base,
                          env={**os.environ, "PYTHONPATH": str(REPO)})
    assert done.returncode == 0, done.stderr
    got = json.loads(done.stdout.strip().splitlines()[-1])
    assert got["isolation"] == "separate-user"
    uids = [r["uid"] for r in got["replies"]]
    assert len(set(uids)) == 2 and all(STUDENT_UID <= u < STUDENT_UID + STUDENT_SLOTS
                                       for u in uids)
    for reply in got["replies"]:
        assert reply["secret"] == 13 and reply["signal"] == 1  # EACCES, EPERM
        assert reply["writable_path"] == []
        assert reply["home_owner"] == reply["uid"] and reply["home_mode"] == "0o700"
        assert not Path(reply["home"]).exists() and not Path(reply["home"]).is_symlink()
        assert not Path(reply["home"] + ".moved").exists()
        assert not Path(f"/tmp/left-by-{reply['uid']}").exists()
    assert oct((target / "sub").stat().st_mode & 0o777) == "0o755"
    users = Users(list(map(lambda u: StudentUser(u, u), uids)))
    assert users.take() is not None and not set(uids) & studentuser._running_uids()
