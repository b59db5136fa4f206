//! The Rust hello guest, the `languages` bench's baseline: a read sends
//! one GET and answers the upstream's body; a name with a digit is refused
//! by the guest (`invalid-input`) with nothing sent; `now` answers the
//! host's clock and fresh randomness at each call.

use scout_host::{Capabilities, HttpCapability, HttpConfig, Runtime, RuntimeConfig};
use scout_tests::components;
use scout_tests::upstream::Upstream;
use serde_json::json;
use std::path::Path;

#[tokio::test(flavor = "multi_thread")]
async fn a_read_sends_one_get_a_name_with_a_digit_is_refused_unsent_and_now_is_the_hosts() {
    let upstream = Upstream::start().await;
    let runtime = Runtime::new(RuntimeConfig::default()).unwrap();
    let hello = runtime.load_file(Path::new(components::HELLO)).unwrap();
    let caps = Capabilities::with_http(
        HttpCapability::new(HttpConfig::new(upstream.origin()).allow_private_network(true))
            .unwrap(),
    );

    let read = hello
        .call("hello_greet", &json!({"name": "ada"}), &caps)
        .await
        .expect("the call runs");
    assert_eq!(read.output.ok(), Some(&json!("ok")));
    let seen: Vec<String> = upstream.seen().into_iter().map(|s| s.uri).collect();
    assert_eq!(seen, ["/hello/ada"]);

    let refused = hello
        .call("hello_greet", &json!({"name": "ada1"}), &caps)
        .await
        .expect("the call runs");
    let error = refused.output.err().expect("refused by the guest");
    assert!(error.get("invalid-input").is_some(), "{error}");
    assert_eq!(upstream.seen().len(), 1, "nothing more was sent");

    let before = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_millis();
    let mut answers = Vec::new();
    for _ in 0..2 {
        let now = hello.call("hello_now", &json!({}), &caps).await.unwrap();
        let text = now
            .output
            .ok()
            .and_then(|v| v.as_str())
            .unwrap()
            .to_string();
        let (millis, random) = text.split_once(' ').expect("MILLIS RANDOM");
        answers.push((millis.parse::<u128>().unwrap(), random.to_string()));
    }
    let after = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_millis();
    for (millis, _) in &answers {
        assert!((before..=after).contains(millis), "{millis}");
    }
    assert_ne!(answers[0].1, answers[1].1, "the same random number twice");
}
