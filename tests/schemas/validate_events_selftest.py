#!/usr/bin/env python3
"""Shows that validate_events.py and check_documents.py can fail: real events (sample_events.jsonl,
written by `kobo serve` and read back with `kobo events`) pass, and each kind of broken event,
schema or document is rejected."""

import copy
import io
import json
import shutil
import sys
import tempfile
import unittest
from contextlib import redirect_stderr, redirect_stdout
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parent.parent
sys.path.insert(0, str(HERE))

import check_documents  # noqa: E402
import validate_events  # noqa: E402
import yaml  # noqa: E402

SCHEMAS = REPO / "schemas" / "events"
EVENT_TYPES = validate_events.event_types_of(REPO / "events" / "event.cc")
SAMPLES = [json.loads(line) for line in (HERE / "sample_events.jsonl").read_text().splitlines() if line.strip()]


def sample(event_type, has=None):
    """A deep copy of the first sample of `event_type` (whose data has member `has`, if given)."""
    for e in SAMPLES:
        if e["type"] == event_type and (has is None or has in e["data"]):
            return copy.deepcopy(e)
    raise AssertionError(f"sample_events.jsonl has no {event_type}" + (f" with data.{has}" if has else ""))


class Samples(unittest.TestCase):
    def test_real_events_of_every_type_pass_in_both_modes(self):
        self.assertEqual(sorted({e["type"] for e in SAMPLES}), sorted(EVENT_TYPES))
        for strict in (True, False):
            schemas = validate_events.Schemas(SCHEMAS, strict=strict)
            schemas.check_event_types(EVENT_TYPES)
            self.assertEqual(schemas.problems, [])
            for e in SAMPLES:
                self.assertEqual(schemas.violations(e), [], f"{e['type']} seq {e['seq']}")


class BrokenEvents(unittest.TestCase):
    strict = validate_events.Schemas(SCHEMAS, strict=True)
    open = validate_events.Schemas(SCHEMAS, strict=False)

    def rejected(self, event, path_prefix, schemas=None):
        found = (schemas or self.strict).violations(event)
        self.assertTrue(found, "accepted a broken event")
        self.assertTrue(found[0][0].startswith(path_prefix), f"reported at {found[0][0]}, not {path_prefix}: {found}")

    def test_a_missing_member(self):
        e = sample("Debited")
        del e["data"]["amount"]
        self.rejected(e, "$.data")

    def test_a_member_of_the_wrong_type(self):
        e = sample("Credited")
        e["data"]["amount"] = "100"
        self.rejected(e, "$.data.amount")

    def test_a_credit_record_on_a_debit(self):
        e = sample("Debited", has="transaction")
        e["data"]["transaction"]["entry"] = "credit"
        self.rejected(e, "$.data.transaction.entry")

    def test_a_wallet_that_is_both_kinds(self):
        e = sample("WalletCreated")
        e["data"]["wallet"]["settlementAccount"] = e["data"]["wallet"]["publicId"]
        self.rejected(e, "$.data.wallet")

    def test_an_envelope_member_is_rejected_in_both_modes(self):
        e = sample("BusinessCreated")
        e["note"] = "not hashed"
        self.rejected(e, "$")
        self.rejected(e, "$", self.open)

    def test_another_schema_version(self):
        e = sample("AccountCreated")
        e["schemaVersion"] = 2
        self.rejected(e, "$.schemaVersion")

    def test_a_malformed_hash_and_time(self):
        e = sample("WalletCreated")
        e["hash"] = "ABC"
        self.rejected(e, "$.hash")
        e = sample("WalletCreated")
        e["time"] = "2026-11-21 07:02:00"
        self.rejected(e, "$.time")

    def test_a_partition_event_with_a_business(self):
        e = sample("WriterStarted")
        e["business"] = sample("BusinessCreated")["business"]
        self.rejected(e, "$.business")

    def test_undocumented_members_fail_the_strict_check_only(self):
        for event, where in ((sample("TransactionStatusChanged"), "data"),
                             (sample("WalletCreated"), "wallet"),
                             (sample("Credited", has="transaction"), "transaction")):
            target = event["data"] if where == "data" else event["data"][where]
            target["addedLater"] = True
            self.rejected(event, "$.data")
            self.assertEqual(self.open.violations(event), [], "the published schemas must accept additions")

    def test_an_event_type_without_a_schema(self):
        e = sample("Debited")
        e["type"] = "Refunded"
        found = self.strict.violations(e)
        self.assertEqual(found[0][0], "$.type")
        self.assertIn("no schema for event type 'Refunded'", found[0][1])


class BrokenSchemas(unittest.TestCase):
    def setUp(self):
        self.dir = Path(tempfile.mkdtemp(prefix="kobo-schemas-"))
        shutil.copytree(SCHEMAS, self.dir / "events")
        self.events = self.dir / "events"

    def tearDown(self):
        shutil.rmtree(self.dir)

    def problems(self):
        schemas = validate_events.Schemas(self.events)
        schemas.check_event_types(EVENT_TYPES)
        return schemas.problems

    def test_a_schema_that_is_not_draft_2020_12(self):
        path = self.events / "debited.schema.json"
        schema = json.loads(path.read_text())
        schema["$defs"]["data"]["minProperties"] = "three"
        path.write_text(json.dumps(schema))
        self.assertTrue(any(p.startswith("debited.schema.json: not a valid draft 2020-12") for p in self.problems()),
                        self.problems())

    def test_a_schema_that_is_not_json(self):
        (self.events / "credited.schema.json").write_text("{")
        self.assertTrue(any(p.startswith("credited.schema.json") for p in self.problems()))

    def test_an_event_type_without_its_schema_file(self):
        (self.events / "credited.schema.json").unlink()
        self.assertIn("event type Credited has no schema (credited.schema.json)", self.problems())

    def test_a_schema_file_of_no_event_type(self):
        schema = json.loads((self.events / "credited.schema.json").read_text())
        schema["$id"] = schema["$id"].replace("credited", "refunded")
        (self.events / "refunded.schema.json").write_text(json.dumps(schema))
        self.assertIn("refunded.schema.json names no event type of events/event.cc", self.problems())

    def test_the_command_line_fails_on_a_broken_event_and_skips_when_there_is_nothing(self):
        good = self.dir / "good.jsonl"
        good.write_text("".join(json.dumps(e) + "\n" for e in SAMPLES))
        bad_event = sample("Debited")
        bad_event["data"]["balance"] = 1.5
        bad = self.dir / "bad.jsonl"
        bad.write_text(json.dumps(bad_event) + "\n")
        out, err = io.StringIO(), io.StringIO()
        with redirect_stdout(out), redirect_stderr(err):
            self.assertEqual(validate_events.main(["--events", str(good), "--data-root", str(self.dir / "none")]), 0)
            self.assertEqual(validate_events.main(["--events", str(bad)]), 1)
            self.assertEqual(validate_events.main(["--data-root", str(self.dir / "none")]), 77)
            (self.events / "debited.schema.json").unlink()
            self.assertEqual(validate_events.main(["--schemas", str(self.events), "--events", str(good)]), 1)
        self.assertIn(f"partition {bad_event['partition']} seq {bad_event['seq']} type Debited", err.getvalue())
        self.assertIn("at $.data.balance", err.getvalue())


class BrokenDocuments(unittest.TestCase):
    openapi = yaml.safe_load((REPO / "schemas" / "openapi.yaml").read_text())
    compose = yaml.safe_load((REPO / "compose" / "compose.yaml").read_text())
    dockerfile = (REPO / "compose" / "Dockerfile").read_text()

    def test_the_documents_pass(self):
        self.assertEqual(check_documents.check_openapi(self.openapi), [])
        self.assertEqual(check_documents.check_compose(self.compose), [])
        self.assertEqual(check_documents.check_dockerfile(self.dockerfile), [])

    def test_broken_openapi(self):
        for breakage in (
            lambda d: d.update(openapi="3.0.3"),
            lambda d: d["paths"]["/v1/virtual-accounts/{id}"]["get"].update(parameters=[]),
            lambda d: d["paths"]["/v1/accounts"]["get"].update(operationId="createWallet"),
            lambda d: d["paths"]["/healthz"]["get"].update(responses={"200": {"$ref": "#/components/responses/Nope"}}),
            lambda d: d["components"]["schemas"]["Wallet"].update(required="publicId"),
            lambda d: d["paths"]["/v1/accounts"]["get"].update(security=[{"bearer": []}]),
        ):
            doc = copy.deepcopy(self.openapi)
            breakage(doc)
            self.assertTrue(check_documents.check_openapi(doc))

    def test_broken_compose(self):
        for breakage in (
            lambda d: d["services"].pop("kobo-projector"),
            lambda d: d["services"]["kafka"]["environment"].pop("KAFKA_TRANSACTION_STATE_LOG_MIN_ISR"),
            lambda d: d["services"]["kobo"].update(command=["serve", "--roles", "command"]),
            lambda d: d["services"]["kobo-projector"].update(volumes=["kobo-data:/data"]),
            lambda d: d["services"]["kobo"]["healthcheck"].update(test=["CMD", "true"]),
            lambda d: d.pop("volumes"),
        ):
            doc = copy.deepcopy(self.compose)
            breakage(doc)
            self.assertTrue(check_documents.check_compose(doc))

    def test_broken_dockerfile(self):
        self.assertTrue(check_documents.check_dockerfile(self.dockerfile.replace("USER kobo", "")))
        self.assertTrue(check_documents.check_dockerfile(self.dockerfile.replace("debian:bookworm-slim", "ubuntu:24.04")))
        self.assertTrue(check_documents.check_dockerfile(self.dockerfile.replace("librdkafka1 ", "")))


if __name__ == "__main__":
    unittest.main()
