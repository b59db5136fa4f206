//! The Google Sheets connector: one read tool over the Drive API v3 and two
//! approved write tools over the Sheets API v4.
//!
//! - `list` asks the operator's `drive` destination (the Drive API origin,
//!   `https://www.googleapis.com`) for spreadsheets that are not trashed. The
//!   token has the drive.file scope only, so Google answers only files this
//!   app created (or a person opened with it). No cell value is ever read.
//! - `export` creates a new spreadsheet with the rows in ONE request
//!   (`POST /v4/spreadsheets` with the rows as grid data). Each cell is sent as
//!   `userEnteredValue.stringValue`: a string is stored as that string, never
//!   parsed, so `=HYPERLINK(...)` or `=IMPORTXML(...)` arriving from a web page
//!   an agent read stays text (no formula injection).
//! - `append` adds rows after a sheet's table with
//!   `POST /v4/spreadsheets/{id}/values/{range}:append` and
//!   `valueInputOption=RAW` (values are stored as given, never parsed as
//!   formulas, numbers or dates) and `insertDataOption=INSERT_ROWS` (new rows
//!   are inserted, so no existing cell is overwritten). It never sends a
//!   values update (PUT), a `values:batchUpdate` or a spreadsheet
//!   `batchUpdate` (formatting, deletes).
//!
//! The append route is declared `.../values/{range}:append`: the host
//! refuses any other verb on a range (a `:clear`, say) before it is sent.
//!
//! Errors: Google's `{"error": {"code", "status", "message"}}`, read with the
//! SDK's `ErrorFormat::Google`; 404 is
//! `not-found`, every other status `upstream` (a 403 for a spreadsheet this
//! app did not create included: Google refused it, about the token's scope).

scout_sdk::bindings!();

use bindings::exports::scout::sheets::read_tools::{self, Spreadsheet, SpreadsheetList};
use bindings::exports::scout::sheets::write_tools::{self, Appended, Exported};
use scout_sdk::args::bounded;
use scout_sdk::{ErrorFormat, Http, Method, ToolError, encode_segment};
use serde::{Deserialize, Serialize};

/// The Drive destination the operator binds (`[connectors.sheets.origins] drive = ...`).
const DRIVE: &str = "drive";
/// Google's MIME type of a spreadsheet.
const SPREADSHEET_MIME: &str = "application/vnd.google-apps.spreadsheet";
/// Spreadsheets listed when no limit is given, and the most one call lists.
const DEFAULT_LIST: u32 = 50;
const MAX_LIST: u32 = 100;
/// Longest `name-contains` text.
const MAX_NAME_FILTER: usize = 100;
/// Caps on the rows one write sends.
const MAX_ROWS: usize = 5000;
const MAX_COLUMNS: usize = 200;
const MAX_CELLS: usize = 50_000;
/// Google Sheets' own limit on one cell's text.
const MAX_CELL_CHARS: usize = 50_000;
/// All cell text of one call together.
const MAX_BYTES: usize = 512 * 1024;
/// Longest spreadsheet title and sheet name.
const MAX_TITLE: usize = 200;
const MAX_SHEET_NAME: usize = 100;
/// The first sheet's name when `export` is given none.
const DEFAULT_SHEET: &str = "Sheet1";
/// How Google writes its errors.
const ERRORS: ErrorFormat = ErrorFormat::Google;

// ---------------------------------------------------------------------------
// Validation (pure functions, unit-tested below)
// ---------------------------------------------------------------------------

fn list_limit(limit: Option<u32>) -> Result<u32, ToolError> {
    bounded("limit", limit, DEFAULT_LIST, 1, MAX_LIST)
}

/// The Drive `q` of `list`: spreadsheets not in the trash, and, when given,
/// whose name contains the text (quoted per Drive's query syntax: `\` and
/// `'` escaped with a backslash).
fn drive_query(name_contains: Option<&str>) -> Result<String, ToolError> {
    let mut q = format!("mimeType='{SPREADSHEET_MIME}' and trashed=false");
    if let Some(text) = name_contains {
        if text.is_empty() {
            return Err(ToolError::invalid(
                "name-contains is empty; leave it out to list every spreadsheet",
            ));
        }
        if text.chars().count() > MAX_NAME_FILTER {
            return Err(ToolError::invalid(format!(
                "name-contains is longer than {MAX_NAME_FILTER} characters"
            )));
        }
        if text.chars().any(char::is_control) {
            return Err(ToolError::invalid(
                "name-contains holds a control character",
            ));
        }
        let escaped = text.replace('\\', "\\\\").replace('\'', "\\'");
        q.push_str(&format!(" and name contains '{escaped}'"));
    }
    Ok(q)
}

/// A spreadsheet id: 10 to 128 ASCII letters, digits, `-` and `_`.
fn validate_spreadsheet_id(id: &str) -> Result<(), ToolError> {
    if id.is_empty() {
        return Err(ToolError::invalid(
            "spreadsheet-id is empty; `list` gives the ids of this app's spreadsheets",
        ));
    }
    if id.len() < 10
        || id.len() > 128
        || !id
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_')
    {
        return Err(ToolError::invalid(format!(
            "spreadsheet-id `{id}` is not a Google spreadsheet id (10 to 128 letters, digits, `-` and `_`)"
        )));
    }
    Ok(())
}

/// A spreadsheet title: 1 to 200 characters, no control characters, not blank.
fn validate_title(title: &str) -> Result<(), ToolError> {
    if title.trim().is_empty() {
        return Err(ToolError::invalid("title is empty"));
    }
    if title.chars().count() > MAX_TITLE {
        return Err(ToolError::invalid(format!(
            "title is longer than {MAX_TITLE} characters"
        )));
    }
    if title.chars().any(char::is_control) {
        return Err(ToolError::invalid("title holds a control character"));
    }
    Ok(())
}

/// A sheet (tab) name: 1 to 100 characters, not blank, no control
/// characters, no leading or trailing space, and none of `/`, `\` or `%`
/// (the range goes in the URL path, where the host refuses an encoded `/`,
/// `\` or `%`).
fn validate_sheet_name(name: &str) -> Result<(), ToolError> {
    if name.trim().is_empty() {
        return Err(ToolError::invalid("sheet-name is empty"));
    }
    if name.chars().count() > MAX_SHEET_NAME {
        return Err(ToolError::invalid(format!(
            "sheet-name is longer than {MAX_SHEET_NAME} characters"
        )));
    }
    if name.trim() != name {
        return Err(ToolError::invalid(format!(
            "sheet-name `{name}` starts or ends with a space"
        )));
    }
    if name
        .chars()
        .any(|c| c.is_control() || matches!(c, '/' | '\\' | '%'))
    {
        return Err(ToolError::invalid(format!(
            "sheet-name `{name}` may not hold `/`, `\\`, `%` or a control character"
        )));
    }
    Ok(())
}

/// A sheet name quoted for A1 notation: in single quotes, a quote doubled
/// (`It's` is `'It''s'`). The whole range is the quoted name: every cell of
/// that sheet, where `append` looks for the table.
fn a1_sheet(name: &str) -> String {
    format!("'{}'", name.replace('\'', "''"))
}

/// The append range: the quoted sheet, or `A1` (the first visible sheet).
fn append_range(sheet_name: Option<&str>) -> Result<String, ToolError> {
    match sheet_name {
        None => Ok("A1".to_string()),
        Some(name) => {
            validate_sheet_name(name)?;
            Ok(a1_sheet(name))
        }
    }
}

/// The append path: the range as one encoded segment, then the `:append` verb.
fn append_path(spreadsheet_id: &str, range: &str) -> String {
    format!(
        "/v4/spreadsheets/{}/values/{}:append",
        encode_segment(spreadsheet_id),
        encode_segment(range)
    )
}

/// The shape of the rows: (rows, widest row, cells).
#[derive(Debug, PartialEq)]
struct Shape {
    rows: usize,
    columns: usize,
    cells: usize,
}

/// Checks the rows against the caps before anything is sent.
fn validate_rows(rows: &[Vec<String>]) -> Result<Shape, ToolError> {
    if rows.is_empty() {
        return Err(ToolError::invalid("rows is empty; give at least one row"));
    }
    if rows.len() > MAX_ROWS {
        return Err(ToolError::invalid(format!(
            "{} rows given; at most {MAX_ROWS} a call",
            rows.len()
        )));
    }
    let (mut columns, mut cells, mut bytes) = (0, 0, 0);
    for (r, row) in rows.iter().enumerate() {
        if row.len() > MAX_COLUMNS {
            return Err(ToolError::invalid(format!(
                "row {r} has {} cells; at most {MAX_COLUMNS} columns",
                row.len()
            )));
        }
        columns = columns.max(row.len());
        cells += row.len();
        for (c, cell) in row.iter().enumerate() {
            if cell.chars().count() > MAX_CELL_CHARS {
                return Err(ToolError::invalid(format!(
                    "row {r}, cell {c} is longer than {MAX_CELL_CHARS} characters"
                )));
            }
            if cell
                .chars()
                .any(|ch| ch.is_control() && ch != '\n' && ch != '\t')
            {
                return Err(ToolError::invalid(format!(
                    "row {r}, cell {c} holds a control character (only newline and tab are kept)"
                )));
            }
            bytes += cell.len();
        }
    }
    if cells == 0 {
        return Err(ToolError::invalid(
            "every row is empty; give at least one cell",
        ));
    }
    if cells > MAX_CELLS {
        return Err(ToolError::invalid(format!(
            "{cells} cells given; at most {MAX_CELLS} a call"
        )));
    }
    if bytes > MAX_BYTES {
        return Err(ToolError::invalid(format!(
            "the cells hold {bytes} bytes of text; at most {MAX_BYTES} a call"
        )));
    }
    Ok(Shape {
        rows: rows.len(),
        columns,
        cells,
    })
}

/// The `POST /v4/spreadsheets` body: the title, one sheet sized to hold the
/// rows (at least Google's default 1000 x 26), and every cell as a string value.
fn create_body<'a>(
    title: &'a str,
    sheet_name: &'a str,
    rows: &'a [Vec<String>],
    shape: &Shape,
) -> CreateBody<'a> {
    CreateBody {
        properties: TitleProps { title },
        sheets: vec![NewSheet {
            properties: SheetProps {
                title: sheet_name,
                grid_properties: GridProps {
                    row_count: shape.rows.max(1000),
                    column_count: shape.columns.max(26),
                },
            },
            data: vec![GridData {
                start_row: 0,
                start_column: 0,
                row_data: rows
                    .iter()
                    .map(|row| RowData {
                        values: row
                            .iter()
                            .map(|text| CellData {
                                user_entered_value: StringValue { string_value: text },
                            })
                            .collect(),
                    })
                    .collect(),
            }],
        }],
    }
}

fn count(n: usize) -> u32 {
    u32::try_from(n).unwrap_or(u32::MAX)
}

// ---------------------------------------------------------------------------
// Google's wire format (only the fields used; extra fields are ignored)
// ---------------------------------------------------------------------------

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct FileList {
    #[serde(default)]
    files: Vec<DriveFile>,
    #[serde(default)]
    next_page_token: Option<String>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct DriveFile {
    id: String,
    #[serde(default)]
    name: String,
    #[serde(default)]
    created_time: Option<String>,
    #[serde(default)]
    modified_time: Option<String>,
    #[serde(default)]
    web_view_link: Option<String>,
}

#[derive(Serialize)]
struct CreateBody<'a> {
    properties: TitleProps<'a>,
    sheets: Vec<NewSheet<'a>>,
}

#[derive(Serialize)]
struct TitleProps<'a> {
    title: &'a str,
}

#[derive(Serialize)]
struct NewSheet<'a> {
    properties: SheetProps<'a>,
    data: Vec<GridData<'a>>,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct SheetProps<'a> {
    title: &'a str,
    grid_properties: GridProps,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct GridProps {
    row_count: usize,
    column_count: usize,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct GridData<'a> {
    start_row: u32,
    start_column: u32,
    row_data: Vec<RowData<'a>>,
}

#[derive(Serialize)]
struct RowData<'a> {
    values: Vec<CellData<'a>>,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct CellData<'a> {
    user_entered_value: StringValue<'a>,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct StringValue<'a> {
    string_value: &'a str,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct Created {
    spreadsheet_id: String,
    #[serde(default)]
    spreadsheet_url: Option<String>,
    #[serde(default)]
    properties: Option<CreatedProps>,
    #[serde(default)]
    sheets: Vec<CreatedSheet>,
}

#[derive(Deserialize)]
struct CreatedProps {
    #[serde(default)]
    title: Option<String>,
}

#[derive(Deserialize)]
struct CreatedSheet {
    #[serde(default)]
    properties: Option<CreatedProps>,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct AppendBody<'a> {
    range: &'a str,
    major_dimension: &'static str,
    values: &'a [Vec<String>],
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct AppendResponse {
    spreadsheet_id: String,
    #[serde(default)]
    table_range: Option<String>,
    #[serde(default)]
    updates: Option<Updates>,
}

#[derive(Deserialize, Default)]
#[serde(rename_all = "camelCase")]
struct Updates {
    #[serde(default)]
    updated_range: String,
    #[serde(default)]
    updated_rows: u32,
    #[serde(default)]
    updated_columns: u32,
    #[serde(default)]
    updated_cells: u32,
}

// ---------------------------------------------------------------------------
// Requests
// ---------------------------------------------------------------------------

fn sheets() -> Result<Http, ToolError> {
    Ok(Http::connect()?
        .with_header("accept", "application/json")
        .with_errors(ERRORS))
}

// ---------------------------------------------------------------------------
// Tools
// ---------------------------------------------------------------------------

#[cfg_attr(not(target_family = "wasm"), allow(dead_code))]
struct Sheets;

impl read_tools::Guest for Sheets {
    fn list(
        name_contains: Option<String>,
        limit: Option<u32>,
    ) -> Result<SpreadsheetList, ToolError> {
        let q = drive_query(name_contains.as_deref())?;
        let page_size = list_limit(limit)?.to_string();
        let query = [
            ("q", q.as_str()),
            ("spaces", "drive"),
            ("orderBy", "modifiedTime desc"),
            ("pageSize", page_size.as_str()),
            (
                "fields",
                "nextPageToken,files(id,name,createdTime,modifiedTime,webViewLink)",
            ),
        ];
        let drive = Http::connect_to(DRIVE)?
            .with_header("accept", "application/json")
            .with_errors(ERRORS);
        let list: FileList = drive.get("/drive/v3/files", &query)?;
        Ok(SpreadsheetList {
            may_have_more: list.next_page_token.is_some_and(|t| !t.is_empty()),
            spreadsheets: list
                .files
                .into_iter()
                .map(|f| Spreadsheet {
                    id: f.id,
                    name: f.name,
                    created_time: f.created_time,
                    modified_time: f.modified_time,
                    url: f.web_view_link,
                })
                .collect(),
        })
    }
}

impl write_tools::Guest for Sheets {
    fn export(
        title: String,
        rows: Vec<Vec<String>>,
        sheet_name: Option<String>,
    ) -> Result<Exported, ToolError> {
        validate_title(&title)?;
        let sheet_name = sheet_name.unwrap_or_else(|| DEFAULT_SHEET.to_string());
        validate_sheet_name(&sheet_name)?;
        let shape = validate_rows(&rows)?;
        let body = create_body(&title, &sheet_name, &rows, &shape);
        let query = [(
            "fields",
            "spreadsheetId,spreadsheetUrl,properties(title),sheets(properties(title))",
        )];
        let created: Created =
            sheets()?.json(Method::Post, "/v4/spreadsheets", &query, Some(&body))?;
        Ok(Exported {
            spreadsheet_id: created.spreadsheet_id,
            url: created.spreadsheet_url,
            title: created.properties.and_then(|p| p.title).unwrap_or(title),
            sheet_name: created
                .sheets
                .into_iter()
                .next()
                .and_then(|s| s.properties)
                .and_then(|p| p.title)
                .unwrap_or(sheet_name),
            rows: count(shape.rows),
            cells: count(shape.cells),
        })
    }

    fn append(
        spreadsheet_id: String,
        rows: Vec<Vec<String>>,
        sheet_name: Option<String>,
    ) -> Result<Appended, ToolError> {
        validate_spreadsheet_id(&spreadsheet_id)?;
        let range = append_range(sheet_name.as_deref())?;
        validate_rows(&rows)?;
        let body = AppendBody {
            range: &range,
            major_dimension: "ROWS",
            values: &rows,
        };
        let query = [
            ("valueInputOption", "RAW"),
            ("insertDataOption", "INSERT_ROWS"),
        ];
        let appended: AppendResponse = sheets()?.json(
            Method::Post,
            &append_path(&spreadsheet_id, &range),
            &query,
            Some(&body),
        )?;
        let updates = appended.updates.unwrap_or_default();
        Ok(Appended {
            spreadsheet_id: appended.spreadsheet_id,
            table_range: appended.table_range,
            updated_range: updates.updated_range,
            rows: updates.updated_rows,
            columns: updates.updated_columns,
            cells: updates.updated_cells,
        })
    }
}

scout_sdk::export!(Sheets);

#[cfg(test)]
mod tests {
    use super::*;

    fn rows(r: &[&[&str]]) -> Vec<Vec<String>> {
        r.iter()
            .map(|row| row.iter().map(|c| c.to_string()).collect())
            .collect()
    }

    #[test]
    fn drive_queries() {
        assert_eq!(
            drive_query(None).unwrap(),
            "mimeType='application/vnd.google-apps.spreadsheet' and trashed=false"
        );
        assert_eq!(
            drive_query(Some("Q3 keywords")).unwrap(),
            "mimeType='application/vnd.google-apps.spreadsheet' and trashed=false and name contains 'Q3 keywords'"
        );
        assert_eq!(
            drive_query(Some(r"it's a\b")).unwrap(),
            r"mimeType='application/vnd.google-apps.spreadsheet' and trashed=false and name contains 'it\'s a\\b'"
        );
        // A quote cannot close the string and add a clause.
        let q = drive_query(Some("x' or trashed=true or name contains '")).unwrap();
        assert!(
            q.ends_with(r"name contains 'x\' or trashed=true or name contains \''"),
            "{q}"
        );
        assert!(drive_query(Some("")).is_err());
        assert!(drive_query(Some("a\nb")).is_err());
        assert!(drive_query(Some(&"a".repeat(101))).is_err());
        assert_eq!(list_limit(None).unwrap(), 50);
        assert!(list_limit(Some(0)).is_err());
        assert!(
            matches!(list_limit(Some(101)), Err(ToolError::InvalidInput(m)) if m == "limit must be between 1 and 100, not 101")
        );
    }

    #[test]
    fn ids_titles_and_sheet_names() {
        assert!(validate_spreadsheet_id("1BxiMVs0XRA5nFMdKvBdBZjgmUUqptlbs74OgvE2upms").is_ok());
        for bad in [
            "",
            "short",
            "1Bxi/../x0XRA5nFMd",
            "1BxiMVs0XRA5n FMdKv",
            "1BxiMVs0XRA5n%2FFMdKv",
            "ünïcödé-ïd-1234",
        ] {
            assert!(validate_spreadsheet_id(bad).is_err(), "{bad:?}");
        }
        assert!(validate_title("Q3 keyword gaps").is_ok());
        assert!(validate_title("  ").is_err());
        assert!(validate_title("a\u{7}b").is_err());
        assert!(validate_title(&"t".repeat(201)).is_err());
        for good in ["Sheet1", "Keyword gaps", "It's Q3", "Données: été!", "a=b"] {
            assert!(validate_sheet_name(good).is_ok(), "{good}");
        }
        for bad in [
            "",
            " lead",
            "trail ",
            "a/b",
            "a\\b",
            "50%",
            "a\tb",
            &"s".repeat(101),
        ] {
            assert!(validate_sheet_name(bad).is_err(), "{bad:?}");
        }
    }

    #[test]
    fn a1_ranges_are_quoted() {
        assert_eq!(a1_sheet("Sheet1"), "'Sheet1'");
        assert_eq!(a1_sheet("It's Q3"), "'It''s Q3'");
        assert_eq!(a1_sheet("A1:B2"), "'A1:B2'");
        assert_eq!(append_range(None).unwrap(), "A1");
        assert_eq!(
            append_range(Some("Keyword gaps")).unwrap(),
            "'Keyword gaps'"
        );
        assert!(append_range(Some("a/b")).is_err());
        assert_eq!(
            append_path("1BxiMVs0XRA5nFMd", "'It''s Q3'"),
            "/v4/spreadsheets/1BxiMVs0XRA5nFMd/values/%27It%27%27s%20Q3%27:append"
        );
        assert_eq!(
            append_path("1BxiMVs0XRA5nFMd", "A1"),
            "/v4/spreadsheets/1BxiMVs0XRA5nFMd/values/A1:append"
        );
    }

    #[test]
    fn row_caps() {
        assert_eq!(
            validate_rows(&rows(&[&["a", "b"], &[], &["c"]])).unwrap(),
            Shape {
                rows: 3,
                columns: 2,
                cells: 3
            }
        );
        assert!(validate_rows(&[]).is_err());
        assert!(validate_rows(&rows(&[&[], &[]])).is_err());
        assert!(validate_rows(&vec![vec!["x".to_string()]; MAX_ROWS + 1]).is_err());
        assert!(validate_rows(&[vec![String::new(); MAX_COLUMNS + 1]]).is_err());
        assert!(
            validate_rows(&vec![vec![String::new(); 200]; 251]).is_err(),
            "50200 cells"
        );
        assert!(validate_rows(&[vec!["x".repeat(MAX_CELL_CHARS + 1)]]).is_err());
        assert!(
            validate_rows(&vec![vec!["x".repeat(40_000)]; 14]).is_err(),
            "560000 bytes"
        );
        assert!(validate_rows(&rows(&[&["a\u{0}b"]])).is_err());
        assert!(validate_rows(&rows(&[&["line 1\nline 2\tcol"]])).is_ok());
    }

    #[test]
    fn cells_are_string_values_never_formulas() {
        let r = rows(&[
            &["query", "clicks"],
            &["=IMPORTXML(\"https://evil.example/\",\"//a\")", "12"],
        ]);
        let shape = validate_rows(&r).unwrap();
        let body = serde_json::to_value(create_body("Gaps", "Sheet1", &r, &shape)).unwrap();
        assert_eq!(body["properties"]["title"], "Gaps");
        assert_eq!(
            body["sheets"][0]["properties"]["gridProperties"],
            serde_json::json!({"rowCount": 1000, "columnCount": 26})
        );
        let cell = &body["sheets"][0]["data"][0]["rowData"][1]["values"][0];
        assert_eq!(
            cell,
            &serde_json::json!({"userEnteredValue": {"stringValue": "=IMPORTXML(\"https://evil.example/\",\"//a\")"}})
        );
        assert!(!body.to_string().contains("formulaValue"));
        let wide = vec![vec!["x".to_string(); 30]; 1200];
        let shape = validate_rows(&wide).unwrap();
        let body = serde_json::to_value(create_body("W", "S", &wide, &shape)).unwrap();
        assert_eq!(
            body["sheets"][0]["properties"]["gridProperties"],
            serde_json::json!({"rowCount": 1200, "columnCount": 30})
        );
    }

    #[test]
    fn google_errors() {
        // The connector reads Drive's and Sheets' errors in the SDK's Google format.
        let google_error = |status, body: &[u8]| ERRORS.status_error(status, body).unwrap();
        let body = br#"{"error":{"code":403,"message":"The caller does not have permission","status":"PERMISSION_DENIED"}}"#;
        assert!(
            matches!(google_error(403, body), ToolError::Upstream(u) if u.status == 403 && u.message == "PERMISSION_DENIED: The caller does not have permission")
        );
        assert!(
            matches!(google_error(404, br#"{"error":{"code":404,"message":"Requested entity was not found.","status":"NOT_FOUND"}}"#), ToolError::NotFound(m) if m == "NOT_FOUND: Requested entity was not found.")
        );
        assert!(
            matches!(google_error(502, b"bad gateway"), ToolError::Upstream(u) if u.message == "bad gateway")
        );
    }
}
