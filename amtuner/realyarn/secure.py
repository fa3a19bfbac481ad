"""A secured real cluster: Kerberos with Hadoop's MiniKdc, SPNEGO on the web, optionally HTTPS only.

The launcher starts the KDC in the cluster's JVM before anything reads the security settings
(``amtuner.kdc.*`` system properties, `Security.jvm_properties`) and writes the keytabs named
here: the RM's and NodeManagers' service principals, ``HTTP/localhost`` for SPNEGO, and one keytab
per client principal. Every service principal is on host ``localhost``, which is also the host
the clients put in their URLs, so the ticket a client asks for (``HTTP@localhost``) is the one
the RM's keytab holds. The client side gets a ``krb5.conf`` of its own (`write_krb5_conf`),
pointing at the KDC's port on 127.0.0.1, with no DNS or reverse lookups.

For ``yarn.http.policy=HTTPS_ONLY`` the test makes a CA of its own and a server certificate for
localhost and 127.0.0.1 signed by it (`make_ca`, with the JDK's keytool, which the cluster needs
anyway); the RM and NodeManagers serve it from a PKCS#12 keystore named in ``ssl-server.xml``,
and clients trust the CA's PEM.
"""

from __future__ import annotations

import subprocess
from dataclasses import dataclass
from pathlib import Path

REALM = "EXAMPLE.COM"
"""MiniKdc's realm (its default)."""
HOST = "localhost"
SPNEGO_PRINCIPAL = f"HTTP/{HOST}@{REALM}"
RM_PRINCIPAL = f"rm/{HOST}@{REALM}"
NM_PRINCIPAL = f"nm/{HOST}@{REALM}"
STORE_PASSWORD = "amtuner-test"


def client_principal(user: str) -> str:
    """A client's principal: ``user/localhost@EXAMPLE.COM``, whose short name (Hadoop's DEFAULT
    auth_to_local rule) is ``user``."""
    return f"{user}/{HOST}@{REALM}"


@dataclass(frozen=True)
class Security:
    """Kerberos (always) and HTTPS (``https``) for a real cluster."""

    admins: tuple[str, ...] = ("amtuner",)
    """``yarn.admin.acl``'s users: who may refresh the queues and change the mutable store.
    The RM's own user is an admin whatever it says (``AdminService``)."""
    clients: tuple[str, ...] = ("amtuner", "tenant")
    """Client principals with a keytab each; those not in `admins` are refused admin calls."""
    ticket_lifetime_s: int = 60
    """The longest ticket the KDC issues: renewal must happen within a test."""
    https: bool = False
    """``yarn.http.policy=HTTPS_ONLY`` with a CA of the test's own."""

    def keytab(self, work: Path, user: str) -> Path:
        return work / "secure" / f"{user}.keytab"

    def service_keytab(self, work: Path) -> Path:
        return work / "secure" / "services.keytab"

    def krb5_conf(self, work: Path) -> Path:
        return work / "secure" / "krb5.conf"

    def ca_pem(self, work: Path) -> Path:
        return work / "secure" / "ca.pem"

    def jvm_properties(self, work: Path) -> list[str]:
        """The launcher's ``-D`` options that start the KDC and write the keytabs."""
        services = ",".join(p.split("@")[0] for p in (RM_PRINCIPAL, NM_PRINCIPAL, SPNEGO_PRINCIPAL))
        keytabs = [f"{self.service_keytab(work)}={services}"] + [
            f"{self.keytab(work, user)}={user}/{HOST}" for user in self.clients
        ]
        return [
            f"-Damtuner.kdc.dir={work / 'secure' / 'kdc'}",
            f"-Damtuner.kdc.keytabs={';'.join(keytabs)}",
            # In seconds: Kerby's unit, whatever MiniKdc's default of 86400000 suggests.
            f"-Damtuner.kdc.ticket-lifetime={self.ticket_lifetime_s}",
        ]

    def core_site(self) -> dict[str, str]:
        return {"hadoop.security.authentication": "kerberos"}

    def yarn_site(self, work: Path) -> dict[str, str]:
        services = str(self.service_keytab(work))
        props = {
            **self.core_site(),
            "yarn.resourcemanager.principal": RM_PRINCIPAL,
            "yarn.resourcemanager.keytab": services,
            "yarn.nodemanager.principal": NM_PRINCIPAL,
            "yarn.nodemanager.keytab": services,
            "yarn.resourcemanager.webapp.spnego-principal": SPNEGO_PRINCIPAL,
            "yarn.resourcemanager.webapp.spnego-keytab-file": services,
            "yarn.nodemanager.webapp.spnego-principal": SPNEGO_PRINCIPAL,
            "yarn.nodemanager.webapp.spnego-keytab-file": services,
            "hadoop.http.filter.initializers":
                "org.apache.hadoop.security.AuthenticationFilterInitializer",
            "hadoop.http.authentication.type": "kerberos",
            "hadoop.http.authentication.kerberos.principal": SPNEGO_PRINCIPAL,
            "hadoop.http.authentication.kerberos.keytab": services,
            "hadoop.http.authentication.simple.anonymous.allowed": "false",
            "yarn.acl.enable": "true",
            "yarn.admin.acl": ",".join(self.admins),
        }  # fmt: skip
        if self.https:
            props["yarn.http.policy"] = "HTTPS_ONLY"
        return props

    def prepare(self, work: Path, conf_dir: Path, java: str) -> None:
        """The directories the KDC writes into and, for HTTPS, the CA, the server's keystore and
        the ssl-*.xml files the RM and NodeManagers read from the conf directory."""
        (work / "secure" / "kdc").mkdir(parents=True, exist_ok=True)
        if self.https:
            keystore = make_ca(work / "secure", java)
            (conf_dir / "ssl-server.xml").write_bytes(hadoop_xml({
                "ssl.server.keystore.location": str(keystore),
                "ssl.server.keystore.type": "pkcs12",
                "ssl.server.keystore.password": STORE_PASSWORD,
                "ssl.server.keystore.keypassword": STORE_PASSWORD,
            }))  # fmt: skip
            (conf_dir / "ssl-client.xml").write_bytes(hadoop_xml({
                "ssl.client.truststore.location": str(keystore),
                "ssl.client.truststore.type": "pkcs12",
                "ssl.client.truststore.password": STORE_PASSWORD,
            }))  # fmt: skip

    def write_krb5_conf(self, work: Path, kdc_port: int) -> Path:
        """The clients' krb5.conf: the KDC on 127.0.0.1, over TCP (``udp_preference_limit``, as
        MiniKdc serves), names taken as written."""
        path = self.krb5_conf(work)
        path.write_text(
            "[libdefaults]\n"
            f"  default_realm = {REALM}\n"
            "  dns_lookup_kdc = false\n"
            "  dns_lookup_realm = false\n"
            "  dns_canonicalize_hostname = false\n"
            "  rdns = false\n"
            "  udp_preference_limit = 1\n"
            "  forwardable = true\n"
            "[realms]\n"
            f"  {REALM} = {{\n    kdc = 127.0.0.1:{kdc_port}\n  }}\n"
            "[domain_realm]\n"
            f"  {HOST} = {REALM}\n"
        )
        return path


def make_ca(directory: Path, java: str) -> Path:
    """A CA and a server certificate for localhost and 127.0.0.1 signed by it, with keytool.

    Writes ``ca.pem`` (what clients trust) and ``server.p12`` (the server's key and chain);
    returns the keystore's path."""
    keytool = str(Path(java).resolve().parent / "keytool")
    ca_store, server_store = directory / "ca.p12", directory / "server.p12"
    for stale in (ca_store, server_store):
        stale.unlink(missing_ok=True)

    def tool(*args: str, data: bytes | None = None) -> bytes:
        done = subprocess.run(
            [keytool, *args, "-storepass", STORE_PASSWORD, "-keypass", STORE_PASSWORD],
            input=data, capture_output=True, timeout=60, check=False,
        )  # fmt: skip
        if done.returncode != 0:
            raise RuntimeError(f"keytool {args[0]} failed: {done.stdout!r} {done.stderr!r}")
        return done.stdout

    common = ("-keyalg", "RSA", "-keysize", "2048", "-validity", "30", "-storetype", "pkcs12")
    tool("-genkeypair", "-alias", "ca", "-dname", "CN=amtuner test CA", "-ext", "bc:c",
         "-keystore", str(ca_store), *common)  # fmt: skip
    ca_pem = tool("-exportcert", "-rfc", "-alias", "ca", "-keystore", str(ca_store))
    (directory / "ca.pem").write_bytes(ca_pem)
    tool("-genkeypair", "-alias", "server", "-dname", f"CN={HOST}",
         "-keystore", str(server_store), *common)  # fmt: skip
    request = tool("-certreq", "-alias", "server", "-keystore", str(server_store))
    signed = tool("-gencert", "-alias", "ca", "-keystore", str(ca_store), "-rfc",
                  "-validity", "30", "-ext", f"san=dns:{HOST},ip:127.0.0.1",
                  "-ext", "eku=serverAuth", data=request)  # fmt: skip
    tool("-importcert", "-noprompt", "-alias", "ca", "-keystore", str(server_store),
         "-storetype", "pkcs12", data=ca_pem)  # fmt: skip
    tool("-importcert", "-alias", "server", "-keystore", str(server_store),
         "-storetype", "pkcs12", data=signed)  # fmt: skip
    return server_store


def hadoop_xml(props: dict[str, str]) -> bytes:
    """A Hadoop configuration file (``*-site.xml``) with ``props``."""
    from xml.sax.saxutils import escape

    lines = ['<?xml version="1.0"?>', "<configuration>"]
    for name, value in props.items():
        lines.append(
            f"  <property><name>{escape(name)}</name><value>{escape(value)}</value></property>"
        )
    lines.append("</configuration>")
    return ("\n".join(lines) + "\n").encode()
