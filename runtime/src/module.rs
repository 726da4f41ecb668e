//! placeholder
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct ModuleKey;
pub struct Module;
