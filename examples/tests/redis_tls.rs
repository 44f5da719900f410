//! Redis as managed services run it: TLS only, with a certificate from a CA of the
//! deployment's own, client certificates required (`tls-auth-clients yes`) and an ACL
//! user. The guard claims over it, and a client that trusts other roots, brings no
//! certificate or no login fails when it connects, saying why. (`redis_deployments` runs
//! every multi-instance flow over TLS, behind Sentinel and on a cluster too.)

use crate::instance;

use instance::{Redis, Sentinels};
use mcp_mrtr::redis::RedisConfig;
use mcp_mrtr::request_state::{Claim, Consumed, StateGuard};

#[test]
fn the_guard_records_a_claim_once_over_tls() {
    let Some(redis) = Redis::start_tls() else { return };
    let runtime = tokio::runtime::Runtime::new().unwrap();
    runtime.block_on(async {
        let store = mcp_mrtr::redis::Redis::connect(redis.config()).await.expect("connect over TLS");
        let guard = store.state_guard();
        let claim = Claim::new([9; 32], 1, std::time::SystemTime::now() + std::time::Duration::from_mins(10))
            .issued_at(std::time::SystemTime::now() + std::time::Duration::from_secs(2));
        assert_eq!(guard.consume(&claim).await, Consumed::First);
        assert_eq!(guard.consume(&claim).await, Consumed::Again);
    });
}

/// What `Redis::connect` says for `config`, which must fail.
fn refusal(config: RedisConfig) -> String {
    let runtime = tokio::runtime::Runtime::new().unwrap();
    match runtime.block_on(mcp_mrtr::redis::Redis::connect(config)) {
        Ok(_) => panic!("connected with a configuration that must fail"),
        Err(error) => error.to_string(),
    }
}

#[test]
fn wrong_roots_no_client_certificate_no_login_or_plain_text_fail_at_connect_saying_why() {
    let Some(redis) = Redis::start_tls() else { return };
    let tls = redis.tls().expect("a TLS redis");
    let read = |p: &std::path::Path| std::fs::read(p).unwrap();
    let (ca, cert, key) = (read(&tls.ca), read(&tls.client_cert), read(&tls.client_key));

    // The system's roots do not include the test's CA.
    let untrusted = refusal(RedisConfig::url(redis.url()).client_certificate(cert.clone(), key.clone()));
    assert!(untrusted.to_lowercase().contains("certificate"), "{untrusted}");

    // The server requires a client certificate.
    let anonymous = refusal(RedisConfig::url(redis.url()).ca_certificate(ca.clone()));
    assert!(anonymous.contains("redis: ") && anonymous.contains("Certificate"), "{anonymous}");

    // The certificates are right, but a login is needed too (the default user is off).
    let nobody = RedisConfig::url(redis.url().replace("mcp-mrtr:the-fleet-only@", ""));
    let nobody = refusal(nobody.ca_certificate(ca.clone()).client_certificate(cert.clone(), key.clone()));
    assert!(nobody.contains("NOAUTH") || nobody.contains("NOPERM"), "{nobody}");

    // Certificates for a plain-text URL are a mistake, said before anything is sent.
    let plain = refusal(RedisConfig::url(redis.url().replace("rediss://", "redis://")).ca_certificate(ca));
    assert!(plain.contains("use rediss://"), "{plain}");
}

#[test]
fn a_sentinel_set_that_names_no_primary_fails_at_connect_saying_why() {
    let Some(deployment) = Sentinels::start() else { return };
    let sentinels: Vec<String> = deployment.env()[0].1.split(',').map(str::to_owned).collect();
    let unknown = refusal(RedisConfig::sentinel("no-such-service", sentinels));
    assert!(unknown.starts_with("task store: redis:"), "{unknown}");
    let malformed = refusal(RedisConfig::sentinel(instance::sentinel::MASTER, ["127.0.0.1"]));
    assert!(malformed.contains("a sentinel is host:port"), "{malformed}");
}
