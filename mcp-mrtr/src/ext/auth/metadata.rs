//! Protected resource metadata (RFC 9728): the document that tells a client which
//! authorization servers issue tokens for this resource, and where it lives.

use axum::http::Uri;
use serde_json::{json, Value};

use super::ResourceServer;

/// The well-known suffix of RFC 9728 §3.
const WELL_KNOWN: &str = "/.well-known/oauth-protected-resource";

/// Why `resource` cannot be a canonical resource URI, if it cannot.
pub(super) fn check_resource(resource: &str) -> Result<(), &'static str> {
    if resource.contains('#') {
        return Err("must not have a fragment");
    }
    let uri: Uri = resource.parse().map_err(|_| "is not a URI")?;
    if !matches!(uri.scheme_str(), Some("http" | "https")) || uri.authority().is_none() {
        return Err("must be an absolute http(s) URI, such as https://mcp.example.com/mcp");
    }
    if uri.query().is_some() {
        return Err("must not have a query");
    }
    Ok(())
}

/// The path of the metadata document: the well-known suffix inserted before the
/// resource's path (`https://h/mcp` → `/.well-known/oauth-protected-resource/mcp`).
pub(super) fn path(resource: &str) -> String {
    let uri: Uri = resource.parse().unwrap_or_default();
    let resource_path = uri.path().trim_end_matches('/');
    format!("{WELL_KNOWN}{resource_path}")
}

/// The absolute URL of the metadata document, as the `resource_metadata` of a challenge.
pub(super) fn url(resource: &str) -> String {
    let uri: Uri = resource.parse().unwrap_or_default();
    let scheme = uri.scheme_str().unwrap_or("https");
    let authority = uri.authority().map_or("", |a| a.as_str());
    format!("{scheme}://{authority}{}", path(resource))
}

/// The document: the configured fields, and as `scopes_supported` the configured scopes
/// followed by those the handlers declare.
pub(super) fn document(config: &ResourceServer, declared: &[String]) -> Value {
    let mut scopes: Vec<&String> = config.scopes.iter().collect();
    scopes.extend(declared.iter().filter(|s| !config.scopes.contains(s)));
    let mut document = json!({
        "resource": config.resource,
        "authorization_servers": config.authorization_servers,
        "bearer_methods_supported": ["header"],
    });
    if !scopes.is_empty() {
        document["scopes_supported"] = json!(scopes);
    }
    if let Some(name) = &config.resource_name {
        document["resource_name"] = json!(name);
    }
    document
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_well_known_uri_follows_the_resource_path() {
        assert_eq!(path("https://mcp.example.com/mcp"), "/.well-known/oauth-protected-resource/mcp");
        assert_eq!(path("http://127.0.0.1:3000/v1/mcp/"), "/.well-known/oauth-protected-resource/v1/mcp");
        assert_eq!(path("https://mcp.example.com"), "/.well-known/oauth-protected-resource");
        assert_eq!(url("http://127.0.0.1:3000/mcp"), "http://127.0.0.1:3000/.well-known/oauth-protected-resource/mcp");
    }

    #[test]
    fn only_absolute_http_uris_without_query_or_fragment_are_resources() {
        assert!(check_resource("https://mcp.example.com/mcp").is_ok());
        for bad in ["/mcp", "mcp.example.com/mcp", "ftp://h/mcp", "https://h/mcp#x", "https://h/mcp?a=1", "http://"] {
            assert!(check_resource(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn scopes_supported_lists_configured_then_declared_scopes_once() {
        let config = ResourceServer::new("https://h/mcp", ["https://as"]).scopes(["notes:read"]);
        let document = document(&config, &["notes:read".into(), "notes:write".into()]);
        assert_eq!(document["scopes_supported"], json!(["notes:read", "notes:write"]));
        assert_eq!(document["authorization_servers"], json!(["https://as"]));
        assert_eq!(document["resource"], "https://h/mcp");
        let bare = super::document(&ResourceServer::new("https://h/mcp", ["https://as"]), &[]);
        assert!(bare.get("scopes_supported").is_none());
    }
}
