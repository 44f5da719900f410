//! Behaviour of sealing and opening: round trips, every rejection, and the key specs.

use std::time::{Duration, SystemTime, UNIX_EPOCH};

use base64::engine::general_purpose::{STANDARD, URL_SAFE, URL_SAFE_NO_PAD};
use base64::Engine as _;
use serde_json::{json, Value};

use super::keys::KeyError;
use super::{Binding, BindingDigest, KeyRing, OpenError, Reason, SealError, Sealer, StateConfig, StateKey, REJECTED};
use crate::base::error::ErrorCode;

const SECRET_A: [u8; 32] = *b"test-secret-a-0123456789abcdefgh";
const SECRET_B: [u8; 32] = *b"test-secret-b-0123456789abcdefgh";

fn now() -> SystemTime {
    UNIX_EPOCH + Duration::from_secs(1_800_000_000)
}

fn config(id: &str, secret: [u8; 32]) -> Sealer {
    sealer(&StateConfig::new(KeyRing::new(StateKey::new(id, secret))))
}

fn sealer(config: &StateConfig) -> Sealer {
    config.sealer().expect("the keys are given")
}

/// The settings a test changes on a sealer it holds already.
impl Sealer {
    fn ttl(mut self, ttl: Duration) -> Self {
        self.ttl = ttl;
        self
    }

    fn max_bytes(mut self, max: usize) -> Self {
        self.max_bytes = max;
        self
    }
}

fn binding(target: &str, arguments: &Value) -> BindingDigest {
    Binding { server: "s", method: "tools/call", target, arguments: arguments.as_object(), principal: None }.digest()
}

fn reason(result: Result<(Vec<u8>, SystemTime), OpenError>) -> Reason {
    result.expect_err("the state must not open").reason()
}

/// The payload of a state that must open.
fn payload(result: Result<(Vec<u8>, SystemTime), OpenError>) -> Vec<u8> {
    result.expect("the state must open").0
}

#[test]
fn round_trip_returns_the_payload() {
    let config = config("k1", SECRET_A);
    let args = json!({ "city": "Lyon" });
    let token = config.seal(&binding("weather", &args), b"answers so far", now()).unwrap();
    assert!(token.starts_with("v3.k1."), "{token}");
    assert_eq!(payload(config.open(&token, &binding("weather", &args), now())), b"answers so far");
}

#[test]
fn empty_payload_round_trips() {
    let config = config("k1", SECRET_A);
    let args = json!({});
    let token = config.seal(&binding("t", &args), b"", now()).unwrap();
    assert_eq!(payload(config.open(&token, &binding("t", &args), now())), b"");
}

/// Nonces come from a per-thread pool refilled from the OS: across several refills, every
/// seal still gets a nonce of its own.
#[test]
fn every_seal_gets_its_own_nonce() {
    let config = config("k1", SECRET_A);
    let args = json!({});
    let nonces: std::collections::HashSet<Vec<u8>> = (0..300)
        .map(|_| body_bytes(&config.seal(&binding("t", &args), b"same", now()).unwrap())[..12].to_vec())
        .collect();
    assert_eq!(nonces.len(), 300);
}

#[test]
fn two_seals_of_the_same_payload_differ() {
    let config = config("k1", SECRET_A);
    let args = json!({});
    let first = config.seal(&binding("t", &args), b"same", now()).unwrap();
    let second = config.seal(&binding("t", &args), b"same", now()).unwrap();
    assert_ne!(first, second, "nonces must be fresh");
}

#[test]
fn flipping_any_byte_fails() {
    let config = config("k1", SECRET_A);
    let args = json!({ "x": 1 });
    let token = config.seal(&binding("t", &args), b"hi", now()).unwrap();
    for position in 0..token.len() {
        let original = token.as_bytes()[position];
        for replacement in [original ^ 1, b'A', b'z', b'.', b'_', b'0'] {
            if replacement == original {
                continue;
            }
            let mut bytes = token.clone().into_bytes();
            bytes[position] = replacement;
            let mutated = String::from_utf8(bytes).unwrap();
            assert!(config.open(&mutated, &binding("t", &args), now()).is_err(), "opened with byte {position} changed");
        }
    }
}

#[test]
fn truncating_at_every_length_fails() {
    let config = config("k1", SECRET_A);
    let args = json!({ "x": 1 });
    let token = config.seal(&binding("t", &args), b"hi", now()).unwrap();
    for length in 0..token.len() {
        assert!(config.open(&token[..length], &binding("t", &args), now()).is_err(), "opened at length {length}");
    }
}

#[test]
fn a_state_opens_only_for_its_own_binding() {
    let config = config("k1", SECRET_A);
    let x = json!({ "city": "Lyon", "days": 3 });
    let y = json!({ "city": "Lyon", "days": 4 });
    let (x, y) = (x.as_object(), y.as_object());
    let sealed_for =
        Binding { server: "public", method: "tools/call", target: "a", arguments: x, principal: Some("alice") };
    let token = config.seal(&sealed_for.digest(), b"payload", now()).unwrap();
    let others = [
        Binding { target: "b", ..sealed_for },
        Binding { arguments: y, ..sealed_for },
        Binding { arguments: None, ..sealed_for },
        Binding { principal: Some("bob"), ..sealed_for },
        Binding { principal: None, ..sealed_for },
        Binding { principal: Some(""), ..sealed_for },
        Binding { method: "prompts/get", ..sealed_for },
        Binding { server: "admin", ..sealed_for },
        // Shifting bytes between fields must not produce the same digest.
        Binding { method: "tools/cal", target: "la", ..sealed_for },
        Binding { server: "publi", method: "ctools/call", ..sealed_for },
    ];
    for other in &others {
        assert_eq!(reason(config.open(&token, &other.digest(), now())), Reason::Unauthentic);
    }
    assert!(config.open(&token, &sealed_for.digest(), now()).is_ok());
}

#[test]
fn argument_key_order_does_not_matter() {
    let config = config("k1", SECRET_A);
    let mut forward = serde_json::Map::new();
    forward.insert("a".into(), json!(1));
    forward.insert("b".into(), json!({ "y": [1, 2], "x": null }));
    let mut backward = serde_json::Map::new();
    backward.insert("b".into(), json!({ "x": null, "y": [1, 2] }));
    backward.insert("a".into(), json!(1));
    let (forward, backward) = (Value::Object(forward), Value::Object(backward));
    let token = config.seal(&binding("t", &forward), b"p", now()).unwrap();
    assert!(config.open(&token, &binding("t", &backward), now()).is_ok());
}

#[test]
fn canonical_json_sorts_keys_and_escapes_strings() {
    let mut out = Vec::new();
    super::seal::write_canonical(&json!({ "b": "q\"", "a": [true, null, 1.5] }), &mut out);
    assert_eq!(String::from_utf8(out).unwrap(), r#"{"a":[true,null,1.5],"b":"q\""}"#);
}

#[test]
fn expired_state_fails_after_its_ttl() {
    let config = config("k1", SECRET_A).ttl(Duration::from_secs(60));
    let args = json!({});
    let token = config.seal(&binding("t", &args), b"p", now()).unwrap();
    let just_before = now() + Duration::from_secs(59);
    assert!(config.open(&token, &binding("t", &args), just_before).is_ok());
    let at_expiry = now() + Duration::from_secs(60);
    assert_eq!(reason(config.open(&token, &binding("t", &args), at_expiry)), Reason::Expired);
}

#[test]
fn expiry_counts_milliseconds_not_whole_seconds() {
    // Sealed half-way through a second: a whole-second clock would cut the life short.
    let sealed_at = now() + Duration::from_millis(700);
    let config = config("k1", SECRET_A).ttl(Duration::from_millis(500));
    let args = json!({});
    let token = config.seal(&binding("t", &args), b"p", sealed_at).unwrap();
    let (_, expires) = config.open(&token, &binding("t", &args), sealed_at).expect("a fresh state opens");
    assert_eq!(expires, sealed_at + Duration::from_millis(500));
    assert!(config.open(&token, &binding("t", &args), sealed_at + Duration::from_millis(499)).is_ok());
    let at_expiry = sealed_at + Duration::from_millis(500);
    assert_eq!(reason(config.open(&token, &binding("t", &args), at_expiry)), Reason::Expired);
}

#[test]
fn an_endless_ttl_saturates_instead_of_panicking() {
    let config = config("k1", SECRET_A).ttl(Duration::MAX);
    let args = json!({});
    let token = config.seal(&binding("t", &args), b"p", now()).unwrap();
    let far = now() + Duration::from_secs(5_000 * 365 * 24 * 3600);
    assert_eq!(payload(config.open(&token, &binding("t", &args), far)), b"p");
}

#[test]
fn wrong_key_fails() {
    let args = json!({});
    let token = config("k1", SECRET_A).seal(&binding("t", &args), b"p", now()).unwrap();
    let same_id_other_secret = config("k1", SECRET_B);
    assert_eq!(reason(same_id_other_secret.open(&token, &binding("t", &args), now())), Reason::Unauthentic);
    let other_id = config("k2", SECRET_A);
    assert_eq!(reason(other_id.open(&token, &binding("t", &args), now())), Reason::UnknownKey);
}

#[test]
fn rotated_key_still_opens_old_states_and_new_states_use_the_new_key() {
    let args = json!({});
    let old = config("old", SECRET_A);
    let old_token = old.seal(&binding("t", &args), b"before", now()).unwrap();
    let ring = KeyRing::new(StateKey::new("new", SECRET_B)).with_previous(StateKey::new("old", SECRET_A));
    let rotated = sealer(&StateConfig::new(ring));
    assert_eq!(payload(rotated.open(&old_token, &binding("t", &args), now())), b"before");
    let new_token = rotated.seal(&binding("t", &args), b"after", now()).unwrap();
    assert!(new_token.starts_with("v3.new."), "{new_token}");
    assert_eq!(reason(old.open(&new_token, &binding("t", &args), now())), Reason::UnknownKey);
}

#[test]
fn oversized_token_is_rejected_before_decoding() {
    let config = config("k1", SECRET_A).max_bytes(100);
    let args = json!({});
    // Not even a token: only the cap can have rejected it.
    let huge = "#".repeat(101);
    assert_eq!(reason(config.open(&huge, &binding("t", &args), now())), Reason::Oversized);
    let valid = config.clone().max_bytes(1024).seal(&binding("t", &args), &[0; 80], now()).unwrap();
    assert!(valid.len() > 100);
    assert_eq!(reason(config.open(&valid, &binding("t", &args), now())), Reason::Oversized);
}

#[test]
fn sealing_past_the_cap_is_a_seal_error() {
    let config = config("k1", SECRET_A).max_bytes(200);
    let args = json!({});
    let error = config.seal(&binding("t", &args), &[1; 200], now()).unwrap_err();
    assert!(matches!(error, SealError::TooLarge { max_bytes: 200, .. }), "{error:?}");
    assert!(error.to_string().contains("200-byte cap"), "the log says why: {error}");
    let client = error.to_error();
    assert_eq!(client.code(), ErrorCode::INTERNAL_ERROR);
    for detail in ["200", "byte", "max_bytes", "StateConfig"] {
        assert!(!client.message().contains(detail), "the client learns the configuration: {}", client.message());
    }
}

#[test]
fn a_token_at_the_cap_reaches_the_tag_check_and_one_byte_more_does_not() {
    let config = config("k1", SECRET_A);
    let args = json!({});
    let token = config.seal(&binding("t", &args), b"p", now()).unwrap();
    let at_cap = config.clone().max_bytes(token.len());
    assert!(at_cap.open(&token, &binding("t", &args), now()).is_ok());
    // One more byte of padding: the cap rejects it before anything is decoded.
    let longer = format!("{token}A");
    let roomier = at_cap.clone().max_bytes(longer.len());
    assert_ne!(reason(roomier.open(&longer, &binding("t", &args), now())), Reason::Oversized);
    assert_eq!(reason(at_cap.open(&longer, &binding("t", &args), now())), Reason::Oversized);
}

#[test]
fn predicted_length_matches_every_sealed_length() {
    let args = json!({});
    for payload_len in 0..70 {
        let config = config("key-7", SECRET_A);
        let token = config.seal(&binding("t", &args), &vec![0; payload_len], now()).unwrap();
        assert_eq!(super::seal::sealed_len("key-7", payload_len), token.len());
        // A cap of exactly the token's length still seals; one less does not.
        let exact = config.clone().max_bytes(token.len());
        assert!(exact.seal(&binding("t", &args), &vec![0; payload_len], now()).is_ok());
        let short = config.max_bytes(token.len() - 1);
        assert!(short.seal(&binding("t", &args), &vec![0; payload_len], now()).is_err());
    }
}

/// The raw bytes a token carries after its `v3.<id>.` prefix.
fn body_bytes(token: &str) -> Vec<u8> {
    let encoded = token.splitn(3, '.').nth(2).expect("a token has three parts");
    URL_SAFE_NO_PAD.decode(encoded).expect("the body is base64url")
}

#[test]
fn payload_never_appears_in_clear() {
    let config = config("k1", SECRET_A);
    let args = json!({});
    let payload = br#"{"secret":"hunter2-hunter2"}"#;
    let token = config.seal(&binding("t", &args), payload, now()).unwrap();
    let body = body_bytes(&token);
    // The body is the nonce, the ciphertext (expiry and payload) and the tag: exactly
    // as long as a plaintext would be, so only encryption can hide the payload.
    assert_eq!(body.len(), 12 + 8 + payload.len() + 16);
    for needle in [&payload[..], b"hunter2", b"secret"] {
        assert!(
            !body.windows(needle.len()).any(|w| w == needle),
            "the body shows {:?}",
            String::from_utf8_lossy(needle)
        );
    }
    assert!(!token.contains("hunter2"));
}

#[test]
fn the_check_for_a_payload_in_clear_would_catch_a_missing_cipher() {
    // The same layout with an identity "cipher": the check above must fail on it.
    let payload = br#"{"secret":"hunter2-hunter2"}"#;
    let mut body = vec![0u8; 12 + 8];
    body.extend_from_slice(payload);
    body.extend_from_slice(&[0; 16]);
    let fake = format!("v3.k1.{}", URL_SAFE_NO_PAD.encode(&body));
    let decoded = body_bytes(&fake);
    assert!(decoded.windows(7).any(|w| w == b"hunter2"));
}

/// A state sealed by the previous release (`v2`, XChaCha20-Poly1305) still opens, with its
/// binding and expiry checked as a `v3` state's are.
#[test]
fn v2_states_still_open_with_the_same_checks() {
    let config = config("k1", SECRET_A);
    let ring = KeyRing::new(StateKey::new("k1", SECRET_A));
    let args = json!({ "city": "Lyon" });
    let expires = super::seal::unix_millis(now()) + 60_000;
    let token = super::v2::seal(ring.current(), &binding("t", &args), b"earlier", expires);
    assert!(token.starts_with("v2.k1."), "{token}");
    let (opened, expiry) = config.open(&token, &binding("t", &args), now()).expect("a v2 state opens");
    assert_eq!(opened, b"earlier");
    assert_eq!(expiry, UNIX_EPOCH + Duration::from_millis(expires));
    assert_eq!(reason(config.open(&token, &binding("other", &args), now())), Reason::Unauthentic);
    let later = now() + Duration::from_secs(61);
    assert_eq!(reason(config.open(&token, &binding("t", &args), later)), Reason::Expired);
    let mut body = body_bytes(&token);
    body[30] ^= 1;
    let tampered = format!("v2.k1.{}", URL_SAFE_NO_PAD.encode(&body));
    assert_eq!(reason(config.open(&tampered, &binding("t", &args), now())), Reason::Unauthentic);
    // Read as v3, the same body fails.
    assert!(config.open(&token.replacen("v2.", "v3.", 1), &binding("t", &args), now()).is_err());
}

/// Audit B20: with `accept_v2_states(false)`, a good `v2` state is refused as an unknown
/// format, and `v3` states still open.
#[test]
fn v2_states_can_be_refused_once_no_instance_seals_them() {
    let ring = KeyRing::new(StateKey::new("k1", SECRET_A));
    let strict = sealer(&StateConfig::new(ring.clone()).accept_v2_states(false));
    let args = json!({ "city": "Lyon" });
    let expires = super::seal::unix_millis(now()) + 60_000;
    let token = super::v2::seal(ring.current(), &binding("t", &args), b"earlier", expires);
    assert!(sealer(&StateConfig::new(ring)).open(&token, &binding("t", &args), now()).is_ok(), "the default opens it");
    assert_eq!(reason(strict.open(&token, &binding("t", &args), now())), Reason::UnknownVersion);
    let current = strict.seal(&binding("t", &args), b"now", now()).unwrap();
    assert_eq!(strict.open(&current, &binding("t", &args), now()).unwrap().0, b"now");
}

#[test]
fn unknown_version_and_malformed_tokens_fail() {
    let config = config("k1", SECRET_A);
    let args = json!({});
    let token = config.seal(&binding("t", &args), b"p", now()).unwrap();
    let open = |token: &str| reason(config.open(token, &binding("t", &args), now()));
    for version in ["v1.", "v4.", "V3.", ""] {
        assert_eq!(open(&token.replacen("v3.", version, 1)), Reason::UnknownVersion, "{version}");
    }
    // This short v3 body is too short to be a v2 one.
    assert_eq!(open(&token.replacen("v3.", "v2.", 1)), Reason::Malformed);
    assert_eq!(open(""), Reason::Malformed);
    for version in ["v3", "v2"] {
        assert_eq!(open(version), Reason::Malformed);
        assert_eq!(open(&format!("{version}.k1")), Reason::Malformed);
        assert_eq!(open(&format!("{version}.k1.")), Reason::Malformed);
        assert_eq!(open(&format!("{version}.k1.!!!!")), Reason::Malformed);
        assert_eq!(open(&format!("{version}..AAAA")), Reason::UnknownKey);
        assert_eq!(open(&format!("{version}.k1.é€😀")), Reason::Malformed);
    }
    assert_eq!(open(&format!("{token}=")), Reason::Malformed);
}

#[test]
fn every_open_error_maps_to_the_same_client_error() {
    let reasons = [
        Reason::Oversized,
        Reason::Malformed,
        Reason::UnknownVersion,
        Reason::UnknownKey,
        Reason::Unauthentic,
        Reason::Expired,
    ];
    let expected = crate::base::error::Error::invalid_params(REJECTED);
    for reason in reasons {
        let error = OpenError::from(reason);
        assert_eq!(error.to_error(), expected, "{reason:?}");
        assert_eq!(error.reason(), reason);
    }
    assert_eq!(expected.code(), ErrorCode::INVALID_PARAMS);
    assert_eq!(expected.message(), "Invalid requestState: it is tampered, expired, or belongs to another request");
}

#[test]
fn key_specs_parse() {
    let secret = SECRET_B;
    for encoded in [URL_SAFE_NO_PAD.encode(secret), URL_SAFE.encode(secret), STANDARD.encode(secret)] {
        let key = StateKey::parse(&format!("prod-2026_a:{encoded}")).unwrap();
        assert_eq!(key.id(), "prod-2026_a");
        assert_eq!(key.secret(), &secret);
    }
    let good = URL_SAFE_NO_PAD.encode(secret);
    assert_eq!(StateKey::parse(&good).unwrap_err(), KeyError::MissingColon);
    assert_eq!(StateKey::parse(&format!(":{good}")).unwrap_err(), KeyError::BadId);
    assert_eq!(StateKey::parse(&format!("a.b:{good}")).unwrap_err(), KeyError::BadId);
    assert_eq!(StateKey::parse(&format!("{}:{good}", "x".repeat(33))).unwrap_err(), KeyError::BadId);
    assert_eq!(StateKey::parse("k:not base64!").unwrap_err(), KeyError::BadBase64);
    assert_eq!(StateKey::parse(&format!("k:{}", STANDARD.encode([1u8; 31]))).unwrap_err(), KeyError::WrongLength(31));
    assert_eq!(StateKey::parse("k:").unwrap_err(), KeyError::WrongLength(0));
}

#[test]
fn weak_secrets_are_refused() {
    for weak in [[0u8; 32], [7u8; 32], [0xff; 32]] {
        for encoded in [URL_SAFE_NO_PAD.encode(weak), STANDARD.encode(weak)] {
            assert_eq!(StateKey::parse(&format!("k:{encoded}")).unwrap_err(), KeyError::WeakSecret);
        }
        assert!(std::panic::catch_unwind(|| StateKey::new("k", weak)).is_err());
    }
    let message = KeyError::WeakSecret.to_string();
    assert!(message.contains("openssl rand"), "{message}");
}

#[test]
fn the_cipher_key_is_derived_not_the_secret() {
    let key = StateKey::new("k", SECRET_A);
    assert_ne!(key.request_state_v2_key(), &SECRET_A);
    // Each purpose gets its own key, and the derivation is stable.
    let tasks = super::keys::derive(&SECRET_A, b"tasks journal");
    assert_ne!(&*tasks, key.request_state_v2_key());
    assert_eq!(super::keys::derive(&SECRET_A, b"tasks journal"), tasks);
    // The v3 cipher is keyed with neither the secret nor the v2 key: a state sealed with
    // a cipher keyed so does not open.
    let binding = binding("t", &json!({}));
    let token = config("k", SECRET_A).seal(&binding, b"p", now()).unwrap();
    let body = body_bytes(&token);
    let (nonce, sealed) = body.split_at(12);
    let (ciphertext, tag) = sealed.split_at(sealed.len() - 16);
    let mut aad = b"v3.k.".to_vec();
    aad.extend_from_slice(&binding.0);
    let opens_with = |secret: [u8; 32]| {
        use aes_gcm_siv::aead::{AeadInPlace, KeyInit};
        let mut buffer = ciphertext.to_vec();
        aes_gcm_siv::Aes256GcmSiv::new(&secret.into())
            .decrypt_in_place_detached(nonce.into(), &aad, &mut buffer, tag.into())
            .is_ok()
    };
    assert!(opens_with(*super::keys::derive(&SECRET_A, b"request-state aes-256-gcm-siv v3")));
    assert!(!opens_with(SECRET_A));
    assert!(!opens_with(*key.request_state_v2_key()));
}

#[test]
fn key_errors_never_quote_the_secret() {
    let bad = "k:c2VjcmV0LXNlY3JldC1zZWNyZXQ*";
    let message = StateKey::parse(bad).unwrap_err().to_string();
    assert!(!message.contains("c2VjcmV0") && !message.contains('*'), "{message}");
}

#[test]
#[should_panic(expected = "StateKey id")]
fn new_key_with_an_empty_id_panics() {
    let _ = StateKey::new("", SECRET_A);
}

#[test]
fn key_lists_parse() {
    let a = URL_SAFE_NO_PAD.encode(SECRET_A);
    let b = STANDARD.encode(SECRET_B);
    let ring = KeyRing::parse_list(&format!(" new:{a} , old:{b}")).unwrap();
    assert_eq!(ring.current_id(), "new");
    assert_eq!(ring.get("old").unwrap().secret(), &SECRET_B);
    let duplicate = KeyRing::parse_list(&format!("k:{a},k:{b}")).unwrap_err();
    assert_eq!(duplicate, KeyError::Entry { position: 2, error: Box::new(KeyError::DuplicateId) });
    assert!(matches!(KeyRing::parse_list(&format!("k:{a},")).unwrap_err(), KeyError::Entry { position: 2, .. }));
    assert_eq!(KeyRing::parse_list("  ").unwrap_err(), KeyError::EmptyList);
}

#[test]
fn debug_output_hides_secrets() {
    let key = StateKey::new("visible-id", SECRET_A);
    let ring = KeyRing::new(key.clone()).with_previous(StateKey::new("older", SECRET_B));
    let config = StateConfig::new(ring.clone());
    let printed = [format!("{key:?}"), format!("{ring:?}"), format!("{config:?}"), format!("{:?}", sealer(&config))];
    for text in &printed {
        for secret in [SECRET_A, SECRET_B] {
            for engine in [&STANDARD, &URL_SAFE_NO_PAD] {
                assert!(!text.contains(engine.encode(secret).trim_end_matches('=')), "{text}");
            }
            assert!(!text.contains(&format!("{secret:?}")), "{text}");
            assert!(!text.contains(&format!("{:?}", &secret[..4])[1..8]), "{text}");
        }
    }
    assert!(printed[0].contains("visible-id") && printed[1].contains("older"), "{printed:?}");
}

#[test]
fn random_keys_have_the_documented_id_and_differ() {
    let (one, two) = (StateKey::random(), StateKey::random());
    for key in [&one, &two] {
        assert_eq!(key.id().len(), 9);
        assert!(key.id().starts_with('r') && key.id()[1..].bytes().all(|b| b.is_ascii_hexdigit()));
    }
    assert_ne!(one.secret(), two.secret());
}

/// A small deterministic xorshift64 generator for the mutation test.
struct XorShift(u64);

impl XorShift {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }

    fn below(&mut self, bound: usize) -> usize {
        usize::try_from(self.next() % bound as u64).unwrap()
    }
}

/// One random byte change, insertion or deletion; may produce invalid UTF-8.
fn mutate(token: &[u8], rng: &mut XorShift) -> Vec<u8> {
    let mut bytes = token.to_vec();
    let position = rng.below(bytes.len() + 1);
    let byte = rng.next().to_le_bytes()[0];
    match rng.below(3) {
        0 if position < bytes.len() => bytes[position] ^= byte.max(1),
        1 => bytes.insert(position, byte),
        _ if position < bytes.len() => drop(bytes.remove(position)),
        _ => bytes.push(byte),
    }
    bytes
}

#[test]
fn random_mutations_never_open_and_never_panic() {
    let config = config("k1", SECRET_A).max_bytes(4096);
    let args = json!({ "q": "weather" });
    let mut rng = XorShift(0x9e37_79b9_7f4a_7c15);
    let mut seen = std::collections::BTreeSet::new();
    let tokens: Vec<String> = [&b""[..], b"short", &[0xAB; 300]]
        .iter()
        .map(|payload| config.seal(&binding("t", &args), payload, now()).unwrap())
        .collect();
    for round in 0..500 {
        let token = tokens[round % tokens.len()].as_bytes();
        let mut mutated = mutate(token, &mut rng);
        // Sometimes stack a few more mutations on top.
        for _ in 0..rng.below(3) {
            mutated = mutate(&mutated, &mut rng);
        }
        if mutated == token {
            continue;
        }
        let text = String::from_utf8_lossy(&mutated);
        match config.open(&text, &binding("t", &args), now()) {
            Ok(_) => panic!("round {round} opened: {text}"),
            Err(error) => seen.insert(format!("{:?}", error.reason())),
        };
    }
    // The mutations reach the checks past parsing, not just the first one.
    for expected in ["Malformed", "Unauthentic", "UnknownVersion", "UnknownKey"] {
        assert!(seen.contains(expected), "no mutation was {expected}: {seen:?}");
    }
}

#[test]
#[should_panic(expected = "already holds a key")]
fn a_ring_refuses_two_keys_with_one_id() {
    let _ = KeyRing::new(StateKey::new("k", SECRET_A)).with_previous(StateKey::new("k", SECRET_B));
}

#[test]
fn one_value_holds_the_keys_the_lifetime_and_the_guard() {
    let default = StateConfig::default();
    assert!(!default.has_keys(), "the default leaves the keys to the environment, read when serving starts");
    assert!(default.guard().is_some(), "states are single-use by default");
    let reusable = StateConfig::new(KeyRing::new(StateKey::new("k", SECRET_A))).reusable(true);
    assert!(reusable.has_keys() && reusable.guard().is_none());
    assert!(reusable.clone().reusable(false).guard().is_some(), "single use comes back with a memory guard");
    let ttl = Duration::from_secs(7);
    let given = StateConfig::default().ttl(ttl).keys(KeyRing::new(StateKey::new("k", SECRET_A)));
    assert_eq!(sealer(&given).lifetime(), ttl, "the other settings survive giving keys later");
}
