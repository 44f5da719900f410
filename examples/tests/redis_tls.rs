//! Redis as managed services run it: TLS only, with a certificate from a CA of the
//! deployment's own, and client certificates required (`tls-auth-clients yes`). The
//! instances reach it with `rediss://` and the CA and client certificate the test made
//! (`MCP_MRTR_REDIS_CA`, `_CERT`, `_KEY` for the fixture); every multi-instance flow runs
//! over it as over plain text, and a client that trusts other roots or brings no
//! certificate fails when it connects, saying why. Behind Sentinel and on a cluster, every
//! link speaks TLS too.

use crate::{instance, many_instances};

use instance::{Cluster, Redis, Sentinels};
use mcp_mrtr::redis::RedisConfig;
use mcp_mrtr::request_state::{Claim, Consumed, StateGuard};

#[test]
fn rounds_alternate_instances_and_a_claim_holds_everywhere_over_tls() {
    let Some(redis) = Redis::start_tls() else { return };
    many_instances::rounds_alternate_and_a_claim_holds_everywhere(&redis.env());
}

#[test]
fn a_task_is_polled_answered_and_cancelled_through_another_instance_over_tls() {
    let Some(redis) = Redis::start_tls() else { return };
    many_instances::a_task_is_served_through_another_instance(&redis.env());
}

#[test]
fn a_change_reaches_listeners_on_every_instance_over_tls() {
    let Some(redis) = Redis::start_tls() else { return };
    many_instances::a_change_reaches_every_listener(&redis.env());
}

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

/// TLS everywhere behind Sentinel: the sentinels, the data nodes and their replication,
/// all with the deployment's own CA and client certificates.
#[test]
fn rounds_and_tasks_over_tls_behind_sentinel() {
    let Some(deployment) = Sentinels::start_tls() else { return };
    many_instances::rounds_alternate_and_a_claim_holds_everywhere(&deployment.env());
    many_instances::a_task_is_served_through_another_instance(&deployment.env());
}

/// TLS everywhere on a cluster: clients, replication and the cluster bus.
#[test]
fn rounds_tasks_and_listeners_over_tls_on_a_cluster() {
    let Some(cluster) = Cluster::start_tls() else { return };
    many_instances::rounds_alternate_and_a_claim_holds_everywhere(&cluster.env());
    many_instances::a_task_is_served_through_another_instance(&cluster.env());
    many_instances::a_change_reaches_every_listener(&cluster.env());
}
