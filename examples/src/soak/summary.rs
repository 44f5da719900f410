//! The summary: operations by kind and verdict, the faults injected, every failure by
//! reason and the fault that explains it, request latency per kind before and after
//! each kind of fault, and the memory and CPU of every process.

use std::collections::BTreeMap;
use std::fmt::Write as _;

use super::checks::{Coverage, Judged, Verdict};
use super::faults::FaultKind;
use super::history::{FaultLog, Kind, OpLog, Outcome};
use super::samples::Series;
use super::steps;
use crate::stats::percentile;

/// The window before and after a fault that its latency columns cover.
const WINDOW_MS: u64 = 10_000;

pub(crate) struct Report<'a> {
    pub(crate) header: String,
    pub(crate) ops: &'a [OpLog],
    pub(crate) faults: &'a [FaultLog],
    pub(crate) judged: &'a [Judged],
    pub(crate) coverage: &'a Coverage,
    pub(crate) samples: &'a BTreeMap<String, Series>,
    /// The task lease the processes ran with.
    pub(crate) lease_ms: u64,
}

pub(crate) fn render(report: &Report<'_>) -> String {
    let mut out = String::new();
    let _ = writeln!(out, "{}\n", report.header);
    operations(&mut out, report.judged);
    checked(&mut out, report.ops, report.judged, report.coverage);
    task_steps(&mut out, report);
    faults(&mut out, report.faults);
    failures(&mut out, report.judged);
    latency(&mut out, report.ops, report.faults);
    processes(&mut out, report.samples);
    out
}

fn operations(out: &mut String, judged: &[Judged]) {
    let mut counts: BTreeMap<Kind, [usize; 7]> = BTreeMap::new();
    for j in judged {
        counts.entry(j.kind).or_default()[j.verdict.column()] += 1;
    }
    let _ = write!(out, "{:<18} {:>6}", "operations", "total");
    for column in Verdict::COLUMNS {
        let _ = write!(out, " {column:>12}");
    }
    out.push('\n');
    let mut total = [0usize; 7];
    for kind in Kind::ALL {
        let row = counts.get(&kind).copied().unwrap_or_default();
        let _ = write!(out, "{:<18} {:>6}", kind.name(), row.iter().sum::<usize>());
        for (i, n) in row.iter().enumerate() {
            total[i] += n;
            let _ = write!(out, " {n:>12}");
        }
        out.push('\n');
    }
    let _ = write!(out, "{:<18} {:>6}", "all", total.iter().sum::<usize>());
    for n in total {
        let _ = write!(out, " {n:>12}");
    }
    out.push_str("\n\n");
}

fn checked(out: &mut String, ops: &[OpLog], judged: &[Judged], coverage: &Coverage) {
    let completed = |kind: Kind| judged.iter().filter(|j| j.kind == kind && j.verdict == Verdict::Completed).count();
    let requests: usize = ops.iter().map(|op| op.requests.len()).sum();
    let durable = ops
        .iter()
        .filter(|op| op.detail["tool"] == "test_durable_task")
        .filter(|op| judged.iter().any(|j| j.op == op.id && j.verdict == Verdict::Completed))
        .count();
    let _ = writeln!(
        out,
        "checked: {requests} requests against their deadline; {} once! call ids with {} distinct receipts; \
         {} durable tasks' step receipts; {} final results against the answers given; \
         {} (listener, change) pairs each owed a notification, {} (listener, Redis restart) pairs owed one, {} pairs excused \
         (their instance was killed within 200 ms); {} tampered and {} replayed states refused\n",
        coverage.calls,
        coverage.receipts,
        durable,
        judged
            .iter()
            .filter(
                |j| j.verdict == Verdict::Completed && !matches!(j.kind, Kind::Listen | Kind::Tampered | Kind::Replay)
            )
            .count(),
        coverage.pairs.get(),
        coverage.windows.get(),
        coverage.excused.get(),
        completed(Kind::Tampered),
        completed(Kind::Replay),
    );
}

/// The `once!` steps of tasks as the outbox saw them: how often each was taken, and why again.
fn task_steps(out: &mut String, report: &Report<'_>) {
    let t = steps::tally(report.ops, report.faults, report.lease_ms);
    let _ = writeln!(
        out,
        "task steps (the outbox, outside the processes): {} tasks took {} steps in {} attempts; taken again: {} \
         after a SIGKILL inside, {} across a Redis outage longer than the lease (unavoidable), {} otherwise \
         (must be 0); cut by a SIGTERM: {} (must be 0); worker SIGTERMs {}, {} of them inside a step\n",
        t.tasks,
        t.steps,
        t.attempts,
        t.after_kill,
        t.after_outage,
        t.again,
        t.cut_by_term,
        t.worker_terms,
        t.worker_terms_inside,
    );
}

fn faults(out: &mut String, faults: &[FaultLog]) {
    let mut sorted: Vec<&FaultLog> = faults.iter().collect();
    sorted.sort_by_key(|f| f.at_ms);
    let counts: Vec<String> = FaultKind::ALL
        .iter()
        .map(|k| format!("{} {}", k.name(), faults.iter().filter(|f| f.kind == *k).count()))
        .collect();
    let _ = writeln!(out, "faults injected: {}", counts.join(", "));
    for f in sorted {
        let victim = f.victim.map_or_else(String::new, |v| match v.addr.port() {
            0 => format!("{v} (pid {})", v.pid),
            port => format!("{v} (pid {}, port {port})", v.pid),
        });
        let _ = writeln!(out, "  {:>7.1} s  {:<14} {victim:<30} {}", f.at_ms as f64 / 1000.0, f.kind.name(), f.note);
    }
    out.push('\n');
}

fn failures(out: &mut String, judged: &[Judged]) {
    let mut groups: BTreeMap<(usize, Kind, String, String), usize> = BTreeMap::new();
    for j in judged.iter().filter(|j| j.verdict != Verdict::Completed) {
        let reason: String = j.verdict.reason().chars().take(100).collect();
        *groups.entry((j.verdict.column(), j.kind, reason, j.cause.clone())).or_default() += 1;
    }
    let _ = writeln!(out, "not completed, by verdict, reason and the fault that explains it:");
    if groups.is_empty() {
        let _ = writeln!(out, "  (none)");
    }
    let mut rows: Vec<_> = groups.into_iter().collect();
    rows.sort_by(|a, b| b.0 .0.cmp(&a.0 .0).then(b.1.cmp(&a.1)));
    for ((column, kind, reason, cause), n) in rows.iter().take(60) {
        let _ = writeln!(out, "  {n:>5} {:<12} {:<18} [{cause}] {reason}", Verdict::COLUMNS[*column], kind.name());
    }
    let bad: Vec<&Judged> = judged.iter().filter(|j| j.verdict.bad()).collect();
    if !bad.is_empty() {
        let _ =
            writeln!(out, "\nlost, duplicated, wrong or hung (grep '\"op\":ID[,}}]' history.jsonl for each history):");
        for j in bad.iter().take(40) {
            let _ = writeln!(
                out,
                "  op {:>6} {:<18} {:<11} [{}] {}",
                j.op,
                j.kind.name(),
                Verdict::COLUMNS[j.verdict.column()],
                j.cause,
                j.verdict.reason()
            );
        }
    }
    out.push('\n');
}

fn cell(mut values: Vec<u64>) -> String {
    values.sort_unstable();
    match (percentile(&values, 50), percentile(&values, 99)) {
        (Some(p50), Some(p99)) => format!("{p50}/{p99}"),
        _ => "-".into(),
    }
}

fn latency(out: &mut String, ops: &[OpLog], faults: &[FaultLog]) {
    let _ = writeln!(
        out,
        "request latency p50/p99 ms (answered requests), overall and within {} s before/after each kind of fault:",
        WINDOW_MS / 1000
    );
    let _ = write!(out, "{:<18} {:>11}", "kind", "all");
    for kind in FaultKind::ALL {
        let _ = write!(out, " {:>11} {:>11}", format!("{}-", short(kind)), format!("{}+", short(kind)));
    }
    out.push('\n');
    for kind in Kind::ALL {
        let requests: Vec<(u64, u64)> = ops
            .iter()
            .filter(|op| op.kind == kind && op.detail.get("stalled").is_none())
            .flat_map(|op| &op.requests)
            .filter(|r| !matches!(r.outcome, Outcome::Transport(_)))
            .map(|r| (r.at_ms, r.ms))
            .collect();
        let _ = write!(out, "{:<18} {:>11}", kind.name(), cell(requests.iter().map(|r| r.1).collect()));
        for fault_kind in FaultKind::ALL {
            let at: Vec<u64> = faults.iter().filter(|f| f.kind == fault_kind).map(|f| f.at_ms).collect();
            let within = |before: bool| -> Vec<u64> {
                requests
                    .iter()
                    .filter(|(t, _)| {
                        at.iter().any(|&f| {
                            if before {
                                *t + WINDOW_MS >= f && *t < f
                            } else {
                                *t >= f && *t < f + WINDOW_MS
                            }
                        })
                    })
                    .map(|r| r.1)
                    .collect()
            };
            let _ = write!(out, " {:>11} {:>11}", cell(within(true)), cell(within(false)));
        }
        out.push('\n');
    }
    out.push('\n');
}

fn short(kind: FaultKind) -> &'static str {
    match kind {
        FaultKind::Kill => "kill",
        FaultKind::Term => "term",
        FaultKind::Redis => "redis",
        FaultKind::Stall => "stall",
        FaultKind::WorkerTerm => "wterm",
    }
}

fn processes(out: &mut String, samples: &BTreeMap<String, Series>) {
    let _ = writeln!(out, "processes (samples.jsonl has every sample):");
    let _ = writeln!(
        out,
        "  {:<16} {:>8} {:>7} {:>10} {:>10} {:>10} {:>8} {:>8}",
        "process", "pid", "samples", "rss0 MiB", "rss max", "rss last", "cpu avg%", "cpu max%"
    );
    for (label, series) in samples {
        let rss: Vec<u64> = series.points.iter().map(|p| p.1).collect();
        let cpu: Vec<f64> = series.points.iter().skip(1).map(|p| p.2).collect();
        let mib = |kib: Option<&u64>| kib.map_or(0.0, |k| *k as f64 / 1024.0);
        let avg = if cpu.is_empty() { 0.0 } else { cpu.iter().sum::<f64>() / cpu.len() as f64 };
        let max = cpu.iter().copied().fold(0.0, f64::max);
        let _ = writeln!(
            out,
            "  {label:<16} {:>8} {:>7} {:>10.1} {:>10.1} {:>10.1} {avg:>8.1} {max:>8.1}",
            series.pid,
            series.points.len(),
            mib(rss.first()),
            mib(rss.iter().max()),
            mib(rss.last()),
        );
    }
}
