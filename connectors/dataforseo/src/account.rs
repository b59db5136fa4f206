//! The one free tool: the account's login, time zone and balance
//! (`GET /v3/appendix/user_data`), which DataForSEO does not charge for, so
//! nothing is reserved and no meter is needed.

use crate::api::{client, first, interpret, naming, non_empty};
use crate::bindings::exports::scout::dataforseo::read_tools::AccountInfo;
use scout_sdk::{Method, ToolError};
use serde::Deserialize;

const USER_DATA: &str = "/v3/appendix/user_data";

#[derive(Deserialize)]
struct ApiUserData {
    login: String,
    #[serde(default)]
    timezone: Option<String>,
    #[serde(default)]
    money: Option<ApiMoney>,
}

#[derive(Deserialize)]
struct ApiMoney {
    #[serde(default)]
    total: Option<f64>,
    #[serde(default)]
    balance: Option<f64>,
}

pub fn account() -> Result<AccountInfo, ToolError> {
    // Free: no reservation, and no meter needed.
    let response = client()?.send(Method::Get, USER_DATA, &[], None)?;
    let results =
        interpret(response.status, &response.body).map_err(|e| naming("GET", USER_DATA, e))?;
    let user: ApiUserData = first(results, "account data")?;
    let money = user
        .money
        .ok_or_else(|| ToolError::BadResponse("the account data holds no money figures".into()))?;
    Ok(AccountInfo {
        login: user.login,
        timezone: non_empty(user.timezone),
        balance_usd: money
            .balance
            .ok_or_else(|| ToolError::BadResponse("the account data holds no balance".into()))?,
        total_deposited_usd: money.total,
    })
}
