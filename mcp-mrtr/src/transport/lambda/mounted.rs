//! The path a request reaches the function at, as the router serves it. API Gateway adds to
//! the path what the function never sees as its own: a named stage (`/prod/mcp`: always on
//! a REST API, where `lambda_http` puts the stage back in front of the event's path, and in
//! an HTTP API's `rawPath`), and a custom domain's base path (`/tools/mcp` on a REST API).
//! Read as they come, every such deployment answered 404. The event also says where the
//! function was mounted, so no setting is needed: a REST API's resource (`/{proxy+}` with
//! its parameters, or `/mcp`) is the path without stage or base path, and an HTTP API's stage
//! is the segment to take off. Function URLs and load balancers send the path as it is.

use lambda_http::http::uri::{PathAndQuery, Uri};
use lambda_http::request::RequestContext;
use lambda_http::RequestExt;

/// `request` with the path its event says the function was mounted at; unchanged when the
/// event says nothing more (a Function URL, an ALB, an HTTP API's `$default` stage) or the
/// path it gives is not one a URI can hold.
pub(super) fn as_mounted(mut request: lambda_http::Request) -> lambda_http::Request {
    let Some(path) = mounted_path(&request) else { return request };
    if path == request.uri().path() {
        return request;
    }
    let with_query = match request.uri().query() {
        Some(query) => format!("{path}?{query}"),
        None => path,
    };
    let Ok(path_and_query) = with_query.parse::<PathAndQuery>() else { return request };
    let mut parts = request.uri().clone().into_parts();
    parts.path_and_query = Some(path_and_query);
    if let Ok(uri) = Uri::from_parts(parts) {
        *request.uri_mut() = uri;
    }
    request
}

fn mounted_path(request: &lambda_http::Request) -> Option<String> {
    match request.request_context_ref()? {
        // A REST API (or an HTTP API's payload 1.0): the resource, whatever the stage or
        // base path; an HTTP API's `$default` route has no resource path to read.
        RequestContext::ApiGatewayV1(context) => context
            .resource_path
            .as_deref()
            .and_then(|resource| filled(resource, |name| request.path_parameters().first(name).map(str::to_owned)))
            .or_else(|| without_stage(request.uri().path(), context.stage.as_deref())),
        RequestContext::ApiGatewayV2(context) => without_stage(request.uri().path(), context.stage.as_deref()),
        _ => None,
    }
}

/// `resource` (`/{proxy+}`, `/api/{id}`, `/mcp`) with each `{name}` or `{name+}` replaced by
/// its parameter; `None` unless it is a path (`$default` is not) and every parameter is given.
fn filled(resource: &str, parameter: impl Fn(&str) -> Option<String>) -> Option<String> {
    if !resource.starts_with('/') {
        return None;
    }
    let mut path = String::with_capacity(resource.len());
    let mut rest = resource;
    while let Some(open) = rest.find('{') {
        let close = open + rest[open..].find('}')?;
        let name = rest[open + 1..close].trim_end_matches('+');
        path.push_str(&rest[..open]);
        path.push_str(&parameter(name)?);
        rest = &rest[close + 1..];
    }
    path.push_str(rest);
    Some(path)
}

/// `path` without a named stage's leading segment (`/prod/mcp` is `/mcp` on stage `prod`);
/// `None` on the `$default` stage, which adds none, or when the path does not start with it.
fn without_stage(path: &str, stage: Option<&str>) -> Option<String> {
    let stage = stage.filter(|stage| !stage.is_empty() && *stage != "$default")?;
    let rest = path.strip_prefix('/')?.strip_prefix(stage)?;
    match rest {
        "" => Some("/".to_owned()),
        rest if rest.starts_with('/') => Some(rest.to_owned()),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_resource_is_filled_with_its_parameters() {
        let proxy = |name: &str| (name == "proxy").then(|| "mcp".to_owned());
        assert_eq!(filled("/{proxy+}", proxy).as_deref(), Some("/mcp"));
        assert_eq!(filled("/api/{proxy+}", proxy).as_deref(), Some("/api/mcp"));
        assert_eq!(filled("/mcp", proxy).as_deref(), Some("/mcp"));
        assert_eq!(filled("/{other}", proxy), None, "a parameter the event does not give");
        assert_eq!(filled("$default", proxy), None, "not a path");
        assert_eq!(filled("/{proxy", proxy), None, "an unclosed brace");
    }

    #[test]
    fn only_a_named_stage_at_the_start_is_taken_off() {
        assert_eq!(without_stage("/prod/mcp", Some("prod")).as_deref(), Some("/mcp"));
        assert_eq!(without_stage("/prod", Some("prod")).as_deref(), Some("/"));
        assert_eq!(without_stage("/mcp/mcp", Some("mcp")).as_deref(), Some("/mcp"));
        assert_eq!(without_stage("/mcp", Some("$default")), None);
        assert_eq!(without_stage("/mcp", None), None);
        assert_eq!(without_stage("/production/mcp", Some("prod")), None, "a segment, not a prefix");
        assert_eq!(without_stage("/mcp", Some("mcp")).as_deref(), Some("/"));
    }
}
