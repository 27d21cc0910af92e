#!/usr/bin/env python3
"""Validates Kobo Ledger events against schemas/events/*.schema.json (JSON Schema 2020-12),
event contract v2 (`schemaVersion` 2).

Events come from `kobo events --data-dir D` over every data dir under a root (what the
integration suites leave under KOBO_IT_DATA_ROOT), or from JSON-lines files.

It fails (exit 1) when
  - a schema file is not valid JSON Schema draft 2020-12, has an $id that is not its file name,
    or has an object schema that lists `properties` without `additionalProperties: false` (the
    decoder refuses unknown members, so the published schemas are closed);
  - an event type of events/event.cc has no schema file, or a schema file names no event type;
  - an event is not schemaVersion 2 (a v1 event is reported as "schemaVersion 1 is not
    supported", as kobo itself says), has a type with no schema, does not validate against its
    type's schema, or has postings that do not sum to zero.
Violations are reported with data dir, partition, seq, type and the JSON path of the member.

Exit 0: all valid; 1: violations; 2: cannot run; 77: nothing to validate (ctest SKIP_RETURN_CODE).
Works with Debian bookworm's python3-jsonschema (4.10, RefResolver) and newer (referencing).
"""

import argparse
import json
import os
import re
import subprocess
import sys
from pathlib import Path

from jsonschema import Draft202012Validator
from jsonschema.exceptions import SchemaError, best_match

EXIT_OK, EXIT_VIOLATIONS, EXIT_CANNOT_RUN, EXIT_SKIP = 0, 1, 2, 77
SCHEMA_VERSION = 2
SHARED_FILES = {"envelope.schema.json", "definitions.schema.json"}  # not event types
REPORT_MAX = 20


def schema_file_of(event_type):
    """PayoutFailed -> payout_failed.schema.json, WalletTransferSettled -> wallet_transfer_settled.schema.json."""
    return re.sub(r"(?<!^)([A-Z])", r"_\1", event_type).lower() + ".schema.json"


def open_objects(node, pointer="#"):
    """The JSON pointers of object schemas that list `properties` but do not close themselves
    with `additionalProperties: false`. The decoder refuses unknown members, so such a schema
    would pass events kobo refuses. A free-form object (`metadata`) lists no properties."""
    found = []
    if isinstance(node, dict):
        if node.get("type") == "object" and "properties" in node and node.get("additionalProperties") is not False:
            found.append(pointer)
        for key, value in node.items():
            found += open_objects(value, f"{pointer}/{key}")
    elif isinstance(node, list):
        for i, value in enumerate(node):
            found += open_objects(value, f"{pointer}/{i}")
    return found


def postings_sum_violation(event):
    """Double entry, which JSON Schema cannot say: an event's postings sum to zero."""
    data = event.get("data")
    postings = data.get("postings") if isinstance(data, dict) else None
    if not isinstance(postings, list):
        return []
    amounts = [p.get("amount") for p in postings if isinstance(p, dict)]
    if len(amounts) != len(postings) or not all(type(a) is int for a in amounts):
        return []  # the schema reports it
    total = sum(amounts)
    return [] if total == 0 else [("$.data.postings", f"the postings sum to {total}, not 0 (double entry)")]


class Schemas:
    """The schemas of a directory, checked, with one validator per event type."""

    def __init__(self, directory):
        self.problems = []
        self.validators = {}
        directory = Path(directory)
        files = sorted(directory.glob("*.schema.json"))
        if not files:
            self.problems.append(f"{directory}: no *.schema.json files")
            return
        store = {}
        by_file = {}
        for path in files:
            try:
                schema = json.loads(path.read_text())
                Draft202012Validator.check_schema(schema)
            except (ValueError, SchemaError) as e:
                self.problems.append(f"{path.name}: not a valid draft 2020-12 schema: {first_line(e)}")
                continue
            if schema.get("$schema") != "https://json-schema.org/draft/2020-12/schema":
                self.problems.append(f"{path.name}: $schema must be https://json-schema.org/draft/2020-12/schema")
                continue
            if not str(schema.get("$id", "")).endswith("/" + path.name):
                self.problems.append(f"{path.name}: $id {schema.get('$id')!r} does not end in /{path.name}")
                continue
            for pointer in open_objects(schema):
                self.problems.append(f"{path.name}: the object at {pointer} lists properties without "
                                     "additionalProperties: false, but the decoder refuses unknown members")
            store[schema["$id"]] = schema
            by_file[path.name] = schema
        for name, schema in by_file.items():
            if name not in SHARED_FILES:
                self.validators[name] = make_validator(schema, store)
        self.files = set(by_file) | {p.name for p in files}

    def check_event_types(self, event_types):
        """Every event type has a schema file and every event schema file has a type."""
        wanted = {schema_file_of(t): t for t in event_types}
        for name, event_type in sorted(wanted.items()):
            if name not in self.files:
                self.problems.append(f"event type {event_type} has no schema ({name})")
        for name in sorted(self.files - SHARED_FILES - set(wanted)):
            self.problems.append(f"{name} names no event type of events/event.cc")

    def violations(self, event):
        """What is wrong with one decoded event: a list of (path, message)."""
        if not isinstance(event, dict):
            return [("$", "the event is not a JSON object")]
        # The version first, as kobo does: a v1 event is refused for what it is, not for its
        # v1 types and members.
        version = event.get("schemaVersion")
        if "schemaVersion" not in event:
            return [("$", f"the event has no schemaVersion (these schemas are for schemaVersion {SCHEMA_VERSION})")]
        if version != SCHEMA_VERSION:
            return [("$.schemaVersion", f"event schemaVersion {json.dumps(version)} is not supported: these schemas "
                                        f"are for schemaVersion {SCHEMA_VERSION} only (there is no migration from "
                                        "older logs)")]
        event_type = event.get("type")
        if not isinstance(event_type, str):
            return [("$.type", "the event has no type")]
        validator = self.validators.get(schema_file_of(event_type))
        if validator is None:
            return [("$.type", f"no schema for event type {event_type!r} ({schema_file_of(event_type)})")]
        errors = list(validator.iter_errors(event))
        if not errors:
            return postings_sum_violation(event)
        best = best_match(errors)
        return [(json_path(best.absolute_path), first_line(best.message))] + [
            (json_path(e.absolute_path), first_line(e.message)) for e in errors if e is not best][:4]


def make_validator(schema, store):
    try:
        from referencing import Registry, Resource  # jsonschema >= 4.18
    except ImportError:
        from jsonschema import RefResolver  # Debian bookworm: jsonschema 4.10
        return Draft202012Validator(schema, resolver=RefResolver.from_schema(schema, store=store))
    registry = Registry().with_resources((uri, Resource.from_contents(s)) for uri, s in store.items())
    return Draft202012Validator(schema, registry=registry)


def json_path(parts):
    path = "$"
    for p in parts:
        path += f"[{p}]" if isinstance(p, int) else f".{p}"
    return path


def first_line(e):
    text = str(e)
    return text.splitlines()[0] if text else type(e).__name__


def event_types_of(event_cc):
    """The CamelCase event type names that events/event.cc maps EventType values to."""
    names = re.findall(r'\{EventType::\w+,\s*"(\w+)"\}', Path(event_cc).read_text())
    if not names:
        raise ValueError(f"{event_cc}: found no {{EventType::…, \"Name\"}} pairs")
    return names


class Report:
    def __init__(self):
        self.events = 0
        self.invalid = 0
        self.by_type = {}
        self.lines = []

    def check(self, schemas, source, line_no, text):
        self.events += 1
        try:
            event = json.loads(text)
        except ValueError as e:
            return self.fail(f"{source} line {line_no}: not JSON: {first_line(e)}")
        found = schemas.violations(event)
        event_type = event.get("type") if isinstance(event, dict) else None
        self.by_type[str(event_type)] = self.by_type.get(str(event_type), 0) + 1
        if found:
            where = (f"{source} partition {event.get('partition')} seq {event.get('seq')} type {event_type}"
                     if isinstance(event, dict) else f"{source} line {line_no}")
            self.fail(where + "".join(f"\n    at {path}: {message}" for path, message in found))

    def fail(self, text):
        self.invalid += 1
        if len(self.lines) < REPORT_MAX:
            self.lines.append(text)


def data_dirs(root):
    return sorted(p for p in Path(root).iterdir() if p.is_dir() and (p / "log" / "CURRENT").exists())


def validate_data_dir(schemas, kobo, directory, report):
    proc = subprocess.Popen([str(kobo), "events", "--data-dir", str(directory)], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)
    for line_no, line in enumerate(proc.stdout, 1):
        report.check(schemas, directory.name, line_no, line)
    stderr = proc.stderr.read()
    if proc.wait() != 0:
        report.fail(f"{directory}: kobo events exited {proc.returncode}: {stderr.strip()}")


def main(argv=None):
    here = Path(__file__).resolve().parent
    repo = here.parent.parent
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--schemas", default=repo / "schemas" / "events", type=Path, help="schema directory")
    ap.add_argument("--event-types", default=repo / "events" / "event.cc", type=Path,
                    help="events/event.cc, whose type names must each have a schema")
    ap.add_argument("--kobo", type=Path, help="the kobo executable (for --data-root)")
    ap.add_argument("--data-root", type=Path, default=os.environ.get("KOBO_IT_DATA_ROOT"),
                    help="validate every data dir under it (default: $KOBO_IT_DATA_ROOT)")
    ap.add_argument("--events", type=Path, action="append", default=[],
                    help="a file of events, one JSON object per line ('-': stdin); repeatable")
    args = ap.parse_args(argv)

    try:
        schemas = Schemas(args.schemas)
        schemas.check_event_types(event_types_of(args.event_types))
    except (OSError, ValueError) as e:
        print(f"validate_events: {e}", file=sys.stderr)
        return EXIT_CANNOT_RUN
    if schemas.problems:
        print("validate_events: the schemas are wrong:\n  " + "\n  ".join(schemas.problems), file=sys.stderr)
        return EXIT_VIOLATIONS

    report = Report()
    for path in args.events:
        stream = sys.stdin if str(path) == "-" else open(path)
        with stream:
            for line_no, line in enumerate(stream, 1):
                if line.strip():
                    report.check(schemas, str(path), line_no, line)
    dirs = []
    if args.data_root is not None and args.data_root.is_dir():
        if args.kobo is None:
            print("validate_events: --data-root needs --kobo", file=sys.stderr)
            return EXIT_CANNOT_RUN
        dirs = data_dirs(args.data_root)
        for d in dirs:
            validate_data_dir(schemas, args.kobo, d, report)
    if report.events == 0 and report.invalid == 0:
        print("validate_events: no events to validate (no --events, and no data dirs under --data-root)")
        return EXIT_SKIP

    counts = ", ".join(f"{t} {n}" for t, n in sorted(report.by_type.items()))
    print(f"validate_events (schemaVersion {SCHEMA_VERSION}): {report.events} events from {len(dirs)} data dirs and "
          f"{len(args.events)} files; {report.invalid} invalid. By type: {counts}")
    unseen = sorted(set(event_types_of(args.event_types)) - set(report.by_type))
    if unseen:
        print("validate_events: no event of these types was seen: " + ", ".join(unseen))
    if report.invalid:
        print(f"first {len(report.lines)} violations:\n" + "\n".join(report.lines), file=sys.stderr)
        return EXIT_VIOLATIONS
    return EXIT_OK


if __name__ == "__main__":
    sys.exit(main())
