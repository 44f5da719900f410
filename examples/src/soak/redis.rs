//! The soak's own `redis-server`: a free port on 127.0.0.1, a temporary folder, nothing
//! saved (`--save "" --appendonly no`), so a restart comes back empty on the same port.

use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use anyhow::{bail, Context as _};

pub(crate) struct Redis {
    port: u16,
    dir: PathBuf,
    log: PathBuf,
    child: Mutex<Option<Child>>,
}

impl Redis {
    /// Starts one and returns once it accepts connections.
    pub(crate) async fn start(out: &Path) -> anyhow::Result<Self> {
        Command::new("redis-server")
            .arg("--version")
            .stdout(Stdio::null())
            .status()
            .context("redis-server is not installed (Debian: apt-get install redis-server)")?;
        let port = TcpListener::bind("127.0.0.1:0").and_then(|l| l.local_addr()).context("a free port")?.port();
        let dir = std::env::temp_dir().join(format!("mcp-mrtr-soak-redis-{}-{port}", std::process::id()));
        std::fs::create_dir_all(&dir).context("a folder for redis")?;
        let redis = Self { port, dir, log: out.join("redis.log"), child: Mutex::new(None) };
        redis.spawn().await?;
        Ok(redis)
    }

    pub(crate) fn url(&self) -> String {
        format!("redis://127.0.0.1:{}/", self.port)
    }

    pub(crate) fn pid(&self) -> Option<u32> {
        self.child.lock().unwrap_or_else(std::sync::PoisonError::into_inner).as_ref().map(Child::id)
    }

    /// Kills it (SIGKILL: everything it held is gone).
    pub(crate) fn kill(&self) {
        let child = self.child.lock().unwrap_or_else(std::sync::PoisonError::into_inner).take();
        if let Some(mut child) = child {
            let _ = child.kill();
            let _ = child.wait();
        }
    }

    /// Kills it and starts an empty one on the same port; returns once it listens.
    pub(crate) async fn restart(&self) -> anyhow::Result<()> {
        self.kill();
        self.spawn().await
    }

    async fn spawn(&self) -> anyhow::Result<()> {
        let log = std::fs::OpenOptions::new().create(true).append(true).open(&self.log)?;
        let mut child = Command::new("redis-server")
            .args(["--port", &self.port.to_string(), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no"])
            .arg("--dir")
            .arg(&self.dir)
            .stdin(Stdio::null())
            .stdout(log.try_clone()?)
            .stderr(log)
            .spawn()
            .context("start redis-server")?;
        let started = Instant::now();
        while tokio::net::TcpStream::connect(("127.0.0.1", self.port)).await.is_err() {
            if let Ok(Some(status)) = child.try_wait() {
                bail!("redis-server exited before listening: {status}");
            }
            if started.elapsed() > Duration::from_secs(20) {
                let _ = child.kill();
                bail!("redis-server did not listen on {} in time", self.port);
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        *self.child.lock().unwrap_or_else(std::sync::PoisonError::into_inner) = Some(child);
        Ok(())
    }
}

impl Drop for Redis {
    fn drop(&mut self) {
        self.kill();
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}
