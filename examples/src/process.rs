//! What the load clients read about the server they measure, from /proc (Linux).

use anyhow::Context as _;

/// The resident memory of process `pid`, in KiB.
pub fn rss_kib(pid: u32) -> anyhow::Result<u64> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).context("read /proc/PID/status")?;
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .context("no VmRSS line")
}

/// User plus system CPU of process `pid`, in clock ticks (10 ms each).
pub fn cpu_ticks(pid: u32) -> anyhow::Result<u64> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).context("read /proc/PID/stat")?;
    // Fields after the command name (which may hold spaces) start at its closing paren.
    let fields: Vec<&str> = stat.rsplit_once(')').context("a stat line")?.1.split_whitespace().collect();
    let ticks = |at: usize| fields.get(at).and_then(|f| f.parse::<u64>().ok()).context("a stat field");
    Ok(ticks(11)? + ticks(12)?)
}
