"""OpenAPI 3.0 schema objects made from the records' and requests' models, so that the REST
document (:mod:`.openapi`) states each field's name, type, nullability and whether it is
required exactly as the model declares it.

A model is a msgspec Struct or a pydantic model; a field's type is read with
``msgspec.inspect`` (which reads a pydantic field's annotation too).  What a type cannot say
(a description, a date-time format, bounds, the properties of a free-form object) is added by
the caller as ``notes``, which may not contradict the model: a note naming ``type`` or
``nullable`` is refused.
"""
from __future__ import annotations

from enum import Enum
from typing import Any, Iterable, Mapping

import msgspec
from msgspec import inspect as mi

_SCALARS = {mi.StrType: "string", mi.IntType: "integer", mi.FloatType: "number", mi.BoolType: "boolean"}


def type_schema(info: mi.Type) -> dict[str, Any]:
    """The schema of one msgspec type (``Optional[T]``: T's with ``nullable``)."""
    if isinstance(info, mi.UnionType):
        types = [t for t in info.types if not isinstance(t, mi.NoneType)]
        schema = type_schema(types[0]) if len(types) == 1 else {"oneOf": [type_schema(t) for t in types]}
        return {**schema, "nullable": True} if len(types) < len(info.types) else schema
    if type(info) in _SCALARS:
        return {"type": _SCALARS[type(info)]}
    if isinstance(info, mi.EnumType):
        return {"type": "string", "enum": [m.value for m in info.cls]}
    if isinstance(info, mi.LiteralType):
        return {"type": "string", "enum": list(info.values)}
    if isinstance(info, (mi.ListType, mi.TupleType, mi.VarTupleType)):
        item = info.item_type if not isinstance(info, mi.TupleType) else mi.AnyType()
        return {"type": "array", "items": type_schema(item)}
    if isinstance(info, mi.DictType):
        values = type_schema(info.value_type)
        return {"type": "object", **({"additionalProperties": values} if values else {})}
    if isinstance(info, (mi.StructType, mi.DataclassType)):
        return {"type": "object"}
    if isinstance(info, mi.AnyType):
        return {}
    raise TypeError(f"no OpenAPI schema for {info!r}")


def model_fields(model: type) -> dict[str, tuple[dict[str, Any], bool, Any]]:
    """``{field: (schema, required, default)}`` of a msgspec Struct or a pydantic model, in declaration
    order (``default``: a scalar one, else None)."""
    def scalar(value: Any) -> Any:
        return value.value if isinstance(value, Enum) else value if isinstance(value, (str, int, float)) else None

    if isinstance(model, type) and issubclass(model, msgspec.Struct):
        return {f.encode_name: (type_schema(f.type), f.required, scalar(f.default)) for f in mi.type_info(model).fields}
    return {name: (type_schema(mi.type_info(field.annotation)), field.is_required(), scalar(field.default))
            for name, field in model.model_fields.items()}


def object_schema(model: type, fields: Iterable[str] | None = None, *, notes: Mapping[str, dict] | None = None,
                  all_required: bool = False, description: str | None = None) -> dict[str, Any]:
    """The object schema of ``model``'s ``fields`` (default: all, in order) with ``notes`` added to each.

    ``all_required``: every field is required (an answer that always carries each one), else the
    fields the model requires, and the others show their defaults (a request)."""
    declared = model_fields(model)
    names = list(declared if fields is None else fields)
    properties: dict[str, Any] = {}
    for name in names:
        schema, _, default = declared[name]
        if not all_required and default is not None:
            schema = {**schema, "default": default}
        note = dict((notes or {}).get(name, {}))
        clash = {k for k in ("type", "nullable") if k in note}
        if clash:
            raise ValueError(f"the note of {model.__name__}.{name} sets {sorted(clash)}, which its model declares")
        properties[name] = {**schema, **note}
    unknown = set(notes or {}) - set(names)
    if unknown:
        raise ValueError(f"notes for fields {model.__name__} does not show: {sorted(unknown)}")
    required = names if all_required else [n for n in names if declared[n][1]]
    return {"type": "object", **({"description": description} if description else {}),
            **({"required": required} if required else {}), "properties": properties}
