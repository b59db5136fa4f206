//! How a host starts: the store opened (and its lease given back if a
//! later step refuses), the artifacts pulled, every connector loaded and
//! admitted, then each service built from its own constructor, in the
//! order their handles are handed on.

use super::{Host, ReleaseOnFailure};
use crate::boundary::Boundary;
use crate::config::{ConfigFileError, ServeConfig, StartError};
use crate::connections::Connections;
use crate::credentials::{ResolverConfig, Tokens};
use crate::deployment::{Deployment, HttpPrepared, Roster, SharedRoster};
use crate::deployments::{Deployments, DeploymentsConfig, FileSettings};
use crate::grant::{Grants, GrantsConfig};
use crate::host::policies::PolicyChangeError;
use crate::policy::Switches;
use crate::policy::operator_roles::OperatorRoles;
use crate::runtime::{Runtime, RuntimeConfig, default_cache_dir};
use crate::sessions::Sessions;
use parking_lot::RwLock;
use std::sync::Arc;

impl<E> Host<E> {
    /// Opens the store, pulls the artifacts, loads every connector and
    /// builds each service. `env` looks up the secrets the configuration
    /// names (pass [`crate::credentials::process_env`]). A start refused
    /// after the store registered this host gives its lease back.
    pub fn start(
        mut config: ServeConfig,
        switches: Switches,
        env: impl Fn(&str) -> Option<String>,
    ) -> Result<Host<E>, StartError> {
        let key_text = env(&config.store_key_env).ok_or_else(|| {
            StartError::MissingSecret(
                config.store_key_env.clone(),
                "the store key (64 hex digits)",
            )
        })?;
        let key = crate::config::parse_store_key(&key_text)
            .map_err(|e| StartError::BadSecret(format!("{}: {e}", config.store_key_env)))?;

        let store = crate::store::open(
            config.store_location(),
            &env,
            crate::store::Access::ReadWrite,
        )?;
        // From here the store holds this host's lease: a start refused below
        // gives it back, so the others do not count a lost host.
        let release_on_failure = ReleaseOnFailure(Some(store.clone()));
        // Artifacts are pulled and verified before anything is compiled.
        crate::deployment::resolve_artifacts(
            &mut config,
            store.as_ref(),
            &crate::artifact::ArtifactCache::default_location(),
        )
        .map_err(|(name, e)| StartError::Connector {
            name,
            message: e.to_string(),
        })?;
        let runtime = Runtime::new(RuntimeConfig {
            cache_dir: default_cache_dir(),
            max_concurrent_calls: config.max_concurrent_calls,
            ..Default::default()
        })
        .map_err(StartError::Runtime)?;
        let Deployment {
            catalog,
            components,
            platform,
            not_offered,
            remote,
            host_env,
            public,
        } = Deployment::from_config(&runtime, &config, &env, store.as_ref()).map_err(
            |refused| StartError::Connector {
                name: refused.name,
                message: refused.message,
            },
        )?;
        let operator_roles = Arc::new(operator_roles(&config, &catalog)?);
        let tokens = Arc::new(tokens(&config, &env)?);
        let resolver_config = Arc::new(ResolverConfig {
            deployment_owner_brand: config.deployment_owner_brand.clone(),
            host_env,
            public,
            broker: tokens.has_broker(),
            ..Default::default()
        });
        let roster: SharedRoster = Arc::new(RwLock::new(Arc::new(Roster {
            platform: platform.clone(),
            not_offered: not_offered.clone(),
            resolver: resolver_config,
            ..roster_of(&config, &env)
        })));

        let connections = Connections::new(store.clone(), key, roster.clone());
        let hosted = components
            .keys()
            .filter(|c| !not_offered.contains_key(*c) && !platform.contains(*c))
            .cloned();
        let metrics = Arc::new(crate::metrics::Metrics::new(
            config.max_concurrent_calls,
            store.writer_metrics(),
        ));
        let host_id = store
            .host()
            .unwrap_or_else(|| format!("{}-{}", config.listen, std::process::id()));
        let telemetry = crate::telemetry::Telemetry::from_env(&host_id, &env)?.map(Arc::new);
        let mut boundary = Boundary::new(store.clone(), catalog, switches)
            .measured_by(metrics.clone())
            .with_connections(connections.resolved())
            .hosting(hosted)
            .sealing_arguments(key)
            .pausing_after(config.pause_after_repeated_denials)
            .asking_above(spend_thresholds(&config));
        if config.require_review {
            boundary = boundary.require_review();
        }
        if let Some(telemetry) = &telemetry {
            boundary = boundary.exported_to(telemetry.clone());
        }
        let boundary = Arc::new(boundary);
        // Shared by the grants and the deployments, which change it at runtime.
        let remote: crate::deployments::SharedRemote = Arc::new(RwLock::new(remote));
        let grants = Grants::new(GrantsConfig {
            store: store.clone(),
            ledger: store.clone(),
            key,
            resolutions: connections.resolution_cache(),
            tokens,
            roster: roster.clone(),
            boundary: boundary.clone(),
            metrics: metrics.clone(),
            remote: remote.clone(),
        });
        let sessions = Sessions::new(
            store.clone(),
            std::time::Duration::from_secs(config.session_ttl_secs),
            metrics.clone(),
        );
        let deployments = Arc::new(Deployments::new(DeploymentsConfig {
            store: store.clone(),
            boundary: boundary.clone(),
            runtime,
            components,
            remote,
            roster,
            resolutions: connections.resolution_cache(),
            file: FileSettings::of(&config),
        }));
        let policies = Arc::new(crate::host::policies::FleetPolicies::new(
            config.policy.docs()?,
            store.clone(),
            boundary.clone(),
            deployments.clone(),
        ));
        crate::store::block(policies.apply_at_start()).map_err(|e| {
            StartError::Config(ConfigFileError::Invalid(match e {
                PolicyChangeError::Invalid(errors) => format!(
                    "policy.files: the policies do not validate against this deployment's schema:\n{errors}"
                ),
                e => format!("operator policies: {e}"),
            }))
        })?;
        release_on_failure.disarm();
        Ok(Host {
            config,
            deployments,
            store,
            metrics,
            telemetry,
            connections,
            key,
            boundary,
            sessions,
            grants,
            operator_roles,
            policies,
        })
    }
}

/// The operator's roles (`[roles.NAME]`), each ceiling checked against
/// what this deployment serves: a name that matches nothing stops the start.
fn operator_roles(
    config: &ServeConfig,
    catalog: &crate::policy::Catalog,
) -> Result<OperatorRoles, StartError> {
    let invalid = |e: String| StartError::Config(ConfigFileError::Invalid(e));
    let roles = OperatorRoles::from_config(&config.roles).map_err(invalid)?;
    let remote = config
        .connectors
        .iter()
        .filter(|(_, c)| c.mcp.is_some())
        .map(|(name, _)| name.clone())
        .collect();
    roles.check_ceilings(catalog, &remote).map_err(invalid)?;
    Ok(roles)
}

/// The token service: the broker configured where its secret is set.
fn tokens(
    config: &ServeConfig,
    env: &impl Fn(&str) -> Option<String>,
) -> Result<Tokens, StartError> {
    let broker = match env(&config.token_broker.secret_env) {
        Some(secret) => Some(crate::credentials::tokens::BrokerConfig {
            url: config
                .token_broker
                .parsed_url()
                .map_err(|e| StartError::Config(ConfigFileError::Invalid(e)))?,
            secret: crate::credentials::Secret::new(secret),
            allow_private_network: config.token_broker.allow_private_network,
        }),
        None => None,
    };
    Tokens::new(
        broker,
        std::time::Duration::from_secs(config.token_timeout_secs),
    )
    .map_err(|e| StartError::Config(ConfigFileError::Invalid(e)))
}

/// The connectors' settings as the file gives them, and each one's HTTP
/// handle prepared once.
fn roster_of(config: &ServeConfig, env: &impl Fn(&str) -> Option<String>) -> Roster {
    Roster {
        settings: config
            .connectors
            .iter()
            .map(|(name, settings)| (name.clone(), Arc::new(settings.clone())))
            .collect(),
        http: config
            .connectors
            .iter()
            .map(|(name, settings)| {
                let prepared = HttpPrepared::of(settings, env);
                (name.clone(), Arc::new(prepared))
            })
            .collect(),
        ..Default::default()
    }
}

/// Person chat's per-call spend threshold of each connector that has one,
/// in its meter's unit (checked when the configuration was read).
fn spend_thresholds(config: &ServeConfig) -> Vec<(String, u64)> {
    config
        .connectors
        .iter()
        .filter_map(|(name, c)| Some((name.clone(), c.spend_threshold()?)))
        .collect()
}
