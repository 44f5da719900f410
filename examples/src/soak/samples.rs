//! RSS and CPU of every `everything` process (instances, front end, task workers) and of
//! redis-server, from /proc, each interval: written to `samples.jsonl` and kept for the
//! summary.

use std::collections::BTreeMap;
use std::fs::File;
use std::io::{BufWriter, Write as _};
use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant};

use serde_json::json;
use tokio::sync::watch;

use super::cluster::Cluster;
use super::history::History;
use super::redis::Redis;
use crate::process::{cpu_ticks, rss_kib};

/// One process's samples.
#[derive(Default)]
pub(crate) struct Series {
    pub(crate) pid: u32,
    /// (seconds into the run, RSS KiB, CPU % of one core since the previous sample).
    pub(crate) points: Vec<(f64, u64, f64)>,
}

/// Samples until `stop` turns true; returns the series by process label.
pub(crate) async fn sample(
    clusters: Vec<Arc<Cluster>>,
    redis: Arc<Redis>,
    history: Arc<History>,
    path: &Path,
    every: Duration,
    mut stop: watch::Receiver<bool>,
) -> BTreeMap<String, Series> {
    let mut out = File::create(path).map(BufWriter::new).ok();
    let mut series: BTreeMap<String, Series> = BTreeMap::new();
    // The last CPU reading of each pid, to turn ticks into a share of the interval.
    let mut last: BTreeMap<u32, (u64, Instant)> = BTreeMap::new();
    loop {
        let mut processes: Vec<(String, u32)> =
            clusters.iter().flat_map(|c| c.live()).map(|t| (t.to_string(), t.pid)).collect();
        processes.extend(redis.pids().into_iter().map(|pid| ("redis".to_owned(), pid)));
        let t = history.now_ms() as f64 / 1000.0;
        for (label, pid) in processes {
            let (Ok(rss), Ok(ticks)) = (rss_kib(pid), cpu_ticks(pid)) else { continue };
            let now = Instant::now();
            let cpu = last.get(&pid).map_or(0.0, |&(before, at)| {
                // A clock tick is 10 ms: ticks × 10 ms over the wall time, as a percentage.
                (ticks.saturating_sub(before) as f64 * 10.0) / now.duration_since(at).as_millis().max(1) as f64 * 100.0
            });
            last.insert(pid, (ticks, now));
            let label = if label == "redis" { format!("redis.pid{pid}") } else { label };
            if let Some(out) = out.as_mut() {
                let _ =
                    writeln!(out, "{}", json!({ "t": t, "proc": label, "pid": pid, "rss_kib": rss, "cpu_pct": cpu }));
            }
            let entry = series.entry(label).or_default();
            entry.pid = pid;
            entry.points.push((t, rss, cpu));
        }
        if let Some(out) = out.as_mut() {
            let _ = out.flush();
        }
        history.flush();
        tokio::select! {
            () = tokio::time::sleep(every) => {}
            _ = stop.changed() => break,
        }
    }
    series
}
