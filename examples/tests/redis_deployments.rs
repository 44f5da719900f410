//! Every multi-instance flow of `many_instances` (rounds alternating instances with a
//! claim refused everywhere, a task served through another instance, a change heard on
//! every instance), and the guard's contract straight on the store, against each
//! deployment Redis is run as: TLS only, behind Sentinel
//! (a primary, a replica, three sentinels), a three-primary cluster with replicas, and
//! the last two over TLS. `many_instances` also kills a primary of each mid-flow.

use crate::{instance, many_instances};

use std::time::{Duration, SystemTime};

use instance::{Cluster, Redis, Sentinels};
use mcp_mrtr::redis::RedisConfig;
use mcp_mrtr::request_state::{Claim, Consumed, StateGuard};

/// The flows' tests for the deployment `start` makes (`None`: Redis is not installed).
macro_rules! flows_on {
    ($deployment:ident, $start:expr) => {
        mod $deployment {
            use super::*;

            #[test]
            fn rounds_alternate_instances_and_a_claim_holds_everywhere() {
                let Some(deployment) = $start else { return };
                many_instances::rounds_alternate_and_a_claim_holds_everywhere(&deployment.env());
            }

            #[test]
            fn a_task_is_polled_answered_and_cancelled_through_another_instance() {
                let Some(deployment) = $start else { return };
                many_instances::a_task_is_served_through_another_instance(&deployment.env());
            }

            #[test]
            fn a_change_reaches_listeners_on_every_instance() {
                let Some(deployment) = $start else { return };
                many_instances::a_change_reaches_every_listener(&deployment.env());
            }

            #[test]
            fn the_guard_records_each_state_once_across_connections() {
                let Some(deployment) = $start else { return };
                claims_once_across_connections(deployment.config());
            }
        }
    };
}

/// The guard's contract, straight on the store: of two connections (two instances)
/// claiming the same state at once, exactly one is first, and a second claim of either
/// is refused; for the claims of clients spread over every bucket (a cluster's shards).
fn claims_once_across_connections(config: RedisConfig) {
    let runtime = tokio::runtime::Runtime::new().unwrap();
    runtime.block_on(async {
        let one = mcp_mrtr::redis::Redis::connect(config.clone()).await.expect("connect");
        let two = mcp_mrtr::redis::Redis::connect(config).await.expect("connect");
        let (a, b) = (one.state_guard(), two.state_guard());
        let expires = SystemTime::now() + Duration::from_mins(10);
        // A guard's first claim waits for its memory to begin, which refuses what was
        // sealed before (as a server's first seal comes after): one claim each first.
        for (guard, n) in [(&a, 0xfe), (&b, 0xff)] {
            let _ = guard.consume(&Claim::new([n; 32], 1, expires)).await;
        }
        for n in 0..64u8 {
            let mut digest = [n; 32];
            digest[0] = n.wrapping_mul(37);
            let claim = Claim::new(digest, u32::from(n) * 7, expires).issued_at(SystemTime::now());
            let (first, second) = tokio::join!(a.consume(&claim), b.consume(&claim));
            let mut seen = [first, second];
            seen.sort_by_key(|consumed| *consumed != Consumed::First);
            assert_eq!(seen, [Consumed::First, Consumed::Again], "state {n}");
            assert_eq!(a.consume(&claim).await, Consumed::Again, "state {n} again");
        }
    });
}

flows_on!(tls, Redis::start_tls());
flows_on!(sentinel, Sentinels::start());
flows_on!(sentinel_tls, Sentinels::start_tls());
flows_on!(cluster, Cluster::start());
flows_on!(cluster_tls, Cluster::start_tls());
