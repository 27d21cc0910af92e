"""schemathesis hooks for run_schemathesis.py (loaded through SCHEMATHESIS_HOOKS).

schemathesis 4.32.5 (pinned in tools/test-requirements.txt) infers resources from field names
and takes a body field ending in `Address` for a reference to another resource: our wallets'
`emailAddress` becomes a reference to an "Email" resource that no operation makes. An operation
that seems to need a resource nobody makes is never a first step of its stateful phase, so no
run would start by creating a wallet, and none of the links from a created wallet (into
transfers, payouts, collections, credits, gets) would ever be followed. Our `emailAddress` is an
e-mail address, nothing else's id: creating a wallet or a transit wallet is a first step.
"""

import itertools

import schemathesis
from schemathesis.specs.openapi import stateful

_CREATE_WALLET = {("post", "/v1/virtual-accounts"), ("post", "/v1/transit-accounts")}
_inferred = stateful.is_likely_root_transition


def _is_likely_root_transition(operation, node, produced_anywhere):
    if (operation.method, operation.path) in _CREATE_WALLET:
        return True
    return _inferred(operation, node, produced_anywhere)


stateful.is_likely_root_transition = _is_likely_root_transition


# Wallet names are unique per account and mode (400 `Virtual Account name already exist`), an
# account has a bounded number of primary wallets (400 `Primary wallet limit reached`), and the
# data schemathesis generates repeats the few shortest names and the first category: most
# wallets it asks for would be refused, and few runs would get past their first step. So a
# schema-valid name gets a suffix that makes it unique (still within maxLength), and a primary
# wallet becomes a secondary one, with the e-mail address and mobile a secondary wallet needs
# (those generated when they are valid). Anything else is sent as generated.
_WALLET_PATHS = {"/v1/virtual-accounts", "/v1/transit-accounts"}
_serial = itertools.count(1)


@schemathesis.hook
def before_call(ctx, case, **kwargs):
    if case.method.upper() != "POST" or case.path not in _WALLET_PATHS or not isinstance(case.body, dict):
        return
    name = case.body.get("accountName")
    if not (isinstance(name, str) and 1 <= len(name) <= 90):
        return
    case.body["accountName"] = f"{name} #{next(_serial)}"
    if case.path == "/v1/virtual-accounts" and case.body.get("category") == "primary":
        case.body["category"] = "secondary"
        if not isinstance(case.body.get("emailAddress"), str):
            case.body["emailAddress"] = "wallet@example.com"
        if not isinstance(case.body.get("mobile"), dict):
            case.body["mobile"] = {"phoneNumber": "08030000000", "isoCode": "NG"}
