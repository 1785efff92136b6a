"""``hadoop.security.auth_to_local`` over certificate subjects: a caller's short user name
(pure: no socket, ssl or file code).

Hadoop's ``KerberosName`` rules map a Kerberos principal to a local user; here the verified
client certificate's subject plays the principal. The rules are read in order, the first
that applies gives the name (docs/security.md, "Who the caller is")::

    RULE:[<format>](<regex>)s/<pattern>/<replacement>/[g][/L]
    DEFAULT

* ``<format>`` builds the string the rule works on from the subject: ``$DN`` is the whole
  subject in RFC 4514 form (``CN=alice,OU=tenants,O=Example``), ``$CN``, ``$O``, ``$OU``,
  ``$C``, ``$L``, ``$ST``, ``$DC``, ``$UID`` (or any attribute's name as Python's ``ssl``
  spells it, e.g. ``$emailAddress``) one attribute (the most specific, when it repeats).
  A rule naming an attribute the subject lacks does not apply (as Hadoop's ``[n:...]``
  with another component count).
* ``(<regex>)``, optional: the rule applies only if the string matches it entirely.
* ``s/<pattern>/<replacement>/``, optional: sed-like, the first match replaced (all with
  ``g``); ``$1`` in the replacement is the pattern's first group, as in Java.
* ``/L``: the result in lower case.
* ``DEFAULT``: the subject's CN.

A rule whose result is not a simple name (empty, or with ``/``, ``@``, ``=``, ``,`` or white
space) gives no user, and
so does a subject no rule applies to (Hadoop's ``NoMatchingRule``): that caller is then
unauthenticated.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from hadoop_qjm.conf.errors import ConfigurationError

__all__ = [
    "AUTH_TO_LOCAL_KEY",
    "AuthToLocal",
    "AuthToLocalRule",
    "CertificateSubject",
    "parse_auth_to_local",
    "subject_of_peer_cert",
]

AUTH_TO_LOCAL_KEY = "hadoop.security.auth_to_local"

#: RFC 4514 §3's short names of the attributes Python's ``ssl`` reports by long name.
_SHORT_NAMES = {
    "commonName": "CN",
    "localityName": "L",
    "stateOrProvinceName": "ST",
    "organizationName": "O",
    "organizationalUnitName": "OU",
    "countryName": "C",
    "streetAddress": "STREET",
    "domainComponent": "DC",
    "userId": "UID",
}
_VARIABLE = re.compile(r"\$([A-Za-z][A-Za-z0-9]*)")
_GROUP_REF = re.compile(r"\$(\d)")
#: What a simple (short) user name never holds.
_NOT_SIMPLE = re.compile(r"[/@=,\s]")
_SED = re.compile(r"s/([^/]*)/([^/]*)/(g)?")


@dataclass(frozen=True, slots=True)
class CertificateSubject:
    """A certificate's subject: ``dn`` in RFC 4514 form and each attribute's most specific
    value by its short name (``{"CN": "alice", "O": "Example"}``)."""

    dn: str
    attributes: Mapping[str, str]

    @property
    def common_name(self) -> str | None:
        return self.attributes.get("CN") or None


def _escape_rfc4514(value: str) -> str:
    escaped = "".join("\\" + ch if ch in ',+"\\<>;' else ch for ch in value)
    if escaped.startswith(("#", " ")):
        escaped = "\\" + escaped
    if escaped.endswith(" ") and not escaped.endswith("\\ "):
        escaped = escaped[:-1] + "\\ "
    return escaped


def subject_of_peer_cert(cert: Mapping[str, Any] | None) -> CertificateSubject | None:
    """The subject of a verified certificate in ``SSLSocket.getpeercert()``'s form (its
    RDNs from the most general to the most specific); None without one."""
    if not cert or not cert.get("subject"):
        return None
    rdns = []
    attributes: dict[str, str] = {}
    for rdn in cert["subject"]:
        parts = []
        for name, value in rdn:
            short = _SHORT_NAMES.get(name, name)
            parts.append(f"{short}={_escape_rfc4514(value)}")
            attributes[short] = value  # read from the general end: the last one wins
        rdns.append("+".join(parts))
    return CertificateSubject(",".join(reversed(rdns)), attributes)


@dataclass(frozen=True, slots=True)
class AuthToLocalRule:
    """One rule; ``format`` None is ``DEFAULT``."""

    text: str
    format: str | None = None
    match: re.Pattern[str] | None = None
    pattern: re.Pattern[str] | None = None
    replacement: str = ""
    repeat: bool = False
    lower: bool = False

    def apply(self, subject: CertificateSubject) -> str | None:
        """The short name this rule gives ``subject``, or None if it does not apply."""
        if self.format is None:
            result = subject.common_name
            return result.lower() if result and self.lower else result
        missing = False

        def variable(m: re.Match[str]) -> str:
            nonlocal missing
            name = m.group(1)
            if name == "DN":
                return subject.dn
            value = subject.attributes.get(name)
            if value is None:
                missing = True
                return ""
            return value

        base = _VARIABLE.sub(variable, self.format)
        if missing or (self.match is not None and not self.match.fullmatch(base)):
            return None
        result = base
        if self.pattern is not None:

            def expand(m: re.Match[str]) -> str:
                return _GROUP_REF.sub(lambda g: m.group(int(g.group(1))) or "", self.replacement)

            result = self.pattern.sub(expand, base, count=0 if self.repeat else 1)
        return result.lower() if self.lower else result


@dataclass(frozen=True, slots=True)
class AuthToLocal:
    """The rules of ``hadoop.security.auth_to_local``, in order."""

    rules: Sequence[AuthToLocalRule]

    def short_name(self, subject: CertificateSubject | None) -> str | None:
        """The user ``subject`` maps to: the first rule that applies; None if none does,
        or if its result is not a simple name (see the module docstring)."""
        if subject is None:
            return None
        for rule in self.rules:
            name = rule.apply(subject)
            if name is not None:
                return name if name and not _NOT_SIMPLE.search(name) else None
        return None


def _invalid(remaining: str, why: str = "") -> ConfigurationError:
    detail = f" ({why})" if why else ""
    return ConfigurationError(f"Invalid rule in {AUTH_TO_LOCAL_KEY}: {remaining.strip()}{detail}")


def _compile(regex: str, remaining: str) -> re.Pattern[str]:
    try:
        return re.compile(regex)
    except re.error as e:
        raise _invalid(remaining, f"bad regular expression {regex!r}: {e}") from None


def _closing_paren(text: str, start: int) -> int:
    """The index of the ``)`` closing the ``(`` at ``text[start]`` (escapes and classes
    skipped), else -1."""
    depth, i, in_class = 0, start, False
    while i < len(text):
        ch = text[i]
        if ch == "\\":
            i += 2
            continue
        if in_class:
            in_class = ch != "]"
        elif ch == "[":
            in_class = True
        elif ch == "(":
            depth += 1
        elif ch == ")":
            depth -= 1
            if depth == 0:
                return i
        i += 1
    return -1


def parse_auth_to_local(text: str | None) -> AuthToLocal:
    """The rules of ``text`` (whitespace between rules; unset or blank: ``DEFAULT``).

    Raises ConfigurationError naming the first rule that cannot be read.
    """
    rest = (text or "").strip() or "DEFAULT"
    rules = []
    while rest:
        start = rest
        if rest.startswith("DEFAULT"):
            rest = rest[len("DEFAULT") :]
            lower = rest.startswith("/L")
            rest = rest[2:] if lower else rest
            rules.append(AuthToLocalRule(start[: len(start) - len(rest)], lower=lower))
        elif rest.startswith("RULE:["):
            close = rest.find("]", 6)
            if close < 0:
                raise _invalid(start)
            fmt, rest = rest[6:close], rest[close + 1 :]
            match = pattern = None
            replacement, repeat = "", False
            if rest.startswith("("):
                end = _closing_paren(rest, 0)
                if end < 0:
                    raise _invalid(start, "unbalanced parentheses")
                match, rest = _compile(rest[1:end], start), rest[end + 1 :]
            if rest.startswith("s/"):
                sed = _SED.match(rest)
                if sed is None:
                    raise _invalid(start, "expected s/pattern/replacement/")
                pattern, replacement = _compile(sed.group(1), start), sed.group(2)
                repeat, rest = sed.group(3) is not None, rest[sed.end() :]
            lower = rest.startswith("/L")
            rest = rest[2:] if lower else rest
            text_of_rule = start[: len(start) - len(rest)]
            rules.append(
                AuthToLocalRule(text_of_rule, fmt, match, pattern, replacement, repeat, lower)
            )
        else:
            raise _invalid(start.split(None, 1)[0] if start.split() else start)
        if rest and not rest[0].isspace():
            raise _invalid(start)
        rest = rest.strip()
    return AuthToLocal(tuple(rules))
