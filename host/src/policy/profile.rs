//! Coworker profiles and grants: the limits, the grant (connectors,
//! allowances, bundled skills) and the rules a profile must pass when it is
//! saved. Field names on the wire follow the seed (`runBudgetUsd`,
//! `maxTurns`, `perRunCredits`, ...).
//!
//! The five rules of seed 000, each refusal naming its rule:
//! 1. it asks for a connector tool its grant does not cover;
//! 2. it asks for any tool outside the read table ("a specialist reads and
//!    proposes; it never commits");
//! 3. it grants a connector that bills (DataForSEO or Firecrawl) without an
//!    allowance, or with a per-run figure above the per-day figure;
//! 4. it asks for a skill tool without granting a skill, or names a skill
//!    that is not bundled;
//! 5. it asks for `mcp__seo__seo_hand_off_brief` at delegation depth 0.
//!
//! How rule 2 reads "any tool": built-ins and the platform tools of a
//! coworker (memory, project folder) are not connector tools and pass. A
//! platform tool a coworker never holds (transcripts, goals, team, sandbox,
//! browser, `project_delete`, standing instructions) also passes: the seed
//! says a profile listing `project_delete` "keeps the entry and loses the
//! tool", and the ceiling drops the others the same way. Every connector tool
//! outside the read table, and every name this host does not know, is refused
//! under rule 2.

use std::collections::{BTreeMap, BTreeSet};

use serde::{Deserialize, Serialize};

use super::catalog::{BillingUnit, Catalog, ToolKind};
use super::names::{
    self, GOAL_AGENT_TOOLS, Platform, SEO_HAND_OFF_BRIEF, SEO_METHOD_SKILL, SEO_SAVE_BRIEF,
};

fn one() -> u32 {
    1
}

/// A profile's own limits: the run's dollar and turn caps are these, not the deployment's.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Limits {
    /// Dollars per run; must be above zero.
    pub run_budget_usd: f64,
    /// At least 1.
    pub max_turns: u32,
    /// At least 1.
    pub max_concurrent_runs: u32,
    /// 0 or more; 0 means it may not delegate.
    pub max_delegation_depth: u32,
    /// Optional on the wire, default 1; at least 1.
    #[serde(default = "one")]
    pub max_attempts: u32,
}

impl Limits {
    /// The presets' defaults: $0.50 per run, ten turns, one run at a time, no
    /// delegation, one attempt.
    pub fn preset() -> Limits {
        Limits {
            run_budget_usd: 0.5,
            max_turns: 10,
            max_concurrent_runs: 1,
            max_delegation_depth: 0,
            max_attempts: 1,
        }
    }

    /// Checks the limits' bounds.
    pub fn validate(&self) -> Result<(), ProfileError> {
        if !(self.run_budget_usd.is_finite() && self.run_budget_usd > 0.0) {
            return Err(ProfileError::RunBudget {
                value: self.run_budget_usd,
            });
        }
        if self.max_turns < 1 {
            return Err(ProfileError::MaxTurns);
        }
        if self.max_concurrent_runs < 1 {
            return Err(ProfileError::MaxConcurrentRuns);
        }
        if self.max_attempts < 1 {
            return Err(ProfileError::MaxAttempts);
        }
        Ok(())
    }
}

/// A spending allowance for a connector that bills.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum Allowance {
    /// Firecrawl.
    Credits {
        #[serde(rename = "perRunCredits")]
        per_run_credits: u64,
        #[serde(rename = "perDayCredits")]
        per_day_credits: u64,
    },
    /// DataForSEO.
    Usd {
        #[serde(rename = "perRunUsd")]
        per_run_usd: f64,
        #[serde(rename = "perDayUsd")]
        per_day_usd: f64,
    },
}

/// Micro-dollars in a dollar: the meter counts DataForSEO's USD in micro-USD.
pub(crate) const MICRO_USD_PER_USD: u64 = 1_000_000;

/// Why an allowance's figures cannot be counted by a meter.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum AllowanceFigureError {
    /// NaN, an infinity, or below zero.
    #[error("{figure} must be a finite figure of zero or more")]
    NotFinite { figure: &'static str },
    /// Finer than a micro-dollar, so the meter could not hold it exactly.
    #[error("{figure} is finer than a micro-dollar ($0.000001)")]
    TooFine { figure: &'static str },
    /// Above what the ledger can store.
    #[error("{figure} is above the largest figure the ledger holds ({max} {unit})")]
    TooLarge {
        figure: &'static str,
        max: u64,
        unit: &'static str,
    },
    /// The per-run figure is above the per-day figure.
    #[error("the per-run figure is above the per-day figure")]
    RunAboveDay,
}

impl Allowance {
    /// The unit it is counted in.
    pub fn unit(&self) -> BillingUnit {
        match self {
            Allowance::Credits { .. } => BillingUnit::Credits,
            Allowance::Usd { .. } => BillingUnit::Usd,
        }
    }

    /// The meter's name for its unit: `credits` or `micro-usd`.
    pub(crate) fn meter_unit(&self) -> &'static str {
        match self {
            Allowance::Credits { .. } => "credits",
            Allowance::Usd { .. } => "micro-usd",
        }
    }

    /// The figures in the meter's integer units, losslessly: credits as
    /// credits, dollars as micro-dollars. This is the one conversion between
    /// a grant and a meter; it refuses figures that are not finite, below
    /// zero, finer than a micro-dollar, above what the ledger stores, or a
    /// per-run figure above the per-day one. (A zero per-run figure converts:
    /// such a grant lets nothing be spent.)
    pub fn metered(&self) -> Result<MeteredAllowance, AllowanceFigureError> {
        let max = MAX_UNITS;
        let metered = match *self {
            Allowance::Credits {
                per_run_credits,
                per_day_credits,
            } => {
                for (figure, value) in [
                    ("perRunCredits", per_run_credits),
                    ("perDayCredits", per_day_credits),
                ] {
                    if value > max {
                        return Err(AllowanceFigureError::TooLarge {
                            figure,
                            max,
                            unit: "credits",
                        });
                    }
                }
                MeteredAllowance {
                    per_run: per_run_credits,
                    per_day: per_day_credits,
                }
            }
            Allowance::Usd {
                per_run_usd,
                per_day_usd,
            } => MeteredAllowance {
                per_run: micro_usd("perRunUsd", per_run_usd)?,
                per_day: micro_usd("perDayUsd", per_day_usd)?,
            },
        };
        if metered.per_run > metered.per_day {
            return Err(AllowanceFigureError::RunAboveDay);
        }
        Ok(metered)
    }
}

/// The largest figure a meter accepts: the store keeps amounts as SQLite
/// integers (`i64`).
pub const MAX_UNITS: u64 = i64::MAX as u64;

/// An allowance in a meter's integer units (credits, micro-USD): what
/// [`Allowance::metered`] yields and what the `meter` capability enforces.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct MeteredAllowance {
    /// What one run may spend.
    pub per_run: u64,
    /// What all runs of one day may spend together.
    pub per_day: u64,
}

/// Figures a run cannot start under.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "invalid allowance: per-run {per_run} must be above zero and at most the per-day {per_day} (at most {MAX_UNITS})"
)]
pub struct UnstartableAllowance {
    pub per_run: u64,
    pub per_day: u64,
}

impl MeteredAllowance {
    /// Checks that a run can start under it: a per-run figure above zero,
    /// at most the per-day figure, both within [`MAX_UNITS`].
    pub fn validate(&self) -> Result<(), UnstartableAllowance> {
        if self.per_run == 0 || self.per_run > self.per_day || self.per_day > MAX_UNITS {
            return Err(UnstartableAllowance {
                per_run: self.per_run,
                per_day: self.per_day,
            });
        }
        Ok(())
    }
}

/// Dollars as whole micro-dollars, exactly, or an error naming `figure`.
pub(crate) fn micro_usd(figure: &'static str, usd: f64) -> Result<u64, AllowanceFigureError> {
    if !(usd.is_finite() && usd >= 0.0) {
        return Err(AllowanceFigureError::NotFinite { figure });
    }
    let max = MAX_UNITS;
    let micros = (usd * MICRO_USD_PER_USD as f64).round();
    // `as` saturates; the comparison is on the float, before it.
    if micros > max as f64 {
        return Err(AllowanceFigureError::TooLarge {
            figure,
            max,
            unit: "micro-usd",
        });
    }
    let micros = micros as u64;
    // Lossless: the whole micro-dollars give back the very figure granted.
    if micros as f64 / MICRO_USD_PER_USD as f64 != usd {
        return Err(AllowanceFigureError::TooFine { figure });
    }
    Ok(micros)
}

/// What a person grants a specialist (or the goal agent). Only a person can
/// write a grant; an agent cannot widen its own or another coworker's.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Grant {
    /// Connector server names (`dataforseo`, `searchconsole`, ...).
    #[serde(default)]
    pub connectors: Vec<String>,
    /// Allowances by connector server name.
    #[serde(default)]
    pub allowances: BTreeMap<String, Allowance>,
    /// Bundled skill names.
    #[serde(default)]
    pub skills: Vec<String>,
    /// When the delegation ends (RFC 3339, e.g. `2026-12-03T18:00:00Z`):
    /// from then on every call of a run under it is refused, reads included.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub expires_at: Option<String>,
    /// The most writes and billed calls one run under it may make; the next
    /// one is refused (reads still run).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_effects: Option<u32>,
    /// Who made it: the verified caller that saved it, never what a body says.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub granted_by: Option<String>,
}

impl Grant {
    /// When the delegation ends, in milliseconds since the Unix epoch.
    pub fn expires_at_ms(&self) -> Option<i64> {
        self.expires_at
            .as_deref()
            .and_then(|t| chrono::DateTime::parse_from_rfc3339(t).ok())
            .map(|t| t.timestamp_millis())
    }

    /// Checks `expiresAt` and `maxEffects`.
    fn validate_limits(&self) -> Result<(), ProfileError> {
        if let Some(text) = &self.expires_at
            && chrono::DateTime::parse_from_rfc3339(text).is_err()
        {
            return Err(ProfileError::GrantExpiry {
                value: text.chars().take(64).collect(),
            });
        }
        if self.max_effects == Some(0) {
            return Err(ProfileError::GrantMaxEffects);
        }
        Ok(())
    }
    /// No connector, allowance or skill.
    pub fn is_empty(&self) -> bool {
        self.connectors.is_empty() && self.allowances.is_empty() && self.skills.is_empty()
    }

    /// Whether the grant names `connector`.
    pub(crate) fn names_connector(&self, connector: &str) -> bool {
        self.connectors.iter().any(|c| c == connector)
    }

    /// Whether the grant names `skill`.
    pub(crate) fn names_skill(&self, skill: &str) -> bool {
        self.skills.iter().any(|s| s == skill)
    }

    /// Checks the grant itself: known, grantable connectors (rule 2), an
    /// allowance for each that bills (rule 3), bundled skills (rule 4).
    pub fn validate(&self, catalog: &Catalog) -> Result<(), ProfileError> {
        self.validate_limits()?;
        for name in &self.connectors {
            let Some(c) = catalog.connector(name) else {
                return Err(ProfileError::UnknownConnector {
                    connector: name.clone(),
                });
            };
            if !c.is_grantable() {
                return Err(ProfileError::ConnectorNotGrantable {
                    connector: c.title.clone(),
                });
            }
            if let Some(unit) = c.billing {
                let Some(a) = self.allowances.get(name) else {
                    return Err(ProfileError::MissingAllowance {
                        connector: c.title.clone(),
                    });
                };
                if a.unit() != unit {
                    return Err(ProfileError::AllowanceUnit {
                        connector: c.title.clone(),
                        unit,
                    });
                }
                // Rule 3's figures are checked by the very conversion a
                // meter uses, so a saved grant always meters.
                match a.metered() {
                    Ok(_) => {}
                    Err(AllowanceFigureError::RunAboveDay) => {
                        let (per_run, per_day) = match *a {
                            Allowance::Credits {
                                per_run_credits,
                                per_day_credits,
                            } => (per_run_credits.to_string(), per_day_credits.to_string()),
                            Allowance::Usd {
                                per_run_usd,
                                per_day_usd,
                            } => (format!("${per_run_usd}"), format!("${per_day_usd}")),
                        };
                        return Err(ProfileError::AllowanceRunAboveDay {
                            connector: c.title.clone(),
                            per_run,
                            per_day,
                        });
                    }
                    Err(e) => {
                        return Err(ProfileError::AllowanceInvalid {
                            connector: c.title.clone(),
                            why: e.to_string(),
                        });
                    }
                }
            }
        }
        for skill in &self.skills {
            if !names::is_bundled_skill(skill) {
                return Err(ProfileError::SkillNotBundled {
                    skill: skill.clone(),
                });
            }
        }
        Ok(())
    }
}

/// A saved coworker profile (also the goal agent's and the reviewer's).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Profile {
    pub name: String,
    /// The tools it asks for: bare built-in names and full MCP names.
    pub tools: Vec<String>,
    #[serde(default)]
    pub grant: Grant,
    pub limits: Limits,
}

impl Profile {
    /// Validates a coworker or specialist profile when it is saved: limits,
    /// the grant, and every requested tool against the five rules.
    pub fn validate(&self, catalog: &Catalog) -> Result<(), ProfileError> {
        self.limits.validate()?;
        self.grant.validate(catalog)?;
        for tool in &self.tools {
            self.check_tool(tool, catalog)?;
        }
        Ok(())
    }

    fn check_tool(&self, tool: &str, catalog: &Catalog) -> Result<(), ProfileError> {
        let outside = || ProfileError::OutsideReadTable {
            tool: tool.to_string(),
        };
        let uncovered = |connector: &str| ProfileError::ConnectorNotGranted {
            tool: tool.to_string(),
            connector: catalog
                .connector(connector)
                .map_or_else(|| connector.to_string(), |c| c.title.clone()),
        };
        match catalog.classify(tool) {
            ToolKind::BuiltIn => Ok(()),
            ToolKind::Platform(Platform::Skills, _) => {
                if self.grant.skills.is_empty() {
                    Err(ProfileError::SkillToolWithoutSkill {
                        tool: tool.to_string(),
                        skill: None,
                    })
                } else {
                    Ok(())
                }
            }
            ToolKind::Platform(Platform::Seo, t) => {
                if t == SEO_HAND_OFF_BRIEF && self.limits.max_delegation_depth == 0 {
                    return Err(ProfileError::HandOffWithoutDelegation);
                }
                debug_assert!(t == SEO_SAVE_BRIEF || t == SEO_HAND_OFF_BRIEF);
                if self.grant.names_skill(SEO_METHOD_SKILL) {
                    Ok(())
                } else {
                    Err(ProfileError::SkillToolWithoutSkill {
                        tool: tool.to_string(),
                        skill: Some(SEO_METHOD_SKILL.to_string()),
                    })
                }
            }
            ToolKind::Platform(..) => Ok(()),
            ToolKind::OptIn(o, _) => {
                if self.grant.names_connector(&o.beside) {
                    Ok(())
                } else {
                    Err(uncovered(&o.beside))
                }
            }
            ToolKind::ConnectorRead {
                connector,
                grantable,
                joint,
                ..
            } => {
                if !grantable {
                    return Err(outside());
                }
                let needed: Vec<&str> = match joint {
                    Some(j) => j.reads_from.iter().map(String::as_str).collect(),
                    None => vec![connector.name.as_str()],
                };
                match needed.into_iter().find(|c| !self.grant.names_connector(c)) {
                    Some(missing) => Err(uncovered(missing)),
                    None => Ok(()),
                }
            }
            ToolKind::ConnectorWrite { .. } | ToolKind::Unknown => Err(outside()),
        }
    }

    /// Validates the goal agent's profile (`goalAgentInvariantProblem`): its
    /// fixed tools only, no delegation, no skills, and a grant that passes
    /// the grant rules (read-table connectors, an allowance for any that bills).
    pub(crate) fn validate_goal_agent(&self, catalog: &Catalog) -> Result<(), ProfileError> {
        self.limits.validate()?;
        let fixed: BTreeSet<&str> = GOAL_AGENT_TOOLS.into_iter().collect();
        let asked: BTreeSet<&str> = self.tools.iter().map(String::as_str).collect();
        if let Some(extra) = asked.difference(&fixed).next() {
            return Err(ProfileError::GoalAgentTool {
                tool: extra.to_string(),
            });
        }
        if asked != fixed {
            return Err(ProfileError::GoalAgentSurface);
        }
        if self.limits.max_delegation_depth != 0 {
            return Err(ProfileError::GoalAgentDelegates);
        }
        if !self.grant.skills.is_empty() {
            return Err(ProfileError::GoalAgentSkills);
        }
        self.grant.validate(catalog)
    }

    /// Validates the goal reviewer's profile (`reviewerInvariantProblem`):
    /// no tool, no delegation, no grant.
    pub(crate) fn validate_reviewer(&self) -> Result<(), ProfileError> {
        self.limits.validate()?;
        if !self.tools.is_empty() {
            return Err(ProfileError::ReviewerHasTools {
                count: self.tools.len(),
            });
        }
        if self.limits.max_delegation_depth != 0 {
            return Err(ProfileError::ReviewerDelegates {
                depth: self.limits.max_delegation_depth,
            });
        }
        if !self.grant.is_empty() {
            return Err(ProfileError::ReviewerHasGrant);
        }
        Ok(())
    }
}

/// Why a profile was refused. Each message names the rule it broke.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum ProfileError {
    #[error(
        "grant: expiresAt must be an RFC 3339 time such as 2026-12-03T18:00:00Z (got {value:?})"
    )]
    GrantExpiry { value: String },
    #[error("grant: maxEffects must be at least 1 (leave it out for no limit)")]
    GrantMaxEffects,
    #[error("limits: runBudgetUsd must be above zero (got {value})")]
    RunBudget { value: f64 },
    #[error("limits: maxTurns must be at least 1")]
    MaxTurns,
    #[error("limits: maxConcurrentRuns must be at least 1")]
    MaxConcurrentRuns,
    #[error("limits: maxAttempts must be at least 1")]
    MaxAttempts,
    #[error(
        "rule 1 (a connector tool needs its connector in the grant): {tool} needs {connector}, which the grant does not name"
    )]
    ConnectorNotGranted { tool: String, connector: String },
    #[error(
        "rule 2 (only tools in the read table; a specialist reads and proposes, it never commits): {tool} is outside the read table"
    )]
    OutsideReadTable { tool: String },
    #[error(
        "rule 2 (only tools in the read table): {connector} has no tool in the read table and cannot be granted"
    )]
    ConnectorNotGrantable { connector: String },
    #[error("grant: no connector named {connector} is known to this host")]
    UnknownConnector { connector: String },
    #[error(
        "rule 3 (a connector that bills needs an allowance): {connector} is granted without an allowance"
    )]
    MissingAllowance { connector: String },
    #[error(
        "rule 3 (a connector that bills needs an allowance): {connector}'s allowance must be counted in {unit:?}"
    )]
    AllowanceUnit {
        connector: String,
        unit: BillingUnit,
    },
    #[error(
        "rule 3 (a connector that bills needs an allowance): {connector}'s allowance cannot be metered: {why}"
    )]
    AllowanceInvalid { connector: String, why: String },
    #[error(
        "rule 3 (a connector that bills needs an allowance whose per-run figure is not above its per-day figure): {connector} allows {per_run} per run but {per_day} per day"
    )]
    AllowanceRunAboveDay {
        connector: String,
        per_run: String,
        per_day: String,
    },
    #[error("rule 4 (a skill tool needs a granted skill): {tool} is asked for, but the grant names {}", match .skill { Some(s) => format!("no {s} skill"), None => "no skill".to_string() })]
    SkillToolWithoutSkill { tool: String, skill: Option<String> },
    #[error("rule 4 (only bundled skills): {skill} is not a bundled skill")]
    SkillNotBundled { skill: String },
    #[error(
        "rule 5 (handing off a brief needs delegation): mcp__seo__seo_hand_off_brief is asked for at maxDelegationDepth 0"
    )]
    HandOffWithoutDelegation,
    #[error("goal agent: {tool} is outside its fixed tools")]
    GoalAgentTool { tool: String },
    #[error("goal agent: its profile must ask for exactly its fixed tools")]
    GoalAgentSurface,
    #[error("goal agent: it may not delegate")]
    GoalAgentDelegates,
    #[error("goal agent: its grant may not name skills")]
    GoalAgentSkills,
    #[error("goal reviewer: a reviewer has no tools, and this profile asks for {count}")]
    ReviewerHasTools { count: usize },
    #[error("goal reviewer: a reviewer may not delegate (maxDelegationDepth {depth})")]
    ReviewerDelegates { depth: u32 },
    #[error("goal reviewer: a reviewer has no grant")]
    ReviewerHasGrant,
}

impl ProfileError {
    /// The numbered rule of seed 000 this refusal falls under, if any.
    pub fn rule(&self) -> Option<u8> {
        match self {
            ProfileError::ConnectorNotGranted { .. } => Some(1),
            ProfileError::OutsideReadTable { .. } | ProfileError::ConnectorNotGrantable { .. } => {
                Some(2)
            }
            ProfileError::MissingAllowance { .. }
            | ProfileError::AllowanceUnit { .. }
            | ProfileError::AllowanceInvalid { .. }
            | ProfileError::AllowanceRunAboveDay { .. } => Some(3),
            ProfileError::SkillToolWithoutSkill { .. } | ProfileError::SkillNotBundled { .. } => {
                Some(4)
            }
            ProfileError::HandOffWithoutDelegation => Some(5),
            _ => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn metered_is_lossless_and_refuses_what_a_meter_cannot_hold() {
        let usd = |per_run_usd, per_day_usd| {
            Allowance::Usd {
                per_run_usd,
                per_day_usd,
            }
            .metered()
        };
        let m = usd(1.0, 3.0).unwrap();
        assert_eq!((m.per_run, m.per_day), (1_000_000, 3_000_000));
        assert_eq!(usd(0.123456, 0.5).unwrap().per_run, 123_456);
        assert_eq!(usd(0.1, 0.1).unwrap().per_run, 100_000);
        assert!(matches!(
            usd(0.1234567, 1.0),
            Err(AllowanceFigureError::TooFine {
                figure: "perRunUsd"
            })
        ));
        assert!(matches!(
            usd(f64::NAN, 1.0),
            Err(AllowanceFigureError::NotFinite { .. })
        ));
        assert!(matches!(
            usd(1.0, f64::INFINITY),
            Err(AllowanceFigureError::NotFinite {
                figure: "perDayUsd"
            })
        ));
        assert!(matches!(
            usd(-0.5, 1.0),
            Err(AllowanceFigureError::NotFinite { .. })
        ));
        assert!(matches!(
            usd(1.0, 1e15),
            Err(AllowanceFigureError::TooLarge { .. })
        ));
        assert!(matches!(
            usd(2.0, 1.0),
            Err(AllowanceFigureError::RunAboveDay)
        ));
        let credits = Allowance::Credits {
            per_run_credits: 25,
            per_day_credits: 100,
        }
        .metered()
        .unwrap();
        assert_eq!((credits.per_run, credits.per_day), (25, 100));
        let huge = Allowance::Credits {
            per_run_credits: 1,
            per_day_credits: u64::MAX,
        }
        .metered();
        assert!(matches!(huge, Err(AllowanceFigureError::TooLarge { .. })));
        assert_eq!(
            Allowance::Usd {
                per_run_usd: 1.0,
                per_day_usd: 1.0
            }
            .meter_unit(),
            "micro-usd"
        );
    }

    #[test]
    fn wire_names_follow_the_seed() {
        let json = r#"{
            "name": "r",
            "tools": ["Read"],
            "grant": {"connectors": ["firecrawl"], "allowances": {"firecrawl": {"perRunCredits": 25, "perDayCredits": 100}}},
            "limits": {"runBudgetUsd": 0.5, "maxTurns": 10, "maxConcurrentRuns": 1, "maxDelegationDepth": 0}
        }"#;
        let p: Profile = serde_json::from_str(json).unwrap();
        assert_eq!(p.limits.max_attempts, 1);
        assert_eq!(
            p.grant.allowances["firecrawl"],
            Allowance::Credits {
                per_run_credits: 25,
                per_day_credits: 100
            }
        );
        let usd: Allowance =
            serde_json::from_str(r#"{"perRunUsd": 1.0, "perDayUsd": 3.0}"#).unwrap();
        assert_eq!(usd.unit(), BillingUnit::Usd);
        let back: Profile = serde_json::from_str(&serde_json::to_string(&p).unwrap()).unwrap();
        assert_eq!(back, p);
        assert!(p.validate(&Catalog::seed()).is_ok());
    }
}
