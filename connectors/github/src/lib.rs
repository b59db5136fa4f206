scout_sdk::bindings!();
use bindings::exports::scout::github::read_tools::{self, Guest as Read};
use bindings::exports::scout::github::write_tools::{self, Guest as Write};
use scout_sdk::ToolError;
struct G;
fn no<T>() -> Result<T, ToolError> { Err(ToolError::refused("x")) }
impl Read for G {
    fn read_file(_: String, _: String, _: String, _: Option<String>) -> Result<read_tools::FileContent, ToolError> { let h = scout_sdk::Http::connect()?; let _: serde_json::Value = h.get("/x", &[])?; no() }
    fn list_path(_: String, _: String, _: Option<String>, _: Option<String>) -> Result<Vec<read_tools::Entry>, ToolError> { no() }
    fn list_branches(_: String, _: String) -> Result<Vec<read_tools::Branch>, ToolError> { no() }
    fn list_issues(_: String, _: String, _: Option<read_tools::ItemState>, _: Option<u8>) -> Result<Vec<read_tools::IssueSummary>, ToolError> { no() }
    fn read_issue(_: String, _: String, _: u64) -> Result<read_tools::Issue, ToolError> { no() }
    fn list_pull_requests(_: String, _: String, _: Option<read_tools::ItemState>, _: Option<u8>) -> Result<Vec<read_tools::PullSummary>, ToolError> { no() }
    fn read_pull_request(_: String, _: String, _: u64) -> Result<read_tools::PullRequest, ToolError> { no() }
}
impl Write for G {
    fn create_branch(_: String, _: String, _: String, _: Option<String>) -> Result<read_tools::Branch, ToolError> { no() }
    fn commit_files(_: String, _: String, _: String, _: String, _: Vec<write_tools::FileChange>) -> Result<write_tools::Commit, ToolError> { no() }
    fn open_pull_request(_: String, _: String, _: String, _: String, _: Option<String>, _: Option<String>, _: Option<bool>) -> Result<read_tools::PullSummary, ToolError> { no() }
    fn comment(_: String, _: String, _: u64, _: String) -> Result<write_tools::CommentRef, ToolError> { no() }
}
scout_sdk::export!(G);
