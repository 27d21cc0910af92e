"""schemathesis hooks for run_schemathesis.py (loaded through SCHEMATHESIS_HOOKS).

schemathesis 4.32.5 (pinned in tools/test-requirements.txt) infers resources from field names
and takes a body field ending in `Address` for a reference to another resource: our wallets'
`emailAddress` becomes a reference to an "Email" resource that no operation makes. An operation
that seems to need a resource nobody makes is never a first step of its stateful phase, so no
run would start by creating a wallet, and none of the links from a created wallet (into
transfers, payouts, collections, credits, gets) would ever be followed. Our `emailAddress` is an
e-mail address, nothing else's id: creating a wallet or a transit wallet is a first step.
"""

from schemathesis.specs.openapi import stateful

_CREATE_WALLET = {("post", "/v1/virtual-accounts"), ("post", "/v1/transit-accounts")}
_inferred = stateful.is_likely_root_transition


def _is_likely_root_transition(operation, node, produced_anywhere):
    if (operation.method, operation.path) in _CREATE_WALLET:
        return True
    return _inferred(operation, node, produced_anywhere)


stateful.is_likely_root_transition = _is_likely_root_transition
