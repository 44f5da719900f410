//! [`RoundTripStore`]: a measuring aid, not a store to deploy. It keeps task records in
//! memory like [`MemoryTaskStore`], and waits for one round trip to Redis (a `PING` on
//! a connection of its own) before each call. A store that keeps records in another
//! process cannot cost less per call than that wait, so `examples/bench/flows.py redis`
//! runs the fixture with it (`MCP_MRTR_BENCH_ROUND_TRIP`) to show how much of the Redis
//! store's cost is the wait and how much is the store's own work.

use std::sync::{Mutex, PoisonError};
use std::time::SystemTime;

use mcp_mrtr::tasks::{BoxFuture, MemoryTaskStore, StoreError, TaskRecord, TaskStore};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

/// The in-memory store, one Redis round trip before each call.
pub struct RoundTripStore {
    records: MemoryTaskStore,
    /// `host:port` of the Redis to ping.
    redis: String,
    /// Connections between calls: each call takes one for itself, as a pool would.
    idle: Mutex<Vec<TcpStream>>,
}

impl RoundTripStore {
    /// Pings the Redis at `redis` (`host:port`) before each call.
    pub fn new(redis: impl Into<String>) -> Self {
        Self { records: MemoryTaskStore::new(), redis: redis.into(), idle: Mutex::new(Vec::new()) }
    }

    async fn round_trip(&self) -> Result<(), StoreError> {
        let failed =
            |error: std::io::Error| StoreError::new(format!("the round trip to {} failed: {error}", self.redis));
        let idle = self.idle.lock().unwrap_or_else(PoisonError::into_inner).pop();
        let mut connection = if let Some(connection) = idle {
            connection
        } else {
            let connection = TcpStream::connect(&self.redis).await.map_err(failed)?;
            connection.set_nodelay(true).map_err(failed)?;
            connection
        };
        connection.write_all(b"PING\r\n").await.map_err(failed)?;
        let mut reply = [0; 7];
        connection.read_exact(&mut reply).await.map_err(failed)?;
        if &reply != b"+PONG\r\n" {
            return Err(StoreError::new(format!(
                "{} answered PING with {:?}",
                self.redis,
                String::from_utf8_lossy(&reply)
            )));
        }
        self.idle.lock().unwrap_or_else(PoisonError::into_inner).push(connection);
        Ok(())
    }
}

impl TaskStore for RoundTripStore {
    fn create(&self, record: TaskRecord) -> BoxFuture<'_, Result<(), StoreError>> {
        Box::pin(async move {
            self.round_trip().await?;
            self.records.create(record).await
        })
    }

    fn get<'a>(&'a self, id: &'a str) -> BoxFuture<'a, Result<Option<TaskRecord>, StoreError>> {
        Box::pin(async move {
            self.round_trip().await?;
            self.records.get(id).await
        })
    }

    fn replace(&self, expected: u64, record: TaskRecord) -> BoxFuture<'_, Result<bool, StoreError>> {
        Box::pin(async move {
            self.round_trip().await?;
            self.records.replace(expected, record).await
        })
    }

    /// Asked once a second by each instance: not part of a flow, so not delayed.
    fn lapsed(&self, now: SystemTime, limit: usize) -> BoxFuture<'_, Result<Vec<String>, StoreError>> {
        self.records.lapsed(now, limit)
    }
}
