//! Opening `v2` tokens (XChaCha20-Poly1305, 24-byte nonces), the format sealed before
//! `v3`: a state sealed by an instance running the previous release still opens on an
//! upgraded one, so a rolling upgrade does not break calls that are mid-way. It can go
//! once no `v2` state can still be live (one state TTL after the last such instance).

use chacha20poly1305::aead::AeadInPlace;
use chacha20poly1305::{KeyInit, Tag, XChaCha20Poly1305, XNonce};

use super::keys::StateKey;

pub(super) const VERSION: &str = "v2";
/// XChaCha20 nonce length.
pub(super) const NONCE_LEN: usize = 24;

/// Decrypts a `v2` body's ciphertext in place; `Err` when the tag does not verify.
pub(super) fn decrypt(key: &StateKey, nonce: &[u8], aad: &[u8], sealed: &mut [u8], tag: &[u8]) -> Result<(), ()> {
    XChaCha20Poly1305::new(key.request_state_v2_key().into())
        .decrypt_in_place_detached(XNonce::from_slice(nonce), aad, sealed, Tag::from_slice(tag))
        .map_err(drop)
}

/// Seals as the previous release did, so tests can check that its states still open.
#[cfg(test)]
pub(super) fn seal(key: &StateKey, binding: &super::BindingDigest, payload: &[u8], expires_ms: u64) -> String {
    use base64::engine::general_purpose::URL_SAFE_NO_PAD;
    use base64::Engine as _;

    let mut body = vec![0; NONCE_LEN];
    getrandom::fill(&mut body).expect("the system has randomness");
    body.extend_from_slice(&expires_ms.to_be_bytes());
    body.extend_from_slice(payload);
    let mut aad = format!("{VERSION}.{}.", key.id()).into_bytes();
    aad.extend_from_slice(&binding.0);
    let (nonce, plaintext) = body.split_at_mut(NONCE_LEN);
    let tag = XChaCha20Poly1305::new(key.request_state_v2_key().into())
        .encrypt_in_place_detached(XNonce::from_slice(nonce), &aad, plaintext)
        .expect("a small payload seals");
    body.extend_from_slice(&tag);
    format!("{VERSION}.{}.{}", key.id(), URL_SAFE_NO_PAD.encode(body))
}
