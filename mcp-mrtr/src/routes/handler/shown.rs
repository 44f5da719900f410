//! What a person is shown of a route: its title and icons, set on the route as the
//! protocol builders set them on a `Tool` (for a route `#[tool]` made:
//! `deploy().icon(Icon::new(…))`).

use super::{PromptRoute, ResourceKind, ResourceRoute, ToolRoute};
use crate::protocol::Icon;

/// Where a route keeps what is shown.
trait Shown {
    fn shown(&mut self) -> (&mut Option<String>, &mut Vec<Icon>);
}

impl Shown for ToolRoute {
    fn shown(&mut self) -> (&mut Option<String>, &mut Vec<Icon>) {
        (&mut self.tool.title, &mut self.tool.icons)
    }
}

impl Shown for PromptRoute {
    fn shown(&mut self) -> (&mut Option<String>, &mut Vec<Icon>) {
        (&mut self.prompt.title, &mut self.prompt.icons)
    }
}

impl Shown for ResourceRoute {
    fn shown(&mut self) -> (&mut Option<String>, &mut Vec<Icon>) {
        match &mut self.kind {
            ResourceKind::Static(resource) => (&mut resource.title, &mut resource.icons),
            ResourceKind::Template(template, _) => (&mut template.title, &mut template.icons),
        }
    }
}

macro_rules! shown_methods {
    ($($route:ty),*) => {$(
        impl $route {
            /// Sets the title a person is shown (by default read from the name: `get_forecast`
            /// reads "Get forecast").
            pub fn title(mut self, title: impl Into<String>) -> Self {
                *self.shown().0 = Some(title.into());
                self
            }

            /// Leaves the title out: hosts show the name.
            pub fn without_title(mut self) -> Self {
                *self.shown().0 = None;
                self
            }

            /// Adds an icon (SEP-973).
            pub fn icon(mut self, icon: Icon) -> Self {
                self.shown().1.push(icon);
                self
            }
        }
    )*};
}

shown_methods!(ToolRoute, PromptRoute, ResourceRoute);
