#!/usr/bin/env python3
"""Shows that validate_events.py and check_documents.py can fail: real v2 events
(sample_events.jsonl, as the writer appended them) pass, and each kind of broken event, schema or
document is rejected: a wrong member, a missing one, an unknown type, and a v1 event."""

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

# A real schemaVersion 1 event (a v1 writer's Debited of an incoming credit): kobo refuses a log
# holding one, and so must the validator, saying so.
V1_EVENT = json.loads(
    '{"hash":"0eedb1079b80259f22736df10540b829675de5bdd0209a52b1a03320bab86a0b","business":"biz-3af882a7-6039-4219-'
    '8cf3-64e5c788335a","commandSeq":8,"commandSize":2,"data":{"amount":5000000,"balance":-5000000,"ledgerAccount":'
    '"sys:inbound-settlement"},"epoch":1,"live":false,"partition":1,"prevHash":"451a6f93ba2b8aba597d6205a0c8aa3da847'
    'f1c8379fe1e2b9f5bb114bb36d2d","schemaVersion":1,"seq":8,"time":"2026-11-21T09:51:46.039Z","type":"Debited"}')


def sample(event_type, where=None):
    """A deep copy of the first sample of `event_type` for which `where(event)` holds."""
    for e in SAMPLES:
        if e["type"] == event_type and (where is None or where(e)):
            return copy.deepcopy(e)
    raise AssertionError(f"sample_events.jsonl has no such {event_type}")


SCHEMAS_NOW = validate_events.Schemas(SCHEMAS)


class Samples(unittest.TestCase):
    def test_the_schemas_are_sound(self):
        SCHEMAS_NOW.check_event_types(EVENT_TYPES)
        self.assertEqual(SCHEMAS_NOW.problems, [])

    def test_real_events_of_every_type_pass(self):
        self.assertEqual(sorted({e["type"] for e in SAMPLES}), sorted(EVENT_TYPES))
        self.assertEqual({e["schemaVersion"] for e in SAMPLES}, {2})
        for e in SAMPLES:
            self.assertEqual(SCHEMAS_NOW.violations(e), [], f"{e['type']} partition {e['partition']} seq {e['seq']}")

    def test_the_samples_cover_the_optional_shapes(self):
        # A command of two events, a transit sweep, a paid collection, a saved beneficiary.
        sample("BeneficiarySaved", lambda e: e.get("commandSize") == 2)
        sample("IncomingCreditReceived", lambda e: len(e["data"]["postings"]) == 4)
        sample("IncomingCreditReceived", lambda e: "collection" in e["data"])
        sample("BankTransferInitiated", lambda e: e["data"].get("saveBeneficiary") is True)
        sample("BankTransferInitiated", lambda e: "batch" in e["data"])
        sample("WalletTransferSettled", lambda e: "batch" in e["data"])
        sample("BulkTransferAccepted", lambda e: len(e["data"]["rejected"]) == 1)
        sample("WalletOpened", lambda e: "mobile" in e["data"] and "emailAddress" in e["data"])


class BrokenEvents(unittest.TestCase):
    def rejected(self, event, path_prefix, says=None):
        found = SCHEMAS_NOW.violations(event)
        self.assertTrue(found, "accepted a broken event")
        self.assertTrue(found[0][0].startswith(path_prefix), f"reported at {found[0][0]}, not {path_prefix}: {found}")
        if says is not None:
            self.assertIn(says, found[0][1])
        return found

    # ---- the four the contract promises to catch ----

    def test_a_v1_event_is_refused_for_its_version(self):
        found = self.rejected(copy.deepcopy(V1_EVENT), "$.schemaVersion", "schemaVersion 1 is not supported")
        self.assertEqual(len(found), 1, "one clear message, not a list of v1 members")
        e = sample("WalletTransferSettled")
        e["schemaVersion"] = 1
        self.rejected(e, "$.schemaVersion", "schemaVersion 1 is not supported")
        del e["schemaVersion"]
        self.rejected(e, "$", "no schemaVersion")

    def test_a_missing_member(self):
        e = sample("WalletTransferSettled")
        del e["data"]["reference"]
        self.rejected(e, "$.data", "'reference' is a required property")
        e = sample("IncomingCreditReceived")
        del e["data"]["sender"]["nibssBankCode"]
        self.rejected(e, "$.data.sender")
        e = sample("PayoutSucceeded")
        del e["prevHash"]
        self.rejected(e, "$", "'prevHash' is a required property")

    def test_a_wrong_member(self):
        e = sample("WalletTransferSettled")
        e["data"]["postings"][0]["amount"] = "-20000"
        self.rejected(e, "$.data.postings[0].amount")
        e = sample("WalletTransferSettled")
        e["data"]["fingerprint"] = "0" * 64  # derived, never in the log
        self.rejected(e, "$.data", "'fingerprint' was unexpected")
        e = sample("WalletOpened")
        e["data"]["category"] = "tertiary"
        self.rejected(e, "$.data.category")
        e = sample("BankTransferInitiated")
        e["data"]["transaction"] = "vba-" + e["data"]["transaction"][4:]
        self.rejected(e, "$.data.transaction")
        e = sample("BusinessRegistered")
        e["note"] = "not hashed"
        self.rejected(e, "$", "'note' was unexpected")

    def test_an_unknown_type(self):
        e = sample("PayoutFailed")
        e["type"] = "PayoutRefunded"
        found = self.rejected(e, "$.type")
        self.assertIn("no schema for event type 'PayoutRefunded'", found[0][1])
        e["type"] = "Debited"  # a v1 type in a v2 envelope
        self.rejected(e, "$.type", "no schema for event type 'Debited'")

    # ---- the ledger's shape ----

    def test_postings_in_the_wrong_place_or_sign(self):
        e = sample("WalletTransferSettled")
        e["data"]["postings"].reverse()
        self.rejected(e, "$.data.postings")
        e = sample("BankTransferInitiated")
        e["data"]["postings"][1]["account"] = "sys:fees"
        self.rejected(e, "$.data.postings[1].account")
        e = sample("PayoutSucceeded")
        e["data"]["postings"][1]["account"] = "sys:elsewhere"
        self.rejected(e, "$.data.postings[1].account")

    def test_unbalanced_postings_and_a_zero_amount(self):
        e = sample("WalletTransferSettled")
        e["data"]["postings"][1]["amount"] += 1
        self.rejected(e, "$.data.postings", "the postings sum to 1, not 0")
        e = sample("PayoutFailed")
        e["data"]["postings"][1]["amount"] = 0
        self.rejected(e, "$.data.postings[1].amount")

    def test_a_negative_wallet_balance(self):
        e = sample("WalletTransferSettled")
        e["data"]["postings"][0]["balance"] = -1
        self.rejected(e, "$.data.postings[0].balance")

    def test_record_ids_that_do_not_match_the_wallet_postings(self):
        e = sample("WalletTransferSettled")
        e["data"]["ids"] = e["data"]["ids"][:1]
        self.rejected(e, "$.data.ids")
        e = sample("IncomingCreditReceived", lambda x: len(x["data"]["postings"]) == 4)
        e["data"]["ids"] = e["data"]["ids"][:1]
        self.rejected(e, "$.data.ids")
        e = sample("IncomingCreditReceived", lambda x: len(x["data"]["postings"]) == 4)
        e["data"]["postings"] = e["data"]["postings"][:3]
        self.rejected(e, "$.data")

    def test_command_members_only_for_commands_of_several_events(self):
        e = sample("WalletTransferSettled")
        e["commandSeq"], e["commandSize"] = e["seq"], 1
        self.rejected(e, "$.commandSize")
        e = sample("BeneficiarySaved", lambda x: "commandSize" in x)
        del e["commandSize"]
        self.rejected(e, "$", "'commandSize' is a dependency of 'commandSeq'")

    def test_the_business_is_empty_exactly_for_writer_started(self):
        e = sample("WriterStarted")
        e["business"] = sample("BusinessRegistered")["business"]
        self.rejected(e, "$.business")
        e = sample("PayoutProcessing")
        e["business"] = ""
        self.rejected(e, "$.business")

    def test_a_malformed_hash_and_times(self):
        e = sample("WalletOpened")
        e["hash"] = "ABC"
        self.rejected(e, "$.hash")
        e = sample("WalletOpened")
        e["time"] = "2026-11-24 08:50:32.798Z"
        self.rejected(e, "$.time")
        e = sample("CollectionWalletOpened")
        e["data"]["expiresAt"] = e["data"]["expiresAt"].replace(".", ",")
        self.rejected(e, "$.data.expiresAt")
        e = sample("CollectionWalletOpened")
        e["data"]["expiresAt"] = 1795000000000
        self.rejected(e, "$.data.expiresAt")

    def test_save_beneficiary_is_absent_or_true(self):
        e = sample("BankTransferInitiated", lambda x: "saveBeneficiary" in x["data"])
        e["data"]["saveBeneficiary"] = False
        self.rejected(e, "$.data.saveBeneficiary")

    def test_metadata_is_free_form(self):
        e = sample("BankTransferInitiated")
        e["data"]["metadata"] = {"anything": [1, {"nested": None}]}
        self.assertEqual(SCHEMAS_NOW.violations(e), [])
        e["data"]["metadata"] = "not an object"
        self.rejected(e, "$.data.metadata")


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

    def edit(self, name, change):
        path = self.events / name
        schema = json.loads(path.read_text())
        change(schema)
        path.write_text(json.dumps(schema))

    def test_a_schema_that_is_not_draft_2020_12(self):
        self.edit("payout_failed.schema.json", lambda s: s["$defs"]["data"].update(minProperties="three"))
        self.assertTrue(any(p.startswith("payout_failed.schema.json: not a valid draft 2020-12") for p in self.problems()),
                        self.problems())

    def test_a_schema_that_is_not_json(self):
        (self.events / "payout_succeeded.schema.json").write_text("{")
        self.assertTrue(any(p.startswith("payout_succeeded.schema.json") for p in self.problems()))

    def test_an_open_object(self):
        self.edit("definitions.schema.json", lambda s: s["$defs"]["posting"].pop("additionalProperties"))
        self.assertIn("definitions.schema.json: the object at #/$defs/posting lists properties without "
                      "additionalProperties: false, but the decoder refuses unknown members", self.problems())

    def test_an_event_type_without_its_schema_file(self):
        (self.events / "payout_succeeded.schema.json").unlink()
        self.assertIn("event type PayoutSucceeded has no schema (payout_succeeded.schema.json)", self.problems())

    def test_a_schema_file_of_no_event_type(self):
        # e.g. a v1 file left behind
        self.edit("payout_succeeded.schema.json", lambda s: None)
        schema = json.loads((self.events / "payout_succeeded.schema.json").read_text())
        schema["$id"] = schema["$id"].replace("payout_succeeded", "debited")
        (self.events / "debited.schema.json").write_text(json.dumps(schema))
        self.assertIn("debited.schema.json names no event type of events/event.cc", self.problems())

    def test_the_command_line_fails_on_a_broken_or_v1_event_and_skips_when_there_is_nothing(self):
        good = self.dir / "good.jsonl"
        good.write_text("".join(json.dumps(e) + "\n" for e in SAMPLES))
        bad_event = sample("WalletTransferSettled")
        bad_event["data"]["postings"][0]["balance"] = 1.5
        bad = self.dir / "bad.jsonl"
        bad.write_text(json.dumps(bad_event) + "\n")
        v1 = self.dir / "v1.jsonl"
        v1.write_text(json.dumps(V1_EVENT) + "\n")
        out, err = io.StringIO(), io.StringIO()
        with redirect_stdout(out), redirect_stderr(err):
            self.assertEqual(validate_events.main(["--events", str(good), "--data-root", str(self.dir / "none")]), 0)
            self.assertEqual(validate_events.main(["--events", str(bad)]), 1)
            self.assertEqual(validate_events.main(["--events", str(v1)]), 1)
            self.assertEqual(validate_events.main(["--data-root", str(self.dir / "none")]), 77)
            (self.events / "payout_failed.schema.json").unlink()
            self.assertEqual(validate_events.main(["--schemas", str(self.events), "--events", str(good)]), 1)
        self.assertIn(f"partition {bad_event['partition']} seq {bad_event['seq']} type WalletTransferSettled",
                      err.getvalue())
        self.assertIn("at $.data.postings[0].balance", err.getvalue())
        self.assertIn("partition 1 seq 8 type Debited\n    at $.schemaVersion: event schemaVersion 1 is not supported",
                      err.getvalue())


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
