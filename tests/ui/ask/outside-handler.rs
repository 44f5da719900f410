use mcp_mrtr::prelude::*;

async fn plain() -> usize {
    ask!(roots).len()
}

fn main() {
    let _ = plain();
}
