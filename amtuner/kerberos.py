"""amtuner's own Kerberos identity: tickets from a keytab, renewed by amtuner, shared with rmadmin.

A service cannot wait for someone to run ``kinit``. With ``rm.keytab`` (or ``KRB5_CLIENT_KTNAME``
in its environment) amtuner asks GSSAPI for initiator credentials from that client keytab into a
ticket cache of its own (``rm.ticket_cache``): MIT krb5's credential store extension
(``gss_acquire_cred_from`` with ``client_keytab`` and ``ccache``) gets a TGT when the cache has
none and a new one once half of the ticket's life has passed (its ``refresh_time``), each time
credentials are acquired. `KerberosLogin.credentials` runs before every REST request (its SPNEGO
token, `SpnegoAuth`) and before every refresh command, so neither meets an expired ticket while
the keytab is good. The command gets the same cache in ``KRB5CCNAME``: Hadoop's
``UserGroupInformation`` (``yarn rmadmin``) logs in from it, as the same principal.

Without a keytab, the cache KRB5CCNAME names (kept by k5start or a kinit timer) is used and
renewed by whoever keeps it. Every failure names what is missing (no ticket, a keytab that
cannot be read, a principal the keytab does not hold) and stops the request before it is sent:
an RM that requires SPNEGO is never asked anonymously.
"""

from __future__ import annotations

import grp
import os
import pwd
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit
from xml.etree import ElementTree

import requests

from amtuner.config import RMSettings

if TYPE_CHECKING:
    import gssapi

TICKET_CACHE_NAME = "krb5cc"
"""The ticket cache amtuner keeps beside its state file when ``rm.ticket_cache`` is not set."""


EXTRA_MISSING = (
    "rm.kerberos is true but requests-gssapi is not installed: "
    "pip install 'amtuner[kerberos]' (needs libkrb5-dev and gcc)"
)


class KerberosError(Exception):
    """No Kerberos credentials can be had; the message says what is missing."""


def keytab_principals(data: bytes) -> list[str]:
    """The principals a keytab holds keys for, in order, each once.

    MIT's keytab format, version 0x502 (what kadmin's ktadd, ktutil, Kerby and Active
    Directory's ktpass write): after the version, entries each led by a signed 32-bit size (a
    negative size is a hole left by a deleted entry); an entry starts with its component count,
    then the realm and each component as 16-bit-length strings. Raises ValueError on anything
    else. GSSAPI has no call that lists them, and MIT's error for a principal the keytab lacks
    is only "No credentials cache found"."""
    if data[:2] != b"\x05\x02":
        raise ValueError("not a version 2 keytab")
    found: list[str] = []
    at = 2
    while at + 4 <= len(data):
        size = int.from_bytes(data[at : at + 4], "big", signed=True)
        at += 4
        entry, at = data[at : at + abs(size)], at + abs(size)
        if size <= 0:
            continue
        count, pos = int.from_bytes(entry[:2], "big"), 2
        parts = []
        for _ in range(count + 1):
            length = int.from_bytes(entry[pos : pos + 2], "big")
            parts.append(entry[pos + 2 : pos + 2 + length].decode("utf-8", "replace"))
            pos += 2 + length
        if pos > len(entry):
            raise ValueError("a keytab entry runs past its size")
        principal = "/".join(parts[1:]) + "@" + parts[0]
        if principal not in found:
            found.append(principal)
    return found


def short_name(principal: str) -> str:
    """The user Hadoop sees for a principal under its DEFAULT ``auth_to_local`` rule (the first
    component, in the default realm): what ``yarn.admin.acl`` must name."""
    return principal.split("@", 1)[0].split("/", 1)[0]


@dataclass(frozen=True)
class KerberosLogin:
    """Who amtuner is to a Kerberised RM, and where its tickets live."""

    principal: str | None
    """None: the keytab's first principal (or the cache's, without a keytab)."""
    keytab: Path | None
    """The client keytab; None: the environment's ``KRB5_CLIENT_KTNAME``, if any."""
    ticket_cache: Path | None
    """amtuner's own cache, filled from the keytab; None: the environment's ``KRB5CCNAME``."""

    @classmethod
    def of(
        cls, rm: RMSettings, state_file: Path, environ: Mapping[str, str] = os.environ
    ) -> KerberosLogin:
        """The login the config describes: a keytab (``rm.keytab``, or KRB5_CLIENT_KTNAME) gets a
        ticket cache of amtuner's own, ``rm.ticket_cache`` or `TICKET_CACHE_NAME` beside the
        state file (its directory is amtuner's, and private to it under systemd)."""
        keytab, cache = rm.keytab, rm.ticket_cache
        if keytab is None and environ.get("KRB5_CLIENT_KTNAME"):
            keytab = Path(environ["KRB5_CLIENT_KTNAME"].removeprefix("FILE:"))
        if keytab is not None and cache is None:
            cache = state_file.parent / TICKET_CACHE_NAME
        return cls(rm.principal, keytab, cache)

    def describe(self) -> str:
        who = self.principal or "the keytab's first principal"
        if self.keytab is None:
            where = self.ticket_cache or os.environ.get("KRB5CCNAME", "the default ticket cache")
            return f"{self.principal or 'the cached principal'} from {where} (renewed by others)"
        return f"{who} from keytab {self.keytab}, tickets in {self.ticket_cache}"

    def keytab_problem(self) -> str | None:
        """Why the keytab cannot be read by this process, or None."""
        if self.keytab is None:
            return None
        if not self.keytab.is_file():
            return f"keytab {self.keytab} does not exist"
        if not os.access(self.keytab, os.R_OK):
            return f"keytab {self.keytab} is not readable by uid {os.geteuid()}"
        return None

    def credentials(self) -> gssapi.Credentials:
        """Initiator credentials with a live ticket, from the keytab when one is configured (a
        new TGT once half the old one's life is gone). Raises KerberosError."""
        problem = self.keytab_problem()
        if problem:
            raise KerberosError(f"{problem}: no Kerberos ticket can be had (rm.keytab)")
        if self.keytab is not None and self.principal is not None:
            try:
                held = keytab_principals(self.keytab.read_bytes())
            except (OSError, ValueError) as exc:
                raise KerberosError(f"keytab {self.keytab} cannot be read: {exc}") from exc
            names = {h if "@" in self.principal else h.rsplit("@", 1)[0] for h in held}
            if self.principal not in names:  # no realm: the default realm's, as MIT reads it
                raise KerberosError(
                    f"keytab {self.keytab} holds no key for rm.principal {self.principal} "
                    f"(it holds: {', '.join(held) or 'nothing'})"
                )
        try:
            import gssapi
            from gssapi.exceptions import GSSError
        except ImportError as exc:
            raise KerberosError(EXTRA_MISSING) from exc
        store: dict[bytes | str, bytes | str] = {}
        if self.keytab is not None:
            store["client_keytab"] = str(self.keytab)
        if self.ticket_cache is not None:
            store["ccache"] = f"FILE:{self.ticket_cache}"
        name = (
            None
            if self.principal is None
            else gssapi.Name(self.principal, gssapi.NameType.kerberos_principal)
        )
        for attempt in (1, 2):
            try:
                creds = gssapi.Credentials(name=name, usage="initiate", store=store or None)
                if creds.lifetime <= 0:
                    raise KerberosError(f"the Kerberos ticket of {creds.name} has expired")
                return creds
            except GSSError as exc:
                message = exc.gen_message()
                if (
                    attempt == 1
                    and self.keytab is not None
                    and self.ticket_cache is not None
                    and "does not match desired name" in message
                ):
                    # amtuner's own cache holds another principal (rm.principal changed): it is
                    # amtuner's to empty, and the keytab fills it again.
                    self.ticket_cache.unlink(missing_ok=True)
                    continue
                raise KerberosError(self._explain(message)) from exc
        raise AssertionError("unreachable")

    def _explain(self, message: str) -> str:
        who = self.principal or "the default principal"
        if self.keytab is None:
            cache = self.ticket_cache or os.environ.get("KRB5CCNAME", "the default ticket cache")
            return (
                f"no Kerberos ticket for {who} in {cache} ({message}): set rm.keytab "
                "(and rm.principal) so amtuner gets its own, or keep a ticket there"
            )
        return f"cannot get a Kerberos ticket for {who} from keytab {self.keytab}: {message}"

    def environment(self) -> dict[str, str]:
        """What a child (``yarn rmadmin``) needs to act as this identity: the ticket cache (and
        the keytab, for a child that renews by itself)."""
        env: dict[str, str] = {}
        if self.ticket_cache is not None:
            env["KRB5CCNAME"] = f"FILE:{self.ticket_cache}"
        if self.keytab is not None:
            env["KRB5_CLIENT_KTNAME"] = str(self.keytab)
        return env

    def fresh_environment(self) -> dict[str, str]:
        """`environment`, with the cache made fresh just before. Raises KerberosError."""
        self.credentials()
        return self.environment()


class SpnegoAuth(requests.auth.AuthBase):
    """SPNEGO on every request, sent with it (never after an anonymous 401 first).

    requests-gssapi makes the token (its ``HTTPSPNEGOAuth``, preemptive and with mutual
    authentication when the RM answers with its own token); credentials come fresh from
    `KerberosLogin.credentials` each time. Its opportunistic mode sends the request without a
    header when no token can be made; here that raises KerberosError instead. The session keeps
    no cookie (`amtuner.monitor.client.make_session`): Hadoop's ``hadoop.auth`` cookie would let
    requests through for hours after the ticket died, hiding a broken login until it expired.
    """

    def __init__(self, login: KerberosLogin) -> None:
        from requests_gssapi import OPTIONAL, HTTPSPNEGOAuth
        from requests_gssapi.exceptions import SPNEGOExchangeError

        self.login = login
        self.principal = login.principal
        """Who the last token spoke for (the keytab's or cache's principal once known)."""
        self._error = SPNEGOExchangeError
        self._spnego: Any = HTTPSPNEGOAuth(mutual_authentication=OPTIONAL, opportunistic_auth=False)

    def __call__(self, request: requests.PreparedRequest) -> requests.PreparedRequest:
        creds = self.login.credentials()
        self.principal = str(creds.name)
        self._spnego.creds = creds
        host = urlsplit(request.url or "").hostname or ""
        try:
            header = self._spnego.generate_request_header(None, host, is_preemptive=True)
        except self._error as exc:
            raise KerberosError(
                f"no SPNEGO token for HTTP@{host} as {self.login.principal or 'amtuner'}: {exc} "
                f"(the RM's principal must be HTTP/{host})"
            ) from exc
        request.headers["Authorization"] = header
        result: requests.PreparedRequest = self._spnego(request)
        return result


ADMIN_ACL = "yarn.admin.acl"


def admin_acl_verdict(
    principal: str, scheduler_file: Path | None, environ: Mapping[str, str] = os.environ
) -> tuple[bool | None, str]:
    """Whether ``yarn.admin.acl`` lets ``principal`` refresh the queues, read from the RM's own
    yarn-site.xml (beside the scheduler file amtuner edits, else in ``HADOOP_CONF_DIR``): True,
    False, or None when no yarn-site.xml is found; with a sentence saying so.

    Hadoop's ``AccessControlList`` syntax: ``*``, or users and groups, comma-separated, with one
    space between the two lists; unset means ``*``. Groups are the local ones of the short name,
    as the RM on this host resolves them (its default, shell-based group mapping).
    """
    user = short_name(principal)
    candidates = [] if scheduler_file is None else [scheduler_file.parent / "yarn-site.xml"]
    if environ.get("HADOOP_CONF_DIR"):
        candidates.append(Path(environ["HADOOP_CONF_DIR"]) / "yarn-site.xml")
    site = next((p for p in candidates if p.is_file()), None)
    if site is None:
        return None, (
            f"cannot tell whether {principal} may refresh: no yarn-site.xml beside the scheduler "
            "file or in HADOOP_CONF_DIR to read yarn.admin.acl from"
        )
    try:
        root = ElementTree.fromstring(site.read_bytes())
    except (OSError, ElementTree.ParseError) as exc:
        return None, f"cannot tell whether {principal} may refresh: {site}: {exc}"
    acl = "*"
    for prop in root.iter("property"):
        if (prop.findtext("name") or "").strip() == ADMIN_ACL:
            acl = prop.findtext("value") or ""
    users_part, _, groups_part = acl.partition(" ")
    users = {u.strip() for u in users_part.split(",") if u.strip()}
    groups = {g.strip() for g in groups_part.split(",") if g.strip()}
    mine = set(_local_groups(user))
    if "*" in users or user in users or groups & mine:
        return True, f"{principal} ({user!r}) may refresh: {ADMIN_ACL} in {site} is {acl!r}"
    return False, (
        f"{principal} ({user!r}) is not in {ADMIN_ACL} {acl!r} ({site}): the RM will refuse "
        f"its refreshes; add {user!r} there and run `yarn rmadmin -refreshAdminAcls`"
    )


def _local_groups(user: str) -> list[str]:
    try:
        gid = pwd.getpwnam(user).pw_gid
        return [grp.getgrgid(g).gr_name for g in os.getgrouplist(user, gid)]
    except (KeyError, OSError):
        return []
