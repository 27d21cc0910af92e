#!/usr/bin/env python3
"""The floors kept by the compiler, shown: an include that leaves a component's floor fails to compile.

Each component sees only its own headers and the public headers of what it links (CMakeLists.txt,
kobo_library). This check compiles one-line probes as if they were sources of a component: with
the exact command the build compiles a real source of that component with (compile_commands.json
of BUILD_DIR: its include roots, definitions and warnings), the probe in place of the source.

- REFUSED: an upward or sideways include (projection including command/state.h) and a private
  header of another component (query-api including events/memory_log.h). Each must fail to
  compile because the header is not found; one that compiles, or fails for another reason, fails
  the check.
- SEEN: what the component may include (its own private headers, a public header of what it
  links). Each must compile, so the check cannot pass on a command that compiles nothing.

An include by a relative path (`../command/state.h`) finds the file whatever the include roots
say; tools/check_layering.py, the second line, refuses those.

--self-test configures two copies of the source tree into scratch build dirs, each with the
enforcement taken out, and expects the check to fail on each: (1) common/ exporting the source
root to every component, as before the floors; (2) each component's private headers public.
Usage: check_layering_compiler.py [--self-test] BUILD_DIR. Exit 1 with one line per failure.
"""

import argparse
import json
import os
import re
import shlex
import shutil
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

# (component, header it includes). The first three of REFUSED are the ones the floors exist for.
REFUSED = [
    ("projection", "command/state.h"),  # the read side includes the writer: sideways
    ("events", "projection/views.h"),  # upward
    ("common", "events/event.h"),  # upward from the ground floor
    ("audit", "command/ledger.h"),  # audit never depends on the writer
    ("projection", "tests/support/http_client.h"),  # a component includes a test helper
    ("query-api", "events/memory_log.h"),  # private header of a component it links
    ("audit", "projection/view_keys.h"),  # private header of a component it links
    ("app", "query-api/answer.h"),  # private header of a component it links
]
SEEN = [
    ("projection", "events/event.h"),  # public header of a component it links
    ("projection", "projection/view_keys.h"),  # its own private header
    ("query-api", "events/event_log.h"),  # public header reached through its links
    ("app", "query-api/api.h"),
]
NOT_FOUND = re.compile(r"No such file or directory|file not found")


def compile_command(build, component):
    """The argv the build compiles a source of `component` with, and the path of that source: one
    of its folder, or in a tree of unity batches (CMakeLists.txt, kobo_unity) one of its batches."""
    with open(os.path.join(build, "compile_commands.json"), encoding="utf-8") as f:
        entries = json.load(f)
    folder = os.path.join(os.path.realpath(ROOT), component) + os.sep
    batches = os.path.join(os.path.realpath(build), component) + os.sep
    for entry in sorted(entries, key=lambda e: e["file"]):
        path = os.path.realpath(os.path.join(entry["directory"], entry["file"]))
        ours = path.startswith(folder) and path.endswith(".cc")
        batch = path.startswith(batches) and os.sep + "Unity" + os.sep in path and path.endswith(".cxx")
        if ours or batch:
            argv = entry["arguments"] if "arguments" in entry else shlex.split(entry["command"])
            return entry["directory"], argv, entry["file"]
    return None


def probe(build, component, header, scratch):
    """(compiled, diagnostics) for a source of `component` that includes `header`."""
    found = compile_command(build, component)
    if found is None:
        return None, f"no compile command of a {component}/ source in {build}/compile_commands.json"
    directory, argv, source = found
    name = f"{component}_{header}".replace("/", "_").replace(".", "_")
    path = os.path.join(scratch, name + ".cc")
    with open(path, "w", encoding="utf-8") as f:
        f.write(f'#include "{header}"\n')
    out, skip = [], False
    for arg in argv:
        if skip:
            skip = False
        elif arg in ("-o", "-MF", "-MT", "-MQ"):
            skip = True
        elif arg in ("-MD", "-MMD", "-c"):
            pass
        elif arg == source:
            out.append(path)
        else:
            out.append(arg)
    if path not in out:
        return None, f"the compile command of {source} does not name it"
    result = subprocess.run(out + ["-fsyntax-only"], cwd=directory, capture_output=True, text=True)
    return result.returncode == 0, result.stderr


def check(build, only=None):
    failures = []
    with tempfile.TemporaryDirectory() as scratch:
        for component, header in REFUSED:
            if only and f"{component}:{header}" != only:
                continue
            compiled, diagnostics = probe(build, component, header, scratch)
            if compiled is None:
                failures.append(f"{component}: {diagnostics}")
            elif compiled:
                failures.append(f"{component}: #include \"{header}\" compiled; the compiler must refuse it")
            elif header not in diagnostics or not NOT_FOUND.search(diagnostics):
                failures.append(f"{component}: #include \"{header}\" failed, but not as a header it cannot "
                                f"find:\n{diagnostics}")
        for component, header in SEEN:
            if only:
                continue
            compiled, diagnostics = probe(build, component, header, scratch)
            if not compiled:
                failures.append(f"{component}: #include \"{header}\" did not compile; it must:\n{diagnostics}")
    return failures


def copy_tree(to):
    """The source tree as it is (uncommitted changes too), without build dirs, into `to`."""
    listed = subprocess.run(["git", "ls-files", "--cached", "--others", "--exclude-standard"], cwd=ROOT,
                            capture_output=True, text=True)
    if listed.returncode != 0:  # not a git checkout: everything but the build dirs
        shutil.copytree(ROOT, to, symlinks=True, ignore=lambda d, names: [
            n for n in names if d == ROOT and (n.startswith("build") or n in (".git", "data"))])
        return
    for file in listed.stdout.splitlines():
        if os.path.isfile(os.path.join(ROOT, file)):
            os.makedirs(os.path.dirname(os.path.join(to, file)), exist_ok=True)
            shutil.copy2(os.path.join(ROOT, file), os.path.join(to, file))


def self_test(build, cmake):
    """The check fails on a tree without the enforcement: each mutation configured afresh."""
    cache = {}
    with open(os.path.join(build, "CMakeCache.txt"), encoding="utf-8") as f:
        for line in f:
            match = re.match(r"^(CMAKE_CXX_COMPILER|CMAKE_GENERATOR):[A-Z]+=(.*)$", line.strip())
            if match:
                cache[match.group(1)] = match.group(2)
    mutations = [
        ("common exports the source root", "common/CMakeLists.txt", None,
         "\ntarget_include_directories(kobo_common PUBLIC ${PROJECT_SOURCE_DIR})\n",
         "projection:command/state.h"),
        ("private headers public", "CMakeLists.txt",
         "target_include_directories(${lib} PUBLIC ${root}/public PRIVATE ${root}/private)",
         "target_include_directories(${lib} PUBLIC ${root}/public ${root}/private)",
         "query-api:events/memory_log.h"),
    ]
    failures = []
    for name, relative, old, new, expect in mutations:
        with tempfile.TemporaryDirectory() as tmp:
            tree, mutated_build = os.path.join(tmp, "src"), os.path.join(tmp, "build")
            copy_tree(tree)
            path = os.path.join(tree, relative)
            text = open(path, encoding="utf-8").read()
            if old is None:
                text += new
            elif old in text:
                text = text.replace(old, new, 1)
            else:
                failures.append(f"{name}: {relative} has no {old!r}")
                continue
            with open(path, "w", encoding="utf-8") as f:
                f.write(text)
            # Configured, never built: no precompiled header is there for a compile command to load.
            configure = [cmake, "-S", tree, "-B", mutated_build, "-DCMAKE_BUILD_TYPE=RelWithDebInfo", "-DKOBO_PCH=OFF"]
            configure += [f"-D{k}={v}" for k, v in cache.items() if k == "CMAKE_CXX_COMPILER"]
            configure += ["-G", cache["CMAKE_GENERATOR"]] if "CMAKE_GENERATOR" in cache else []
            result = subprocess.run(configure, capture_output=True, text=True)
            if result.returncode != 0:
                failures.append(f"{name}: configure failed\n{result.stdout}{result.stderr}")
                continue
            # The probe that the mutation must let through, alone (the others compile whole headers).
            result = subprocess.run([sys.executable, os.path.abspath(__file__), "--tree", tree, "--only", expect,
                                     mutated_build], capture_output=True, text=True)
            component, header = expect.split(":")
            if result.returncode != 1 or f'{component}: #include "{header}" compiled' not in result.stdout:
                failures.append(f"{name}: the check exited {result.returncode}, expected 1 with {expect} "
                                f"compiled\n{result.stdout}{result.stderr}")
    return failures


def main():
    global ROOT
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("build", help="a configured build dir (its compile_commands.json)")
    parser.add_argument("--self-test", action="store_true")
    parser.add_argument("--cmake", default="cmake", help="the cmake the self-test configures with")
    parser.add_argument("--tree", help=argparse.SUPPRESS)  # the source tree BUILD_DIR was configured from
    parser.add_argument("--only", help=argparse.SUPPRESS)  # COMPONENT:HEADER, one of REFUSED
    args = parser.parse_args()
    if args.tree:
        ROOT = os.path.abspath(args.tree)
    build = os.path.abspath(args.build)
    failures = self_test(build, args.cmake) if args.self_test else check(build, args.only)
    for failure in failures:
        print(failure)
    if failures:
        return 1
    print("layering_compiler self-test: each tree without the enforcement fails the check" if args.self_test else
          f"layering_compiler: {len(REFUSED)} includes across floors refused by the compiler, "
          f"{len(SEEN)} allowed ones compiled")
    return 0


if __name__ == "__main__":
    sys.exit(main())
