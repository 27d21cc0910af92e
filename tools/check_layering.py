#!/usr/bin/env python3
"""The layering of docs/architecture.md section 1, checked: a component includes only the public
headers of what it may depend on.

The compiler keeps the floors first: each component sees only its own headers and the public
headers of what it links (CMakeLists.txt, kobo_library; the `layering_compiler` test shows an
upward include and another component's private header fail to compile). This check is the
second line, and the one that reads the intended graph. It holds three things to each other:

1. ALLOWED below, the intended graph (docs/architecture.md section 1 and each folder's README):
   the components each component may depend on. It is the one table of the rule.
2. The links of each component's CMakeLists.txt (kobo_library's DEPS and PRIVATE_DEPS, or
   target_link_libraries). What a target links, with what those link PUBLIC (CMake's usage
   requirements), is what it can see; it must stay within ALLOWED, so adding `kobo::command` to
   projection's DEPS fails here too. No component links a `kobo::<x>_internal` target: those
   hand a component's private headers to tests, benchmarks and fuzz targets only.
3. Every `#include` of every source file of a component (quoted or angled, relative paths
   resolved) that names a folder of ours must name the component itself or one it can see, and
   in another component only a header its kobo_library lists in PUBLIC_HEADERS.

Harness folders (tests/, bench/, fuzz/) may use what they link; no component may include them.
Usage: check_layering.py [--root DIR] | --self-test. Exit 1 with one line per violation.
"""

import argparse
import os
import re
import shutil
import subprocess
import sys
import tempfile

# What each component may depend on, directly or not. common/ is below everything.
ALLOWED = {
    "common": set(),
    "events": {"common"},
    "command": {"events", "common"},
    "cluster": {"command", "events", "common"},
    "projection": {"events", "common"},
    "webhooks": {"projection", "events", "common"},
    "query-api": {"cluster", "command", "projection", "webhooks", "events", "common"},
    "audit": {"events", "projection", "common"},
    "app": {"query-api", "audit", "webhooks", "cluster", "command", "projection", "events", "common"},
}
HARNESSES = {"tests", "bench", "fuzz"}
SOURCE_SUFFIXES = (".h", ".hpp", ".cc", ".cpp", ".cc.in")

INCLUDE = re.compile(r'^\s*#\s*include\s*([<"])([^>"]+)[>"]', re.M)
COMMAND = re.compile(r"\b(add_library|add_executable|target_link_libraries|kobo_library|kobo_executable)"
                     r"\s*\(([^)]*)\)", re.S)
KOBO_KEYWORDS = ("NAME", "PUBLIC_HEADERS", "SOURCES", "DEPS", "PRIVATE_DEPS")


def kobo_arguments(words):
    """{keyword: [words]} of a kobo_library or kobo_executable call."""
    out, keyword = {k: [] for k in KOBO_KEYWORDS}, None
    for word in words:
        if word in KOBO_KEYWORDS:
            keyword = word
        elif keyword:
            out[keyword].append(word)
    return out


def cmake_targets(root):
    """({target: (folder, {dep_target: visibility})}, {folder: public headers or None}) from the
    components' CMakeLists.txt (None: the folder declares none, so none is checked)."""
    targets, aliases, public = {}, {}, {}
    for folder in ALLOWED:
        path = os.path.join(root, folder, "CMakeLists.txt")
        if not os.path.exists(path):
            continue
        text = re.sub(r"#[^\n]*", "", open(path, encoding="utf-8").read())
        for command, args in COMMAND.findall(text):
            words = args.split()
            if not words:
                continue
            if command in ("kobo_library", "kobo_executable"):
                kobo = kobo_arguments(words)
                name = "kobo_" + kobo["NAME"][0] if command == "kobo_library" else kobo["NAME"][0]
                deps = targets.setdefault(name, (folder, {}))[1]
                deps.update({d: "PUBLIC" for d in kobo["DEPS"] if d.startswith("kobo")})
                deps.update({d: "PRIVATE" for d in kobo["PRIVATE_DEPS"] if d.startswith("kobo")})
                if command == "kobo_library":
                    aliases["kobo::" + kobo["NAME"][0]] = name
                    public.setdefault(folder, set()).update(kobo["PUBLIC_HEADERS"])
                else:
                    public.setdefault(folder, set())
                continue
            if command in ("add_library", "add_executable"):
                if len(words) >= 3 and words[1] == "ALIAS":
                    aliases[words[0]] = words[2]
                else:
                    targets.setdefault(words[0], (folder, {}))
                continue
            name, visibility = words[0], "PUBLIC"  # the plain signature propagates
            for word in words[1:]:
                if word in ("PUBLIC", "PRIVATE", "INTERFACE"):
                    visibility = word
                elif word.startswith("kobo"):
                    targets.setdefault(name, (folder, {}))[1][word] = visibility
    for _, deps in targets.values():
        for dep in list(deps):
            if dep in aliases:
                deps[aliases[dep]] = deps.pop(dep)
    return targets, public


def visible_components(targets):
    """{folder: folders whose headers its targets can see through their links}."""

    def exported(target, seen):
        out = set()
        for dep, visibility in targets.get(target, ("", {}))[1].items():
            if visibility != "PRIVATE" and dep not in seen:
                seen.add(dep)
                out |= {dep} | exported(dep, seen)
        return out

    visible = {}
    for target, (folder, deps) in targets.items():
        seen = set(deps)
        reach = set(deps)
        for dep in deps:
            reach |= exported(dep, seen)
        visible.setdefault(folder, set()).update(
            targets[d][0] for d in reach if d in targets and targets[d][0] != folder)
    return visible


def included_folder(root, source, name, angled):
    """The folder of ours that `#include name` in `source` names, or None (system, external)."""
    known = set(ALLOWED) | HARNESSES
    if not angled:
        local = os.path.normpath(os.path.join(os.path.dirname(source), name))
        if os.path.exists(local) or name.startswith("."):
            relative = os.path.relpath(local, root)
            top = relative.split(os.sep)[0]
            return top if top in known else ("outside the source tree" if top == ".." else None)
    top = name.split("/")[0]
    return top if "/" in name and top in known else None


def header_of(root, source, name, folder):
    """The path inside `folder` of the header that `#include name` in `source` names."""
    local = os.path.normpath(os.path.join(os.path.dirname(source), name))
    if os.path.exists(local) or name.startswith("."):
        return os.path.relpath(local, os.path.join(root, folder)).replace(os.sep, "/")
    return name.split("/", 1)[1]


def check(root):
    errors = []
    targets, public = cmake_targets(root)
    visible = visible_components(targets)
    for target, (folder, deps) in sorted(targets.items()):
        for dep in sorted(d for d in deps if d.endswith("_internal")):
            errors.append(f"{folder}/CMakeLists.txt: {target} links {dep}, which only tests, benchmarks "
                          f"and fuzz targets may link (it hands out private headers)")
    for folder in sorted(ALLOWED):
        if not os.path.isdir(os.path.join(root, folder)):
            continue
        sees = visible.get(folder, set())
        for extra in sorted(sees - ALLOWED[folder]):
            errors.append(f"{folder}/CMakeLists.txt: {folder} links {extra}, which it may not depend on "
                          f"(allowed: {', '.join(sorted(ALLOWED[folder])) or 'nothing'})")
        for dirpath, _, files in os.walk(os.path.join(root, folder)):
            for file in sorted(files):
                if not file.endswith(SOURCE_SUFFIXES):
                    continue
                path = os.path.join(dirpath, file)
                text = open(path, encoding="utf-8", errors="replace").read()
                for match in INCLUDE.finditer(text):
                    target = included_folder(root, path, match.group(2), match.group(1) == "<")
                    if target is None or target == folder:
                        continue
                    line = text.count("\n", 0, match.start()) + 1
                    where = f"{os.path.relpath(path, root)}:{line}: includes {match.group(2)}"
                    if target in (sees & ALLOWED[folder]):
                        header = header_of(root, path, match.group(2), target)
                        if public.get(target) is not None and header not in public[target]:
                            errors.append(f"{where}: a private header of {target} (not in its PUBLIC_HEADERS)")
                        continue
                    why = "may not depend on it" if target not in ALLOWED[folder] else "does not link it"
                    errors.append(f"{where}: {folder} {why}")
    return errors


def self_test():
    """Each kind of violation is caught in a copy of the tree, and the copy as it is passes."""
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    script = os.path.abspath(__file__)
    failures = []

    def run(tree):
        return subprocess.run([sys.executable, script, "--root", tree], capture_output=True, text=True)

    def case(name, mutate, expect):
        with tempfile.TemporaryDirectory() as tmp:
            for folder in ALLOWED:
                if os.path.isdir(os.path.join(root, folder)):
                    shutil.copytree(os.path.join(root, folder), os.path.join(tmp, folder))
            mutate(tmp)
            result = run(tmp)
            caught = result.returncode == 1 and expect in result.stdout
            if (expect == "") != (result.returncode == 0) or (expect and not caught):
                failures.append(f"{name}: exit {result.returncode}, expected "
                                f"{'success' if not expect else repr(expect)}\n{result.stdout}{result.stderr}")

    def add_file(relative, text):
        def mutate(tmp):
            os.makedirs(os.path.dirname(os.path.join(tmp, relative)), exist_ok=True)
            with open(os.path.join(tmp, relative), "w", encoding="utf-8") as f:
                f.write(text)
        return mutate

    def edit(relative, old, new):
        def mutate(tmp):
            path = os.path.join(tmp, relative)
            text = open(path, encoding="utf-8").read()
            assert old in text, f"{relative} has no {old!r}"
            with open(path, "w", encoding="utf-8") as f:
                f.write(text.replace(old, new, 1))
        return mutate

    case("the tree as it is", lambda tmp: None, "")
    case("projection includes command",
         add_file("projection/bad.cc", '#include "projection/views.h"\n#include "command/state.h"\n'),
         "projection/bad.cc:2: includes command/state.h: projection may not depend on it")
    case("projection includes command by a relative path",
         add_file("projection/bad.h", '#pragma once\n#include "../command/state.h"\n'),
         "projection/bad.h:2: includes ../command/state.h: projection may not depend on it")
    case("an angled include of query-api from events",
         add_file("events/bad.h", "#pragma once\n#include <query-api/api.h>\n"),
         "events/bad.h:2: includes query-api/api.h: events may not depend on it")
    case("common includes events", add_file("common/bad.h", '#include "events/event_log.h"\n'),
         "common/bad.h:1: includes events/event_log.h: common may not depend on it")
    case("a component includes a test helper", add_file("command/bad.cc", '#include "tests/support/http_client.h"\n'),
         "command/bad.cc:1: includes tests/support/http_client.h: command may not depend on it")
    case("projection links command",
         edit("projection/CMakeLists.txt", "DEPS kobo::events", "DEPS kobo::events kobo::command"),
         "projection links command, which it may not depend on")
    case("projection links command privately",
         edit("projection/CMakeLists.txt", "PRIVATE_DEPS RocksDB::rocksdb", "PRIVATE_DEPS RocksDB::rocksdb kobo::command"),
         "projection links command, which it may not depend on")
    case("query-api includes a private header of events",
         add_file("query-api/bad.cc", '#include "events/memory_log.h"\n'),
         "query-api/bad.cc:1: includes events/memory_log.h: a private header of events")
    case("app includes a private header of query-api by a relative path",
         add_file("app/bad.cc", '#include "../query-api/answer.h"\n'),
         "app/bad.cc:1: includes ../query-api/answer.h: a private header of query-api")
    case("a component links another's internal target",
         edit("audit/CMakeLists.txt", "DEPS kobo::events kobo::projection",
              "DEPS kobo::events kobo::projection_internal"),
         "kobo_audit links kobo::projection_internal, which only tests")
    case("cluster may not include projection",
         add_file("cluster/bad.cc", '#include "projection/views.h"\n'),
         "cluster/bad.cc:1: includes projection/views.h: cluster may not depend on it")
    case("webhooks includes command, allowed by nothing",
         add_file("webhooks/bad.cc", '#include "command/ledger.h"\n'),
         "webhooks/bad.cc:1: includes command/ledger.h: webhooks may not depend on it")
    case("allowed, but not linked: audit without its link to projection",
         edit("audit/CMakeLists.txt", "DEPS kobo::events kobo::projection", "DEPS kobo::events"),
         "audit does not link it")
    case("audit includes the writer's state",
         add_file("audit/bad.cc", '#include "command/state.h"\n'),
         "audit/bad.cc:1: includes command/state.h: audit may not depend on it")
    if failures:
        print("\n".join(failures))
        return 1
    print("check_layering self-test: every violation caught, the tree passes")
    return 0


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--root", default=os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    parser.add_argument("--self-test", action="store_true")
    args = parser.parse_args()
    if args.self_test:
        return self_test()
    errors = check(os.path.abspath(args.root))
    for e in errors:
        print(e)
    if not errors:
        print("layering: every include and link within the allowed graph")
    return 1 if errors else 0


if __name__ == "__main__":
    sys.exit(main())
