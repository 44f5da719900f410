//! [`KeySpace`]: where each store's keys live.
//!
//! One Redis (standalone, or the primary behind Sentinel) keeps the task keys of earlier
//! releases, so a rolling upgrade keeps every task; claims are per call since 0.2 and
//! live under names of their own. A Redis Cluster needs every
//! script's keys in one hash slot, and a server's traffic spread over its shards: there,
//! keys carry a hash tag of [`BUCKETS`] buckets. A task's record and its bucket's lease
//! index share the tag `{tNN}` (the bucket of its id), so each write is one script on
//! one shard, and the watcher walks the buckets' indexes. A client's claims and their
//! bucket's memory and books (its clients by size and by end, its count of claims) share
//! `{sNN}` (the bucket of the client), so the guard's memory follows each shard's own
//! failovers, and its capacity is split evenly over the buckets.

use crate::base::hex;

/// The guard's memory key (after `state:`). Not the `memory` of earlier releases: its value
/// now carries Redis's eviction count too, which their script would not read, so during a
/// rolling upgrade each release keeps its own.
const MEMORY: &str = "since";

/// The keys one client's claims are kept under.
#[derive(Debug, PartialEq, Eq)]
pub(super) struct ClaimKeys {
    /// A sorted set: each claim's digest, scored by its state's expiry.
    pub(super) claims: String,
    /// The expiry at or below which this client's states are refused (entries given up).
    pub(super) floor: String,
    /// When the guard's memory began, in this bucket.
    pub(super) memory: String,
    /// The bucket's clients holding claims, each scored by how many: the last is the
    /// heaviest, who gives way when the bucket holds its part of the guard's capacity.
    pub(super) sizes: String,
    /// The same clients, each scored by when its set of claims expires (Redis's ms), so
    /// the books forget a client whose claims Redis dropped.
    pub(super) ends: String,
    /// How many claims the bucket holds.
    pub(super) held: String,
    /// The client as its keys name it (hex), a member of `sizes` and `ends`.
    pub(super) owner: String,
}

/// How many buckets the keys of a Redis Cluster are spread over: enough slots that three
/// to a dozen shards each get some, few enough that walking them is cheap.
pub(super) const BUCKETS: u8 = 16;

/// The keys of one server (its prefix), laid out for one Redis or a cluster.
#[derive(Clone, Debug)]
pub(super) struct KeySpace {
    prefix: String,
    sharded: bool,
}

impl KeySpace {
    /// `prefix` as [`namespace`](super::namespace) delimits it; `sharded` for a cluster.
    pub(super) fn new(prefix: &str, sharded: bool) -> Self {
        Self { prefix: prefix.to_owned(), sharded }
    }

    /// Where keys of `kind` in `bucket` start: `<prefix>kind:` on one Redis,
    /// `<prefix>{<tag><bucket>}:kind:` on a cluster.
    fn start(&self, tag: char, bucket: u8, kind: &str) -> String {
        if self.sharded {
            format!("{}{{{tag}{bucket:02}}}:{kind}", self.prefix)
        } else {
            format!("{}{kind}", self.prefix)
        }
    }

    /// The keys of the client `owner`'s claims: the set of them, its floor, and the
    /// memory key beside them (one bucket per client, so a script sees all three).
    pub(super) fn claims(&self, owner: u32) -> ClaimKeys {
        let bucket = u8::try_from(owner % u32::from(BUCKETS)).unwrap_or(0);
        let start = self.start('s', bucket, "state:");
        let owner = hex::encode(&owner.to_be_bytes());
        ClaimKeys {
            claims: format!("{start}claims:{owner}"),
            floor: format!("{start}floor:{owner}"),
            memory: format!("{start}{MEMORY}"),
            sizes: format!("{start}owners:by-size"),
            ends: format!("{start}owners:by-end"),
            held: format!("{start}held"),
            owner,
        }
    }

    /// How many buckets the guard's claims are spread over: one on one Redis.
    pub(super) fn claim_buckets(&self) -> u8 {
        if self.sharded {
            BUCKETS
        } else {
            1
        }
    }

    /// Every memory key of the guard: one, or one per bucket.
    pub(super) fn memories(&self) -> Vec<String> {
        self.buckets().map(|bucket| format!("{}{MEMORY}", self.start('s', bucket, "state:"))).collect()
    }

    /// The record key of the task `id`, and its bucket's lease index.
    pub(super) fn task(&self, id: &str) -> (String, String) {
        let bucket = task_bucket(id);
        (format!("{}{id}", self.start('t', bucket, "task:")), self.start('t', bucket, "task-leases"))
    }

    /// Each bucket's lease index, with what its records' keys start with.
    pub(super) fn leases(&self) -> Vec<(String, String)> {
        self.buckets()
            .map(|bucket| (self.start('t', bucket, "task-leases"), self.start('t', bucket, "task:")))
            .collect()
    }

    /// The task workers that said they are alive: a sorted set, each scored by until when.
    pub(super) fn workers(&self) -> String {
        format!("{}task-workers", self.prefix)
    }

    /// The servers that keep tasks under this prefix: a sorted set of their names, each
    /// scored by until when.
    pub(super) fn servers(&self) -> String {
        format!("{}task-servers", self.prefix)
    }

    /// The fanout's channel.
    pub(super) fn channel(&self) -> String {
        format!("{}changes", self.prefix)
    }

    fn buckets(&self) -> impl Iterator<Item = u8> {
        0..if self.sharded { BUCKETS } else { 1 }
    }
}

/// A task id's bucket: FNV-1a, fixed forever, since every instance of every release must
/// find the same record.
fn task_bucket(id: &str) -> u8 {
    let hash = id.bytes().fold(0x811c_9dc5_u32, |hash, byte| (hash ^ u32::from(byte)).wrapping_mul(0x0100_0193));
    u8::try_from(hash % u32::from(BUCKETS)).unwrap_or(0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_redis_has_no_hash_tags() {
        let keys = KeySpace::new("mcp-mrtr:", false);
        let claims = keys.claims(0xab);
        assert_eq!(claims.claims, "mcp-mrtr:state:claims:000000ab");
        assert_eq!(claims.floor, "mcp-mrtr:state:floor:000000ab");
        assert_eq!(claims.memory, "mcp-mrtr:state:since");
        assert_eq!(
            (claims.sizes.as_str(), claims.ends.as_str()),
            ("mcp-mrtr:state:owners:by-size", "mcp-mrtr:state:owners:by-end")
        );
        assert_eq!((claims.held.as_str(), claims.owner.as_str()), ("mcp-mrtr:state:held", "000000ab"));
        assert_eq!(keys.memories(), ["mcp-mrtr:state:since"]);
        assert_eq!(keys.task("t1"), ("mcp-mrtr:task:t1".to_owned(), "mcp-mrtr:task-leases".to_owned()));
        assert_eq!(keys.leases(), [("mcp-mrtr:task-leases".to_owned(), "mcp-mrtr:task:".to_owned())]);
    }

    /// The part of `key` Redis Cluster hashes: the first `{…}` with something inside.
    fn tag(key: &str) -> &str {
        let open = key.find('{').unwrap();
        let close = open + key[open..].find('}').unwrap();
        &key[open + 1..close]
    }

    #[test]
    fn on_a_cluster_each_scripts_keys_share_a_tag_and_the_buckets_spread() {
        let keys = KeySpace::new("app:", true);
        let claims = keys.claims(0x13);
        assert_eq!((claims.claims.as_str(), tag(&claims.claims)), ("app:{s03}:state:claims:00000013", "s03"));
        assert_eq!((tag(&claims.floor), tag(&claims.memory)), ("s03", "s03"));
        assert_eq!((tag(&claims.sizes), tag(&claims.ends), tag(&claims.held)), ("s03", "s03", "s03"));
        // A task id with braces of its own does not move its record out of its bucket.
        for id in ["t1", "{x}", "a}b{c", ""] {
            let (record, leases) = keys.task(id);
            assert_eq!(tag(&record), tag(&leases), "{id}");
            assert!(keys.leases().iter().any(|(index, start)| *index == leases && record.starts_with(start)));
        }
        assert_eq!(keys.memories().len(), usize::from(BUCKETS));
        let used: std::collections::HashSet<_> = (0..200).map(|n| keys.task(&format!("task-{n}")).1).collect();
        assert_eq!(used.len(), usize::from(BUCKETS), "ids spread over every bucket");
    }
}
