//! Every integration test of the workspace's capability and loading
//! rules, in one binary (wasmtime's `tests/all` layout). Each test guest
//! (`tests/guests/NAME`) has a module of the same name; a guest without one
//! fails the build (`assert_test_exists`, fed by the build script's
//! `scout_tests::foreach_guest!`).

mod capabilities;
mod fake_github;
mod github;
mod gqlwriter;
mod hello;
mod hostile;
mod imports_filesystem;
mod imports_sockets;
mod jsonargs;
mod loading;

macro_rules! assert_test_exists {
    ($($name:ident => $component:expr),* $(,)?) => {
        $(
            #[allow(unused_imports)]
            use self::$name as _;
        )*
    };
}
scout_tests::foreach_guest!(assert_test_exists);
