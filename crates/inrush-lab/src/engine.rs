//! What the runner needs from a server, whatever its engine: its catalogue (the experiments as
//! they map onto it), the rights of the connected user, server settings changed for a run and
//! put back after it, and one measured run. The runner, the verdicts and the report know
//! nothing else about the engine.
//!
//! PostgreSQL: [`crate::postgres`] (with `measure` and `methods`); MariaDB: [`crate::mariadb`]
//! (its SQL in `inrush_mysql::lab`); ODBC: [`crate::odbc`] (its calls in `inrush_odbc::lab`).

use crate::catalogue::ExperimentDef;
use crate::plan::RunPlan;
use crate::results::Measurement;
use crate::Result;

/// What the connected user may do, as it shapes the runs.
#[derive(Debug, Clone, Default)]
pub struct Rights {
    /// Why server settings (`RunPlan::server`) cannot be changed, e.g. "needs superuser to
    /// ALTER SYSTEM"; `None`: they can.
    pub settings_refused: Option<String>,
    /// Settings that need a restart can be changed (the lab's private PostgreSQL).
    pub restart: bool,
    /// Said in every experiment's notes (a run that starts without a CHECKPOINT, ...).
    pub note: Option<String>,
}

/// One run of a plan, whatever the engine.
#[derive(Debug, Clone, Copy)]
pub struct RunSpec {
    /// Rows to load (the plan's rows at the lab's scale).
    pub rows: u64,
    /// Unique within the lab run; names the run's schema or database.
    pub run_id: u32,
    pub seed: u64,
}

/// A server setting changed for a run, and its value before (`None`: it was not set).
#[derive(Debug, Clone)]
pub struct Saved {
    pub name: String,
    pub previous: Option<String>,
}

pub trait Engine {
    /// What the engine calls its log in the report: "WAL", "redo".
    fn log_name(&self) -> &'static str;
    fn rights(&self) -> &Rights;
    /// Every experiment, with what does not apply to this engine marked with the reason.
    fn catalogue(&self) -> Vec<ExperimentDef>;
    /// Applies the plan's server settings; returns what [`Engine::restore`] puts back.
    fn apply(&self, plan: &RunPlan) -> Result<Vec<Saved>>;
    fn restore(&self, plan: &RunPlan, saved: &[Saved]) -> Result<()>;
    /// Runs the plan once and measures it.
    fn measure(
        &self,
        runtime: &tokio::runtime::Runtime,
        plan: &RunPlan,
        run: RunSpec,
    ) -> Result<Measurement>;
}
