//! Sealing keys: [`StateKey`] (an id and a 256-bit secret) and [`KeyRing`] (the key that
//! seals plus older keys that still open, for rotation), read from code or from
//! `MCP_MRTR_STATE_KEYS`.
//!
//! The configured secret is never used as a cipher key itself: each use derives its own
//! key with HKDF-SHA256 (see [`StateKey::derive`]), so the same secret can later key other
//! things (a tasks journal) without two uses ever sharing a key. Secrets are wiped from
//! memory when dropped, and weak ones (every byte the same, all zeros included) are
//! refused.

use std::fmt;
use std::sync::Arc;

use aes_gcm_siv::{Aes256GcmSiv, KeyInit};
use base64::alphabet;
use base64::engine::general_purpose::{GeneralPurpose, GeneralPurposeConfig};
use base64::engine::DecodePaddingMode;
use base64::Engine as _;
use hkdf::Hkdf;
use sha2::Sha256;
use zeroize::Zeroizing;

use crate::bounds::fair::OwnerMac;

/// The environment variable [`KeyRing::from_env`] reads.
pub(crate) const KEYS_ENV: &str = "MCP_MRTR_STATE_KEYS";

/// Longest key id accepted.
pub(crate) const MAX_ID_LEN: usize = 32;

/// Key secrets may be written with or without `=` padding.
const LENIENT: GeneralPurposeConfig =
    GeneralPurposeConfig::new().with_decode_padding_mode(DecodePaddingMode::Indifferent);
const URL_SAFE_LENIENT: GeneralPurpose = GeneralPurpose::new(&alphabet::URL_SAFE, LENIENT);
const STANDARD_LENIENT: GeneralPurpose = GeneralPurpose::new(&alphabet::STANDARD, LENIENT);

/// The HKDF salt: separates this crate's derivations from any other use of the secret.
const KDF_SALT: &[u8] = b"mcp-mrtr key derivation v1";
/// The HKDF info of the request-state cipher key (`v3` tokens).
const REQUEST_STATE_PURPOSE: &[u8] = b"request-state aes-256-gcm-siv v3";
/// The HKDF info of the key that opens `v2` tokens.
const REQUEST_STATE_V2_PURPOSE: &[u8] = b"request-state xchacha20poly1305 v2";
/// The HKDF info of the key that names a client in the single-use guard (`ClientId::owner_key`).
const GUARD_OWNER_PURPOSE: &[u8] = b"single-use guard owner hmac-sha256 v1";

/// A 256-bit secret with an id (the id travels in the token in clear, to pick the key).
///
/// `Debug` shows the id only, never the secret; the secret and the keys derived from it
/// are zeroed when dropped.
///
/// ```
/// use mcp_mrtr::{request_state::KeyError, request_state::StateKey};
///
/// // An example secret: make yours with `openssl rand -base64 32`, keep it in a secret store.
/// let key = StateKey::parse("k1:o5WMhaOlbyC4Nt5itdSSUxDZt4b7QPFI4Z65QlesZMw=").unwrap();
/// assert_eq!(key.id(), "k1");
/// assert_eq!(format!("{key:?}"), r#"StateKey { id: "k1", .. }"#);
/// // A placeholder is refused, and the error never quotes the secret.
/// let zeros = "k1:AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA=";
/// assert_eq!(StateKey::parse(zeros).unwrap_err(), KeyError::WeakSecret);
/// ```
#[derive(Clone)]
pub struct StateKey {
    id: String,
    secret: Zeroizing<[u8; 32]>,
    /// The request-state cipher, its key derived and expanded once: every seal and open
    /// needs it. Its round keys are wiped when dropped (the `aes` crate's `zeroize`).
    request_state: Aes256GcmSiv,
    /// The key that opens `v2` tokens, sealed before the upgrade to `v3`.
    request_state_v2: Zeroizing<[u8; 32]>,
    /// What makes the owner numbers the single-use guard counts clients by: its key
    /// derived and taken in once, as every call whose state is sealed needs it.
    guard_owner: OwnerMac,
}

impl StateKey {
    /// A key with this id and secret. Generate the secret (32 random bytes, e.g.
    /// `openssl rand -base64 32`), never write one into source code; prefer
    /// [`StateKey::parse`] on a value from your secret store.
    ///
    /// # Panics
    ///
    /// If `id` is not 1 to 32 characters of `A-Z a-z 0-9 _ -`, or the secret is weak
    /// (every byte the same, such as all zeros).
    pub fn new(id: impl Into<String>, secret: [u8; 32]) -> Self {
        let id = id.into();
        assert!(valid_id(&id), "StateKey id must be 1 to {MAX_ID_LEN} characters of A-Z a-z 0-9 _ -");
        assert!(!is_weak(&secret), "{}", KeyError::WeakSecret);
        Self::from_parts(id, Zeroizing::new(secret))
    }

    fn from_parts(id: String, secret: Zeroizing<[u8; 32]>) -> Self {
        let request_state = Aes256GcmSiv::new((&*derive(&secret, REQUEST_STATE_PURPOSE)).into());
        let request_state_v2 = derive(&secret, REQUEST_STATE_V2_PURPOSE);
        let guard_owner = OwnerMac::new(&derive(&secret, GUARD_OWNER_PURPOSE));
        Self { id, secret, request_state, request_state_v2, guard_owner }
    }

    /// A fresh random key with an id of the form `r` + 8 hex digits.
    ///
    /// # Panics
    ///
    /// If the operating system's random number generator fails.
    pub fn random() -> Self {
        let mut tag = [0u8; 4];
        let mut secret = Zeroizing::new([0u8; 32]);
        fill_random(&mut tag);
        fill_random(secret.as_mut());
        Self::from_parts(format!("r{:08x}", u32::from_be_bytes(tag)), secret)
    }

    /// Parses `ID:SECRET`, where SECRET is 32 bytes in base64 (URL-safe or standard
    /// alphabet, padding optional). The error says what is wrong without quoting the input.
    pub fn parse(spec: &str) -> Result<Self, KeyError> {
        let (id, encoded) = spec.trim().split_once(':').ok_or(KeyError::MissingColon)?;
        if !valid_id(id) {
            return Err(KeyError::BadId);
        }
        let secret = decode_secret(encoded.trim())?;
        if is_weak(&secret) {
            return Err(KeyError::WeakSecret);
        }
        Ok(Self::from_parts(id.to_owned(), secret))
    }

    /// The key id, which appears in clear in every token this key seals.
    pub fn id(&self) -> &str {
        &self.id
    }

    #[cfg(test)]
    pub(crate) fn secret(&self) -> &[u8; 32] {
        &self.secret
    }

    /// A key of this secret's own for `purpose` (see [`derive`]).
    pub(crate) fn derive(&self, purpose: &[u8]) -> Zeroizing<[u8; 32]> {
        derive(&self.secret, purpose)
    }

    /// The cipher of request states.
    pub(crate) fn request_state_cipher(&self) -> &Aes256GcmSiv {
        &self.request_state
    }

    /// The key of `v2` request states, which still open.
    pub(crate) fn request_state_v2_key(&self) -> &[u8; 32] {
        &self.request_state_v2
    }

    /// The key of the single-use guard's owner numbers: the same on every instance given
    /// this secret, so one client counts once in a guard they share.
    pub(crate) fn guard_owner_key(&self) -> &OwnerMac {
        &self.guard_owner
    }
}

/// A key of its own for `purpose`, derived from the secret with HKDF-SHA256: keys for
/// different purposes are independent, whatever the secret.
pub(crate) fn derive(secret: &[u8; 32], purpose: &[u8]) -> Zeroizing<[u8; 32]> {
    let mut key = Zeroizing::new([0u8; 32]);
    // 32 bytes is far below HKDF-SHA256's 8160-byte limit, so expand cannot fail.
    Hkdf::<Sha256>::new(Some(KDF_SALT), secret)
        .expand(purpose, key.as_mut())
        .expect("32 bytes is a valid HKDF-SHA256 output length");
    key
}

/// A secret whose bytes are all the same (all zeros, say) is a placeholder, not a key.
fn is_weak(secret: &[u8; 32]) -> bool {
    secret.iter().all(|b| *b == secret[0])
}

impl fmt::Debug for StateKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("StateKey").field("id", &self.id).finish_non_exhaustive()
    }
}

/// Keys that open states; the first seals.
///
/// `Debug` shows the key ids only.
///
/// Rotating a key: the new one seals, the old one still opens what it sealed until
/// those states expire (one [`StateConfig::ttl`](crate::request_state::StateConfig::ttl)), then goes.
///
/// ```
/// use mcp_mrtr::{request_state::KeyRing, request_state::StateKey};
///
/// // Example secrets; in production `KeyRing::from_env()` reads the same ring from
/// // MCP_MRTR_STATE_KEYS="k2:…,k1:…", the first sealing.
/// let k2 = StateKey::parse("k2:3C9Y+6zc2D1N7VKQzH/9YZsQeq/LAMl+grVaCyX4wiI=").unwrap();
/// let k1 = StateKey::parse("k1:o5WMhaOlbyC4Nt5itdSSUxDZt4b7QPFI4Z65QlesZMw=").unwrap();
/// let ring = KeyRing::new(k2).with_previous(k1);
/// assert_eq!(ring.current_id(), "k2");
/// assert_eq!(format!("{ring:?}"), r#"KeyRing { seals: "k2", opens: ["k2", "k1"] }"#);
/// ```
#[derive(Clone)]
pub struct KeyRing {
    /// Never empty; `keys[0]` seals. Shared so that cloning a config is cheap.
    keys: Arc<[StateKey]>,
}

impl KeyRing {
    /// A ring whose only key, `current`, seals and opens.
    pub fn new(current: StateKey) -> Self {
        Self { keys: Arc::from(vec![current]) }
    }

    /// Adds a key that still opens states but never seals: keep the old key here for a
    /// TTL after rotating to a new current key.
    ///
    /// # Panics
    ///
    /// If the ring already holds a key with the same id.
    pub fn with_previous(self, key: StateKey) -> Self {
        assert!(self.get(key.id()).is_none(), "KeyRing already holds a key with id {:?}", key.id());
        let mut keys = self.keys.to_vec();
        keys.push(key);
        Self { keys: Arc::from(keys) }
    }

    /// Reads `MCP_MRTR_STATE_KEYS`: comma-separated `id:base64` entries, the first seals.
    /// `Ok(None)` when the variable is unset.
    pub fn from_env() -> Result<Option<Self>, KeyError> {
        match std::env::var(KEYS_ENV) {
            Ok(list) => Self::parse_list(&list).map(Some),
            Err(std::env::VarError::NotPresent) => Ok(None),
            Err(std::env::VarError::NotUnicode(_)) => Err(KeyError::NotUnicode),
        }
    }

    /// Parses comma-separated `id:base64` entries, the first one sealing.
    pub(crate) fn parse_list(list: &str) -> Result<Self, KeyError> {
        if list.trim().is_empty() {
            return Err(KeyError::EmptyList);
        }
        let mut keys: Vec<StateKey> = Vec::new();
        for (index, entry) in list.split(',').enumerate() {
            let entry_error = |error| KeyError::Entry { position: index + 1, error: Box::new(error) };
            let key = StateKey::parse(entry).map_err(entry_error)?;
            if keys.iter().any(|k| k.id == key.id) {
                return Err(entry_error(KeyError::DuplicateId));
            }
            keys.push(key);
        }
        Ok(Self { keys: Arc::from(keys) })
    }

    /// The id of the key that seals new states.
    pub fn current_id(&self) -> &str {
        self.current().id()
    }

    /// The key that seals.
    pub(crate) fn current(&self) -> &StateKey {
        &self.keys[0]
    }

    /// Every key, the sealing one first.
    pub(crate) fn keys(&self) -> &[StateKey] {
        &self.keys
    }

    /// The key with this id, if the ring holds one.
    pub(crate) fn get(&self, id: &str) -> Option<&StateKey> {
        self.keys.iter().find(|key| key.id == id)
    }
}

impl fmt::Debug for KeyRing {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let ids: Vec<&str> = self.keys.iter().map(StateKey::id).collect();
        f.debug_struct("KeyRing").field("seals", &ids[0]).field("opens", &ids).finish()
    }
}

/// Why a key spec or `MCP_MRTR_STATE_KEYS` was rejected. Never quotes the secret.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum KeyError {
    /// No `:` between the id and the secret.
    MissingColon,
    /// The id is empty, too long, or has characters outside `A-Z a-z 0-9 _ -`.
    BadId,
    /// The secret is not base64.
    BadBase64,
    /// The secret decodes to the wrong number of bytes.
    WrongLength(usize),
    /// Two entries share an id.
    DuplicateId,
    /// The secret is a placeholder: every byte is the same (all zeros, say).
    WeakSecret,
    /// `MCP_MRTR_STATE_KEYS` is set but blank.
    EmptyList,
    /// `MCP_MRTR_STATE_KEYS` is not valid Unicode.
    NotUnicode,
    /// An entry of `MCP_MRTR_STATE_KEYS` is wrong.
    Entry {
        /// Which entry, counting from 1.
        position: usize,
        /// What is wrong with it.
        error: Box<KeyError>,
    },
}

impl fmt::Display for KeyError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::MissingColon => f.write_str("a state key must be written ID:BASE64_SECRET (no `:` found)"),
            Self::BadId => write!(f, "a state key id must be 1 to {MAX_ID_LEN} characters of A-Z a-z 0-9 _ -"),
            Self::BadBase64 => f.write_str("a state key secret must be base64 (URL-safe or standard alphabet)"),
            Self::WrongLength(n) => write!(f, "a state key secret must decode to 32 bytes, not {n}"),
            Self::DuplicateId => f.write_str("two state keys share the same id"),
            Self::WeakSecret => f.write_str(
                "a state key secret must be random: every byte of this one is the same (generate one with \
                 `openssl rand -base64 32`)",
            ),
            Self::EmptyList => write!(f, "{KEYS_ENV} is set but empty; unset it or give id:base64 entries"),
            Self::NotUnicode => write!(f, "{KEYS_ENV} is not valid UTF-8"),
            Self::Entry { position, error } => write!(f, "{KEYS_ENV} entry {position}: {error}"),
        }
    }
}

impl std::error::Error for KeyError {}

/// Whether `id` is 1 to 32 characters of `A-Z a-z 0-9 _ -`: such an id never contains
/// the token's `.` separator.
pub(crate) fn valid_id(id: &str) -> bool {
    (1..=MAX_ID_LEN).contains(&id.len()) && id.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-')
}

/// Decodes a 32-byte secret in either base64 alphabet. Decoder errors are not passed on:
/// they quote the offending character, which is part of the secret.
fn decode_secret(encoded: &str) -> Result<Zeroizing<[u8; 32]>, KeyError> {
    let bytes = Zeroizing::new(
        URL_SAFE_LENIENT
            .decode(encoded)
            .or_else(|_| STANDARD_LENIENT.decode(encoded))
            .map_err(|_| KeyError::BadBase64)?,
    );
    <[u8; 32]>::try_from(bytes.as_slice()).map(Zeroizing::new).map_err(|_| KeyError::WrongLength(bytes.len()))
}

/// Fills `buf` from the operating system's random number generator.
///
/// # Panics
///
/// If the generator fails: there is no safe fallback for key material.
pub(crate) fn fill_random(buf: &mut [u8]) {
    if let Err(error) = getrandom::fill(buf) {
        panic!("the operating system's random number generator failed: {error}");
    }
}
