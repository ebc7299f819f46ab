//! Options only some engines carry out. Each engine names those it carries out, in one table
//! ([`crate::Target::supports`]), with what it does instead of some others; one rule refuses
//! every other, before anything is read or changed, with exit 2 and one sentence. An option an
//! engine does not name is refused: a new engine carries out nothing it has not said it does.

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
    /// Every feature, for the refusal to go through (a new one is added here too).
    pub const ALL: [Feature; 7] = [
        Feature::Text,
        Feature::DateStyle,
        Feature::DisableTriggers,
        Feature::FastUnsafe,
        Feature::Route,
        Feature::Prepare,
        Feature::Stage,
    ];

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

/// What an engine carries out of the [`Feature`]s, and, for some it does not, what it does
/// instead or which engines have them (a sentence).
#[derive(Debug, Clone, Copy)]
pub struct Support {
    /// The engine as users name it, for the refusal of an option it says nothing about.
    pub engine: &'static str,
    pub carries: &'static [Feature],
    pub instead: &'static [(Feature, &'static str)],
}

/// Refuses the first option of `opts` that the engine does not carry out.
pub fn refuse(support: &Support, opts: &LoadOptions) -> Result<()> {
    let Some(feature) = Feature::ALL
        .into_iter()
        .find(|f| f.asked(opts) && !support.carries.contains(f))
    else {
        return Ok(());
    };
    let why = match support.instead.iter().find(|(f, _)| *f == feature) {
        Some((_, why)) => why.to_string(),
        None => format!("not carried out on {}", support.engine),
    };
    Err(Error::Usage(format!("{}: {why}", feature.option())))
}

#[cfg(test)]
mod tests {
    use super::*;

    const SUPPORT: Support = Support {
        engine: "Nothing",
        carries: &[Feature::FastUnsafe],
        instead: &[(Feature::Route, "no partitions here")],
    };

    #[test]
    fn only_an_option_asked_for_and_not_carried_out_is_refused_and_the_refusal_names_it() {
        let mut opts = LoadOptions::new("in.csv", "t");
        assert!(refuse(&SUPPORT, &opts).is_ok());
        opts.plan.fast_unsafe = true;
        assert!(refuse(&SUPPORT, &opts).is_ok(), "carried out");
        opts.routing = PartitionRouting::Server;
        let err = refuse(&SUPPORT, &opts).unwrap_err();
        assert_eq!(err.kind(), crate::Kind::Usage);
        assert_eq!(err.to_string(), "--route: no partitions here");
    }

    #[test]
    fn an_option_the_engine_says_nothing_about_is_refused() {
        let mut opts = LoadOptions::new("in.csv", "t");
        opts.plan.disable_triggers = true;
        let err = refuse(&SUPPORT, &opts).unwrap_err();
        assert_eq!(
            err.to_string(),
            "--disable-triggers: not carried out on Nothing"
        );
    }
}
