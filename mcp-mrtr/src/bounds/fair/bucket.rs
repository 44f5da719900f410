//! [`RateLimit`]: token buckets per client, for pools where creating is the attack.

use std::collections::HashMap;
use std::sync::{Mutex, PoisonError};
use std::time::{Duration, Instant};

use super::ClientId;

/// How many creations a client may make: `burst` at once, then `per_second` on average.
///
/// Buckets are kept per client; a full bucket carries no information, so full ones are
/// dropped whenever the table grows past a bound, and the table's memory stays that of
/// the clients active in the last `burst / per_second` seconds.
#[derive(Debug)]
pub(crate) struct RateLimit {
    per_second: f64,
    burst: f64,
    buckets: Mutex<HashMap<ClientId, Bucket>>,
}

#[derive(Clone, Copy, Debug)]
struct Bucket {
    tokens: f64,
    at: Instant,
}

/// Past this many tracked clients, full buckets are swept out.
const SWEEP_AT: usize = 4_096;

/// The most clients tracked at once (about 6 MB). Past it, when sweeping frees nothing
/// (clients cycling through many addresses), the fullest bucket is forgotten: that client
/// gets a fresh burst, as a new address would have given it anyway.
const MAX_TRACKED: usize = 65_536;

impl RateLimit {
    /// `burst` creations at once, refilled at `per_second`.
    pub(crate) fn new(per_second: f64, burst: u32) -> Self {
        Self { per_second: per_second.max(0.0), burst: f64::from(burst.max(1)), buckets: Mutex::default() }
    }

    /// Takes one token from `client`'s bucket: `Err` with how long until one is there.
    pub(crate) fn take(&self, client: &ClientId) -> Result<(), Duration> {
        self.take_at(client, Instant::now())
    }

    fn take_at(&self, client: &ClientId, now: Instant) -> Result<(), Duration> {
        let mut buckets = self.buckets.lock().unwrap_or_else(PoisonError::into_inner);
        if buckets.len() >= SWEEP_AT && !buckets.contains_key(client) {
            buckets.retain(|_, bucket| self.refill(*bucket, now).tokens < self.burst);
            if buckets.len() >= MAX_TRACKED {
                let fullest = buckets
                    .iter()
                    .max_by(|(_, a), (_, b)| a.tokens.total_cmp(&b.tokens))
                    .map(|(fullest, _)| fullest.clone());
                if let Some(fullest) = fullest {
                    buckets.remove(&fullest);
                }
            }
        }
        let bucket = buckets.entry(client.clone()).or_insert(Bucket { tokens: self.burst, at: now });
        *bucket = self.refill(*bucket, now);
        if bucket.tokens >= 1.0 {
            bucket.tokens -= 1.0;
            return Ok(());
        }
        let missing = 1.0 - bucket.tokens;
        Err(if self.per_second > 0.0 { Duration::from_secs_f64(missing / self.per_second) } else { Duration::MAX })
    }

    fn refill(&self, bucket: Bucket, now: Instant) -> Bucket {
        let elapsed = now.saturating_duration_since(bucket.at).as_secs_f64();
        Bucket { tokens: (bucket.tokens + elapsed * self.per_second).min(self.burst), at: now }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_burst_then_the_rate_per_client() {
        let limit = RateLimit::new(2.0, 3);
        let (a, b) = (ClientId::Caller("a".into()), ClientId::Caller("b".into()));
        let start = Instant::now();
        for _ in 0..3 {
            limit.take_at(&a, start).unwrap();
        }
        let wait = limit.take_at(&a, start).unwrap_err();
        assert_eq!(wait, Duration::from_millis(500));
        limit.take_at(&b, start).expect("another client has its own bucket");
        limit.take_at(&a, start + Duration::from_millis(500)).expect("refilled at the rate");
        assert!(limit.take_at(&a, start + Duration::from_millis(500)).is_err());
    }

    #[test]
    fn full_buckets_are_swept_when_the_table_grows() {
        let limit = RateLimit::new(1000.0, 1);
        let start = Instant::now();
        for n in 0..SWEEP_AT {
            limit.take_at(&ClientId::Caller(n.to_string().into()), start).unwrap();
        }
        let later = start + Duration::from_secs(1);
        limit.take_at(&ClientId::Unknown, later).unwrap();
        assert_eq!(limit.buckets.lock().unwrap().len(), 1, "refilled buckets were dropped");
    }
}
