//! The values an application gives its server, one per type (`Server::with_state`),
//! which handlers take as `State<T>` (`extract`). Kept apart from `extract` so that the
//! request context can carry them without knowing the extractors.

use std::any::{type_name, Any, TypeId};
use std::collections::HashMap;
use std::fmt;
use std::sync::Arc;

/// The application state a server was given: one value per type.
#[derive(Clone, Default)]
pub(crate) struct StateValues {
    values: Arc<HashMap<TypeId, Arc<dyn Any + Send + Sync>>>,
}

impl StateValues {
    pub(crate) fn insert<T: Send + Sync + 'static>(&mut self, value: T) {
        Arc::make_mut(&mut self.values).insert(TypeId::of::<T>(), Arc::new(value));
    }

    pub(crate) fn get<T: Send + Sync + 'static>(&self) -> Option<Arc<T>> {
        self.values.get(&TypeId::of::<T>()).cloned().and_then(|value| value.downcast::<T>().ok())
    }

    pub(crate) fn has(&self, need: &StateNeed) -> bool {
        self.values.contains_key(&need.type_id)
    }
}

impl fmt::Debug for StateValues {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "StateValues({} values)", self.values.len())
    }
}

/// A state type a handler takes, checked when the server starts serving.
#[derive(Clone, Copy, Debug)]
pub(crate) struct StateNeed {
    pub(crate) type_id: TypeId,
    pub(crate) type_name: &'static str,
}

impl StateNeed {
    pub(crate) fn of<T: 'static>() -> Self {
        Self { type_id: TypeId::of::<T>(), type_name: type_name::<T>() }
    }
}
