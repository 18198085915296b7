//! The planner's learned state on disk: `StateSaveLocation/fairmatch_state`,
//! written atomically (a new file, synced, renamed over the old one, the
//! directory synced), so a crash leaves the old file or the new one, never
//! a mix. A file that is torn or altered anyway is refused whole by
//! `slurm::saved_state` and logged; the planner then starts from nothing.

use crate::slurm::planner::Planner;
use std::fs::{self, File};
use std::io::Write;
use std::path::{Path, PathBuf};

/// The file's name in `StateSaveLocation`.
pub const FILE_NAME: &str = "fairmatch_state";

/// Seconds between saves while the planner learns (and at shutdown).
pub const SAVE_EVERY: f64 = 30.0;

/// Where the state goes, and when it last went there.
pub struct StateFile {
    path: PathBuf,
    saved_at: Option<f64>,
}

impl StateFile {
    /// The state file in `dir`; `None` for an empty directory name.
    pub fn in_dir(dir: &str) -> Option<Self> {
        (!dir.is_empty()).then(|| StateFile {
            path: Path::new(dir).join(FILE_NAME),
            saved_at: None,
        })
    }

    /// Loads the saved state into `planner`, logging what it took or why
    /// it took nothing.
    pub fn restore(&self, planner: &mut Planner) {
        match fs::read_to_string(&self.path) {
            Ok(text) => match planner.restore(&text) {
                Ok(summary) => log::info!("restored {summary} from {}", self.path.display()),
                Err(e) => log::warn!(
                    "ignoring {}: {e}; learned run times and service start from nothing",
                    self.path.display()
                ),
            },
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                log::info!("no {} yet; nothing learned to restore", self.path.display());
            }
            Err(e) => log::warn!("cannot read {}: {e}", self.path.display()),
        }
    }

    /// Saves `planner`'s state if [`SAVE_EVERY`] passed since the last save
    /// (or `force`), `now` being the snapshot's time.
    pub fn save_if_due(&mut self, planner: &Planner, now: f64, force: bool) {
        if !force
            && self
                .saved_at
                .is_some_and(|t| now - t < SAVE_EVERY && now >= t)
        {
            return;
        }
        self.saved_at = Some(now);
        if let Err(e) = write_atomically(&self.path, planner.saved_state().as_bytes()) {
            log::warn!("cannot save {}: {e}", self.path.display());
        }
    }
}

fn write_atomically(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    let new = path.with_extension("new");
    let mut f = File::create(&new)?;
    f.write_all(bytes)?;
    f.sync_all()?;
    drop(f);
    fs::rename(&new, path)?;
    if let Some(dir) = path.parent() {
        File::open(dir)?.sync_all()?;
    }
    Ok(())
}
