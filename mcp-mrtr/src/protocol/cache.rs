//! The caching hints of SEP-2549 (`ttlMs`, `cacheScope`) that complete results of
//! cacheable methods carry.

/// Who may cache a cacheable result (`cacheScope`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum CacheScope {
    /// Identical for every caller; intermediaries may share it.
    Public,
    /// Specific to the caller's authorization context.
    #[default]
    Private,
}

impl CacheScope {
    pub(crate) fn as_str(self) -> &'static str {
        match self {
            Self::Public => "public",
            Self::Private => "private",
        }
    }
}

/// The caching hints (`ttlMs`, `cacheScope`) stamped on complete results of
/// `server/discover`, the `*/list` methods and `resources/read`.
///
/// The default, `ttlMs: 0` and `private`, lets no one reuse a result: opt in to caching
/// when your lists are stable.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct CacheHints {
    /// How long the result stays fresh, in milliseconds.
    pub ttl_ms: u64,
    /// Who may share it.
    pub scope: CacheScope,
}
