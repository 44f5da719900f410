//! Soak and chaos: N `everything` instances sharing one fresh key ring and one
//! `redis-server` of their own, with a front end whose tasks run on task workers (the same
//! binary, `--task-worker`), driven for a given time by a mix of every kind of operation
//! while instances are killed and terminated, workers terminated inside a `once!` step,
//! Redis fails (restarted empty or from its AOF, or failed over: `--redis`) and a client
//! stops reading; then every operation's history is checked. See `src/bin/soak.rs` for
//! the command line.
//!
//! - `cluster`, `redis`: the processes, and the spreader (round robin per 2026-07-28
//!   request, affinity per 2025-11-25 session);
//! - `outbox`: the store outside the processes that task steps write their effects to;
//! - `client`, `rpc`: HTTP/1.1 and SSE, and MCP over it (deadlines, retries, recording);
//! - `flows`: each operation as a small state machine; `faults`: the schedule;
//! - `history`: what happened; `checks`, `expect`, `steps`: what it must have been;
//! - `samples`: RSS and CPU from /proc; `summary`: the tables; `selftest`: the checks' check.

mod checks;
mod client;
mod cluster;
mod expect;
mod faults;
mod flows;
mod history;
mod outbox;
mod redis;
mod rng;
mod rpc;
mod samples;
mod selftest;
mod steps;
mod summary;

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::{bail, Context as _};
use tokio::sync::watch;
use tokio::task::JoinSet;

use self::cluster::{new_key_ring, Cluster, Role};
use self::flows::{Runners, Shared};
use self::history::History;
use self::outbox::Outbox;
use self::redis::Redis;
pub use self::redis::Shape;
use self::rng::Rng;

pub const USAGE: &str = "usage: soak --seconds S [--instances 3] [--workers 16] [--listeners 2×instances]
            [--task-workers 2] [--seed X] [--out DIR] [--faults default|none] [--everything PATH]
            [--every 5] [--lease-ms 2000] [--self-test WHAT|all]
            [--redis standalone|persistent|sentinel|cluster]";

/// What a run does.
#[derive(Clone, Debug)]
pub struct Options {
    pub seconds: u64,
    pub instances: usize,
    pub workers: usize,
    pub listeners: usize,
    /// Task worker processes (`everything --task-worker`), beside the instances.
    pub task_workers: usize,
    pub seed: u64,
    pub out: PathBuf,
    pub faults: bool,
    pub everything: PathBuf,
    /// Seconds between samples of RSS and CPU.
    pub every: u64,
    pub lease_ms: u64,
    pub self_test: Option<String>,
    /// The Redis deployment, and so what its fault is.
    pub redis: Shape,
}

impl Options {
    /// Reads the command line (without the program name).
    pub fn parse(args: impl IntoIterator<Item = String>) -> anyhow::Result<Self> {
        let args: Vec<String> = args.into_iter().collect();
        let now = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap_or_default();
        let mut options = Options {
            seconds: 0,
            instances: 3,
            workers: 16,
            listeners: 0,
            task_workers: 2,
            seed: u64::from(now.subsec_nanos()) ^ now.as_secs(),
            out: std::env::temp_dir().join(format!("mcp-mrtr-soak-{}", now.as_secs())),
            faults: true,
            everything: std::env::current_exe()?.with_file_name("everything"),
            every: 5,
            lease_ms: 2000,
            self_test: None,
            redis: Shape::Standalone,
        };
        for pair in args.chunks(2) {
            let [flag, value] = pair else { bail!("{USAGE}") };
            let number = || value.parse::<u64>().with_context(|| format!("{flag} takes a number, got {value:?}"));
            match flag.as_str() {
                "--seconds" => options.seconds = number()?,
                "--instances" => options.instances = usize::try_from(number()?)?,
                "--workers" => options.workers = usize::try_from(number()?)?,
                "--listeners" => options.listeners = usize::try_from(number()?)?,
                "--task-workers" => options.task_workers = usize::try_from(number()?)?,
                "--seed" => options.seed = number()?,
                "--out" => options.out = PathBuf::from(value),
                "--faults" if value == "default" => options.faults = true,
                "--faults" if value == "none" => options.faults = false,
                "--everything" => options.everything = PathBuf::from(value),
                "--every" => options.every = number()?.max(1),
                "--lease-ms" => options.lease_ms = number()?,
                "--self-test" => options.self_test = Some(value.clone()),
                "--redis" => {
                    options.redis = Shape::parse(value).with_context(|| format!("--redis {value}: {USAGE}"))?;
                }
                _ => bail!("{USAGE}"),
            }
        }
        // Two task workers at least: one is SIGTERMed while the other takes its tasks over.
        if options.seconds == 0 || options.instances == 0 || options.workers == 0 || options.task_workers < 2 {
            bail!("{USAGE}");
        }
        if options.listeners == 0 {
            options.listeners = 2 * options.instances;
        }
        Ok(options)
    }
}

/// How long after the end workers may take to finish their operations (each bounded).
const DRAIN: Duration = Duration::from_secs(150);

/// Runs the soak; `Ok(true)` when nothing was lost, duplicated, wrong or hung.
pub async fn run(options: Options) -> anyhow::Result<bool> {
    let out = &options.out;
    std::fs::create_dir_all(out).with_context(|| format!("create {}", out.display()))?;
    if !options.everything.exists() {
        bail!("no everything binary at {} (build it, or pass --everything PATH)", options.everything.display());
    }
    let rng = Rng::new(options.seed);
    let redis = Arc::new(Redis::start(out, options.redis).await?);
    let mut env = vec![
        ("MCP_MRTR_STATE_KEYS".to_owned(), new_key_ring()?),
        ("MCP_MRTR_TASK_LEASE_MS".to_owned(), options.lease_ms.to_string()),
    ];
    env.extend(redis.env());
    let outbox = Outbox::create(out)?;
    env.push((crate::everything::tasks::OUTBOX.to_owned(), outbox.path().display().to_string()));
    let exe = &options.everything;
    let cluster = Arc::new(Cluster::start(exe, Role::Instance, options.instances, env.clone(), out).await?);
    // The workers first: a front end that starts with none alive says so in its log.
    let workers = Arc::new(Cluster::start(exe, Role::Worker, options.task_workers, env.clone(), out).await?);
    let front = Arc::new(Cluster::start(exe, Role::FrontEnd, 1, env, out).await?);
    let history = Arc::new(History::create(&out.join("history.jsonl"))?);
    let started = Instant::now();
    let stop_at = started + Duration::from_secs(options.seconds);
    let shared = Arc::new(Shared::new(cluster, Runners { front, workers, outbox }, history.clone(), stop_at));
    eprintln!("soak: {} s, seed {}, history in {}", options.seconds, options.seed, out.display());
    let samples = drive(&options, &shared, &redis, rng, started).await;
    for cluster in shared.clusters() {
        cluster.stop(Duration::from_secs(15)).await;
    }
    redis.kill();
    // Every process has stopped: the outbox holds every effect there will be.
    let stray = outbox::record(&shared);
    report(&options, &history, &samples, &stray, started.elapsed())
}

/// Runs the sampler, the fault schedule, the workers and the listeners until the end and
/// the drain; returns the samples.
async fn drive(
    options: &Options,
    shared: &Arc<Shared>,
    redis: &Arc<Redis>,
    mut rng: Rng,
    started: Instant,
) -> BTreeMap<String, samples::Series> {
    let (stop, stopped) = watch::channel(false);
    let path = options.out.join("samples.jsonl");
    let every = Duration::from_secs(options.every);
    let sampling = tokio::spawn({
        let clusters = shared.clusters().map(Arc::clone).to_vec();
        let (redis, history) = (redis.clone(), shared.history.clone());
        async move { samples::sample(clusters, redis, history, &path, every, stopped).await }
    });
    let plan = if options.faults { faults::plan(options.seconds, &mut rng) } else { Vec::new() };
    let injector = tokio::spawn(faults::run(plan, shared.clone(), redis.clone(), rng.fork(1), started));
    let mut workers = JoinSet::new();
    for n in 0..options.workers {
        workers.spawn(flows::worker(shared.clone(), n, rng.fork(100 + n as u64)));
    }
    for n in 0..options.listeners {
        workers.spawn(flows::listener(shared.clone(), n, rng.fork(1000 + n as u64)));
    }
    let drained = tokio::time::timeout_at((shared.stop_at + DRAIN).into(), async {
        while workers.join_next().await.is_some() {}
    })
    .await
    .is_ok();
    if !drained {
        // What is still open shows as hung: it never ended.
        workers.abort_all();
    }
    if tokio::time::timeout(Duration::from_mins(1), injector).await.is_err() {
        eprintln!("soak: the fault injector did not finish in time");
    }
    let _ = stop.send(true);
    sampling.await.unwrap_or_default()
}

/// Checks the history (corrupted first, for a self-test), prints the summary and writes it.
/// `stray`: outbox lines that belong to no operation (each fails the run).
fn report(
    options: &Options,
    history: &History,
    samples: &BTreeMap<String, samples::Series>,
    stray: &[String],
    wall: Duration,
) -> anyhow::Result<bool> {
    let (mut ops, faults) = history.take();
    let mut notes: Vec<String> = stray.iter().take(10).map(|line| format!("OUTBOX: a stray line: {line}")).collect();
    let all = options.self_test.as_deref() == Some("all");
    if let Some(what) = options.self_test.as_deref().filter(|_| !all) {
        let done = selftest::corrupt(&mut ops, &faults, what).map_err(anyhow::Error::msg)?;
        notes.push(format!("SELF-TEST: history corrupted on purpose: {done}"));
    }
    let (judged, coverage) = checks::judge(&ops, &faults, options.lease_ms);
    let mut clean = !judged.iter().any(|j| j.verdict.bad()) && stray.is_empty();
    if all {
        let (lines, caught) = selftest::all(&ops, &faults, options.lease_ms);
        notes.extend(lines);
        clean &= caught;
    }
    let out = options.out.display();
    let header = format!(
        "soak: {} s ({:.0} s wall), {} instances, a front end and {} task workers, {} workers + {} listeners, \
         seed {}, faults {}, lease {} ms, redis {}\n\
         history: {out}/history.jsonl, samples: {out}/samples.jsonl",
        options.seconds,
        wall.as_secs_f64(),
        options.instances,
        options.task_workers,
        options.workers,
        options.listeners,
        options.seed,
        if options.faults { "default" } else { "none" },
        options.lease_ms,
        options.redis.name(),
    );
    let report = summary::Report {
        header,
        ops: &ops,
        faults: &faults,
        judged: &judged,
        coverage: &coverage,
        samples,
        lease_ms: options.lease_ms,
    };
    let mut text = summary::render(&report);
    for note in notes {
        text.push_str(&note);
        text.push('\n');
    }
    text.push_str(if clean {
        "\nverdict: CLEAN (nothing lost, duplicated, wrong or hung)\n"
    } else {
        "\nverdict: FAILED\n"
    });
    print!("{text}");
    std::fs::write(options.out.join("summary.txt"), &text)?;
    Ok(clean)
}
