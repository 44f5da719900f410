//! The token format: sealing and opening `v3.<key id>.<base64url(nonce || ciphertext || tag)>`,
//! and the digest of the [`Binding`] that goes into the associated data.

use std::time::{Duration, SystemTime, UNIX_EPOCH};

use aes_gcm_siv::aead::AeadInPlace;
use aes_gcm_siv::{Nonce, Tag};
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use base64::Engine as _;
use serde_json::Value;
use sha2::{Digest, Sha256};

use super::keys::{KeyRing, MAX_ID_LEN};
use super::{v2, Binding, BindingDigest, OpenError, Reason, SealError};

/// The format version, first in every token and in the associated data. `v3`:
/// AES-256-GCM-SIV (`v2` was XChaCha20-Poly1305, and still opens: see [`v2`]).
const VERSION: &str = "v3";
/// AES-GCM-SIV nonce length.
const NONCE_LEN: usize = 12;
/// Authentication tag length (both formats).
const TAG_LEN: usize = 16;
/// The expiry that starts every plaintext: unix milliseconds, big-endian.
const EXPIRY_LEN: usize = 8;
/// Separates the digest's fields from any other use of SHA-256 on similar bytes.
const BINDING_DOMAIN: &[u8] = b"mcp-mrtr request-state binding v2";

/// Seals `payload` for `binding` with the ring's current key, valid until `now + ttl`.
pub(super) fn seal(
    keys: &KeyRing,
    binding: &BindingDigest,
    payload: &[u8],
    expires: SystemTime,
    max_bytes: usize,
) -> Result<String, SealError> {
    let key = keys.current();
    let token_len = sealed_len(key.id(), payload.len());
    if token_len > max_bytes {
        return Err(SealError::TooLarge { token_len, max_bytes });
    }
    // nonce || expiry || payload, encrypted in place after the nonce, then the tag: one
    // buffer, written once into the token.
    let mut body = Vec::with_capacity(NONCE_LEN + EXPIRY_LEN + payload.len() + TAG_LEN);
    body.extend_from_slice(&fresh_nonce()?);
    body.extend_from_slice(&unix_millis(expires).to_be_bytes());
    body.extend_from_slice(payload);
    let (nonce, plaintext) = body.split_at_mut(NONCE_LEN);
    let tag = key
        .request_state_cipher()
        .encrypt_in_place_detached(
            Nonce::from_slice(nonce),
            &AssociatedData::new(VERSION, key.id(), binding),
            plaintext,
        )
        .map_err(|_| SealError::TooLarge { token_len, max_bytes })?;
    body.extend_from_slice(&tag);
    let mut token = String::with_capacity(token_len);
    for part in [VERSION, ".", key.id(), "."] {
        token.push_str(part);
    }
    URL_SAFE_NO_PAD.encode_string(&body, &mut token);
    Ok(token)
}

/// The formats [`open`] accepts.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Versions {
    /// `v3` only.
    Current,
    /// `v3`, and `v2` from the previous release (see
    /// [`StateConfig::accept_v2_states`](super::StateConfig::accept_v2_states)).
    CurrentAndV2,
}

/// Opens a token sealed by [`seal`] (or, before an upgrade, by `v2` when `versions`
/// allows) for the same binding, if it has not expired by `now`: its payload, and when
/// it expires.
pub(super) fn open(
    keys: &KeyRing,
    token: &str,
    binding: &BindingDigest,
    now: SystemTime,
    max_bytes: usize,
    versions: Versions,
) -> Result<(Vec<u8>, SystemTime), OpenError> {
    if token.len() > max_bytes {
        return Err(Reason::Oversized.into());
    }
    let (version, rest) = token.split_once('.').ok_or(Reason::Malformed)?;
    // States of the previous release still open (see `v2`).
    let legacy = match version {
        VERSION => false,
        v2::VERSION if versions == Versions::CurrentAndV2 => true,
        _ => return Err(Reason::UnknownVersion.into()),
    };
    let nonce_len = if legacy { v2::NONCE_LEN } else { NONCE_LEN };
    let (id, encoded) = rest.split_once('.').ok_or(Reason::Malformed)?;
    let key = keys.get(id).ok_or(Reason::UnknownKey)?;
    let mut body = URL_SAFE_NO_PAD.decode(encoded).map_err(|_| Reason::Malformed)?;
    if body.len() < nonce_len + EXPIRY_LEN + TAG_LEN {
        return Err(Reason::Malformed.into());
    }
    let aad = AssociatedData::new(version, key.id(), binding);
    let (nonce, sealed) = body.split_at_mut(nonce_len);
    let (plaintext, tag) = sealed.split_at_mut(sealed.len() - TAG_LEN);
    let opened = if legacy {
        v2::decrypt(key, nonce, &aad, plaintext, tag)
    } else {
        let cipher = key.request_state_cipher();
        cipher.decrypt_in_place_detached(Nonce::from_slice(nonce), &aad, plaintext, Tag::from_slice(tag)).map_err(drop)
    };
    opened.map_err(|()| Reason::Unauthentic)?;
    let expiry = read_expiry(plaintext).ok_or(Reason::Malformed)?;
    if unix_millis(now) >= expiry {
        return Err(Reason::Expired.into());
    }
    body.truncate(body.len() - TAG_LEN);
    body.drain(..nonce_len + EXPIRY_LEN);
    Ok((body, UNIX_EPOCH + Duration::from_millis(expiry.min(LATEST_EXPIRY_MS))))
}

/// A random nonce, never used before in this process (see [`crate::base::random`]).
fn fresh_nonce() -> Result<[u8; NONCE_LEN], SealError> {
    crate::base::random::bytes().map_err(|_| SealError::Random)
}

/// The length of the token that sealing `payload_len` bytes with key `id` produces.
/// Saturates rather than overflowing, so absurd payloads compare as too large.
pub(super) fn sealed_len(id: &str, payload_len: usize) -> usize {
    let body = payload_len.saturating_add(NONCE_LEN + EXPIRY_LEN + TAG_LEN);
    // base64 without padding: 4 characters per 3 bytes, rounded up.
    let encoded = body / 3 * 4 + [0, 2, 3][body % 3];
    encoded.saturating_add(VERSION.len() + id.len() + 2)
}

/// The latest expiry sealed: the end of year 9999, which every platform's `SystemTime`
/// can hold. A longer TTL means "never" in practice.
const LATEST_EXPIRY_MS: u64 = 253_402_300_799_999;

/// `time` as unix milliseconds, saturating: times before 1970 count as 0, times past
/// [`LATEST_EXPIRY_MS`] as that.
pub(super) fn unix_millis(time: SystemTime) -> u64 {
    let millis = time.duration_since(UNIX_EPOCH).map_or(0, |since| since.as_millis());
    u64::try_from(millis).unwrap_or(u64::MAX).min(LATEST_EXPIRY_MS)
}

/// `now + ttl`, saturating at [`LATEST_EXPIRY_MS`] rather than panicking.
pub(super) fn expiry(now: SystemTime, ttl: Duration) -> SystemTime {
    let latest = UNIX_EPOCH + Duration::from_millis(LATEST_EXPIRY_MS);
    now.checked_add(ttl).map_or(latest, |at| at.min(latest))
}

fn read_expiry(plaintext: &[u8]) -> Option<u64> {
    let bytes: [u8; EXPIRY_LEN] = plaintext.get(..EXPIRY_LEN)?.try_into().ok()?;
    Some(u64::from_be_bytes(bytes))
}

/// `version + "." + key id + "." + SHA-256(binding)`: authenticated, never sent. On the
/// stack: a key id is at most [`MAX_ID_LEN`] bytes.
struct AssociatedData {
    bytes: [u8; 2 + 1 + MAX_ID_LEN + 1 + 32],
    len: usize,
}

impl AssociatedData {
    fn new(version: &str, id: &str, binding: &BindingDigest) -> Self {
        let mut bytes = [0; 2 + 1 + MAX_ID_LEN + 1 + 32];
        let mut len = 0;
        for part in [version.as_bytes(), b".", id.as_bytes(), b".", &binding.0] {
            bytes[len..len + part.len()].copy_from_slice(part);
            len += part.len();
        }
        Self { bytes, len }
    }
}

impl std::ops::Deref for AssociatedData {
    type Target = [u8];

    fn deref(&self) -> &[u8] {
        &self.bytes[..self.len]
    }
}

/// SHA-256 over the domain tag, then server, method, target, canonical arguments and
/// principal, each prefixed with its length as a big-endian u64 (the principal also with
/// a presence byte, so `None` and `Some("")` differ).
pub(super) fn binding_digest(binding: &Binding<'_>) -> [u8; 32] {
    let mut arguments = Vec::with_capacity(128);
    match binding.arguments {
        Some(map) => write_canonical_object(map, &mut arguments),
        None => arguments.extend_from_slice(b"null"),
    }
    let mut hasher = Sha256::new();
    hasher.update(BINDING_DOMAIN);
    for field in [binding.server.as_bytes(), binding.method.as_bytes(), binding.target.as_bytes(), &arguments] {
        update_prefixed(&mut hasher, field);
    }
    match binding.principal {
        None => hasher.update([0]),
        Some(principal) => {
            hasher.update([1]);
            update_prefixed(&mut hasher, principal.as_bytes());
        }
    }
    hasher.finalize().into()
}

fn update_prefixed(hasher: &mut Sha256, field: &[u8]) {
    hasher.update((field.len() as u64).to_be_bytes());
    hasher.update(field);
}

/// Writes `value` as compact JSON with object keys sorted, whatever map type serde_json
/// was built with (`preserve_order` keeps insertion order, which a client may not keep
/// between rounds).
pub(super) fn write_canonical(value: &Value, out: &mut Vec<u8>) {
    match value {
        Value::Array(items) => {
            out.push(b'[');
            for (index, item) in items.iter().enumerate() {
                if index > 0 {
                    out.push(b',');
                }
                write_canonical(item, out);
            }
            out.push(b']');
        }
        Value::Object(map) => write_canonical_object(map, out),
        scalar => write_scalar(scalar, out),
    }
}

fn write_canonical_object(map: &serde_json::Map<String, Value>, out: &mut Vec<u8>) {
    let mut entries: Vec<_> = map.iter().collect();
    entries.sort_unstable_by(|a, b| a.0.cmp(b.0));
    out.push(b'{');
    for (index, (key, item)) in entries.into_iter().enumerate() {
        if index > 0 {
            out.push(b',');
        }
        write_scalar(key, out);
        out.push(b':');
        write_canonical(item, out);
    }
    out.push(b'}');
}

/// Null, booleans, numbers and strings (and object keys): serde_json's own compact form.
fn write_scalar<T: serde::Serialize + ?Sized>(value: &T, out: &mut Vec<u8>) {
    // Scalars and strings always serialize, and a Vec never fails to write.
    serde_json::to_writer(out, value).expect("a JSON scalar serializes into a Vec");
}
