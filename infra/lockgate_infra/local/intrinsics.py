"""CloudFormation intrinsic functions, evaluated the way the local stack needs them.

Only what a function's environment, a queue's redrive policy or a schedule's
input can reasonably contain is supported; anything else raises TemplateError
naming where it was found, rather than guessing.
"""

from __future__ import annotations

import base64
import json
import re
from collections.abc import Mapping
from typing import Any

REGION = "us-east-1"
ACCOUNT_ID = "123456789012"  # moto's default account
STACK_NAME = "lockgate-local"

PSEUDO_PARAMETERS: Mapping[str, Any] = {
    "AWS::Region": REGION,
    "AWS::AccountId": ACCOUNT_ID,
    "AWS::StackName": STACK_NAME,
    "AWS::StackId": f"arn:aws:cloudformation:{REGION}:{ACCOUNT_ID}:stack/{STACK_NAME}/local",
    "AWS::Partition": "aws",
    "AWS::URLSuffix": "amazonaws.com",
    "AWS::NotificationARNs": [],
}
_SUB_VARIABLE = re.compile(r"\$\{([^}]*)\}")


class TemplateError(ValueError):
    """The template cannot be read or resolved for local use."""


class _NoValue:
    """``Ref: AWS::NoValue``: the property is removed."""


NO_VALUE = _NoValue()


class Resolver:
    """Evaluates intrinsics against local names, parameters, mappings and conditions."""

    def __init__(
        self,
        template: Mapping[str, Any],
        parameters: Mapping[str, str] | None,
        refs: Mapping[str, Any],
        attributes: Mapping[tuple[str, str], str],
    ) -> None:
        self._template = template
        self._overrides = dict(parameters or {})
        self._refs = refs
        self._attributes = attributes
        self._conditions: dict[str, bool] = {}
        declared = template.get("Parameters") or {}
        unknown = sorted(set(self._overrides) - set(declared))
        if unknown:
            raise TemplateError(f"unknown template parameter(s): {', '.join(unknown)}")

    def resolve(self, value: Any, where: str) -> Any:
        """``value`` with every intrinsic evaluated; ``where`` names it in errors."""
        if isinstance(value, list):
            resolved = [self.resolve(v, f"{where}[{i}]") for i, v in enumerate(value)]
            return [v for v in resolved if v is not NO_VALUE]
        if not isinstance(value, dict):
            return value
        if len(value) == 1:
            ((key, arg),) = value.items()
            if key == "Ref":
                return self.ref(arg, where)
            if key.startswith("Fn::") or (key == "Condition" and isinstance(arg, str)):
                return self._function(key, arg, where)
        fields = {k: self.resolve(v, f"{where}.{k}") for k, v in value.items()}
        return {k: v for k, v in fields.items() if v is not NO_VALUE}

    def resolve_string(self, value: Any, where: str) -> str:
        """Resolve to a string the way CloudFormation stringifies environment values."""
        return self.stringify(self.resolve(value, where), where)

    def stringify(self, value: Any, where: str) -> str:
        """A resolved scalar as CloudFormation writes it into a string."""
        if isinstance(value, bool):
            return "true" if value else "false"
        if isinstance(value, int | float | str):
            return str(value)
        raise TemplateError(f"{where}: expected a string, got {type(value).__name__} {value!r}")

    def ref(self, name: Any, where: str) -> Any:
        """The local value of ``Ref: name``."""
        if not isinstance(name, str):
            raise TemplateError(f"{where}: Ref takes a name, got {name!r}")
        if name == "AWS::NoValue":
            return NO_VALUE
        if name in PSEUDO_PARAMETERS:
            return PSEUDO_PARAMETERS[name]
        if name in (self._template.get("Parameters") or {}):
            return self.parameter(name, where)
        if name in self._refs:
            return self._refs[name]
        if name in (self._template.get("Resources") or {}):
            kind = self._template["Resources"][name].get("Type", "?")
            raise TemplateError(f"{where}: cannot resolve Ref {name} ({kind}) locally")
        raise TemplateError(f"{where}: Ref to unknown name {name!r}")

    def get_att(self, logical_id: str, attribute: str, where: str) -> str:
        """The local value of ``Fn::GetAtt: [logical_id, attribute]``."""
        try:
            return self._attributes[(logical_id, attribute)]
        except KeyError:
            raise TemplateError(f"{where}: cannot resolve GetAtt {logical_id}.{attribute} locally") from None

    def parameter(self, name: str, where: str) -> Any:
        """A parameter's override, else its Default, typed like CloudFormation does."""
        spec = self._template["Parameters"][name] or {}
        if name in self._overrides:
            value: Any = self._overrides[name]
        elif "Default" in spec:
            value = spec["Default"]
        else:
            raise TemplateError(f"{where}: parameter {name} has no Default and no value was given")
        allowed = spec.get("AllowedValues")
        if allowed is not None and str(value) not in [str(a) for a in allowed]:
            raise TemplateError(f"parameter {name}: {value!r} is not one of {allowed}")
        kind = str(spec.get("Type", "String"))
        if kind == "CommaDelimitedList" or kind.startswith("List<"):
            return [part.strip() for part in str(value).split(",")] if value != "" else []
        return str(value) if kind == "Number" else value

    def condition(self, name: str, where: str = "Conditions") -> bool:
        """The value of a named condition."""
        if name not in self._conditions:
            conditions = self._template.get("Conditions") or {}
            if name not in conditions:
                raise TemplateError(f"{where}: unknown condition {name!r}")
            self._conditions[name] = self._truth(conditions[name], f"Conditions.{name}")
        return self._conditions[name]

    def _truth(self, expression: Any, where: str) -> bool:
        value = self.resolve(expression, where)
        if isinstance(value, bool):
            return value
        if isinstance(value, str) and value.lower() in ("true", "false"):
            return value.lower() == "true"
        raise TemplateError(f"{where}: condition did not evaluate to a boolean: {value!r}")

    def _function(self, key: str, arg: Any, where: str) -> Any:
        here = f"{where}.{key}"
        match key:
            case "Condition":
                return self.condition(arg, here)
            case "Fn::GetAtt":
                logical_id, attribute = _get_att_parts(self.resolve(arg, here), here)
                return self.get_att(logical_id, attribute, here)
            case "Fn::Sub":
                return self._sub(arg, here)
            case "Fn::Join":
                delimiter, items = _pair(self.resolve(arg, here), here)
                return str(delimiter).join(self.stringify(i, here) for i in items)
            case "Fn::Select":
                index, items = _pair(self.resolve(arg, here), here)
                try:
                    return items[int(index)]
                except (IndexError, ValueError, TypeError):
                    raise TemplateError(f"{here}: index {index!r} out of range") from None
            case "Fn::Split":
                delimiter, text = _pair(self.resolve(arg, here), here)
                return str(text).split(str(delimiter))
            case "Fn::Base64":
                return base64.b64encode(self.stringify(self.resolve(arg, here), here).encode()).decode()
            case "Fn::ToJsonString":
                return json.dumps(self.resolve(arg, here), separators=(",", ":"))
            case "Fn::GetAZs":
                return [f"{REGION}{zone}" for zone in "abcdef"]
            case "Fn::FindInMap":
                return self._find_in_map(arg, here)
            case "Fn::If":
                if not isinstance(arg, list) or len(arg) != 3:
                    raise TemplateError(f"{here}: expected [condition, if_true, if_false]")
                chosen = arg[1] if self.condition(arg[0], here) else arg[2]
                return self.resolve(chosen, here)
            case "Fn::Equals":
                left, right = _pair(self.resolve(arg, here), here)
                return _canonical(left) == _canonical(right)
            case "Fn::Not":
                if not isinstance(arg, list) or len(arg) != 1:
                    raise TemplateError(f"{here}: expected [condition]")
                return not self._truth(arg[0], here)
            case "Fn::And":
                return all(self._truth(c, here) for c in _list(arg, here))
            case "Fn::Or":
                return any(self._truth(c, here) for c in _list(arg, here))
        raise TemplateError(f"{here}: {key} is not supported by the local stack")

    def _sub(self, arg: Any, where: str) -> str:
        if isinstance(arg, list):
            if len(arg) != 2 or not isinstance(arg[1], dict):
                raise TemplateError(f"{where}: expected a string or [string, {{variables}}]")
            text, variables = arg[0], arg[1]
        else:
            text, variables = arg, {}
        if not isinstance(text, str):
            raise TemplateError(f"{where}: expected a string, got {text!r}")

        def substitute(match: re.Match[str]) -> str:
            name = match.group(1).strip()
            if name.startswith("!"):  # ${!Literal} is written out as ${Literal}
                return "${" + name[1:] + "}"
            if name in variables:
                return self.stringify(self.resolve(variables[name], f"{where}.{name}"), where)
            if "." in name and not name.startswith("AWS::"):
                logical_id, attribute = name.split(".", 1)
                return self.get_att(logical_id, attribute, where)
            return self.stringify(self.ref(name, where), where)

        return _SUB_VARIABLE.sub(substitute, text)

    def _find_in_map(self, arg: Any, where: str) -> Any:
        keys = self.resolve(arg, where)
        if not isinstance(keys, list) or len(keys) < 3:
            raise TemplateError(f"{where}: expected [MapName, TopLevelKey, SecondLevelKey]")
        name, top, second = (str(k) for k in keys[:3])
        try:
            value = (self._template.get("Mappings") or {})[name][top][second]
        except (KeyError, TypeError):
            raise TemplateError(f"{where}: no mapping {name}.{top}.{second}") from None
        return self.resolve(value, where)


def _get_att_parts(arg: Any, where: str) -> tuple[str, str]:
    if isinstance(arg, str) and "." in arg:
        logical_id, attribute = arg.split(".", 1)
        return logical_id, attribute
    if isinstance(arg, list) and len(arg) == 2 and all(isinstance(a, str) for a in arg):
        return arg[0], arg[1]
    raise TemplateError(f"{where}: expected LogicalId.Attribute or [LogicalId, Attribute], got {arg!r}")


def _pair(value: Any, where: str) -> tuple[Any, Any]:
    if isinstance(value, list) and len(value) == 2:
        return value[0], value[1]
    raise TemplateError(f"{where}: expected a list of two, got {value!r}")


def _list(value: Any, where: str) -> list[Any]:
    if isinstance(value, list):
        return value
    raise TemplateError(f"{where}: expected a list, got {value!r}")


def _canonical(value: Any) -> Any:
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value) if isinstance(value, int | float) else value


def logical_id_of(value: Any, attributes: tuple[str, ...] = ("Arn",)) -> str | None:
    """The logical id behind ``!GetAtt X.Arn`` (or ``!Ref X``), without resolving it."""
    if not isinstance(value, dict) or len(value) != 1:
        return None
    ((key, arg),) = value.items()
    if key == "Ref" and isinstance(arg, str):
        return arg
    if key == "Fn::GetAtt":
        try:
            logical_id, attribute = _get_att_parts(arg, "")
        except TemplateError:
            return None
        return logical_id if attribute in attributes else None
    return None
