"""A throwaway certificate authority and a server certificate it signs, made with the openssl CLI: what an
operator's CA (or cert-manager's CA Issuer) gives ragdb for `database.tls`. Each call makes a new CA."""

from __future__ import annotations

import base64
import subprocess
from dataclasses import dataclass
from pathlib import Path
from typing import Any

EC = ["-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes"]


@dataclass(frozen=True)
class ServerPki:
    ca_crt: str
    tls_crt: str
    tls_key: str

    def secret(self, name: str) -> dict[str, Any]:
        """The kubernetes.io/tls Secret the chart's database.tls.existingSecret names."""
        data = {"ca.crt": self.ca_crt, "tls.crt": self.tls_crt, "tls.key": self.tls_key}
        return {"apiVersion": "v1", "kind": "Secret", "type": "kubernetes.io/tls", "metadata": {"name": name},
                "data": {k: base64.b64encode(v.encode()).decode() for k, v in data.items()}}


def server_pki(workdir: Path, host: str) -> ServerPki:
    """A CA, and a certificate for `host` (its only subjectAltName) signed by it, valid two days."""
    workdir.mkdir(parents=True, exist_ok=True)

    def openssl(*args: str) -> None:
        subprocess.run(["openssl", *args], cwd=workdir, check=True, capture_output=True)

    openssl("req", "-x509", *EC, "-days", "2", "-subj", "/CN=ragfr test CA", "-keyout", "ca.key", "-out", "ca.crt")
    openssl("req", *EC, "-subj", f"/CN={host}", "-keyout", "tls.key", "-out", "tls.csr")
    (workdir / "ext.cnf").write_text(f"subjectAltName=DNS:{host}\nextendedKeyUsage=serverAuth\n")
    openssl("x509", "-req", "-in", "tls.csr", "-CA", "ca.crt", "-CAkey", "ca.key", "-CAcreateserial", "-days", "2",
            "-extfile", "ext.cnf", "-out", "tls.crt")
    return ServerPki(*((workdir / f).read_text() for f in ("ca.crt", "tls.crt", "tls.key")))
