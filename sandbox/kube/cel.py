"""CEL validation rules (``x-kubernetes-validations``) of a CRD, evaluated with cel-python.

Follows apiextensions-apiserver ``pkg/apiserver/schema/cel/validation.go``: every rule at every
schema node runs with ``self`` bound to the (non-null) value there; a rule that mentions
``oldSelf`` is a transition rule and runs only where the stored object has a correlated value
(``correlate``), unless ``optionalOldSelf: true`` makes ``oldSelf`` an optional. A failed rule
is an error at the node's path (plus the rule's ``fieldPath``), typed by its ``reason``
(default FieldValueInvalid), saying its ``message``, evaluated ``messageExpression`` or
``failed rule: <rule>``; the server's full wording adds ``Invalid value: "<schema type>"``.
Unchanged values are ratcheted: their non-transition rules may fail without an error (KEP-4008).
A rule cel-python cannot parse or evaluate becomes an error naming it, never an exception.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import celpy
from celpy import celtypes
from celpy.evaluation import CELEvalError

from sandbox.kube import correlate
from sandbox.kube import fielderrors as fe
from sandbox.kube.celfuncs import FUNCTIONS, CelOptional
from sandbox.kube.celvalues import to_cel
from sandbox.kube.fielderrors import FieldError

Schema = Mapping[str, Any]
Errors = list[FieldError]

RULES = "x-kubernetes-validations"
# celconfig.MaxEvaluatedMessageExpressionSizeBytes: a longer evaluated message is not used.
MAX_MESSAGE_BYTES = 5 * 1024
_OLD_SELF = re.compile(r"\boldSelf\b")
_STRING_LITERAL = re.compile(r"'(?:[^'\\]|\\.)*'|\"(?:[^\"\\]|\\.)*\"")
_COMPILE_FAILURE = "compilation failed"
_PATH_STEP = re.compile(r"\.([^.\[\]]+)|\['((?:[^'\\]|\\.)*)'\]")


@dataclass(frozen=True, slots=True)
class Program:
    """A compiled rule, or why it could not be compiled."""

    runner: Any = None
    error: str = ""


@dataclass(frozen=True, slots=True)
class _Node:
    """Where a rule runs: schema, value, old value, field path, and whether it is unchanged."""

    schema: Schema
    value: Any
    old: Any
    path: str
    ratcheted: bool


@functools.lru_cache(maxsize=2048)
def compile_rule(text: str) -> Program:
    """Compile a rule or message expression once per text (bounded cache, thread-safe)."""
    environment = celpy.Environment()
    try:
        ast = environment.compile(text)
        return Program(runner=environment.program(ast, functions=dict(FUNCTIONS)))
    except Exception as error:  # cel-python's parser raises assorted types
        first_line = str(error).strip().splitlines()[0] if str(error).strip() else repr(error)
        return Program(error=f"{_COMPILE_FAILURE}: {first_line}")


def uses_old_self(rule: str) -> bool:
    """Whether a rule is a transition rule (mentions oldSelf outside string literals)."""
    return _OLD_SELF.search(_STRING_LITERAL.sub("''", rule)) is not None


def has_rules(schema: Any) -> bool:
    """Whether any node of a schema carries CEL rules."""
    if isinstance(schema, Mapping):
        return bool(schema.get(RULES)) or any(has_rules(v) for v in schema.values())
    if isinstance(schema, list):
        return any(has_rules(v) for v in schema)
    return False


def validate_rules(schema: Schema, value: Any, old: Any = correlate.MISSING) -> Errors:
    """Every failed CEL rule of the object ``value`` (``old`` is the stored object on update)."""
    return _walk(_Node(schema, value, old, fe.ROOT_FIELD, False))


def _walk(node: _Node) -> Errors:
    if node.value is None:
        return []
    unchanged = correlate.has_old(node.old) and correlate.json_equal(node.old, node.value)
    node = _Node(node.schema, node.value, node.old, node.path, node.ratcheted or unchanged)
    errors = _rules_at(node)
    if isinstance(node.value, dict):
        errors += _walk_object(node)
    elif isinstance(node.value, list):
        items = node.schema.get("items")
        if isinstance(items, Mapping):
            olds = correlate.old_items(node.schema, node.value, node.old)
            for i, item in enumerate(node.value):
                errors += _walk(_Node(items, item, olds[i], fe.index(node.path, i), node.ratcheted))
    return errors


def _walk_object(node: _Node) -> Errors:
    errors: Errors = []
    properties: Mapping[str, Any] = node.schema.get("properties") or {}
    extra = node.schema.get("additionalProperties")
    for name, item in node.value.items():
        old = correlate.old_field(node.schema, node.old, name)
        if name in properties:
            path, sub = fe.child(node.path, name), properties[name]
        elif isinstance(extra, Mapping):
            path, sub = fe.key(node.path, name), extra
        else:
            continue
        errors += _walk(_Node(sub, item, old, path, node.ratcheted))
    return errors


def _rules_at(node: _Node) -> Errors:
    rules = list(node.schema.get(RULES) or [])
    for branch in node.schema.get("allOf") or []:
        rules += branch.get(RULES) or []
    errors: Errors = []
    for rule in rules:
        errors += _check_rule(node, rule)
    return errors


def _activation(node: _Node, optional: bool) -> dict[str, Any]:
    bound: dict[str, Any] = {"self": to_cel(node.value, node.schema)}
    present = correlate.has_old(node.old)
    if optional:
        old = to_cel(node.old, node.schema) if present else None
        bound["oldSelf"] = CelOptional(old, present)
    elif present:
        bound["oldSelf"] = to_cel(node.old, node.schema)
    return bound


def _run(text: str, node: _Node, optional: bool) -> tuple[Any, str]:
    """Evaluate a rule at a node: (result, "") or (None, cel-go-like error text)."""
    program = compile_rule(text)
    if program.error:
        return None, program.error
    try:
        result = program.runner.evaluate(_activation(node, optional))
    except Exception as error:  # the boundary to a third-party interpreter
        return None, _error_text(error)
    if isinstance(result, CELEvalError):
        return None, _error_text(result)
    return result, ""


def _error_text(error: BaseException) -> str:
    """cel-python's evaluation errors in cel-go's words where they have one."""
    args = error.args
    text, cause = (str(args[0]) if args else repr(error)), (args[1] if len(args) > 1 else None)
    if cause is ZeroDivisionError:
        return "division by zero"
    if cause is KeyError or "no such member" in text:
        key = re.search(r"'([^']*)'", text)
        return f"no such key: {key[1] if key else text}"
    if "overload" in text or cause is TypeError:
        return "no such overload"
    if cause is IndexError or text == "invalid_argument":
        return "index out of bounds"
    return text


def _check_rule(node: _Node, rule: Mapping[str, Any]) -> Errors:
    text = str(rule.get("rule", ""))
    transition = uses_old_self(text)
    optional = bool(rule.get("optionalOldSelf", False))
    if not text.strip() or (transition and not correlate.has_old(node.old) and not optional):
        return []
    schema_type = str(node.schema.get("type", ""))
    result, error = _run(text, node, optional)
    if error:
        return [_invalid(node.path, schema_type, _evaluation_failure(error, rule))]
    if result is True or (isinstance(result, celtypes.BoolType) and bool(result)):
        return []
    if node.ratcheted and not transition:
        return []
    return [_failure(node, rule, schema_type)]


def _evaluation_failure(error: str, rule: Mapping[str, Any]) -> str:
    if error.startswith(_COMPILE_FAILURE):
        return f"rule compile error: {error} in rule: {str(rule.get('rule', '')).strip()}"
    if error.startswith("no such overload"):
        return (
            f"'{error}': call arguments did not match a supported operator, function or "
            f"macro signature for rule: {_rule_words(rule)}"
        )
    return f"{error} evaluating rule: {_rule_words(rule)}"


def _rule_words(rule: Mapping[str, Any]) -> str:
    """ruleErrorString: the message if there is one, else the rule."""
    return str(rule.get("message") or rule.get("rule", "")).strip()


def _default_message(rule: Mapping[str, Any]) -> str:
    """ruleMessageOrDefault."""
    message = str(rule.get("message") or "").strip()
    return message or f"failed rule: {str(rule.get('rule', '')).strip()}"


def _message(node: _Node, rule: Mapping[str, Any]) -> str:
    expression = str(rule.get("messageExpression") or "")
    if not expression:
        return _default_message(rule)
    result, error = _run(expression, node, optional=False)
    text = str(result).strip() if isinstance(result, str) and not error else ""
    if not text or "\n" in text or len(text.encode()) > MAX_MESSAGE_BYTES:
        return _default_message(rule)
    return text


def _invalid(path: str, schema_type: str, detail: str) -> FieldError:
    full = fe.invalid(path, schema_type, detail)
    return FieldError(path, fe.INVALID, detail, full.message)


def _failure(node: _Node, rule: Mapping[str, Any], schema_type: str) -> FieldError:
    path = _rule_path(node, str(rule.get("fieldPath") or ""))
    detail = _message(node, rule)
    reason = rule.get("reason")
    if reason == fe.FORBIDDEN:
        full = fe.forbidden(path, detail)
    elif reason == fe.REQUIRED:
        full = fe.required(path, detail)
    elif reason == fe.DUPLICATE:
        full = fe.duplicate(path, schema_type)
    else:
        full = fe.invalid(path, schema_type, detail)
    return FieldError(path, full.reason, detail, full.message)


def _rule_path(node: _Node, field_path: str) -> str:
    """The node's path extended by a rule's ``fieldPath`` (``.a.b`` or ``['a']``)."""
    path, schema = node.path, node.schema
    for match in _PATH_STEP.finditer(field_path):
        name = match[1] if match[1] is not None else re.sub(r"\\(.)", r"\1", match[2])
        properties = schema.get("properties") or {}
        if name in properties:
            path, schema = fe.child(path, name), properties[name]
        else:
            extra = schema.get("additionalProperties")
            schema = extra if isinstance(extra, Mapping) else {}
            path = fe.key(path, name)
    return path
