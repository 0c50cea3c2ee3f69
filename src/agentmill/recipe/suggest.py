"""'Did you mean' for a misspelt recipe key: the keys the schema allows where the unknown one stands."""

from __future__ import annotations

import difflib
import typing
from collections.abc import Sequence

from pydantic import BaseModel


def _model_in(annotation) -> type[BaseModel] | None:
    """The pydantic model inside an annotation (`X`, `X | None`, `list[X]`, `dict[str, X]`)."""
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return annotation
    for arg in typing.get_args(annotation):
        found = _model_in(arg)
        if found is not None:
            return found
    return None


def allowed_keys(root: type[BaseModel], loc: Sequence) -> list[str]:
    """The fields of the model that holds the key at `loc` (its last part is the unknown key)."""
    model: type[BaseModel] | None = root
    for part in loc[:-1]:
        if model is None:
            return []
        if isinstance(part, int) or part not in model.model_fields:
            continue  # a list index, or a dict key such as a role name
        model = _model_in(model.model_fields[part].annotation)
    return sorted(model.model_fields) if model is not None else []


def did_you_mean(root: type[BaseModel], loc: Sequence) -> str:
    """' (did you mean: x?)', or the allowed keys when none is close; '' when the place is unknown."""
    keys = allowed_keys(root, loc)
    if not keys:
        return ""
    close = difflib.get_close_matches(str(loc[-1]), keys, n=3, cutoff=0.6)
    return f" (did you mean: {', '.join(close)}?)" if close else f" (known keys: {', '.join(keys)})"
