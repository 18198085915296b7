//! Readers for the inputs fairmatch understands. Every error names the file
//! and, where it has one, the line, so a user can go straight to the fault.

pub mod allox_format;
pub mod cluster_yaml;
pub mod gavel_format;
pub mod generate;
pub mod history_import;
pub mod philly_format;
pub mod workload_csv;

use crate::model::{check_seconds, Cluster, Width, MAX_SECONDS};
use std::fmt;
use std::path::Path;

/// What a trace reader does with a job on more than one GPU.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum MultiGpu {
    /// Keep it as a gang ([`gang_width`]).
    #[default]
    Keep,
    /// Leave it out, and count it.
    Drop,
    /// Refuse the trace, naming the line.
    Refuse,
}

/// The width of a job on `gpus` GPUs in `cluster`: on one node if the
/// largest nodes hold it, else spread evenly over as few of them as do
/// ([`Width::spread`]).
pub fn gang_width(gpus: usize, cluster: &Cluster) -> Width {
    let per_node = cluster
        .flavors
        .iter()
        .map(|f| f.per_node)
        .max()
        .unwrap_or(1);
    Width::spread(gpus, per_node)
}

/// An input file that could not be read, and where.
#[derive(Clone, Debug, PartialEq)]
pub struct InputError {
    /// The file's name as the user gave it.
    pub file: String,
    /// 1-based line number, where one applies.
    pub line: Option<usize>,
    /// What is wrong.
    pub message: String,
}

impl InputError {
    /// An error in `file`, at `line` if given.
    pub fn at(file: &str, line: Option<usize>, message: impl Into<String>) -> Self {
        InputError {
            file: file.to_string(),
            line,
            message: message.into(),
        }
    }
}

impl fmt::Display for InputError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.line {
            Some(line) => write!(f, "{}:{}: {}", self.file, line, self.message),
            None => write!(f, "{}: {}", self.file, self.message),
        }
    }
}

impl std::error::Error for InputError {}

/// Reads a whole file as UTF-8, mapping failures to an [`InputError`].
pub fn read_text(path: &Path) -> Result<String, InputError> {
    let name = path.display().to_string();
    let bytes = std::fs::read(path).map_err(|e| InputError::at(&name, None, e.to_string()))?;
    String::from_utf8(bytes).map_err(|e| {
        let line = 1 + e.as_bytes()[..e.utf8_error().valid_up_to()]
            .iter()
            .filter(|&&b| b == b'\n')
            .count();
        InputError::at(&name, Some(line), "not valid UTF-8")
    })
}

/// Parses a time in seconds: a number from 0 to [`MAX_SECONDS`].
pub(crate) fn parse_seconds(text: &str, what: &str) -> Result<f64, String> {
    let value: f64 = text
        .trim()
        .parse()
        .map_err(|_| format!("{what}: '{text}' is not a number"))?;
    if !value.is_finite() || value < 0.0 {
        return Err(format!("{what}: '{text}' must be a finite number >= 0"));
    }
    within_bound(value, what, text)
}

/// A time in seconds (after any scaling: a unit, an error factor) within
/// the model's bound ([`check_seconds`]), reported against the input text.
pub(crate) fn within_bound(seconds: f64, what: &str, text: &str) -> Result<f64, String> {
    check_seconds(seconds, what).map_err(|_| {
        format!(
            "{what}: '{text}' is too large: times are at most {MAX_SECONDS:e} s (about 317 years)"
        )
    })
}
