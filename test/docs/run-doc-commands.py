"""Runs every ```sh block of README.md and docs/*.md as a new user would:
each in a fresh temporary directory that looks like a checkout with a build
(configs/, scripts/, bench/, test/ and build/ linked in), with an empty
compile cache and home, under `bash -e -o pipefail`. A block that needs a
GPU, a file the user brings, or hours (the test command itself, the
benchmarks) carries a marker on the line before its fence:

    <!-- doc-test: skip REASON -->

and is listed as skipped with that reason. Any other block that fails fails
the test, with the file, the line and the output.

usage: run-doc-commands.py REPO_ROOT BUILD_DIR
"""
import os
import re
import subprocess
import sys
import tempfile

repo, build = (os.path.abspath(p) for p in sys.argv[1:3])
docs = [os.path.join(repo, "README.md")] + sorted(
    os.path.join(repo, "docs", f) for f in os.listdir(os.path.join(repo, "docs"))
    if f.endswith(".md"))
SKIP = re.compile(r"<!--\s*doc-test:\s*skip\s+(.*?)\s*-->")

blocks = []  # (file, line, text, skip reason or None)
for path in docs:
    lines = open(path, encoding="utf-8").read().split("\n")
    i = 0
    while i < len(lines):
        if lines[i].strip() == "```sh":
            marker = SKIP.search(lines[i - 1]) if i > 0 else None
            start = i + 1
            j = start
            while j < len(lines) and lines[j].strip() != "```":
                j += 1
            blocks.append((path, start, "\n".join(lines[start:j]),
                           marker.group(1) if marker else None))
            i = j
        i += 1

passed = failed = skipped = 0
for path, line, text, reason in blocks:
    where = f"{os.path.relpath(path, repo)}:{line}"
    if reason is not None:
        skipped += 1
        print(f"SKIP {where}: {reason}")
        continue
    with tempfile.TemporaryDirectory(prefix="ferry-doc-") as work:
        for name in ("configs", "scripts", "bench", "test"):
            os.symlink(os.path.join(repo, name), os.path.join(work, name))
        os.symlink(build, os.path.join(work, "build"))
        env = dict(os.environ, HOME=os.path.join(work, "home"),
                   FERRY_CACHE_DIR=os.path.join(work, "cache"))
        env["PATH"] = os.path.join(build, "bin") + os.pathsep + env["PATH"]
        run = subprocess.run(["bash", "-e", "-o", "pipefail", "-c", text],
                             cwd=work, env=env, capture_output=True, text=True)
    if run.returncode == 0:
        passed += 1
        print(f"PASS {where}")
    else:
        failed += 1
        print(f"FAIL {where} (exit {run.returncode}):\n{text}\n--- output ---\n"
              f"{run.stdout[-3000:]}{run.stderr[-3000:]}")
print(f"doc commands: {passed} passed, {failed} failed, {skipped} skipped")
sys.exit(1 if failed else 0)
