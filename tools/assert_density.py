#!/usr/bin/env python3
"""Assertions per function, by folder: how densely the code states its invariants.

    tools/assert_density.py [--files] [--repo DIR] [FOLDER ...]    (default: every source folder)

How it counts, in the .cc and .h files directly under each folder (tests, fuzz and bench are
folders of their own and are not counted unless named):

- functions: the function *definitions* universal-ctags finds (`ctags --kinds-c++=f`): free
  functions, member functions defined in or out of their class, constructors, templates, and
  the one-line accessors and `fields()` lists of headers alike. Declarations without a body,
  lambdas (ctags tags some as `__anon…`: left out) and `= default` members are not counted.
- asserts: the `KOBO_ASSERT(` calls (common/assert.h), outside comments; the macro's own
  definition is not counted.

The ratio is asserts / functions for the folder as a whole (not a floor per function).
"""

import argparse
import os
import re
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
FOLDERS = ["common", "events", "command", "projection", "webhooks", "audit", "query-api", "app"]
ASSERT = re.compile(r"\bKOBO_ASSERT\s*\(")


def sources(folder):
    path = os.path.join(ROOT, folder)
    for name in sorted(os.listdir(path)):
        if name.endswith((".cc", ".h")) and os.path.isfile(os.path.join(path, name)):
            yield os.path.join(folder, name)


def functions(files):
    """Function definitions per file, by universal-ctags (its `__anon…` tags, lambdas, left out)."""
    if not files:
        return {}
    out = subprocess.run(
        ["ctags", "-x", "--language-force=C++", "--kinds-C++=f", "--_xformat=%N|%n|%F"] + files,
        cwd=ROOT, check=True, capture_output=True, text=True).stdout
    counts = {f: 0 for f in files}
    for line in out.splitlines():
        name, _, rest = line.partition("|")
        path = rest.partition("|")[2]
        if not name.startswith("__anon"):
            counts[path] = counts.get(path, 0) + 1
    return counts


def without_comments(text):
    """The text with its comments dropped and its string and character literals emptied, so that
    neither a comment nor a string that names KOBO_ASSERT( counts."""
    out, i, n = [], 0, len(text)
    while i < n:
        if text.startswith("//", i):
            j = text.find("\n", i)
            i = n if j < 0 else j
        elif text.startswith("/*", i):
            j = text.find("*/", i + 2)
            i = n if j < 0 else j + 2
        elif text.startswith('R"', i) and (i == 0 or not (text[i - 1].isalnum() or text[i - 1] == "_")):
            open_paren = text.find("(", i + 2)
            delimiter = ")" + text[i + 2:open_paren] + '"'
            j = text.find(delimiter, open_paren + 1)
            out.append('""')
            i = n if j < 0 else j + len(delimiter)
        elif text[i] == '"' or (text[i] == "'" and (i == 0 or not text[i - 1].isalnum())):
            quote, j = text[i], i + 1  # a ' after a digit is a digit separator (1'000)
            while j < n and text[j] != quote:
                j += 2 if text[j] == "\\" else 1
            out.append(quote * 2)
            i = j + 1
        else:
            out.append(text[i])
            i += 1
    return "".join(out)


def asserts(path):
    with open(os.path.join(ROOT, path), encoding="utf-8") as f:
        text = without_comments(f.read())
    count = len(ASSERT.findall(text))
    if path == os.path.join("common", "assert.h"):
        count -= len(re.findall(r"#define\s+KOBO_ASSERT\s*\(", text))
    return count


def main():
    global ROOT
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("folders", nargs="*", default=FOLDERS)
    parser.add_argument("--files", action="store_true", help="a row per file too")
    parser.add_argument("--repo", default=ROOT, help="the checkout to measure (default: this one)")
    args = parser.parse_args()
    ROOT = os.path.abspath(args.repo)

    rows = []
    total_f = total_a = 0
    for folder in args.folders:
        files = list(sources(folder))
        fn = functions(files)
        folder_f = folder_a = 0
        for path in files:
            a = asserts(path)
            folder_f += fn.get(path, 0)
            folder_a += a
            if args.files:
                rows.append((path, fn.get(path, 0), a))
        rows.append((folder + "/", folder_f, folder_a))
        total_f += folder_f
        total_a += folder_a
    rows.append(("total", total_f, total_a))

    print(f"| {'where':<34} | {'functions':>9} | {'asserts':>7} | {'per function':>12} |")
    print(f"| {'-' * 34} | {'-' * 9}:| {'-' * 7}:| {'-' * 12}:|")
    for where, f, a in rows:
        ratio = f"{a / f:.2f}" if f else "-"
        print(f"| {where:<34} | {f:>9} | {a:>7} | {ratio:>12} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
