//! Property (issue 57, extending issue 48's to tasks): whatever runs a call's steps — a
//! round presenting any state of the call, with its answer or without, a task made from
//! any of them, a run after `tasks/update`, a worker's run, a takeover after a SIGKILL, a
//! run handed back by a SIGTERM — no `once!` step is taken twice, except once more for each
//! run killed inside it (as documented: only a killed process takes a step again); and a
//! presentation or task refused at a step is refused only because the step was taken, or
//! a kill may have left it claimed and untaken (the call must then start over).
//!
//! A deployment here is a front end (`run_on_workers`) that clients call, an instance
//! that runs its own tasks (and is called too), and a worker, sharing one task store,
//! one guard and one key ring, as they would share a Redis. The instance and the worker
//! each run in a tokio runtime of their own, so a SIGKILL is the runtime shut down at once
//! (every future dropped where it stands, no lease released) and a SIGTERM the graceful
//! stop their transports make. Over HTTP on 127.0.0.1; every wait is bounded.

use std::collections::HashMap;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use mcp_mrtr::prelude::*;
use mcp_mrtr::request_state::{KeyRing, StateConfig, StateKey};
use mcp_mrtr::tasks::{MemoryTaskStore, TaskConfig, Worker};
use mcp_mrtr::testing::answer;
use mcp_mrtr_tests::client;
use mcp_mrtr_tests::harness::{default_caps, task_caps, Rpc, SharedGuard, TestServer, USED};
use serde_json::{json, Value};

/// Which process of the deployment ran something, and which start of it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
struct Who {
    process: Process,
    start: u32,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
enum Process {
    Front,
    Here,
    Worker,
}

/// What every process of every run of the test did: each step's takings, and the steps
/// under way (so a kill knows which it cut).
#[derive(Default)]
struct Ledger {
    taken: HashMap<(String, char), u32>,
    under_way: HashMap<(String, char, Who), u32>,
    cut: HashMap<(String, char), u32>,
}

static LEDGER: Mutex<Option<Ledger>> = Mutex::new(None);

fn ledger<T>(f: impl FnOnce(&mut Ledger) -> T) -> T {
    f(LEDGER.lock().unwrap().get_or_insert_with(Ledger::default))
}

static SPREAD: AtomicU64 = AtomicU64::new(0);

/// A step with an effect outside the process: sent at once, then confirmed a few
/// milliseconds later. It stays under way until `once!` has recorded it (see `recorded`):
/// a kill anywhere in between cuts it.
async fn effect(call: &str, step: char, who: Who) -> u32 {
    let n = ledger(|l| {
        *l.under_way.entry((call.to_owned(), step, who)).or_default() += 1;
        let n = l.taken.entry((call.to_owned(), step)).or_default();
        *n += 1;
        *n
    });
    let wait = 10 + SPREAD.fetch_add(7, Ordering::Relaxed) % 50;
    tokio::time::sleep(Duration::from_millis(wait)).await;
    n
}

/// `once!` returned: the step is recorded (or was read from the record, having never been
/// under way here). Until then a kill may leave it taken but unrecorded, and the run that
/// takes the task over takes it again, as documented: the ledger counted such a kill as
/// cutting nothing, and a schedule that killed a worker in that window (seed 19) failed.
fn recorded(call: &str, step: char, who: Who) {
    ledger(|l| {
        if let Some(count) = l.under_way.get_mut(&(call.to_owned(), step, who)) {
            *count = count.saturating_sub(1);
        }
    });
}

#[derive(Deserialize, JsonSchema)]
struct Confirm {
    ok: bool,
}

/// Asks, takes step `b`, may continue as a task, asks again, takes step `c`.
#[tool(task = "optional")]
async fn flow(ctx: &Ctx, who: State<Who>, call: String) -> Result<String, ToolError> {
    let who = *who.0;
    let first: Confirm = ask!(elicit "First?")?;
    let b = once!(effect(&call, 'b', who).await);
    recorded(&call, 'b', who);
    ctx.continue_as_task().await;
    let second: Confirm = ask!(elicit "Second?")?;
    let c = once!(effect(&call, 'c', who).await);
    recorded(&call, 'c', who);
    Ok(format!("b={b} c={c} ok={}", first.ok && second.ok))
}

/// A process of the deployment running in a tokio runtime of its own; dropping it is a
/// SIGKILL.
struct Running {
    runtime: Option<tokio::runtime::Runtime>,
    addr: Option<SocketAddr>,
    stop: Option<tokio::sync::oneshot::Sender<()>>,
    done: Option<tokio::task::JoinHandle<Result<(), mcp_mrtr::serve::ServeError>>>,
}

impl Drop for Running {
    fn drop(&mut self) {
        // Every task of the runtime is dropped where it stands (and this may run in an
        // async context, where a runtime cannot be dropped by waiting for it).
        if let Some(runtime) = self.runtime.take() {
            runtime.shutdown_background();
        }
    }
}

/// What the processes share, and how each is built.
struct Deployment {
    key: StateKey,
    guard: SharedGuard,
    store: Arc<MemoryTaskStore>,
    front: TestServer,
    here: Option<Running>,
    worker: Option<Running>,
    starts: u32,
    /// Whether a kill happened: from then on a claim may have been left untaken.
    killed: bool,
}

impl Deployment {
    async fn start() -> Self {
        let (key, guard, store) = (StateKey::random(), SharedGuard::default(), Arc::new(MemoryTaskStore::new()));
        let front = TestServer::start(build(&key, &guard, &store, Who { process: Process::Front, start: 0 })).await;
        let mut deployment = Self { key, guard, store, front, here: None, worker: None, starts: 0, killed: false };
        deployment.here = Some(deployment.launch(Process::Here));
        deployment.worker = Some(deployment.launch(Process::Worker));
        deployment
    }

    /// Starts `process` in a runtime of its own.
    fn launch(&mut self, process: Process) -> Running {
        self.starts += 1;
        let server = build(&self.key, &self.guard, &self.store, Who { process, start: self.starts });
        let runtime =
            tokio::runtime::Builder::new_multi_thread().worker_threads(1).enable_all().build().expect("a runtime");
        let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
        let stopped = async move {
            let _ = stopped.await;
        };
        let (addr, done) = if process == Process::Worker {
            let worker = Worker::new().look_every(Duration::from_millis(20));
            (None, runtime.spawn(server.serve(worker).with_graceful_shutdown(stopped)))
        } else {
            let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind 127.0.0.1");
            listener.set_nonblocking(true).unwrap();
            let addr = listener.local_addr().unwrap();
            let done = runtime.spawn(async move {
                let listener = tokio::net::TcpListener::from_std(listener)?;
                server.serve(mcp_mrtr::http::Http::listener(listener)).with_graceful_shutdown(stopped).await
            });
            (Some(addr), done)
        };
        Running { runtime: Some(runtime), addr, stop: Some(stop), done: Some(done) }
    }

    fn slot(&mut self, process: Process) -> &mut Option<Running> {
        match process {
            Process::Here => &mut self.here,
            _ => &mut self.worker,
        }
    }

    /// SIGKILL: every future of the process dropped where it stands; the steps it was
    /// inside may be taken again.
    fn kill(&mut self, process: Process) {
        let Some(running) = self.slot(process).take() else { return };
        drop(running);
        ledger(|l| {
            let cut: Vec<_> = l
                .under_way
                .iter()
                .filter(|((_, _, who), n)| who.process == process && **n > 0)
                .map(|(k, n)| (k.clone(), *n))
                .collect();
            for ((call, step, who), n) in cut {
                l.under_way.remove(&(call.clone(), step, who));
                *l.cut.entry((call, step)).or_default() += n;
            }
        });
        self.killed = true;
    }

    /// SIGTERM: the process's graceful stop, bounded.
    async fn terminate(&mut self, process: Process) {
        let Some(mut running) = self.slot(process).take() else { return };
        let _ = running.stop.take().map(|stop| stop.send(()));
        let done = running.done.take().expect("running");
        let stopped = tokio::time::timeout(Duration::from_secs(20), done).await;
        stopped.expect("a graceful stop ends within 20 s").expect("no panic").expect("served");
    }

    /// Where a client's request goes: the front end, or the instance when it is up.
    fn target(&self, to_instance: bool) -> SocketAddr {
        match (&self.here, to_instance) {
            (Some(Running { addr: Some(addr), .. }), true) => *addr,
            _ => self.front.addr,
        }
    }

    async fn call(&self, to_instance: bool, rpc: &Rpc) -> Value {
        let headers = rpc.headers();
        let headers: Vec<(&str, &str)> = headers.iter().map(|(n, v)| (n.as_str(), v.as_str())).collect();
        let response = client::send(self.target(to_instance), "POST", &headers, &rpc.body()).await;
        assert_eq!(response.status, 200, "{}", response.body);
        response.reply()
    }

    async fn task(&self, id: &str) -> Value {
        self.front.call(&task_rpc("tasks/get", id)).await["result"].clone()
    }
}

fn build(key: &StateKey, guard: &SharedGuard, store: &Arc<MemoryTaskStore>, who: Who) -> Server {
    let tasks = TaskConfig::default()
        .store(store.clone())
        .run_on_workers(who.process == Process::Front)
        .lease(Duration::from_millis(300));
    Server::new("once-anywhere", "0")
        .tool(flow)
        .with_state(who)
        .tasks(tasks)
        .request_state(StateConfig::new(KeyRing::new(key.clone())).single_use(guard.clone()))
}

fn task_rpc(method: &str, id: &str) -> Rpc {
    Rpc::new(method).param("taskId", json!(id)).caps(task_caps())
}

fn ok() -> Value {
    answer::accept(json!({ "ok": true }))
}

/// A small deterministic generator (xorshift64*), so a failing schedule is named by its seed.
struct Rng(u64);

impl Rng {
    fn below(&mut self, n: usize) -> usize {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        usize::try_from(self.0.wrapping_mul(0x2545_f491_4f6c_dd1d) >> 33).unwrap() % n
    }
}

/// The step a state leads to when answered: `b` after "first", `c` after "second".
fn step_after(asks: &str) -> char {
    if asks == "first" {
        'b'
    } else {
        'c'
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn whatever_runs_a_calls_steps_takes_none_twice() {
    let seeds: u64 = std::env::var("ONCE_ANYWHERE_SEEDS").ok().and_then(|n| n.parse().ok()).unwrap_or(20);
    for seed in 1..=seeds {
        let mut schedule = Schedule::start(seed).await;
        for _ in 0..16 {
            schedule.next().await;
        }
        schedule.settle().await;
        schedule.check();
    }
}

/// One random schedule of one call, and all it saw.
struct Schedule {
    seed: u64,
    rng: Rng,
    deployment: Deployment,
    id: String,
    rpc: Rpc,
    /// Every state seen, with the key it asks.
    states: Vec<(Value, String)>,
    tasks: Vec<String>,
    /// Every refusal, with the step it was refused at.
    refused: Vec<(char, String)>,
    trace: Vec<String>,
}

impl Schedule {
    async fn start(seed: u64) -> Self {
        let deployment = Deployment::start().await;
        let id = format!("anywhere-{seed}");
        let rpc = Rpc::call_tool("flow", json!({ "call": id }));
        let first = deployment.call(false, &rpc.clone().caps(default_caps())).await;
        let states = vec![(first["result"]["requestState"].clone(), "first".to_owned())];
        let rng = Rng(seed.wrapping_mul(0x9e37_79b9_7f4a_7c15) | 1);
        Self { seed, rng, deployment, id, rpc, states, tasks: Vec::new(), refused: Vec::new(), trace: Vec::new() }
    }

    async fn next(&mut self) {
        match self.rng.below(10) {
            0..=4 => self.present().await,
            5 | 6 => {
                if let Some(task) = self.any_task() {
                    self.answer(&task).await;
                }
            }
            7 | 8 => self.fault().await,
            _ => {
                let wait = 20 + 20 * self.rng.below(10) as u64;
                tokio::time::sleep(Duration::from_millis(wait)).await;
                self.trace.push("wait".into());
            }
        }
    }

    fn any_task(&mut self) -> Option<String> {
        (!self.tasks.is_empty()).then(|| self.tasks[self.rng.below(self.tasks.len())].clone())
    }

    /// A presentation of any state seen: answered or not, as a task or a round, to the
    /// front end or the instance.
    async fn present(&mut self) {
        let (state, asks) = self.states[self.rng.below(self.states.len())].clone();
        let (answered, as_task, to_instance) = (self.rng.below(4) > 0, self.rng.below(2) == 0, self.rng.below(3) == 0);
        let mut request = self.rpc.clone().param("requestState", state);
        if answered {
            request = request.param("inputResponses", json!({ asks.as_str(): ok() }));
        }
        let request = request.caps(if as_task { task_caps() } else { default_caps() });
        let reply = self.deployment.call(to_instance, &request).await;
        self.trace.push(format!("present {asks} answered={answered} task={as_task} here={to_instance}"));
        let (seed, result) = (self.seed, &reply["result"]);
        if reply["error"].is_object() {
            assert!(answered, "seed {seed}: a presentation that takes no step was refused: {reply}; {:?}", self.trace);
            assert_eq!(reply["error"]["message"], USED, "seed {seed}: {reply}; {:?}", self.trace);
            self.refused.push((step_after(&asks), format!("a round of {asks}")));
        } else if result["resultType"] == "task" {
            self.tasks.push(result["taskId"].as_str().unwrap().to_owned());
        } else if result["resultType"] == "input_required" {
            let next = result["inputRequests"].as_object().unwrap().keys().next().unwrap().clone();
            self.states.push((result["requestState"].clone(), next));
        }
    }

    /// Answers the task if it waits for an answer.
    async fn answer(&mut self, task: &str) -> bool {
        if self.deployment.task(task).await["status"] != "input_required" {
            return false;
        }
        let update = task_rpc("tasks/update", task).param("inputResponses", json!({ "second": ok() }));
        let answered = self.deployment.front.call(&update).await;
        self.trace.push(format!("update {task}: {}", answered["result"]["resultType"]));
        true
    }

    /// A SIGKILL or a SIGTERM of the instance or the worker (or its restart), often just
    /// after a waiting task was answered, while its run may be inside a step.
    async fn fault(&mut self) {
        let process = if self.rng.below(2) == 0 { Process::Here } else { Process::Worker };
        if let Some(task) = self.any_task().filter(|_| self.rng.below(3) > 0) {
            if self.answer(&task).await {
                tokio::time::sleep(Duration::from_millis(5 * self.rng.below(12) as u64)).await;
            }
        }
        if self.deployment.slot(process).is_none() {
            let started = self.deployment.launch(process);
            *self.deployment.slot(process) = Some(started);
            self.trace.push(format!("start {process:?}"));
        } else if self.rng.below(2) == 0 {
            self.deployment.kill(process);
            self.trace.push(format!("kill {process:?}"));
        } else {
            self.deployment.terminate(process).await;
            self.trace.push(format!("terminate {process:?}"));
        }
    }

    /// Everything up again, and every waiting task answered, until every task has ended.
    async fn settle(&mut self) {
        for process in [Process::Here, Process::Worker] {
            if self.deployment.slot(process).is_none() {
                let started = self.deployment.launch(process);
                *self.deployment.slot(process) = Some(started);
            }
        }
        for task in self.tasks.clone() {
            let mut last = Value::Null;
            for _ in 0..500 {
                last = self.deployment.task(&task).await;
                match last["status"].as_str() {
                    Some("completed" | "failed" | "cancelled") => break,
                    Some("input_required") => {
                        self.answer(&task).await;
                    }
                    _ => tokio::time::sleep(Duration::from_millis(20)).await,
                }
            }
            let (seed, trace) = (self.seed, &self.trace);
            match last["status"].as_str() {
                Some("completed") => {}
                Some("failed") => {
                    let message = last["error"]["message"].as_str().unwrap_or_default().to_owned();
                    let killed = self.deployment.killed;
                    assert!(
                        message == USED || (killed && message.contains("stopped 3 times")),
                        "seed {seed}: task {task} failed: {last}; {trace:?}"
                    );
                    self.refused.push(('c', format!("task {task}")));
                }
                _ => panic!("seed {seed}: task {task} never ended: {last}; {trace:?}"),
            }
        }
    }

    /// No step taken twice but for a kill inside it; no refusal but for a step taken, or
    /// a kill that may have left it claimed.
    fn check(mut self) {
        let (seed, id, trace) = (self.seed, &self.id, &self.trace);
        let (taken, cut) = ledger(|l| {
            let of = |map: &HashMap<(String, char), u32>, step| map.get(&(id.clone(), step)).copied().unwrap_or(0);
            ([of(&l.taken, 'b'), of(&l.taken, 'c')], [of(&l.cut, 'b'), of(&l.cut, 'c')])
        });
        for (n, step) in ['b', 'c'].into_iter().enumerate() {
            assert!(
                taken[n] <= 1 + cut[n],
                "seed {seed}: step {step} taken {} times, {} of them cut by a kill; {trace:?}",
                taken[n],
                cut[n]
            );
        }
        for (step, what) in &self.refused {
            assert!(
                taken[usize::from(*step != 'b')] >= 1 || self.deployment.killed,
                "seed {seed}: {what} was refused at step {step}, which nobody took; {trace:?}"
            );
        }
        let lines = |what: &str| trace.iter().filter(|line| line.starts_with(what)).count();
        eprintln!(
            "seed {seed}: {} presentations, {} tasks, {} refusals, {} kills, {} stops; \
             b taken {} (cut {}), c taken {} (cut {})",
            lines("present"),
            self.tasks.len(),
            self.refused.len(),
            lines("kill"),
            lines("terminate"),
            taken[0],
            cut[0],
            taken[1],
            cut[1]
        );
        self.deployment.kill(Process::Here);
        self.deployment.kill(Process::Worker);
    }
}
