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
    /// The settings a TLS-only node (or sentinel) serves with, replication and the
    /// cluster bus included, clients required to present a certificate.
    pub(crate) fn server_args(&self) -> Vec<String> {
        let path = |p: &Path| p.to_str().expect("a UTF-8 path").to_owned();
        let mut args = Vec::new();
        for (name, value) in [
            ("--tls-cert-file", path(&self.server_cert)),
            ("--tls-key-file", path(&self.server_key)),
            ("--tls-ca-cert-file", path(&self.ca)),
            ("--tls-auth-clients", "yes".into()),
            ("--tls-replication", "yes".into()),
        ] {
            args.extend([name.to_owned(), value]);
        }
        args
    }

    /// `redis-cli`'s flags to reach a node or sentinel serving with these.
    pub(crate) fn cli_args(&self) -> Vec<String> {
        let path = |p: &Path| p.to_str().expect("a UTF-8 path").to_owned();
        vec![
            "--tls".into(),
            "--cacert".into(),
            path(&self.ca),
            "--cert".into(),
            path(&self.client_cert),
            "--key".into(),
            path(&self.client_key),
        ]
    }

    /// What the `everything` fixture is told to trust and present.
    pub(crate) fn env(&self) -> Vec<(&'static str, String)> {
        let path = |p: &Path| p.to_str().expect("a UTF-8 path").to_owned();
        vec![
            ("MCP_MRTR_REDIS_CA", path(&self.ca)),
            ("MCP_MRTR_REDIS_CERT", path(&self.client_cert)),
            ("MCP_MRTR_REDIS_KEY", path(&self.client_key)),
        ]
    }

    /// Makes a fresh CA and the two certificates it signs, written to `dir`.
    pub(crate) fn make(dir: &Path) -> Self {
        let mut ca_params = named(CertificateParams::new(Vec::<String>::new()).unwrap(), "mcp-mrtr test CA");
        ca_params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
        ca_params.key_usages = vec![KeyUsagePurpose::KeyCertSign, KeyUsagePurpose::CrlSign];
        let ca_key = KeyPair::generate().unwrap();
        let ca_cert = ca_params.self_signed(&ca_key).unwrap();
        let issuer = Issuer::new(ca_params, ca_key);

        let leaf = |names: Vec<String>, purposes: Vec<ExtendedKeyUsagePurpose>| {
            let mut params = named(CertificateParams::new(names.clone()).unwrap(), &names[0]);
            params.extended_key_usages = purposes;
            let key = KeyPair::generate().unwrap();
            let cert = params.signed_by(&key, &issuer).unwrap();
            (cert.pem(), key.serialize_pem())
        };
        // Nodes present theirs as clients too (replication, the cluster bus, sentinels).
        let both = vec![ExtendedKeyUsagePurpose::ServerAuth, ExtendedKeyUsagePurpose::ClientAuth];
        let (server_cert, server_key) = leaf(vec!["127.0.0.1".into(), "localhost".into()], both);
        let (client_cert, client_key) =
            leaf(vec!["mcp-mrtr-test-client".into()], vec![ExtendedKeyUsagePurpose::ClientAuth]);

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
