//! The permissions page cannot drift from the code: it is regenerated here
//! and compared with the committed `docs/permissions.md`, every offered tool
//! name of every role must appear in it, and the catalogue's entry for each
//! connector built here must be exactly what its component declares. The
//! connectors page (`docs/connectors.md`: tools, gates, WITHHELD lists,
//! imports, fixture provenance) is regenerated and compared the same way.

use scout_host::docs::{connectors_page, permissions_page, scenarios};
use scout_host::policy::{self, Catalog, Switches};
use scout_host::{Runtime, RuntimeConfig};
use std::path::{Path, PathBuf};

fn github_manifest() -> (scout_host::ComponentInfo, Runtime) {
    let runtime = Runtime::new(RuntimeConfig {
        max_concurrent_calls: 1,
        ..Default::default()
    })
    .unwrap();
    let info = runtime
        .inspect_file(Path::new(scout_tests::components::GITHUB))
        .unwrap();
    (info, runtime)
}

/// Every connector component: the workspace's, built from Rust by
/// `scout-tests`, and those in other languages, built by `scout-host build`.
fn connector_components() -> Vec<String> {
    scout_tests::components::CONNECTORS
        .iter()
        .map(|p| p.to_string())
        .chain(
            crate::common::language_connectors()
                .iter()
                .map(|(_, p)| p.display().to_string()),
        )
        .collect()
}

/// Every connector component's manifest and imports.
fn connector_manifests() -> Vec<scout_host::ComponentInfo> {
    let runtime = Runtime::new(RuntimeConfig {
        max_concurrent_calls: 1,
        ..Default::default()
    })
    .unwrap();
    connector_components()
        .iter()
        .map(|path| runtime.inspect_file(Path::new(path)).unwrap())
        .collect()
}

fn committed_page() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../docs/permissions.md")
}

/// The command that regenerates both pages from the components built here.
fn regenerate_command() -> String {
    let args: Vec<String> = connector_components()
        .iter()
        .map(|p| format!("--component {p}"))
        .collect();
    format!("cargo run -p scout-host -- docs {}", args.join(" "))
}

#[test]
fn the_committed_page_is_what_the_code_generates() {
    let infos = connector_manifests();
    let manifests: Vec<&scout_manifest::Manifest> = infos.iter().map(|i| &i.manifest).collect();
    let generated = permissions_page(&Catalog::seed(), &manifests);
    let committed =
        std::fs::read_to_string(committed_page()).expect("docs/permissions.md is committed");
    assert!(
        committed == generated,
        "docs/permissions.md is stale: run `{}`",
        regenerate_command()
    );
}

#[test]
fn the_committed_connectors_page_is_what_the_code_generates() {
    let infos = connector_manifests();
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let generated = connectors_page(
        &Catalog::seed(),
        &infos.iter().collect::<Vec<_>>(),
        &root.join("connectors"),
    );
    let committed = std::fs::read_to_string(root.join("docs/connectors.md"))
        .expect("docs/connectors.md is committed");
    assert!(
        committed == generated,
        "docs/connectors.md is stale: run `{}` (from the repository root)",
        regenerate_command()
    );
    // Every connector built here has its section, and every fixture file
    // of every connector directory is on the page with its provenance.
    for info in &infos {
        let name = &info.manifest.connector;
        assert!(generated.contains(&format!("\n## {name}\n")), "{name}");
        for t in &info.tools {
            assert!(
                generated.contains(&format!("| `{}` |", t.name)),
                "{}",
                t.name
            );
        }
        let dir = root.join("connectors").join(name).join("fixtures");
        for entry in std::fs::read_dir(&dir).unwrap() {
            let file = entry.unwrap().file_name().into_string().unwrap();
            if file.ends_with(".json") && file != "cases.json" {
                assert!(
                    generated.contains(&format!("| `{file}` | UNVERIFIED |"))
                        || generated.contains(&format!("| `{file}` | CAPTURED |")),
                    "{name}/{file} has no provenance on the page"
                );
            }
        }
    }
}

#[test]
fn every_offered_tool_of_every_role_is_on_the_page() {
    let page = std::fs::read_to_string(committed_page()).unwrap();
    let catalog = Catalog::seed();
    let mut checked = 0;
    for s in scenarios(&catalog) {
        let switches = Switches::from_vars(s.switches.iter().copied());
        let Ok(surface) = policy::surface(&s.input, &catalog, &switches) else {
            continue;
        };
        for name in surface.names() {
            assert!(
                page.contains(&format!("`{name}`")),
                "{name} ({}) is missing from the page",
                s.title
            );
            checked += 1;
        }
    }
    assert!(
        checked > 200,
        "the page covers every role ({checked} names checked)"
    );
    for withheld in ["merging", "force-push and history rewrites", "GraphQL"] {
        assert!(page.contains(&format!("- {withheld}: ")), "{withheld}");
    }
}

#[test]
fn every_connector_built_here_is_admitted_as_the_seed_describes_it() {
    let seed = Catalog::seed();
    let infos = connector_manifests();
    assert!(infos.len() >= 3, "the workspace builds its connectors");
    let mut names = std::collections::BTreeSet::new();
    for info in &infos {
        let name = &info.manifest.connector;
        names.insert(name.clone());
        // Notion and Linear, written in other languages, are not seed 000's:
        // served as any connector an operator adds (`plugin_connector.rs`).
        if crate::common::language_connectors()
            .iter()
            .any(|(n, _)| n == name)
        {
            assert!(seed.connector(name).is_none(), "{name}");
            continue;
        }
        // The content writer and the SEO brief tools serve platform servers.
        if let Some(admitted) = seed.admit_platform(&info.manifest) {
            assert_eq!(admitted.unwrap().server_name(), name);
            continue;
        }
        let described = seed
            .connector(name)
            .unwrap_or_else(|| panic!("{name} is a connector of seed 000"));
        let admitted = seed.admit(&info.manifest).unwrap();
        if name == "contentsquare" {
            // "Every tool the brand's Contentsquare server offers": the
            // component's, none grantable, no write.
            assert!(
                described.reads.is_empty()
                    && admitted.grantable.is_empty()
                    && admitted.writes.is_empty(),
                "{admitted:?}"
            );
            assert_eq!(admitted.reads.len(), info.tools.len());
            continue;
        }
        assert_eq!(&admitted, described, "{name}");
    }
    // Every connector of the catalogue has its component here.
    for c in seed.connectors() {
        assert!(names.contains(&c.name), "no component for {}", c.name);
    }
}

#[test]
fn the_catalogue_agrees_with_the_github_component() {
    let (info, _rt) = github_manifest();
    let spec = Catalog::seed()
        .connector("github")
        .cloned()
        .expect("github in the catalogue");
    let component_reads: Vec<String> = info
        .tools
        .iter()
        .filter(|t| t.effect == scout_host::Effect::Read)
        .map(|t| t.name.clone())
        .collect();
    let component_writes: Vec<String> = info
        .tools
        .iter()
        .filter(|t| t.effect == scout_host::Effect::Write)
        .map(|t| t.name.clone())
        .collect();
    let strip = |n: &str| n.rsplit("__").next().unwrap().to_string();
    let catalogue_reads: Vec<String> = spec.reads.iter().map(|n| strip(n)).collect();
    let catalogue_writes: Vec<String> = spec.writes.iter().map(|w| strip(&w.name)).collect();
    assert_eq!(catalogue_reads, component_reads);
    assert_eq!(catalogue_writes, component_writes);
}

/// README is the front door: what the host is, the two commands, a short
/// tour and where to go next. Whatever more there is to say goes in
/// `docs/`; this fails once README passes 200 lines. Every relative link
/// it gives leads to a file that exists.
#[test]
fn readme_stays_a_front_door() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).parent().unwrap();
    let readme = std::fs::read_to_string(root.join("README.md")).unwrap();
    let lines = readme.lines().count();
    assert!(
        lines <= 200,
        "README.md has {lines} lines: move what a newcomer does not need first into docs/"
    );
    assert!(
        readme.contains("rustup toolchain install && cargo test --workspace"),
        "README gives the test command"
    );
    for link in readme.split("](").skip(1) {
        let target = link.split(')').next().unwrap_or_default();
        if target.starts_with("http") || target.starts_with('#') {
            continue;
        }
        let (file, anchor) = target.split_once('#').unwrap_or((target, ""));
        assert!(
            root.join(file).exists(),
            "README links to {target}, which is not there"
        );
        if !anchor.is_empty() {
            // GitHub's anchor of a heading: lower case, spaces as `-`,
            // other punctuation dropped.
            let page = std::fs::read_to_string(root.join(file)).unwrap();
            let anchors: Vec<String> = page
                .lines()
                .filter_map(|l| {
                    l.trim_start_matches('#')
                        .strip_prefix(' ')
                        .filter(|_| l.starts_with('#'))
                })
                .map(|heading| {
                    heading
                        .to_lowercase()
                        .chars()
                        .filter_map(|c| match c {
                            ' ' => Some('-'),
                            c if c.is_alphanumeric() || c == '-' || c == '_' => Some(c),
                            _ => None,
                        })
                        .collect()
                })
                .collect();
            assert!(
                anchors.iter().any(|a| a == anchor),
                "README links to {target}: no such heading in {file}"
            );
        }
    }
}

/// The metrics table in `docs/operating.md` is the one `FAMILIES`
/// generates (which a unit test holds to the registry itself).
#[test]
fn the_metrics_table_is_what_the_registry_exposes() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).parent().unwrap();
    let page = std::fs::read_to_string(root.join("docs/operating.md")).unwrap();
    let start = "host/tests/all/docs_page.rs keeps it -->\n";
    let begin = page.find(start).expect("the metrics table's start marker") + start.len();
    let end = page[begin..]
        .find("<!-- end of the metrics table -->")
        .expect("the metrics table's end marker");
    let expected = scout_host::metrics::table();
    if std::env::var_os("SCOUT_BLESS_DOCS").is_some() {
        let updated = format!("{}{expected}{}", &page[..begin], &page[begin + end..]);
        std::fs::write(root.join("docs/operating.md"), updated).unwrap();
        return;
    }
    assert_eq!(
        &page[begin..begin + end],
        expected,
        "docs/operating.md's metrics table drifted: rerun with SCOUT_BLESS_DOCS=1"
    );
}
