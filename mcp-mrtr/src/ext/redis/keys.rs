//! [`KeySpace`]: where each store's keys live.
//!
//! One Redis (standalone, or the primary behind Sentinel) keeps the key names of earlier
//! releases, so a rolling upgrade keeps every claim and task. A Redis Cluster needs every
//! script's keys in one hash slot, and a server's traffic spread over its shards: there,
//! keys carry a hash tag of [`BUCKETS`] buckets. A task's record and its bucket's lease
//! index share the tag `{tNN}` (the bucket of its id), so each write is one script on
//! one shard, and the watcher walks the buckets' indexes. A state's claim and its bucket's
//! memory share `{sNN}` (the bucket of its digest), so the guard's memory follows each
//! shard's own failovers.

use crate::base::hex;

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

    /// The claim key of the state whose token digests to `digest`, and the memory key
    /// beside it.
    pub(super) fn state(&self, digest: &[u8; 32]) -> (String, String) {
        let start = self.start('s', digest[0] % BUCKETS, "state:");
        (format!("{start}{}", hex::encode(digest)), format!("{start}memory"))
    }

    /// Every memory key of the guard: one, or one per bucket.
    pub(super) fn memories(&self) -> Vec<String> {
        self.buckets().map(|bucket| format!("{}memory", self.start('s', bucket, "state:"))).collect()
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
    fn one_redis_keeps_the_names_of_earlier_releases() {
        let keys = KeySpace::new("mcp-mrtr:", false);
        let (claim, memory) = keys.state(&[0xab; 32]);
        assert_eq!(claim, format!("mcp-mrtr:state:{}", "ab".repeat(32)));
        assert_eq!(memory, "mcp-mrtr:state:memory");
        assert_eq!(keys.memories(), ["mcp-mrtr:state:memory"]);
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
        let (claim, memory) = keys.state(&[0x13; 32]);
        assert_eq!((claim.as_str(), tag(&claim)), (&*format!("app:{{s03}}:state:{}", "13".repeat(32)), "s03"));
        assert_eq!(tag(&memory), tag(&claim));
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
