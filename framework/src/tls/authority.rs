//! Makes a self-signed certificate authority and the serving certificates it signs.

use std::path::Path;
use std::time::{Duration, SystemTime};

use rcgen::{
    BasicConstraints, CertificateParams, DnType, ExtendedKeyUsagePurpose, IsCa, Issuer, KeyPair,
    KeyUsagePurpose,
};

use super::{Error, Result, TLS_CRT, TLS_KEY};

/// How long before now a certificate is valid from, so that a clock a little behind still
/// accepts it.
const BACKDATE: Duration = Duration::from_secs(60 * 60);
/// How long a generated CA is valid.
const AUTHORITY_VALIDITY: Duration = Duration::from_secs(10 * 365 * 24 * 60 * 60);
/// How long a generated serving certificate is valid.
const SERVING_VALIDITY: Duration = Duration::from_secs(365 * 24 * 60 * 60);

/// A self-signed certificate authority (ECDSA P-256) that signs serving certificates, for
/// development and tests; in production cert-manager plays this part.
///
/// ```
/// use kubeward::tls::Authority;
///
/// let ca = Authority::generate("my-operator webhook CA")?;
/// let serving = ca.issue(&["my-operator-webhook.system.svc", "127.0.0.1"])?;
/// let ca_bundle = ca.certificate_pem(); // what a webhook configuration's caBundle holds
/// # let _ = (serving, ca_bundle);
/// # Ok::<(), kubeward::tls::Error>(())
/// ```
pub struct Authority {
    certificate_pem: String,
    issuer: Issuer<'static, KeyPair>,
}

impl std::fmt::Debug for Authority {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Authority").finish_non_exhaustive()
    }
}

/// A certificate and its private key, both PEM: what `tls.crt` and `tls.key` hold.
#[derive(Clone)]
pub struct CertificatePair {
    certificate_pem: String,
    key_pem: String,
}

impl std::fmt::Debug for CertificatePair {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CertificatePair")
            .field("certificate_pem", &self.certificate_pem)
            .finish_non_exhaustive()
    }
}

impl Authority {
    /// A new CA whose certificate names it `common_name`, valid for ten years.
    ///
    /// # Errors
    /// [`Error::Generate`] if the key or certificate cannot be made.
    pub fn generate(common_name: &str) -> Result<Self> {
        let key = KeyPair::generate().map_err(Error::Generate)?;
        let mut params = CertificateParams::default();
        params.distinguished_name = rcgen::DistinguishedName::new();
        params
            .distinguished_name
            .push(DnType::CommonName, common_name);
        params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
        params.key_usages = vec![KeyUsagePurpose::KeyCertSign, KeyUsagePurpose::CrlSign];
        valid_for(&mut params, AUTHORITY_VALIDITY);
        let certificate = params.self_signed(&key).map_err(Error::Generate)?;
        Ok(Self {
            certificate_pem: certificate.pem(),
            issuer: Issuer::new(params, key),
        })
    }

    /// The CA certificate, PEM: what clients trust (a webhook configuration's `caBundle`,
    /// base64-encoded by the API).
    #[must_use]
    pub fn certificate_pem(&self) -> &str {
        &self.certificate_pem
    }

    /// A serving certificate for `hosts` (DNS names or IP addresses) with a new key, signed by
    /// this CA and valid for a year.
    ///
    /// # Errors
    /// [`Error::Generate`] if a host is not a valid DNS name or the certificate cannot be made.
    pub fn issue(&self, hosts: &[impl AsRef<str>]) -> Result<CertificatePair> {
        let key = KeyPair::generate().map_err(Error::Generate)?;
        let names: Vec<String> = hosts.iter().map(|h| h.as_ref().to_owned()).collect();
        let mut params = CertificateParams::new(names.clone()).map_err(Error::Generate)?;
        params.distinguished_name = rcgen::DistinguishedName::new();
        if let Some(first) = names.first() {
            params.distinguished_name.push(DnType::CommonName, first);
        }
        params.key_usages = vec![KeyUsagePurpose::DigitalSignature];
        params.extended_key_usages = vec![ExtendedKeyUsagePurpose::ServerAuth];
        params.use_authority_key_identifier_extension = true;
        valid_for(&mut params, SERVING_VALIDITY);
        let certificate = params
            .signed_by(&key, &self.issuer)
            .map_err(Error::Generate)?;
        Ok(CertificatePair {
            certificate_pem: certificate.pem(),
            key_pem: key.serialize_pem(),
        })
    }
}

impl CertificatePair {
    /// The certificate, PEM (`tls.crt`).
    #[must_use]
    pub fn certificate_pem(&self) -> &str {
        &self.certificate_pem
    }

    /// The private key, PKCS#8 PEM (`tls.key`).
    #[must_use]
    pub fn key_pem(&self) -> &str {
        &self.key_pem
    }

    /// Writes `tls.crt` and `tls.key` into `dir` (created if missing), each replaced whole by a
    /// rename so that a reader never sees half a file.
    ///
    /// # Errors
    /// [`Error::File`] if a file cannot be written.
    pub fn write_to(&self, dir: &Path) -> Result<()> {
        std::fs::create_dir_all(dir).map_err(|source| Error::File {
            action: "creating",
            path: dir.to_owned(),
            source,
        })?;
        replace(&dir.join(TLS_CRT), self.certificate_pem.as_bytes())?;
        replace(&dir.join(TLS_KEY), self.key_pem.as_bytes())
    }
}

/// Writes `contents` beside `path` and renames it over `path`.
fn replace(path: &Path, contents: &[u8]) -> Result<()> {
    let file_name = path.file_name().unwrap_or_default().to_string_lossy();
    let temporary = path.with_file_name(format!(".{file_name}.new"));
    let failed = |source| Error::File {
        action: "writing",
        path: path.to_owned(),
        source,
    };
    std::fs::write(&temporary, contents).map_err(failed)?;
    std::fs::rename(&temporary, path).map_err(failed)
}

/// Valid from an hour ago for `validity`.
fn valid_for(params: &mut CertificateParams, validity: Duration) {
    let now = SystemTime::now();
    params.not_before = (now - BACKDATE).into();
    params.not_after = (now + validity).into();
}

#[cfg(test)]
mod tests {
    use rustls::pki_types::pem::PemObject as _;
    use rustls::pki_types::{CertificateDer, ServerName, UnixTime};

    use super::*;

    fn verifier_trusting(ca: &Authority) -> std::sync::Arc<rustls::client::WebPkiServerVerifier> {
        let mut roots = rustls::RootCertStore::empty();
        roots
            .add(CertificateDer::from_pem_slice(ca.certificate_pem().as_bytes()).unwrap())
            .unwrap();
        rustls::client::WebPkiServerVerifier::builder_with_provider(
            roots.into(),
            rustls::crypto::ring::default_provider().into(),
        )
        .build()
        .unwrap()
    }

    fn verify(ca: &Authority, pair: &CertificatePair, host: &str) -> Result<(), rustls::Error> {
        use rustls::client::danger::ServerCertVerifier as _;
        let leaf = CertificateDer::from_pem_slice(pair.certificate_pem().as_bytes()).unwrap();
        verifier_trusting(ca)
            .verify_server_cert(
                &leaf,
                &[],
                &ServerName::try_from(host.to_owned()).unwrap(),
                &[],
                UnixTime::now(),
            )
            .map(|_| ())
    }

    #[test]
    fn a_serving_certificate_verifies_against_its_authority_for_each_of_its_hosts() {
        let ca = Authority::generate("test CA").unwrap();
        let pair = ca.issue(&["webhook.system.svc", "127.0.0.1"]).unwrap();
        verify(&ca, &pair, "webhook.system.svc").unwrap();
        verify(&ca, &pair, "127.0.0.1").unwrap();
    }

    #[test]
    fn a_serving_certificate_does_not_verify_for_another_host_or_another_authority() {
        let ca = Authority::generate("test CA").unwrap();
        let pair = ca.issue(&["webhook.system.svc"]).unwrap();
        assert!(verify(&ca, &pair, "other.system.svc").is_err());
        let stranger = Authority::generate("another CA").unwrap();
        assert!(verify(&stranger, &pair, "webhook.system.svc").is_err());
    }

    #[test]
    fn a_pair_written_to_a_directory_is_what_a_secret_mount_holds() {
        let dir = tempfile::tempdir().unwrap();
        let pair = Authority::generate("test CA")
            .unwrap()
            .issue(&["localhost"])
            .unwrap();
        pair.write_to(&dir.path().join("certs")).unwrap();
        let read = |name| std::fs::read_to_string(dir.path().join("certs").join(name)).unwrap();
        assert_eq!(read(TLS_CRT), pair.certificate_pem());
        assert_eq!(read(TLS_KEY), pair.key_pem());
    }
}
