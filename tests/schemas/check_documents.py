#!/usr/bin/env python3
"""Checks schemas/openapi.yaml and compose/ without a Docker engine or a network.

schemas/openapi.yaml: YAML with `openapi: 3.1.x`; every local $ref resolves; every path template
parameter is declared `in: path` (and no other); operationIds are unique; every operation has
responses; every security requirement names a scheme; every component schema is valid JSON
Schema 2020-12 (OpenAPI 3.1's schema dialect). Which routes it lists is tests/openapi_routes_test.cc.

compose/compose.yaml and compose/Dockerfile: Kafka in KRaft combined mode from apache/kafka with
the single-broker transaction settings; a `kobo` writer+query node with a published port, a
volume and a /readyz healthcheck; a separate projector node with its own volume; every volume
declared; the image built on debian:bookworm and running as a non-root user.

Exit 0 when all hold, 1 with the list of what does not.
"""

import re
import sys
from pathlib import Path

import yaml
from jsonschema import Draft202012Validator
from jsonschema.exceptions import SchemaError

METHODS = {"get", "put", "post", "delete", "options", "head", "patch", "trace"}


def resolve_pointer(doc, pointer):
    node = doc
    for part in pointer.lstrip("#/").split("/"):
        part = part.replace("~1", "/").replace("~0", "~")
        if not isinstance(node, dict) or part not in node:
            return None
        node = node[part]
    return node


def local_refs(node, where="$"):
    if isinstance(node, dict):
        for key, value in node.items():
            if key == "$ref" and isinstance(value, str):
                yield where, value
            else:
                yield from local_refs(value, f"{where}.{key}")
    elif isinstance(node, list):
        for i, value in enumerate(node):
            yield from local_refs(value, f"{where}[{i}]")


def check_openapi(doc):
    problems = []
    if not isinstance(doc, dict):
        return ["openapi.yaml: not a YAML mapping"]
    if not re.fullmatch(r"3\.1\.\d+", str(doc.get("openapi", ""))):
        problems.append(f"openapi.yaml: openapi is {doc.get('openapi')!r}, not 3.1.x")
    info = doc.get("info") or {}
    if not info.get("title") or not info.get("version"):
        problems.append("openapi.yaml: info needs title and version")
    for where, ref in local_refs(doc):
        if not ref.startswith("#/"):
            problems.append(f"openapi.yaml {where}: $ref {ref} is not local")
        elif resolve_pointer(doc, ref) is None:
            problems.append(f"openapi.yaml {where}: $ref {ref} resolves to nothing")
    schemes = set(((doc.get("components") or {}).get("securitySchemes") or {}).keys())

    def check_security(requirements, where):
        for requirement in requirements or []:
            for name in requirement:
                if name not in schemes:
                    problems.append(f"openapi.yaml {where}: security scheme {name} is not defined")

    check_security(doc.get("security"), "security")
    operation_ids = {}
    paths = doc.get("paths") or {}
    if not paths:
        problems.append("openapi.yaml: no paths")
    for path, item in paths.items():
        template = set(re.findall(r"\{([^}]+)\}", path))
        for method, op in item.items():
            if method not in METHODS:
                continue
            where = f"{method.upper()} {path}"
            params = [resolve_pointer(doc, p["$ref"]) if "$ref" in p else p
                      for p in (item.get("parameters") or []) + (op.get("parameters") or [])]
            declared = {p.get("name") for p in params if p and p.get("in") == "path"}
            for name in template - declared:
                problems.append(f"openapi.yaml {where}: path parameter {name} is not declared")
            for name in declared - template:
                problems.append(f"openapi.yaml {where}: parameter {name} is in: path but not in the path")
            for p in params:
                if p and p.get("in") == "path" and p.get("required") is not True:
                    problems.append(f"openapi.yaml {where}: path parameter {p.get('name')} must be required")
            if not op.get("responses"):
                problems.append(f"openapi.yaml {where}: no responses")
            op_id = op.get("operationId")
            if not op_id:
                problems.append(f"openapi.yaml {where}: no operationId")
            elif op_id in operation_ids:
                problems.append(f"openapi.yaml {where}: operationId {op_id} is also {operation_ids[op_id]}")
            else:
                operation_ids[op_id] = where
            check_security(op.get("security"), where)
    for name, schema in ((doc.get("components") or {}).get("schemas") or {}).items():
        try:
            Draft202012Validator.check_schema(schema)
        except SchemaError as e:
            problems.append(f"openapi.yaml components.schemas.{name}: {str(e).splitlines()[0]}")
    return problems


def as_list(command):
    return command.split() if isinstance(command, str) else [str(c) for c in command or []]


def flag(command, name):
    args = as_list(command)
    return args[args.index(name) + 1] if name in args[:-1] else None


def volumes_of(service):
    return [str(v).split(":")[0] for v in service.get("volumes") or []]


def check_compose(doc):
    problems = []
    services = (doc or {}).get("services") or {}
    for name in ("kafka", "kobo", "kobo-projector"):
        if name not in services:
            problems.append(f"compose.yaml: no service {name}")
    if problems:
        return problems
    kafka, kobo, projector = services["kafka"], services["kobo"], services["kobo-projector"]
    if not str(kafka.get("image", "")).startswith("apache/kafka:"):
        problems.append(f"compose.yaml kafka: image {kafka.get('image')} is not the official apache/kafka")
    env = {k: str(v) for k, v in (kafka.get("environment") or {}).items()}
    wanted = {
        "KAFKA_PROCESS_ROLES": "broker,controller",
        "KAFKA_TRANSACTION_STATE_LOG_REPLICATION_FACTOR": "1",
        "KAFKA_TRANSACTION_STATE_LOG_MIN_ISR": "1",
        "KAFKA_OFFSETS_TOPIC_REPLICATION_FACTOR": "1",
    }
    for key, value in wanted.items():
        if env.get(key) != value:
            problems.append(f"compose.yaml kafka: {key} is {env.get(key)!r}, wants {value!r}")
    for key in ("KAFKA_NODE_ID", "KAFKA_CONTROLLER_QUORUM_VOTERS", "KAFKA_LISTENERS", "KAFKA_ADVERTISED_LISTENERS",
                "KAFKA_CONTROLLER_LISTENER_NAMES", "CLUSTER_ID"):
        if not env.get(key):
            problems.append(f"compose.yaml kafka: {key} is not set")
    for name, service, roles in (("kobo", kobo, "command,projector,query"), ("kobo-projector", projector, "projector")):
        command = service.get("command")
        if as_list(command)[:1] != ["serve"]:
            problems.append(f"compose.yaml {name}: command does not start with serve")
        if flag(command, "--roles") != roles:
            problems.append(f"compose.yaml {name}: --roles is {flag(command, '--roles')!r}, wants {roles!r}")
        brokers = flag(command, "--kafka-brokers") or ""
        if not brokers.startswith("kafka:") or brokers.split(":")[-1] not in env.get("KAFKA_ADVERTISED_LISTENERS", ""):
            problems.append(f"compose.yaml {name}: --kafka-brokers {brokers!r} is not an advertised kafka listener")
        if flag(command, "--data-dir") != "/data" or "/data" not in [str(v).split(":")[1] for v in service.get("volumes") or []]:
            problems.append(f"compose.yaml {name}: --data-dir /data must be a volume")
        if "kafka" not in (service.get("depends_on") or {}):
            problems.append(f"compose.yaml {name}: does not depend on kafka")
        if not (service.get("build") or {}).get("dockerfile", "").endswith("Dockerfile"):
            problems.append(f"compose.yaml {name}: not built from compose/Dockerfile")
    if not any(str(p).endswith(":8080") for p in kobo.get("ports") or []):
        problems.append("compose.yaml kobo: port 8080 is not published")
    if "/readyz" not in " ".join(as_list((kobo.get("healthcheck") or {}).get("test"))):
        problems.append("compose.yaml kobo: the healthcheck does not ask /readyz")
    if set(volumes_of(kobo)) & set(volumes_of(projector)):
        problems.append("compose.yaml: kobo and kobo-projector share a volume; each needs its own data dir")
    declared = set((doc.get("volumes") or {}).keys())
    for name, service in services.items():
        for volume in volumes_of(service):
            if not volume.startswith((".", "/")) and volume not in declared:
                problems.append(f"compose.yaml {name}: volume {volume} is not declared")
    return problems


def check_dockerfile(text):
    problems = []
    stages = re.findall(r"^FROM\s+(\S+)", text, re.M)
    if not stages:
        problems.append("Dockerfile: no FROM")
    for image in stages:
        if not re.fullmatch(r"debian:bookworm(-slim)?", image):
            problems.append(f"Dockerfile: FROM {image} is not Debian bookworm")
    last_stage = text[text.rfind("\nFROM "):] if "\nFROM " in text else text
    users = re.findall(r"^USER\s+(\S+)", last_stage, re.M)
    if not users or users[-1] in ("root", "0"):
        problems.append("Dockerfile: the runtime stage does not switch to a non-root USER")
    if "tools/install-deps.sh" not in text:
        problems.append("Dockerfile: the build stage does not install with tools/install-deps.sh")
    for package in ("librocksdb7.8", "librdkafka1", "libssl3", "libboost-url1.81.0"):
        if package not in last_stage:
            problems.append(f"Dockerfile: the runtime stage does not install {package}")
    return problems


def main(argv=None):
    repo = Path(__file__).resolve().parent.parent.parent
    problems = []
    try:
        problems += check_openapi(yaml.safe_load((repo / "schemas" / "openapi.yaml").read_text()))
        problems += check_compose(yaml.safe_load((repo / "compose" / "compose.yaml").read_text()))
        problems += check_dockerfile((repo / "compose" / "Dockerfile").read_text())
    except (OSError, yaml.YAMLError) as e:
        problems.append(str(e))
    if problems:
        print("check_documents:\n  " + "\n  ".join(problems), file=sys.stderr)
        return 1
    print("check_documents: schemas/openapi.yaml, compose/compose.yaml and compose/Dockerfile are consistent")
    return 0


if __name__ == "__main__":
    sys.exit(main())
