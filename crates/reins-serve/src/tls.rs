//! TLS for `reins serve`: the certificate and key the person gives, or a self-signed certificate
//! made on first start. A made certificate is kept (its PEM in the data dir; it is public) and its
//! private key goes to the OS keyring, never to disk. Without a keyring a fresh one is made each
//! start, and the fingerprint changes with it (the server says so).

use std::path::{Path, PathBuf};

use reins_core::api::{Reins, Secret};
use sha2::{Digest as _, Sha256};

use crate::ServeError;

/// The keyring entry holding the private key (PKCS#8, base64) of the certificate made for the data
/// dir at `root`: one per data dir, as each keeps its own certificate.
pub fn key_name(root: &Path) -> String {
    let digest = reins_core::api::Digest::of(root.as_os_str().as_encoded_bytes());
    format!("reins-serve-tls-{}", digest.short())
}

pub struct Material {
    pub cert_pem: Vec<u8>,
    pub key_pem: Vec<u8>,
    /// SHA-256 of the certificate (DER), as colon-separated hex.
    pub fingerprint: String,
    /// Said once at start: where the certificate came from.
    pub note: String,
}

fn fingerprint(der: &[u8]) -> String {
    Sha256::digest(der)
        .iter()
        .map(|b| format!("{b:02X}"))
        .collect::<Vec<_>>()
        .join(":")
}

fn first_der(pem: &[u8]) -> Result<Vec<u8>, ServeError> {
    use rustls::pki_types::pem::PemObject as _;
    rustls::pki_types::CertificateDer::pem_slice_iter(pem)
        .next()
        .and_then(|c| c.ok())
        .map(|c| c.to_vec())
        .ok_or_else(|| ServeError::Tls("the certificate file holds no PEM certificate".into()))
}

pub fn from_files(cert: &Path, key: &Path) -> Result<Material, ServeError> {
    let read = |p: &Path| {
        std::fs::read(p).map_err(|e| ServeError::Tls(format!("cannot read {}: {e}", p.display())))
    };
    let cert_pem = read(cert)?;
    let key_pem = read(key)?;
    let fingerprint = fingerprint(&first_der(&cert_pem)?);
    Ok(Material {
        cert_pem,
        key_pem,
        fingerprint,
        note: format!("TLS with {}", cert.display()),
    })
}

fn cert_file(data_dir: &Path) -> PathBuf {
    data_dir.join("serve").join("cert.pem")
}

/// The self-signed certificate kept from an earlier start, or a new one, for these names.
pub async fn self_signed(reins: &Reins, names: &[String]) -> Result<Material, ServeError> {
    use base64::Engine as _;
    let b64 = base64::engine::general_purpose::STANDARD;
    let file = cert_file(reins.data_dir());
    let key_name = key_name(reins.data_dir());
    let kept_key = match reins.keys_get(&key_name).await {
        Ok(k) => Ok(k),
        Err(e) => Err(e.to_string()),
    };
    if let (Ok(Some(key)), Ok(cert_pem)) = (&kept_key, std::fs::read(&file)) {
        if let Ok(der) = b64.decode(key.expose()) {
            let key_pem = pem_of("PRIVATE KEY", &der);
            let fingerprint = fingerprint(&first_der(&cert_pem)?);
            return Ok(Material {
                cert_pem,
                key_pem,
                fingerprint,
                note: format!("TLS with the self-signed certificate in {}", file.display()),
            });
        }
    }
    let made = rcgen::generate_simple_self_signed(names.to_vec())
        .map_err(|e| ServeError::Tls(format!("cannot make a certificate: {e}")))?;
    let cert_pem = made.cert.pem().into_bytes();
    let key_der = made.signing_key.serialize_der();
    let key_pem = made.signing_key.serialize_pem().into_bytes();
    let fingerprint = fingerprint(made.cert.der());
    let kept = match kept_key {
        Ok(_) => reins
            .keys_set(&key_name, Secret::new(b64.encode(&key_der)))
            .await
            .map_err(|e| e.to_string()),
        Err(e) => Err(e),
    };
    let note = match kept {
        Ok(()) => {
            if let Some(dir) = file.parent() {
                std::fs::create_dir_all(dir)
                    .map_err(|e| ServeError::Tls(format!("cannot create {}: {e}", dir.display())))?;
            }
            std::fs::write(&file, &cert_pem)
                .map_err(|e| ServeError::Tls(format!("cannot write {}: {e}", file.display())))?;
            format!(
                "TLS with a new self-signed certificate ({}; its key is in the OS keyring as {key_name})",
                file.display()
            )
        }
        Err(e) => format!(
            "TLS with a self-signed certificate made for this start only: the OS keyring is not available ({e}), and its key is never written to disk. Its fingerprint changes at every start; give --tls-cert/--tls-key to keep one"
        ),
    };
    Ok(Material {
        cert_pem,
        key_pem,
        fingerprint,
        note,
    })
}

fn pem_of(label: &str, der: &[u8]) -> Vec<u8> {
    use base64::Engine as _;
    let body = base64::engine::general_purpose::STANDARD.encode(der);
    let mut out = format!("-----BEGIN {label}-----\n");
    for chunk in body.as_bytes().chunks(64) {
        out.push_str(&String::from_utf8_lossy(chunk));
        out.push('\n');
    }
    out.push_str(&format!("-----END {label}-----\n"));
    out.into_bytes()
}
