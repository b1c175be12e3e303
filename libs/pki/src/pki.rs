//! The shard's own PKI: a CA, a serving certificate and the admin client certificates, generated on
//! first start under the root directory and reused afterwards.
//!
//! Files (PEM; keys mode 0600): `ca.crt`/`ca.key`, `apiserver.crt`/`apiserver.key` (serving),
//! `kcp-admin.crt`/`.key` and `shard-admin.crt`/`.key` (clients), and `service-account.key` (the ES256
//! key ServiceAccount tokens are signed with; like the CA, only generated when absent, so tokens handed
//! out earlier stay valid across restarts). A leaf is regenerated when it no longer
//! fits: signed by another CA, close to expiry, wrong subject, key mismatch, or (serving) missing a
//! hostname. The CA is only generated when absent, so kubeconfigs handed out earlier keep working.

use std::fs;
use std::io::Write;
use std::net::IpAddr;
use std::path::{Path, PathBuf};

use chrono::{Datelike, Days, Utc};
use rcgen::{
    BasicConstraints, CertificateParams, DistinguishedName, DnType, ExtendedKeyUsagePurpose, IsCa,
    Issuer, KeyPair, KeyUsagePurpose,
};
use rustls_pki_types::CertificateDer;
use rustls_pki_types::pem::PemObject;
use x509_parser::extensions::GeneralName;
use x509_parser::prelude::{FromDer, X509Certificate};

pub const CA_NAME: &str = "kcp-rs-ca";
pub const SERVING_NAME: &str = "apiserver";
pub const KCP_ADMIN_USER: &str = "kcp-admin";
pub const KCP_ADMIN_GROUP: &str = "system:kcp:admin";
pub const SHARD_ADMIN_USER: &str = "shard-admin";
pub const SHARD_ADMIN_GROUP: &str = "system:masters";
pub const SERVICE_ACCOUNT_KEY_FILE: &str = "service-account.key";

const CA_VALIDITY_DAYS: u64 = 10 * 365;
const LEAF_VALIDITY_DAYS: u64 = 365;
/// Leaves this close to expiry are renewed on start, so a restarted shard never serves a dying cert.
const RENEW_BEFORE_SECS: i64 = 30 * 24 * 3600;

/// A certificate and its private key, PEM.
#[derive(Clone, Debug)]
pub struct CertKey {
    pub cert_pem: String,
    pub key_pem: String,
}

/// Everything the shard needs from its PKI.
#[derive(Clone, Debug)]
pub struct Pki {
    pub ca_cert_pem: String,
    pub serving: CertKey,
    pub kcp_admin: CertKey,
    pub shard_admin: CertKey,
    pub service_account: ServiceAccountKey,
}

/// The key pair ServiceAccount tokens are signed with (P-256), PEM.
#[derive(Clone, Debug)]
pub struct ServiceAccountKey {
    /// PKCS#8.
    pub private_pem: String,
    /// SubjectPublicKeyInfo.
    pub public_pem: String,
}

#[derive(Debug, thiserror::Error)]
pub enum PkiError {
    #[error("{path}: {source}")]
    Io {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("{path}: {reason}")]
    Invalid { path: PathBuf, reason: String },
    #[error("generating {what}: {source}")]
    Generate {
        what: &'static str,
        #[source]
        source: rcgen::Error,
    },
}

/// Loads the PKI from `dir`, generating whatever is missing or stale. `hostnames` are the names and IPs
/// the serving certificate must cover (besides `localhost` and `127.0.0.1`, which it always does).
pub fn ensure(dir: &Path, hostnames: &[String]) -> Result<Pki, PkiError> {
    fs::create_dir_all(dir).map_err(|source| PkiError::Io {
        path: dir.to_path_buf(),
        source,
    })?;

    let (ca_cert_pem, ca_key, ca_new) = ensure_ca(dir)?;
    let issuer =
        Issuer::from_ca_cert_pem(&ca_cert_pem, ca_key).map_err(|source| PkiError::Generate {
            what: "the CA issuer",
            source,
        })?;
    let ca_der = parse_pem(&dir.join("ca.crt"), &ca_cert_pem)?;

    let mut serving_sans = vec!["localhost".to_string(), "127.0.0.1".to_string()];
    for host in hostnames {
        if !serving_sans.iter().any(|s| s.eq_ignore_ascii_case(host)) {
            serving_sans.push(host.clone());
        }
    }
    let leaves = [
        LeafSpec {
            name: SERVING_NAME,
            cn: "kcp-shard",
            org: None,
            sans: serving_sans,
            server: true,
        },
        LeafSpec {
            name: KCP_ADMIN_USER,
            cn: KCP_ADMIN_USER,
            org: Some(KCP_ADMIN_GROUP),
            sans: vec![],
            server: false,
        },
        LeafSpec {
            name: SHARD_ADMIN_USER,
            cn: SHARD_ADMIN_USER,
            org: Some(SHARD_ADMIN_GROUP),
            sans: vec![],
            server: false,
        },
    ];
    let mut pairs = Vec::with_capacity(leaves.len());
    for spec in &leaves {
        pairs.push(ensure_leaf(dir, spec, &issuer, &ca_der, ca_new)?);
    }
    let [serving, kcp_admin, shard_admin]: [CertKey; 3] =
        pairs.try_into().map_err(|_| PkiError::Invalid {
            path: dir.to_path_buf(),
            reason: "internal".into(),
        })?;
    Ok(Pki {
        ca_cert_pem,
        serving,
        kcp_admin,
        shard_admin,
        service_account: ensure_service_account_key(dir)?,
    })
}

/// Loads `service-account.key`, generating it when absent. A key of another algorithm is an error
/// rather than replaced: tokens signed with it would silently stop working.
fn ensure_service_account_key(dir: &Path) -> Result<ServiceAccountKey, PkiError> {
    let path = dir.join(SERVICE_ACCOUNT_KEY_FILE);
    let key = if path.exists() {
        let pem = read(&path)?;
        let key = KeyPair::from_pem(&pem).map_err(|err| PkiError::Invalid {
            path: path.clone(),
            reason: err.to_string(),
        })?;
        if key.algorithm() != &rcgen::PKCS_ECDSA_P256_SHA256 {
            return Err(PkiError::Invalid {
                path,
                reason: "not a P-256 (ES256) key".into(),
            });
        }
        key
    } else {
        tracing::info!(path = %path.display(), "generating a new ServiceAccount signing key");
        let key = KeyPair::generate_for(&rcgen::PKCS_ECDSA_P256_SHA256).map_err(|source| {
            PkiError::Generate {
                what: "the ServiceAccount signing key",
                source,
            }
        })?;
        write_file(&path, key.serialize_pem().as_bytes(), 0o600)?;
        key
    };
    Ok(ServiceAccountKey {
        private_pem: key.serialize_pem(),
        public_pem: key.public_key_pem(),
    })
}

/// The public key (PEM) of a ServiceAccount key file, which may hold the private key (as the
/// shard's does) or the public one, as kube-apiserver's `--service-account-key-file` may.
pub fn service_account_public_key(path: &Path) -> Result<String, PkiError> {
    let pem = read(path)?;
    if !pem.contains("PRIVATE KEY") {
        return Ok(pem);
    }
    let key = KeyPair::from_pem(&pem).map_err(|err| PkiError::Invalid {
        path: path.to_path_buf(),
        reason: err.to_string(),
    })?;
    Ok(key.public_key_pem())
}

/// Returns the CA certificate, its key and whether it was generated just now.
fn ensure_ca(dir: &Path) -> Result<(String, KeyPair, bool), PkiError> {
    let cert_path = dir.join("ca.crt");
    let key_path = dir.join("ca.key");
    // The key is written before the certificate, so a certificate without its key is not ours to replace:
    // someone placed it there, and silently minting a new CA would break whatever trusts it.
    if cert_path.exists() {
        let cert_pem = read(&cert_path)?;
        let key_pem = read(&key_path)?;
        let key = KeyPair::from_pem(&key_pem).map_err(|err| PkiError::Invalid {
            path: key_path.clone(),
            reason: err.to_string(),
        })?;
        let der = parse_pem(&cert_path, &cert_pem)?;
        let cert = parse_der(&cert_path, &der)?;
        if cert.public_key().subject_public_key.data.as_ref() != key.public_key_raw() {
            return Err(PkiError::Invalid {
                path: key_path,
                reason: "does not match ca.crt".into(),
            });
        }
        return Ok((cert_pem, key, false));
    }

    tracing::info!(dir = %dir.display(), "generating a new CA");
    let key = KeyPair::generate().map_err(|source| PkiError::Generate {
        what: "the CA key",
        source,
    })?;
    let mut params = CertificateParams::default();
    params.distinguished_name = DistinguishedName::new();
    params.distinguished_name.push(DnType::CommonName, CA_NAME);
    params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    params.key_usages = vec![
        KeyUsagePurpose::KeyCertSign,
        KeyUsagePurpose::CrlSign,
        KeyUsagePurpose::DigitalSignature,
    ];
    set_validity(&mut params, CA_VALIDITY_DAYS);
    let cert = params
        .self_signed(&key)
        .map_err(|source| PkiError::Generate {
            what: "the CA",
            source,
        })?;
    write_file(&key_path, key.serialize_pem().as_bytes(), 0o600)?;
    write_file(&cert_path, cert.pem().as_bytes(), 0o644)?;
    Ok((cert.pem(), key, true))
}

struct LeafSpec {
    /// File stem: `<name>.crt` / `<name>.key`.
    name: &'static str,
    cn: &'static str,
    org: Option<&'static str>,
    sans: Vec<String>,
    server: bool,
}

fn ensure_leaf(
    dir: &Path,
    spec: &LeafSpec,
    issuer: &Issuer<'_, KeyPair>,
    ca_der: &CertificateDer<'_>,
    ca_new: bool,
) -> Result<CertKey, PkiError> {
    let cert_path = dir.join(format!("{}.crt", spec.name));
    let key_path = dir.join(format!("{}.key", spec.name));
    if !ca_new && cert_path.exists() && key_path.exists() {
        let existing = CertKey {
            cert_pem: read(&cert_path)?,
            key_pem: read(&key_path)?,
        };
        match leaf_problem(&existing, spec, ca_der) {
            None => return Ok(existing),
            Some(reason) => {
                tracing::info!(cert = %cert_path.display(), %reason, "regenerating certificate")
            }
        }
    }

    let key = KeyPair::generate().map_err(|source| PkiError::Generate {
        what: "a key",
        source,
    })?;
    let mut params =
        CertificateParams::new(spec.sans.clone()).map_err(|source| PkiError::Generate {
            what: "certificate parameters",
            source,
        })?;
    params.distinguished_name = DistinguishedName::new();
    params.distinguished_name.push(DnType::CommonName, spec.cn);
    if let Some(org) = spec.org {
        params
            .distinguished_name
            .push(DnType::OrganizationName, org);
    }
    params.key_usages = vec![
        KeyUsagePurpose::DigitalSignature,
        KeyUsagePurpose::KeyEncipherment,
    ];
    params.extended_key_usages = vec![if spec.server {
        ExtendedKeyUsagePurpose::ServerAuth
    } else {
        ExtendedKeyUsagePurpose::ClientAuth
    }];
    params.use_authority_key_identifier_extension = true;
    set_validity(&mut params, LEAF_VALIDITY_DAYS);
    let cert = params
        .signed_by(&key, issuer)
        .map_err(|source| PkiError::Generate {
            what: "a certificate",
            source,
        })?;
    let pair = CertKey {
        cert_pem: cert.pem(),
        key_pem: key.serialize_pem(),
    };
    write_file(&key_path, pair.key_pem.as_bytes(), 0o600)?;
    write_file(&cert_path, pair.cert_pem.as_bytes(), 0o644)?;
    Ok(pair)
}

/// Why an existing leaf cannot be reused, if it cannot.
fn leaf_problem(
    existing: &CertKey,
    spec: &LeafSpec,
    ca_der: &CertificateDer<'_>,
) -> Option<String> {
    let check = || -> Result<(), String> {
        let der = CertificateDer::from_pem_slice(existing.cert_pem.as_bytes())
            .map_err(|e| format!("unreadable: {e}"))?;
        let (_, cert) =
            X509Certificate::from_der(der.as_ref()).map_err(|e| format!("unparsable: {e}"))?;
        let (_, ca) = X509Certificate::from_der(ca_der.as_ref())
            .map_err(|e| format!("unparsable CA: {e}"))?;
        cert.verify_signature(Some(ca.public_key()))
            .map_err(|_| "not signed by the current CA".to_string())?;

        let now = Utc::now().timestamp();
        if cert.validity().not_after.timestamp() < now + RENEW_BEFORE_SECS {
            return Err("expires soon".into());
        }
        if cert.validity().not_before.timestamp() > now {
            return Err("not valid yet".into());
        }

        let key =
            KeyPair::from_pem(&existing.key_pem).map_err(|e| format!("unreadable key: {e}"))?;
        if cert.public_key().subject_public_key.data.as_ref() != key.public_key_raw() {
            return Err("key does not match the certificate".into());
        }

        let subject = cert.subject();
        let cn: Vec<_> = subject
            .iter_common_name()
            .filter_map(|a| a.as_str().ok())
            .collect();
        let orgs: Vec<_> = subject
            .iter_organization()
            .filter_map(|a| a.as_str().ok())
            .collect();
        if cn != [spec.cn] || orgs != spec.org.into_iter().collect::<Vec<_>>() {
            return Err("subject changed".into());
        }

        let names: Vec<GeneralName<'_>> = match cert.subject_alternative_name() {
            Ok(Some(ext)) => ext.value.general_names.clone(),
            _ => Vec::new(),
        };
        for san in &spec.sans {
            if !covers(&names, san) {
                return Err(format!("does not cover {san}"));
            }
        }
        Ok(())
    };
    check().err()
}

fn covers(names: &[GeneralName<'_>], wanted: &str) -> bool {
    match wanted.parse::<IpAddr>() {
        Ok(IpAddr::V4(ip)) => names
            .iter()
            .any(|n| matches!(n, GeneralName::IPAddress(b) if *b == ip.octets())),
        Ok(IpAddr::V6(ip)) => names
            .iter()
            .any(|n| matches!(n, GeneralName::IPAddress(b) if *b == ip.octets())),
        Err(_) => names
            .iter()
            .any(|n| matches!(n, GeneralName::DNSName(d) if d.eq_ignore_ascii_case(wanted))),
    }
}

/// Day granularity is enough; starting yesterday tolerates clocks that are a little behind.
fn set_validity(params: &mut CertificateParams, days: u64) {
    let today = Utc::now().date_naive();
    let from = today.checked_sub_days(Days::new(1)).unwrap_or(today);
    let until = today.checked_add_days(Days::new(days)).unwrap_or(today);
    params.not_before = rcgen::date_time_ymd(from.year(), from.month() as u8, from.day() as u8);
    params.not_after = rcgen::date_time_ymd(until.year(), until.month() as u8, until.day() as u8);
}

fn read(path: &Path) -> Result<String, PkiError> {
    fs::read_to_string(path).map_err(|source| PkiError::Io {
        path: path.to_path_buf(),
        source,
    })
}

fn parse_pem(path: &Path, pem: &str) -> Result<CertificateDer<'static>, PkiError> {
    CertificateDer::from_pem_slice(pem.as_bytes()).map_err(|err| PkiError::Invalid {
        path: path.to_path_buf(),
        reason: err.to_string(),
    })
}

fn parse_der<'a>(
    path: &Path,
    der: &'a CertificateDer<'_>,
) -> Result<X509Certificate<'a>, PkiError> {
    X509Certificate::from_der(der.as_ref())
        .map(|(_, cert)| cert)
        .map_err(|err| PkiError::Invalid {
            path: path.to_path_buf(),
            reason: err.to_string(),
        })
}

/// Writes through a temporary file and a rename, so a crash never leaves a half-written key or
/// certificate behind, and the file has its final mode from the moment it holds secret bytes.
pub(crate) fn write_file(path: &Path, contents: &[u8], mode: u32) -> Result<(), PkiError> {
    let io = |source| PkiError::Io {
        path: path.to_path_buf(),
        source,
    };
    let mut tmp = path.as_os_str().to_owned();
    tmp.push(".tmp");
    let tmp = PathBuf::from(tmp);
    let mut options = fs::OpenOptions::new();
    options.write(true).create(true).truncate(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        options.mode(mode);
    }
    #[cfg(not(unix))]
    let _ = mode;
    let mut file = options.open(&tmp).map_err(io)?;
    // `mode` only applies on creation; a stale temp file from an older run may have another one.
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        file.set_permissions(fs::Permissions::from_mode(mode))
            .map_err(io)?;
    }
    file.write_all(contents).map_err(io)?;
    file.sync_all().map_err(io)?;
    fs::rename(&tmp, path).map_err(io)
}

#[cfg(test)]
#[allow(clippy::unwrap_used)] // tests may panic on unexpected input
mod tests {
    use super::*;

    #[test]
    fn generates_then_reuses() {
        let dir = tempfile::tempdir().unwrap();
        let first = ensure(dir.path(), &[]).unwrap();
        let second = ensure(dir.path(), &[]).unwrap();
        assert_eq!(first.ca_cert_pem, second.ca_cert_pem);
        assert_eq!(first.serving.cert_pem, second.serving.cert_pem);
        assert_eq!(first.kcp_admin.key_pem, second.kcp_admin.key_pem);
        assert_eq!(
            first.service_account.private_pem,
            second.service_account.private_pem
        );

        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            for key in [
                "ca.key",
                "apiserver.key",
                "kcp-admin.key",
                "shard-admin.key",
                SERVICE_ACCOUNT_KEY_FILE,
            ] {
                let mode = fs::metadata(dir.path().join(key))
                    .unwrap()
                    .permissions()
                    .mode();
                assert_eq!(mode & 0o777, 0o600, "{key}");
            }
        }
    }

    #[test]
    fn new_hostname_renews_only_the_serving_certificate() {
        let dir = tempfile::tempdir().unwrap();
        let first = ensure(dir.path(), &[]).unwrap();
        let second = ensure(dir.path(), &["shard.example.com".to_string()]).unwrap();
        assert_eq!(first.ca_cert_pem, second.ca_cert_pem);
        assert_ne!(first.serving.cert_pem, second.serving.cert_pem);
        assert_eq!(first.kcp_admin.cert_pem, second.kcp_admin.cert_pem);
        let der = CertificateDer::from_pem_slice(second.serving.cert_pem.as_bytes()).unwrap();
        let (_, cert) = X509Certificate::from_der(der.as_ref()).unwrap();
        let names = cert
            .subject_alternative_name()
            .unwrap()
            .unwrap()
            .value
            .general_names
            .clone();
        for host in ["localhost", "127.0.0.1", "shard.example.com"] {
            assert!(covers(&names, host), "{host}");
        }
    }

    #[test]
    fn client_certificates_name_their_groups() {
        let dir = tempfile::tempdir().unwrap();
        let pki = ensure(dir.path(), &[]).unwrap();
        for (pair, user, group) in [
            (&pki.kcp_admin, KCP_ADMIN_USER, KCP_ADMIN_GROUP),
            (&pki.shard_admin, SHARD_ADMIN_USER, SHARD_ADMIN_GROUP),
        ] {
            let der = CertificateDer::from_pem_slice(pair.cert_pem.as_bytes()).unwrap();
            let kcp_auth::AuthnResult::Authenticated(info) =
                kcp_auth::authn::x509::user_from_certificate(&der)
            else {
                panic!("not a user certificate");
            };
            assert_eq!(info.name, user);
            assert!(info.groups.iter().any(|g| g == group));
        }
    }

    #[test]
    fn a_replaced_ca_renews_the_leaves() {
        let dir = tempfile::tempdir().unwrap();
        let first = ensure(dir.path(), &[]).unwrap();
        fs::remove_file(dir.path().join("ca.crt")).unwrap();
        let second = ensure(dir.path(), &[]).unwrap();
        assert_ne!(first.ca_cert_pem, second.ca_cert_pem);
        assert_ne!(first.kcp_admin.cert_pem, second.kcp_admin.cert_pem);
    }

    #[test]
    fn service_account_key_signs_verifiable_tokens() {
        let dir = tempfile::tempdir().unwrap();
        let pki = ensure(dir.path(), &[]).unwrap();
        let key = &pki.service_account;
        let issuer = kcp_auth::TokenIssuer::new(
            "https://kcp.default.svc",
            key.private_pem.as_bytes(),
            key.public_pem.as_bytes(),
        )
        .unwrap();
        let token = issuer
            .issue(
                "root",
                "default",
                "sa",
                "uid",
                &["https://kcp.default.svc".to_string()],
                std::time::Duration::from_secs(60),
            )
            .unwrap();
        assert_eq!(token.token.split('.').count(), 3);

        // A key of another algorithm is refused, not replaced.
        let other_algorithm = KeyPair::generate_for(&rcgen::PKCS_ED25519).unwrap();
        fs::write(
            dir.path().join(SERVICE_ACCOUNT_KEY_FILE),
            other_algorithm.serialize_pem(),
        )
        .unwrap();
        assert!(matches!(
            ensure(dir.path(), &[]),
            Err(PkiError::Invalid { .. })
        ));
    }
}
