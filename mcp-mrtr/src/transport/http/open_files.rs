//! The process's open-files limit, raised once to its hard limit: every connection takes
//! a descriptor, and the common soft limit of 1,024 would cap a server far below what
//! its memory allows.

use std::sync::OnceLock;

/// Raises the soft open-files limit to the hard limit (once per process) and returns the
/// soft limit in force. Where it cannot be read, 1,024, the common default.
pub(super) fn raise_limit() -> u64 {
    static LIMIT: OnceLock<u64> = OnceLock::new();
    *LIMIT.get_or_init(|| {
        let raised = raise();
        match raised {
            Ok(limit) => tracing::debug!(limit, "open-files limit"),
            Err(ref error) => tracing::warn!(%error, "cannot read or raise the open-files limit; assuming 1,024"),
        }
        raised.unwrap_or(1024)
    })
}

#[cfg(unix)]
fn raise() -> std::io::Result<u64> {
    rlimit::increase_nofile_limit(u64::MAX)
}

#[cfg(not(unix))]
fn raise() -> std::io::Result<u64> {
    Err(std::io::Error::other("no open-files limit on this platform"))
}
