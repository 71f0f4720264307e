//! Holds the serving certificate and re-reads it from its files when they change.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use parking_lot::{Mutex, RwLock};
use rustls::crypto::CryptoProvider;
use rustls::pki_types::pem::PemObject as _;
use rustls::pki_types::{CertificateDer, PrivateKeyDer};
use rustls::server::{ClientHello, ResolvesServerCert};
use rustls::sign::CertifiedKey;
use tokio_util::sync::CancellationToken;

use super::{CertificatePair, Error, Result, TLS_CRT, TLS_KEY};
use crate::error::chain;

/// The serving certificate every new TLS handshake presents, whatever name the client asks for
/// (a client without SNI gets it too). Watching its directory replaces it when both files hold a
/// new, matching certificate and key; handshakes already done keep the one they got.
#[derive(Debug)]
pub(crate) struct ReloadingCertificate {
    /// The directory of `tls.crt` and `tls.key`; none for a certificate made in memory.
    dir: Option<PathBuf>,
    current: RwLock<Arc<CertifiedKey>>,
    /// The files' contents when last read, loaded or not, so that each change is tried once.
    last_read: Mutex<(Vec<u8>, Vec<u8>)>,
}

impl ReloadingCertificate {
    /// Loads `tls.crt` and `tls.key` from `dir`.
    ///
    /// # Errors
    /// [`Error::File`] if a file cannot be read, [`Error::Invalid`] if they do not hold a
    /// certificate chain and its key.
    pub(crate) fn from_dir(dir: &Path) -> Result<Self> {
        let (crt, key) = read_pair(dir)?;
        let current = certified_key(
            &crt,
            &key,
            &format!("{TLS_CRT} and {TLS_KEY} in {}", dir.display()),
        )?;
        Ok(Self {
            dir: Some(dir.to_owned()),
            current: RwLock::new(current),
            last_read: Mutex::new((crt, key)),
        })
    }

    /// A certificate made in memory (e.g. by [`Authority::issue`](super::Authority::issue)),
    /// never reloaded.
    ///
    /// # Errors
    /// [`Error::Invalid`] if `pair` does not hold a certificate and its key.
    pub(crate) fn fixed(pair: &CertificatePair) -> Result<Self> {
        let (crt, key) = (pair.certificate_pem().as_bytes(), pair.key_pem().as_bytes());
        Ok(Self {
            dir: None,
            current: RwLock::new(certified_key(crt, key, "the generated certificate")?),
            last_read: Mutex::default(),
        })
    }

    /// The certificate new handshakes present.
    pub(crate) fn current(&self) -> Arc<CertifiedKey> {
        Arc::clone(&self.current.read())
    }

    /// Re-reads the files: `Ok(true)` when they changed and now hold a new certificate (which
    /// new handshakes present from now on), `Ok(false)` when they did not change.
    ///
    /// # Errors
    /// A file that does not read, or files that changed into something that is not a matching
    /// certificate and key (e.g. halfway through a rotation): the current certificate stays, and
    /// the same contents are not tried again.
    pub(crate) fn reload(&self) -> Result<bool> {
        let Some(dir) = &self.dir else {
            return Ok(false);
        };
        let (crt, key) = read_pair(dir)?;
        {
            let mut last = self.last_read.lock();
            if last.0 == crt && last.1 == key {
                return Ok(false);
            }
            last.clone_from(&(crt.clone(), key.clone()));
        }
        let loaded = certified_key(
            &crt,
            &key,
            &format!("{TLS_CRT} and {TLS_KEY} in {}", dir.display()),
        )?;
        *self.current.write() = loaded;
        Ok(true)
    }

    /// Re-reads the files every `period` until `stop` is cancelled, logging each new
    /// certificate and each change that could not be loaded.
    pub(crate) async fn watch(self: Arc<Self>, period: Duration, stop: CancellationToken) {
        let mut ticks = tokio::time::interval(period);
        ticks.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        loop {
            tokio::select! {
                () = stop.cancelled() => return,
                _ = ticks.tick() => {}
            }
            match self.reload() {
                Ok(true) => tracing::info!(dir = ?self.dir, "loaded a new serving certificate"),
                Ok(false) => {}
                Err(e) => tracing::warn!(
                    error = %chain(&e),
                    "the serving certificate files changed but do not load; still serving the previous certificate"
                ),
            }
        }
    }
}

impl ResolvesServerCert for ReloadingCertificate {
    fn resolve(&self, _client_hello: ClientHello<'_>) -> Option<Arc<CertifiedKey>> {
        Some(self.current())
    }
}

/// The contents of `tls.crt` and `tls.key` in `dir`.
fn read_pair(dir: &Path) -> Result<(Vec<u8>, Vec<u8>)> {
    let read = |name: &str| {
        let path = dir.join(name);
        std::fs::read(&path).map_err(|source| Error::File {
            action: "reading",
            path,
            source,
        })
    };
    Ok((read(TLS_CRT)?, read(TLS_KEY)?))
}

/// The chain in `crt` with the key in `key`, checked to belong together.
fn certified_key(crt: &[u8], key: &[u8], what: &str) -> Result<Arc<CertifiedKey>> {
    let invalid = |reason: String| Error::Invalid {
        what: what.to_owned(),
        reason,
    };
    let chain = CertificateDer::pem_slice_iter(crt)
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| invalid(format!("the certificate PEM does not parse: {e}")))?;
    if chain.is_empty() {
        return Err(invalid("no certificate in the certificate file".into()));
    }
    let key = PrivateKeyDer::from_pem_slice(key)
        .map_err(|e| invalid(format!("the key PEM does not parse: {e}")))?;
    let signing_key = provider()
        .key_provider
        .load_private_key(key)
        .map_err(|e| invalid(format!("the key does not load: {e}")))?;
    let certified = CertifiedKey::new(chain, signing_key);
    certified
        .keys_match()
        .map_err(|e| invalid(format!("the key does not belong to the certificate: {e}")))?;
    Ok(Arc::new(certified))
}

/// The ring crypto provider, the one kube's client uses; named explicitly so that no process
/// default has to be installed.
pub(super) fn provider() -> Arc<CryptoProvider> {
    Arc::new(rustls::crypto::ring::default_provider())
}

#[cfg(test)]
#[path = "tests/reloading.rs"]
mod tests;
