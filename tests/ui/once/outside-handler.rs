use mcp_mrtr::prelude::*;

async fn plain() -> u64 {
    once!(42)
}

fn main() {
    let _ = plain();
}
