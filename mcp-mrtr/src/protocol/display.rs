//! How a tool, prompt, resource or server is shown to a person: its `title` and its
//! `icons` (SEP-973).

use serde::{Deserialize, Serialize};

/// An image a client may show beside a tool, prompt, resource or server (SEP-973).
///
/// `src` is an `https:` URL or a `data:` URI. Hosts that show icons take PNG and JPEG, and
/// most SVG and WebP; one of the same origin as the server, or inline, is the safe choice.
///
/// ```
/// use mcp_mrtr::protocol::{Icon, Theme, Tool};
///
/// let tool = Tool::new("deploy")
///     .icon(Icon::new("https://ops.example.com/icons/deploy.svg").mime_type("image/svg+xml").size("any"))
///     .icon(Icon::new("https://ops.example.com/icons/deploy-dark.png").size("48x48").theme(Theme::Dark));
/// assert_eq!(tool.icons.len(), 2);
/// ```
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct Icon {
    /// Where the image is: an `https:` URL or a `data:` URI.
    pub src: String,
    /// Its type, where `src` does not say (`image/png`, `image/svg+xml`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mime_type: Option<String>,
    /// The sizes it fits, `"48x48"` or `"any"` (for SVG); none: any size.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub sizes: Vec<String>,
    /// The background it is drawn for; none: either.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub theme: Option<Theme>,
}

impl Icon {
    /// The image at `src`.
    pub fn new(src: impl Into<String>) -> Self {
        Self { src: src.into(), mime_type: None, sizes: Vec::new(), theme: None }
    }

    /// Says its type.
    pub fn mime_type(mut self, mime_type: impl Into<String>) -> Self {
        self.mime_type = Some(mime_type.into());
        self
    }

    /// Adds a size it fits: `"48x48"`, or `"any"`.
    pub fn size(mut self, size: impl Into<String>) -> Self {
        self.sizes.push(size.into());
        self
    }

    /// Says the background it is drawn for.
    pub fn theme(mut self, theme: Theme) -> Self {
        self.theme = Some(theme);
        self
    }
}

/// The background an [`Icon`] is drawn for.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Theme {
    /// A light background.
    Light,
    /// A dark background.
    Dark,
}

/// The title a name reads as when none is given: its words, split at `_`, `-`, `.`, `/`,
/// spaces and changes of case, the first capitalized and the rest in lower case unless
/// written all in capitals (`get_forecast` → "Get forecast", `listOpenPRs` → "List open
/// PRs", `HTTPStatus` → "HTTP status"). Hosts show a tool's title where a person picks
/// it, and some drop a tool that has none.
pub(crate) fn title_from_name(name: &str) -> String {
    let mut words: Vec<String> = Vec::new();
    let mut word = String::new();
    let chars: Vec<char> = name.chars().collect();
    for (i, &c) in chars.iter().enumerate() {
        if matches!(c, '_' | '-' | '.' | '/' | ' ') {
            words.extend((!word.is_empty()).then(|| std::mem::take(&mut word)));
            continue;
        }
        let previous = i.checked_sub(1).map(|p| chars[p]);
        let lower_at = |at: usize| chars.get(at).is_some_and(|c| c.is_lowercase());
        // A plural's `s` ends its capitals ("PRs"), and does not start a word with the last.
        let plural = chars.get(i + 1) == Some(&'s') && !lower_at(i + 2);
        // A new word at lower→Upper ("listOpen"), and at the last capital of a run that
        // a lower-case letter follows ("HTTPStatus": "HTTP", "Status").
        let starts = c.is_uppercase()
            && previous.is_some_and(|p| {
                p.is_lowercase() || p.is_ascii_digit() || (p.is_uppercase() && lower_at(i + 1) && !plural)
            });
        if starts && !word.is_empty() {
            words.push(std::mem::take(&mut word));
        }
        word.push(c);
    }
    words.extend((!word.is_empty()).then_some(word));
    let shown = words.iter().enumerate().map(|(i, word)| {
        let letters = word.strip_suffix('s').unwrap_or(word);
        let acronym =
            letters.chars().filter(|c| c.is_alphabetic()).count() > 1 && !letters.chars().any(char::is_lowercase);
        match (i, acronym) {
            (_, true) => word.clone(),
            (0, false) => {
                let lower = word.to_lowercase();
                let mut chars = lower.chars();
                chars.next().map_or_else(String::new, |first| first.to_uppercase().chain(chars).collect())
            }
            _ => word.to_lowercase(),
        }
    });
    let title = shown.collect::<Vec<_>>().join(" ");
    if title.is_empty() {
        name.to_owned()
    } else {
        title
    }
}

/// The builder methods of what a person is shown: a title and icons.
macro_rules! shown {
    ($($shown:ty),*) => {$(
        impl $shown {
            /// Sets the title a person is shown (instead of the one read from the name).
            pub fn title(mut self, title: impl Into<String>) -> Self {
                self.title = Some(title.into());
                self
            }

            /// Leaves the title out: hosts show the name.
            pub fn without_title(mut self) -> Self {
                self.title = None;
                self
            }

            /// Adds an icon (SEP-973).
            pub fn icon(mut self, icon: Icon) -> Self {
                self.icons.push(icon);
                self
            }
        }
    )*};
}

shown!(super::Tool, super::Prompt, super::Resource, super::ResourceTemplate);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_name_reads_as_its_words() {
        for (name, title) in [
            ("get_forecast", "Get forecast"),
            ("getForecast", "Get forecast"),
            ("listOpenPRs", "List open PRs"),
            ("HTTPStatus", "HTTP status"),
            ("math.add", "Math add"),
            ("test-dynamic_tool", "Test dynamic tool"),
            ("deploy", "Deploy"),
            ("v2Search", "V2 search"),
            ("README", "README"),
            ("Weather report", "Weather report"),
            ("x", "X"),
            ("__", "__"),
        ] {
            assert_eq!(title_from_name(name), title, "{name}");
        }
    }

    #[test]
    fn an_icon_has_the_wire_shape_of_sep_973() {
        let icon = Icon::new("data:image/png;base64,AA==").size("16x16").size("32x32").theme(Theme::Light);
        let json = serde_json::to_value(&icon).unwrap();
        assert_eq!(
            json,
            serde_json::json!({"src": "data:image/png;base64,AA==", "sizes": ["16x16", "32x32"], "theme": "light"})
        );
        assert_eq!(serde_json::from_value::<Icon>(json).unwrap(), icon);
    }
}
