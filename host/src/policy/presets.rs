//! The coworker setup screen's eight starting points, and the fixed profiles
//! of the goal agent and the goal reviewer. A preset is a profile a person
//! can still edit before saving.
//!
//! Presets default to $0.50 per run, one run at a time, no delegation and ten
//! turns; the SEO analyst may delegate one level so it can hand a brief to the
//! Content writer, and the Content writer is not given `project_write`.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use super::names::{GOAL_AGENT_TOOLS, READ_ONLY_BUILTINS, WRITER_TOOLS};
use super::profile::{Allowance, Grant, Limits, Profile};

/// One of the eight presets.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Preset {
    Researcher,
    DataAnalyst,
    Writer,
    StoreAssistant,
    MarketingAssistant,
    PaidTrafficManager,
    SeoAnalyst,
    ContentWriter,
}

/// The SEO analyst's DataForSEO allowance: $1 per run, $3 per day.
pub(crate) const SEO_DATAFORSEO_ALLOWANCE: Allowance = Allowance::Usd {
    per_run_usd: 1.0,
    per_day_usd: 3.0,
};
/// The researcher's Firecrawl allowance: 25 credits per run, 100 per day.
pub(crate) const RESEARCHER_FIRECRAWL_ALLOWANCE: Allowance = Allowance::Credits {
    per_run_credits: 25,
    per_day_credits: 100,
};

impl Preset {
    /// All eight, in the seed's order.
    pub const ALL: [Preset; 8] = [
        Preset::Researcher,
        Preset::DataAnalyst,
        Preset::Writer,
        Preset::StoreAssistant,
        Preset::MarketingAssistant,
        Preset::PaidTrafficManager,
        Preset::SeoAnalyst,
        Preset::ContentWriter,
    ];

    /// The name on the setup screen.
    pub fn title(self) -> &'static str {
        match self {
            Preset::Researcher => "Researcher",
            Preset::DataAnalyst => "Data analyst",
            Preset::Writer => "Writer",
            Preset::StoreAssistant => "Store assistant",
            Preset::MarketingAssistant => "Marketing assistant",
            Preset::PaidTrafficManager => "Paid traffic manager",
            Preset::SeoAnalyst => "SEO analyst",
            Preset::ContentWriter => "Content writer",
        }
    }

    /// The preset as an editable profile.
    ///
    /// The seed grants the Marketing assistant DataForSEO without stating an
    /// allowance, and rule 3 refuses a billing connector without one; the
    /// preset carries the SEO analyst's figures ($1 per run, $3 per day) so
    /// that it can be saved as offered.
    pub fn profile(self) -> Profile {
        let mut tools: Vec<String> = READ_ONLY_BUILTINS.iter().map(|s| s.to_string()).collect();
        tools.push("mcp__project__project_list".into());
        tools.push("mcp__project__project_read".into());
        if !matches!(self, Preset::SeoAnalyst | Preset::ContentWriter) {
            tools.push("mcp__project__project_write".into());
        }
        let mut limits = Limits::preset();
        let (connectors, allowances, skills): (&[&str], Vec<(&str, Allowance)>, &[&str]) =
            match self {
                Preset::Researcher => (
                    &["firecrawl"],
                    vec![("firecrawl", RESEARCHER_FIRECRAWL_ALLOWANCE)],
                    &[],
                ),
                Preset::DataAnalyst | Preset::Writer => (&[], vec![], &[]),
                Preset::StoreAssistant => (&["shopify"], vec![], &[]),
                Preset::MarketingAssistant => (
                    &["dataforseo", "googleads", "analytics", "searchconsole"],
                    vec![("dataforseo", SEO_DATAFORSEO_ALLOWANCE)],
                    &[],
                ),
                Preset::PaidTrafficManager => (
                    &["googleads", "analytics", "searchconsole", "shopify"],
                    vec![],
                    &["ppc-method", "ppc-honesty"],
                ),
                Preset::SeoAnalyst => {
                    limits.max_delegation_depth = 1;
                    tools.push("mcp__seo__seo_save_brief".into());
                    tools.push("mcp__seo__seo_hand_off_brief".into());
                    (
                        &["dataforseo", "searchconsole", "analytics", "shopify"],
                        vec![("dataforseo", SEO_DATAFORSEO_ALLOWANCE)],
                        // "seo-method and its data skills": the data skills are
                        // not named by the seed (see `names::BUNDLED_SKILLS`).
                        &["seo-method"],
                    )
                }
                Preset::ContentWriter => {
                    tools.extend(WRITER_TOOLS.iter().map(|t| format!("mcp__writer__{t}")));
                    (
                        &["shopify"],
                        vec![],
                        &[
                            "voice-guide",
                            "product-content",
                            "product-page-seo",
                            "humanizer",
                        ],
                    )
                }
            };
        Profile {
            name: self.title().into(),
            tools,
            grant: Grant {
                connectors: connectors.iter().map(|s| s.to_string()).collect(),
                allowances: allowances
                    .into_iter()
                    .map(|(k, v)| (k.to_string(), v))
                    .collect::<BTreeMap<_, _>>(),
                skills: skills.iter().map(|s| s.to_string()).collect(),
                ..Default::default()
            },
            limits,
        }
    }
}

/// The built-in goal agent (`goal-agent`): its fixed tools, the connector grant
/// a person gave it under Goals, Advanced (empty for none), $0.50 per step,
/// ten turns, one at a time, no delegation, at most two attempts.
pub fn goal_agent(grant: Grant) -> Profile {
    Profile {
        name: "goal-agent".into(),
        tools: GOAL_AGENT_TOOLS.iter().map(|s| s.to_string()).collect(),
        grant,
        limits: Limits {
            run_budget_usd: 0.5,
            max_turns: 10,
            max_concurrent_runs: 1,
            max_delegation_depth: 0,
            max_attempts: 2,
        },
    }
}

/// The goal reviewer: no tools, no delegation, no grant; $0.10 per review,
/// two turns, one at a time, one attempt.
pub fn goal_reviewer() -> Profile {
    Profile {
        name: "goal-reviewer".into(),
        tools: Vec::new(),
        grant: Grant::default(),
        limits: Limits {
            run_budget_usd: 0.1,
            max_turns: 2,
            max_concurrent_runs: 1,
            max_delegation_depth: 0,
            max_attempts: 1,
        },
    }
}
