//! Every integration test of scout-host, in one binary (wasmtime's
//! `tests/all` layout): wasmtime, Cranelift and rusqlite are linked once,
//! not once per test file, and one process runs them all. A module per
//! former test file; `connectors` holds one module per connector, with the
//! tests every connector gets generated from its component's own manifest.

mod admin_identity;
mod agent_config;
mod artifacts;
mod author_cli;
mod authoring_languages;
mod authority_audit;
mod boundary;
mod brand_limits;
mod catalogue_surfaces;
mod cold_start;
mod common;
mod config_reference;
mod conformance;
mod connectors;
mod console;
mod container_image;
mod crash_safety;
mod credentials;
mod docs_page;
mod fleet_clients;
mod fleet_faults;
mod graphql_routes;
mod input_required;
mod inspect_cli;
mod kubernetes;
mod languages;
mod linear_py;
mod mcp_serve;
mod notion_ts;
mod operator;
mod operator_roles;
mod plugin_connector;
mod policy_fleet;
mod policy_history;
mod policy_rules;
mod policy_surface;
mod policy_whatif;
mod relay_notices;
mod remote_content;
mod remote_enterprise;
mod remote_idle;
mod remote_mcp;
mod remote_oauth;
mod remote_resume;
mod remote_standalone;
mod reserved_names;
mod runtime_deploy;
mod runtime_settings;
mod serve_admin;
mod serve_capabilities;
mod serve_hosts;
mod shutdown;
mod spend_thresholds;
mod store;
mod store_hosts;
mod surface_cli;
mod telemetry;
mod tls;
mod token_sources;
mod trace_export_cli;
