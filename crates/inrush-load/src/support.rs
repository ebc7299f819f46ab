//! Options only some engines carry out. Each engine lists what it lacks, and why, in one
//! table ([`crate::Target::lacks`]); one rule refuses them, before anything is read or
//! changed, with exit 2 and the same sentence whatever the engine.

use crate::{Error, LoadOptions, PartitionRouting, Result};

/// An option some engine cannot carry out.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Feature {
    /// `--text`: the rows as text, not the engine's binary form.
    Text,
    /// `--datestyle`: the order in which the session reads `01/02/2024`.
    DateStyle,
    /// `--disable-triggers`.
    DisableTriggers,
    /// `--fast-unsafe`: the database's own safety traded for speed.
    FastUnsafe,
    /// `--route client|server`: who finds each row's partition.
    Route,
    /// `--prepare`: a task of a distributed write, its transactions left prepared.
    Prepare,
    /// `--stage`: a task of a distributed write, its rows committed into a table of its own.
    Stage,
}

impl Feature {
    /// As the user writes it.
    pub fn option(self) -> &'static str {
        match self {
            Feature::Text => "--text",
            Feature::DateStyle => "--datestyle",
            Feature::DisableTriggers => "--disable-triggers",
            Feature::FastUnsafe => "--fast-unsafe",
            Feature::Route => "--route",
            Feature::Prepare => "--prepare",
            Feature::Stage => "--stage",
        }
    }

    /// Whether `opts` asks for it.
    pub fn asked(self, opts: &LoadOptions) -> bool {
        match self {
            Feature::Text => opts.force_text,
            Feature::DateStyle => opts.date_order.is_some(),
            Feature::DisableTriggers => opts.plan.disable_triggers,
            Feature::FastUnsafe => opts.plan.fast_unsafe,
            Feature::Route => opts.routing != PartitionRouting::Auto,
            Feature::Prepare => opts.prepare.as_ref().is_some_and(|p| !p.staged),
            Feature::Stage => opts.prepare.as_ref().is_some_and(|p| p.staged),
        }
    }
}

/// What an engine cannot do, each with why (a sentence that says what the engine does
/// instead, or which engines have it).
pub type Lacks = &'static [(Feature, &'static str)];

/// Refuses the first option of `opts` that the engine `lacks`.
pub fn refuse(lacks: Lacks, opts: &LoadOptions) -> Result<()> {
    match lacks.iter().find(|(feature, _)| feature.asked(opts)) {
        Some((feature, why)) => Err(Error::Usage(format!("{}: {why}", feature.option()))),
        None => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const LACKS: Lacks = &[
        (Feature::Text, "rows are always text here"),
        (Feature::Route, "no partitions here"),
    ];

    #[test]
    fn only_an_option_asked_for_is_refused_and_the_refusal_names_it() {
        let mut opts = LoadOptions::new("in.csv", "t");
        assert!(refuse(LACKS, &opts).is_ok());
        opts.plan.fast_unsafe = true;
        assert!(refuse(LACKS, &opts).is_ok(), "not lacked");
        opts.routing = PartitionRouting::Server;
        let err = refuse(LACKS, &opts).unwrap_err();
        assert_eq!(err.kind(), crate::Kind::Usage);
        assert_eq!(err.to_string(), "--route: no partitions here");
    }
}
