//! Redis behind Sentinel: a primary, a replica and three sentinels on 127.0.0.1, the
//! instances told only the sentinels' addresses and the service name. Every
//! multi-instance flow runs as it does against one Redis; `many_instances` kills the
//! primary mid-flow (`a_failover_behind_sentinel_…`).

use crate::{instance, many_instances};

use instance::Sentinels;

#[test]
fn rounds_alternate_instances_and_a_claim_holds_everywhere_behind_sentinel() {
    let Some(deployment) = Sentinels::start() else { return };
    many_instances::rounds_alternate_and_a_claim_holds_everywhere(&deployment.env());
}

#[test]
fn a_task_is_polled_answered_and_cancelled_through_another_instance_behind_sentinel() {
    let Some(deployment) = Sentinels::start() else { return };
    many_instances::a_task_is_served_through_another_instance(&deployment.env());
}

#[test]
fn a_change_reaches_listeners_on_every_instance_behind_sentinel() {
    let Some(deployment) = Sentinels::start() else { return };
    many_instances::a_change_reaches_every_listener(&deployment.env());
}

#[test]
fn a_sentinel_set_that_names_no_primary_fails_at_connect_saying_why() {
    let Some(deployment) = Sentinels::start() else { return };
    let runtime = tokio::runtime::Runtime::new().unwrap();
    let sentinels: Vec<String> = deployment.env()[0].1.split(',').map(str::to_owned).collect();
    let config = mcp_mrtr::redis::RedisConfig::sentinel("no-such-service", sentinels);
    let refused = runtime.block_on(mcp_mrtr::redis::Redis::connect(config)).expect_err("no such service");
    assert!(refused.to_string().starts_with("task store: redis:"), "{refused}");
    let malformed = mcp_mrtr::redis::RedisConfig::sentinel(instance::sentinel::MASTER, ["127.0.0.1"]);
    let refused = runtime.block_on(mcp_mrtr::redis::Redis::connect(malformed)).expect_err("no port");
    assert!(refused.to_string().contains("a sentinel is host:port"), "{refused}");
}
