"""A student's notebook run as Jupyter would run it, for the smoke job (.ci/smoke.sh).

``python student_notebook.py WHEEL NOTEBOOK RELEASE FOLDER``: NOTEBOOK (the student's
answers) gets a first cell ``%pip install WHEEL`` (into the running kernel, as the README
tells students) and the release's check cell last, is saved in FOLDER and run by nbclient
on this interpreter's ``python3`` kernel. Prints the check cell's report; exits 1 if the
report has no total.
"""

import sys
from pathlib import Path

import nbformat
from nbclient import NotebookClient

wheel, notebook, release = (Path(a).resolve() for a in sys.argv[1:4])
folder = Path(sys.argv[4])
nb = nbformat.read(notebook, as_version=4)
check = nbformat.read(release, as_version=4).cells[-1]
nb.cells.insert(0, nbformat.v4.new_code_cell(f"%pip install -q {wheel}"))
nb.cells.append(check)
folder.mkdir(parents=True, exist_ok=True)
nbformat.write(nb, folder / notebook.name)
ran = nbformat.read(folder / notebook.name, as_version=4)
NotebookClient(ran, timeout=900, kernel_name="python3", allow_errors=True,
               resources={"metadata": {"path": str(folder)}}).execute()
report = "".join(o.get("text", "") for o in ran.cells[-1].outputs)
print(report)
sys.exit(0 if "总分：" in report else 1)
