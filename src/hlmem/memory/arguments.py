"""The facade's argument checks: a wrong type or value is an error naming the argument.

Each public :class:`hlmem.memory.facade.Memory` method passes its own arguments (``locals()``) to
:func:`check` first, before anything is read or written; :data:`RULES` says, per method and
argument, what is accepted. A refused argument raises :class:`~hlmem.errors.InputError`
("recall: k must be an integer of at least 1, not '3'"), never a ``TypeError`` or an
``AttributeError`` from deep inside, and never a quiet misreading (a string taken as a
datetime, "no" taken as true, a negative limit read by SQLite as no limit). An iterable
argument is checked by :func:`many` without being read (it may be a generator); its items by
:func:`strings`, which reads it once for the method (qualifiers, claim ids), or by the
method's own validation (events). :func:`memory_options` checks ``hlmem.open``'s arguments
(:class:`~hlmem.errors.ConfigError`) and builds a config from a mapping.

Pure functions over values: no store, no files (a mapping's config reads the environment, as
:func:`hlmem.config.load_config` does).
"""

from __future__ import annotations

import math
import os
from collections.abc import Callable, Iterable, Mapping
from datetime import datetime
from typing import Any, get_args

from hlmem.claims import ForgetResult
from hlmem.config import Config, load_config
from hlmem.errors import ConfigError, InputError
from hlmem.messages import ID_MAX_CHARS, ClaimScope, EventIn, JobStatus, RecallMode

Rule = Callable[[str, Any], str | None]  # the argument's name and value -> the problem, if any

PIPELINE_MODES = ("inline", "external")
#: what a clock given to ``hlmem.open`` must read (hlmem.clock.Clock)
_CLOCK_READINGS = ("now", "wall", "monotonic")


def _shown(value: Any) -> str:
    """The value as a message shows it: its repr, or only its type and size when long."""
    text = repr(value)
    if len(text) <= 40:
        return text
    size = len(value) if isinstance(value, str) else len(text)
    return f"a {type(value).__name__} of {size} characters"


def string(name: str, value: Any) -> str | None:
    return None if isinstance(value, str) else f"{name} must be a string, not {_shown(value)}"


def text(name: str, value: Any) -> str | None:
    """A string that is not blank."""
    problem = string(name, value)
    return problem or (f"{name} is blank" if not value.strip() else None)


def optional(rule: Rule) -> Rule:
    def check(name: str, value: Any) -> str | None:
        return None if value is None else rule(name, value)

    return check


def identifier(name: str, value: Any) -> str | None:
    """A namespace, session or item id: text of at most ID_MAX_CHARS, no control characters."""
    problem = text(name, value)
    if problem is None and (len(value) > ID_MAX_CHARS or any(ord(c) < 32 for c in value)):
        problem = f"{name} must be at most {ID_MAX_CHARS} characters without control characters"
    return problem


def count(minimum: int) -> Rule:
    def check(name: str, value: Any) -> str | None:
        if isinstance(value, bool) or not isinstance(value, int) or value < minimum:
            return f"{name} must be an integer of at least {minimum}, not {_shown(value)}"
        return None

    return check


def number(low: float, high: float = math.inf) -> Rule:
    def check(name: str, value: Any) -> str | None:
        ok = isinstance(value, int | float) and not isinstance(value, bool)
        if not ok or not low <= value <= high:  # NaN is in no range
            span = f"of at least {low:g}" if high == math.inf else f"from {low:g} to {high:g}"
            return f"{name} must be a number {span}, not {_shown(value)}"
        return None

    return check


def flag(name: str, value: Any) -> str | None:
    return None if isinstance(value, bool) else f"{name} must be True or False, not {_shown(value)}"


def aware(name: str, value: Any) -> str | None:
    """A timezone-aware datetime (a naive one names no moment; a string is not parsed)."""
    if not isinstance(value, datetime):
        return f"{name} must be a datetime, not {_shown(value)}"
    if value.utcoffset() is None:
        return f"{name} must be timezone-aware (e.g. datetime(..., tzinfo=UTC))"
    return None


def choice(*allowed: Any) -> Rule:
    def check(name: str, value: Any) -> str | None:
        # of the allowed value's type: True is not 1, 1.0 is not 1, "todo" is JobStatus.TODO
        if not isinstance(value, bool) and any(
            isinstance(value, type(a)) and value == a for a in allowed
        ):
            return None
        return f"{name} must be one of {', '.join(map(repr, allowed))}, not {_shown(value)}"

    return check


def path(name: str, value: Any) -> str | None:
    if not isinstance(value, str | os.PathLike) or not os.fspath(value):
        return f"{name} must be a file path (str or os.PathLike), not {_shown(value)}"
    return None


def instance(kind: type, shown: str) -> Rule:
    """A value of ``kind`` (``shown``: how the message names it)."""

    def check(name: str, value: Any) -> str | None:
        return None if isinstance(value, kind) else f"{name} must be {shown}, not {_shown(value)}"

    return check


def many(*single: type) -> Rule:
    """Several values: any iterable but a string or bytes (whose items are characters) or one
    of the ``single`` types (one value passed where several are asked for)."""
    refused = (str, bytes, *single)

    def check(name: str, value: Any) -> str | None:
        if isinstance(value, refused) or not isinstance(value, Iterable):
            return f"{name} must be an iterable of values (a list, a tuple), not {_shown(value)}"
        return None

    return check


_ns, _id, _opt_id = optional(identifier), identifier, optional(identifier)
_opt_text, _when, _limit = optional(text), optional(aware), count(1)
_unit = number(0.0, 1.0)

#: per Memory method, per argument, the rule its value must pass
RULES: dict[str, dict[str, Rule]] = {
    "add_events": {"events": many(Mapping, EventIn)},
    "remember": {
        "subject": text,
        "predicate": text,
        "value": text,
        "text": _opt_text,
        "namespace": _ns,
        "session_id": _id,
        "event_id": _opt_id,
        "polarity": choice(1, -1),
        "qualifiers": many(),
        "scope": choice(*get_args(ClaimScope)),
        "valid_from": _when,
        "valid_to": _when,
        "importance": _unit,
        "confidence": _unit,
        "override_forget": flag,
    },
    "end_session": {"session_id": _id, "namespace": _ns},
    "flush": {"namespace": _ns, "session_id": _opt_id},
    "drain": {"timeout_s": optional(number(0.0)), "settle_s": number(0.0)},
    "claims": {
        "namespace": _ns,
        "subject": _opt_text,
        "predicate": _opt_text,
        "history": flag,
        "as_of": _when,
        "valid_at": _when,
        "limit": _limit,
    },
    "events": {"namespace": _ns, "session_id": _opt_id, "include_untrusted": flag, "limit": _limit},
    "supersessions": {"claim_ids": many()},
    "recall": {
        "query": string,  # a blank query recalls nothing
        "namespace": _ns,
        "k": count(1),
        "mode": optional(choice(*get_args(RecallMode))),
        "as_of": _when,
        "valid_at": _when,
        "budget_tokens": optional(count(1)),
        "include_untrusted": flag,
        "session_id": _opt_id,
    },
    "feedback": {"item_id": _id, "useful": flag},
    "forget": {
        "claim_id": _opt_id,
        "event_id": _opt_id,
        "session_id": _opt_id,
        "query": _opt_text,
        "namespace": _ns,
        "dry_run": flag,
        "confirmed": optional(instance(ForgetResult, "the ForgetResult of a dry run")),
    },
    "correct": {"claim_id": _id, "text": text, "event_id": _opt_id},
    "explain": {"claim_id": _id},
    "export": {"path": path, "namespace": _ns, "vectors": flag},
    "import_file": {"path": path},
    "backup": {"path": path},
    "list_jobs": {
        "status": optional(choice(*(s.value for s in JobStatus))),
        "kind": _opt_text,
        "limit": _limit,
    },
    "retry_jobs": {"kind": _opt_text, "job_id": optional(count(1))},
    "purge_jobs": {"older_than_s": number(0.0)},
}


def check(method: str, args: Mapping[str, Any]) -> None:
    """Check ``method``'s arguments (its ``locals()``) against :data:`RULES`.

    :raises InputError: the first argument refused, named with its method.
    """
    for name, rule in RULES[method].items():
        if name in args and (problem := rule(name, args[name])) is not None:
            raise InputError(f"{method}: {problem}")


def strings(method: str, name: str, values: Iterable[Any]) -> tuple[str, ...]:
    """``values`` (read once, already checked by :func:`many`) as a tuple of strings.

    :raises InputError: one of them is not a string.
    """
    out = tuple(values)
    for index, value in enumerate(out):
        if not isinstance(value, str):
            raise InputError(f"{method}: {name}[{index}] must be a string, not {_shown(value)}")
    return out


def query_length(query: str, limit: int) -> None:
    """:raises InputError: ``query`` is longer than ``recall.max_query_chars`` (``limit``)."""
    if len(query) > limit:
        raise InputError(
            f"recall: query has {len(query)} characters, over the limit of {limit} "
            "(recall.max_query_chars)"
        )


def memory_options(
    path_value: Any, config: Any, clock: Any, pipeline: Any, create: Any = True
) -> Config | None:
    """Check ``hlmem.open``'s arguments; ``config`` as a :class:`Config` (a mapping of the
    TOML file's shape is validated over the defaults and the environment, as
    ``load_config(overrides=...)``), or None when none was given.

    :raises ConfigError: an argument refused (named), or the mapping is not a valid config.
    """
    problem = path("path", path_value)
    if problem is None and pipeline not in PIPELINE_MODES:
        problem = f"pipeline must be one of {', '.join(map(repr, PIPELINE_MODES))}, not "
        problem += _shown(pipeline)
    if problem is None:
        problem = flag("create", create)
    if (
        problem is None
        and clock is not None
        and not all(callable(getattr(clock, reading, None)) for reading in _CLOCK_READINGS)
    ):
        problem = "clock must have now(), wall() and monotonic() methods (hlmem.SystemClock, "
        problem += f"ManualClock), not {clock!r}"
    if problem is None and not (config is None or isinstance(config, Config | Mapping)):
        problem = "config must be a hlmem.config.Config or a mapping shaped like the TOML "
        problem += f"file, not {_shown(config)}"
    if problem is not None:
        raise ConfigError(f"open: {problem}")
    if isinstance(config, Mapping):
        return load_config(overrides=config)
    given: Config | None = config
    return given
