//! Foundations: errors and their codes, small codecs (hex, URI templates, form schemas,
//! tools' generated schemas, kept arguments), who the caller is, deadlines, the in-flight
//! count, random bytes for the hot path and the outgoing HTTPS connector. Names only
//! `protocol`.

pub(crate) mod caller;
pub(crate) mod deadline;
pub(crate) mod error;
pub(crate) mod form_schema;
pub(crate) mod header_values;
pub(crate) mod hex;
#[cfg(any(feature = "jwt", feature = "client"))]
pub(crate) mod https;
pub(crate) mod inflight;
pub(crate) mod kept_arguments;
pub(crate) mod random;
pub(crate) mod tool_schema;
pub(crate) mod uri_template;
