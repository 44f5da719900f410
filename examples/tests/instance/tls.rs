//! Certificates for a TLS-only `redis-server`, made by the test: a CA of its own, a server
//! certificate for 127.0.0.1 signed by it, and a client certificate for
//! `tls-auth-clients yes`. Nothing from the system's trust store is involved, so a
//! client that does not name this CA must fail.

use std::path::{Path, PathBuf};

use rcgen::{
    BasicConstraints, CertificateParams, DistinguishedName, DnType, ExtendedKeyUsagePurpose, IsCa, Issuer, KeyPair,
    KeyUsagePurpose,
};

/// A name of its own for each certificate: one that shared its issuer's name would be
/// taken for self-signed.
fn named(mut params: CertificateParams, name: &str) -> CertificateParams {
    let mut dn = DistinguishedName::new();
    dn.push(DnType::CommonName, name);
    params.distinguished_name = dn;
    params
}

/// The PEM files one TLS Redis and its clients use, in one directory.
#[derive(Clone, Debug)]
pub(crate) struct TlsFiles {
    pub(crate) ca: PathBuf,
    pub(crate) server_cert: PathBuf,
    pub(crate) server_key: PathBuf,
    pub(crate) client_cert: PathBuf,
    pub(crate) client_key: PathBuf,
}

impl TlsFiles {
    /// Makes a fresh CA and the two certificates it signs, written to `dir`.
    pub(crate) fn make(dir: &Path) -> Self {
        let mut ca_params = named(CertificateParams::new(Vec::<String>::new()).unwrap(), "mcp-mrtr test CA");
        ca_params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
        ca_params.key_usages = vec![KeyUsagePurpose::KeyCertSign, KeyUsagePurpose::CrlSign];
        let ca_key = KeyPair::generate().unwrap();
        let ca_cert = ca_params.self_signed(&ca_key).unwrap();
        let issuer = Issuer::new(ca_params, ca_key);

        let leaf = |names: Vec<String>, purpose: ExtendedKeyUsagePurpose| {
            let mut params = named(CertificateParams::new(names.clone()).unwrap(), &names[0]);
            params.extended_key_usages = vec![purpose];
            let key = KeyPair::generate().unwrap();
            let cert = params.signed_by(&key, &issuer).unwrap();
            (cert.pem(), key.serialize_pem())
        };
        let (server_cert, server_key) =
            leaf(vec!["127.0.0.1".into(), "localhost".into()], ExtendedKeyUsagePurpose::ServerAuth);
        let (client_cert, client_key) = leaf(vec!["mcp-mrtr-test-client".into()], ExtendedKeyUsagePurpose::ClientAuth);

        let write = |name: &str, pem: &str| {
            let path = dir.join(name);
            std::fs::write(&path, pem).expect("write a certificate");
            path
        };
        Self {
            ca: write("ca.pem", &ca_cert.pem()),
            server_cert: write("server.pem", &server_cert),
            server_key: write("server.key", &server_key),
            client_cert: write("client.pem", &client_cert),
            client_key: write("client.key", &client_key),
        }
    }
}
