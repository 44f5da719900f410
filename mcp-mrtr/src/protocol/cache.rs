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
///
/// ```
/// use mcp_mrtr::prelude::*;
/// use mcp_mrtr::testing::TestClient;
/// use mcp_mrtr::{protocol::CacheHints, protocol::CacheScope};
///
/// /// The price list: the same for everyone, changed once a day.
/// #[resource(uri = "shop://prices")]
/// async fn prices() -> Result<ResourceContents, ToolError> {
///     Ok(ResourceContents::text("shop://prices", "text/csv", "item,eur\ntea,3\n"))
/// }
///
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() {
/// let hints = CacheHints { ttl_ms: 60 * 60 * 1000, scope: CacheScope::Public };
/// let client = TestClient::new(Server::new("shop", "1.0.0").cache_hints(hints).resource(prices));
/// let read = client.read_resource("shop://prices").start().await;
/// assert_eq!(read.complete().unwrap()["ttlMs"], 3_600_000);
/// assert_eq!(read.complete().unwrap()["cacheScope"], "public");
/// # }
/// ```
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct CacheHints {
    /// How long the result stays fresh, in milliseconds.
    pub ttl_ms: u64,
    /// Who may share it.
    pub scope: CacheScope,
}
