//! TLS on every listener (`PLIMSOLL_TLS_CERT`, `PLIMSOLL_TLS_KEY`): rustls with
//! ring, TLS 1.2 and 1.3 only, ALPN `h2` then `http/1.1`.
//!
//! The certificate file holds the chain (PEM, the leaf first); the key file
//! one private key (PEM: PKCS#8, PKCS#1 or SEC1). Both are read once at
//! startup: a missing or unreadable file, an empty chain, a key that is not
//! the leaf's, or a half-set pair refuses startup. Renewal is a restart.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use rustls::ServerConfig;
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer};
use tokio_rustls::TlsAcceptor;

/// Where the certificate chain and its key are.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TlsFiles {
    /// `PLIMSOLL_TLS_CERT`.
    pub cert: PathBuf,
    /// `PLIMSOLL_TLS_KEY`.
    pub key: PathBuf,
}

impl TlsFiles {
    /// The pair from the two variables' values: both or neither.
    pub fn from_pair(cert: Option<&str>, key: Option<&str>) -> Result<Option<TlsFiles>, String> {
        match (
            cert.filter(|c| !c.is_empty()),
            key.filter(|k| !k.is_empty()),
        ) {
            (None, None) => Ok(None),
            (Some(cert), Some(key)) => Ok(Some(TlsFiles {
                cert: cert.into(),
                key: key.into(),
            })),
            (Some(_), None) => Err(
                "PLIMSOLL_TLS_KEY: required when PLIMSOLL_TLS_CERT is set (both or neither)".into(),
            ),
            (None, Some(_)) => Err(
                "PLIMSOLL_TLS_CERT: required when PLIMSOLL_TLS_KEY is set (both or neither)".into(),
            ),
        }
    }

    /// Loads the pair into an acceptor, or says what is wrong with it.
    pub fn acceptor(&self) -> Result<TlsAcceptor, String> {
        let certs = read_chain(&self.cert)?;
        let key = PrivateKeyDer::from_pem_file(&self.key).map_err(|e| {
            format!(
                "PLIMSOLL_TLS_KEY: no PEM private key read from {}: {e}",
                self.key.display()
            )
        })?;
        let provider = Arc::new(rustls::crypto::ring::default_provider());
        let mut config = ServerConfig::builder_with_provider(provider)
            .with_protocol_versions(&[&rustls::version::TLS13, &rustls::version::TLS12])
            .map_err(|e| format!("TLS: {e}"))?
            .with_no_client_auth()
            .with_single_cert(certs, key)
            .map_err(|e| {
                format!("PLIMSOLL_TLS_KEY: the key does not serve the certificate in PLIMSOLL_TLS_CERT: {e}")
            })?;
        config.alpn_protocols = vec![b"h2".to_vec(), b"http/1.1".to_vec()];
        Ok(TlsAcceptor::from(Arc::new(config)))
    }
}

fn read_chain(path: &Path) -> Result<Vec<CertificateDer<'static>>, String> {
    let certs = CertificateDer::pem_file_iter(path)
        .and_then(|it| it.collect::<Result<Vec<_>, _>>())
        .map_err(|e| {
            format!(
                "PLIMSOLL_TLS_CERT: cannot read a PEM certificate chain from {}: {e}",
                path.display()
            )
        })?;
    if certs.is_empty() {
        return Err(format!(
            "PLIMSOLL_TLS_CERT: {} holds no certificate",
            path.display()
        ));
    }
    Ok(certs)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pair(dir: &Path, name: &str) -> TlsFiles {
        let key = rcgen::KeyPair::generate().unwrap();
        let cert = rcgen::CertificateParams::new(vec!["localhost".into()])
            .unwrap()
            .self_signed(&key)
            .unwrap();
        let files = TlsFiles {
            cert: dir.join(format!("{name}.crt")),
            key: dir.join(format!("{name}.key")),
        };
        std::fs::write(&files.cert, cert.pem()).unwrap();
        std::fs::write(&files.key, key.serialize_pem()).unwrap();
        files
    }

    #[test]
    fn both_or_neither() {
        assert_eq!(TlsFiles::from_pair(None, None), Ok(None));
        assert_eq!(TlsFiles::from_pair(Some(""), Some("")), Ok(None));
        assert!(
            TlsFiles::from_pair(Some("c"), None)
                .unwrap_err()
                .contains("PLIMSOLL_TLS_KEY")
        );
        assert!(
            TlsFiles::from_pair(None, Some("k"))
                .unwrap_err()
                .contains("PLIMSOLL_TLS_CERT")
        );
        assert!(TlsFiles::from_pair(Some("c"), Some("k")).unwrap().is_some());
    }

    #[test]
    fn a_matching_pair_loads_and_a_bad_one_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let a = pair(dir.path(), "a");
        let b = pair(dir.path(), "b");
        assert!(a.acceptor().is_ok());
        let crossed = TlsFiles {
            cert: a.cert.clone(),
            key: b.key.clone(),
        };
        let e = crossed.acceptor().err().unwrap();
        assert!(e.contains("does not serve the certificate"), "{e}");
        let missing = TlsFiles {
            cert: dir.path().join("none.crt"),
            key: a.key.clone(),
        };
        assert!(
            missing
                .acceptor()
                .err()
                .unwrap()
                .starts_with("PLIMSOLL_TLS_CERT")
        );
        std::fs::write(dir.path().join("empty.crt"), "").unwrap();
        let empty = TlsFiles {
            cert: dir.path().join("empty.crt"),
            key: a.key.clone(),
        };
        assert!(
            empty
                .acceptor()
                .err()
                .unwrap()
                .contains("holds no certificate")
        );
        let keyless = TlsFiles {
            cert: a.cert.clone(),
            key: a.cert.clone(),
        };
        assert!(
            keyless
                .acceptor()
                .err()
                .unwrap()
                .starts_with("PLIMSOLL_TLS_KEY")
        );
    }
}
