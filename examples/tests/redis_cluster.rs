//! Redis Cluster: three primaries with a replica each on 127.0.0.1, the instances told
//! the seed nodes. Every multi-instance flow runs as it does against one Redis, with each
//! script's keys in one slot; `many_instances` kills a primary mid-flow
//! (`a_cluster_failover_…`).

use crate::{instance, many_instances};

use instance::Cluster;

#[test]
fn rounds_alternate_instances_and_a_claim_holds_everywhere_on_a_cluster() {
    let Some(cluster) = Cluster::start() else { return };
    many_instances::rounds_alternate_and_a_claim_holds_everywhere(&cluster.env());
}

#[test]
fn a_task_is_polled_answered_and_cancelled_through_another_instance_on_a_cluster() {
    let Some(cluster) = Cluster::start() else { return };
    many_instances::a_task_is_served_through_another_instance(&cluster.env());
}

#[test]
fn a_change_reaches_listeners_on_every_instance_on_a_cluster() {
    let Some(cluster) = Cluster::start() else { return };
    many_instances::a_change_reaches_every_listener(&cluster.env());
}
