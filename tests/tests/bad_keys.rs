//! A malformed `MCP_MRTR_STATE_KEYS` fails every way of serving when it starts, never on
//! a client's call. The only test in its binary: it sets the variable for the process.

use mcp_mrtr::http::{Http, HttpConfig};
use mcp_mrtr::stdio::Pipe;
use mcp_mrtr::Server;

#[tokio::test]
async fn malformed_keys_fail_at_start_up_on_every_transport() {
    // Safe here: this binary runs this one test, on one thread, and nothing else reads
    // the environment meanwhile.
    std::env::set_var("MCP_MRTR_STATE_KEYS", "k:not-a-32-byte-secret");
    let server = mcp_mrtr_examples::everything::server;

    let error = server().into_router(HttpConfig::default()).expect_err("the router is not built");
    assert!(error.to_string().contains("MCP_MRTR_STATE_KEYS entry 1"), "{error}");

    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let http = server().serve(Http::listener(listener)).await.expect_err("HTTP does not start");
    assert!(matches!(http, mcp_mrtr::serve::ServeError::Misconfigured(_)), "{http:?}");
    let (_input, server_in) = tokio::io::duplex(64);
    let (server_out, _output) = tokio::io::duplex(64);
    let stdio = server().serve(Pipe::new(server_in, server_out)).await.expect_err("stdio does not start");
    assert!(stdio.to_string().contains("MCP_MRTR_STATE_KEYS"), "{stdio}");

    // Configured in code, the environment is not read at all.
    let configured = mcp_mrtr::testing::with_own_keys(Server::new("fine", "0"));
    assert!(configured.into_router(HttpConfig::default()).is_ok());
}
