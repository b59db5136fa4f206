//! A GitHub read tool called through the host, against the same HTTP request
//! made natively with reqwest, to the same loopback server, in the same
//! process; and the cost of a fresh store per call.
//!
//! Besides criterion's own groups, a first pass interleaves the two pair by
//! pair (so both see the same machine state) and prints the ratio of medians,
//! and a counting allocator prints the allocations of each kind of call
//! (the fake upstream's in this process included, the same for both).

use criterion::{Criterion, criterion_group, criterion_main};
use scout_host::{
    Capabilities, CredentialScheme, HttpCapability, HttpConfig, LoadedComponent, Runtime,
    RuntimeConfig, SecretSource,
};
use scout_tests::fake_github::FakeGitHub;
use serde_json::{Value, json};
use std::alloc::{GlobalAlloc, Layout, System};
use std::path::Path;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

const TOKEN: &str = "ghp_benchmark_token_0123456789";

/// The system allocator, counting every allocation and its bytes while
/// [`COUNTING_ON`] is set (only during the allocation pass: a counter
/// shared by every thread would slow the timed passes).
struct Counting;

static COUNTING_ON: AtomicBool = AtomicBool::new(false);
static ALLOCATIONS: AtomicU64 = AtomicU64::new(0);
static ALLOCATED_BYTES: AtomicU64 = AtomicU64::new(0);

fn count(bytes: usize) {
    if COUNTING_ON.load(Ordering::Relaxed) {
        ALLOCATIONS.fetch_add(1, Ordering::Relaxed);
        ALLOCATED_BYTES.fetch_add(bytes as u64, Ordering::Relaxed);
    }
}

// SAFETY: every call is forwarded unchanged to `System`. A bench's counter,
// not the host's code: the workspace denies `unsafe` elsewhere.
#[allow(unsafe_code)]
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        count(layout.size());
        unsafe { System.alloc(layout) }
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        unsafe { System.dealloc(ptr, layout) }
    }
    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        count(layout.size());
        unsafe { System.alloc_zeroed(layout) }
    }
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        count(new_size);
        unsafe { System.realloc(ptr, layout, new_size) }
    }
}

#[global_allocator]
static COUNTING: Counting = Counting;

/// Allocations and bytes per run of `f`, over `runs` runs one after another.
fn allocations_per<F: Future<Output = ()>>(
    rt: &tokio::runtime::Runtime,
    runs: u64,
    mut f: impl FnMut() -> F,
) -> (f64, f64) {
    rt.block_on(async {
        COUNTING_ON.store(true, Ordering::Relaxed);
        let (count, bytes) = (
            ALLOCATIONS.load(Ordering::Relaxed),
            ALLOCATED_BYTES.load(Ordering::Relaxed),
        );
        for _ in 0..runs {
            f().await;
        }
        COUNTING_ON.store(false, Ordering::Relaxed);
        (
            (ALLOCATIONS.load(Ordering::Relaxed) - count) as f64 / runs as f64,
            (ALLOCATED_BYTES.load(Ordering::Relaxed) - bytes) as f64 / runs as f64,
        )
    })
}

/// Prints the allocations of a call through the host, of the same request
/// made natively, and of a fresh store and instantiation.
fn allocations(rt: &tokio::runtime::Runtime, s: &Setup) {
    let runs = 500;
    let (host, host_bytes) = allocations_per(rt, runs, || through_host(s));
    let (direct, direct_bytes) = allocations_per(rt, runs, || native(s));
    let (fresh, fresh_bytes) = allocations_per(rt, runs, || async {
        s.component.instantiate_fresh().await.unwrap();
    });
    println!(
        "allocations per call ({runs} calls): host {host:.0} ({:.1} KiB), native reqwest {direct:.0} ({:.1} KiB), fresh store + instantiate {fresh:.0} ({:.1} KiB)",
        host_bytes / 1024.0,
        direct_bytes / 1024.0,
        fresh_bytes / 1024.0,
    );
}

struct Setup {
    _github: FakeGitHub,
    origin: String,
    component: LoadedComponent,
    caps: Capabilities,
    client: reqwest::Client,
}

async fn setup() -> Setup {
    let github = FakeGitHub::start(TOKEN).await;
    let runtime = Runtime::new(RuntimeConfig::default()).expect("runtime");
    let component = runtime
        .load_file(Path::new(scout_tests::components::GITHUB))
        .expect("github component");
    let http = HttpCapability::new(
        HttpConfig::new(github.origin())
            .credential(
                CredentialScheme::Bearer,
                SecretSource::Value(TOKEN.to_string()),
            )
            .allow_private_network(true),
    )
    .expect("capability");
    let client = reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .no_proxy()
        .build()
        .unwrap();
    Setup {
        origin: github.origin(),
        _github: github,
        component,
        caps: Capabilities::with_http(http),
        client,
    }
}

async fn through_host(s: &Setup) {
    let outcome = s
        .component
        .call(
            "github_read_file",
            &json!({"owner": "octo", "repo": "hello", "path": "README.md"}),
            &s.caps,
        )
        .await
        .expect("call");
    assert!(outcome.output.ok().is_some(), "{:?}", outcome.output);
}

async fn native(s: &Setup) {
    let response = s
        .client
        .get(format!("{}/repos/octo/hello/contents/README.md", s.origin))
        .header("authorization", format!("Bearer {TOKEN}"))
        .header("accept", "application/vnd.github+json")
        .header("user-agent", "bench")
        .send()
        .await
        .expect("native request");
    assert!(response.status().is_success());
    let body: Value = serde_json::from_slice(&response.bytes().await.expect("body")).expect("json");
    let content: String = body["content"]
        .as_str()
        .unwrap()
        .split_whitespace()
        .collect();
    use base64::Engine as _;
    let text = base64::engine::general_purpose::STANDARD
        .decode(content)
        .unwrap();
    std::hint::black_box(String::from_utf8(text).unwrap());
}

fn median(mut v: Vec<Duration>) -> Duration {
    v.sort();
    v[v.len() / 2]
}

fn interleaved(rt: &tokio::runtime::Runtime, s: &Setup) {
    let pairs = 400;
    let (mut host, mut direct, mut fresh) = (
        Vec::with_capacity(pairs),
        Vec::with_capacity(pairs),
        Vec::with_capacity(pairs),
    );
    rt.block_on(async {
        for _ in 0..50 {
            through_host(s).await;
            native(s).await;
        }
        for _ in 0..pairs {
            let t = Instant::now();
            through_host(s).await;
            host.push(t.elapsed());
            let t = Instant::now();
            native(s).await;
            direct.push(t.elapsed());
            let t = Instant::now();
            s.component.instantiate_fresh().await.unwrap();
            fresh.push(t.elapsed());
        }
    });
    let (h, n, f) = (median(host), median(direct), median(fresh));
    println!(
        "interleaved {pairs} pairs: host median {:.1} us, native reqwest median {:.1} us, ratio {:.2}x (+{:.1} us); fresh store + instantiate median {:.1} us",
        h.as_secs_f64() * 1e6,
        n.as_secs_f64() * 1e6,
        h.as_secs_f64() / n.as_secs_f64(),
        (h.as_secs_f64() - n.as_secs_f64()) * 1e6,
        f.as_secs_f64() * 1e6,
    );
}

fn bench(c: &mut Criterion) {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    let s = rt.block_on(setup());
    interleaved(&rt, &s);
    allocations(&rt, &s);

    let mut group = c.benchmark_group("github_read_file");
    group.bench_function("through_host", |b| {
        b.to_async(&rt).iter(|| through_host(&s))
    });
    group.bench_function("native_reqwest", |b| b.to_async(&rt).iter(|| native(&s)));
    group.finish();

    c.bench_function("fresh_store_instantiate", |b| {
        b.to_async(&rt).iter(|| s.component.instantiate_fresh())
    });

    // The credential's scrub of a 16 KiB JSON answer that holds no secret
    // (the common case) and of one that reflects it twice, escaped.
    let scrubber = scout_host::capabilities::scrub::Scrubber::new(TOKEN, []);
    let clean: Vec<u8> = (0..160)
        .map(|i| {
            format!(
                r#"{{"name":"file-{i}.md","path":"docs/a%20b\/file-{i}.md","sha":"{i:040x}"}},"#
            )
        })
        .collect::<String>()
        .into_bytes();
    let mut dirty = clean.clone();
    dirty.extend_from_slice(format!("\"Bearer {TOKEN}\" {}", TOKEN.replace('_', "%5F")).as_bytes());
    c.bench_function("scrub_16k_clean", |b| {
        b.iter(|| std::hint::black_box(scrubber.scrub(&clean)))
    });
    c.bench_function("scrub_16k_reflected", |b| {
        b.iter(|| std::hint::black_box(scrubber.scrub(&dirty)))
    });

    // The whole host path without the network: arguments converted, a fresh
    // store, the guest runs and refuses the owner before any request.
    c.bench_function("call_refused_in_guest", |b| {
        b.to_async(&rt).iter(|| async {
            let outcome = s
                .component
                .call(
                    "github_read_file",
                    &json!({"owner": "..", "repo": "hello", "path": "README.md"}),
                    &s.caps,
                )
                .await
                .expect("call");
            assert!(outcome.output.err().is_some());
        })
    });
}

criterion_group!(benches, bench);
criterion_main!(benches);
