//! The protocol's request methods as one table: each method's name, the revisions that
//! have it, what `Mcp-Name` mirrors, how its span is named and whether its complete
//! results carry caching hints. Everything that knows a method
//! by name (dispatch, the MCP header check, telemetry, the 2025-11-25 session utilities,
//! the reserved names of a server's own methods) reads it from here.

/// A protocol revision a request is served in: how it asks (rounds, or requests to the
/// client through the bridge) and which methods it has.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Era {
    /// 2025-11-25: sessions; a server asks its client with requests of its own.
    Legacy,
    /// 2026-07-28: stateless; a handler asks by answering `input_required`.
    Modern,
}

impl Era {
    /// The revision's protocol version string.
    pub(crate) fn version(self) -> &'static str {
        match self {
            Self::Legacy => "2025-11-25",
            Self::Modern => super::PROTOCOL_VERSION,
        }
    }
}

/// A request method of the protocol or of an extension the crate implements.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Method {
    Initialize,
    Ping,
    Discover,
    ToolsList,
    ToolsCall,
    PromptsList,
    PromptsGet,
    ResourcesList,
    ResourceTemplatesList,
    ResourcesRead,
    ResourcesSubscribe,
    ResourcesUnsubscribe,
    Complete,
    LoggingSetLevel,
    Listen,
    TasksGet,
    TasksUpdate,
    TasksCancel,
    /// Removed in 2026-07-28 (unknown there, `-32601`); still reserved for a server's own methods.
    TasksList,
    /// Removed in 2026-07-28, as `tasks/list`.
    TasksResult,
}

/// Which revisions have a method.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Revisions {
    Both,
    LegacyOnly,
    ModernOnly,
    /// Neither this crate's 2025-11-25 bridge nor 2026-07-28: a name kept from use.
    Neither,
}

impl Method {
    /// Every method, in the order of the table below.
    pub(crate) const ALL: [Self; 20] = [
        Self::Initialize,
        Self::Ping,
        Self::Discover,
        Self::ToolsList,
        Self::ToolsCall,
        Self::PromptsList,
        Self::PromptsGet,
        Self::ResourcesList,
        Self::ResourceTemplatesList,
        Self::ResourcesRead,
        Self::ResourcesSubscribe,
        Self::ResourcesUnsubscribe,
        Self::Complete,
        Self::LoggingSetLevel,
        Self::Listen,
        Self::TasksGet,
        Self::TasksUpdate,
        Self::TasksCancel,
        Self::TasksList,
        Self::TasksResult,
    ];

    /// The table: name, revisions, the param `Mcp-Name` mirrors.
    const fn row(self) -> (&'static str, Revisions, Option<&'static str>) {
        use Revisions::{Both, LegacyOnly, ModernOnly, Neither};
        match self {
            Self::Initialize => ("initialize", LegacyOnly, None),
            Self::Ping => ("ping", LegacyOnly, None),
            Self::Discover => ("server/discover", ModernOnly, None),
            Self::ToolsList => ("tools/list", Both, None),
            Self::ToolsCall => ("tools/call", Both, Some("name")),
            Self::PromptsList => ("prompts/list", Both, None),
            Self::PromptsGet => ("prompts/get", Both, Some("name")),
            Self::ResourcesList => ("resources/list", Both, None),
            Self::ResourceTemplatesList => ("resources/templates/list", Both, None),
            Self::ResourcesRead => ("resources/read", Both, Some("uri")),
            Self::ResourcesSubscribe => ("resources/subscribe", LegacyOnly, None),
            Self::ResourcesUnsubscribe => ("resources/unsubscribe", LegacyOnly, None),
            Self::Complete => ("completion/complete", Both, None),
            Self::LoggingSetLevel => ("logging/setLevel", LegacyOnly, None),
            Self::Listen => ("subscriptions/listen", ModernOnly, None),
            Self::TasksGet => ("tasks/get", ModernOnly, Some("taskId")),
            Self::TasksUpdate => ("tasks/update", ModernOnly, Some("taskId")),
            Self::TasksCancel => ("tasks/cancel", ModernOnly, Some("taskId")),
            Self::TasksList => ("tasks/list", Neither, None),
            Self::TasksResult => ("tasks/result", Neither, None),
        }
    }

    /// The method's name on the wire.
    pub(crate) fn name(self) -> &'static str {
        self.row().0
    }

    /// The method named `name`, if the protocol has one.
    pub(crate) fn parse(name: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|method| method.name() == name)
    }

    /// Whether requests of `era` have this method.
    pub(crate) fn is_in(self, era: Era) -> bool {
        match self.row().1 {
            Revisions::Both => true,
            Revisions::LegacyOnly => era == Era::Legacy,
            Revisions::ModernOnly => era == Era::Modern,
            Revisions::Neither => false,
        }
    }

    /// The params field the `Mcp-Name` header mirrors, for the methods that require it.
    pub(crate) fn name_field(self) -> Option<&'static str> {
        self.row().2
    }

    /// Whether complete results carry caching hints: discovery, the lists and resource
    /// reads, whose answers depend on the catalog rather than on the call.
    pub(crate) fn is_cacheable(self) -> bool {
        matches!(
            self,
            Self::Discover
                | Self::ToolsList
                | Self::PromptsList
                | Self::ResourcesList
                | Self::ResourceTemplatesList
                | Self::ResourcesRead
        )
    }

    /// Whether the request's span is named `{method} {name}`, as the OpenTelemetry
    /// conventions name a tool's or prompt's SERVER span (resource URIs are too many to
    /// name spans by). Only OpenTelemetry names spans.
    #[cfg(feature = "opentelemetry")]
    pub(crate) fn names_span_by_target(self) -> bool {
        matches!(self, Self::ToolsCall | Self::PromptsGet)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_name_parses_back_to_its_method_and_names_are_unique() {
        for method in Method::ALL {
            assert_eq!(Method::parse(method.name()), Some(method), "{method:?}");
        }
        let mut names: Vec<_> = Method::ALL.iter().map(|m| m.name()).collect();
        names.sort_unstable();
        names.dedup();
        assert_eq!(names.len(), Method::ALL.len());
        assert_eq!(Method::parse("tools/Call"), None);
    }

    #[test]
    fn the_revisions_differ_where_the_spec_does() {
        assert!(Method::Discover.is_in(Era::Modern) && !Method::Discover.is_in(Era::Legacy));
        assert!(Method::Ping.is_in(Era::Legacy) && !Method::Ping.is_in(Era::Modern));
        assert!(Method::ToolsCall.is_in(Era::Legacy) && Method::ToolsCall.is_in(Era::Modern));
        assert!(!Method::TasksList.is_in(Era::Modern) && !Method::TasksResult.is_in(Era::Legacy));
    }

    #[test]
    fn mcp_name_mirrors_the_target_of_the_methods_that_have_one() {
        let mirrored: Vec<_> = Method::ALL.into_iter().filter(|m| m.name_field().is_some()).collect();
        let targeted = [Method::ToolsCall, Method::PromptsGet, Method::ResourcesRead];
        assert_eq!(mirrored, [&targeted[..], &[Method::TasksGet, Method::TasksUpdate, Method::TasksCancel]].concat());
        assert_eq!(Method::ResourcesRead.name_field(), Some("uri"));
        assert_eq!(Method::TasksCancel.name_field(), Some("taskId"));
        assert_eq!(Method::ToolsList.name_field(), None);
    }
}
