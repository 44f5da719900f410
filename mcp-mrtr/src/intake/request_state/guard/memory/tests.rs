//! The `MemoryGuard`'s tests: what it keeps and refuses, and that a claim costs the same
//! however many clients hold entries.

use sha2::{Digest, Sha256};

use super::*;

const MINUTE: Duration = Duration::from_secs(60);

fn claim(id: &str, owner: u32, keep_for: Duration) -> Claim {
    let expires =
        SystemTime::now().checked_add(keep_for).unwrap_or(UNIX_EPOCH + Duration::from_secs(u64::from(u32::MAX)));
    Claim::new(Sha256::digest(id.as_bytes()).into(), owner, expires)
}

#[test]
fn a_state_sealed_before_the_guard_was_made_is_refused() {
    let sealed = SystemTime::now() - Duration::from_secs(5);
    let guard = MemoryGuard::new();
    // A restarted process: the state may have been claimed by the one before.
    assert_eq!(guard.consume_now(&claim("old", 1, MINUTE).issued_at(sealed)), Consumed::Again);
    let fresh = claim("new", 1, MINUTE).issued_at(SystemTime::now());
    assert_eq!(guard.consume_now(&fresh), Consumed::First);
    assert_eq!(guard.consume_now(&fresh), Consumed::Again);
}

#[test]
fn a_state_is_consumed_once_and_forgotten_after_it_expires() {
    let guard = MemoryGuard::new();
    assert_eq!(guard.consume_now(&claim("a", 1, MINUTE)), Consumed::First);
    assert_eq!(guard.consume_now(&claim("a", 1, MINUTE)), Consumed::Again);
    assert_eq!(guard.consume_now(&claim("b", 1, MINUTE)), Consumed::First);
    assert_eq!(guard.consume_now(&claim("gone", 1, Duration::ZERO)), Consumed::First);
    assert_eq!(guard.consume_now(&claim("c", 1, MINUTE)), Consumed::First);
    assert_eq!(guard.len(), 4, "an expired entry is kept until its deadline's second has passed");
    let later = Instant::now() + Duration::from_secs(2);
    assert_eq!(guard.consume_at(&claim("d", 1, MINUTE), later), Consumed::First, "pruning keeps the live ones");
    assert_eq!(guard.len(), 4, "the expired entry was pruned");
    assert_eq!(guard.consume_now(&claim("b", 1, MINUTE)), Consumed::Again);
}

#[test]
fn a_full_guard_gives_up_the_heaviest_clients_oldest_and_refuses_what_it_gave_up() {
    let guard = MemoryGuard::with_capacity(4).with_share(4);
    let heavy: Vec<Claim> = (1..=3u32).map(|n| claim(&format!("h{n}"), 1, MINUTE * n)).collect();
    for c in &heavy {
        assert_eq!(guard.consume_now(c), Consumed::First);
    }
    assert_eq!(guard.consume_now(&claim("light", 2, MINUTE)), Consumed::First);
    assert_eq!(guard.consume_now(&claim("newcomer", 3, MINUTE)), Consumed::First, "never refused for room");
    assert_eq!(guard.len(), 4);
    assert_eq!(guard.consume_now(&heavy[0]), Consumed::Again, "the given-up state stays refused");
    assert_eq!(guard.consume_now(&claim("older-h", 1, MINUTE / 2)), Consumed::Again, "below the floor");
    assert_eq!(guard.consume_now(&claim("light", 2, MINUTE)), Consumed::Again, "the light client kept its entry");
    assert_eq!(guard.consume_now(&claim("newer-h", 1, MINUTE * 5)), Consumed::First, "above the floor");
}

#[test]
fn one_client_past_its_share_gives_up_only_its_own_entries() {
    let guard = MemoryGuard::with_capacity(100).with_share(2);
    assert_eq!(guard.consume_now(&claim("other", 9, MINUTE)), Consumed::First);
    for n in 0..10u32 {
        assert_eq!(
            guard.consume_now(&claim(&format!("f{n}"), 1, MINUTE + Duration::from_secs(n.into()))),
            Consumed::First
        );
    }
    assert_eq!(guard.len(), 3, "the flooder holds its share, the other client its entry");
    assert_eq!(guard.consume_now(&claim("other", 9, MINUTE)), Consumed::Again);
}

#[test]
fn a_lifetime_past_what_the_clock_holds_is_kept_not_a_panic() {
    let guard = MemoryGuard::new();
    assert_eq!(guard.consume_now(&claim("forever", 1, Duration::MAX)), Consumed::First);
    assert_eq!(guard.consume_now(&claim("soon", 1, Duration::ZERO)), Consumed::First);
    assert_eq!(guard.consume_now(&claim("next", 1, MINUTE)), Consumed::First);
    assert_eq!(guard.consume_now(&claim("forever", 1, Duration::MAX)), Consumed::Again);
}

#[test]
fn many_entries_are_pruned_in_expiry_order() {
    let guard = MemoryGuard::with_capacity(10_000).with_share(10_000);
    for i in 0..5_000 {
        let keep = if i % 2 == 0 { Duration::ZERO } else { MINUTE };
        assert_eq!(guard.consume_now(&claim(&format!("id-{i}"), 1, keep)), Consumed::First);
    }
    let later = Instant::now() + Duration::from_secs(2);
    assert_eq!(guard.consume_at(&claim("one-more", 1, MINUTE), later), Consumed::First);
    assert_eq!(guard.len(), 2_501);
    assert_eq!(guard.consume_now(&claim("id-1", 1, MINUTE)), Consumed::Again);
}

#[test]
fn an_entry_is_never_pruned_before_its_state_expires() {
    let guard = MemoryGuard::new();
    let soon = claim("soon", 1, Duration::from_millis(900));
    assert_eq!(guard.consume_now(&soon), Consumed::First);
    // Whatever the fraction of the second now is, 0.8 s later the state is still valid.
    let later = Instant::now() + Duration::from_millis(800);
    assert_eq!(guard.consume_at(&claim("other", 1, MINUTE), later), Consumed::First);
    assert_eq!(guard.consume_at(&soon, later), Consumed::Again);
}

#[test]
fn concurrent_claims_of_one_state_succeed_once() {
    let guard = std::sync::Arc::new(MemoryGuard::new());
    let same = claim("same", 1, MINUTE);
    let firsts: usize = std::thread::scope(|scope| {
        let handles: Vec<_> = (0..16).map(|_| scope.spawn(|| guard.consume_now(&same) == Consumed::First)).collect();
        handles.into_iter().map(|h| usize::from(h.join().unwrap())).sum()
    });
    assert_eq!(firsts, 1);
}

/// A claim of step `n` by `owner`, kept for `keep_for`, its digest made of `n` alone (no
/// hashing: the timing test below measures the guard, not SHA-256).
fn numbered(n: u64, owner: u32, keep_for: Duration) -> Claim {
    let mut digest = [0u8; 32];
    digest[..8].copy_from_slice(&n.to_be_bytes());
    Claim::new(digest, owner, SystemTime::now() + keep_for)
}

/// Every index says what the owners hold: the count, the sizes, the soonest deadlines and
/// the floors of those that hold nothing.
fn assert_indexes_agree(guard: &MemoryGuard) {
    let used = guard.lock();
    let standings: Vec<(u32, Standing)> = used.owners.iter().map(|(id, owner)| (*id, owner.standing())).collect();
    assert_eq!(used.total, standings.iter().map(|(_, s)| s.held).sum::<usize>());
    let sizes: BTreeSet<_> = standings.iter().filter(|(_, s)| s.held > 0).map(|(id, s)| (s.held, *id)).collect();
    assert_eq!(used.by_size, sizes);
    let soonest: BTreeSet<_> = standings.iter().filter_map(|(id, s)| Some((s.soonest?, *id))).collect();
    assert_eq!(used.by_soonest, soonest);
    let floors: BTreeSet<_> = standings.iter().filter(|(_, s)| s.held == 0).map(|(id, s)| (s.floor, *id)).collect();
    assert_eq!(used.by_floor, floors);
}

#[test]
fn the_indexes_follow_every_claim_expiry_and_give_up() {
    let guard = MemoryGuard::with_capacity(40).with_share(12);
    let later = Instant::now() + Duration::from_secs(2);
    for n in 0..200u64 {
        let owner = u32::try_from(n % 9).unwrap();
        let keep = if n % 3 == 0 { Duration::ZERO } else { MINUTE + Duration::from_secs(n) };
        let at = if n < 100 { Instant::now() } else { later };
        guard.consume_at(&numbered(n, owner, keep), at);
        assert_indexes_agree(&guard);
    }
    assert!(guard.len() <= 40);
}

/// The entries of a client that claims no more are pruned by other clients' claims once
/// they expire, a few owners per claim, and a client whose floor has passed is forgotten.
#[test]
fn entries_of_a_client_gone_quiet_are_pruned_by_the_next_claims() {
    let guard = MemoryGuard::with_capacity(1_000).with_share(10);
    for n in 0..50 {
        // Each expiring a little after the one before, all within half a second.
        assert_eq!(guard.consume_now(&numbered(n, 1, Duration::from_millis(n * 10 + 1))), Consumed::First);
    }
    assert_eq!(guard.len(), 10, "past its share, the client gave up its oldest");
    assert!(guard.lock().owners[&1].floor > 0);
    let later = Instant::now() + Duration::from_secs(2);
    assert_eq!(guard.consume_at(&numbered(100, 2, MINUTE), later), Consumed::First);
    assert_eq!(guard.len(), 1, "owner 1's expired entries were pruned by owner 2's claim");
    assert!(guard.lock().owners.contains_key(&1), "its floor still refuses states");
    std::thread::sleep(Duration::from_millis(600));
    guard.consume_at(&numbered(101, 2, MINUTE), later);
    assert!(!guard.lock().owners.contains_key(&1), "owner 1's floor has passed: nothing left to remember");
    assert_indexes_agree(&guard);
}

/// The sixth audit's N3: a full guard found the client that gives way by scanning every
/// owner under its lock, for every claim. A claim into a full guard now costs the same
/// with 20,000 owners as with 100; with the scan, 200 times as much.
#[test]
fn a_full_guard_claims_as_fast_with_many_owners_as_with_few() {
    fn claims_into_full_guard(owners: u32) -> Duration {
        let size = usize::try_from(owners).unwrap();
        let guard = MemoryGuard::with_capacity(size).with_share(size);
        for owner in 1..=owners {
            guard.consume_now(&numbered(u64::from(owner), owner, MINUTE));
        }
        let started = Instant::now();
        for n in 0..20_000u32 {
            // A few clients claim on, each state expiring after the last: the heaviest of
            // them gives way each time (and its floor stays below its next state's expiry).
            let keep = MINUTE + Duration::from_millis(n.into());
            let claimed = guard.consume_now(&numbered(u64::from(n) + 1_000_000, n % 7 + 1, keep));
            assert_eq!(claimed, Consumed::First);
        }
        assert_eq!(guard.len(), size);
        started.elapsed()
    }
    // The fastest of three runs each: the machine may be busy with other work.
    let fastest = |owners| (0..3).map(|_| claims_into_full_guard(owners)).min().unwrap();
    let (few, many) = (fastest(100), fastest(20_000));
    eprintln!("20,000 claims into a full guard: {few:?} with 100 owners, {many:?} with 20,000");
    assert!(many < few * 10, "20,000 claims into a full guard: {many:?} with 20,000 owners, {few:?} with 100");
}
