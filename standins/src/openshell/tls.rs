//! The gateway's mutual TLS material: a server identity and the CA a client
//! certificate must chain to (OpenShell's `OPENSHELL_TLS_CLIENT_CA`), either
//! read from PEM files or made afresh ([`generate`]) in the layout of
//! OpenShell's CLI bundle (`~/.config/openshell/gateways/<name>/mtls/`):
//! `ca.crt`, and the client's `tls.crt` and `tls.key`; beside them the
//! server's `server.crt` and `server.key`.

use std::path::Path;

use rcgen::{
    BasicConstraints, CertificateParams, DnType, ExtendedKeyUsagePurpose, IsCa, Issuer, KeyPair,
    KeyUsagePurpose,
};

/// What the gateway's TLS listener needs. Its `Debug` shows no key.
#[derive(Clone)]
pub struct ServerTls {
    /// The server certificate (and any chain), PEM.
    pub cert_pem: Vec<u8>,
    /// The server's private key, PEM (never logged).
    pub key_pem: Vec<u8>,
    /// The CA client certificates must chain to, PEM.
    pub client_ca_pem: Vec<u8>,
}

impl std::fmt::Debug for ServerTls {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ServerTls")
            .field("cert_pem", &format_args!("{} bytes", self.cert_pem.len()))
            .field("key_pem", &"<redacted>")
            .field(
                "client_ca_pem",
                &format_args!("{} bytes", self.client_ca_pem.len()),
            )
            .finish()
    }
}

impl ServerTls {
    /// Reads the server certificate, its key and the client CA from PEM files.
    pub fn from_files(cert: &Path, key: &Path, client_ca: &Path) -> Result<ServerTls, String> {
        let read = |p: &Path| std::fs::read(p).map_err(|e| format!("reading {}: {e}", p.display()));
        Ok(ServerTls {
            cert_pem: read(cert)?,
            key_pem: read(key)?,
            client_ca_pem: read(client_ca)?,
        })
    }

    /// The server certificate and key as `dir/server.crt` and
    /// `dir/server.key`, the client CA as `dir/ca.crt` (what [`generate`] writes).
    pub fn from_dir(dir: &Path) -> Result<ServerTls, String> {
        ServerTls::from_files(
            &dir.join("server.crt"),
            &dir.join("server.key"),
            &dir.join("ca.crt"),
        )
    }

    /// tonic's server configuration: this identity, and a client
    /// certificate chained to the client CA required of every connection
    /// (one without is refused during the handshake).
    pub fn config(&self) -> tonic::transport::ServerTlsConfig {
        tonic::transport::ServerTlsConfig::new()
            .identity(tonic::transport::Identity::from_pem(
                &self.cert_pem,
                &self.key_pem,
            ))
            .client_ca_root(tonic::transport::Certificate::from_pem(&self.client_ca_pem))
            .client_auth_optional(false)
    }
}

fn fail(what: &str, e: impl std::fmt::Display) -> String {
    format!("{what}: {e}")
}

fn write(dir: &Path, name: &str, text: &str, private: bool) -> Result<(), String> {
    use std::io::Write;
    use std::os::unix::fs::OpenOptionsExt;
    let path = dir.join(name);
    let mut f = std::fs::OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(true)
        .mode(if private { 0o600 } else { 0o644 })
        .open(&path)
        .map_err(|e| fail(&format!("writing {}", path.display()), e))?;
    f.write_all(text.as_bytes())
        .map_err(|e| fail(&format!("writing {}", path.display()), e))
}

/// Makes a fresh CA, a server certificate for `localhost` and `127.0.0.1`
/// and a client certificate (CN `plimsoll`) in `dir` (created if missing):
/// `ca.crt`, `tls.crt`, `tls.key` (the client's: OpenShell's CLI bundle
/// layout), `server.crt`, `server.key`. The CA's key is not kept.
pub fn generate(dir: &Path) -> Result<ServerTls, String> {
    std::fs::create_dir_all(dir).map_err(|e| fail(&format!("creating {}", dir.display()), e))?;
    let ca_key = KeyPair::generate().map_err(|e| fail("CA key", e))?;
    let mut ca = CertificateParams::new(Vec::<String>::new()).map_err(|e| fail("CA", e))?;
    ca.distinguished_name
        .push(DnType::CommonName, "plimsoll openshell stand-in CA");
    ca.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    ca.key_usages = vec![KeyUsagePurpose::KeyCertSign, KeyUsagePurpose::CrlSign];
    let ca_cert = ca.self_signed(&ca_key).map_err(|e| fail("CA", e))?;
    let issuer = Issuer::new(ca, ca_key);

    let leaf = |names: Vec<String>, cn: &str, eku: ExtendedKeyUsagePurpose| {
        let key = KeyPair::generate().map_err(|e| fail("key", e))?;
        let mut p = CertificateParams::new(names).map_err(|e| fail("certificate", e))?;
        p.distinguished_name.push(DnType::CommonName, cn);
        p.extended_key_usages = vec![eku];
        p.key_usages = vec![KeyUsagePurpose::DigitalSignature];
        // Strict X.509 verification (Python 3.13's default) wants the issuer's key id.
        p.use_authority_key_identifier_extension = true;
        let cert = p
            .signed_by(&key, &issuer)
            .map_err(|e| fail("certificate", e))?;
        Ok::<_, String>((cert.pem(), key.serialize_pem()))
    };
    let (server_crt, server_key) = leaf(
        vec!["localhost".into(), "127.0.0.1".into()],
        "openshell-gateway",
        ExtendedKeyUsagePurpose::ServerAuth,
    )?;
    let (client_crt, client_key) =
        leaf(Vec::new(), "plimsoll", ExtendedKeyUsagePurpose::ClientAuth)?;
    write(dir, "ca.crt", &ca_cert.pem(), false)?;
    write(dir, "tls.crt", &client_crt, false)?;
    write(dir, "tls.key", &client_key, true)?;
    write(dir, "server.crt", &server_crt, false)?;
    write(dir, "server.key", &server_key, true)?;
    Ok(ServerTls {
        cert_pem: server_crt.into_bytes(),
        key_pem: server_key.into_bytes(),
        client_ca_pem: ca_cert.pem().into_bytes(),
    })
}
