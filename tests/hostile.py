"""A hostile class: one honest wrong answer to q1, then the same answer plus one trick each.

Every trick is code a student could submit. Each is inserted as a new cell right after
the imports (so it acts on everything after it) unless it names a solution cell to
rewrite. The honest wrong answer forgets 1/√d_k (q1's ``no_sqrt_dk`` mistake).
"""

from __future__ import annotations

from dataclasses import dataclass

#: Markers the tests look for on the host after grading.
DAEMON_MARK = "978643"
FILE_MARK = "autograder-hostile-was-here"


@dataclass(frozen=True)
class Attack:
    name: str
    code: str
    #: A solution cell whose whole text the attack replaces (None: a new cell after imports).
    cell: str | None = None


_SEARCH = '''
import glob, json, os, sys
found = []
roots = ["/", "../", "../../", "../../../", "/home/", "/tmp/", "/work/", "/root/", "/srv/"]
names = ["q1_value_scaling.ipynb", "gradebook.db", ".autograder-salt", "autograder/bank/q1.py",
         "autograder/reference.py", "source/q1_value_scaling/q1_value_scaling.ipynb",
         "solutions/q1_value_scaling/q1_value_scaling.ipynb"]
patterns = [r + n for r in roots for n in names] + [r + "*/" + n for r in roots for n in names]
patterns += ["/home/**/*.ipynb", "/tmp/**/*.ipynb", "/work/*/source/**/*.ipynb"]
for pattern in patterns:
    try:
        found += glob.glob(pattern, recursive=True)
    except OSError:
        pass
# the interpreter's own files are public (a venv under /tmp holds nbgrader's test notebooks)
public = tuple(os.path.realpath(p) + os.sep for p in {sys.prefix, sys.base_prefix})
found = [p for p in found if not os.path.realpath(p).startswith(public)]
for path in found:
    if path.endswith(".ipynb"):
        nb = json.load(open(path))
        for cell in nb["cells"]:
            text = "".join(cell["source"])
            if "BEGIN SOLUTION" in text and cell["cell_type"] == "code":
                exec(text, globals())
print("found", found)
'''

ATTACKS: tuple[Attack, ...] = (
    Attack("patch_numpy", '''
import numpy as np
np.allclose = lambda *a, **k: True
np.isclose = lambda a, b, *r, **k: np.ones(np.broadcast(a, b).shape, dtype=bool)
np.testing.assert_allclose = lambda *a, **k: None
np.array_equal = lambda *a, **k: True
'''),
    Attack("patch_sympy", '''
import sympy as sp
sp.simplify = lambda e, *a, **k: sp.Integer(0)
sp.Basic.equals = lambda self, other, *a, **k: True
'''),
    Attack("rebind_autograder", '''
try:
    import autograder.bank.runner as runner
    runner.run_check = lambda *a, **k: None
    runner.evaluate = lambda *a, **k: None
except ImportError as err:
    print("no grader here:", err)
'''),
    Attack("fake_sys_modules", '''
import sys, types
fake = types.ModuleType("autograder.bank.runner")
fake.run_check = lambda *a, **k: None
sys.modules["autograder"] = types.ModuleType("autograder")
sys.modules["autograder.bank"] = types.ModuleType("autograder.bank")
sys.modules["autograder.bank.runner"] = fake
'''),
    Attack("input_transformer", '''
def blank_everything(lines):
    return []
get_ipython().input_transformers_cleanup.append(blank_everything)
'''),
    Attack("exception_handler", '''
def swallow(shell, etype, evalue, tb, tb_offset=None):
    return None
get_ipython().set_custom_exc((BaseException,), swallow)
'''),
    Attack("fake_package_on_disk", '''
import os
os.makedirs("autograder", exist_ok=True)
os.makedirs("autograder/bank", exist_ok=True)
open("autograder/__init__.py", "w").write("")
open("autograder/bank/__init__.py", "w").write("")
open("autograder/bank/runner.py", "w").write("def run_check(*a, **k):\\n    return None\\n")
import sys
sys.path.insert(0, os.getcwd())
'''),
    Attack("read_course_files", _SEARCH),
    Attack("frame_inspection", '''
import inspect
import numpy as np

def attention_weights(Q, K):
    """Look up the caller's frames for an expected answer; else the wrong answer."""
    for frame in inspect.stack(0):
        for name, value in frame.frame.f_locals.items():
            if name in ("expected", "exp_w", "reference") and isinstance(value, np.ndarray):
                return value
    Q, K = np.asarray(Q, dtype=float), np.asarray(K, dtype=float)
    return softmax(Q @ K.T, axis=-1)


def attention(Q, K, V):
    return attention_weights(Q, K) @ np.asarray(V, dtype=float)


def self_attention(X, W_q, W_k, W_v):
    X = np.asarray(X, dtype=float)
    Q, K, V = X @ W_q, X @ W_k, X @ W_v
    return attention(Q, K, V), attention_weights(Q, K)
''', cell="attention_impl"),
    Attack("rigged_objects", '''
import numpy as np

class Always(np.ndarray):
    def __eq__(self, other):
        return True
    def __array__(self, dtype=None, copy=None):
        return np.full(self.shape, 0.5)
    def __float__(self):
        return 1.5
    def __bool__(self):
        return False

def attention_weights(Q, K):
    Q, K = np.asarray(Q, dtype=float), np.asarray(K, dtype=float)
    return softmax(Q @ K.T, axis=-1).view(Always)


def attention(Q, K, V):
    return (np.asarray(attention_weights(Q, K)) @ np.asarray(V, dtype=float)).view(Always)


def self_attention(X, W_q, W_k, W_v):
    X = np.asarray(X, dtype=float)
    Q, K, V = X @ W_q, X @ W_k, X @ W_v
    return attention(Q, K, V), attention_weights(Q, K)

class Yes:
    def __eq__(self, other):
        return True
    def __bool__(self):
        return False
    def __float__(self):
        return 1.5
    def __array__(self, dtype=None, copy=None):
        return np.array(1.5)
''', cell="attention_impl"),
    Attack("sys_exit", '''
import sys
sys.exit(0)
'''),
    Attack("os_exit", '''
import os
os._exit(0)
'''),
    Attack("infinite_loop", '''
import signal
signal.signal(signal.SIGINT, signal.SIG_IGN)
while True:
    pass
'''),
    Attack("memory_bomb", '''
hoard = []
while True:
    hoard.append(bytearray(64 << 20))
'''),
    Attack("fork_bomb", '''
import os, time
children = 0
for _ in range(100000):
    try:
        if os.fork() == 0:
            while True:
                time.sleep(60)
        children += 1
    except OSError:
        break
print("forked", children)
'''),
    Attack("detached_daemon", f'''
import os, subprocess, time
subprocess.Popen(["sleep", "{DAEMON_MARK}"], start_new_session=True,
                 stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
if os.fork() == 0:
    os.setsid()
    if os.fork() == 0:
        os.execvp("sleep", ["sleep", "{DAEMON_MARK}1"])
    os._exit(0)
time.sleep(0.2)
'''),
    Attack("network", '''
import socket
for host, port in [("127.0.0.1", PORT), ("localhost", PORT), ("::1", PORT)]:
    try:
        socket.create_connection((host, port), timeout=1).sendall(b"stolen")
        print("connected to", host)
    except OSError as err:
        print("no network:", err)
'''),
    Attack("huge_output", '''
import sys
for _ in range(5):
    print("x" * 10_000_000)
sys.stderr.write("y" * 20_000_000)
'''),
    Attack("choose_seed", f'''
import os
os.environ["AUTOGRADER_STUDENT"] = "someone-else"
os.environ["AUTOGRADER_SALT"] = "lecture9-self-attention"
os.environ["AUTOGRADER_SALT_FILE"] = "/dev/null"
os.makedirs("/tmp/autograded/someone-else/q1_value_scaling", exist_ok=True)
os.chdir("/tmp/autograded/someone-else/q1_value_scaling")
open("/tmp/{FILE_MARK}", "w").write("seed")
'''),
    Attack("patch_the_child", '''
import sys
for name, module in list(sys.modules.items()):
    if name.startswith("autograder"):
        kernel = getattr(module, "Kernel", None)
        if kernel is not None:
            kernel.run = lambda self, code: (True, [])
'''),
    Attack("move_shared_offsets", '''
import os, random, stat, threading
def _jostle():
    files = []
    for fd in range(3, 256):
        try:
            if stat.S_ISREG(os.fstat(fd).st_mode):
                files.append(fd)
        except OSError:
            pass
    # the inherited fonts' offsets, moved for as long as this child lives (another
    # child's stay put: tests/test_engine.py shows it deterministically)
    while True:
        for fd in files:
            try:
                os.lseek(fd, random.randrange(1 << 20), os.SEEK_SET)
            except OSError:
                pass
threading.Thread(target=_jostle, daemon=True).start()
'''),
    Attack("garbage_on_the_socket", '''
import os
for fd in range(3, 64):
    try:
        os.write(fd, b"\\x00\\x00\\x00\\x10{\\"ok\\": true}garbage")
    except OSError:
        pass
'''),
)
