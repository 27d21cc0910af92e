#!/usr/bin/env python3
"""What each failed test of the last ctest run said, in a few lines, printed last.

`ctest --output-on-failure` prints a failed test's output where the test ended, hundreds of
lines before the summary; a CI log cut to its end keeps only the summary's names. This reprints,
after the summary, each failed test's assertion failures, its exceptions and the tail of the
server log a failed integration test prints ("[kobo] ..., last lines:",
tests/support/kobo_process.h), from the tree's Testing/Temporary/LastTest.log.

Usage: tools/ctest_failures.py BUILD_DIR [--tests N] [--log-lines N]
"""
import argparse
import pathlib
import re
import sys

ENTRY = re.compile(r'^\d+/\d+ Testing: (?P<name>.+)$')
RESULT = re.compile(r'^Test (?P<result>[A-Z][a-z]+(?: [A-Za-z]+)*)\.?$')
FAILURE_START = re.compile(r'(: Failure$|^unknown file: Failure|C\+\+ exception|^terminate called|'
                           r'AddressSanitizer|ThreadSanitizer|UndefinedBehaviorSanitizer|runtime error:)')


def entries(log):
    """(name, result, output lines) for each test of LastTest.log."""
    name, output, in_output, result = None, [], False, None
    for line in log.splitlines():
        m = ENTRY.match(line)
        if m:
            name, output, in_output, result = m.group('name'), [], False, None
            continue
        if name is None:
            continue
        if line == 'Output:':
            in_output = True
            continue
        if in_output:
            if line == '<end of output>':
                in_output = False
            elif not line.startswith('-' * 58):
                output.append(line)
            continue
        m = RESULT.match(line)
        if m and result is None:
            result = m.group('result')
            yield name, result, output


def digest(output, log_lines):
    """The failure blocks, and the last log_lines of each server log tail printed."""
    out, i = [], 0
    while i < len(output):
        line = output[i]
        if FAILURE_START.search(line):
            block = [line]
            i += 1
            while i < len(output) and output[i].strip() and not output[i].startswith('[') and len(block) < 12:
                block.append(output[i])
                i += 1
            out.extend(block)
            continue
        if line.startswith('[kobo] ') and line.endswith('last lines:'):
            tail = []
            i += 1
            while i < len(output) and not output[i].startswith('['):
                tail.append(output[i])
                i += 1
            out.append(line)
            out.extend(l[:400] for l in tail[-log_lines:])
            continue
        if line.startswith('[  FAILED  ]') and '(' in line:
            out.append(line)
        i += 1
    return out


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument('build_dir')
    parser.add_argument('--tests', type=int, default=5, help='at most this many failed tests')
    parser.add_argument('--log-lines', type=int, default=12, help="lines of each server log's tail")
    args = parser.parse_args()
    path = pathlib.Path(args.build_dir) / 'Testing' / 'Temporary' / 'LastTest.log'
    try:
        log = path.read_text(errors='replace')
    except OSError as e:
        print(f'ctest_failures: {e}', file=sys.stderr)
        return 0
    failed = [(n, r, o) for n, r, o in entries(log) if r not in ('Passed', 'Skipped', 'Not Run', 'Disabled')]
    if not failed:
        return 0
    print(f'\n==== what the {len(failed)} failed test(s) said ({path}) ====')
    for name, result, output in failed[:args.tests]:
        print(f'---- {name}: {result}')
        lines = digest(output, args.log_lines) or output[-20:]
        print('\n'.join(lines))
    if len(failed) > args.tests:
        print(f'---- and {len(failed) - args.tests} more; see {path}')
    return 0


if __name__ == '__main__':
    sys.exit(main())
