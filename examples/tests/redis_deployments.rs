//! Every multi-instance flow of `many_instances` (rounds alternating instances with a
//! claim refused everywhere, a task served through another instance, a change heard on
//! every instance) against each deployment Redis is run as: TLS only, behind Sentinel
//! (a primary, a replica, three sentinels), a three-primary cluster with replicas, and
//! the last two over TLS. `many_instances` also kills a primary of each mid-flow.

use crate::{instance, many_instances};

use instance::{Cluster, Redis, Sentinels};

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
        }
    };
}

flows_on!(tls, Redis::start_tls());
flows_on!(sentinel, Sentinels::start());
flows_on!(sentinel_tls, Sentinels::start_tls());
flows_on!(cluster, Cluster::start());
flows_on!(cluster_tls, Cluster::start_tls());
