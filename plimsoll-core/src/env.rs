//! Reading configuration: a variable's description ([`Var`]), strict reads
//! through an injected lookup ([`Env`]) and the error that names the variable
//! at fault ([`ConfigError`]). A leaf: every module that reads its own
//! settings uses this and nothing else of configuration.

/// A variable the core reads, for `-h` and docs.
#[derive(Debug, Clone, Copy)]
pub struct Var {
    /// The name.
    pub name: &'static str,
    /// The default, in words.
    pub default: &'static str,
    /// What it means.
    pub help: &'static str,
}

/// A configuration error: the variable and what is wrong with it. Never holds a secret's value.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{variable}: {message}")]
pub struct ConfigError {
    /// The variable at fault.
    pub variable: &'static str,
    /// What is wrong.
    pub message: String,
}

impl ConfigError {
    /// An error for `variable`.
    pub fn new(variable: &'static str, message: impl Into<String>) -> ConfigError {
        ConfigError {
            variable,
            message: message.into(),
        }
    }
}

/// Reads variables through an injected lookup (the process environment, or a
/// map in tests). A set-but-empty variable reads as unset.
pub struct Env<'a> {
    get: &'a dyn Fn(&str) -> Option<String>,
}

impl<'a> Env<'a> {
    /// Reads through `get`.
    pub fn new(get: &'a dyn Fn(&str) -> Option<String>) -> Env<'a> {
        Env { get }
    }

    /// The raw value, trimmed; `None` when unset or empty.
    pub fn get(&self, name: &'static str) -> Option<String> {
        (self.get)(name)
            .map(|v| v.trim().to_owned())
            .filter(|v| !v.is_empty())
    }

    /// Any variable by name (a grant profile's secret); trimmed, `None` when unset or empty.
    /// Unlike [`Env::get`] the name is not one of plimsoll's own.
    pub fn get_any(&self, name: &str) -> Option<String> {
        (self.get)(name)
            .map(|v| v.trim().to_owned())
            .filter(|v| !v.is_empty())
    }

    /// A non-negative integer.
    pub fn u32(&self, name: &'static str) -> Result<Option<u32>, ConfigError> {
        self.get(name)
            .map(|v| {
                v.parse::<u32>().map_err(|_| {
                    ConfigError::new(name, format!("{v:?} is not a non-negative integer"))
                })
            })
            .transpose()
    }

    /// A finite non-negative number.
    pub fn f64(&self, name: &'static str) -> Result<Option<f64>, ConfigError> {
        self.get(name)
            .map(|v| match v.parse::<f64>() {
                Ok(f) if f.is_finite() && f >= 0.0 => Ok(f),
                _ => Err(ConfigError::new(
                    name,
                    format!("{v:?} is not a finite non-negative number"),
                )),
            })
            .transpose()
    }

    /// A boolean: unset, `0` or `false` is false; `1` or `true` is true; anything else is an error.
    pub fn bool(&self, name: &'static str) -> Result<bool, ConfigError> {
        match self.get(name).as_deref() {
            None | Some("0") | Some("false") => Ok(false),
            Some("1") | Some("true") => Ok(true),
            Some(v) => Err(ConfigError::new(
                name,
                format!("{v:?} is not a boolean (0, 1, false, true)"),
            )),
        }
    }
}
